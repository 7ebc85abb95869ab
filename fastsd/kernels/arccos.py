"""Closed-form arc-cosine kernels and the two-layer ReLU NTK (Cho & Saul 2009; App. D).

With w ~ N(0, I), rho = x.y / (|x||y|) and t = arccos(rho):

    arccos(X, Y, order=0) = E[relu'(w.x) relu'(w.y)] = (pi - t) / (2 pi)
    arccos(X, Y, order=1) = E[relu(w.x) relu(w.y)]   = |x||y| (sin t + (pi - t) cos t) / (2 pi)
    nngp(X, Y)            = arccos(X, Y, order=1)
    ntk(X, Y)             = (x.y) arccos(order=0) + arccos(order=1)

ntk is the infinite-width tangent kernel of f(x) = sum_i a_i relu(w_i.x) with
w_i ~ N(0, I/m), a_i ~ N(0, 1/m): sum_i [relu(w_i.x) relu(w_i.y)
+ a_i^2 relu'(w_i.x) relu'(w_i.y) x.y] -> ntk(x, y) as m -> infinity. The
paper's network carries the output scale 1/(gamma sqrt(d)) (Eq. 1), so its
tangent kernel is ntk / (gamma^2 d).
"""
import numpy as np

from .. import _threads
from .._memory import check_fits, need
from .._validation import check_array
from .backend import KERNELS

ORDERS = (0, 1)


def _check_xy(X, Y):
    """Validate X (n, p) and Y (k, p); return them, the result dtype and the backend module.

    CuPy arrays in take the family's "cuda" module (the reference's code on the
    GPU), anything else its "numpy" module."""
    X = np.asarray(X) if not hasattr(X, "__cuda_array_interface__") else X
    Y = np.asarray(Y) if not hasattr(Y, "__cuda_array_interface__") else Y
    out = np.float32 if (getattr(X, "dtype", None) == np.float32
                         and getattr(Y, "dtype", None) == np.float32) else np.float64
    if hasattr(X, "__cuda_array_interface__") or hasattr(Y, "__cuda_array_interface__"):
        import cupy
        if not (isinstance(X, cupy.ndarray) and isinstance(Y, cupy.ndarray)):
            raise TypeError("`X` and `Y` must both be NumPy arrays or both CuPy arrays; "
                            "got one of each.")
        if X.ndim != 2 or Y.ndim != 2 or X.shape[1] != Y.shape[1]:
            raise ValueError(f"`Y` must be an array of shape (k, {X.shape[-1]}) matching "
                             f"`X`; got shapes {X.shape} and {Y.shape}.")
        return X, Y, out, KERNELS.module("cuda")
    X = check_array("X", X, ndim=2)
    Y = check_array("Y", Y, shape=(None, X.shape[1]))
    for name, A in (("X", X), ("Y", Y)):
        # |x|^2 and x . y must be finite float64: entries above ~1e154 overflow them
        if A.size and not np.isfinite(np.einsum("ij,ij->i", A, A).max(initial=0.0)):
            raise ValueError(f"`{name}` must have squared row norms within float64; its "
                             f"largest entry is {np.abs(A).max():.3g}: rescale the inputs "
                             f"(the arc-cosine kernels are homogeneous of degree 1 in each).")
    return X, Y, out, KERNELS.module("numpy")


def kernel_need(X, Y, per_entry, what):
    """The ``Need`` of an n x k kernel of ``per_entry`` bytes an entry, blaming X or Y."""
    n, k = X.shape[0], Y.shape[0]
    fix = "compute the kernel on blocks of rows of `X` or `Y`"
    return need(per_entry * n * k, f"{what} ({n} x {k} entries)", ("X", n, f"{n} rows", fix),
                ("Y", k, f"{k} rows", fix))


def _kernels(X, Y):
    X, Y, out, ops = _check_xy(X, Y)
    if ops.xp is np:    # in host memory: the kernels, cosines, angles and temporaries, float64
        check_fits([kernel_need(X, Y, 96, "the kernels and their float64 temporaries")])
    return [k.astype(out, copy=False) for k in ops.arccos_kernels(X, Y)]


@_threads.computing
def arccos(X, Y, order=1):
    """Arc-cosine kernel of order 0 or 1 between the rows of X and Y.

    Parameters
    ----------
    X : array_like, shape (n, p)
    Y : array_like, shape (k, p)
        Real, finite. NumPy arrays, or CuPy arrays (both) to compute on the GPU.
    order : {0, 1}
        0: E[relu'(w.x) relu'(w.y)] = (pi - t)/(2 pi), with relu'(0) = 0 so
        the kernel is 0 when x or y is zero. 1: E[relu(w.x) relu(w.y)]
        = |x||y| (sin t + (pi - t) cos t)/(2 pi). w ~ N(0, I).

    Returns
    -------
    ndarray, shape (n, k)
        float32 when X and Y are both float32, float64 otherwise (computed in
        float64 either way). Never NaN: cosines that round past +-1 are
        clipped, collinear and anti-collinear pairs get their angle from the
        vectors (Kahan's formula), zero vectors give 0.

    Raises
    ------
    ValueError
        For arrays that are not 2-d, have different p, or hold NaN or inf;
        for ``order`` not 0 or 1.
    TypeError
        For non-numeric input, or a NumPy array mixed with a CuPy array.
    SizeTooLargeError
        Before computing, when the n x k kernel and its temporaries (about
        96 bytes an entry) would not fit in the memory available; the message
        names `X` or `Y` and the bytes.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[1.0, 0.0]]); y = np.array([[0.0, 2.0]])
    >>> float(arccos(x, y, order=0)[0, 0])   # orthogonal: (pi - pi/2) / (2 pi)
    0.25
    """
    if isinstance(order, bool) or order not in ORDERS:
        raise ValueError(f"`order` must be one of 0, 1; got {order!r}.")
    return _kernels(X, Y)[order]


@_threads.computing
def nngp(X, Y):
    """NNGP kernel E[relu(w.x) relu(w.y)], w ~ N(0, I): ``arccos(X, Y, order=1)``.

    It is the readout part of the NTK (the tangent kernel of the readouts a
    alone) and the covariance of the network's outputs at initialisation.
    Shapes, dtypes and errors as ``arccos``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[3.0, 4.0]])
    >>> float(nngp(x, x)[0, 0])    # |x|^2 / 2
    12.5
    """
    return _kernels(X, Y)[1]


@_threads.computing
def ntk(X, Y):
    """Infinite-width NTK of the two-layer ReLU network: (x.y) k0 + k1 (App. D).

    ntk(x, y) = |x||y| (2 rho (pi - t) + sin t) / (2 pi), so ntk(x, x) = |x|^2,
    ntk(x, -x) = 0, ntk(c x, y) = c ntk(x, y) for c > 0, and for unit inputs
    with u = x.y it is u (1 - arccos(u)/pi) + sqrt(1 - u^2)/(2 pi) (App. D).
    The paper's network (output scale 1/(gamma sqrt(d))) has tangent kernel
    ntk / (gamma^2 d).

    Parameters
    ----------
    X : array_like, shape (n, p)
    Y : array_like, shape (k, p)

    Returns
    -------
    ndarray, shape (n, k), float32 for two float32 inputs, else float64.

    Raises
    ------
    ValueError, TypeError
        As ``arccos``.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[3.0, 4.0]])
    >>> float(ntk(x, x)[0, 0]), float(ntk(x, -x)[0, 0])
    (25.0, 0.0)
    """
    return _kernels(X, Y)[2]
