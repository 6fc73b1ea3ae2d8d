"""Demo section: allocation groups (seed chapter, "分配组": one owner, several descriptors)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..group import AllocationGroup, DescriptorSlot
from ..placement import HOST_PLACEMENT
from ..tensor import Tensor
from ._facts import Facts, refusal


def _addr(a: np.ndarray[Any, Any]) -> int:
    return int(a.ctypes.data)


def run(f: Facts) -> None:
    f.section("groups: two plain tensors into one group, and one taken out")
    first = np.array([1.0, 2.0, 3.0])
    address = _addr(first)
    a = Tensor.from_vec_col_major((3,), first)
    b = Tensor.from_vec_col_major((2,), np.array([4.0, 5.0]))
    group, slots = AllocationGroup.from_tensors([a, b])
    f.check("group", repr(group), "AllocationGroup(allocation_count=2, descriptor_count=2)")
    f.check("slots", slots, [DescriptorSlot(0), DescriptorSlot(1)])
    f.check("read_views shapes", [list(v.shape) for v in group.read_views()], [[3], [2]])
    f.check("from_tensors moved its inputs", (a.is_moved, b.is_moved), (True, True))
    taken = group.take_tensor(slots[0])
    f.check("take_tensor same buffer", _addr(taken.host_data()) == address)
    f.check(
        "taken tensor into_host -> Err",
        refusal(taken.into_host).split(";")[0],
        "Tensor.into_host: the tensor is group-backed rather than plain host storage",
    )
    f.check("taken tensor still usable", taken.host_data().tolist(), [1.0, 2.0, 3.0])
    f.check(
        "group after take", repr(group), "AllocationGroup(allocation_count=2, descriptor_count=2)"
    )
    f.check(
        "second take -> Err",
        refusal(lambda: group.take_tensor(slots[0])),
        "AllocationGroup.take_tensor: descriptor slot 0 is vacant",
    )
    f.check(
        "a new entry gets a new slot",
        group.append_tensor(Tensor.from_vec_col_major((1,), np.zeros(1))),
        DescriptorSlot(2),
    )

    f.section("groups: identities, promote, one owner with two descriptors")
    plain = Tensor.from_vec_col_major((1,), np.zeros(1))
    f.check(
        "plain tensor allocation_domain, allocation_id",
        (plain.allocation_domain, plain.allocation_id),
        (None, None),
    )
    f.check("taken tensor has an identity", taken.allocation_domain is not None)
    data = np.arange(6.0)
    address = _addr(data)
    p = Tensor.from_vec_col_major((6,), data).promote()
    f.check("promote keeps the buffer (no element copy)", _addr(p.host_data()) == address)
    f.check("promoted placement", p.placement, HOST_PLACEMENT)
    f.show("promoted identity", (p.allocation_domain, p.allocation_id))
    shared, (whole,) = AllocationGroup.from_tensors([p])
    tail = shared.add_descriptor(whole, "float64", (2,), byte_offset=32)
    f.check(
        "second descriptor on the same owner",
        shared.read_view(tail).to_numpy().tolist(),
        [4.0, 5.0],
    )
    f.check("owners, descriptors", (shared.allocation_count, shared.descriptor_count), (1, 2))
    f.check(
        "take of a shared owner -> Err",
        refusal(lambda: shared.take_tensor(whole)).split(";")[0],
        "AllocationGroup.take_tensor: descriptor slot 0 shares its owner with slot(s) (1,)",
    )
