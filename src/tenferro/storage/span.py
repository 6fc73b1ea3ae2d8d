"""Byte ranges, root extents and root-bound spans: every access is validated first.

A root resource (a host buffer, a shared-memory segment, a device allocation)
covers the bytes of a `RootResourceExtent`. Before anything reads or writes
part of it, the request is turned into a `RootBoundSpan` by `validate_span`,
which checks, in this order:

1. the offset and length are non-negative integers (numpy integers are
   accepted and stored as Python ints, so no sum can wrap around) and their end
   does not overflow (``sys.maxsize``, the largest allocation CPython can address);
2. the requested dtype has a representation compatible with the root's
   dtype: the same dtype, or a complex type and its real type (C32 <-> F32,
   C64 <-> F64) over the same bytes;
3. the span lies inside the extent;
4. the span is element aligned: its start (relative to the extent) and its
   length are multiples of the dtype's item size, and the extent's base
   alignment is enough for the dtype.

Each refusal is an `AccessError` naming the operation, with kind
``INVALID_LAYOUT`` (1, 3, 4) or ``DTYPE_MISMATCH`` (2). Nothing is changed by a
refused request.
"""

from __future__ import annotations

import operator
import sys
from dataclasses import dataclass
from typing import Any

from ..dtype import DType, as_dtype
from ..errors import AccessError, TenferroError
from .identity import AllocationKey

__all__ = [
    "MAX_BYTES",
    "ByteRange",
    "RootBoundSpan",
    "RootResourceExtent",
    "supported_representation",
    "validate_span",
]

#: The largest byte offset + length a span may reach (Rust's ``isize::MAX``).
MAX_BYTES = sys.maxsize


def nonneg_int(op: str, name: str, value: Any) -> int:
    """``value`` as a plain ``int >= 0`` (numpy integers too; bools refused), else `AccessError`."""
    if isinstance(value, bool):
        raise AccessError(
            op, f"{name} must be an int, got {value!r}", kind="INVALID_LAYOUT", **{name: value}
        )
    try:
        n = operator.index(value)
    except TypeError:
        raise AccessError(
            op,
            f"{name} must be an int, got {type(value).__name__}",
            kind="INVALID_LAYOUT",
            **{name: value},
        ) from None
    if n < 0:
        raise AccessError(op, f"{name} must be >= 0, got {n}", kind="INVALID_LAYOUT", **{name: n})
    return n


def _check_end(op: str, byte_offset: int, byte_len: int) -> None:
    if byte_offset + byte_len > MAX_BYTES:
        raise AccessError(
            op,
            f"byte range [{byte_offset}, {byte_offset} + {byte_len}) overflows the address "
            f"space ({MAX_BYTES} bytes)",
            kind="INVALID_LAYOUT",
            reason="overflow",
            byte_offset=byte_offset,
            byte_len=byte_len,
        )


@dataclass(frozen=True, slots=True)
class ByteRange:
    """A half-open byte range ``[offset, offset + length)`` that cannot overflow."""

    offset: int
    length: int

    def __post_init__(self) -> None:
        op = "ByteRange"
        offset = nonneg_int(op, "offset", self.offset)
        length = nonneg_int(op, "length", self.length)
        # INVARIANT: the fields are Python ints: numpy integers would wrap in `end`
        # (and in the overflow check itself).
        _check_end(op, offset, length)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "length", length)

    @property
    def end(self) -> int:
        return self.offset + self.length

    def contains(self, other: ByteRange) -> bool:
        """True when ``other`` lies inside this range (an empty range at the end counts)."""
        return self.offset <= other.offset and other.end <= self.end

    def overlaps(self, other: ByteRange) -> bool:
        """True when the two ranges share at least one byte (an empty range shares none)."""
        return (
            self.length > 0
            and other.length > 0
            and self.offset < other.end
            and other.offset < self.end
        )

    def __repr__(self) -> str:
        return f"ByteRange({self.offset}..{self.end})"


class _Bytes:
    """``end`` and ``range`` of a record with ``byte_offset`` and ``byte_len``."""

    __slots__ = ()
    byte_offset: int
    byte_len: int

    @property
    def end(self) -> int:
        return self.byte_offset + self.byte_len

    @property
    def range(self) -> ByteRange:
        return ByteRange(self.byte_offset, self.byte_len)


@dataclass(frozen=True, slots=True)
class RootResourceExtent(_Bytes):
    """The bytes one root resource covers: ``byte_len`` bytes from ``byte_offset``.

    ``align`` is the alignment (a power of two) of the resource's base address;
    the extent's start must be aligned to it. Build one with `RootResourceExtent.new`
    (validated) or the constructor (which validates too).
    """

    key: AllocationKey
    byte_offset: int
    byte_len: int
    align: int

    def __post_init__(self) -> None:
        op = "RootResourceExtent"
        if not isinstance(self.key, AllocationKey):
            raise AccessError(
                op,
                f"key must be an AllocationKey, got {type(self.key).__name__}",
                kind="INVALID_LAYOUT",
            )
        byte_offset = nonneg_int(op, "byte_offset", self.byte_offset)
        byte_len = nonneg_int(op, "byte_len", self.byte_len)
        align = nonneg_int(op, "align", self.align)
        if align == 0 or align & (align - 1):
            raise AccessError(
                op, f"align must be a power of two, got {align}", kind="INVALID_LAYOUT", align=align
            )
        if byte_offset % align:
            raise AccessError(
                op,
                f"byte_offset {byte_offset} is not a multiple of the alignment {align}",
                kind="INVALID_LAYOUT",
                byte_offset=byte_offset,
                align=align,
            )
        _check_end(op, byte_offset, byte_len)
        # INVARIANT: Python ints only (see ByteRange).
        object.__setattr__(self, "byte_offset", byte_offset)
        object.__setattr__(self, "byte_len", byte_len)
        object.__setattr__(self, "align", align)

    @classmethod
    def new(
        cls, key: AllocationKey, byte_offset: int, byte_len: int, align: int
    ) -> RootResourceExtent:
        """A validated extent (raises `AccessError` kind INVALID_LAYOUT)."""
        return cls(key, byte_offset, byte_len, align)

    def root_span(self) -> RootBoundSpan:
        """The span covering the whole extent."""
        return RootBoundSpan(self.key, self.byte_offset, self.byte_len, 0)


@dataclass(frozen=True, slots=True)
class RootBoundSpan(_Bytes):
    """A validated byte span of one root: only `validate_span` makes them.

    ``byte_offset`` is in the resource's coordinates; ``relative_offset`` is the
    distance from the start of the root's extent (what host mappings index by).
    """

    key: AllocationKey
    byte_offset: int
    byte_len: int
    relative_offset: int

    def element_offset(self, dtype: DType) -> int:
        """The span's start, in elements of ``dtype`` from the start of the root."""
        return self.relative_offset // dtype.itemsize

    def element_count(self, dtype: DType) -> int:
        return self.byte_len // dtype.itemsize


_REPRESENTATIONS = {
    (DType.C32, DType.F32),
    (DType.F32, DType.C32),
    (DType.C64, DType.F64),
    (DType.F64, DType.C64),
}


def supported_representation(source: DType, target: DType) -> bool:
    """True when bytes holding ``source`` may be read as ``target``."""
    return source is target or (source, target) in _REPRESENTATIONS


def validate_span(
    extent: RootResourceExtent,
    byte_offset: Any,
    byte_len: Any,
    dtype: Any,
    *,
    root_dtype: DType | None = None,
    op: str = "validate_span",
) -> RootBoundSpan:
    """Check a requested span of ``extent`` for ``dtype`` and bind it to the root.

    ``root_dtype`` is the dtype the root holds (None for an untyped byte root).
    Raises `AccessError` (kinds INVALID_LAYOUT, DTYPE_MISMATCH); see the module
    docstring for the rules and their order.
    """
    start = nonneg_int(op, "byte_offset", byte_offset)
    length = nonneg_int(op, "byte_len", byte_len)
    _check_end(op, start, length)
    try:
        dt = as_dtype(dtype, op)
    except TenferroError as exc:
        raise AccessError(
            op, exc.message, kind="DTYPE_MISMATCH", expected=root_dtype, actual=dtype
        ) from None
    if root_dtype is not None and not supported_representation(root_dtype, dt):
        raise AccessError(
            op,
            f"the root holds {root_dtype.name}, which cannot be read as {dt.name} (only the "
            "same dtype, or a complex type and its real type, share a representation)",
            kind="DTYPE_MISMATCH",
            expected=root_dtype,
            actual=dt,
        )
    if start < extent.byte_offset or start + length > extent.end:
        raise AccessError(
            op,
            f"span [{start}, {start + length}) is outside the root extent "
            f"[{extent.byte_offset}, {extent.end})",
            kind="INVALID_LAYOUT",
            reason="out_of_bounds",
            byte_offset=start,
            byte_len=length,
            extent=extent.range,
        )
    rel = start - extent.byte_offset
    isz = dt.itemsize
    if rel % isz or length % isz:
        raise AccessError(
            op,
            f"span [{start}, {start + length}) is not aligned to {dt.name} elements "
            f"({isz} bytes): start {rel} and length {length} must be multiples of {isz}",
            kind="INVALID_LAYOUT",
            reason="misaligned",
            byte_offset=start,
            byte_len=length,
        )
    if extent.align % dt.numpy.alignment:
        raise AccessError(
            op,
            f"the root is aligned to {extent.align} bytes, too little for {dt.name} "
            f"(needs {dt.numpy.alignment})",
            kind="INVALID_LAYOUT",
            reason="misaligned",
            align=extent.align,
        )
    return RootBoundSpan(extent.key, start, length, rel)
