"""Activations as one object each: the function, its derivative and its infinite-width kernels.

An ``Activation`` holds sigma and sigma' written once in NumPy that Numba compiles (``fn``,
``grad``: they take arrays in NumPy and scalars in compiled code), and the two expectations
the lazy limit needs (App. D), over w ~ N(0, I) with (u, v) = (w.x, w.y):

    k1(x, y) = E[sigma(u) sigma(v)]        (the NNGP kernel: the readout alone)
    k0(x, y) = E[sigma'(u) sigma'(v)]
    ntk(x, y) = (x.y) k0 + k1              (both layers trained)

(u, v) is a centred Gaussian pair of variances |x|^2, |y|^2 and covariance x.y, so each
kernel entry is a function of (|x|^2, |y|^2, x.y). Closed forms where they exist: ReLU's
arc-cosine kernels (Cho & Saul 2009) from Gram entries (``fastsd._arccos``; ``fastsd.kernels``
agrees to rounding, refining near-collinear pairs from their vectors), the family
a relu(u) + b relu(-u) (leaky ReLU, abs) from them, erf's (Williams 1997); elsewhere
(tanh, GELU, sigmoid, softplus, a user's function) Mehler's Hermite series in rho
(``hermite_series``: one-dimensional Gauss-Hermite coefficients once a norm, O(terms) an
entry), with its remainder bounded entry by entry; the entries it cannot bound (|rho| near
1) by Gauss-Hermite quadrature of the two-dimensional expectation (``gauss_hermite``,
``QUADRATURE_POINTS`` nodes a dimension) or, at rho = +-1, of the one-dimensional one. Each
sum is checked against fewer nodes (an error where they disagree, never a silently rough
kernel).

Scaling: the network's hidden unit is sigma(sqrt(m) w_i.x) / sqrt(m) with w_i ~ N(0, I/m)
(``fastsd.mlp.model``), so that its pre-activation sqrt(m) w_i.x is the limit's u for
every sigma; for ReLU this is relu(w_i.x) exactly (degree-1 homogeneity), the form the
paper's network and every stored record use. The output scale 1/(gamma sqrt(d)) (Eq. 1)
multiplies the tangent kernel by 1/(gamma^2 d), as for ReLU.
"""
import functools
import math
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ._arccos import kernels_from_gram
from ._validation import check_array, check_int

#: Gauss-Hermite nodes a dimension of the quadrature kernels (``gauss_hermite``).
QUADRATURE_POINTS = 128
#: The most a quadrature kernel entry may move, relative to 1 + |x||y|, between three
#: quarters of its nodes and all of them (``gauss_hermite``'s check): it bounds the error of
#: the sum on fewer nodes; the sum on all of them, converging root-exponentially, is closer
#: (tanh's at |x|^2 = |y|^2 = 2 and rho = 0.5: 2e-8 on 96 nodes, 7e-10 on 128; at rho = 1,
#: its hardest, 5e-8 on 128).
QUADRATURE_TOL = 1e-5
#: Terms of the Hermite (Mehler) series of the kernels without a closed form
#: (``hermite_series``), and the most an entry's remainder may be, relative to 1 + |x||y|,
#: for the series to give it (else two-dimensional quadrature, ``gauss_hermite``).
SERIES_TERMS = 128
SERIES_TOL = 1e-10
#: The most the series' coefficients may move, in the 2-norm over n relative to
#: E[f(|x| z)^2]^1/2, between ``3 * points`` and ``4 * points`` one-dimensional nodes (an
#: entry moves by at most about twice that, relative to its scale).
COEFFICIENT_TOL = 1e-8
#: Bytes of the quadrature's values held at once.
_QUAD_BYTES = 32 << 20
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@dataclass(frozen=True)
class Activation:
    """An elementwise activation sigma of the finite networks and their infinite-width limit.

    Parameters
    ----------
    name : str
        Its name in records, the CLI and errors.
    fn, grad : callable
        sigma and its derivative sigma' (at a kink, either one-sided value), written in
        NumPy that Numba compiles: ``numba.njit`` of either compiles for a float64 scalar,
        and, unless ``array_fn`` and ``array_grad`` are given, called on a float64 array
        each returns the array of its values.
    closed : callable, optional
        ``closed(dot, nx2, ny2) -> (k0, k1)`` in closed form (float64 arrays that broadcast);
        None: Gauss-Hermite quadrature of ``fn`` and ``grad``.
    array_fn, array_grad : callable, optional
        NumPy-only forms of ``fn`` and ``grad`` for arrays where the compiled form calls a
        scalar function (``math.erf``); default ``fn`` and ``grad``.
    homogeneous : bool, default False
        sigma(c u) = c sigma(u) for every c > 0 (the a relu(u) + b relu(-u) family): the
        finite network's hidden unit sigma(sqrt(m) w.x) / sqrt(m) is then sigma(w.x), and the
        kernels take it so, without the two roundings of the scaling.
    delta : callable, optional
        ``delta(u, du) -> sigma(u + du) - sigma(u)`` for float64 scalars, Numba-compilable,
        formed without cancellation (the CPU kernels' centred output, where du is ~1e-7 of
        u in the lazy regime); None: ``fastsd.mlp._cpu_kernels``' default, the two-point
        Gauss-Legendre rule on ``grad`` for small du (exact to rounding for a smooth sigma;
        within du times the jump of sigma' when a kink lies between u and u + du).

    Notes
    -----
    ``nngp``, ``ntk`` and ``kernels`` implement App. D's kernels for sigma (Cho & Saul
    2009 for ReLU); two of them compare equal when their names are.
    """

    name: str
    fn: Callable = field(compare=False)
    grad: Callable = field(compare=False)
    closed: Optional[Callable] = field(default=None, compare=False)
    array_fn: Optional[Callable] = field(default=None, compare=False)
    array_grad: Optional[Callable] = field(default=None, compare=False)
    homogeneous: bool = field(default=False, compare=False)
    delta: Optional[Callable] = field(default=None, compare=False)

    def __call__(self, h):
        """sigma(h) of a float64 array."""
        return (self.array_fn or self.fn)(h)

    def derivative(self, h):
        """sigma'(h) of a float64 array."""
        return (self.array_grad or self.grad)(h)

    def unit(self, h):
        """The finite network's hidden units sigma(sqrt(m) h) / sqrt(m) of preactivations
        h = w.x, an (..., m) float64 array of m units (sigma(h) itself where
        ``homogeneous``)."""
        if self.homogeneous:
            return self(h)
        c = math.sqrt(h.shape[-1])
        return self(c * h) / c

    def unit_scale(self, m):
        """The scale c of the finite network's hidden unit sigma(c h) / c, h = w.x, for m
        hidden units: sqrt(m), or 1.0 where ``homogeneous`` (the unit is then sigma(h)).

        Parameters
        ----------
        m : int
            The number of hidden units.

        Returns
        -------
        float
        """
        return 1.0 if self.homogeneous else math.sqrt(m)

    def unit_derivative(self, h):
        """d unit / dh = sigma'(sqrt(m) h) of an (..., m) float64 array, as ``unit``."""
        return self.derivative(h if self.homogeneous else math.sqrt(h.shape[-1]) * h)

    def kernels_from_gram(self, dot, nx2, ny2, points=QUADRATURE_POINTS, table=None):
        """(k0, k1) from x.y and the squared norms (float64 arrays that broadcast); closed
        forms, else ``hermite_series`` (its coefficients on ``points`` nodes, kept in
        ``table`` where given: ``series_table``)."""
        if self.closed is not None:
            dot, nx2, ny2 = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64)
                                                  for a in (dot, nx2, ny2)))
            return self.closed(dot, nx2, ny2)
        return hermite_series(self, dot, nx2, ny2, points=points, table=table)

    def series_table(self, points=QUADRATURE_POINTS):
        """A ``fastsd._mehler.SeriesTable`` for ``kernels_from_gram``'s series (its
        coefficients kept between calls, each norm's computed once); None for a closed
        form."""
        if self.closed is not None:
            return None
        from ._mehler import SeriesTable

        return SeriesTable(self, SERIES_TERMS, points, _adaptive_coefficients)

    def kernels(self, X, Y, points=QUADRATURE_POINTS):
        """k0, k1 and ntk = (x.y) k0 + k1 between the rows of X (n, p) and Y (k, p); each
        (n, k) float64. ntk is the tangent kernel of the two-layer network at infinite width
        (App. D), before the output scale's 1/(gamma^2 d); k1 the NNGP kernel (the readout
        alone). Without a closed form: ``hermite_series``, its coefficients on ``points``
        nodes.

        Raises
        ------
        ValueError
            For X or Y not finite 2-d arrays of the same width; as ``gauss_hermite``.
        """
        X = check_array("X", X, ndim=2)
        Y = check_array("Y", Y, shape=(None, X.shape[1]))
        dot = X @ Y.T
        k0, k1 = self.kernels_from_gram(dot, np.einsum("ij,ij->i", X, X)[:, None],
                                        np.einsum("ij,ij->i", Y, Y)[None, :], points)
        return k0, k1, dot * k0 + k1

    def nngp(self, X, Y, points=QUADRATURE_POINTS):
        """k1(x, y) = E[sigma(w.x) sigma(w.y)], w ~ N(0, I), between the rows of X (n, p)
        and Y (k, p): (n, k) float64. As ``kernels``."""
        return self.kernels(X, Y, points)[1]

    def ntk(self, X, Y, points=QUADRATURE_POINTS):
        """(x.y) k0 + k1 between the rows of X (n, p) and Y (k, p): (n, k) float64. As
        ``kernels``."""
        return self.kernels(X, Y, points)[2]


def gauss_hermite(act, dot, nx2, ny2, points=QUADRATURE_POINTS):
    """(k0, k1) of ``act`` by Gauss-Hermite quadrature of E over the Gaussian pair (u, v).

    u = |x| z1 and v = |y| (rho z1 + sqrt(1 - rho^2) z2) with z1, z2 independent N(0, 1)
    and rho = x.y / (|x||y|), ``points`` probabilists' Hermite nodes a dimension (an
    integer >= 8); entries in blocks of at most ``_QUAD_BYTES``. The same sums on
    ``3 * points // 4`` nodes check it: each entry must agree to ``QUADRATURE_TOL``
    (1 + |x||y|).
    Other arguments as ``Activation.kernels_from_gram``.

    Raises
    ------
    ValueError
        Naming ``points``, for fewer than 8, or where the check fails (the error grows with
        the norms, with rho and with how sharply ``act`` bends: tanh's kernels at |x|^2 = 2
        are within 5e-8 on 128 points (1e-9 at rho = 0.5), at |x|^2 = 6 within 4e-6).
    """
    points = check_int("points", points, 8)
    dot, nx2, ny2 = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64)
                                          for a in (dot, nx2, ny2)))
    nx, ny = np.sqrt(nx2), np.sqrt(ny2)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = np.where(nx * ny > 0, dot / (nx * ny), 0.0)
    flat = [a.reshape(-1) for a in (nx, ny, np.clip(rho, -1.0, 1.0))]
    k0, k1 = _quadrature(act, *flat, points)
    c0, c1 = _quadrature(act, *flat, 3 * points // 4)
    moved = np.maximum(np.abs(k0 - c0), np.abs(k1 - c1)) / (1.0 + flat[0] * flat[1])
    if moved.size and not moved.max() <= QUADRATURE_TOL:
        e = int(np.argmax(np.where(np.isnan(moved), np.inf, moved)))
        raise ValueError(
            f"`points` {points} are too few for the Gauss-Hermite quadrature of the "
            f"{act.name!r} kernels at |x|^2 = {flat[0][e] ** 2:.4g}, |y|^2 = "
            f"{flat[1][e] ** 2:.4g}: the sums moved {moved[e]:.1e} (relative to 1 + |x||y|) "
            f"from {3 * points // 4} points, above {QUADRATURE_TOL:g}; give more points (the "
            f"error falls as they grow and as the inputs' norms fall).")
    return k0.reshape(dot.shape), k1.reshape(dot.shape)


def hermite_series(act, dot, nx2, ny2, terms=SERIES_TERMS, points=QUADRATURE_POINTS,
                   table=None):
    """(k0, k1) of ``act`` by the Hermite (Mehler) series of the Gaussian pair's expectations.

    With h_n the normalised probabilists' Hermite polynomials (E[h_n(z) h_k(z)] = [n = k])
    and rho = x.y / (|x||y|), Mehler's formula gives

        E[f(|x| z1) g(|y| (rho z1 + sqrt(1 - rho^2) z2))] = sum_n rho^n F_n(|x|) G_n(|y|),
        F_n(s) = E[f(s z) h_n(z)],

    so k1 (f = g = sigma) and k0 (sigma') are sums of at most ``terms`` + 1 products of
    coefficients, each a one-dimensional Gauss-Hermite sum on ``4 * points`` nodes, once a
    distinct norm (``fastsd._mehler.SeriesTable``): O(terms) an entry at most where
    ``gauss_hermite`` takes O(points^2). The remainder after term n is at most
    |rho|^(n + 1) sqrt(R_n(|x|) R_n(|y|)), R_n(s) = E[f(s z)^2] - sum_{j <= n} F_j(s)^2
    (Cauchy-Schwarz): an entry's sum stops once that is below rounding
    (``fastsd._mehler.STOP_TOL``), and where it still exceeds ``SERIES_TOL`` (1 + |x||y|)
    after every term (pairs at |rho| near 1, whose series converge slowest) the entry is
    ``gauss_hermite``'s; at rho = +-1 (to rounding) it is always a one-dimensional sum's.
    The coefficients on ``3 * points`` nodes check them, as ``gauss_hermite``'s check. Each
    entry depends on its own (x.y, |x|, |y|) only: not on the other entries of the call nor
    on the thread count.
    Other arguments as ``Activation.kernels_from_gram``; ``table``, a
    ``fastsd._mehler.SeriesTable`` of ``act``, ``terms`` and ``points`` to keep the
    coefficients in between calls (a new one by default).

    Raises
    ------
    ValueError
        Naming ``points``, where the coefficients of a norm on fewer nodes move by more than
        ``COEFFICIENT_TOL`` E[f(|x| z)^2]^1/2 (in the 2-norm over n) even on 8 times
        ``points`` (a norm's nodes are doubled until they hold: the norm too large for them;
        tanh's at |x|^2 = 2 hold on 128 points, at |x|^2 up to 23 on 512), or as
        ``gauss_hermite`` for the entries it gives; naming ``terms`` for fewer than 1.
    """
    from ._mehler import COLLINEAR, FAR, SeriesTable

    terms = check_int("terms", terms, 1)
    points = check_int("points", points, 8)
    if table is None:
        table = SeriesTable(act, terms, points, _adaptive_coefficients)
    dot, nx2, ny2 = (np.asarray(a, dtype=np.float64) for a in (dot, nx2, ny2))
    shape = np.broadcast_shapes(dot.shape, nx2.shape, ny2.shape)
    ir, ic = table.rows(np.sqrt(nx2), np.sqrt(ny2))

    def flat(a):        # (rows, columns): the entries' own shape when 2-d
        return np.broadcast_to(a, shape).reshape(-1, shape[-1] if shape else 1)

    dot2, ir2, ic2 = flat(dot), flat(ir), flat(ic)
    k0, k1, state = table.entries(dot2, ir2, ic2, SERIES_TOL)
    line = state == COLLINEAR
    if line.any():  # a pair with itself: v = +-(|y|/|x|) u, a one-dimensional sum
        nx, ny = table.norms[ir2[line]], table.norms[ic2[line]]
        k0[line], k1[line] = _collinear(act, nx, ny * np.sign(dot2[line]), points)
    far = state == FAR
    if far.any():
        k0[far], k1[far] = gauss_hermite(act, dot2[far], flat(nx2)[far], flat(ny2)[far],
                                         points)
    return k0.reshape(shape), k1.reshape(shape)


def _collinear(act, a, b, points):
    """(k0, k1) at rho = +-1: E[f(a z) f(b z)] for f = sigma', sigma (b signed), on
    ``4 * points`` one-dimensional Gauss-Hermite nodes."""
    from scipy.special import roots_hermitenorm     # slow to import: only when used

    z, w = roots_hermitenorm(4 * points)
    w = w / math.sqrt(2.0 * math.pi)
    u, v = a[:, None] * z[None, :], b[:, None] * z[None, :]
    return ((act.derivative(u) * act.derivative(v)) @ w, (act(u) * act(v)) @ w)


#: ``hermite_series`` doubles its nodes up to this many times ``points`` where the
#: coefficients' check fails (large norms: the one-dimensional sums are cheap).
_MOST_DOUBLINGS = 3


def _adaptive_coefficients(act, f, norms, terms, points):
    """Each norm's ``_hermite_coefficients`` on ``points``, else on twice as many, ... up to
    ``2 ** _MOST_DOUBLINGS`` times (each norm's nodes its own: its coefficients do not depend
    on the others'); a ValueError naming ``points`` where none holds. Returns (coef (N, T),
    rest (N, T)), rest[:, n] = R_n (``hermite_series``)."""
    coef, rest = np.empty((norms.size, terms + 1)), np.empty((norms.size, terms + 1))
    todo = np.arange(norms.size)
    for k in range(_MOST_DOUBLINGS + 1):
        c, r, moved = _hermite_coefficients(f, norms[todo], terms, points << k)
        held = moved <= COEFFICIENT_TOL
        coef[todo[held]], rest[todo[held]] = c[held], r[held]
        todo, moved = todo[~held], moved[~held]
        if not todo.size:
            return coef, rest
    e = int(np.argmax(np.where(np.isnan(moved), np.inf, moved)))
    q = points << _MOST_DOUBLINGS
    raise ValueError(
        f"`points` {points} are too few for the Hermite coefficients of the {act.name!r} "
        f"kernels at |x|^2 = {norms[todo[e]] ** 2:.4g}, even doubled to {q}: on {4 * q} nodes "
        f"they moved {moved[e]:.1e} (relative to E[f(|x| z)^2]^1/2) from {3 * q}, above "
        f"{COEFFICIENT_TOL:g}; give more points (the error falls as they grow and as the "
        f"inputs' norms fall).")


@functools.lru_cache(maxsize=16)
def _hermite_nodes(q, terms):
    """q probabilists' Gauss-Hermite nodes, their weights (summing to 1) and the normalised
    Hermite polynomials h_0 .. h_terms at them, (q, terms + 1)."""
    from scipy.special import roots_hermitenorm     # slow to import: only when used

    z, w = roots_hermitenorm(q)
    w = w / math.sqrt(2.0 * math.pi)
    H = np.empty((terms + 1, q))                    # normalised Hermite recursion
    H[0] = 1.0
    if terms:
        H[1] = z
    for n in range(1, terms):
        H[n + 1] = (z * H[n] - math.sqrt(n) * H[n - 1]) / math.sqrt(n + 1)
    HT = np.ascontiguousarray(H.T)
    for a in (z, w, HT):
        a.flags.writeable = False
    return z, w, HT


def _hermite_coefficients(f, norms, terms, points):
    """F_n(s) = E[f(s z) h_n(z)], n = 0 .. ``terms``, for each s of ``norms`` (rows), the
    rests R_n(s) = E[f(s z)^2] - sum_{j <= n} F_j(s)^2 (>= 0), on ``4 * points``
    Gauss-Hermite nodes, and how far they moved from ``3 * points`` nodes
    (``COEFFICIENT_TOL``'s measure). Each row's sums are its own, in a fixed order
    (``fastsd._mehler.project``)."""
    from ._mehler import cumulative_rest, project

    got = []
    for q in (4 * points, 3 * points):          # one-dimensional sums: cheap, many nodes
        z, w, HT = _hermite_nodes(q, terms)
        coef, square = np.empty((norms.size, terms + 1)), np.empty(norms.size)
        project(np.ascontiguousarray(f(norms[:, None] * z[None, :])), w, HT, coef, square)
        got.append((coef, square))
    (coef, square), (check, _) = got
    # an entry moves by at most about |dF| |G| + |F| |dG|, |F| = (E f^2)^1/2 (Cauchy-Schwarz)
    moved = np.sqrt(((coef - check) ** 2).sum(axis=1) / np.maximum(square, 1e-300))
    return coef, cumulative_rest(coef, square), moved


def _quadrature(act, nx, ny, rho, points):
    """``gauss_hermite``'s sums on ``points`` nodes for the flat entries (|x|, |y|, rho)."""
    from scipy.special import roots_hermitenorm     # slow to import: only when used

    z, w = roots_hermitenorm(points)
    ww = np.outer(w, w) / (2.0 * math.pi)
    k0, k1 = np.empty(nx.size), np.empty(nx.size)
    step = max(1, _QUAD_BYTES // (8 * 3 * points * points))
    for s in range(0, k0.size, step):
        a, b, r = (f[s:s + step, None, None] for f in (nx, ny, rho))
        u = a * z[None, :, None]                                    # (e, z1, 1)
        v = b * (r * z[None, :, None] + np.sqrt((1.0 - r) * (1.0 + r)) * z[None, None, :])
        k1[s:s + step] = np.einsum("eij,ij->e", act(u) * act(v), ww)
        k0[s:s + step] = np.einsum("eij,ij->e", act.derivative(u) * act.derivative(v), ww)
    return k0, k1


def _relu_closed(dot, nx2, ny2):
    k0, k1, _ = kernels_from_gram(dot, nx2, ny2)
    return k0, k1


def abrelu(a, b, name=None):
    """sigma(u) = a relu(u) + b relu(-u), with its closed-form kernels: leaky ReLU is
    ``abrelu(1, -alpha)``, abs ``abrelu(1, 1)``, ReLU ``abrelu(1, 0)``.

    k1 = (a^2 + b^2) k1_relu(x, y) + 2ab k1_relu(x, -y) and
    k0 = (a^2 + b^2) k0_relu(x, y) - 2ab k0_relu(x, -y), from sigma(u) sigma(v)'s four
    sign cases and the symmetry of (u, v) -> (-u, -v).

    Raises
    ------
    ValueError
        For ``a`` or ``b`` not finite.
    """
    a, b = (float(check_array(n, v, ndim=0)) for n, v in (("a", a), ("b", b)))

    def fn(u):
        return a * np.maximum(u, 0.0) + b * np.maximum(-u, 0.0)

    def grad(u):
        return a * (u > 0.0) - b * (u < 0.0)

    def closed(dot, nx2, ny2):
        p0, p1 = _relu_closed(dot, nx2, ny2)
        m0, m1 = _relu_closed(-dot, nx2, ny2)
        return (a * a + b * b) * p0 - 2 * a * b * m0, (a * a + b * b) * p1 + 2 * a * b * m1

    def delta(u, du):           # relu_difference of (u, du) and of (-u, -du), inline
        h = u + du
        up = (du if h > 0.0 else -u) if u > 0.0 else (h if h > 0.0 else 0.0)
        down = (-du if h < 0.0 else u) if u < 0.0 else (-h if h < 0.0 else 0.0)
        return a * up + b * down

    return Activation(name or f"abrelu({a:g},{b:g})", fn, grad, closed, homogeneous=True,
                      delta=delta)


def relu_difference(u, du):
    """relu(u + du) - relu(u) of float64 scalars, exactly as the difference rounds (no
    cancellation): du, -u, u + du or 0 by the signs. Numba-compilable."""
    h = u + du
    if u > 0.0:
        return du if h > 0.0 else -u
    return h if h > 0.0 else 0.0


def _relu(u):
    return np.maximum(u, 0.0)


def _relu_grad(u):
    return (u > 0.0) * 1.0


def _erf_closed(dot, nx2, ny2):
    """E[erf(u) erf(v)] = (2/pi) arcsin(2 x.y / sqrt((1 + 2|x|^2)(1 + 2|y|^2))) (Williams
    1997); E[erf'(u) erf'(v)] = (4/pi) det(I + 2 Sigma)^(-1/2), Sigma the pair's covariance."""
    k1 = (2.0 / math.pi) * np.arcsin(np.clip(2.0 * dot / np.sqrt((1.0 + 2.0 * nx2)
                                                                 * (1.0 + 2.0 * ny2)), -1, 1))
    k0 = (4.0 / math.pi) / np.sqrt((1.0 + 2.0 * nx2) * (1.0 + 2.0 * ny2) - 4.0 * dot * dot)
    return k0, k1


def _erf(u):
    return math.erf(u)


def _erf_grad(u):
    return TWO_OVER_SQRT_PI * np.exp(-u * u)


def _erf_array(u):
    from scipy.special import erf

    return erf(u)


def _gelu(u):
    return 0.5 * u * (1.0 + math.erf(u / math.sqrt(2.0)))


def _gelu_grad(u):
    return 0.5 * (1.0 + math.erf(u / math.sqrt(2.0))) + u * np.exp(-0.5 * u * u) / \
        math.sqrt(2.0 * math.pi)


def _gelu_array(u):
    from scipy.special import erf

    return 0.5 * u * (1.0 + erf(u / math.sqrt(2.0)))


def _gelu_grad_array(u):
    from scipy.special import erf

    return 0.5 * (1.0 + erf(u / math.sqrt(2.0))) + u * np.exp(-0.5 * u * u) / \
        math.sqrt(2.0 * math.pi)


def _tanh(u):
    return np.tanh(u)


def _tanh_grad(u):
    t = np.tanh(u)
    return 1.0 - t * t


def _sigmoid(u):
    return 0.5 + 0.5 * np.tanh(0.5 * u)      # 1 / (1 + exp(-u)), never overflowing


def _sigmoid_grad(u):
    t = np.tanh(0.5 * u)
    return 0.25 * (1.0 - t * t)


def _softplus(u):
    return np.log1p(np.exp(-np.abs(u))) + np.maximum(u, 0.0)


#: The built-in activations by name.
ACTIVATIONS = {
    "relu": Activation("relu", _relu, _relu_grad, _relu_closed, homogeneous=True,
                       delta=relu_difference),
    "leaky_relu": abrelu(1.0, -0.01, "leaky_relu"),
    "abs": abrelu(1.0, 1.0, "abs"),
    "erf": Activation("erf", _erf, _erf_grad, _erf_closed, _erf_array),
    "tanh": Activation("tanh", _tanh, _tanh_grad),
    "gelu": Activation("gelu", _gelu, _gelu_grad, None, _gelu_array, _gelu_grad_array),
    "sigmoid": Activation("sigmoid", _sigmoid, _sigmoid_grad),
    "softplus": Activation("softplus", _softplus, _sigmoid),
}


def get_activation(activation, name="activation"):
    """The ``Activation`` named ``activation`` (``ACTIVATIONS``), or ``activation`` itself.

    Raises
    ------
    ValueError
        Naming the parameter ``name``, for a name not in ``ACTIVATIONS`` or anything else
        that is not an ``Activation``.
    """
    if isinstance(activation, Activation):
        return activation
    if isinstance(activation, str) and activation in ACTIVATIONS:
        return ACTIVATIONS[activation]
    raise ValueError(f"`{name}` must be one of {', '.join(map(repr, ACTIVATIONS))} or a "
                     f"fastsd.activations.Activation; got {activation!r}.")


__all__ = ["ACTIVATIONS", "COEFFICIENT_TOL", "QUADRATURE_POINTS", "QUADRATURE_TOL",
           "SERIES_TERMS", "SERIES_TOL", "Activation", "abrelu", "gauss_hermite",
           "get_activation", "hermite_series", "relu_difference"]
