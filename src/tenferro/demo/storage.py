"""Demo section: the host branch of the storage model (seed chapter, first half)."""

from __future__ import annotations

import numpy as np

from ..copies import copy_stats
from ..placement import HOST_PLACEMENT
from ..tensor import Tensor
from ._facts import Facts


def run(f: Facts) -> None:
    f.section("storage: plain host tensors")
    data = np.array([1.0, 2.0, 3.0, 4.0])
    addr = data.ctypes.data
    t = Tensor.from_vec_col_major((2, 2), data)
    f.check("from_vec_col_major keeps the buffer", t.host_data().ctypes.data == addr)
    f.check("caller handle frozen (writeable)", data.flags.writeable, False)
    f.check(
        "host tensor allocation_domain, allocation_id",
        (t.allocation_domain, t.allocation_id),
        (None, None),
    )
    f.check("placement", t.placement, HOST_PLACEMENT)
    view = t.as_view()
    f.check("as_view shares buffer", view.to_numpy().ctypes.data == addr)
    del view
    before = copy_stats().copies
    dup = t.duplicate()
    f.check("duplicate new buffer", dup.host_data().ctypes.data != addr)
    f.check("duplicate counted as one named copy", copy_stats().copies - before, 1)
    del dup
    with t.map_read() as guard:
        f.check("map_read on a host tensor", guard.tolist(), [[1.0, 3.0], [2.0, 4.0]])
    f.check("with_host_read sum", t.with_host_read(lambda s: float(s.sum())), 10.0)
    shape, vec = t.into_vec_col_major()
    f.check("into_vec_col_major shape", list(shape), [2, 2])
    f.check("same Vec buffer", vec.ctypes.data == addr and vec is data)
    f.check("returned array writable again", vec.flags.writeable)

    f.section("storage: exclusive borrows and multi-slice")
    m = Tensor.from_vec_col_major((2, 2), np.zeros(4))
    with m.as_view_mut() as mv:
        cols = mv.try_multi_slice_mut((slice(None), 0), (slice(None), 1))
        f.check("columns 0 | 1 split ok", cols is not None)
        rows = mv.try_multi_slice_mut((0, slice(None)), (1, slice(None)))
        f.check("rows 0 | 1", rows, None)
        assert cols is not None
        left, right = cols
        left.set((1,), 1.0)
        right.set((0,), 2.0)
        del cols, left, right
    f.check("after column writes", m.host_data().tolist(), [0.0, 1.0, 2.0, 0.0])
    alias = m.host_data()
    try:
        with m.map_write():
            pass
        refused = "no"
    except Exception as exc:  # the demo prints whatever was raised
        refused = type(exc).__name__
    f.check("map_write while a host_data alias lives", refused, "BorrowError")
    del alias
