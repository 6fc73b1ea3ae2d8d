"""Interpreter exit is quiet: buffers still alive when Python tears its modules down
are freed without an error report (storage/_fields.pyx, `BufferFields.__del__`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("quimb")

# quimb's compress on tenferro arrays, with tenferro.linalg.svd wrapped by the script:
# the wrapper's closure keeps results in reference cycles that survive until the
# modules' globals are cleared, the case that reported "Error in sys.excepthook"
# once per buffer whose aliases were still counted in Python then.
SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import quimb.tensor as qtn
    import tenferro as tfr
    import tenferro.linalg as la

    plain_svd = la.svd

    def svd(*args, **kwargs):
        return plain_svd(*args, **kwargs)

    la.svd = svd
    psi = qtn.MPS_rand_state(12, 16, dtype="float64", seed=7)
    psi.apply_to_arrays(tfr.asarray)
    phi = psi.copy()
    phi.compress(max_bond=6)
    kept = [t.data for t in phi]
    """
)


def test_buffers_alive_at_interpreter_exit_are_freed_without_an_error_report() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "Error in sys.excepthook" not in done.stderr
    assert "Exception ignored" not in done.stderr
