"""Type stubs of the compiled root builder (tenferro/_roots.pyx)."""

from typing import Any

import numpy as np

def root_over(
    flat: np.ndarray[Any, Any], holder: object, writable: bool
) -> np.ndarray[Any, Any]: ...
