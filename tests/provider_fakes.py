"""A provider buffer over a numpy array, like upstream's fake test domain's buffer.

Shared by the root tests (tests/storage) and the domain-protocol tests
(tests/domains); importable because pytest puts ``tests`` on ``sys.path``
(``pythonpath`` in pyproject.toml).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tenferro as tfr
from tenferro.storage.root import BackendStorageBase

#: The placement every fake buffer reports: provider memory (not host memory).
MANAGED = tfr.Placement(tfr.MemoryKind.MANAGED)
#: The identity a fake buffer reports unless told otherwise.
FAKE_DOMAIN, FAKE_ID = tfr.AllocationDomainId(900), tfr.AllocationId(1)


class FakeBuffer(BackendStorageBase):
    """``data`` as a provider buffer of family ``fake``.

    ``domain_id`` and ``local`` are what it reports as its identity (None to test
    refusals); ``domain`` is the domain object that allocated it, if any (what
    ``Tensor.duplicate`` allocates the copy in). Its host mappings return
    ``mapped`` (``data`` by default), or are UNSUPPORTED when ``mappable`` is false.
    """

    def __init__(
        self,
        data: np.ndarray,
        domain_id: Any = FAKE_DOMAIN,
        local: Any = FAKE_ID,
        mapped: np.ndarray | None = None,
        mappable: bool = True,
        domain: Any = None,
    ) -> None:
        self.data = data
        self._domain_id = domain_id
        self._local = local
        self.mapped = data if mapped is None else mapped
        self.mappable = mappable
        self.domain = domain

    def allocation_domain(self) -> Any:
        return self._domain_id

    def allocation_id(self) -> Any:
        return self._local

    def backend_family(self) -> str:
        return "fake"

    def len(self) -> int:
        return int(self.data.shape[0])

    def placement(self) -> tfr.Placement:
        return MANAGED

    def map_read(self) -> np.ndarray:
        if not self.mappable:
            return super().map_read()
        view = self.mapped.view()
        view.flags.writeable = False
        return view

    def map_write(self) -> np.ndarray:
        if not self.mappable:
            return super().map_write()
        return self.mapped
