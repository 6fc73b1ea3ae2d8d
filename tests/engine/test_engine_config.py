"""CpuEngine configuration: threads, the per-thread default engine, limits, domains."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import numexpr
import numpy as np
import pytest

import tenferro as tfr
from tenferro.engine import cpu


@pytest.fixture
def restore_threads() -> Iterator[None]:
    """Put BLAS/numexpr thread counts back as they were after a test changes them."""
    from threadpoolctl import threadpool_info

    blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    ne = numexpr.get_num_threads()
    applied = cpu._applied
    yield
    if blas:
        cpu._apply_threads(blas[0])
    numexpr.set_num_threads(ne)
    cpu._applied = applied


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_threads_must_be_a_positive_int(bad: Any) -> None:
    with pytest.raises(tfr.ValidationError) as err:
        tfr.CpuEngine(threads=bad)
    assert err.value.kind == "INVALID_THREADS"


def test_threads_sets_blas_and_numexpr_threads(restore_threads: None) -> None:
    from threadpoolctl import threadpool_info

    eng = tfr.CpuEngine(threads=1)
    assert eng.threads == 1
    blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    assert blas and set(blas) == {1}
    assert numexpr.get_num_threads() == 1
    assert cpu.applied_threads() == 1


def test_threads_are_applied_only_when_the_count_differs(
    restore_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    tfr.CpuEngine(threads=1)
    calls: list[int] = []
    monkeypatch.setattr(numexpr, "set_num_threads", lambda n: calls.append(n))
    a = tfr.CpuEngine(threads=1)
    with a:
        x = tfr.from_numpy(np.ones(3))
        a.add(x, x)
        _ = x + x
    assert calls == []
    tfr.CpuEngine(threads=2)
    assert calls == [2]


def test_threads_none_leaves_the_libraries_alone(
    restore_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    monkeypatch.setattr(numexpr, "set_num_threads", lambda n: calls.append(n))
    eng = tfr.CpuEngine()
    with eng:
        pass
    assert eng.threads is None and calls == []


def test_entering_an_engine_applies_its_threads_and_leaving_restores_the_outer(
    restore_threads: None,
) -> None:
    outer = tfr.CpuEngine(threads=2)
    inner = tfr.CpuEngine(threads=1)
    with outer:
        with inner:
            assert cpu.applied_threads() == 1
        assert cpu.applied_threads() == 2


def test_leaving_an_engine_restores_the_count_applied_before_it(restore_threads: None) -> None:
    from threadpoolctl import threadpool_info

    e = tfr.CpuEngine(threads=1)
    tfr.CpuEngine(threads=2)  # created last: the libraries run 2 threads
    with e:
        assert cpu.applied_threads() == 1
    assert cpu.applied_threads() == 2
    assert numexpr.get_num_threads() == 2
    assert {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} == {2}


def test_nested_withs_restore_each_count_on_the_way_out(restore_threads: None) -> None:
    tfr.CpuEngine(threads=2)
    with tfr.CpuEngine(threads=1):
        with tfr.CpuEngine():  # threads=None changes nothing
            tfr.CpuEngine(threads=3)  # creating applies 3 inside the block
            assert cpu.applied_threads() == 3
        assert cpu.applied_threads() == 1
    assert cpu.applied_threads() == 2


def test_a_block_of_a_fresh_engine_gives_the_libraries_their_own_setting_back(
    restore_threads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from threadpoolctl import threadpool_info, threadpool_limits

    monkeypatch.setattr(cpu, "_applied", None)  # tenferro has set nothing yet
    threadpool_limits(2, user_api="blas")
    numexpr.set_num_threads(2)
    with tfr.CpuEngine(threads=1):  # created and entered: 1 for the block only
        assert numexpr.get_num_threads() == 1
    assert cpu.applied_threads() is None
    assert numexpr.get_num_threads() == 2
    assert {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"} == {2}


def test_default_engine_is_the_same_object_within_a_thread() -> None:
    assert tfr.default_engine() is tfr.default_engine()


def test_each_thread_gets_its_own_default_engine() -> None:
    found: list[tfr.CpuEngine] = []
    t = threading.Thread(target=lambda: found.append(tfr.default_engine()))
    t.start()
    t.join()
    assert found[0] is not tfr.default_engine()


def test_with_makes_an_engine_the_default_and_restores_on_exit() -> None:
    before = tfr.default_engine()
    eng = tfr.CpuEngine()
    with eng as entered:
        assert entered is eng and tfr.default_engine() is eng
    assert tfr.default_engine() is before


def test_with_blocks_nest() -> None:
    before = tfr.default_engine()
    a, b = tfr.CpuEngine(), tfr.CpuEngine()
    with a:
        with b:
            assert tfr.default_engine() is b
        assert tfr.default_engine() is a
    assert tfr.default_engine() is before


def test_with_restores_the_default_when_the_block_raises() -> None:
    before = tfr.default_engine()
    with pytest.raises(KeyError), tfr.CpuEngine():
        raise KeyError("x")
    assert tfr.default_engine() is before


def test_with_in_one_thread_does_not_change_another_threads_default() -> None:
    seen: list[tfr.CpuEngine] = []
    inside = threading.Event()
    done = threading.Event()
    eng = tfr.CpuEngine()

    def other() -> None:
        inside.wait()
        seen.append(tfr.default_engine())
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with eng:
        inside.set()
        done.wait()
    t.join()
    assert seen[0] is not eng


@pytest.mark.parametrize(
    ("expr", "method"),
    [
        (lambda a, b: a + b, "add"),
        (lambda a, b: a - b, "sub"),
        (lambda a, b: a * b, "mul"),
        (lambda a, b: a / b, "div"),
        (lambda a, b: a**b, "pow"),
        (lambda a, b: a @ b, "matmul"),
        (lambda a, b: -a, "neg"),
        (lambda a, b: abs(a), "abs"),
        (lambda a, b: 2.0 * a, "mul"),
        (lambda a, b: 1.0 - a, "sub"),
        (lambda a, b: 1.0 / a, "div"),
        (lambda a, b: a + 1.0, "add"),
    ],
)
def test_tensor_operators_run_on_the_current_default_engine(
    expr: Callable[..., tfr.Tensor], method: str, rand: Callable[..., tfr.Tensor]
) -> None:
    a, b = rand((3, 3), 1), rand((3, 3), 2)
    eng = tfr.CpuEngine()
    with eng:
        out = expr(a, b)
    del out
    assert eng.buffer_pool_stats().buffers == 1
    counts = eng.buffer_pool_cache_stats()
    assert (counts.misses, counts.recycled) == (1, 1), method


def test_buffer_limit_can_be_read_and_changed() -> None:
    eng = tfr.CpuEngine(buffer_limit_bytes=10_000)
    assert eng.buffer_pool_limit_bytes == 10_000
    eng.set_buffer_pool_limit_bytes(0)
    assert eng.buffer_pool_limit_bytes == 0


def test_reset_buffer_pool_drops_the_buffers_and_counts_a_clear(
    rand: Callable[..., tfr.Tensor],
) -> None:
    eng = tfr.CpuEngine()
    a = rand((8, 8))
    out = eng.add(a, a)
    del out
    eng.reset_buffer_pool()
    assert eng.buffer_pool_stats() == (0, 0)
    assert eng.buffer_pool_cache_stats().clears == 1


def test_an_object_without_id_and_allocate_is_not_a_domain() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        tfr.CpuEngine(allocation_domain=object())
    assert err.value.kind == "INVALID_DOMAIN"


def test_a_domain_engine_still_takes_outputs_of_host_inputs_from_its_pool(
    fake_domain: Any, rand: Callable[..., tfr.Tensor]
) -> None:
    eng = tfr.CpuEngine(allocation_domain=fake_domain)
    assert eng.allocation_domain is fake_domain
    a = rand((3, 4))
    out = eng.add(a, a)
    assert (out.allocation_domain, out.allocation_id) == (None, None)
    del out
    assert eng.buffer_pool_stats().buffers == 1
    assert fake_domain.allocations == 0


def test_engine_repr_shows_the_pool(rand: Callable[..., tfr.Tensor]) -> None:
    eng = tfr.CpuEngine(threads=None, buffer_limit_bytes=2048)
    assert "limit_bytes=2048" in repr(eng)
    assert "buffers=0" in repr(eng)
