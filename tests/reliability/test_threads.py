"""Several threads sharing one engine: results correct, stats consistent, no deadlock."""

from __future__ import annotations

import threading

import numpy as np

import tenferro as tfr

THREADS = 4
ROUNDS = 600  # per thread: thousands of operations in all
JOIN_TIMEOUT_S = 240.0  # a deadlock fails the test instead of hanging the run


def _worker(eng: tfr.CpuEngine, seed: int, errors: list[BaseException]) -> None:
    rng = np.random.default_rng(seed)
    try:
        for i in range(ROUNDS):
            n = int(rng.integers(1, 64))
            x = rng.standard_normal(n)
            y = rng.standard_normal(n)
            a = tfr.Tensor.from_vec_col_major((n,), x.copy())
            b = tfr.Tensor.from_vec_col_major((n,), y.copy())
            kind = i % 5
            if kind == 0:
                out = eng.add(a, b)
                np.testing.assert_allclose(out.host_data(), x + y)
            elif kind == 1:
                out = eng.mul(a, 2.0)
                np.testing.assert_allclose(out.host_data(), x * 2.0)
            elif kind == 2:
                m = tfr.Tensor.from_vec_col_major((n, 1), x.copy())
                k = tfr.Tensor.from_vec_col_major((1, n), y.copy())
                out = eng.matmul(m, k)
                np.testing.assert_allclose(out.to_numpy(), np.outer(x, y))
            elif kind == 3:
                out = eng.reduce_sum(a, None)
                np.testing.assert_allclose(out.host_data()[0], x.sum())
            else:
                kept = eng.exp(a)
                alias = kept.host_data()
                del kept  # aliased: must not be recycled
                other = eng.exp(b)
                np.testing.assert_allclose(alias, np.exp(x))
                np.testing.assert_allclose(other.host_data(), np.exp(y))
    except BaseException as exc:  # reported to the main thread
        errors.append(exc)


def test_threads_sharing_one_engine_get_correct_results_and_consistent_stats() -> None:
    eng = tfr.CpuEngine(buffer_limit_bytes=64 * 1024)
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=_worker, args=(eng, seed, errors), daemon=True)
        for seed in range(THREADS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT_S)
    assert not any(t.is_alive() for t in threads), "a worker is stuck (deadlock?)"
    assert not errors, errors[0]
    stats = eng.buffer_pool_stats()
    cache = eng.buffer_pool_cache_stats()
    assert stats.buffers == len(eng._pool.retained_addresses())
    assert stats.capacity_bytes <= eng.buffer_pool_limit_bytes
    assert cache.hits >= 0 and cache.misses > 0
    assert cache.refused_aliased >= ROUNDS * THREADS // 5
    # Every retained buffer came back through a recycle and is not handed out twice.
    assert len(set(eng._pool.retained_addresses())) == stats.buffers
