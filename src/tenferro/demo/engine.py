"""Demo section: the middle of the main line (seed chapter, output buffers).

A 64x64 matmul whose output is dropped, the pool stats before and after, the
next matmul getting the same block, the control case, the other operation
families, an output outliving its engine, and the two puzzle answers
(``into_vec_col_major`` then drop; ``reclaim_buffer``).
"""

from __future__ import annotations

import numpy as np

from ..engine import BufferPoolStats, CpuEngine
from ..placement import HOST_PLACEMENT
from ..tensor import Tensor
from ._facts import Facts


def _addr(t: Tensor) -> int:
    # The borrowed array dies with this call, so it never counts as an alias.
    return int(t.with_host_read(lambda s: s.ctypes.data))


def _matrix(seed: int) -> Tensor:
    rng = np.random.default_rng(seed)
    return Tensor.from_vec_col_major((64, 64), rng.random(64 * 64))


def run(f: Facts) -> None:
    f.section("engine: the output buffer of a matmul and where it goes")
    # An explicit cap, so that TENFERRO_BUFFER_POOL_MAX_RETAINED_BYTES cannot change
    # the facts below.
    eng = CpuEngine(buffer_limit_bytes=100 * 2**20)
    a, b = _matrix(1), _matrix(2)
    f.check("pool before", eng.buffer_pool_stats(), BufferPoolStats(0, 0))
    first = eng.matmul(a, b)
    p1 = _addr(first)
    f.check("pool with first alive", eng.buffer_pool_stats(), BufferPoolStats(0, 0))
    del first
    f.check("pool after drop(first)", eng.buffer_pool_stats(), BufferPoolStats(1, 32768))
    second = eng.matmul(a, b)
    p2 = _addr(second)
    f.check("p2 == p1 (first dropped)", p2 == p1)
    f.check("pool with second alive", eng.buffer_pool_stats(), BufferPoolStats(0, 0))
    third = eng.matmul(a, b)
    f.check("p3 == p2 (second alive)", _addr(third) == p2, False)
    del second
    unrelated = np.empty(64 * 64)
    f.check("control: unrelated array got the freed block", unrelated.ctypes.data == p2, False)
    nxt = eng.matmul(a, b)
    f.check("control: next matmul got it", _addr(nxt) == p2)
    del third, nxt, unrelated

    f.section("engine: every operation family recycles its output")
    eng.reset_buffer_pool()
    s = eng.add(a, b)
    ps = _addr(s)
    del s
    f.check("after add output dropped", eng.buffer_pool_stats(), BufferPoolStats(1, 32768))
    e = eng.exp(a)
    f.check("exp output reuses add's block", _addr(e) == ps)
    del e
    eng.reset_buffer_pool()
    r = eng.reduce_sum(a, (0,))
    del r
    f.check(
        "empty pool, reduce_sum output dropped", eng.buffer_pool_stats(), BufferPoolStats(1, 512)
    )
    eng.reset_buffer_pool()
    t = eng.transpose(a, (1, 0))
    del t
    f.check(
        "empty pool, transpose output dropped",
        eng.buffer_pool_stats(),
        BufferPoolStats(1, 32768),
    )
    eng.reset_buffer_pool()
    kept_out = eng.matmul(a, b)
    kept = kept_out.host_data()
    values = kept.copy()
    del kept_out
    f.check("output dropped while host_data() is kept", eng.buffer_pool_stats(), (0, 0))
    f.check("refused because aliased", eng.buffer_pool_cache_stats().refused_aliased, 1)
    later = eng.mul(eng.matmul(a, b), 0.0)
    f.check("kept array keeps its values", bool(np.array_equal(kept, values)))
    del later, kept

    f.section("engine: an output outliving its engine")
    ones = Tensor.from_vec_col_major((512, 512), np.ones(512 * 512))
    old = CpuEngine()
    out = old.mul(ones, 1.0)
    q1 = _addr(out)
    del old
    f.check(
        "output survives its engine: sum", out.with_host_read(lambda x: float(x.sum())), 262144.0
    )
    new = CpuEngine()
    other = new.mul(ones, 1.0)
    f.check("new engine gets p1", _addr(other) == q1, False)
    f.check("output placement", out.placement, HOST_PLACEMENT)
    del other
    fresh = CpuEngine()
    del out
    f.check(
        "fresh pool after old engine's output dropped",
        fresh.buffer_pool_stats(),
        BufferPoolStats(0, 0),
    )

    f.section("engine: into_vec_col_major and reclaim_buffer")
    eng.reset_buffer_pool()
    product = eng.matmul(a, b)
    _, vec = product.into_vec_col_major()
    del vec
    f.check("after into_vec_col_major + drop(array)", eng.buffer_pool_stats(), (0, 0))
    product = eng.matmul(a, b)
    eng.reclaim_buffer(product)
    f.check("after reclaim_buffer", eng.buffer_pool_stats(), BufferPoolStats(1, 32768))
    f.show("cache stats", eng.buffer_pool_cache_stats())
