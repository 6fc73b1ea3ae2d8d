"""Importing `tenferro.autodiff` after autoray keeps tenferro's autoray registrations.

The hook drops autoray's cache of tenferro's functions (so traced versions are
looked up); the cache also holds tenferro's own registrations (``sgn``, the thin
``linalg.svd``), which must be made again, or quimb's composed defaults run in
their place. Each check runs in a fresh interpreter: the import order is the
behaviour, and this process has imported both long ago.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("autoray")

_PRELUDE = """
import autoray as ar
import numpy as np
import tenferro as tfr
ar.do("abs", tfr.asarray([1.0]))   # autoray has looked tenferro up: its cache is filled
import tenferro.autodiff           # after autoray: the hook drops that cache
"""


def _run(body: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", _PRELUDE + body],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_sgn_stays_tenferros_after_autodiff_is_imported_after_autoray() -> None:
    out = _run(
        "x = tfr.asarray(np.array([-2.0, 0.0, 3.0]))\nprint(np.asarray(ar.do('sgn', x)).tolist())\n"
    )
    assert out == "[-1.0, 1.0, 1.0]"


def test_autoray_svd_stays_thin_after_autodiff_is_imported_after_autoray() -> None:
    out = _run(
        "u, s, vh = ar.do('linalg.svd', tfr.asarray(np.ones((5, 2))))\n"
        "print(tuple(u.shape), tuple(vh.shape))\n"
    )
    assert out == "(5, 2) (2, 2)"
