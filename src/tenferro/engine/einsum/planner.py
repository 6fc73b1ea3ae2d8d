"""From a checked einsum and an SSA path to the steps the executor runs.

Each pairwise step becomes one product ``[M, K, B] x [K, N, B] -> [M, N, B]``
(column-major, batch *trailing*, the mapping of `matmul` and `dot_general`):
the indices both operands share and a later step (or the output) still needs
are the batch ``B``, shared indices needed nowhere else are summed (``K``), the
rest are each side's free indices. Indices of one operand that are repeated
(diagonals) or needed nowhere else (sums) are first reduced on that operand
alone, with `np.einsum`.

Layouts are chosen here, once, so that the run does as few transpositions as
the path allows: every intermediate is written compact in an order picked for
the step that consumes it (an operand whose axes already group as ``[M, K, B]``
or ``[K, M, B]`` is read in place, as a strided view BLAS takes), and when the
two operands of a step disagree only the smaller one is transposed. Two layouts
avoid a transposition altogether: an operand that groups only without its
slowest free indices (its "tail") is multiplied batched over them, the other
operand broadcast (`_Compiler._tail`); two operands that both end in the same
summed indices are multiplied once per entry of those and the products summed
(`_Compiler._split_k`, kernel `SPLIT_K`). The last step writes the output order
directly when that costs fewer copied elements than a final transposition, and
otherwise writes it a slab at a time through scratch (`FINAL`), never as a
whole result next to the output.

Planning is counted (`plans_built`), so tests can prove that a compiled
expression, or a cached einsum, plans once and then only runs. The records a
plan is made of are in `steps`.

One concern, the layout compiler (`_Compiler`), in one module of about 700 lines:
its passes share the role sets, orders and memory accounting of one planning pass.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from opt_einsum.parser import get_symbol

from ...layout import shape_size
from ..gemm import SPLIT_K, kernel_for
from .parser import Spec
from .steps import (
    FINAL,
    GEMM,
    PERMUTE,
    REDUCE,
    Chunking,
    Final,
    FinalOperand,
    Gemm,
    Operand,
    OutSlabs,
    Permute,
    Plan,
    Reduce,
    Step,
)

__all__ = ["FINAL", "GEMM", "PERMUTE", "REDUCE", "Plan", "compile_plan", "plans_built"]

Shape = tuple[int, ...]
Labels = tuple[str, ...]

#: The last step writes its output a slab at a time, in up to _OUT_SLABS slabs (of
#: at least _SLAB_MIN elements), when its product's order is not the output's.
_OUT_SLABS = 16

#: A transposed copy is made a slab at a time (`_Compiler._chunking`), in up to
#: _CHUNKS slabs of at least _SLAB_MIN elements, so it never doubles the memory.
_SLAB_MIN = 1 << 13
_CHUNKS = 8

#: A tail-batched product (`_Compiler._tail`) needs this many elements of its operand
#: per tail entry: below that, a transposed copy and one product beat the batch loop.
_TAIL_MIN = 256

#: Planning passes at most (see `compile_plan`).
_PASSES = 4

_lock = threading.Lock()
_built = 0


def plans_built() -> int:
    """How many einsum plans were compiled in this process (cache hits do not count)."""
    return _built


def _fit(order: Labels, free: frozenset[str], con: frozenset[str], bat: frozenset[str]) -> Any:
    """``(free_first, con_order, batch_order)`` if ``order`` groups as
    ``[free, con, batch]`` or ``[con, free, batch]`` without a copy, else None."""
    nb = len(bat)
    cut = len(order) - nb
    if frozenset(order[cut:]) != bat:
        return None
    head = order[:cut]
    nf = len(free)
    if frozenset(head[:nf]) == free:
        return True, head[nf:], order[cut:]
    if frozenset(head[: len(con)]) == con:
        return False, head[: len(con)], order[cut:]
    return None


def _local_expr(src: Labels, dst: Labels) -> str:
    """An np.einsum expression for ``src -> dst`` in ASCII letters (numpy's alphabet)."""
    names = {ch: get_symbol(i) for i, ch in enumerate(dict.fromkeys(src))}
    return "".join(names[c] for c in src) + "->" + "".join(names[c] for c in dst)


class _Compiler:
    def __init__(
        self, spec: Spec, path: Sequence[tuple[int, ...]], hints: dict[int, Labels]
    ) -> None:
        self.spec = spec
        self.hints = hints
        # Orders this pass transposed intermediates into (hints for the next pass).
        self.wanted: dict[int, Labels] = {}
        self.sizes = spec.sizes
        self.path = list(path)
        n = len(spec.terms)
        self.n = n
        self.order: dict[int, Labels] = {i: tuple(t) for i, t in enumerate(spec.terms)}
        self.steps: list[Step] = []
        self.next_id = n + len(self.path)  # ids for pre-reduced operands
        self.live = 0
        self.peak = 0
        self.alive: dict[int, int] = {}
        self.transposed = 0

    def size(self, labels: Sequence[str]) -> int:
        return shape_size([self.sizes[ch] for ch in labels])

    # -- pass 1: label sets and each step's roles (orders do not matter yet) ------
    def roles(self) -> None:
        count: Counter[str] = Counter()
        for t in self.spec.terms:
            count.update(set(t))
        count.update(set(self.spec.out))
        sets: dict[int, frozenset[str]] = {i: frozenset(t) for i, t in enumerate(self.spec.terms)}
        self.step_roles: list[Any] = []
        self.consumer: dict[int, tuple[int, int]] = {}
        last = len(self.path) - 1
        for s, ids in enumerate(self.path):
            for i in ids:
                count.subtract(sets[i])
            keep = frozenset(ch for ch, c in count.items() if c > 0)
            res_id = self.n + s
            if len(ids) == 1:
                res = frozenset(self.spec.out) if s == last else sets[ids[0]] & keep
                self.step_roles.append(None)
            else:
                x, y = ids
                xs = sets[x] & (sets[y] | keep)
                ys = sets[y] & (sets[x] | keep)
                shared = xs & ys
                bat = shared & keep
                con = shared - keep
                fa = xs - ys
                fb = ys - xs
                self.step_roles.append((xs, ys, fa, fb, con, bat))
                self.consumer[x] = (s, 0)
                self.consumer[y] = (s, 1)
                res = fa | fb | bat
            sets[res_id] = res
            count.update(res)
        self.sets = sets

    def needs(self, vid: int) -> Any:
        """The role sets ``(own, free, con, bat)`` its consumer reads value ``vid`` with."""
        where = self.consumer.get(vid)
        if where is None:
            return None
        s, side = where
        xs, ys, fa, fb, con, bat = self.step_roles[s]
        return (xs, fa, con, bat) if side == 0 else (ys, fb, con, bat)

    # -- memory bookkeeping -------------------------------------------------------
    def alloc(self, vid: int, n: int) -> None:
        self.alive[vid] = n
        self.live += n
        self.peak = max(self.peak, self.live)

    def free(self, vid: int) -> None:
        self.live -= self.alive.pop(vid, 0)

    def src_shape(self, vid: int) -> Shape | None:
        """The shape to view an intermediate's flat buffer in (None: an input, already nd)."""
        return None if vid < self.n else tuple(self.sizes[ch] for ch in self.order[vid])

    # -- pass 2: orders and steps -------------------------------------------------
    def compile(self) -> tuple[list[Step], int, int, int]:
        self.roles()
        last = len(self.path) - 1
        out = tuple(self.spec.out)
        for s, ids in enumerate(self.path):
            res_id = self.n + s
            dst = -1 if s == last else res_id
            if len(ids) == 1:
                (x,) = ids
                if s == last:
                    res = out
                else:
                    keep = self.sets[res_id]
                    res = tuple(ch for ch in dict.fromkeys(self.order[x]) if ch in keep)
                self._reduce(x, res, dst, res_id)
                continue
            self._pair(s, ids, dst, res_id, out if s == last else None)
        return self.steps, self.peak, self.transposed, self.next_id

    def _reduce(self, x: int, res: Labels, dst: int, res_id: int) -> None:
        n_res = self.size(res)
        self.alloc(res_id, n_res)
        expr = _local_expr(self.order[x], res)
        shape = tuple(self.sizes[ch] for ch in res)
        self.steps.append(Reduce(REDUCE, x, dst, expr, shape, self.src_shape(x)))
        self.free(x)
        self.order[res_id] = res

    def _pair(
        self, s: int, ids: tuple[int, ...], dst: int, res_id: int, final: Labels | None
    ) -> None:
        xs, ys, fa, fb, con, bat = self.step_roles[s]
        x, y = ids
        # Which operands need a reduction of their own first (diagonals, lone sums)?
        flex = [len(self.order[v]) != len(own) for v, own in ((x, xs), (y, ys))]
        sizes = [
            self.size([ch for ch in self.order[v] if ch in own]) for v, own in ((x, xs), (y, ys))
        ]
        fits: list[Any] = [
            None if flex[0] else _fit(self.order[x], fa, con, bat),
            None if flex[1] else _fit(self.order[y], fb, con, bat),
        ]
        if final is None and not any(flex) and self._tail(x, y, fa, fb, con, fits, dst, res_id):
            return
        if (
            not any(flex)
            and None in fits
            and self._split_k(x, y, fa, fb, con, bat, dst, res_id, final)
        ):
            return
        c_ord, b_ord, copy = self._agree(x, y, fits, flex, sizes, con, bat)
        orders: list[Labels] = []
        oriented: list[bool] = []
        for i, (v, free) in enumerate(((x, fa), (y, fb))):
            if copy[i] or flex[i]:
                base = tuple(ch for ch in dict.fromkeys(self.order[v]) if ch in free)
                orders.append(base + c_ord + b_ord)
                oriented.append(True)
            else:
                orders.append(self.order[v])
                oriented.append(bool(fits[i][0]))
        free_x = tuple(ch for ch in orders[0] if ch in fa)
        free_y = tuple(ch for ch in orders[1] if ch in fb)
        o1 = free_x + free_y + b_ord
        o2 = free_y + free_x + b_ord
        # The order to write: the output's (last step), or the one this value's consumer
        # had to transpose it into on an earlier pass (a hint), when forcing the
        # operands' orders here copies fewer elements than that transposition.
        target = final if final is not None else self.hints.get(res_id)
        swap, res, forced = False, o1, None
        if target is not None:
            swap, res, forced = self._final_order(target, o1, o2, fa, fb, bat)
        if forced is not None:
            assert target is not None
            fx, fy, fb_ord = forced
            wants = []
            cost = 0
            for i, (v, fr) in enumerate(((x, fx), (y, fy))):
                want_a = fr + c_ord + fb_ord
                want_b = c_ord + fr + fb_ord
                fits_now = not flex[i] and self.order[v] in (want_a, want_b)
                wants.append((want_a, fits_now))
                cost += 0 if fits_now or flex[i] else sizes[i]
            natural = self.size(target) + sum(
                sz for sz, c, fl in zip(sizes, copy, flex, strict=True) if c and not fl
            )
            if cost < natural:
                b_ord = fb_ord
                for i, (want_a, fits_now) in enumerate(wants):
                    v = (x, y)[i]
                    if fits_now:
                        orders[i] = self.order[v]
                        oriented[i] = self.order[v] == want_a
                        copy[i] = False
                    else:
                        orders[i] = want_a
                        oriented[i] = True
                        copy[i] = not flex[i]
            else:
                forced = None
                swap, res = False, o1
        if forced is None and (target is None or res != target):
            # The larger transposed operand goes right (where it can be made in slabs),
            # unless only the other order lets the consumer read the result in place.
            big_x = copy[0] and not flex[0] and (not copy[1] or flex[1] or sizes[0] > sizes[1])
            pref = self._prefer_swap(res_id, o1, o2)
            if pref is None:
                pref = big_x
            swap = final is None and pref
            res = o2 if swap else o1
        for i, v in enumerate((x, y)):
            if copy[i] and v >= self.n:
                self.wanted[v] = orders[i]
        # Operands: pre-reduced (a compact new value in the wanted order), or read as is.
        srcs = []
        for i, v in enumerate((x, y)):
            if flex[i]:
                tmp = self.next_id
                self.next_id += 1
                self._reduce(v, orders[i], tmp, tmp)
                srcs.append(tmp)
                copy[i] = False
            else:
                srcs.append(v)
        left, right = (1, 0) if swap else (0, 1)
        m = self.size([ch for ch in orders[left] if ch in (fb if swap else fa)])
        n = self.size([ch for ch in orders[right] if ch in (fa if swap else fb)])
        k = self.size(c_ord)
        bt = self.size(b_ord)
        ops: list[Operand] = []
        logical: list[Labels] = []  # each operand's order as the product reads it
        slab_options: list[tuple[int, int, Labels, int]] = []  # (size, op, labels, start)
        for i, is_left in ((left, True), (right, False)):
            v = srcs[i]
            free_first = oriented[i]
            perm = None
            if copy[i]:
                # A transposed copy is laid out as BLAS reads it best, without a
                # transposed view: [M, K, B] on the left, [K, N, B] on the right.
                free_first = is_left
                nb = len(b_ord)
                free = orders[i][: len(orders[i]) - len(c_ord) - nb]
                want = free + c_ord + b_ord if is_left else c_ord + free + b_ord
                perm = tuple(self.order[v].index(ch) for ch in want)
                self.transposed += self.size(want)
                if bt >= _CHUNKS:
                    # Slabs over the batch fill contiguous ranges of the output and
                    # keep every batched product whole, on either side.
                    slab_options.append((self.size(want), len(ops), b_ord, len(want) - nb))
                elif not is_left:
                    # Slabs of the right operand's free indices fill contiguous row
                    # ranges of the output; a left operand's would be strided
                    # columns, which np.matmul writes at half speed.
                    slab_options.append((self.size(want), len(ops), free, len(c_ord)))
            free_n = m if is_left else n
            dims = (free_n, k, bt) if free_first else (k, free_n, bt)
            # The left operand is read as (bt, k, m), the right one as (bt, n, k).
            swap_axes = free_first != is_left
            direct = v >= self.n and perm is None
            logical.append(want if perm is not None else self.order[v])
            ops.append(Operand(perm, dims, swap_axes, self.src_shape(v), direct, None))
        if slab_options:
            # One slab loop a step, over its larger transposed operand.
            size, j, labels, start = max(slab_options)
            ops[j] = ops[j]._replace(slabs=self._chunking(labels, start, size, bt >= _CHUNKS))
        kernel = kernel_for(m, k, n, bt)
        if final is not None and res != final:
            lf = res[: len(res) - len(b_ord)]
            split = sum(1 for ch in lf if ch in (fb if swap else fa))
            groups = (lf[:split], lf[split:], b_ord)
            if self._final_slabs(final, res, groups, logical, ops, srcs, (left, right), kernel):
                return
        self.alloc(res_id, m * n * bt)
        permute = final is not None and res != final
        # With a final transposition, the product writes an intermediate first.
        out = res_id if permute else dst
        self.steps.append(
            Gemm(GEMM, srcs[left], srcs[right], ops[0], ops[1], kernel, (bt, n, m), out)
        )
        for v in srcs:
            self.free(v)
        self.order[res_id] = res
        if final is not None and permute:
            perm = tuple(res.index(ch) for ch in final)
            self.alloc(-1, self.size(final))
            self.steps.append(Permute(PERMUTE, res_id, self.src_shape(res_id), perm))
            self.transposed += self.size(final)
            self.free(res_id)

    def _tail(
        self,
        x: int,
        y: int,
        fa: frozenset[str],
        fb: frozenset[str],
        con: frozenset[str],
        fits: list[Any],
        dst: int,
        res_id: int,
    ) -> bool:
        """A product whose one operand does not group (its contracted indices sit
        between its free ones) but would without its slowest free indices (the
        "tail", e.g. ``a`` in ``s a c`` with ``c`` the tail) runs as a product
        batched over the tail, the other operand broadcast to every tail entry
        (np.matmul's batch broadcasting): no transposed copy of either operand.
        The result is ``[M, N, B, tail]``. Only when the other operand groups in
        place in the same contracted and batch orders, the product sums something
        and each tail entry's product is not tiny (`_TAIL_MIN` elements). Appends
        the GEMM step and returns True, or returns False (nothing changed)."""
        for i in (0, 1):
            j = 1 - i
            if fits[i] is not None or fits[j] is None:
                continue
            v, w = (x, y)[i], (x, y)[j]
            free_v, free_w = (fa, fb)[i], (fa, fb)[j]
            w_first, c_ord, b_ord = fits[j]
            order = self.order[v]
            for cut in range(len(order) - 1, 0, -1):
                tail = order[cut:]
                if tail[0] not in free_v:
                    break  # a tail holds free indices only
                rest = free_v - frozenset(tail)
                fv = _fit(order[:cut], rest, con, frozenset(b_ord))
                if fv is None or fv[1:] != (c_ord, b_ord):
                    continue
                n_tail = self.size(tail)
                k = self.size(c_ord)
                if k < 2 or n_tail == 0 or self.size(order) // n_tail < _TAIL_MIN:
                    return False
                free_rest = tuple(ch for ch in order[:cut] if ch in rest)
                free_other = tuple(ch for ch in self.order[w] if ch in free_w)
                o1 = free_rest + free_other + b_ord + tail  # v on the left
                o2 = free_other + free_rest + b_ord + tail
                v_left = not self._prefer_swap(res_id, o1, o2)
                size_v = self.size(free_rest)
                size_w = self.size(free_other)
                bt = self.size(b_ord)
                ops = []
                for u, first, free_n, is_left, extra in (
                    (v, fv[0], size_v, v_left, (n_tail,)),
                    (w, w_first, size_w, not v_left, ()),
                ):
                    dims = ((free_n, k, bt) if first else (k, free_n, bt)) + extra
                    ops.append(
                        Operand(None, dims, first != is_left, self.src_shape(u), u >= self.n, None)
                    )
                left, right = (0, 1) if v_left else (1, 0)
                m = size_v if v_left else size_w
                n = size_w if v_left else size_v
                self.alloc(res_id, m * n * bt * n_tail)
                ids = (v, w)
                kernel = kernel_for(m, k, n, bt)
                dims4 = (n_tail, bt, n, m)
                self.steps.append(
                    Gemm(GEMM, ids[left], ids[right], ops[left], ops[right], kernel, dims4, dst)
                )
                self.free(v)
                self.free(w)
                self.order[res_id] = o1 if v_left else o2
                return True
        return False

    def _split_k(
        self,
        x: int,
        y: int,
        fa: frozenset[str],
        fb: frozenset[str],
        con: frozenset[str],
        bat: frozenset[str],
        dst: int,
        res_id: int,
        final: Labels | None,
    ) -> bool:
        """A product whose operands both end in the same contracted indices (``ct``) and
        group without them, e.g. ``s b d`` and ``s m d`` summed over ``s`` and ``d``: one
        product per entry of ``ct`` (np.matmul over them as a batch) into scratch,
        then summed over ``ct``, instead of transposing an operand that does not
        group (``s b d`` has ``b`` between its summed indices). Taken when that
        scratch (``ct`` times the result) is smaller than the copy it saves.

        When only an intermediate stands in the way (its order does not end in
        ``ct``), asks for it in such an order (``wanted``, a hint for the next
        planning pass), as a transposition would. Appends the GEMM step (kernel
        `SPLIT_K`) and returns True, or returns False (nothing changed)."""
        for v, w in ((x, y), (y, x)):
            # The other operand's contracted tail decides; v follows it (or is asked to).
            ov, ow = self.order[v], self.order[w]
            free_v, free_w = (fa, fb) if v == x else (fb, fa)
            for cut in range(len(ow) - 1, 0, -1):
                ct = ow[cut:]
                if ct[0] not in con:
                    break
                rest = con - frozenset(ct)
                fw = _fit(ow[:cut], free_w, rest, bat)
                if fw is None:
                    continue
                _, c_ord, b_ord = fw
                head = len(ov) - len(ct)
                if ov[head:] != ct:
                    if v >= self.n:
                        free_ord = tuple(ch for ch in ov if ch in free_v)
                        self.wanted.setdefault(v, c_ord + free_ord + b_ord + ct)
                    break
                fv = _fit(ov[:head], free_v, rest, bat)
                if fv is None or fv[1:] != (c_ord, b_ord):
                    break
                n_ct = self.size(ct)
                size_v, size_w = self.size(tuple(free_v)), self.size(tuple(free_w))
                bt = self.size(b_ord)
                # The transposed copies this saves: of each operand that does not group.
                saved = 0
                for o, f in ((ov, free_v), (ow, free_w)):
                    if _fit(o, f, con, bat) is None:
                        saved += self.size(o)
                # A large copy would be made in slabs (`_chunking`): the scratch
                # this takes must be smaller than one of those.
                if saved >= 2 * _SLAB_MIN:
                    saved //= _CHUNKS
                if n_ct == 0 or n_ct * size_v * size_w * bt > saved:
                    return False
                o1 = tuple(ch for ch in ov if ch in free_v)
                o1 += tuple(ch for ch in ow if ch in free_w) + b_ord
                if final is not None and o1 != final:
                    return False
                k = self.size(c_ord)
                ops = []
                for u, first, free_n, is_left in (
                    (v, fv[0], size_v, True),
                    (w, fw[0], size_w, False),
                ):
                    dims = ((free_n, k, bt) if first else (k, free_n, bt)) + (n_ct,)
                    ops.append(
                        Operand(None, dims, first != is_left, self.src_shape(u), u >= self.n, None)
                    )
                self.alloc(res_id, size_v * size_w * bt)
                self.steps.append(
                    Gemm(GEMM, v, w, ops[0], ops[1], SPLIT_K, (n_ct, bt, size_w, size_v), dst)
                )
                self.free(v)
                self.free(w)
                self.order[res_id] = o1
                return True
        return False

    def _final_slabs(
        self,
        final: Labels,
        res: Labels,
        groups: tuple[Labels, Labels, Labels],
        logical: list[Labels],
        ops: list[Operand],
        srcs: list[int],
        sides: tuple[int, int],
        kernel: int,
    ) -> bool:
        """The last product, when its order ``res`` (``groups``: M, N, batch) is not the
        output's: written a slab at a time (a range of one index ``z``) into scratch
        and transposed from there into that range of the output, so the product's
        result never exists whole next to the output (as a product, then a
        `PERMUTE`, would have it). ``z`` is the slowest index of the batch, of N or
        of M (it slices both operands, the right one or the left one), whichever
        copies the fewest elements. Appends a FINAL step and returns True, or
        returns False when the output is too small for slabs."""
        out_size = self.size(final)
        ranges_max = min(_OUT_SLABS, out_size // _SLAB_MIN)
        if ranges_max < 2:
            return False
        m_ord, n_ord, b_ord = groups
        # (cost, group, z, ...): group 0 the batch (both operands), 1 N (right), 2 M (left).
        candidates = []
        for group, labels in ((0, b_ord), (1, n_ord), (2, m_ord)):
            if not labels:
                continue
            z = labels[-1]
            dz = self.sizes[z]
            ranges = min(dz, ranges_max)
            if ranges < 2:
                continue
            cost = out_size // ranges
            for j, op in enumerate(ops):
                if op.perm is not None:  # a transposed copy: of the slab, or whole
                    whole = self.size(logical[j])
                    cost += whole // ranges if z in logical[j] else whole
            candidates.append((cost, group, z, dz, ranges, self.size(labels)))
        if not candidates:
            return False
        cost, group, z, dz, ranges, group_size = min(candidates)
        # The alternative, the whole product then a PERMUTE, holds the result and the
        # operands' transposed copies (a slab of each, for those made in slabs).
        whole = out_size
        for j, op in enumerate(ops):
            if op.perm is not None:
                size = self.size(logical[j])
                whole += size // _CHUNKS if op.slabs is not None else size
        if cost >= whole:
            return False
        new_ops: list[FinalOperand] = []
        for j, op in enumerate(ops):
            zpos = logical[j].index(z) if z in logical[j] else -1
            if zpos < 0:
                zdim = -1
            elif group == 0:
                zdim = 2
            else:
                # Where the free group sits in (free, k, bt) or (k, free, bt): see the
                # operand loop of `_pair` (free_first = swap != is_left).
                free_first = op.swap != (j == 0)
                zdim = 0 if free_first else 1
            new_ops.append(FinalOperand(op.perm, op.dims, op.swap, op.shape, zpos, zdim))
        res_shape = tuple(self.sizes[ch] for ch in res)
        perm_out = tuple(res.index(ch) for ch in final)
        slabs = OutSlabs(group, res.index(z), final.index(z), dz, ranges, group_size // dz)
        bt, n, m = self.size(b_ord), self.size(n_ord), self.size(m_ord)
        self.alloc(-1, out_size)
        left, right = sides
        self.steps.append(
            Final(
                FINAL,
                srcs[left],
                srcs[right],
                new_ops[0],
                new_ops[1],
                kernel,
                (bt, n, m),
                res_shape,
                perm_out,
                slabs,
            )
        )
        for v in srcs:
            self.free(v)
        self.transposed += out_size
        return True

    def _chunking(self, free: Labels, start: int, size: int, batch: bool) -> Chunking | None:
        """Transpose a large operand a slab at a time, so its scratch copy is a fraction
        of it: a slab is a range of one free index with every later free index fixed,
        which is a contiguous range of the product's M (left operand) or N (right).

        With ``batch``, ``free`` are the batch indices instead, and a slab is a
        contiguous range of the batch (of both operands and the output).

        Returns a `Chunking` (axes in the copy's order, the later indices right
        after the range axis), or None when
        the copy is small enough to make at once."""
        target = min(_CHUNKS, size // _SLAB_MIN)
        if target < 2:
            return None
        later: list[int] = []
        for pos in range(len(free) - 1, -1, -1):
            d = self.sizes[free[pos]]
            if shape_size(later) * d >= target:
                ranges = -(-target // shape_size(later))
                return Chunking(start + pos, d, ranges, tuple(later), batch)
            later.insert(0, d)
        if shape_size(later) <= 1:
            return None  # no free index to split (M or N is 1)
        # Fewer free elements than slabs wanted: one slab per value of the free indices.
        return Chunking(start, later[0], later[0], tuple(later[1:]), batch)

    def _agree(
        self,
        x: int,
        y: int,
        fits: list[Any],
        flex: list[bool],
        sizes: list[int],
        con: frozenset[str],
        bat: frozenset[str],
    ) -> tuple[Labels, Labels, list[bool]]:
        """Contracted and batch orders both operands use, and which ones to transpose."""
        fx, fy = fits
        if fx is not None and fy is not None and fx[1:] == fy[1:]:
            return fx[1], fx[2], [False, False]
        options = []
        if fx is not None:
            options.append((0 if flex[1] else sizes[1], fx[1], fx[2], [False, True]))
        if fy is not None:
            options.append((0 if flex[0] else sizes[0], fy[1], fy[2], [True, False]))
        if options:
            _, c_ord, b_ord, copy = min(options, key=lambda o: o[0])
            return c_ord, b_ord, copy
        # Neither groups: follow the larger operand's order (its transposition is the
        # more sequential one), transpose both.
        base = self.order[x] if sizes[0] >= sizes[1] else self.order[y]
        c_ord = tuple(ch for ch in dict.fromkeys(base) if ch in con)
        b_ord = tuple(ch for ch in dict.fromkeys(base) if ch in bat)
        return c_ord, b_ord, [True, True]

    def _prefer_swap(self, res_id: int, o1: Labels, o2: Labels) -> bool | None:
        """Which order the consumer can read in place (True: ``o2``), None if both or
        neither (or it reduces the result first, so any order does)."""
        need = self.needs(res_id)
        if need is None or o1 == o2:
            return None
        own, free, con, bat = need
        if len(own) != len(o1):
            return None
        fit1 = _fit(o1, free, con, bat) is not None
        fit2 = _fit(o2, free, con, bat) is not None
        return None if fit1 == fit2 else fit2

    def _final_order(
        self,
        final: Labels,
        o1: Labels,
        o2: Labels,
        fa: frozenset[str],
        fb: frozenset[str],
        bat: frozenset[str],
    ) -> tuple[bool, Labels, Any]:
        """How the last step reaches the output order: as is, swapped, or (``forced``:
        the free and batch orders each operand must have) by choosing the operands'
        orders, which the caller weighs against a final transposition."""
        if final == o1:
            return False, o1, None
        if final == o2:
            return True, o2, None
        cut = len(final) - len(bat)
        if frozenset(final[cut:]) == bat:
            head = final[:cut]
            for swap, first in ((False, fa), (True, fb)):
                if frozenset(head[: len(first)]) == first:
                    lead, tail = head[: len(first)], head[len(first) :]
                    fx, fy = (tail, lead) if swap else (lead, tail)
                    return swap, final, (fx, fy, final[cut:])
        return False, o1, None


def compile_plan(spec: Spec, path: Sequence[tuple[int, ...]]) -> Plan:
    """Compile ``spec`` along ``path`` (pairwise SSA form) into a `Plan` (counted)."""
    global _built
    # Layouts propagate backwards over a few passes: a value some step had to
    # transpose is written in that order by its producer on the next pass, when
    # that is cheaper. The pass that transposes the fewest elements is kept.
    hints: dict[int, Labels] = {}
    best = None
    for _ in range(_PASSES):
        comp = _Compiler(spec, path, hints)
        steps, peak, transposed, n_values = comp.compile()
        if best is None or transposed < best[2]:
            best = (steps, peak, transposed, n_values)
        fresh = {v: o for v, o in comp.wanted.items() if hints.get(v) != o}
        if not fresh:
            break
        hints = {**hints, **fresh}
    assert best is not None
    steps, peak, transposed, n_values = best
    with _lock:
        _built += 1
    return Plan(
        n_inputs=len(spec.terms),
        in_shapes=spec.in_shapes,
        squeeze=spec.squeeze,
        out_shape=spec.out_shape,
        path=list(path),
        n_values=n_values,
        steps=steps,
        largest_live=peak,
        transposed_elements=transposed,
    )
