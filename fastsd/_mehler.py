"""Compiled parts of the Hermite (Mehler) series of an activation's kernels
(``fastsd.activations``).

``hermite_series`` evaluates k(x, y) = sum_n rho^n F_n(|x|) G_n(|y|) entry by entry. Its two
costs are the coefficients F_n(s) = E[f(s z) h_n(z)] (one-dimensional Gauss-Hermite sums, once
a distinct norm s) and the sums over n (once an entry). ``SeriesTable`` keeps the coefficients
of every norm it has met, each computed from that norm alone (``project``: the sums over the
nodes in a fixed order, in compiled code, never BLAS), so an entry's value does not depend on
the other norms of a call, on the blocks a caller splits its entries into, on what the table
held before or on the thread count. ``series_entries`` sums an entry's series from n = 0 and
stops once the Cauchy-Schwarz bound on the rest, |rho|^(n + 1) sqrt(R_n(|x|) R_n(|y|)) with
R_n(s) = E[f(s z)^2] - sum_{j <= n} F_j(s)^2, is below ``STOP_TOL`` (1 + |x||y|): below the
rounding of the entry, so that the sum is the whole series' to rounding in O(log(tol) /
log|rho|) terms an entry (about 16 at the |rho| ~ 0.1 of fresh symbols in d = 64) where the
series' last term would take ``SERIES_TERMS``. An entry whose bound is still above the
series' tolerance after every term, or whose |rho| is 1 to rounding, is marked for the
caller's quadrature.
"""
import numba as nb
import numpy as np

from . import _jitcache

#: The sum of an entry stops once the bound on its rest is below this, relative to
#: 1 + |x||y|: below the rounding of the entry (float64's 2^-53 = 1.1e-16, of entries of
#: about that size).
STOP_TOL = 2.0 ** -56
#: Entry states of ``series_entries``.
SUMMED, FAR, COLLINEAR = 0, 1, 2
#: Rows of values held at once by ``SeriesTable`` while it computes coefficients.
_ROWS = 1024


@_jitcache.njit(parallel=True)
def project(values, weights, HT, coef, square):
    """coef[i, n] = sum_j values[i, j] weights[j] HT[j, n]; square[i] = sum_j values[i, j]^2
    weights[j]: row i's one-dimensional Gauss-Hermite sums, over j in order."""
    N, q = values.shape
    T = HT.shape[1]
    for i in nb.prange(N):
        s = 0.0
        for n in range(T):
            coef[i, n] = 0.0
        for j in range(q):
            fw = values[i, j] * weights[j]
            s += fw * values[i, j]
            for n in range(T):
                coef[i, n] += fw * HT[j, n]
        square[i] = s


@_jitcache.njit(parallel=True)
def series_entries(dot, ir, ic, norms, C0, C1, Q, stop, far, k0, k1, state):
    """k0, k1 (n, k) of the entries with dot products ``dot`` (n, k) and the table rows ``ir``,
    ``ic`` (n, k, int64, broadcast views allowed) of their two inputs' norms.

    C0, C1 (N, T): the coefficients of sigma' and sigma by norm; Q (N, T) the larger square
    root of their rests R_n (so that |rho|^(n + 1) Q[i, n] Q[j, n] bounds both sums' rests).
    ``state`` (n, k) out: ``SUMMED``, ``FAR`` (the bound still above ``far`` (1 + |x||y|)
    after T terms) or ``COLLINEAR`` (|rho| = 1 to rounding, not summed).
    """
    n, k = dot.shape
    T = C0.shape[1]
    line = 1.0 - 4.0 * 2.220446049250313e-16
    for a in nb.prange(n):
        for b in range(k):
            i = ir[a, b]
            j = ic[a, b]
            nn = norms[i] * norms[j]
            rho = 0.0
            if nn > 0.0:
                rho = min(1.0, max(-1.0, dot[a, b] / nn))
            if abs(rho) >= line:
                k0[a, b] = 0.0
                k1[a, b] = 0.0
                state[a, b] = COLLINEAR
                continue
            scale = 1.0 + nn
            s0 = 0.0
            s1 = 0.0
            p = 1.0
            bound = 0.0
            for t in range(T):
                s0 += p * C0[i, t] * C0[j, t]
                s1 += p * C1[i, t] * C1[j, t]
                p *= rho
                bound = abs(p) * (Q[i, t] * Q[j, t])
                if bound <= stop * scale:
                    break
            k0[a, b] = s0
            k1[a, b] = s1
            state[a, b] = FAR if bound > far * scale else SUMMED


class SeriesTable:
    """The Hermite coefficients of sigma' and sigma at every norm met, grown as needed.

    Parameters
    ----------
    act : fastsd.activations.Activation
    terms : int
        The series' last degree (``fastsd.activations.SERIES_TERMS``).
    points : int
        Gauss-Hermite nodes: ``4 * points`` for the coefficients, ``3 * points`` to check
        them, both doubled for a norm whose check fails (``coefficients``).
    coefficients : callable
        ``coefficients(act, f, norms, terms, points) -> (coef, rest)``, each (N, terms + 1),
        rest[:, n] = R_n: ``fastsd.activations``' (its adaptive nodes, its error naming
        ``points``).
    """

    def __init__(self, act, terms, points, coefficients):
        self.act, self.terms, self.points = act, terms, points
        self._coefficients = coefficients
        self.norms = np.empty(0)
        T = terms + 1
        self.C0, self.C1, self.Q = (np.empty((0, T)) for _ in range(3))

    def rows(self, *norms):
        """Table rows of each array of ``norms`` (any shapes, float64 >= 0), adding the norms
        not held: a tuple of int64 arrays of those shapes (valid until the next call, which
        may add rows)."""
        norms = [np.asarray(n, dtype=np.float64) for n in norms]
        new = np.setdiff1d(np.unique(np.concatenate([n.reshape(-1) for n in norms])),
                           self.norms, assume_unique=True)
        if new.size:
            parts = [[], [], []]
            for s in range(0, new.size, _ROWS):
                chunk = new[s:s + _ROWS]
                (c0, r0), (c1, r1) = (self._coefficients(self.act, f, chunk, self.terms,
                                                         self.points)
                                      for f in (self.act.derivative, self.act))
                for part, a in zip(parts, (c0, c1, np.sqrt(np.maximum(r0, r1)))):
                    part.append(a)
            merged = np.concatenate([self.norms, new])
            order = np.argsort(merged, kind="stable")
            self.norms = merged[order]
            for name, part in zip(("C0", "C1", "Q"), parts):
                setattr(self, name, np.concatenate([getattr(self, name), *part])[order])
        return tuple(np.searchsorted(self.norms, n) for n in norms)

    def entries(self, dot, ir, ic, far):
        """``series_entries`` of ``dot`` (n, k) at table rows ``ir``, ``ic`` (broadcast to
        (n, k)): (k0, k1, state), each (n, k)."""
        dot = np.ascontiguousarray(dot, dtype=np.float64)
        ir, ic = (np.broadcast_to(np.asarray(r, dtype=np.int64), dot.shape) for r in (ir, ic))
        k0, k1 = np.empty(dot.shape), np.empty(dot.shape)
        state = np.empty(dot.shape, dtype=np.int8)
        series_entries(dot, ir, ic, self.norms, self.C0, self.C1, self.Q, STOP_TOL, far, k0,
                       k1, state)
        return k0, k1, state


def cumulative_rest(coef, square):
    """sqrt-free rests R_n = square - sum_{j <= n} coef_j^2 (>= 0), (N, T) from coef (N, T)
    and square (N,): the sums in order."""
    return np.maximum(square[:, None] - np.cumsum(coef * coef, axis=1), 0.0)


__all__ = ["COLLINEAR", "FAR", "STOP_TOL", "SUMMED", "SeriesTable", "cumulative_rest", "project",
           "series_entries"]
