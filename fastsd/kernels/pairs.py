"""The lazy limit's training pairs and the pair kernel on them, built from the symbol Gram.

Training pairs are x = (z_u; z_v), so x.x' = G[u, u'] + G[v, v'] and
|x|^2 = G[u, u] + G[v, v] with G = S S^T the L x L symbol Gram matrix. The
only O(d) work is G (one L x L x d GEMM) and the dot products of the test
items with the L symbols (n_test x L x d); no n x n x d array is ever built.

- ``count_pairs``, ``choose_pairs``: which (u, v) pairs train ("all", a
  balanced sample, or given), and how many;
- ``class_weights``: half the weight on same pairs, half on different;
- ``PairKernel``: the P x P training kernel k(x_p, x_q) (k the NTK, or the
  NNGP kernel k1) on one backend, as a
  whole matrix, as rows, or applied to vectors without storing it (what the
  solvers of ``fastsd.kernels.solvers`` build on);
- ``Logits``, ``accuracy``: logits f~(x) = sum_q c_q k(x, x_q) at test
  pairs (matrix-free), and the accuracy of a solver's logits.
"""
import numpy as np

from .._rng import seed_sequence
from .._validation import check_int
from ..params import LAZY_LIMIT
from ._reference import KINDS, REFINE, paired_kernels
from .activation import ActivationKernels

#: Spawn-key tag of the pair sample's stream (distinct from ``train``'s streams).
_PAIR_TAG = 3001


def count_pairs(L, pairs):
    """Validate ``pairs`` and return how many training pairs it gives.

    Parameters
    ----------
    L : int
        Number of symbols.
    pairs : "all", int or int array of shape (P, 2)
        As ``lazy_limit``.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        For another string, an int outside [2, L^2], or an array that is not
        integer (P, 2) with entries in [0, L).
    TypeError
        For a number that is not an integer.
    """
    if isinstance(pairs, str) or np.ndim(pairs) == 0:     # "all" or a number of pairs
        n = LAZY_LIMIT["pairs"].check(pairs)
        return L * L if n == "all" else check_int("pairs", n, maximum=L * L)
    arr = np.asarray(pairs)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"`pairs` must be 'all', an integer number of pairs, or an integer "
                         f"array of shape (P, 2); got {pairs!r:.80}.")
    if arr.min() < 0 or arr.max() >= L:
        raise ValueError(f"`pairs` must hold symbol indices in [0, {L - 1}]; got values in "
                         f"[{arr.min()}, {arr.max()}].")
    return arr.shape[0]


def choose_pairs(L, pairs, seed):
    """The training pairs' symbols u, v and how they were chosen.

    Parameters
    ----------
    L : int
    pairs : "all", int or int array of shape (P, 2)
        Validated by ``count_pairs``. "all": the L^2 ordered pairs. n: min(n // 2,
        L) distinct same pairs and the rest distinct ordered different pairs,
        uniformly without replacement. An array: these pairs.
    seed : int, SeedSequence or None
        Seeds the sample (a stream of its own, spawn key tagged 3001).

    Returns
    -------
    u, v : int64 ndarrays (P,)
    selection : str
        "all ordered pairs", "sampled: ..." (with the seed) or "given".
    """
    if isinstance(pairs, str):
        u, v = np.divmod(np.arange(L * L, dtype=np.int64), L)
        return u, v, "all ordered pairs"
    if isinstance(pairs, (int, np.integer)):
        n = int(pairs)
        ss = seed_sequence(seed)
        rng = np.random.default_rng(np.random.SeedSequence(
            ss.entropy, spawn_key=ss.spawn_key + (_PAIR_TAG,)))
        n_same = min(n // 2, L)
        n_diff = n - n_same
        same = rng.choice(L, size=n_same, replace=False)
        # different pair k in 0..L(L-1)-1 -> (u, v), v != u
        k = rng.choice(L * (L - 1), size=n_diff, replace=False)
        du, off = np.divmod(k, L - 1)
        dv = np.where(off >= du, off + 1, off)
        u = np.concatenate([same, du]).astype(np.int64)
        v = np.concatenate([same, dv]).astype(np.int64)
        return u, v, (f"sampled: {n_same} distinct same pairs and {n_diff} distinct ordered "
                      f"different pairs, uniformly without replacement (seed {ss.entropy}, "
                      f"spawn key {ss.spawn_key + (_PAIR_TAG,)})")
    arr = np.asarray(pairs)
    return arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), "given"


def class_weights(same):
    """Half the weight on same pairs, half on different, uniform within each class.

    Parameters
    ----------
    same : bool ndarray (P,)

    Returns
    -------
    ndarray (P,), float64
        Summing to 1; all on one class when the other is absent.
    """
    n_same = int(same.sum())
    n_diff = len(same) - n_same
    w_same = 0.5 / n_same if n_diff else 1.0 / n_same if n_same else 0.0
    w_diff = (0.5 if n_same else 1.0) / n_diff if n_diff else 0.0
    return np.where(same, w_same, w_diff)


class PairKernel:
    """The kernel between the training pairs (u, v), from the symbol Gram, on one backend.

    Parameters
    ----------
    backend : module
        A kernels backend module (``fastsd.kernels.backend``).
    S : array (L, d), float64
        The symbols, as an array of the backend.
    u, v : int64 ndarrays (P,)
        The training pairs' symbols.
    kind : {"ntk", "nngp"}, default "ntk"
        The NTK (both layers trained), or the NNGP kernel k1 (the readout
        alone), of the arc-cosine family (``fastsd.kernels.arccos``).
    activation : fastsd.activations.Activation, optional
        Another activation's kernels (``fastsd.kernels.activation``; ``backend`` then a
        host backend, "numpy" or "cpu"); None or ReLU: the arc-cosine kernels.

    Attributes
    ----------
    backend, xp : modules
    kind : str
    S, G : arrays (L, d), (L, L)
        Symbols and their Gram matrix.
    u, v : int arrays (P,), of the backend
    n2 : array (P,)
        Squared norms |x_p|^2 = G[u, u] + G[v, v].
    diagonal : array (P,)
        The kernel's diagonal k(x_p, x_p): |x_p|^2 (ntk), |x_p|^2 / 2 (nngp).
    """

    def __init__(self, backend, S, u, v, kind="ntk", activation=None):
        if activation is not None and activation.name != "relu":
            backend = ActivationKernels(activation, backend)
        xp = backend.xp
        self.backend, self.xp, self.S, self.kind = backend, xp, S, kind
        self.G = G = S @ S.T
        self.u, self.v = u, v = xp.asarray(u), xp.asarray(v)
        self.n2 = G[u, u] + G[v, v]
        if isinstance(backend, ActivationKernels):
            self.diagonal = backend.diagonal(self.n2, kind)
        else:
            self.diagonal = self.n2 if kind == "ntk" else 0.5 * self.n2

    def __len__(self):
        return len(self.n2)

    def matrix(self):
        """The whole P x P kernel (8 P^2 bytes)."""
        return self.rows(slice(None))

    def rows(self, idx):
        """Kernel rows of the pairs ``idx`` (an index array or slice), shape (len(idx), P)."""
        G = self.G
        return self.backend.pair_kernel(G, self.u[idx], G, self.v[idx], self.n2[idx],
                                        self.u, self.v, self.n2, self.kind)

    def matvec(self, V):
        """K @ V for V of shape (P,) or (P, r), without storing K."""
        G = self.G
        return self.apply(G, self.u, G, self.v, self.n2, V)

    def apply(self, T1, r1, T2, r2, rn2, V):
        """(kernel of the given rows against the training pairs) @ V, without storing it.

        Rows i have x_i . x_q = T1[r1[i], u_q] + T2[r2[i], v_q] and |x_i|^2 = rn2[i]
        (``pair_kernel``); V is (P,) or (P, r), the result (n,) or (n, r).
        """
        V2 = V.reshape(len(self), -1)
        out = self.backend.pair_kernel_matvec(T1, r1, T2, r2, rn2, self.u, self.v, self.n2, V2,
                                              self.kind)
        return out.reshape((len(r1),) + V.shape[1:])


class Logits:
    """Logits at test pairs x = (t1; t2) from the test items' dot products with the symbols.

    Entries where a test pair is nearly collinear with a training pair (rho >
    1 - ``REFINE``, above all a test pair equal to a training pair) get their
    angle from the vectors (Kahan's formula), as ``fastsd.kernels.arccos``
    does: from dot products alone, rho misses 1 by a rounding error and
    sin t = sqrt(1 - rho^2) by about 1e-8. Those entries are found from the
    items' cosines with the symbols (``near_pairs``) and corrected after the
    matrix-free product.

    Parameters
    ----------
    kernel : PairKernel
    x : array_like (n, 2d)
        Test pairs.
    """

    def __init__(self, kernel, x):
        xp = kernel.xp
        d = kernel.S.shape[1]
        x = xp.asarray(x, xp.float64)
        t1, t2 = x[:, :d], x[:, d:]
        self.T1, self.T2 = t1 @ kernel.S.T, t2 @ kernel.S.T
        self.n2 = xp.sum(t1 * t1, axis=1) + xp.sum(t2 * t2, axis=1)
        self.r = xp.arange(x.shape[0])
        self.kernel = kernel
        self.near, self.near_gap = near_pairs(kernel, x, self.T1, self.T2, self.n2)

    def logits(self, c):
        """f~(x) = sum_q c_q k(x, x_q) at the test pairs, a NumPy array (n,)."""
        k = self.kernel
        f = k.backend.to_host(k.apply(self.T1, self.r, self.T2, self.r, self.n2, c))
        return self.refine(f, c)

    def refine(self, f, c):
        """Add the near-collinear entries' correction (refined minus dot-product kernel) to
        the logits ``f`` (NumPy, n) of coefficients ``c``; returns ``f``."""
        if len(self.near[0]):
            i, p = self.near
            np.add.at(f, i, self.near_gap * self.kernel.backend.to_host(c)[p])
        return f


def near_pairs(kernel, x, T1, T2, n2):
    """Test-training entries with rho > 1 - ``REFINE``, and their kernel's correction.

    rho = (a alpha c1 + b beta c2) / (|x| |x_p|) with a, b the test items' norms,
    alpha, beta the symbols' and c1, c2 their cosines; since |x| |x_p| >=
    a alpha + b beta, 1 - rho >= w (1 - c1) + (1 - w) (1 - c2) with w = a alpha /
    (a alpha + b beta), so only symbols u with a alpha_u (1 - c1) < REFINE (a alpha_u
    + b max alpha) (and likewise v) can be part of such an entry: a few per test
    pair, none for fresh symbols.

    Returns
    -------
    (i, p) : int ndarrays (k,)
        Test pair and training pair of each entry.
    gap : ndarray (k,)
        The kernel from the vectors (Kahan's angle) minus the kernel from the dot
        products (what the products use), float64.
    """
    be = kernel.backend
    if not getattr(be, "refines", True):           # another activation's kernels
        return (np.zeros(0, np.int64), np.zeros(0, np.int64)), np.zeros(0)
    host = be.to_host
    L, d = kernel.S.shape
    xh = host(x)
    T1h, T2h, n2h = host(T1), host(T2), host(n2)
    alpha = np.sqrt(np.maximum(host(be.xp.diag(kernel.G)), 0.0))
    a = np.sqrt(np.einsum("ij,ij->i", xh[:, :d], xh[:, :d]))
    b = np.sqrt(np.einsum("ij,ij->i", xh[:, d:], xh[:, d:]))
    amax = float(alpha.max(initial=0.0))
    slack = 2.0 * REFINE                    # the cosines are rounded too

    def candidates(T, own, other):
        aa = own[:, None] * alpha[None, :]
        return aa - T < slack * (aa + other[:, None] * amax)     # aa (1 - c) < ...

    U, V = candidates(T1h, a, b), candidates(T2h, b, a)
    rows = np.flatnonzero(U.any(axis=1) & V.any(axis=1))
    if not len(rows):
        return (np.zeros(0, np.int64), np.zeros(0, np.int64)), np.zeros(0)
    S = host(kernel.S)
    u_tr, v_tr = host(kernel.u), host(kernel.v)
    keys = u_tr * L + v_tr
    order = np.argsort(keys, kind="stable")
    skeys = keys[order]
    ii, pp = [], []
    for i in rows:
        uu, vv = np.flatnonzero(U[i]), np.flatnonzero(V[i])
        want = (uu[:, None] * L + vv[None, :]).ravel()
        lo, hi = np.searchsorted(skeys, want, "left"), np.searchsorted(skeys, want, "right")
        for s, e in zip(lo, hi):
            pp.extend(order[s:e])
            ii.extend([i] * (e - s))
    i, p = np.asarray(ii, np.int64), np.asarray(pp, np.int64)
    n2p = host(kernel.n2)[p]
    dot = T1h[i, u_tr[p]] + T2h[i, v_tr[p]]
    nn = np.sqrt(n2h[i] * n2p)
    keep = (nn > 0) & (dot > (1.0 - REFINE) * nn)
    i, p, dot, nn, n2p = i[keep], p[keep], dot[keep], nn[keep], n2p[keep]
    if not len(i):
        return (i, p), np.zeros(0)
    y = np.concatenate([S[u_tr[p]], S[v_tr[p]]], axis=1)
    refined = paired_kernels(xh[i], y, nn)[KINDS[kernel.kind]]
    gram = host(be.kernel_entries(be.xp.asarray(dot[:, None]), be.xp.asarray(n2h[i]),
                                  be.xp.asarray(n2p[:, None]), kernel.kind))[:, 0]
    return (i, p), refined - gram


def accuracy(op, c, x, y):
    """Accuracy of the logits sum_q c_q k(x, x_q) on test pairs ``x`` with labels ``y``.

    Parameters
    ----------
    op : Solver
        The training kernel's solver; its ``logits(x, c)`` gives the logits
        (``Logits`` by default, ``fastsd.kernels.solvers``).
    c : array (P,)
        Coefficients over the training pairs.
    x : ndarray (n, 2d)
    y : ndarray (n,)
        Labels in {0, 1}.

    Returns
    -------
    float
    """
    return float(np.mean((op.logits(x, c) > 0) == (y > 0.5)))
