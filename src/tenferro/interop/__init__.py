"""Interop with other array libraries: DLPack (numpy, PyTorch, anything with the protocol)."""

from .dlpack import from_dlpack

__all__ = ["from_dlpack"]
