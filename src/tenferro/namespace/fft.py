"""The array API's ``fft`` extension: numpy.fft's transforms into pooled outputs.

Every function reads its input without copying and writes the result into a
new pooled tensor of the default engine (Ownership: **computes**).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import ValidationError
from ._adapter import Result, compute, emit
from ._core import check_array, check_category, dtype_arg, int_param
from ._refusals import numpy_call

__all__ = [
    "fft",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfftn",
    "rfft",
    "rfftfreq",
    "rfftn",
]

_NORMS = ("backward", "ortho", "forward")


def _one(name: str, category: str, x: Any, n: Any, axis: int, norm: str) -> Result:
    op = f"tenferro.fft.{name}"
    check_array(x, op)
    check_category(op, x.dtype, category)
    n = int_param(n, "n", op)
    axis = int_param(axis, "axis", op)
    fn = getattr(np.fft, name)
    return emit(op, compute(op, lambda a: fn(a, n=n, axis=axis, norm=norm), (x,)))


def _ints(value: Any, name: str, op: str) -> tuple[int, ...] | None:
    """``s`` or ``axes``: None or a sequence of ints, checked before numpy sees it (numpy
    converts an array given here to integers: a counted copy, then maybe a refusal)."""
    if value is None:
        return None
    try:
        if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list, range)):
            raise TypeError
        return tuple(operator.index(v) for v in value)
    except TypeError:
        raise ValidationError(
            op,
            f"{name} must be None or a sequence of ints, got {value!r}",
            kind="INVALID_AXIS" if name == "axes" else "INVALID_ARGUMENT",
        ) from None


def _many(name: str, category: str, x: Any, s: Any, axes: Any, norm: str) -> Result:
    op = f"tenferro.fft.{name}"
    check_array(x, op)
    check_category(op, x.dtype, category)
    s = _ints(s, "s", op)
    axes = _ints(axes, "axes", op)
    fn = getattr(np.fft, name)
    return emit(op, compute(op, lambda a: fn(a, s=s, axes=axes, norm=norm), (x,)))


def fft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Result:
    """The one-dimensional discrete Fourier transform of a complex array."""
    return _one("fft", "complex floating", x, n, axis, norm)


def ifft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Result:
    """The inverse of `fft`."""
    return _one("ifft", "complex floating", x, n, axis, norm)


def fftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Result:
    """The n-dimensional discrete Fourier transform of a complex array."""
    return _many("fftn", "complex floating", x, s, axes, norm)


def ifftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Result:
    """The inverse of `fftn`."""
    return _many("ifftn", "complex floating", x, s, axes, norm)


def rfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Result:
    """The one-dimensional transform of a real array (non-negative frequencies)."""
    return _one("rfft", "real floating", x, n, axis, norm)


def irfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Result:
    """The inverse of `rfft` (a real output)."""
    return _one("irfft", "complex floating", x, n, axis, norm)


def rfftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Result:
    """The n-dimensional transform of a real array."""
    return _many("rfftn", "real floating", x, s, axes, norm)


def irfftn(x: Any, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Result:
    """The inverse of `rfftn`."""
    return _many("irfftn", "complex floating", x, s, axes, norm)


def hfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Result:
    """The transform of a Hermitian-symmetric signal (a real output)."""
    return _one("hfft", "complex floating", x, n, axis, norm)


def ihfft(x: Any, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Result:
    """The inverse of `hfft`."""
    return _one("ihfft", "real floating", x, n, axis, norm)


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Result:
    """The sample frequencies of `fft`. Ownership: **creates** a pooled tensor."""
    op = "tenferro.fft.fftfreq"
    dt = dtype_arg(dtype, op)
    freq = numpy_call(op, np.fft.fftfreq, n, d)
    return emit(op, freq.astype(dt.numpy if dt is not None else np.float64))


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Result:
    """The sample frequencies of `rfft`. Ownership: **creates** a pooled tensor."""
    op = "tenferro.fft.rfftfreq"
    dt = dtype_arg(dtype, op)
    freq = numpy_call(op, np.fft.rfftfreq, n, d)
    return emit(op, freq.astype(dt.numpy if dt is not None else np.float64))


def fftshift(x: Any, /, *, axes: Any = None) -> Result:
    """The zero frequency moved to the centre. Ownership: **computes**."""
    op = "tenferro.fft.fftshift"
    check_array(x, op)
    return emit(op, compute(op, lambda a: np.fft.fftshift(a, axes), (x,)))


def ifftshift(x: Any, /, *, axes: Any = None) -> Result:
    """The inverse of `fftshift`. Ownership: **computes**."""
    op = "tenferro.fft.ifftshift"
    check_array(x, op)
    return emit(op, compute(op, lambda a: np.fft.ifftshift(a, axes), (x,)))
