"""Backend "cpu" of the kernels family: Numba builds of the pair kernels (the O(n k) part around BLAS).

``pair_kernel`` fills a block of the kernel matrix (the NTK, or the NNGP
kernel k1); ``pair_kernel_matvec`` applies it to a block of vectors without
storing it (memory O(n + k)), for the matrix-free solvers; ``kernel_entries``
evaluates it entry by entry; ``kernel_sgd``
runs kernel SGD on a stored kernel in one compiled loop. All read symbol dot
products from L x L (or n x L) tables, so nothing depends on d. Rows run in
parallel (``prange``); each output entry is computed by one thread in a fixed
order, so results do not depend on the thread count. The arc-cosine kernels,
the Cholesky solve and the copy to the host are the reference's (NumPy,
SciPy). The interface is the family's (``fastsd.kernels.backend``).
"""
import math

import numba as nb
import numpy as np

from .. import _jitcache, _numerics
from . import _reference

_TWO_PI = 2.0 * math.pi
_sigmoid = nb.njit(inline="always")(_numerics.scalar_sigmoid)
_bce = nb.njit(inline="always")(_numerics.scalar_bce)

xp = np
arccos_kernels, cho_solve, to_host = (_reference.arccos_kernels, _reference.cho_solve,
                                      _reference.to_host)


@nb.njit(inline="always")
def _entry(dot, nx2, ny2, nngp):
    """ntk, or k1 where ``nngp``, from x.y and the squared norms |x|^2, |y|^2 (``_reference``).

    |x||y| = sqrt(|x|^2 |y|^2) makes rho exactly 1 for a pair with itself.
    """
    nn = math.sqrt(nx2 * ny2)
    if nn <= 0.0:
        return 0.0
    rho = dot / nn
    if rho > 1.0:
        rho = 1.0
    elif rho < -1.0:
        rho = -1.0
    pit = math.acos(-rho)
    sint = math.sqrt((1.0 - rho) * (1.0 + rho))
    if nngp:
        return nn * (sint + pit * rho) / _TWO_PI
    return nn * (2.0 * rho * pit + sint) / _TWO_PI


@_jitcache.njit(parallel=True)
def _pair_kernel_into(T1, r1, T2, r2, rn2, c1, c2, cn2, nngp, out):
    """out[i, j] = the kernel of row pair i and column pair j; rn, cn are squared norms."""
    for i in nb.prange(out.shape[0]):
        a = T1[r1[i]]
        b = T2[r2[i]]
        for j in range(out.shape[1]):
            out[i, j] = _entry(a[c1[j]] + b[c2[j]], rn2[i], cn2[j], nngp)


@_jitcache.njit(parallel=True)
def _pair_kernel_matvec_into(T1, r1, T2, r2, rn2, c1, c2, cn2, V, nngp, out):
    """out[i, :] = sum_j k(i, j) V[j, :], without storing the kernel; V is (k, r)."""
    r = V.shape[1]
    for i in nb.prange(out.shape[0]):
        a = T1[r1[i]]
        b = T2[r2[i]]
        acc = np.zeros(r)
        for j in range(V.shape[0]):
            kij = _entry(a[c1[j]] + b[c2[j]], rn2[i], cn2[j], nngp)
            for q in range(r):
                acc[q] += kij * V[j, q]
        for q in range(r):
            out[i, q] = acc[q]


@_jitcache.njit(parallel=True)
def _kernel_entries_into(dot, nx2, ny2, nngp, out):
    """out[i, j] = k(dot[i, j], nx2[i], ny2[i, j])."""
    for i in nb.prange(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = _entry(dot[i, j], nx2[i], ny2[i, j], nngp)


@_jitcache.njit(parallel=True)
def _kernel_sgd_stored(K, idx, y, lr, c, loss):
    """Kernel SGD in function space: f = K c over pairs; idx, y are (steps, batch).

    Each step evaluates f at the batch pairs from the current c (rows in
    parallel), then c[idx[t, b]] -= lr (sigmoid(f_b) - y_b) in batch order.
    ``loss[t]`` receives the step's mean BCE, measured before the update.
    """
    B = idx.shape[1]
    f = np.empty(B)
    for t in range(idx.shape[0]):
        for b in nb.prange(B):
            row = K[idx[t, b]]
            acc = 0.0
            for q in range(c.shape[0]):
                acc += row[q] * c[q]
            f[b] = acc
        tot = 0.0
        for b in range(B):
            tot += _bce(f[b], y[t, b])
            c[idx[t, b]] -= lr * (_sigmoid(f[b]) - y[t, b])
        loss[t] = tot / B


def pair_kernel(T1, r1, T2, r2, rn2, c1, c2, cn2, kind="ntk"):
    """The kernel between pair inputs from symbol dot-product tables (``_reference.pair_kernel``).

    Parameters
    ----------
    T1, T2 : ndarray (*, L), float64
    r1, r2 : int ndarrays (n,)
    rn2 : ndarray (n,)
    c1, c2 : int ndarrays (k,)
    cn2 : ndarray (k,)
    kind : {"ntk", "nngp"}, default "ntk"

    Returns
    -------
    ndarray (n, k), float64
    """
    out = np.empty((len(r1), len(c1)))
    _pair_kernel_into(T1, r1, T2, r2, rn2, c1, c2, cn2, _nngp(kind), out)
    return out


def pair_kernel_matvec(T1, r1, T2, r2, rn2, c1, c2, cn2, V, kind="ntk"):
    """``pair_kernel(...) @ V`` for V of shape (k, r), without storing the kernel.

    Returns
    -------
    ndarray (n, r), float64
    """
    out = np.empty((len(r1), V.shape[1]))
    _pair_kernel_matvec_into(T1, r1, T2, r2, rn2, c1, c2, cn2, np.ascontiguousarray(V),
                             _nngp(kind), out)
    return out


def kernel_entries(dot, nx2, ny2, kind="ntk"):
    """The kernel of n row inputs against k inputs each (``_reference.kernel_entries``).

    Parameters
    ----------
    dot : ndarray (n, k), float64
    nx2 : ndarray (n,)
    ny2 : ndarray (n, k)
    kind : {"ntk", "nngp"}, default "ntk"

    Returns
    -------
    ndarray (n, k), float64
    """
    out = np.empty(dot.shape)
    _kernel_entries_into(np.ascontiguousarray(dot), np.ascontiguousarray(nx2),
                         np.ascontiguousarray(ny2), _nngp(kind), out)
    return out


def _nngp(kind):
    """The compiled kernels' flag: True for "nngp" (k1), False for "ntk"."""
    return _reference.KINDS[kind] == _reference.KINDS["nngp"]


def kernel_sgd(op, c, idx, y, lr):
    """Kernel SGD over one chunk of steps (see ``_reference.kernel_sgd``).

    On a stored kernel (``op.matrix``) the steps run in one compiled loop;
    a matrix-free one takes the reference's loop over ``op.rows``.

    Returns
    -------
    c : ndarray (P,)
        Updated in place.
    loss : float
        Mean over the steps of the batch-mean BCE before each update.
    """
    if op.matrix is None:
        return _reference.kernel_sgd(op, c, idx, y, lr)
    loss = np.zeros(idx.shape[0])
    _kernel_sgd_stored(op.matrix, idx, y, lr, c, loss)
    return c, float(loss.mean())
