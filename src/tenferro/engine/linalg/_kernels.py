"""The linear-algebra kernels: LAPACK on pooled, column-major buffers.

Each kernel is ``kernel(call, operands..., options...)`` (see `_adapter.run_call`):
it reads its operands, takes its pooled outputs in the order the operation
returns them, and fills them matrix by matrix over the trailing batch
dimensions (``[M, N, B...]``: each matrix is contiguous column-major memory,
exactly what LAPACK takes, so no transposition is ever needed).

LAPACK overwrites its input, so the input matrix is first written into a
pooled buffer (the result's own buffer where the routine returns the result in
place: ``potrf``, ``getrf``/``getri``, ``syevd``, ``orgqr``; a pooled scratch
buffer otherwise). That write is part of the computation, not a named copy: the
caller's tensor is only read.

The kernels are grouped by factorisation, one module each: `_svd`, `_qr`, `_eig`,
`_lu` (Cholesky, solve, inv, det, slogdet), `_lstsq` (lstsq, pinv), `_norms`
(norms, expm), over `_common` (checks, batch iteration, LAPACK queries). This
module is the one the operations (`__init__`) and the lean paths (`_lean`) call
through, as ``K.<kernel>``: it re-exports each kernel and helper they use.
"""

from __future__ import annotations

from ._calls import (
    gesdd_run as gesdd_run,
)
from ._calls import (
    qr_run as qr_run,
)
from ._common import (
    _copy_triangle as _copy_triangle,
)
from ._common import (
    _eps as _eps,
)
from ._common import (
    _lwork as _lwork,
)
from ._common import (
    _orgqr_lwork as _orgqr_lwork,
)
from ._common import (
    finite as finite,
)
from ._common import (
    finite_triangle as finite_triangle,
)
from ._common import (
    not_finite as not_finite,
)
from ._eig import (
    _syevd_sizes as _syevd_sizes,
)
from ._eig import (
    eig as eig,
)
from ._eig import (
    eigh as eigh,
)
from ._eig import (
    real_geev_to_complex as real_geev_to_complex,
)
from ._lstsq import (
    gelsd_sizes as gelsd_sizes,
)
from ._lstsq import (
    lstsq as lstsq,
)
from ._lstsq import (
    pinv as pinv,
)
from ._lstsq import (
    pinv_from_svd as pinv_from_svd,
)
from ._lstsq import (
    residual_sums as residual_sums,
)
from ._lu import (
    cholesky as cholesky,
)
from ._lu import (
    det as det,
)
from ._lu import (
    det_from_lu as det_from_lu,
)
from ._lu import (
    inv as inv,
)
from ._lu import (
    lu_parity as lu_parity,
)
from ._lu import (
    slogdet as slogdet,
)
from ._lu import (
    slogdet_from_lu as slogdet_from_lu,
)
from ._lu import (
    solve as solve,
)
from ._norms import (
    DotParts as DotParts,
)
from ._norms import (
    _dot_parts as _dot_parts,
)
from ._norms import (
    dot_parts as dot_parts,
)
from ._norms import (
    expm as expm,
)
from ._norms import (
    expm_into as expm_into,
)
from ._norms import (
    matrix_norm as matrix_norm,
)
from ._norms import (
    norm_from_singular_values as norm_from_singular_values,
)
from ._norms import (
    two_norm as two_norm,
)
from ._norms import (
    vector_norm as vector_norm,
)
from ._qr import (
    lq as lq,
)
from ._qr import (
    qr as qr,
)
from ._qr import (
    qr_plan as qr_plan,
)
from ._svd import (
    GesddPlan as GesddPlan,
)
from ._svd import (
    gesdd_error as gesdd_error,
)
from ._svd import (
    gesdd_plan as gesdd_plan,
)
from ._svd import (
    svd as svd,
)
from ._svd import (
    svd_truncated as svd_truncated,
)

__all__ = [
    "DotParts",
    "GesddPlan",
    "cholesky",
    "det",
    "det_from_lu",
    "dot_parts",
    "eig",
    "eigh",
    "expm",
    "expm_into",
    "finite",
    "finite_triangle",
    "gelsd_sizes",
    "gesdd_error",
    "gesdd_plan",
    "gesdd_run",
    "inv",
    "lq",
    "lstsq",
    "lu_parity",
    "matrix_norm",
    "norm_from_singular_values",
    "not_finite",
    "pinv",
    "pinv_from_svd",
    "qr",
    "qr_plan",
    "qr_run",
    "real_geev_to_complex",
    "residual_sums",
    "slogdet",
    "slogdet_from_lu",
    "solve",
    "svd",
    "svd_truncated",
    "two_norm",
    "vector_norm",
]
