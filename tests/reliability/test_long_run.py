"""A long run of pooled operations keeps memory flat."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np

import tenferro as tfr

OPERATIONS = 100_000
#: Growth allowed between the warm-up snapshot and the end: small, and independent of
#: the number of operations (a leak of one 64-byte buffer per operation would be 6 MB).
BOUND_BYTES = 256 * 1024


def test_hundred_thousand_pooled_operations_keep_memory_flat() -> None:
    eng = tfr.CpuEngine()
    a = tfr.Tensor.from_vec_col_major((8,), np.arange(8.0))
    b = tfr.Tensor.from_vec_col_major((8,), np.ones(8))
    ops = (eng.add, eng.mul, eng.sub, eng.maximum)
    for op in ops:  # warm the pool and every code path
        op(a, b)
    gc.collect()
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        for i in range(OPERATIONS):
            ops[i & 3](a, b)
        gc.collect()
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    cache = eng.buffer_pool_cache_stats()
    assert end - start < BOUND_BYTES, f"memory grew by {end - start} bytes"
    assert cache.misses <= len(ops)  # every output after the warm-up was a pool hit
    assert eng.buffer_pool_stats().buffers >= 1
