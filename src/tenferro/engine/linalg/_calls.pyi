"""Type stubs of the compiled LAPACK calls and finiteness check (engine/linalg/_calls.pyx)."""

from typing import Any

import numpy as np

_Address = int | np.ndarray[Any, Any]

def gesdd_run(
    plan: Any,
    base: _Address,
    s: _Address,
    u: _Address,
    vt: _Address,
    a: np.ndarray[Any, Any] | None = None,
) -> int: ...
def all_finite(arr: np.ndarray[Any, Any], single: bool) -> bool: ...

class QrPlan:
    geqrf: int
    orgqr: int
    m: int
    n: int
    qc: int
    k: int
    lwork_qr: int
    lwork_org: int
    itemsize: int
    rows: bool
    scratch: int
    def __init__(
        self,
        geqrf: int,
        orgqr: int,
        m: int,
        n: int,
        qc: int,
        lwork_qr: int,
        lwork_org: int,
        itemsize: int,
        rows: bool,
    ) -> None: ...

def qr_run(
    plan: QrPlan,
    a: np.ndarray[Any, Any],
    scratch: np.ndarray[Any, Any],
    q: np.ndarray[Any, Any],
    r: np.ndarray[Any, Any],
) -> int: ...
