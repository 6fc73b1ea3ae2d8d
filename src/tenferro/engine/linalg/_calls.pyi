"""Type stubs of the compiled LAPACK call and finiteness check (engine/linalg/_calls.pyx)."""

from typing import Any

import numpy as np

def gesdd_run(plan: Any, base: int, s: int, u: int, vt: int) -> int: ...
def all_finite(arr: np.ndarray[Any, Any], single: bool) -> bool: ...
