"""Backend "numpy" of the kernels family: the float64 truth of the arc-cosine kernels and the
same-different pair kernel.

The array code is the class ``ArrayKernels``, written against an array module
``xp``; this module binds it to NumPy, and ``_cuda`` binds the same class to
CuPy (overriding only the Cholesky solve, the scatter-add and the copy to the
host), so the GPU path is this same code. The names the module exports are
the family's interface (``fastsd.kernels.backend``).

Normalization: w ~ N(0, I) (Cho & Saul 2009). With rho = x.y / (|x||y|) and
t = arccos(rho) in [0, pi],

    k0(x, y) = E[relu'(w.x) relu'(w.y)] = (pi - t) / (2 pi)
    k1(x, y) = E[relu(w.x) relu(w.y)]   = |x||y| (sin t + (pi - t) rho) / (2 pi)
    ntk(x, y) = (x.y) k0 + k1           = |x||y| (2 rho (pi - t) + sin t) / (2 pi)

so ntk(x, x) = |x|^2 and, for unit inputs, ntk = u (1 - t/pi) + sqrt(1 - u^2)/(2 pi)
(App. D). relu'(0) = 0, so every kernel is 0 when x or y is the zero vector.

Angles: from Gram entries, rho is clipped to [-1, 1] and sin t is formed as
sqrt((1 - rho)(1 + rho)), so no NaN can arise. Where the vectors themselves
are at hand (``arccos_kernels``) and |rho| > 1 - ``REFINE``, the angle is
recomputed from them with Kahan's half-angle formula
t = 2 atan2(|x^ - y^|, |x^ + y^|), which is exact for collinear and
anti-collinear inputs (ntk(x, -x) = 0 exactly).
"""
import numpy as np

from .. import _numerics
from .._arccos import combine, kernels_from_gram, trig
from .backend import KERNELS

#: |rho| above 1 - REFINE gets its angle recomputed from the vectors.
REFINE = 1e-4
#: Bytes of one block of kernel rows in ``pair_kernel_matvec``.
_BLOCK_BYTES = 64 << 20
#: The pair kernels' kinds, as the index of each in ``kernels_from_gram``'s (k0, k1, ntk):
#: "ntk" (both layers trained) and "nngp" = k1 (the readout alone; App. D).
KINDS = {"ntk": 2, "nngp": 1}


def _kahan(xh, yh, xp):
    """(rho, pi - t, sin t) of paired unit rows from t = 2 atan2(|x^ - y^|, |x^ + y^|)."""
    a = xp.sqrt(xp.sum((xh - yh) ** 2, axis=1))     # 2 sin(t/2)
    b = xp.sqrt(xp.sum((xh + yh) ** 2, axis=1))     # 2 cos(t/2)
    h2 = xp.where(a * a + b * b > 0, a * a + b * b, 1.0)
    return (b * b - a * a) / h2, 2.0 * xp.arctan2(b, a), 2.0 * a * b / h2


def paired_kernels(X, Y, nn, xp=np):
    """k0, k1, ntk of the row pairs (X[i], Y[i]), the angle from the vectors (Kahan's formula).

    For nearly collinear pairs, where a cosine from dot products misses +-1 by
    a rounding error and sin t = sqrt(1 - rho^2) is off by ~1e-8.

    Parameters
    ----------
    X, Y : arrays (n, p), float64
    nn : array (n,)
        |x_i| |y_i| as the caller forms it (so the result differs from its own
        dot-product kernel only in the angle).

    Returns
    -------
    k0, k1, ntk : arrays (n,)
    """
    U, nx = _unit_rows(X, xp)
    V, ny = _unit_rows(Y, xp)
    rho, pit, sint = _kahan(U, V, xp)
    return combine((nx > 0) & (ny > 0), nn, rho, pit, sint, xp)


def _unit_rows(X, xp):
    """Rows scaled to unit length (zero rows stay zero) and their norms, without overflow."""
    X = xp.asarray(X, dtype=xp.float64)
    s = xp.max(xp.abs(X), axis=1, keepdims=True) if X.shape[1] else xp.zeros((len(X), 1))
    s = xp.where(s > 0, s, 1.0)
    Xs = X / s
    n = xp.sqrt(xp.sum(Xs * Xs, axis=1, keepdims=True))
    U = Xs / xp.where(n > 0, n, 1.0)
    return U, (n * s)[:, 0]


class ArrayKernels:
    """The kernels family's array code on one array module ``xp`` (NumPy or CuPy).

    Its public methods are the family's interface (see ``fastsd.kernels.backend``);
    a backend module binds one instance's methods as its module functions.
    """

    def __init__(self, xp):
        self.xp = xp

    def functions(self):
        """The family's interface functions (``KERNELS.interface`` but ``xp``), in its order."""
        return tuple(getattr(self, name) for name in KERNELS.interface if name != "xp")

    def arccos_kernels(self, X, Y):
        """k0, k1, ntk between the rows of X (n, p) and Y (k, p), float64, shape (n, k).

        Rows are scaled to unit length first (so huge or tiny inputs neither
        overflow nor underflow), the cosines come from one GEMM; entries with
        |rho| > 1 - REFINE are recomputed from the vectors (O(p) each) with
        Kahan's angle formula.

        Parameters
        ----------
        X : array (n, p)
        Y : array (k, p)
            Arrays of this backend's module, finite.

        Returns
        -------
        k0, k1, ntk : arrays (n, k), float64
        """
        xp = self.xp
        X, nx = _unit_rows(X, xp)
        Y, ny = _unit_rows(Y, xp)
        nn = nx[:, None] * ny[None, :]
        pos = nn > 0
        rho, pit, sint = trig(X @ Y.T, xp)
        i, j = xp.nonzero(pos & (xp.abs(rho) > 1.0 - REFINE))
        if i.size:
            rho[i, j], pit[i, j], sint[i, j] = _kahan(X[i], Y[j], xp)
        return combine(pos, nn, rho, pit, sint, xp)

    def pair_kernel(self, T1, r1, T2, r2, rn2, c1, c2, cn2, kind="ntk"):
        """The kernel between pair inputs from symbol dot-product tables; no d-length vectors.

        Row pair i and column pair j = (c1[j], c2[j]) have
        x_i . x_j = T1[r1[i], c1[j]] + T2[r2[i], c2[j]]. For training rows,
        T1 = T2 = G (the L x L symbol Gram) and r1, r2 are the rows' symbols; for
        test rows, T1 (T2) holds the dot products of the test pairs' first (second)
        items with the symbols and r1 = r2 = arange(n).

        Parameters
        ----------
        T1, T2 : array (*, L), float64
        r1, r2 : int arrays (n,)
        rn2 : array (n,)
            Squared norms of the row pairs.
        c1, c2 : int arrays (k,)
        cn2 : array (k,)
            Squared norms of the column pairs.
        kind : {"ntk", "nngp"}, default "ntk"
            The NTK, or the NNGP kernel k1 (``KINDS``).

        Returns
        -------
        array (n, k), float64
        """
        dot = T1[r1[:, None], c1[None, :]] + T2[r2[:, None], c2[None, :]]
        return kernels_from_gram(dot, rn2[:, None], cn2[None, :], self.xp)[KINDS[kind]]

    def pair_kernel_matvec(self, T1, r1, T2, r2, rn2, c1, c2, cn2, V, kind="ntk"):
        """``pair_kernel(...) @ V`` for V of shape (k, r), without storing the whole kernel.

        The kernel is formed in blocks of rows of at most 64 MiB each.

        Returns
        -------
        array (n, r), float64
        """
        rows = max(1, _BLOCK_BYTES // (8 * max(1, len(c1))))
        return self.xp.concatenate([
            self.pair_kernel(T1, r1[s:s + rows], T2, r2[s:s + rows], rn2[s:s + rows],
                             c1, c2, cn2, kind) @ V
            for s in range(0, len(r1), rows)])

    def kernel_entries(self, dot, nx2, ny2, kind="ntk"):
        """The kernel of n row inputs against k inputs each, from dot products and squared norms.

        For kernel entries that are no block of pairs, e.g. one row of a different
        L x L block for every test pair (``fastsd.kernels.kron``).

        Parameters
        ----------
        dot : array (n, k), float64
            x_i . y_ij.
        nx2 : array (n,)
            |x_i|^2.
        ny2 : array (n, k)
            |y_ij|^2.
        kind : {"ntk", "nngp"}, default "ntk"

        Returns
        -------
        array (n, k), float64
        """
        return kernels_from_gram(dot, nx2[:, None], ny2, self.xp)[KINDS[kind]]

    def kernel_sgd(self, op, c, idx, y, lr):
        """Kernel SGD in function space over the steps of one chunk: f = K c over pairs.

        Each step t evaluates f at the batch pairs ``idx[t]`` from the current c,
        then c[idx[t, b]] -= lr (sigmoid(f_b) - y[t, b]), repeats summed.

        Parameters
        ----------
        op : Solver
            The training kernel (``fastsd.kernels.solvers``): ``op.rows(i)`` gives
            kernel rows, ``op.matrix`` the stored kernel or None.
        c : array (P,), float64
            Coefficients, updated in place.
        idx : int64 ndarray (steps, batch)
            Training pair indices (host).
        y : ndarray (steps, batch)
            Labels in {0, 1} (host).
        lr : float
            Step size of c (alpha0 / batch size).

        Returns
        -------
        c : array (P,)
        loss : float
            Mean over the steps of the batch-mean BCE, each measured before its update.
        """
        xp = self.xp
        total = 0.0
        for t in range(idx.shape[0]):
            it, yt = xp.asarray(idx[t]), xp.asarray(y[t])
            f = op.rows(it) @ c
            total += float(xp.mean(_numerics.bce(f, yt, xp)))
            self.scatter_add(c, it, -lr * (_numerics.sigmoid(f, xp) - yt))
        return c, total / idx.shape[0]

    def scatter_add(self, c, idx, vals):
        """c[idx] += vals in place, repeated indices summed."""
        np.add.at(c, idx, vals)

    def cho_solve(self, A, b):
        """Solve A z = b by Cholesky for a symmetric positive definite A.

        Parameters
        ----------
        A : array (n, n), float64
        b : array (n,), float64

        Returns
        -------
        array (n,)

        Raises
        ------
        numpy.linalg.LinAlgError
            When A is not (numerically) positive definite.
        """
        import scipy.linalg
        cf = scipy.linalg.cho_factor(A, lower=True, check_finite=False)
        return scipy.linalg.cho_solve(cf, b, check_finite=False)

    def to_host(self, a):
        """``a`` as a NumPy array (a copy from the device for CuPy)."""
        return np.asarray(a)


#: The family's interface: the reference's array code on NumPy.
xp = np
arccos_kernels, pair_kernel, pair_kernel_matvec, kernel_entries, kernel_sgd, cho_solve, to_host = \
    ArrayKernels(np).functions()
