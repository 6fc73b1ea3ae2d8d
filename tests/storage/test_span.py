"""Spans: byte ranges, root extents, and the validator every access goes through."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.storage.identity import AllocationKey
from tenferro.storage.span import (
    MAX_BYTES,
    ByteRange,
    RootResourceExtent,
    supported_representation,
    validate_span,
)

KEY = AllocationKey(tfr.AllocationDomainId(7), tfr.AllocationId(3))
F64 = tfr.DType.F64


def extent(offset: int = 0, length: int = 64, align: int = 8) -> RootResourceExtent:
    return RootResourceExtent(KEY, offset, length, align)


# -- ByteRange ---------------------------------------------------------------------------
def test_byte_range_end_is_offset_plus_length() -> None:
    assert ByteRange(8, 16).end == 24


def test_byte_range_refuses_a_negative_length() -> None:
    with pytest.raises(tfr.AccessError) as err:
        ByteRange(0, -1)
    assert err.value.kind == "INVALID_LAYOUT"


def test_byte_range_refuses_an_end_past_the_address_space() -> None:
    with pytest.raises(tfr.AccessError) as err:
        ByteRange(MAX_BYTES, 1)
    assert err.value.reason == "overflow"


def test_byte_range_of_numpy_integers_whose_end_overflows_int64_is_refused() -> None:
    # 2**62 + 2**62 wraps to a negative int64: the end must be computed on Python ints.
    with pytest.raises(tfr.AccessError) as err:
        ByteRange(np.int64(2**62), np.int64(2**62))
    assert err.value.reason == "overflow"


def test_byte_range_stores_numpy_integers_as_python_ints() -> None:
    r = ByteRange(np.int64(8), np.uint32(16))
    assert (type(r.offset), type(r.length), r.end) == (int, int, 24)


def test_byte_ranges_overlap_only_when_they_share_a_byte() -> None:
    r = ByteRange(0, 8)
    assert (r.overlaps(ByteRange(7, 2)), r.overlaps(ByteRange(8, 2))) == (True, False)


# -- RootResourceExtent -------------------------------------------------------------------
def test_extent_refuses_an_alignment_that_is_not_a_power_of_two() -> None:
    with pytest.raises(tfr.AccessError) as err:
        extent(align=12)
    assert err.value.kind == "INVALID_LAYOUT"


def test_extent_refuses_a_start_that_breaks_its_own_alignment() -> None:
    with pytest.raises(tfr.AccessError):
        extent(offset=4, align=8)


def test_extent_refuses_a_key_that_is_not_an_allocation_key() -> None:
    with pytest.raises(tfr.AccessError):
        RootResourceExtent((1, 2), 0, 8, 8)  # type: ignore[arg-type]


def test_extent_of_numpy_integers_whose_end_overflows_uint64_is_refused() -> None:
    # 2**63 + 2**63 wraps to 0 as uint64: the end must be computed on Python ints.
    with pytest.raises(tfr.AccessError) as err:
        RootResourceExtent(KEY, np.uint64(2**63), np.uint64(2**63), 8)
    assert err.value.reason == "overflow"


def test_extent_stores_numpy_integers_as_python_ints() -> None:
    ext = RootResourceExtent(KEY, np.int64(16), np.uint64(32), np.int32(8))
    assert [type(v) for v in (ext.byte_offset, ext.byte_len, ext.align)] == [int, int, int]


def test_extent_root_span_covers_the_whole_extent() -> None:
    span = extent(16, 32).root_span()
    assert (span.byte_offset, span.byte_len, span.relative_offset) == (16, 32, 0)


# -- validate_span: the rules one by one --------------------------------------------------
def test_span_inside_the_extent_is_bound_to_the_root_key() -> None:
    span = validate_span(extent(), 8, 16, F64, root_dtype=F64)
    assert (span.key, span.byte_offset, span.byte_len) == (KEY, 8, 16)


def test_span_reports_its_element_offset_in_the_requested_dtype() -> None:
    span = validate_span(extent(), 16, 16, F64, root_dtype=F64)
    assert (span.element_offset(F64), span.element_count(F64)) == (2, 2)


def test_span_past_the_end_is_invalid_layout() -> None:
    with pytest.raises(tfr.AccessError) as err:
        validate_span(extent(), 56, 16, F64, root_dtype=F64)
    assert (err.value.kind, err.value.reason) == ("INVALID_LAYOUT", "out_of_bounds")


def test_span_before_the_extent_start_is_invalid_layout() -> None:
    with pytest.raises(tfr.AccessError) as err:
        validate_span(extent(offset=16), 8, 8, F64, root_dtype=F64)
    assert err.value.reason == "out_of_bounds"


def test_span_not_on_an_element_boundary_is_invalid_layout() -> None:
    with pytest.raises(tfr.AccessError) as err:
        validate_span(extent(), 4, 8, F64, root_dtype=F64)
    assert err.value.reason == "misaligned"


def test_span_length_not_a_whole_number_of_elements_is_invalid_layout() -> None:
    with pytest.raises(tfr.AccessError) as err:
        validate_span(extent(), 0, 12, F64, root_dtype=F64)
    assert err.value.reason == "misaligned"


def test_span_on_a_root_aligned_too_little_for_the_dtype_is_invalid_layout() -> None:
    with pytest.raises(tfr.AccessError) as err:
        validate_span(extent(align=4), 0, 8, F64)
    assert err.value.reason == "misaligned"


def test_span_that_overflows_is_invalid_layout() -> None:
    with pytest.raises(tfr.AccessError) as err:
        validate_span(extent(), sys.maxsize, 8, F64)
    assert err.value.reason == "overflow"


def test_span_with_a_negative_offset_is_invalid_layout() -> None:
    with pytest.raises(tfr.AccessError) as err:
        validate_span(extent(), -8, 8, F64)
    assert err.value.kind == "INVALID_LAYOUT"


def test_span_with_a_non_integer_length_is_invalid_layout() -> None:
    with pytest.raises(tfr.AccessError) as err:
        validate_span(extent(), 0, 8.0, F64)
    assert err.value.kind == "INVALID_LAYOUT"


def test_span_of_an_incompatible_dtype_is_dtype_mismatch() -> None:
    with pytest.raises(tfr.AccessError) as err:
        validate_span(extent(), 0, 8, tfr.DType.I64, root_dtype=F64)
    assert (err.value.kind, err.value.expected, err.value.actual) == (
        "DTYPE_MISMATCH",
        F64,
        tfr.DType.I64,
    )


def test_span_of_an_unknown_dtype_is_dtype_mismatch() -> None:
    with pytest.raises(tfr.AccessError) as err:
        validate_span(extent(), 0, 8, "float16", root_dtype=F64)
    assert err.value.kind == "DTYPE_MISMATCH"


def test_complex_span_over_real_bytes_is_accepted() -> None:
    span = validate_span(extent(), 16, 32, tfr.DType.C64, root_dtype=F64)
    assert span.element_offset(tfr.DType.C64) == 1


def test_span_errors_name_the_operation() -> None:
    with pytest.raises(tfr.AccessError, match=r"^my\.op: "):
        validate_span(extent(), 0, 3, F64, op="my.op")


@pytest.mark.parametrize(
    ("source", "target", "ok"),
    [
        (tfr.DType.C32, tfr.DType.F32, True),
        (tfr.DType.F32, tfr.DType.C32, True),
        (tfr.DType.C64, tfr.DType.F64, True),
        (tfr.DType.F64, tfr.DType.C64, True),
        (tfr.DType.C64, tfr.DType.F32, False),
        (tfr.DType.I32, tfr.DType.F32, False),
        (tfr.DType.BOOL, tfr.DType.BOOL, True),
    ],
)
def test_representation_is_same_dtype_or_complex_and_its_real(
    source: tfr.DType, target: tfr.DType, ok: bool
) -> None:
    assert supported_representation(source, target) is ok


# -- the property -------------------------------------------------------------------------
def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


_NUMPY_INTS = (np.int64, np.uint64, np.int32, np.uint8)


def _as_numpy(n: int) -> st.SearchStrategy[Any]:
    """``n`` as a numpy integer of every type that holds it (or ``n`` if none does)."""
    fits = [t for t in _NUMPY_INTS if np.iinfo(t).min <= n <= np.iinfo(t).max]
    return st.sampled_from(fits).map(lambda t: t(n)) if fits else st.just(n)


def numpy_too(ints: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    """Python ints, or the same values as numpy integers (whose sums wrap around)."""
    return st.one_of(ints, ints.flatmap(_as_numpy))


# Values whose sum wraps in int64 or uint64: a check must add Python ints.
WRAPPING = [2**62, 2**63 - 8, 2**63, 2**64 - 8]
ints = numpy_too(
    st.one_of(
        st.integers(-32, 400),
        st.integers(0, 2**70),
        st.sampled_from([MAX_BYTES, MAX_BYTES - 8, MAX_BYTES + 1, *WRAPPING]),
    )
)
maybe_ints = st.one_of(ints, ints, ints, st.none(), st.booleans(), st.floats(0, 64))
dtypes = st.sampled_from(list(tfr.DType))


@given(offset=maybe_ints, length=maybe_ints)
def test_byte_range_accepts_exactly_non_negative_ints_that_do_not_overflow(
    offset: Any, length: Any
) -> None:
    ok = _is_int(offset) and _is_int(length) and int(offset) >= 0 and int(length) >= 0
    ok = ok and int(offset) + int(length) <= MAX_BYTES
    try:
        r = ByteRange(offset, length)
    except tfr.AccessError as exc:
        assert (ok, exc.kind) == (False, "INVALID_LAYOUT")
        return
    assert ok
    assert (type(r.offset), type(r.length), r.end) == (int, int, int(offset) + int(length))


Case = tuple[int, int, int, Any, Any, tfr.DType, "tfr.DType | None"]


@st.composite
def raw_cases(draw: st.DrawFn) -> Case:
    """Anything at all: mostly refused."""
    return (
        draw(numpy_too(st.one_of(st.integers(-16, 128), st.sampled_from(WRAPPING)))),
        draw(
            numpy_too(
                st.one_of(
                    st.integers(-16, 256),
                    st.sampled_from([MAX_BYTES, MAX_BYTES // 2, *WRAPPING]),
                )
            )
        ),
        draw(numpy_too(st.sampled_from([-8, 0, 1, 2, 3, 4, 8, 16, 24, 64]))),
        draw(maybe_ints),
        draw(maybe_ints),
        draw(dtypes),
        draw(st.one_of(st.none(), dtypes)),
    )


@st.composite
def near_cases(draw: st.DrawFn) -> Case:
    """A valid extent and a span on or next to its element boundaries: often accepted."""
    dtype = draw(dtypes)
    isz = dtype.itemsize
    align = draw(st.sampled_from([1, 2, 4, 8, 16, 64]))
    ext_off = align * draw(st.integers(0, 8))
    ext_len = draw(st.integers(0, 320))
    off = ext_off + isz * draw(st.integers(-2, 24)) + draw(st.sampled_from([0, 0, 0, 1, -1, 4]))
    length = isz * draw(st.integers(0, 24)) + draw(st.sampled_from([0, 0, 0, 1, 3]))
    root = draw(st.one_of(st.just(dtype), st.just(dtype.real), st.none(), dtypes))
    return ext_off, ext_len, align, off, length, dtype, root


# A pure function: many more examples than the suite's default cost well under a second.
@settings(max_examples=max(400, settings.default.max_examples))
@given(case=st.one_of(raw_cases(), near_cases()))
def test_validator_raises_only_typed_errors_and_accepts_exactly_the_valid_spans(
    case: Case,
) -> None:
    raw_off, raw_len, raw_align, off, length, dtype, root = case
    ext_off, ext_len, align = (int(v) for v in (raw_off, raw_len, raw_align))
    ext_ok = (
        ext_off >= 0
        and ext_len >= 0
        and align > 0
        and align & (align - 1) == 0
        and ext_off % align == 0
        and ext_off + ext_len <= MAX_BYTES
    )
    try:
        ext = RootResourceExtent(KEY, raw_off, raw_len, raw_align)
    except tfr.AccessError:
        assert not ext_ok
        return
    assert ext_ok
    assert [type(v) for v in (ext.byte_offset, ext.byte_len, ext.align)] == [int, int, int]
    isz = dtype.itemsize
    compatible = root is None or supported_representation(root, dtype)
    sane = _is_int(off) and _is_int(length)
    if sane:
        off, length = int(off), int(length)
    sane = sane and off >= 0 and length >= 0
    sane = sane and off + length <= MAX_BYTES
    expected = (
        sane
        and compatible
        and ext_off <= off
        and off + length <= ext_off + ext_len
        and (off - ext_off) % isz == 0
        and length % isz == 0
        and align % dtype.numpy.alignment == 0
    )
    try:
        span = validate_span(ext, off, length, dtype, root_dtype=root, op="prop")
    except tfr.AccessError as exc:
        assert not expected
        assert exc.op == "prop"
        assert exc.kind == ("DTYPE_MISMATCH" if sane and not compatible else "INVALID_LAYOUT")
        return
    assert expected
    assert (span.key, span.byte_offset, span.byte_len, span.relative_offset) == (
        KEY,
        off,
        length,
        off - ext_off,
    )
