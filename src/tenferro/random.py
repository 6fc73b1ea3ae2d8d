"""``tenferro.random``: numpy's random spellings, drawing into new pooled tensors.

autoray callers reach these as ``do("random.normal", ..., like="tenferro")``;
numpy-style code as ``tenferro.random.default_rng(seed).normal(...)``. Draws
come from numpy's ``Generator`` (PCG64), so a seed gives the values
``numpy.random.default_rng(seed)`` gives. Ownership: **creates** (the values
are written once into a pooled output of the default engine; nothing is
copied).

Complex dtypes draw the real and imaginary parts one after the other, each with
the given distribution.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .dtype import DType, as_dtype
from .errors import DTypeError, ValidationError

__all__ = ["Generator", "default_rng", "normal", "random", "seed", "standard_normal", "uniform"]


def _shape(size: Any, op: str) -> tuple[int, ...]:
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (int(size),)
    try:
        return tuple(int(d) for d in size)
    except TypeError:
        raise ValidationError(
            op,
            f"size must be None, an int or a tuple of ints, got {size!r}",
            kind="INVALID_SHAPE",
            shape=size,
        ) from None


def _dtype(dtype: Any, op: str) -> DType:
    dt = DType.F64 if dtype is None else as_dtype(dtype, op)
    if not (dt.is_float or dt.is_complex):
        raise DTypeError(
            op,
            f"random draws are floating-point; dtype {dt.value} is not (use astype afterwards)",
            kind="UNSUPPORTED_DTYPE",
            dtype=dt,
        )
    return dt


class Generator:
    """A seeded stream of draws (numpy's ``Generator`` behind it), returning tensors."""

    __slots__ = ("_gen", "_lock")

    def __init__(self, seed: Any = None) -> None:
        self._gen = np.random.default_rng(seed)
        self._lock = threading.Lock()

    def _draw(self, op: str, size: Any, dtype: Any, fn: Any) -> Any:
        from .namespace._adapter import emit

        shape = _shape(size, op)
        dt = _dtype(dtype, op)
        real = dt.real.numpy
        with self._lock:
            vals = fn(self._gen, shape)
            if dt.is_complex:
                vals = vals + 1j * fn(self._gen, shape)
        return emit(op, np.asarray(vals, dtype=dt.numpy if dt.is_complex else real))

    def normal(
        self, loc: float = 0.0, scale: float = 1.0, size: Any = None, dtype: Any = None
    ) -> Any:
        """Normal draws with mean ``loc`` and standard deviation ``scale``."""
        return self._draw(
            "tenferro.random.normal", size, dtype, lambda g, s: g.normal(loc, scale, s)
        )

    def standard_normal(self, size: Any = None, dtype: Any = None) -> Any:
        """Draws from the standard normal distribution."""
        return self._draw(
            "tenferro.random.standard_normal", size, dtype, lambda g, s: g.standard_normal(s)
        )

    def uniform(
        self, low: float = 0.0, high: float = 1.0, size: Any = None, dtype: Any = None
    ) -> Any:
        """Uniform draws from ``[low, high)``."""
        return self._draw(
            "tenferro.random.uniform", size, dtype, lambda g, s: g.uniform(low, high, s)
        )

    def random(self, size: Any = None, dtype: Any = None) -> Any:
        """Uniform draws from ``[0, 1)``."""
        return self._draw("tenferro.random.random", size, dtype, lambda g, s: g.random(s))


def default_rng(seed: Any = None) -> Generator:
    """A new `Generator` seeded like ``numpy.random.default_rng(seed)``."""
    return Generator(seed)


_global = Generator()


def seed(seed: Any = None) -> None:
    """Reseed the module's own stream (``normal``, ``uniform``, ``random`` below)."""
    global _global
    _global = Generator(seed)


def normal(loc: float = 0.0, scale: float = 1.0, size: Any = None, dtype: Any = None) -> Any:
    """Normal draws from the module's stream (see `seed`)."""
    return _global.normal(loc, scale, size, dtype)


def standard_normal(size: Any = None, dtype: Any = None) -> Any:
    """Standard normal draws from the module's stream."""
    return _global.standard_normal(size, dtype)


def uniform(low: float = 0.0, high: float = 1.0, size: Any = None, dtype: Any = None) -> Any:
    """Uniform draws from ``[low, high)`` from the module's stream."""
    return _global.uniform(low, high, size, dtype)


def random(size: Any = None, dtype: Any = None) -> Any:
    """Uniform draws from ``[0, 1)`` from the module's stream."""
    return _global.random(size, dtype)
