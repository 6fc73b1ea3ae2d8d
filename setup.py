"""The compiled extensions (docs/internals.md, "The compiled core").

Everything else about the package is declared in pyproject.toml; this file exists
only because three extensions (engine/_core.pyx, storage/_fields.pyx, _roots.pyx)
compile against numpy's C API, whose header directory is known only at build time
(``numpy.get_include()``), which pyproject.toml's static ``ext-modules`` table
cannot express.
"""

import numpy
from setuptools import Extension, setup


def against_numpy(name: str, source: str) -> Extension:
    """An extension that uses numpy's C API (its headers, its current API generation)."""
    return Extension(
        name,
        [source],
        include_dirs=[numpy.get_include()],
        # numpy's headers warn unless told which C API generation the code uses.
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


setup(
    ext_modules=[
        # The core builds its internal arrays (operands read on a buffer's memory, the
        # output's shaped array) with numpy's C API: a third of a reshape's cost.
        against_numpy("tenferro.engine._core", "src/tenferro/engine/_core.pyx"),
        # The pool's hot steps read an array's size and dtype with numpy's C API.
        against_numpy("tenferro.storage._fields", "src/tenferro/storage/_fields.pyx"),
        # The alias roots, built over a buffer's data pointer (tenferro.borrow).
        against_numpy("tenferro._roots", "src/tenferro/_roots.pyx"),
        # The SVD's LAPACK call, the lean QR and the finiteness check before every
        # iterative LAPACK call (docs/linalg.md, "Memory: what is pooled and what is not").
        Extension("tenferro.engine.linalg._calls", ["src/tenferro/engine/linalg/_calls.pyx"]),
    ]
)
