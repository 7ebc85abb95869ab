"""Backend "cuda" of the kernels family: the reference's array code on CuPy arrays.

The same class as the reference (``_reference.ArrayKernels``) bound to CuPy,
so every kernel formula runs as the reference's code; only three array-module
differences are its own: the Cholesky solve (CuPy's factorisation returns NaN
instead of raising, and SciPy's ``cho_solve`` has no CuPy twin), the
scatter-add (``cupyx.scatter_add`` for ``numpy.add.at``) and the copy to the
host. Needs CuPy and a GPU (the family's ``needs_cupy``). The interface is
the family's (``fastsd.kernels.backend``).
"""
import cupy
import cupyx
import cupyx.scipy.linalg
import numpy as np

from ._reference import ArrayKernels


class CuPyKernels(ArrayKernels):
    """``ArrayKernels`` on CuPy: the reference's methods, with CuPy's linear algebra."""

    def scatter_add(self, c, idx, vals):
        """c[idx] += vals in place, repeated indices summed."""
        cupyx.scatter_add(c, idx, vals)

    def cho_solve(self, A, b):
        """Solve A z = b by Cholesky; raise ``numpy.linalg.LinAlgError`` unless A is SPD."""
        Lc = cupy.linalg.cholesky(A)
        if not bool(cupy.all(cupy.isfinite(Lc))):
            raise np.linalg.LinAlgError("not positive definite")
        y = cupyx.scipy.linalg.solve_triangular(Lc, b, lower=True)
        return cupyx.scipy.linalg.solve_triangular(Lc.T, y, lower=False)

    def to_host(self, a):
        """``a`` copied to a NumPy array."""
        return cupy.asnumpy(a)


#: The family's interface: the reference's array code on CuPy.
xp = cupy
arccos_kernels, pair_kernel, pair_kernel_matvec, kernel_entries, kernel_sgd, cho_solve, to_host = \
    CuPyKernels(cupy).functions()
