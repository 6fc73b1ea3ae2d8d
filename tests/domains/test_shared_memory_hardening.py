"""SharedMemoryDomain against a hostile or cramped host: no SIGBUS, no hang, typed refusals.

* allocations reserve their space, so a small /dev/shm gives `OutOfMemoryError` at
  allocation, never SIGBUS at the first write (also through copy_from and a domain
  engine's outputs);
* ``attach`` opens what a handle names without blocking or following links, and only
  maps a regular 0600 file of this user with the handle's exact size;
* a segment shrunk under its mappings is refused at the next mapped access.

Anything that would kill the process on the code before these fixes (SIGBUS) or hang it
(a FIFO) runs in a child Python with a timeout, so a regression fails the test instead
of the run. The small /dev/shm is a private 1 MiB tmpfs in a new mount namespace
(``unshare``); where that is not allowed those tests skip.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tenferro as tfr
from tenferro.domains import _children

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /dev/shm")

SHM_DIR = "/dev/shm"
TIMEOUT = 60.0
#: Prefix of the files these tests plant in /dev/shm (a pid keeps parallel runs apart).
PLANTED = f"psm_tfrtest_{os.getpid()}_"


def run_python(
    code: str, *args: str, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh Python (optionally under ``prefix``, e.g. unshare)."""
    return subprocess.run(
        [*prefix, sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def outcome(done: subprocess.CompletedProcess[str]) -> str:
    """The child's last stdout line, or how it died (e.g. ``signal 7`` for SIGBUS)."""
    if done.returncode < 0:
        return f"signal {-done.returncode}"
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


# -- a private, small /dev/shm ------------------------------------------------------------------
#: A new mount namespace (private propagation, unshare's default) with a 1 MiB tmpfs on
#: /dev/shm: nothing outside sees it, and it goes with the child.
_MOUNT = 'mount -t tmpfs -o size=1m tmpfs /dev/shm && exec "$0" "$@"'


@pytest.fixture(scope="module")
def small_shm() -> tuple[str, ...]:
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("no unshare(1) to make a private small /dev/shm")
    for flags in ("-m", "-Urm"):  # as root; else an unprivileged user namespace
        prefix = (unshare, flags, "sh", "-c", _MOUNT)
        try:
            probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=TIMEOUT)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return prefix
    pytest.skip("cannot mount a private tmpfs on /dev/shm here (no mount namespace)")


def in_small_shm(prefix: tuple[str, ...], body: str, then: str = "") -> str:
    """Run ``body``, then ``then``, with a 1 MiB /dev/shm; report the last line and /dev/shm."""
    code = "import numpy as np\nimport tenferro as tfr\n" + textwrap.dedent(body) + then
    code += "\nimport gc, os\ngc.collect()\nprint(sorted(os.listdir('/dev/shm')))\n"
    done = run_python(code, prefix=prefix)
    if done.returncode < 0:
        return f"signal {-done.returncode}"
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.strip().splitlines()[-2:])


#: The end of each body below (same indentation, so that one dedent fits both).
OOM_REPORT = """
    except tfr.OutOfMemoryError as e:
        print("OOM", e.op, isinstance(e, MemoryError), isinstance(e, tfr.TenferroError))
"""


def test_allocating_more_than_a_small_dev_shm_is_out_of_memory_not_sigbus(
    small_shm: tuple[str, ...],
) -> None:
    body = """
    try:
        t = tfr.SharedMemoryDomain().allocate("float64", (1 << 20,))  # 8 MiB
        with t.map_write() as w:
            w.array[:] = 1.0
        print("WROTE")
    """
    assert in_small_shm(small_shm, body + OOM_REPORT) == (
        "OOM SharedMemoryDomain.allocate True True []"
    )


def test_copy_from_into_a_small_dev_shm_is_out_of_memory_not_sigbus(
    small_shm: tuple[str, ...],
) -> None:
    body = """
    try:
        tfr.SharedMemoryDomain().copy_from(np.ones(1 << 20))
        print("COPIED")
    """
    assert in_small_shm(small_shm, body + OOM_REPORT) == (
        "OOM SharedMemoryDomain.allocate True True []"
    )


def test_a_domain_engine_output_beyond_a_small_dev_shm_is_out_of_memory_not_sigbus(
    small_shm: tuple[str, ...],
) -> None:
    body = """
    d = tfr.SharedMemoryDomain()
    s = d.copy_from(np.ones(80_000))  # 640 KB of the 1 MiB: the copy cannot fit too
    try:
        tfr.CpuEngine(allocation_domain=d).to_contiguous(s)
        print("COPIED")
    """
    assert in_small_shm(small_shm, body + OOM_REPORT, then="del s\n") == (
        "OOM SharedMemoryDomain.allocate True True []"
    )


def test_what_fits_in_a_small_dev_shm_is_allocated_and_written(
    small_shm: tuple[str, ...],
) -> None:
    body = """
    t = tfr.SharedMemoryDomain().allocate("float64", (1 << 16,))  # 512 KiB
    with t.map_write() as w:
        w.array[:] = 1.0
    print(t.with_host_read(lambda a: float(a.sum())))
    del t
    """
    assert in_small_shm(small_shm, body) == "65536.0 []"


# -- reservation in this process ------------------------------------------------------------------
def test_an_allocation_larger_than_the_shared_memory_file_system_is_out_of_memory() -> None:
    fs = os.statvfs(SHM_DIR)
    total = fs.f_blocks * fs.f_frsize
    if total == 0:
        pytest.skip("/dev/shm has no size limit to exceed")
    with pytest.raises(tfr.OutOfMemoryError) as err:
        # tmpfs refuses a reservation beyond its size before touching any memory.
        tfr.SharedMemoryDomain().allocate("bool", (2 * total,))
    assert (err.value.op, err.value.kind) == ("SharedMemoryDomain.allocate", "OUT_OF_MEMORY")


def test_a_failed_reservation_removes_the_new_segment(monkeypatch: pytest.MonkeyPatch) -> None:
    # The segment's own path, read from its descriptor while the reservation runs:
    # other processes on the machine may make and remove segments meanwhile, so a
    # before/after listing of /dev/shm could blame them.
    made: list[str] = []

    def no_space(fd: int, offset: int, length: int) -> None:
        made.append(os.readlink(f"/proc/self/fd/{fd}"))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", no_space)
    with pytest.raises(tfr.OutOfMemoryError):
        tfr.SharedMemoryDomain().allocate("float64", (16,))
    monkeypatch.undo()
    gc.collect()
    assert len(made) == 1 and os.path.basename(made[0]).startswith("psm_")
    assert not os.path.exists(made[0])


def test_a_copy_from_refused_for_lack_of_space_counts_no_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_space(fd: int, offset: int, length: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", no_space)
    before = tfr.copy_stats()
    with pytest.raises(tfr.OutOfMemoryError):
        tfr.SharedMemoryDomain().copy_from(np.ones(16))
    assert tfr.copy_stats() == before


def test_out_of_memory_error_is_a_memory_error_and_a_tenferro_error() -> None:
    assert issubclass(tfr.OutOfMemoryError, MemoryError) and issubclass(
        tfr.OutOfMemoryError, tfr.TenferroError
    )


# -- attach: only a segment a domain made --------------------------------------------------------
@pytest.fixture
def planted() -> Iterator[str]:
    """A name in /dev/shm for the test to plant something under; removed afterwards."""
    name = PLANTED + os.urandom(4).hex()
    path = os.path.join(SHM_DIR, name)
    yield name
    if os.path.isdir(path) and not os.path.islink(path):
        os.rmdir(path)
    elif os.path.lexists(path):
        os.unlink(path)


def handle_for(name: str, segment_bytes: int = 16) -> tfr.ShareHandle:
    return tfr.ShareHandle(name, segment_bytes, tfr.DType.F64, (2,), 1, 1, os.getpid())


def plant_file(name: str, mode: int, size: int = 16) -> str:
    path = os.path.join(SHM_DIR, name)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        os.ftruncate(fd, size)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    return path


def refusal(handle: tfr.ShareHandle) -> tuple[str, str, str]:
    with pytest.raises(tfr.TenferroError) as err:
        tfr.SharedMemoryDomain.attach(handle)
    return type(err.value).__name__, err.value.op, err.value.kind


UNTRUSTED = ("HostAccessError", "SharedMemoryDomain.attach", "UNTRUSTED_SEGMENT")


def test_attach_of_a_fifo_is_refused_at_once_instead_of_blocking(planted: str) -> None:
    os.mkfifo(os.path.join(SHM_DIR, planted), 0o600)
    code = """
    import sys
    import tenferro as tfr
    h = tfr.ShareHandle(sys.argv[1], 16, tfr.DType.F64, (2,), 1, 1, 1)
    try:
        tfr.SharedMemoryDomain.attach(h)
        print("ATTACHED")
    except tfr.TenferroError as e:
        print(type(e).__name__, e.kind)
    """
    try:
        result = outcome(run_python(code, planted))
    except subprocess.TimeoutExpired:
        result = "blocked"
    assert result == "HostAccessError UNTRUSTED_SEGMENT"


def test_attach_of_a_file_open_to_other_users_is_refused(planted: str) -> None:
    plant_file(planted, 0o644)
    assert refusal(handle_for(planted)) == UNTRUSTED


def test_attach_of_another_users_file_is_refused(planted: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(plant_file(planted, 0o600), os.geteuid() + 4242, -1)
    assert refusal(handle_for(planted)) == UNTRUSTED


def test_attach_of_a_directory_is_refused(planted: str) -> None:
    os.mkdir(os.path.join(SHM_DIR, planted), 0o700)
    assert refusal(handle_for(planted)) == UNTRUSTED


def test_attach_of_a_socket_is_refused(planted: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(os.path.join(SHM_DIR, planted))
        assert refusal(handle_for(planted)) == UNTRUSTED


def test_attach_through_a_symlink_to_a_real_segment_is_refused(planted: str) -> None:
    t = tfr.SharedMemoryDomain().allocate(tfr.DType.F64, (2,))
    h = t.share_handle()
    os.symlink(os.path.join(SHM_DIR, h.name), os.path.join(SHM_DIR, planted))
    assert refusal(dataclasses.replace(h, name=planted)) == UNTRUSTED


def test_attach_of_a_segment_longer_than_the_handle_says_is_refused() -> None:
    t = tfr.SharedMemoryDomain().allocate(tfr.DType.F64, (4,))
    h = dataclasses.replace(t.share_handle(), segment_bytes=16, shape=(2,))
    assert refusal(h) == ("AccessError", "SharedMemoryDomain.attach", "LENGTH_MISMATCH")


def test_attach_with_a_huge_segment_size_is_refused() -> None:
    t = tfr.SharedMemoryDomain().allocate(tfr.DType.F64, (2,))
    h = dataclasses.replace(t.share_handle(), segment_bytes=1 << 64)
    assert refusal(h) == ("AccessError", "SharedMemoryDomain.attach", "LENGTH_MISMATCH")


@pytest.mark.parametrize(
    "name",
    [".", "..", "../etc/passwd", "a/b", "/psm_x", ".hidden", "psm\x00x", "psm x", "p" * 300],
)
def test_attach_of_a_name_that_is_not_one_segment_file_is_invalid(name: str) -> None:
    assert refusal(handle_for(name)) == (
        "ValidationError",
        "SharedMemoryDomain.attach",
        "INVALID_HANDLE",
    )


def test_attach_of_a_name_of_a_str_subclass_is_invalid() -> None:
    class Sneaky(str):
        pass

    t = tfr.SharedMemoryDomain().allocate(tfr.DType.F64, (2,))
    h = t.share_handle()
    assert refusal(dataclasses.replace(h, name=Sneaky(h.name)))[2] == "INVALID_HANDLE"


@given(
    name=st.text(min_size=0, max_size=40),
    segment_bytes=st.integers(min_value=-(2**70), max_value=2**70),
    shape=st.lists(st.integers(min_value=-(2**66), max_value=2**66), max_size=3),
    domain=st.integers(min_value=-(2**70), max_value=2**70),
)
def test_attach_of_any_forged_handle_raises_only_tenferro_errors(
    name: str, segment_bytes: int, shape: list[int], domain: int
) -> None:
    h = tfr.ShareHandle(
        PLANTED + name, segment_bytes, tfr.DType.F64, tuple(shape), domain, 1, os.getpid()
    )
    with pytest.raises(tfr.TenferroError):
        tfr.SharedMemoryDomain.attach(h)


def test_a_refused_attach_leaves_no_descriptor_open(planted: str) -> None:
    plant_file(planted, 0o644)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(tfr.HostAccessError):
            tfr.SharedMemoryDomain.attach(handle_for(planted))
    assert len(os.listdir("/proc/self/fd")) == before


def test_two_attaches_of_one_handle_are_independent_readers() -> None:
    t = tfr.SharedMemoryDomain().copy_from(np.array([1.0, 2.0]))
    h = t.share_handle()
    a, b = tfr.SharedMemoryDomain.attach(h), tfr.SharedMemoryDomain.attach(h)
    del a, t
    gc.collect()
    assert b.with_host_read(list) == [1.0, 2.0]


def test_attach_after_the_owner_process_exited_is_segment_gone() -> None:
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    owner = ctx.Process(target=_children.own_and_share, args=(child, TIMEOUT))
    owner.start()
    child.close()
    assert parent.poll(TIMEOUT), "the owner did not share in time"
    h = parent.recv()
    parent.send("exit")
    owner.join(TIMEOUT)
    assert owner.exitcode == 0
    assert refusal(h) == ("HostAccessError", "SharedMemoryDomain.attach", "SEGMENT_GONE")


# -- a segment shrunk under its mappings --------------------------------------------------------
#: The owner fills a 32 KiB segment, attaches it too, reads both (so the mappings are
#: made and cached), then truncates the file as another process of the user could.
SHRINK = """
import gc, os, sys
import numpy as np
import tenferro as tfr
d = tfr.SharedMemoryDomain()
t = d.allocate("float64", (4096,))
with t.map_write() as w:
    w.array[:] = 1.0
r = tfr.SharedMemoryDomain.attach(t.share_handle())
t.with_host_read(lambda a: a.sum()), r.with_host_read(lambda a: a.sum())
name = t.share_handle().name
os.truncate("/dev/shm/" + name, 0)
try:
    ACCESS
    print("READ")
except tfr.HostAccessError as e:
    print(e.kind)
del t, r
gc.collect()
print(os.path.exists("/dev/shm/" + name))
"""

ACCESSES = {
    "owner with_host_read": "t.with_host_read(lambda a: float(a.sum()))",
    "owner map_read": "float(t.map_read().array.sum())",
    "owner map_write": "t.map_write().array.fill(2.0)",
    "owner download": "t.download()",
    "owner duplicate": "t.duplicate()",
    "copy_from": "d.copy_from(t)",
    "domain engine": "tfr.CpuEngine(allocation_domain=d).to_contiguous(t)",
    "reader with_host_read": "r.with_host_read(lambda a: float(a.sum()))",
    "reader map_read": "float(r.map_read().array.sum())",
    "reader download": "r.download()",
}


@pytest.mark.parametrize("access", ACCESSES)
def test_a_mapped_access_after_the_segment_shrank_is_refused_not_sigbus(access: str) -> None:
    done = run_python(SHRINK.replace("ACCESS", ACCESSES[access]))
    assert done.returncode == 0, f"died: {done.returncode} {done.stderr[-2000:]}"
    assert done.stdout.split() == ["SEGMENT_SHRUNK", "False"]


READER = """
import json, sys
import tenferro as tfr
f = json.loads(sys.argv[1])
h = tfr.ShareHandle(f["name"], f["segment_bytes"], tfr.DType.F64, tuple(f["shape"]),
                    f["domain"], f["allocation"], f["owner_pid"])
r = tfr.SharedMemoryDomain.attach(h)
print(r.with_host_read(lambda a: float(a.sum())))
import os
os.truncate("/dev/shm/" + h.name, 0)
try:
    r.with_host_read(lambda a: float(a.sum()))
    print("READ")
except tfr.HostAccessError as e:
    print(e.kind)
"""


def test_a_reader_in_another_process_refuses_a_segment_shrunk_after_attach() -> None:
    t = tfr.SharedMemoryDomain().copy_from(np.ones(4096))
    h = t.share_handle()
    fields = dataclasses.asdict(h) | {"dtype": None}
    done = run_python(READER, json.dumps(fields))
    del t  # not read again here: its segment is truncated
    gc.collect()
    assert (done.returncode, done.stdout.split(), os.path.exists(f"{SHM_DIR}/{h.name}")) == (
        0,
        ["4096.0", "SEGMENT_SHRUNK"],
        False,
    )
