"""Closed-form arc-cosine kernels and NTK against independent facts.

- Monte Carlo over w ~ N(0, I) (the kernels' definition), within 5 standard errors;
- App. D's unit-sphere formula u (1 - arccos(u)/pi) + sqrt(1 - u^2)/(2 pi);
- exact values: ntk(x, x) = |x|^2, ntk(x, -x) = 0, orthogonal inputs, zero vectors;
- homogeneity and symmetry (hypothesis); no NaN on extreme inputs;
- the empirical NTK of finite networks approaches ntk like 1/sqrt(width);
- the Numba pair kernel equals ntk on explicit pair vectors.
"""
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fastsd.kernels import _cpu, _reference, arccos, empirical_ntk, nngp, ntk


def _pair(norm_x, norm_y, u, p=3):
    """x, y in R^p with the given norms and cosine u."""
    x = np.zeros(p)
    y = np.zeros(p)
    x[0] = norm_x
    y[0] = norm_y * u
    y[1] = norm_y * math.sqrt(max(0.0, 1 - u * u))
    return x, y


@pytest.mark.parametrize("nx,ny,u", [(0.4, 3.0, -0.99), (1.0, 1.0, 0.0), (2.0, 0.7, 0.5),
                                     (3.0, 3.0, 0.999), (1.3, 0.4, -0.5)])
def test_closed_forms_match_monte_carlo(nx, ny, u):
    x, y = _pair(nx, ny, u)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((200_000, 3))
    hx, hy = w @ x, w @ y
    s0 = (hx > 0) * (hy > 0) * 1.0
    s1 = np.maximum(hx, 0) * np.maximum(hy, 0)
    sn = x @ y * s0 + s1
    X, Y = x[None], y[None]
    for samples, closed in ((s0, arccos(X, Y, 0)), (s1, arccos(X, Y, 1)), (s1, nngp(X, Y)),
                            (sn, ntk(X, Y))):
        se = samples.std() / math.sqrt(len(samples))
        assert abs(samples.mean() - closed[0, 0]) < 5 * se + 1e-12


@given(u=st.floats(-1.0, 1.0))
def test_unit_inputs_follow_appendix_d(u):
    x, y = _pair(1.0, 1.0, u)
    want = u * (1 - math.acos(u) / math.pi) + math.sqrt(1 - u * u) / (2 * math.pi)
    assert abs(ntk(x[None], y[None])[0, 0] - want) < 1e-12


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_values_on_1024_dimensional_inputs(dtype):
    X = np.random.default_rng(1).standard_normal((16, 1024)).astype(dtype)
    sq = np.sum(X.astype(np.float64) ** 2, axis=1)
    K = ntk(X, X)
    assert K.dtype == dtype
    assert np.all(np.isfinite(K))
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(np.diag(K), sq, rtol=4 * eps)
    assert np.all(np.diag(ntk(X, -X)) == 0.0)
    assert np.all(np.diag(arccos(X, -X, 0)) == 0.0) and np.all(np.diag(nngp(X, -X)) == 0.0)
    np.testing.assert_allclose(np.diag(arccos(X, X, 0)), 0.5, rtol=4 * eps)
    np.testing.assert_allclose(np.diag(nngp(X, X)), sq / 2, rtol=4 * eps)


def test_orthogonal_and_zero_inputs():
    X = np.array([[1.0, 0.0], [0.0, 0.0]])
    Y = np.array([[0.0, 2.0], [0.0, 0.0]])
    K0, K1, N = arccos(X, Y, 0), arccos(X, Y, 1), ntk(X, Y)
    assert K0[0, 0] == 0.25 and abs(K1[0, 0] - 2 / (2 * math.pi)) < 1e-15
    assert abs(N[0, 0] - 1 / math.pi) < 1e-15
    # relu'(0) = 0: a zero vector has zero kernels with everything, itself included
    for K in (K0, K1, N):
        assert np.all(K[1] == 0) and np.all(K[:, 1] == 0)


#: Smallest positive float64: the absolute rounding floor of a result that underflows.
TINY = np.finfo(np.float64).smallest_subnormal

# Entries of every magnitude from subnormal to huge (|x||y| stays representable for
# c <= 1e3), besides the ordinary range: the kernels rescale rows, so must the bounds.
finite = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
    st.builds(lambda m, e: m * 10.0**e, st.floats(-1.0, 1.0), st.integers(-323, 150)))


def _norm(v):
    """|v| without overflow or underflow (np.linalg.norm squares entries first)."""
    return math.hypot(*np.ravel(v))


def _norm_bound(rel, scale, X, Y):
    """``rel * scale * |x||y|`` plus the rounding floor of a result near underflow.

    A bound built from norms that square to 0 (or to inf) would ask a tiny kernel
    value for exactness beyond float64's subnormal spacing (or allow anything).
    """
    return rel * scale * (_norm(X) * _norm(Y)) + 16 * (1 + scale) * TINY


@settings(max_examples=60, deadline=None)
@given(x=st.lists(finite, min_size=4, max_size=4), y=st.lists(finite, min_size=4, max_size=4),
       c=st.floats(1e-3, 1e3))
# |y|^2 underflows to 0, so a tolerance from np.linalg.norm(y) was 0 while ntk(3x, y)
# and 3 ntk(x, y) differ by one subnormal ulp (found in a clean run)
@example(x=[0.0, 0.0, 0.0, -1.0], y=[0.0, 0.0, 0.0, -9.740000000000003e-306], c=3.0)
@example(x=[1e-170, 0.0, 0.0, 0.0], y=[1e150, 1e150, 0.0, 0.0], c=1e3)     # |y|^2 is huge
# c x is itself subnormal (1.25e-316): rounded to the subnormal grid it is off by up to
# TINY / |c x| = 4e-8 relative, and so is ntk(c x, y), 26 subnormal ulps here (found in a
# clean run of the dev profile)
@example(x=[0.0, 2.5e-316, 0.0, 0.0], y=[0.0, 51.0, 0.0, 0.0], c=0.5)
def test_homogeneity_symmetry_and_bounds(x, y, c):
    X, Y = np.array([x]), np.array([y])
    k = ntk(X, Y)[0, 0]
    assert np.isfinite(k)
    cx = _norm(c * X)
    grid = 4 * abs(c * k) * (TINY / cx) if cx > 0 else 0.0   # c x rounded to the subnormals
    assert abs(ntk(c * X, Y)[0, 0] - c * k) <= _norm_bound(1e-9, c, X, Y) + grid
    assert abs(ntk(Y, X)[0, 0] - k) <= _norm_bound(1e-12, 1.0, X, Y)
    # |ntk| <= |x||y| (Cauchy-Schwarz for a kernel with ntk(x, x) = |x|^2)
    assert abs(k) <= _norm(X) * _norm(Y) + _norm_bound(1e-12, 1.0, X, Y)
    k0 = arccos(X, Y, 0)[0, 0]
    assert 0.0 <= k0 <= 0.5


@pytest.mark.parametrize("scale", [1e-150, 1.0, 1e150])
def test_no_nan_near_collinear_and_extreme(scale):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(64)
    # cosines that round past +-1, nearly (anti-)collinear inputs, huge and tiny norms
    Y = np.stack([x, -x, x * (1 + 1e-15), x + 1e-13 * rng.standard_normal(64),
                  -x + 1e-9 * rng.standard_normal(64), np.zeros(64)]) * scale
    for K in (ntk(Y, Y), nngp(Y, Y), arccos(Y, Y, 0)):
        assert not np.any(np.isnan(K))
    rel = ntk(Y, Y)[0] / (scale * scale * (x @ x))
    np.testing.assert_allclose(rel[[0, 2, 3]], 1.0, rtol=1e-9)
    # near -x, t = pi - e: ntk / (|x||y|) = (sin e - 2 e cos e) / (2 pi) ~ -e / (2 pi) < 0
    assert abs(rel[1]) == 0.0 and -1e-8 < rel[4] < 0.0 and rel[5] == 0.0


def test_bad_input_errors():
    with pytest.raises(ValueError, match="`order` must be one of 0, 1; got 2"):
        arccos(np.ones((1, 2)), np.ones((1, 2)), order=2)
    with pytest.raises(ValueError, match="`Y` must be an array of shape"):
        ntk(np.ones((1, 2)), np.ones((1, 3)))
    with pytest.raises(ValueError, match="`X` must be finite"):
        ntk(np.array([[np.nan, 1.0]]), np.ones((1, 2)))
    with pytest.raises(ValueError, match="`X` must be a 2-d array"):
        ntk(np.ones(3), np.ones((1, 3)))
    with pytest.raises(ValueError, match="`width` must be an integer >= 1"):
        empirical_ntk(np.ones((1, 2)), np.ones((1, 2)), width=0)


def test_empirical_ntk_converges_like_inverse_sqrt_width():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((6, 8)) / math.sqrt(4)
    exact = ntk(X, X)
    err = {}
    for m in (256, 4096):
        errs = [np.sqrt(np.mean((empirical_ntk(X, X, width=m, seed=s) - exact) ** 2))
                for s in range(8)]
        err[m] = np.mean(errs)
    # 16x the width: the error falls ~4x (a 1/width or no decay would give 16x or 1x)
    assert 2.5 < err[256] / err[4096] < 6.5


@pytest.mark.parametrize("kind, kernel", [("ntk", ntk), ("nngp", nngp)])
def test_pair_kernel_backends_equal_the_kernel_on_explicit_pairs(kind, kernel):
    rng = np.random.default_rng(4)
    S = rng.standard_normal((5, 7)) / math.sqrt(7)
    G = S @ S.T
    u, v = np.divmod(np.arange(25), 5)
    ct = rng.integers(0, 5, size=(2, 9))
    n2 = G[u, u] + G[v, v]
    cn2 = G[ct[0], ct[0]] + G[ct[1], ct[1]]
    want = kernel(np.hstack([S[u], S[v]]), np.hstack([S[ct[0]], S[ct[1]]]))
    ref = _reference.pair_kernel(G, u, G, v, n2, ct[0], ct[1], cn2, kind)
    out = _cpu.pair_kernel(G, u, G, v, n2, ct[0], ct[1], cn2, kind)
    np.testing.assert_allclose(ref, want, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-13)
    V = rng.standard_normal((9, 2))
    mv = _cpu.pair_kernel_matvec(G, u, G, v, n2, ct[0], ct[1], cn2, V, kind)
    np.testing.assert_allclose(mv, want @ V, rtol=1e-10, atol=1e-13)
    dot = G[u][:, ct[0]] + G[v][:, ct[1]]
    got = _cpu.kernel_entries(dot, n2, np.tile(cn2, (len(n2), 1)), kind)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
