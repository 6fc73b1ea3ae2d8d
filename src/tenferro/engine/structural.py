"""Structural operations: transpose, reshape, broadcast, copies and conversions.

``transpose``, ``reshape``, ``broadcast_in_dim``, ``concatenate``, ``tril``,
``triu`` and ``extract_diagonal`` are computations: each produces a new compact
column-major output from the pool. ``to_contiguous``, ``convert`` and ``cast``
are *named copies*: they are refused inside `tenferro.forbid_copies` before
anything is copied, and counted in `tenferro.copy_stats` once the copy is made
(a refused conversion or ``out=`` counts nothing).

``convert(t, dtype)`` is checked: a value the target dtype cannot hold (out of
range, a fraction into an integer, NaN or infinity into an integer, an integer
beyond the float's exact range, a non-zero imaginary part into a real dtype,
anything but 0/1 into BOOL, a finite value overflowing a narrower float) is a
`ValidationError` naming the first such element, and nothing is left behind.
Rounding to a narrower float (F64 0.1 to F32) is not an error. ``cast(t, dtype)``
is explicitly lossy: numpy's unsafe cast (complex to real drops the imaginary
part; NaN or out-of-range floats into integers give unspecified values).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

from ..copies import check_copy, count_copy
from ..dtype import DType, as_dtype
from ..errors import DTypeError, RuntimeStateError, ValidationError
from ..layout import (
    ArgMemo,
    col_major_strides,
    normalize_axis,
    normalize_perm,
    normalize_shape,
    shape_size,
    strict_index,
)
from ..storage.host import HostBuffer
from ..tensor import Tensor, _pooled
from ..view import TensorView
from ._base import EngineBase, Reads, check_out
from ._core import shaped as _core_shaped

__all__ = ["StructuralOps"]

Shape = tuple[int, ...]
Array = np.ndarray[Any, Any]

_copyto = np.copyto

# ---------------------------------------------------------------------- strided copies
#: Tile side of a blocked strided copy, in elements: a 64x64 F64 tile of source
#: and destination (2 x 32 KiB) stays in L1/L2 while it is transposed.
_TILE = 64
#: Below this many elements numpy's own strided copy is as fast (both arrays fit
#: in cache), and the Python loop over tiles would only add per-tile cost.
_BLOCK_MIN = 1 << 18

#: Validated permutations ``(p, q)`` (see `_perm`), per perm tuple and rank; found by
#: identity, so ``(True, False)`` never passes for a remembered ``(1, 0)``.
_perms = ArgMemo()


def copy_strided(dst: Array, src: Array) -> None:
    """``dst[...] = src`` for a compact ``dst`` (either order), cache-blocked when it pays.

    numpy's strided copy walks the destination in memory order, so when the
    source's fastest axis is another one (a transpose, a permute) every element
    read touches a new cache line and, past a few MiB, a new page. Above
    `_BLOCK_MIN` elements the copy goes tile by tile over the two axes that
    matter (the destination's fastest axis and the source's), each tile one
    assignment whose source and destination fit in cache. Writes every element
    of ``dst`` (the tiles cover both axes exactly; other axes are copied whole).
    """
    if src.size < _BLOCK_MIN or src.ndim < 2:
        dst[...] = src
        return
    shape = src.shape
    a = _fastest(dst)
    b = _fastest(src)
    if a == b or shape[a] < 2 * _TILE or shape[b] < 2 * _TILE:
        _copyto(dst, src)  # already read in the destination's order, or too thin to tile
        return
    index: list[Any] = [slice(None)] * src.ndim
    for j in range(0, shape[b], _TILE):
        index[b] = slice(j, j + _TILE)
        for i in range(0, shape[a], _TILE):
            index[a] = slice(i, i + _TILE)
            key = tuple(index)
            _copyto(dst[key], src[key])


#: Up to this many elements a strided copy is one ``take`` with a remembered index
#: array (`gather_index`): a single C call, where building the strided numpy
#: view and assigning it costs about twice as much at 16 elements (measured: the
#: two meet near 2048 elements, and ``take`` takes twice as long at 4096).
_GATHER_MAX = 1024
#: ``take``'s mode: "clip" never buffers ``out=`` (the default "raise" copies
#: through a temporary, half the cost at 16 elements) and can never read outside
#: the source; the indices are in range by construction.
_TAKE_MODE: Final = "clip"
#: Gather indices per (shape, strides), at most this many (each <= 8 KiB).
_GATHER_KEPT = 256
_gathers: dict[tuple[Shape, Shape], tuple[Array, int]] = {}


def gather_index(shape: Shape, strides: Shape) -> tuple[Array, int]:
    """``(idx, lo)``: element ``k`` (column-major order) of the strided layout
    ``(shape, strides, offset)`` is ``buffer[offset + lo + idx[k]]``, remembered.

    ``lo`` (<= 0) is the lowest relative position (negative strides), so every
    index is non-negative and ``buffer[offset + lo:].take(idx)`` reads the layout.
    """
    key = (shape, strides)
    hit = _gathers.get(key)
    if hit is not None:
        return hit
    pos: Array = np.zeros((), np.intp)
    for d, s in zip(shape, strides, strict=True):
        pos = np.add.outer(pos, np.arange(d, dtype=np.intp) * s)
    lo = sum(s * (d - 1) for d, s in zip(shape, strides, strict=True) if s < 0 and d)
    idx = pos.reshape(-1, order="F") - lo
    idx.flags.writeable = False
    if len(_gathers) >= _GATHER_KEPT:
        _gathers.clear()
    _gathers[key] = (idx, lo)
    return idx, lo


def _fastest(arr: Array) -> int:
    """The axis of ``arr`` with the smallest stride among axes longer than 1."""
    shape = arr.shape
    strides = arr.strides
    return min(
        (i for i in range(arr.ndim) if shape[i] > 1), key=lambda i: abs(strides[i]), default=0
    )


def _perm(perm: Any, ndim: int, op: str) -> tuple[Shape, Shape]:
    """``(p, q)``: `normalize_perm`'s ``p``, and ``q`` for the hot path, cached per tuple.

    The hot path works on row-major views (a default-order reshape is cheaper
    than ``order="F"``): a column-major array is the row-major array of its
    reversed shape, transposed, so the column-major ``x.transpose(p)`` is the
    reversal of ``C.transpose(q)`` where ``C`` is the row-major view of ``x``'s
    memory and ``q[k] = ndim - 1 - p[ndim - 1 - k]``.
    """
    hit: tuple[Shape, Shape] | None = _perms.get(perm, ndim)
    if hit is not None:
        return hit
    p = normalize_perm(perm, ndim, op)
    q = tuple(ndim - 1 - p[ndim - 1 - k] for k in range(ndim))
    _perms.put(perm, ndim, (p, q))
    return p, q


_TPlan = tuple[Any, Shape, Shape, "Array | None"]
#: `transpose`'s plans per (shape, perm): the perm object itself, ``q`` (see `_perm`),
#: the output shape and, for small tensors, the gather index.
_tplans: dict[tuple[Shape, Any], _TPlan] = {}


def _transpose_plan(shape: Shape, perm: Any, op: str) -> _TPlan:
    """Check ``perm`` for a compact tensor of ``shape`` and plan its transpose
    (remembered for a tuple of ints)."""
    p, q = _perm(perm, len(shape), op)
    out_shape = tuple([shape[i] for i in p])
    idx = None
    if shape_size(shape) <= _GATHER_MAX:
        strides = col_major_strides(shape)
        idx = gather_index(out_shape, tuple([strides[i] for i in p]))[0]
    plan: _TPlan = (perm, q, out_shape, idx)
    if perm.__class__ is tuple and all(i.__class__ is int for i in perm):
        if len(_tplans) >= _GATHER_KEPT:
            _tplans.clear()
        _tplans[(shape, perm)] = plan
    return plan


def _axis(op: str, axis: Any, ndim: int) -> int:
    return normalize_axis(axis, ndim, op)


def _int(op: str, value: Any, what: str) -> int:
    try:
        return strict_index(value)
    except TypeError:
        raise ValidationError(
            op, f"{what} must be an int, got {value!r}", kind="INVALID_ARGUMENT"
        ) from None


# ---------------------------------------------------------------------- checked conversion
def _first_bad(bad: Array, src: Array) -> tuple[tuple[int, ...], Any]:
    """The column-major-first offending index of ``src`` where ``bad`` is set."""
    flat_bad = bad.reshape(-1, order="F") if bad.ndim else bad.reshape(1)
    pos = int(np.argmax(flat_bad))
    index = tuple(int(i) for i in np.unravel_index(pos, src.shape, order="F"))
    value = src[index] if src.ndim else src[()]
    return index, value.item()


def _lossy_mask(src: Array, dst: Array, target: DType) -> Array | None:
    """Where ``dst`` (``src`` cast to ``target``) does not hold ``src``'s value; None if nowhere."""
    s = src.dtype
    t = dst.dtype
    if s == t:
        return None
    bad: Array | None = None
    if s.kind == "c" and t.kind != "c":
        bad = src.imag != 0
        src = src.real
        s = src.dtype
    if t.kind == "b":
        more = ~((src == 0) | (src == 1))
    elif s.kind == "b":
        return bad if bad is not None and bad.any() else None
    elif t.kind in "iu":
        info = np.iinfo(t)
        if s.kind == "f":
            with np.errstate(invalid="ignore"):
                more = ~np.isfinite(src) | (src != np.trunc(src))
                more |= (src < float(info.min)) | (src >= -float(info.min))
        else:
            more = (src < info.min) | (src > info.max)
    elif t.kind in "fc":
        real_t = np.finfo(t).dtype
        if s.kind in "iu":
            mant = np.finfo(real_t).nmant + 1
            limit = 2**mant
            big = (src > limit) | (src < -limit)
            if big.any():
                # Beyond 2**mant only some integers are exact: compare after a
                # round trip (values at or past 2**63 cannot round-trip into int64).
                back_f = dst.real if t.kind == "c" else dst
                edge = np.abs(back_f) >= 2.0**63
                with np.errstate(invalid="ignore"):
                    back = np.where(edge, 0, back_f).astype(np.int64)
                more = big & (edge | (back != src))
            else:
                more = big
        else:
            # float -> float (or complex): rounding is allowed, overflow is not.
            d = dst if t.kind != "c" or s.kind == "c" else dst.real
            with np.errstate(invalid="ignore"):
                more = np.isfinite(src) & ~np.isfinite(d)
    else:  # pragma: no cover - every DType kind is handled above
        more = np.zeros(src.shape, dtype=bool)
    bad = more if bad is None else (bad | more)
    return bad if bad.any() else None


# ---------------------------------------------------------------------- the mixin


def _transpose_kernel(fa: Array, flat: Array, arg: tuple[Any, Any, Any, Any]) -> None:
    """A transpose of a plain host tensor into ``flat`` (``_core.shaped``'s kernel)."""
    shape, q, out_shape, idx = arg
    if idx is not None:
        # The output's column-major order read from the input's layout: take writes
        # every element of flat.
        fa.take(idx, None, flat, _TAKE_MODE)
    else:
        # Row-major views of both (see `_perm`): the source has the destination's
        # shape, so every element is written.
        dst = flat.reshape(out_shape[::-1])
        src = fa.reshape(shape[::-1]).transpose(q)
        if len(fa) < _BLOCK_MIN:
            dst[...] = src  # copy_strided's small case, inlined
        else:
            copy_strided(dst, src)


class StructuralOps(EngineBase):
    """Structural methods of `CpuEngine` (mixed in; see the module docstring)."""

    __slots__ = ()

    def transpose(self, t: Any, perm: Any, out: Tensor | None = None) -> Tensor:
        """Permute axes: ``result.shape[i] == t.shape[perm[i]]``; a new compact output."""
        op = "CpuEngine.transpose"
        if out is None and t.__class__ is Tensor and t._st.__class__ is HostBuffer:
            # Hot path: a plain host tensor, through the compiled protocol.
            shape = t._shape
            plan = _tplans.get((shape, perm)) if perm.__class__ is tuple else None
            if plan is None or plan[0] is not perm:
                # INVARIANT: a plan is used only for the very perm object it was made
                # for (an equal tuple of bools or floats is checked, and refused).
                plan = _transpose_plan(shape, perm, op)
            _, q, out_shape, idx = plan
            # The per-operation protocol, compiled (engine/_core.pyx); None for an
            # empty or exclusively borrowed tensor (the general path below).
            r: Tensor | None = _core_shaped(
                _transpose_kernel,
                t,
                out_shape,
                shape_size(shape),
                t._dtype,
                self,
                (shape, q, out_shape, idx),
            )
            if r is not None:
                return r
        with Reads() as reads:
            x, dt, shape = reads.operand(t, op)
            p = normalize_perm(perm, len(shape), op)
            out_shape = tuple(shape[i] for i in p)

            def kernel(nd: Array) -> None:
                # The permuted input has nd's shape: copy_strided writes every element.
                copy_strided(nd, x.transpose(p))

            return self._run(op, out_shape, dt, kernel, out, reads)

    def reshape(self, t: Any, shape: Any, out: Tensor | None = None) -> Tensor:
        """The elements in column-major order, with a new shape (one entry may be -1)."""
        op = "CpuEngine.reshape"
        with Reads() as reads:
            x, dt, old = reads.operand(t, op)
            new = _resolve_shape(op, shape, shape_size(old), dt)

            def kernel(nd: Array) -> None:
                # nd seen in the input's shape (column-major, a view of the same memory)
                # has the input's shape: copyto writes every element.
                np.copyto(nd.reshape(old, order="F") if old != new else nd, x)

            return self._run(op, new, dt, kernel, out, reads)

    def broadcast_in_dim(self, t: Any, shape: Any, dims: Any, out: Tensor | None = None) -> Tensor:
        """Broadcast ``t`` to ``shape``: input axis ``i`` becomes output axis ``dims[i]``.

        Each input axis has the output's size there or size 1 (repeated); output
        axes not named in ``dims`` are new (repeated). The result is a new compact
        tensor (a computation, not a view).
        """
        op = "CpuEngine.broadcast_in_dim"
        with Reads() as reads:
            x, dt, in_shape = reads.operand(t, op)
            out_shape = normalize_shape(shape, op, dt.itemsize)
            try:
                d = tuple(strict_index(i) for i in dims)
            except TypeError:
                raise ValidationError(
                    op,
                    f"dims must be a sequence of ints (not bools), got {dims!r}",
                    kind="INVALID_AXES",
                    axes=dims,
                ) from None
            if len(d) != len(in_shape):
                raise ValidationError(
                    op,
                    f"dims names {len(d)} output axes but the input has {len(in_shape)} axes",
                    kind="INVALID_AXES",
                    axes=d,
                )
            if len(set(d)) != len(d) or any(not 0 <= i < len(out_shape) for i in d):
                raise ValidationError(
                    op,
                    f"dims {d} must be distinct output axes in 0..{len(out_shape) - 1}",
                    kind="INVALID_AXES",
                    axes=d,
                )
            for i, j in enumerate(d):
                if in_shape[i] not in (1, out_shape[j]):
                    raise ValidationError(
                        op,
                        f"input axis {i} has size {in_shape[i]}, which cannot broadcast to output "
                        f"axis {j} of size {out_shape[j]} (it must be equal or 1)",
                        kind="DIM_MISMATCH",
                        axis=i,
                    )
            order = sorted(range(len(d)), key=lambda i: d[i])
            new_axes = tuple(j for j in range(len(out_shape)) if j not in d)

            def kernel(nd: Array) -> None:
                # The expanded input broadcasts to nd's shape: copyto writes every element.
                np.copyto(nd, np.expand_dims(x.transpose(order), new_axes))

            return self._run(op, out_shape, dt, kernel, out, reads)

    def concatenate(
        self, tensors: Sequence[Any], axis: int = 0, out: Tensor | None = None
    ) -> Tensor:
        """Join tensors of one dtype along ``axis`` (other axes equal)."""
        op = "CpuEngine.concatenate"
        if isinstance(tensors, (Tensor, str)) or not isinstance(tensors, Sequence) or not tensors:
            raise ValidationError(
                op,
                "concatenate takes a non-empty list of tensors",
                kind="INVALID_OPERAND",
                operand_type=type(tensors).__name__,
            )
        with Reads() as reads:
            items = [reads.operand(x, op) for x in tensors]
            dt = items[0][1]
            rank = len(items[0][2])
            if rank == 0:
                raise ValidationError(
                    op,
                    "rank-0 tensors cannot be concatenated",
                    kind="INVALID_RANK",
                    shape=items[0][2],
                )
            ax = _axis(op, axis, rank)
            base = items[0][2]
            for i, (_, d, s) in enumerate(items):
                if d is not dt:
                    raise DTypeError(
                        op,
                        f"tensor {i} has dtype {d.name}, tensor 0 has {dt.name}; convert first",
                        kind="DTYPE_MISMATCH",
                    )
                if len(s) != rank or any(s[j] != base[j] for j in range(rank) if j != ax):
                    raise ValidationError(
                        op,
                        f"tensor {i} has shape {s}; every tensor needs shape {base} except along "
                        f"axis {ax}",
                        kind="SHAPE_MISMATCH",
                        shapes=(base, s),
                    )
            out_shape = tuple(
                sum(s[ax] for _, _, s in items) if j == ax else base[j] for j in range(rank)
            )
            arrays = [a for a, _, _ in items]

            def kernel(nd: Array) -> None:
                # The pieces tile nd along `axis` exactly: every element is written once.
                np.concatenate(arrays, axis=ax, out=nd)

            return self._run(op, out_shape, dt, kernel, out, reads)

    def tril(self, t: Any, k: int = 0, out: Tensor | None = None) -> Tensor:
        """Lower triangle of each ``[M, N]`` matrix (batch axes trailing); above
        diagonal ``k`` becomes zero."""
        return self._tri("tril", t, k, out)

    def triu(self, t: Any, k: int = 0, out: Tensor | None = None) -> Tensor:
        """Upper triangle of each ``[M, N]`` matrix (batch axes trailing); below
        diagonal ``k`` becomes zero."""
        return self._tri("triu", t, k, out)

    def _tri(self, name: str, t: Any, k: Any, out: Tensor | None) -> Tensor:
        op = f"CpuEngine.{name}"
        with Reads() as reads:
            x, dt, shape = reads.operand(t, op)
            kk = _int(op, k, "k")
            if len(shape) < 2:
                raise ValidationError(
                    op,
                    f"{name} needs a matrix [M, N, B...], got shape {shape}",
                    kind="INVALID_RANK",
                    shape=shape,
                )
            m, n = shape[0], shape[1]
            # Diagonals beyond the matrix keep everything or nothing: clamping k keeps
            # the meaning and keeps np.tri's C long from overflowing.
            kk = min(max(kk, -m - 1), n + 1)
            batch = len(shape) - 2

            def kernel(nd: Array) -> None:
                if name == "triu":
                    keep = ~np.tri(m, n, kk - 1, dtype=bool)
                else:
                    keep = np.tri(m, n, kk, dtype=bool)
                keep = keep.reshape(keep.shape + (1,) * batch)
                # The first copy writes every element with zero; the second puts back the
                # kept triangle.
                nd[...] = 0
                np.copyto(nd, x, where=keep)

            return self._run(op, shape, dt, kernel, out, reads)

    def extract_diagonal(
        self, t: Any, offset: int = 0, axes: Sequence[int] = (0, 1), out: Tensor | None = None
    ) -> Tensor:
        """The diagonal over ``axes`` (default the matrix axes 0 and 1), first in the
        result, followed by the remaining axes in order: ``[M, N, B] -> [K, B]``."""
        op = "CpuEngine.extract_diagonal"
        with Reads() as reads:
            x, dt, shape = reads.operand(t, op)
            off = _int(op, offset, "offset")
            try:
                a1, a2 = axes
            except (TypeError, ValueError):
                raise ValidationError(
                    op,
                    f"axes must be a pair of axes, got {axes!r}",
                    kind="INVALID_AXES",
                    axes=axes,
                ) from None
            if len(shape) < 2:
                raise ValidationError(
                    op,
                    f"a diagonal needs rank >= 2, got shape {shape}",
                    kind="INVALID_RANK",
                    shape=shape,
                )
            i1 = _axis(op, a1, len(shape))
            i2 = _axis(op, a2, len(shape))
            if i1 == i2:
                raise ValidationError(
                    op, f"axes {axes!r} name one axis twice", kind="INVALID_AXES", axes=axes
                )
            # An offset beyond the matrix gives an empty diagonal: clamping keeps the
            # meaning and keeps np.diagonal's C long from overflowing.
            off = min(max(off, -shape[i1]), shape[i2])
            diag_view = np.diagonal(x, off, i1, i2)
            out_shape = (diag_view.shape[-1], *diag_view.shape[:-1])

            def kernel(nd: Array) -> None:
                # The diagonal view, diagonal axis first, has nd's shape: copyto writes
                # every element.
                np.copyto(nd, np.moveaxis(diag_view, -1, 0))

            return self._run(op, out_shape, dt, kernel, out, reads)

    # -- named copies --------------------------------------------------------------------
    def to_contiguous(self, t: Any, out: Tensor | None = None) -> Tensor:
        """A compact column-major copy of a tensor or view (any strides).

        Ownership: **copies** (named and counted as ``CpuEngine.to_contiguous``).
        A tensor living in this engine's allocation domain is copied within the
        domain (a new allocation there); other non-host memory is refused with
        `RuntimeStateError`.
        """
        op = "CpuEngine.to_contiguous"
        if out is None and t.__class__ is TensorView:
            # Hot path: a shared view (a counted alias of its buffer, so no writer can
            # be granted while it lives: no pin needed), copied into a pooled output.
            shape = t._shape
            dt = t._dtype
            strides = t._strides
            hit = _gathers.get((shape, strides))
            n = len(hit[0]) if hit is not None else shape_size(shape)
            nbytes = n * dt.itemsize
            check_copy(op, nbytes)
            if n <= _GATHER_MAX:
                root = t._root(op)  # a fresh view takes its root: now a counted alias
                want = dt.numpy
                if root.dtype is not want and root.dtype != want:
                    root = root.view(want)
                idx, lo = hit if hit is not None else gather_index(shape, strides)
                start = t._offset + lo
                x = root[start:] if start else root
            else:
                # The view reversed (the row-major twin of the column-major output, see
                # `_perm`): default-order reshapes are cheaper than order="F".
                x = t._strided(op).T
            owner = self._pool.acquire(x.dtype, n)
            flat = owner if len(owner) == n else owner[:n]
            try:
                if n <= _GATHER_MAX:
                    # idx names every element of the view in column-major order:
                    # take writes all n elements of flat.
                    x.take(idx, None, flat, _TAKE_MODE)
                else:
                    # x has the output's reversed shape: every element of flat is written.
                    copy_strided(flat.reshape(shape[::-1]), x)
            except BaseException:
                # Dropped, never pooled: the traceback keeps this frame's writable
                # `owner` (EngineBase._run).
                self._pool.forget(owner)  # never back: stop counting it live
                del flat, owner
                raise
            count_copy(nbytes)
            return _pooled(shape, dt, owner, flat, self._recycler)
        if isinstance(t, Tensor):
            st = t._live(op)
            if st.__class__ is not HostBuffer and not getattr(st, "host_addressable", False):
                domain = self._domain
                if (
                    out is None
                    and domain is not None
                    and t.allocation_domain is not None
                    and t.allocation_domain == domain.id()
                ):
                    return self._domain_copy(op, t)
                raise RuntimeStateError(
                    op,
                    "download it (t.download()) or use an engine created with this tensor's "
                    "allocation_domain",
                    kind="NOT_HOST",
                    memory_kind=t.placement.memory_kind,
                )
        with Reads() as reads:
            x, dt, shape = reads.operand(t, op)
            nbytes = shape_size(shape) * dt.itemsize
            check_copy(op, nbytes)

            def kernel(nd: Array) -> None:
                # x has nd's shape: copy_strided writes every element.
                copy_strided(nd, x)

            result = self._run(op, shape, dt, kernel, out, reads)
            count_copy(nbytes)
            return result

    def _domain_copy(self, op: str, t: Tensor) -> Tensor:
        domain = self._domain
        nbytes = t.nbytes
        check_copy(op, nbytes)
        result: Tensor = domain.allocate(t.dtype, t.shape)
        with t.map_read() as r, result.map_write() as w:
            # The destination is a fresh compact allocation of t's shape: copyto
            # writes every element.
            np.copyto(w.array, r.array)
        count_copy(nbytes)
        return result

    def convert(self, t: Any, dtype: Any, out: Tensor | None = None) -> Tensor:
        """A copy converted to ``dtype``, refusing any value the target cannot hold.

        Ownership: **copies** (named, counted as ``CpuEngine.convert``). On refusal
        (`ValidationError` kind LOSSY_CONVERSION, naming the first element in
        column-major order) the pooled output goes back to the pool and ``out=``
        (if given) is left unchanged.
        """
        return self._convert("CpuEngine.convert", t, dtype, out, checked=True)

    def cast(self, t: Any, dtype: Any, out: Tensor | None = None) -> Tensor:
        """A copy cast to ``dtype``, explicitly lossy (numpy's unsafe cast).

        Ownership: **copies** (named, counted as ``CpuEngine.cast``).
        """
        return self._convert("CpuEngine.cast", t, dtype, out, checked=False)

    def _convert(self, op: str, t: Any, dtype: Any, out: Tensor | None, checked: bool) -> Tensor:
        target = as_dtype(dtype, op)
        with Reads() as reads:
            x, dt, shape = reads.operand(t, op)
            if out is not None:
                check_out(out, shape, target, op)
            # Refused under forbid_copies before anything is copied; counted only once
            # the copy is made (a lossy value or a refused out= copies nothing).
            nbytes = shape_size(shape) * target.itemsize
            check_copy(op, nbytes)
            real_part = dt.is_complex and not target.is_complex and not checked

            def kernel(nd: Array) -> None:
                src = x.real if real_part else x
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with np.errstate(all="ignore"):
                        # The source has nd's shape: copyto writes every element.
                        np.copyto(nd, src, casting="unsafe")
                if checked:
                    bad = _lossy_mask(x, nd, target)
                    if bad is not None:
                        index, value = _first_bad(bad, x)
                        raise ValidationError(
                            op,
                            "use cast() for an explicitly lossy conversion",
                            kind="LOSSY_CONVERSION",
                            index=index,
                            value=value,
                            dtype=target,
                        )

            if not (checked and out is not None):
                result = self._run(op, shape, target, kernel, out, reads)
                count_copy(nbytes)
                return result
            # Checked into out=: a refused conversion must leave out= untouched.
            result = self._run_staged(op, shape, target, kernel, out, reads)
            count_copy(nbytes)
            return result


def _resolve_shape(op: str, shape: Any, size: int, dt: DType) -> Shape:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = list(shape)
    except TypeError:
        raise ValidationError(
            op,
            f"shape must be a sequence of ints, got {shape!r}",
            kind="INVALID_SHAPE",
            shape=shape,
        ) from None
    holes = [i for i, d in enumerate(dims) if not isinstance(d, bool) and d == -1]
    if len(holes) > 1:
        raise ValidationError(
            op, "only one entry of shape may be -1", kind="INVALID_SHAPE", shape=tuple(dims)
        )
    if holes:
        rest = shape_size([d for i, d in enumerate(dims) if i != holes[0]])
        if rest == 0 or size % rest:
            raise ValidationError(
                op,
                f"cannot infer the -1 in {tuple(dims)} for {size} elements",
                kind="LENGTH_MISMATCH",
            )
        dims[holes[0]] = size // rest
    new = normalize_shape(dims, op, dt.itemsize)
    if shape_size(new) != size:
        raise ValidationError(
            op,
            f"cannot reshape {size} elements to {new} ({shape_size(new)} elements)",
            kind="LENGTH_MISMATCH",
            size=size,
            shape=new,
        )
    return new
