"""Where memory lives: memory kinds and placements."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["HOST_PLACEMENT", "MemoryKind", "Placement"]


class MemoryKind(enum.Enum):
    """The kind of memory a tensor's bytes live in."""

    DEVICE = "device"
    PINNED_HOST = "pinned_host"
    UNPINNED_HOST = "unpinned_host"
    MANAGED = "managed"
    SHARED_HOST = "shared_host"

    def __repr__(self) -> str:
        return f"MemoryKind.{self.name}"


@dataclass(frozen=True, slots=True)
class Placement:
    """A tensor's placement: memory kind, device ordinal and CPU affinity (all immutable)."""

    memory_kind: MemoryKind = MemoryKind.UNPINNED_HOST
    device: int | None = None
    cpu_affinity: int | None = None


#: The placement of every plain host tensor.
HOST_PLACEMENT = Placement(MemoryKind.UNPINNED_HOST, None, None)
