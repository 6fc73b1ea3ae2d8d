"""A weak reference to a root, revived on another thread while its buffer is
dropped, never sees memory the pool has handed out again (issue 8, item 4)."""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

import tenferro as tfr

ROUNDS = 3000
N = 64
JOIN_TIMEOUT_S = 240.0  # a deadlock fails the test instead of hanging the run


def _revive(slot: list[Any], stop: threading.Event, bad: list[str]) -> None:
    while not stop.is_set():
        entry = slot[0]
        if entry is None:
            continue
        ref, value = entry
        root = ref()
        if root is not None:
            seen = np.asarray(root)[:N]
            if not np.all(seen == value):
                bad.append(f"root of an output of {value} shows {seen[:4]}")
        del root


def test_a_revived_root_never_sees_a_later_output() -> None:
    eng = tfr.CpuEngine()
    ones = tfr.from_numpy(np.ones(N))
    slot: list[Any] = [None]
    stop = threading.Event()
    bad: list[str] = []
    reviver = threading.Thread(target=_revive, args=(slot, stop, bad))
    reviver.start()
    try:
        for i in range(ROUNDS):
            out = eng.mul(ones, float(i))
            slot[0] = (weakref.ref(out.host_data().base), float(i))
            del out  # the buffer goes back to the pool once its root is dead
            later = eng.mul(ones, -1.0)  # lands in recycled memory
            del later
    finally:
        stop.set()
        reviver.join(JOIN_TIMEOUT_S)
    assert not reviver.is_alive()
    assert bad == []
