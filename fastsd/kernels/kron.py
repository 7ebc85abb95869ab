"""Solver "kron": the all-pairs kernel as a short sum of Kronecker products (issue 17).

Structure
---------
With all P = L^2 ordered pairs, pair p = (u, v) at index p = u L + v (as
``fastsd.kernels.pairs.choose_pairs`` orders them), the pair kernel of App. D is

    K[(u, v), (u', v')] = ntk(x, x'),  x.x' = G[u, u'] + G[v, v'],
                                       |x|^2 = G[u, u] + G[v, v],

a function of two L x L "coordinates" of the symbol Gram G (the same holds,
and everything below, for the NNGP kernel k1 of kernel="nngp", whose diagonal
is |x|^2 / 2). Its rearrangement
R[(u, u'), (v, v')] = K[(u, v), (u', v')] is an L^2 x L^2 matrix whose row
(u, u') is the L x L block K[(u, .), (u', .)] (O(L^2) kernel entries from G),
and R = R^T (swapping the two symbols of both pairs changes neither the dot
product nor the norms), so a column of R is a row too. A rank-R approximation
R ~ sum_r a_r b_r^T is K ~ sum_r A_r (x) B_r with A_r, B_r the L x L
reshapings of a_r, b_r, and a product is

    K c = sum_r A_r C B_r^T   (C = c reshaped L x L),

two GEMMs of L x L by L x RL (4 R L^3 flops, the backend's array module ``xp``,
so CuPy runs the same code) instead of P^2 = L^4 kernel evaluations; the store
is 16 R L^2 bytes instead of 8 L^4.

Factorisation (``factorise``)
-----------------------------
1. Adaptive cross approximation (ACA, partial pivoting; Bebendorf 2000) on R:
   each term costs one exact row and one exact column of R (2 L^2 kernel
   entries) and O(k L^2) work against the k terms so far; it stops when two
   consecutive terms are below ``rtol`` / 10 of the running estimate of ||R||_F.
   P x P entries are never formed.
2. Recompression: QR of both factor sets and the SVD of the small core,
   truncated at ``rtol`` / 2 relative Frobenius error (the near-optimal rank).
3. Diagonal correction: the arc-cosine kernel is not smooth at rho = 1, which
   for distinct, non-collinear symbols is exactly the diagonal of K (x = x').
   Those entries, |x_p|^2 = G[u, u] + G[v, v], are themselves the two
   Kronecker terms diag(n) (x) I + I (x) diag(n) (n = diag G), so they raise
   the rank of R by at most two. After the recompression the stored P-vector
   ``dcorr`` = |x_p|^2 - (sum_r A_r (x) B_r)[p, p] is added to every
   product, so the diagonal (the ridge scale, the preconditioner, a pair's
   own weight) is exact and the terms' error sits off the diagonal.
   Duplicate symbols give identical rows of R (zero residual, no terms);
   nearly collinear pairs (rho near 1 off the diagonal) raise the rank, and
   the cross approximation takes more terms.
4. Error probe: m exact rows of R (``probes``, m L^2 kernel entries), drawn
   uniformly without replacement (all L^2 rows when L^2 <= m, then the error
   below is exact), against the same rows of the stored operator (terms plus
   correction). The estimate of the relative Frobenius error
   e = ||K~ - K||_F / ||K||_F is sqrt(sum ||res_i||^2 / sum ||R_i||^2) over
   the probed rows; the recorded bound is its 3-standard-error upper
   confidence limit (ratio estimator, finite-population correction), a
   statistical bound, exact when every row is probed, plus 1e-14 for the
   float64 rounding of the products. Should the bound exceed
   ``rtol``, ACA continues from the worst probed rows with a tenfold tighter
   stopping rule and new probes are drawn.

"Exact" means the kernel entries the dense solver stores (``PairKernel.rows``:
the closed form of ``_reference`` / ``_cpu`` on Gram entries). Since
||(K~ - K) c|| <= ||K~ - K||_F ||c||, every product's error is at most
e ||K||_F ||c||.

Products run under one BLAS thread, as every fastsd computation does
(``fastsd._threads``: OpenBLAS's own threads spin under other jobs' load). The products made
(``kron_products``, vectors multiplied) and kernel rows formed (``kron_rows``,
kernel SGD) are counted (``counts()``).

Test logits (``KronSolver.logits``, from L = ``TEST_CROSS_MIN_L``): test pair
i = (t1; t2) against training pair (u, v) has kernel
F_i[u, v] = ntk(T1[i, u] + T2[i, v], |t1|^2 + |t2|^2, n_u + n_v), T1 = t1 S^T and
T2 = t2 S^T the test items' dot products with the symbols: an L x L block of
low rank. ``cross_logits`` runs ACA on all n blocks in lockstep (a step: one
row and one column of every block, 2 n L entries by the backend's
``kernel_entries``), and logit_i = sum_k a_ik^T C b_ik is one
GEMM (2 k n L^2 flops) instead of n L^2 kernel entries; a few whole blocks
are compared with their exact entries and the largest relative error is
recorded (``kron_test_block_error``). Below ``TEST_CROSS_MIN_L`` the
matrix-free product is as fast, and is used.

The default ``kernel_tol`` (``DEFAULT_RTOL``) was chosen by the test logits'
agreement with solver="dense" at several tolerances; the tests hold them to
1e-6 relative. ``bench/bench_kron.py`` measures that agreement and the terms
built (see the docs' results page).
"""
import math

import numpy as np

from .. import _progress
from .._memory import fmt_bytes
from .pairs import Logits
from .solvers import CGSolver, SolveTooLargeError, register_solver

#: Default relative Frobenius error target of the structured kernel (module notes; the
#: tests hold the test logits to 1e-6 relative of solver="dense").
DEFAULT_RTOL = 1e-10
#: Exact rows of R drawn to measure the error (all rows when L^2 is smaller).
ERROR_ROWS = 256
#: Standard errors in the upper confidence limit of the probed error.
Z_BOUND = 3.0
#: Terms solver="auto" wants room for before it takes "kron".
AUTO_MIN_TERMS = 64
#: Smallest L from which solver="auto" prefers "kron" to "dense" for the flow: where
#: their wall times cross (``bench/bench_kron.py --crossover``; see the docs' results page).
AUTO_FLOW_MIN_L = 48
#: Smallest L and d from which "auto" prefers "kron" for the regression (CG on the
#: Kronecker products against a Cholesky of the stored kernel): where their wall times
#: cross (``bench/bench_kron.py --crossover``).
AUTO_REGRESSION_MIN_L, AUTO_REGRESSION_MIN_D = 64, 32
#: Float64 rounding allowance added to the recorded bound (products of O(1) factors).
ROUNDING = 1e-14
#: Bytes a term per pair while building (two factor sets and their QR copies).
BYTES_PER_TERM = 32
#: From this L on, test logits come from cross approximations of the test pairs' blocks
#: (``cross_logits``); below it the matrix-free product is as fast (``bench/bench_kron.py``
#: times both; see the docs' results page).
TEST_CROSS_MIN_L = 384
#: Terms the test blocks' buffers start with (doubled when a block needs more).
TEST_TERMS = 24
#: Random rows the cross approximation tries after a pivot row found exact (``_ACA.run``).
SAMPLE = 8
#: Random vectors whose float32 products are measured against float64 (``factorise``).
PRODUCT_PROBES = 4
#: Rounds of ACA continuation after a failed probe.
_ROUNDS = 6


def max_terms(L, max_bytes):
    """The most Kronecker terms "kron" will build for L symbols within ``max_bytes``.

    The cross approximation's two factor sets of terms x L^2 float64 and their
    QR copies in the recompression (32 L^2 bytes a term) must fit in
    ``max_bytes``, and the terms are at most L^2 (exact) and at most
    max(4 L, 512): beyond that a product (4 R L^3 flops) costs about what the
    matrix-free one does (L^4 kernel entries).

    Parameters
    ----------
    L : int
    max_bytes : int

    Returns
    -------
    int
    """
    M = L * L
    return int(min(M, max(4 * L, 512), max_bytes // (BYTES_PER_TERM * M)))


class _Rows:
    """Exact rows of the rearranged kernel R from the Gram, on the kernel's backend."""

    def __init__(self, kernel):
        xp = kernel.xp
        self.kernel, self.xp = kernel, xp
        self.G = kernel.G
        self.L = L = kernel.G.shape[0]
        self.n = xp.ascontiguousarray(xp.diag(self.G))
        self.ar = xp.arange(L)
        self.count = 0

    def __call__(self, i):
        """Row i = (u, u') of R, the block K[(u, .), (u', .)] flattened, shape (L^2,)."""
        L, xp, G, n, ar = self.L, self.xp, self.G, self.n, self.ar
        u, up = divmod(int(i), L)
        self.count += 1
        block = self.kernel.backend.pair_kernel(G, xp.full(L, u), G, ar, n[u] + n,
                                                xp.full(L, up), ar, n[up] + n, self.kernel.kind)
        return block.reshape(-1)


class _ACA:
    """Adaptive cross approximation with partial pivoting of the symmetric R, resumable."""

    def __init__(self, rows, cap, step, rng):
        xp = rows.xp
        self.rows, self.xp, self.cap, self.step, self.rng = rows, xp, cap, step, rng
        M = rows.L * rows.L
        self.M = M
        self.A = xp.empty((min(cap, 16), M))
        self.B = xp.empty((min(cap, 16), M))
        self.k = 0
        self.used = np.zeros(M, dtype=bool)
        self.frob2 = 0.0

    def _grow(self):
        xp = self.xp
        n = min(self.cap, 2 * self.A.shape[0])
        for name in ("A", "B"):
            old = getattr(self, name)
            new = xp.empty((n, self.M))
            new[:self.k] = old[:self.k]
            setattr(self, name, new)

    def run(self, start, tol):
        """Add terms from pivot row ``start`` until two consecutive ones are below tol ||R||_F.

        A pivot row whose residual is already below tol times the rows' RMS norm
        sqrt(||R||_F^2 / M) (exactly zero in an exactly low-rank R: one-hot,
        orthonormal or repeated symbols) adds no term; ``SAMPLE`` random unused
        rows are then tried, the one of largest residual is the next pivot, and
        when all of them are exact to the tolerance the approximation stops
        (the error probe of ``factorise`` checks the stop). So an exactly
        low-rank R ends after about its rank in terms instead of walking all
        M rows.

        Returns False when the cap on terms is reached first (or the rows run out).
        """
        xp = self.xp
        A, B = self.A, self.B
        i, small = int(start), 0
        while True:
            if self.used.all():
                return True                     # every row is interpolated: exact
            if self.used[i]:
                i = self._fresh()
            if self.k >= self.cap:
                return False
            if self.k == self.A.shape[0]:
                self._grow()
                A, B = self.A, self.B
            k = self.k
            r = self.rows(i)
            if k:
                r = r - A[:k, i] @ B[:k]
            self.used[i] = True
            j = int(xp.argmax(xp.abs(r)))
            delta = float(r[j])
            if self._exact(r, tol):
                i = self._sample(tol)           # the row is exact to the tolerance: no term
                if i is None:
                    return True
                continue
            b = r / delta
            a = self.rows(j)                    # column j of R is row j (R = R^T)
            if k:
                a = a - B[:k, j] @ A[:k]
            A[k], B[k] = a, b
            aa, bb = float(a @ a), float(b @ b)
            cross = float((A[:k] @ a) @ (B[:k] @ b)) if k else 0.0
            self.frob2 = max(self.frob2 + 2.0 * cross + aa * bb, aa * bb)
            self.k = k + 1
            self.step(1)
            small = small + 1 if aa * bb <= tol * tol * self.frob2 else 0
            if small >= 2:
                return True
            score = xp.abs(a)
            score[xp.asarray(self.used)] = -1.0
            i = int(xp.argmax(score))

    def _fresh(self):
        """A random row not yet used as a pivot (the caller checks that one is left)."""
        free = np.flatnonzero(~self.used)
        return int(free[self.rng.integers(len(free))])

    def _exact(self, r, tol):
        """Whether a residual row is below ``tol`` times the rows' RMS norm (or zero)."""
        rr = float(r @ r)
        return rr == 0.0 or rr * self.M <= tol * tol * self.frob2

    def _sample(self, tol):
        """Of ``SAMPLE`` random unused rows, the one of largest residual; None when all
        are exact to the tolerance (or no row is left)."""
        free = np.flatnonzero(~self.used)
        best, most = None, 0.0
        k = self.k
        for i in self.rng.choice(free, size=min(SAMPLE, len(free)), replace=False):
            r = self.rows(int(i))
            if k:
                r = r - self.A[:k, i] @ self.B[:k]
            if not self._exact(r, tol) and float(r @ r) > most:
                best, most = int(i), float(r @ r)
        return best


def _recompress(xp, A, B, tol):
    """Truncate sum_k A[k] B[k]^T to the fewest terms within ``tol`` relative Frobenius error.

    Returns balanced factors (r, M), (r, M) with A_r = sqrt(s_r) U_r, B_r = sqrt(s_r) V_r.
    """
    qa, ra = xp.linalg.qr(A.T)
    qb, rb = xp.linalg.qr(B.T)
    U, s, Vt = xp.linalg.svd(ra @ rb.T)
    s_host = np.asarray(s.get() if hasattr(s, "get") else s)
    tail = np.sqrt(np.cumsum(s_host[::-1] ** 2))[::-1]      # tail[r]: error keeping r terms
    total = tail[0] if len(tail) else 0.0
    r = int(np.sum(tail > tol * total)) if total > 0 else 1
    r = max(r, 1)
    root = xp.sqrt(s[:r])
    return (qa @ (U[:, :r] * root)).T.copy(), (qb @ (Vt[:r].T * root)).T.copy()


class KronFactors:
    """K~ = sum_r A_r (x) B_r + diag(dcorr) over all L^2 pairs, built by ``factorise``.

    Parameters
    ----------
    xp : module
        The backend's array module.
    A, B : arrays (R, M), float64, M = L^2
        The terms: A_r, B_r are rows r reshaped L x L (A_r[u, u'] at A[r, u L + u']).
    dcorr : array (M,)
        The diagonal correction (K~'s diagonal is exact).
    info : dict
        How it was built and its measured error (``factorise``).

    Attributes
    ----------
    A : array (R, L, L)
    terms, L : int
    dcorr, info
        As given. B is kept only as ``Bh`` (L, R L), Bh[v, r L + v'] = B_r[v, v'], the
        layout of the products' second GEMM: 16 R L^2 bytes in all.
    """

    def __init__(self, xp, A, B, dcorr, info, dtype="float64"):
        self.xp = xp
        self.terms = R = A.shape[0]
        self.L = L = math.isqrt(A.shape[1])
        self.dtype = xp.dtype(dtype)
        self.A = A.reshape(R, L, L).astype(self.dtype)
        self.Bh = xp.ascontiguousarray(B.reshape(R, L, L).transpose(1, 0, 2).reshape(L, R * L),
                                       dtype=self.dtype)
        self.dcorr, self.info = dcorr, info

    def apply(self, c):
        """K~ c for one vector c (M,): sum_r A_r C B_r^T + dcorr * c, two GEMMs in the factors'
        dtype; the diagonal term and the result in float64."""
        R, L = self.terms, self.L
        C = c.reshape(L, L).astype(self.dtype, copy=False)
        X = self.A.reshape(R * L, L) @ C                    # (A_r C)[u, v'] at [(r, u), v']
        Xh = X.reshape(R, L, L).transpose(1, 0, 2).reshape(L, R * L)
        return (Xh @ self.Bh.T).reshape(-1).astype(self.xp.float64) + self.dcorr * c

    def rows(self, idx):
        """Rows K~[idx], (n, M): sum_r A_r[u, :] (x) B_r[v, :] plus the correction."""
        xp = self.xp
        R, L = self.terms, self.L
        idx = xp.asarray(idx).reshape(-1)
        u, v = idx // L, idx % L
        Au = self.A[:, u, :].transpose(1, 2, 0)             # (n, L, R)
        Bv = self.Bh.reshape(L, R, L)[v]                    # (n, R, L)
        out = xp.matmul(Au, Bv).reshape(len(idx), L * L).astype(xp.float64)
        out[xp.arange(len(idx)), idx] += self.dcorr[idx]
        return out


def _rows_of_R(xp, A, B, dcorr, idx):
    """Rows ``idx`` (host ints) of the rearrangement of sum_r A_r (x) B_r + diag(dcorr)."""
    L = math.isqrt(A.shape[1])
    u, up = np.divmod(idx, L)
    out = A[:, xp.asarray(idx)].T @ B
    for q in np.flatnonzero(u == up):                   # entries (v, v): K~[(u,v),(u,v)]
        out[q, :: L + 1] += dcorr[u[q] * L:(u[q] + 1) * L]
    return out


def factorise(kernel, rtol=DEFAULT_RTOL, *, cap, probes=ERROR_ROWS, seed=0, step=lambda n: None,
              dtype="float64"):
    """Kronecker factors of the all-pairs kernel within ``rtol`` relative Frobenius error.

    See the module notes (ACA on the rearranged kernel, recompression,
    diagonal correction, probed error).

    Parameters
    ----------
    kernel : PairKernel
        Over all L^2 ordered pairs in ``choose_pairs``'s order (pair p = u L + v).
    rtol : float
        Target of ||K~ - K||_F / ||K||_F, in (0, 1).
    cap : int
        The most terms to build (``max_terms``).
    probes : int, default 256
        Exact rows of R the error is measured on.
    seed : int, default 0
        Seeds the probe rows.
    step : callable, optional
        Called with 1 after each cross-approximation term (a progress bar's
        ``update``).
    dtype : {"float64", "float32"}, default "float64"
        The factors' and the products' arithmetic (``KronFactors``). For float32
        the relative error of 4 random products against the float64 factors is
        measured and recorded (``kron_product_error``).

    Returns
    -------
    KronFactors

    Raises
    ------
    SolveTooLargeError
        When ``rtol`` needs more than ``cap`` terms; the message gives both.
    ValueError
        When ``rtol`` is below what the float64 entries allow (the probed bound
        stays above it after the continuation rounds).
    """
    xp = kernel.xp
    rows = _Rows(kernel)
    L = rows.L
    M = L * L
    rng = np.random.default_rng(seed)
    aca = _ACA(rows, cap, step, rng)
    n = rows.n
    diag = xp.arange(L) * (L + 1)                 # index (u, u) in R's row numbering
    pivot, tol, exact = int(xp.argmax(n)) * (L + 1), rtol / 10.0, False
    for _ in range(_ROUNDS):
        complete = aca.run(pivot, tol)
        if not complete and aca.k >= cap:
            raise SolveTooLargeError(
                f"solver='kron' needs more than {cap} Kronecker terms "
                f"for a relative kernel error of `kernel_tol` = {rtol:g} at L = {L} (symbols "
                f"of small dimension or nearly collinear pairs); use solver='cg' or 'dense', a "
                f"larger `kernel_tol`, or raise `max_bytes`.")
        if aca.k:
            A, B = _recompress(xp, aca.A[:aca.k], aca.B[:aca.k], rtol / 2.0)
        else:                                   # R = 0 (zero symbols): one zero term
            A, B = xp.zeros((1, M)), xp.zeros((1, M))
        # K~[(u, v), (u, v)] = sum_r A_r[u, u] B_r[v, v]
        kdiag = (A[:, diag].T @ B[:, diag]).reshape(-1)
        dcorr = kernel.diagonal - kdiag
        exact = M <= probes
        idx = np.arange(M) if exact else rng.choice(M, size=probes, replace=False)
        err2, tot2 = _probe(rows, lambda part: _rows_of_R(xp, A, B, dcorr, part), idx)
        estimate, bound = _bound(err2, tot2, M, exact)
        if bound <= rtol or aca.used.all():
            break
        pivot, tol = int(idx[int(np.argmax(err2))]), tol / 10.0
    else:
        raise ValueError(f"`kernel_tol` = {rtol:g} is not reached by solver='kron' at L = {L} "
                         f"within {cap} terms (probed error bound {bound:.2e} after "
                         f"{aca.k} cross-approximation terms): float64 kernel entries are "
                         f"exact to about 1e-16 relative; use a larger `kernel_tol`.")
    info = {
        "kron_terms": A.shape[0], "kron_tol": rtol, "kron_error_bound": bound,
        "kron_error_estimate": estimate, "kron_error_probed_rows": int(len(idx)),
        "kron_error_exact": bool(exact), "kron_aca_terms": aca.k, "kron_build_rows": rows.count}
    info["kron_dtype"] = dtype
    full = KronFactors(xp, A, B, dcorr, info)
    if dtype == "float64":
        return full
    out = KronFactors(xp, A, B, dcorr, info, dtype)
    C = xp.asarray(rng.standard_normal((PRODUCT_PROBES, M)))
    info["kron_product_error"] = max(
        float(xp.linalg.norm(out.apply(c) - want) / (xp.linalg.norm(want) or 1.0))
        for c, want in ((c, full.apply(c)) for c in C))
    return out


def _probe(rows, approx_rows, idx):
    """Squared residual and squared norm of the exact rows ``idx`` of R against
    ``approx_rows(part)``, in chunks of 64 MiB."""
    M = rows.L * rows.L
    chunk = max(1, (64 << 20) // (8 * M))
    err2, tot2 = np.empty(len(idx)), np.empty(len(idx))
    for s in range(0, len(idx), chunk):
        part = idx[s:s + chunk]
        approx = approx_rows(part)
        for q, i in enumerate(part):
            want = rows(i)
            res = want - approx[q]
            err2[s + q], tot2[s + q] = float(res @ res), float(want @ want)
    return err2, tot2


def _bound(err2, tot2, M, exact):
    """The probed relative error and its Z_BOUND-standard-error upper limit (or itself)."""
    ratio = float(err2.sum() / tot2.sum()) if tot2.sum() > 0 else 0.0
    estimate = math.sqrt(max(ratio, 0.0))
    if exact:
        return estimate, estimate + ROUNDING
    m = len(err2)
    resid = err2 - ratio * tot2
    se = math.sqrt(max(0.0, 1.0 - m / M) / m) * float(np.std(resid, ddof=1)) / float(tot2.mean())
    return estimate, math.sqrt(ratio + Z_BOUND * se) + ROUNDING


class _TestBlocks:
    """Cross approximations of the n test pairs' L x L kernel blocks, in lockstep.

    Test pair i = (t1; t2) against training pair (u, v) has kernel
    F_i[u, v] = ntk(T1[i, u] + T2[i, v], |t1|^2 + |t2|^2, n_u + n_v), a smooth
    L x L block (fresh symbols: no rho = 1 entry) of low rank. ACA with partial
    pivoting runs on every block at once: a step evaluates one row and one
    column of each still active block (2 n L entries by the backend's
    ``kernel_entries``), and a block stops when two consecutive terms are
    below ``tol`` of its running Frobenius norm. Then
    logit_i = sum_{u,v} C[u, v] F_i[u, v] = sum_k a_ik^T C b_ik: one GEMM.
    """

    def __init__(self, backend, T1, T2, tn2, ns, tol, kind="ntk"):
        xp = backend.xp
        self.xp = xp

        def entries(dot, nx2, ny2):
            return backend.kernel_entries(dot, nx2, ny2, kind)

        self.n, self.L = n, L = T1.shape
        self.A = xp.zeros((n, min(L, TEST_TERMS), L))     # a_ik[u] at A[i, k, u]
        self.B = xp.zeros((n, min(L, TEST_TERMS), L))     # b_ik[v] at B[i, k, v]
        self.k = 0
        i = xp.arange(n)
        used = xp.zeros((n, L), dtype=bool)
        frob2, small = xp.zeros(n), xp.zeros(n, dtype=np.int64)
        active = xp.ones(n, dtype=bool)
        p = xp.full(n, int(xp.argmax(ns)))
        while self.k < L and bool(xp.any(active)):     # converged blocks take zero terms
            if self.k == self.A.shape[1]:
                self._grow()
            k = self.k
            Ak, Bk = self.A[:, :k], self.B[:, :k]
            r = entries(T1[i, p][:, None] + T2, tn2, ns[p][:, None] + ns[None, :])   # F_i[p_i, :]
            if k:
                r -= xp.einsum("ik,ikv->iv", Ak[i, :, p], Bk)
            used[i, p] = True
            j = xp.argmax(xp.abs(r), axis=1)
            delta = r[i, j]
            ok = active & (delta != 0)
            b = r / xp.where(ok, delta, 1.0)[:, None]
            a = entries(T1 + T2[i, j][:, None], tn2, ns[None, :] + ns[j][:, None])  # F_i[:, j_i]
            if k:
                a -= xp.einsum("ik,iku->iu", Bk[i, :, j], Ak)
            a[~ok], b[~ok] = 0.0, 0.0
            aa, bb = xp.sum(a * a, axis=1), xp.sum(b * b, axis=1)
            f2 = frob2 + aa * bb
            if k:
                f2 += 2.0 * xp.sum(xp.einsum("iku,iu->ik", Ak, a)
                                   * xp.einsum("ikv,iv->ik", Bk, b), axis=1)
            frob2 = xp.maximum(f2, aa * bb)
            self.A[:, k], self.B[:, k] = a, b
            self.k = k + 1
            small = xp.where(aa * bb <= tol * tol * frob2, small + 1, 0)
            score = xp.abs(a)
            score[used] = -1.0
            p = xp.argmax(score, axis=1)
            active &= (small < 2) & ~xp.all(used, axis=1)

    def _grow(self):
        xp, (n, m, L) = self.xp, self.A.shape
        m2 = min(L, 2 * m)
        for name in ("A", "B"):
            new = xp.zeros((n, m2, L))
            new[:, :m] = getattr(self, name)
            setattr(self, name, new)

    def logits(self, C):
        """sum_k a_ik^T C b_ik for every test pair i, shape (n,)."""
        n, k, L = self.n, self.k, self.L
        X = self.A[:, :k].reshape(n * k, L) @ C
        return self.xp.sum(X.reshape(n, k, L) * self.B[:, :k], axis=(1, 2))

    def blocks(self, idx):
        """The approximate blocks of test pairs ``idx``, (len(idx), L, L)."""
        k = self.k
        return self.xp.matmul(self.A[idx, :k].transpose(0, 2, 1), self.B[idx, :k])


def cross_logits(kernel, x, c, rtol=DEFAULT_RTOL, *, probes=4):
    """Logits at test pairs from a cross approximation of each pair's L x L kernel block.

    Parameters
    ----------
    kernel : PairKernel
        Over all L^2 ordered pairs (pair p = u L + v).
    x : array_like (n, 2d)
        Test pairs.
    c : array (L^2,)
        Coefficients over the training pairs.
    rtol : float, default DEFAULT_RTOL
        Each block's ACA stops when two consecutive terms are below ``rtol`` / 10
        of its Frobenius norm (the achieved error of the ``probes`` blocks is
        returned as ``error``).
    probes : int, default 4
        Test pairs (evenly spaced) whose whole exact block is compared with
        its approximation.

    Returns
    -------
    logits : ndarray (n,)
        NumPy; entries nearly collinear with a training pair corrected as in
        ``fastsd.kernels.pairs.Logits``.
    error : float
        The largest relative Frobenius error ||F~_i - F_i|| / ||F_i|| over the
        probed blocks (so |logit error_i| <= error_i ||F_i||_F ||C||_F).
    """
    xp = kernel.xp
    L = kernel.G.shape[0]
    lg = Logits(kernel, x)
    ns = xp.diag(kernel.G)
    C = c.reshape(L, L)
    n = lg.T1.shape[0]
    chunk = max(1, min(n, (256 << 20) // (16 * TEST_TERMS * L)))   # A and B in 256 MiB
    out, error = [], 0.0
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        blocks = _TestBlocks(kernel.backend, lg.T1[s:e], lg.T2[s:e], lg.n2[s:e], ns,
                             rtol / 10.0, kernel.kind)
        out.append(blocks.logits(C))
        if s == 0 and probes:
            idx = np.unique(np.linspace(0, e - s - 1, min(probes, e - s)).astype(np.int64))
            r = xp.asarray(idx)
            exact = kernel.backend.pair_kernel(lg.T1, r, lg.T2, r, lg.n2[r], kernel.u, kernel.v,
                                               kernel.n2, kernel.kind).reshape(len(idx), L, L)
            gap = xp.linalg.norm((blocks.blocks(r) - exact).reshape(len(idx), -1), axis=1)
            size = xp.linalg.norm(exact.reshape(len(idx), -1), axis=1)
            error = float(xp.max(gap / xp.where(size > 0, size, 1.0)))
    return lg.refine(kernel.backend.to_host(xp.concatenate(out)), c), error


@register_solver("kron", auto_rank=1)
class KronSolver(CGSolver):
    """All pairs: K as a short sum of Kronecker products plus an exact diagonal (module notes).

    Products are two GEMMs; the regression solve is ``CGSolver``'s Jacobi-
    preconditioned CG on these products; ``rows`` are formed from the factors.
    The factors are built on construction (``factorise``).

    Parameters
    ----------
    kernel : PairKernel
        Over all L^2 ordered pairs, in ``choose_pairs``'s order.
    size : SolveSize, optional
        ``kernel_tol`` (None: ``DEFAULT_RTOL``) and ``max_bytes`` (the cap on
        terms, ``max_terms``); None: the default target and no memory limit.

    Raises
    ------
    ValueError
        For a kernel over other pairs than all L^2 (naming `pairs`), or a
        ``kernel_tol`` the float64 entries cannot reach.
    SolveTooLargeError
        When the target needs more terms than ``max_terms`` allows.
    """

    dtypes = ("float64", "float32")

    @classmethod
    def memory_bytes(cls, P):
        """Bytes a term stores (16 P, P = L^2); ``record`` gives the whole store as built."""
        return 16 * P

    @classmethod
    def refusal(cls, size):
        """Needs all L^2 pairs (pairs="all"), and room for one term (``BYTES_PER_TERM`` L^2)."""
        if not size.all_pairs:
            return (f"solver='kron' needs `pairs`='all' (all L^2 ordered pairs: their kernel is a "
                    f"sum of Kronecker products over the L symbols); got a selection of "
                    f"{size.P} pairs; use solver='dense' or 'cg' with sampled or given pairs.")
        if max_terms(size.L, size.max_bytes) < 1:
            return (f"solver='kron' needs {fmt_bytes(BYTES_PER_TERM * size.P)} a Kronecker "
                    f"term while building at L = "
                    f"{size.L}, more than `max_bytes` = {fmt_bytes(size.max_bytes)}; raise "
                    f"`max_bytes`.")
        return None

    @classmethod
    def auto_refusal(cls, size):
        """"auto" takes it for all pairs with room for ``AUTO_MIN_TERMS`` terms."""
        if not size.all_pairs:
            return "the Kronecker solver needs pairs='all'"
        if max_terms(size.L, size.max_bytes) < AUTO_MIN_TERMS:
            return (f"{AUTO_MIN_TERMS} Kronecker terms need "
                    f"{fmt_bytes(AUTO_MIN_TERMS * BYTES_PER_TERM * size.P)}")
        return None

    @classmethod
    def auto_prefers(cls, size):
        """Before "dense" for all pairs where measured faster (``AUTO_FLOW_MIN_L``, ...).

        Never for kernel SGD (method "logistic_sgd"), whose batch rows are
        formed from the factors, far slower than rows of a stored kernel.
        """
        if not size.all_pairs:
            return False
        if size.method == "logistic_flow":
            return size.L >= AUTO_FLOW_MIN_L
        if size.method == "regression":
            return (size.L >= AUTO_REGRESSION_MIN_L and size.d is not None
                    and size.d >= AUTO_REGRESSION_MIN_D)
        return False

    def __init__(self, kernel, size=None, progress=False):
        super().__init__(kernel, size, progress)
        L = kernel.G.shape[0]
        P = len(kernel)
        if P != L * L or not bool(self.xp.all(kernel.u * L + kernel.v == self.xp.arange(P))):
            raise ValueError("`pairs` must be 'all' (the L^2 ordered pairs in order u L + v) "
                             "for solver='kron'.")
        rtol = DEFAULT_RTOL if size is None or size.kernel_tol is None else size.kernel_tol
        max_bytes = (1 << 62) if size is None else size.max_bytes
        with self.threads(), _progress.bar(progress, unit="term",
                                           desc=f"kron factors (L = {L})") as bar:
            self.factors = factorise(kernel, rtol, cap=max(1, max_terms(L, max_bytes)),
                                     step=bar.update,
                                     dtype="float64" if size is None else size.dtype)
        self.rtol = rtol
        self.products = self.rows_formed = self.test_pairs = 0
        self.test_error = 0.0

    def __matmul__(self, V):
        f = self.factors
        if V.ndim == 1:
            self.products += 1
            return f.apply(V)
        self.products += V.shape[1]
        return self.xp.stack([f.apply(V[:, q]) for q in range(V.shape[1])], axis=1)

    def rows(self, idx):
        """Rows of the structured kernel, formed from the factors (n, P)."""
        self.rows_formed += len(idx)
        return self.factors.rows(idx)

    def logits(self, x, c):
        """Test logits: from L = ``TEST_CROSS_MIN_L`` on by cross approximation of each test
        pair's block (``cross_logits``), below it matrix-free (exact)."""
        if self.factors.L < TEST_CROSS_MIN_L:
            return super().logits(x, c)
        with self.threads():
            f, error = cross_logits(self.kernel, x, c, self.rtol)
        self.test_pairs += len(f)
        self.test_error = max(self.test_error, error)
        return f

    def record(self):
        """kernel_bytes (the factors and the correction), terms, target and probed error."""
        f = self.factors
        return {"kernel_bytes": 2 * f.A.itemsize * f.terms * f.L * f.L + 8 * f.L * f.L, **f.info}

    def counts(self):
        """Products (vectors multiplied), kernel rows formed, test pairs evaluated and the
        largest probed relative error of their blocks, so far."""
        return {"kron_products": self.products, "kron_rows": self.rows_formed,
                "kron_test_pairs": self.test_pairs, "kron_test_block_error": self.test_error}
