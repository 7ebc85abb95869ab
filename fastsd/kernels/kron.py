"""Solver "kron": the all-pairs kernel as a short sum of Kronecker products (issue 17).

Structure
---------
With all P = L^2 ordered pairs, pair p = (u, v) at index p = u L + v (as
``fastsd.kernels.pairs.choose_pairs`` orders them), the pair kernel of App. D is

    K[(u, v), (u', v')] = ntk(x, x'),  x.x' = G[u, u'] + G[v, v'],
                                       |x|^2 = G[u, u] + G[v, v],

a function of two L x L "coordinates" of the symbol Gram G. Its rearrangement
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
   The stored P-vector ``dcorr`` = |x_p|^2 - (sum_r A_r (x) B_r)[p, p] is added
   to every product, so the diagonal (the ridge scale, the preconditioner, a
   pair's own weight) is exact; the smooth off-diagonal part is what the
   Kronecker terms carry.
4. Error probe: m exact rows of R (``probes``, m L^2 kernel entries), drawn
   uniformly without replacement (all L^2 rows when L^2 <= m, then the error
   below is exact), against the same rows of the stored operator (terms plus
   correction). The estimate of the relative Frobenius error
   e = ||K~ - K||_F / ||K||_F is sqrt(sum ||res_i||^2 / sum ||R_i||^2) over
   the probed rows; the recorded bound is its 3-standard-error upper
   confidence limit (ratio estimator, finite-population correction), a
   statistical bound, exact when every row is probed. Should the bound exceed
   ``rtol``, ACA continues from the worst probed rows with a tenfold tighter
   stopping rule and new probes are drawn.

"Exact" means the kernel entries the dense solver stores (``PairKernel.rows``:
the closed form of ``_reference`` / ``_cpu`` on Gram entries). Since
||(K~ - K) c|| <= ||K~ - K||_F ||c||, every product's error is at most
e ||K||_F ||c||.

A product count (``products``: vectors multiplied) and kernel-row count
(``rows``) are kept and reported by ``counts()``.
"""
import math

import numpy as np

from .._memory import fmt_bytes
from .solvers import CGSolver, SolveTooLargeError, register_solver

#: Default relative Frobenius error target of the structured kernel: test logits then
#: agree with solver="dense" to about 1e-6 relative (tests/test_kernels_kron.py).
DEFAULT_RTOL = 1e-10
#: Exact rows of R drawn to measure the error (all rows when L^2 is smaller).
PROBES = 256
#: Standard errors in the upper confidence limit of the probed error.
Z_BOUND = 3.0
#: Terms solver="auto" wants room for before it takes "kron".
AUTO_MIN_TERMS = 64
#: Float64 rounding allowance added to the recorded bound (products of O(1) factors).
ROUNDING = 1e-14
#: Bytes a term per pair while building (two factor sets and their QR copies).
BYTES_PER_TERM = 32
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
        block = self.kernel.backend.pair_ntk(G, xp.full(L, u), G, ar, n[u] + n,
                                             xp.full(L, up), ar, n[up] + n)
        return block.reshape(-1)


class _ACA:
    """Adaptive cross approximation with partial pivoting of the symmetric R, resumable."""

    def __init__(self, rows, cap):
        xp = rows.xp
        self.rows, self.xp, self.cap = rows, xp, cap
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

        Returns False when the cap on terms is reached first (or the rows run out).
        """
        xp = self.xp
        A, B = self.A, self.B
        i, small = int(start), 0
        while True:
            if self.used.all():
                return True                     # every row is interpolated: exact
            if self.used[i]:
                i = int(np.flatnonzero(~self.used)[0])
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
            if delta == 0.0:                    # the row is already exact
                i = int(np.flatnonzero(~self.used)[0]) if not self.used.all() else i
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
            small = small + 1 if aa * bb <= tol * tol * self.frob2 else 0
            if small >= 2:
                return True
            score = xp.abs(a)
            score[xp.asarray(self.used)] = -1.0
            i = int(xp.argmax(score))


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
    """K ~ sum_r A_r (x) B_r + diag(dcorr) over all L^2 pairs, built by ``factorise``.

    Attributes
    ----------
    A, B : arrays (R, L, L), float64, of the backend
        The Kronecker factors.
    dcorr : array (L^2,)
        The diagonal correction (the diagonal of K~ is exact).
    L, terms : int
    info : dict
        How it was built and its measured error (see ``factorise``).
    """

    def __init__(self, xp, A, B, dcorr, info):
        self.xp = xp
        self.terms, self.L = A.shape[0], A.shape[1]
        self.A, self.B, self.dcorr, self.info = A, B, dcorr, info
        R, L = self.terms, self.L
        # A_r[u, u'] at Av[(r, u), u'] (a view); B_r[v, v'] at Bh[v, (r, v')]
        self._Av = A.reshape(R * L, L)
        self._Bh = xp.ascontiguousarray(B.transpose(1, 0, 2).reshape(L, R * L))

    def apply(self, c):
        """sum_r A_r C B_r^T + dcorr * c for one vector c (L^2,); two GEMMs."""
        R, L = self.terms, self.L
        X = self._Av @ c.reshape(L, L)                      # (A_r C)[u, v'] at [(r, u), v']
        Xh = X.reshape(R, L, L).transpose(1, 0, 2).reshape(L, R * L)
        return (Xh @ self._Bh.T).reshape(-1) + self.dcorr * c

    def rows(self, idx):
        """Rows K~[idx] (n, L^2): sum_r A_r[u, :] (x) B_r[v, :] plus the correction."""
        xp = self.xp
        L = self.L
        idx = xp.asarray(idx).reshape(-1)
        u, v = idx // L, idx % L
        Au = self.A[:, u, :].transpose(1, 2, 0)             # (n, L, R)
        Bv = self.B[:, v, :].transpose(1, 0, 2)             # (n, R, L)
        out = xp.matmul(Au, Bv).reshape(len(idx), L * L)
        out[xp.arange(len(idx)), idx] += self.dcorr[idx]
        return out

    def rows_of_R(self, idx):
        """Rows ``idx`` (host ints) of the stored operator's rearrangement, (len(idx), L^2)."""
        xp, L = self.xp, self.L
        idx = np.asarray(idx)
        u, up = np.divmod(idx, L)
        out = self.A.reshape(self.terms, -1)[:, xp.asarray(idx)].T @ self.B.reshape(self.terms, -1)
        for q in np.flatnonzero(u == up):               # entries (v, v): K~[(u,v),(u,v)]
            out[q, :: L + 1] += self.dcorr[u[q] * L:(u[q] + 1) * L]
        return out


def factorise(kernel, rtol=DEFAULT_RTOL, *, cap, probes=PROBES, seed=0):
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

    Returns
    -------
    KronFactors

    Raises
    ------
    SolveTooLargeError
        When ``rtol`` needs more than ``cap`` terms; the message gives both.
    """
    xp = kernel.xp
    rows = _Rows(kernel)
    L = rows.L
    M = L * L
    rng = np.random.default_rng(seed)
    aca = _ACA(rows, cap)
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
        A, B = _recompress(xp, aca.A[:aca.k], aca.B[:aca.k], rtol / 2.0)
        terms = A.shape[0]
        A3, B3 = A.reshape(terms, L, L), B.reshape(terms, L, L)
        kdiag = (A[:, diag].T @ B[:, diag]).reshape(-1)     # K~[(u,v),(u,v)] = sum A_r[u,u] B_r[v,v]
        factors = KronFactors(xp, A3, B3, kernel.n2 - kdiag, {})
        exact = M <= probes
        idx = np.arange(M) if exact else rng.choice(M, size=probes, replace=False)
        err2, tot2 = _probe(rows, factors, idx)
        estimate, bound = _bound(err2, tot2, M, exact)
        if bound <= rtol or aca.used.all():
            break
        pivot, tol = int(idx[int(np.argmax(err2))]), tol / 10.0
    else:
        raise ValueError(f"`kernel_tol` = {rtol:g} is not reached by solver='kron' at L = {L} "
                         f"within {cap} terms (probed error bound {bound:.2e} after "
                         f"{aca.k} cross-approximation terms): float64 kernel entries are "
                         f"exact to about 1e-16 relative; use a larger `kernel_tol`.")
    factors.info = {
        "kron_terms": terms, "kron_tol": rtol, "kron_error_bound": bound,
        "kron_error_estimate": estimate, "kron_error_probed_rows": int(len(idx)),
        "kron_error_exact": bool(exact), "kron_aca_terms": aca.k, "kron_build_rows": rows.count}
    return factors


def _probe(rows, factors, idx):
    """Squared residual and squared norm of the exact rows ``idx`` of R, in 64 MiB chunks."""
    M = rows.L * rows.L
    chunk = max(1, (64 << 20) // (8 * M))
    err2, tot2 = np.empty(len(idx)), np.empty(len(idx))
    for s in range(0, len(idx), chunk):
        part = idx[s:s + chunk]
        approx = factors.rows_of_R(part)
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


@register_solver("kron", auto_rank=1)
class KronSolver(CGSolver):
    """All pairs: K as a short sum of Kronecker products plus an exact diagonal (module notes).

    Products are two GEMMs; the regression solve is ``CGSolver``'s Jacobi-
    preconditioned CG on these products; ``rows`` are formed from the factors.
    """

    @classmethod
    def memory_bytes(cls, P):
        """The least store: 16 L^2 bytes per term, here for one term (the built count is
        recorded by ``record``)."""
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

    def __init__(self, kernel, size=None):
        super().__init__(kernel, size)
        L = kernel.G.shape[0]
        P = len(kernel)
        if P != L * L or not bool(self.xp.all(kernel.u * L + kernel.v == self.xp.arange(P))):
            raise ValueError("`pairs` must be 'all' (the L^2 ordered pairs in order u L + v) "
                             "for solver='kron'.")
        rtol = DEFAULT_RTOL if size is None or size.kernel_tol is None else size.kernel_tol
        max_bytes = (1 << 62) if size is None else size.max_bytes
        with self.threads():
            self.factors = factorise(kernel, rtol, cap=max(1, max_terms(L, max_bytes)))
        self.products = self.rows_formed = 0

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

    def record(self):
        """kernel_bytes (the factors and the correction), terms, target and probed error."""
        f = self.factors
        return {"kernel_bytes": 16 * f.terms * f.L * f.L + 8 * f.L * f.L, **f.info}

    def counts(self):
        """Products (vectors multiplied) and kernel rows formed, so far."""
        return {"kron_products": self.products, "kron_rows": self.rows_formed}
