"""Where memory lives: memory kinds and placements."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .errors import ValidationError

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

    def __post_init__(self) -> None:
        if not isinstance(self.memory_kind, MemoryKind):
            raise ValidationError(
                "Placement",
                f"memory_kind must be a MemoryKind, got {self.memory_kind!r}",
                kind="INVALID_PLACEMENT",
                memory_kind=self.memory_kind,
            )
        for name in ("device", "cpu_affinity"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise ValidationError(
                    "Placement",
                    f"{name} must be None or an int >= 0, got {value!r}",
                    kind="INVALID_PLACEMENT",
                    **{name: value},
                )


#: The placement of every plain host tensor.
HOST_PLACEMENT = Placement(MemoryKind.UNPINNED_HOST, None, None)
