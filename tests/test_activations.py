"""Activations and their infinite-width kernels (fastsd.activations; issue 52, step 1).

- ReLU's kernels are fastsd.kernels' arc-cosine kernels;
- every built-in's k0 = E[sigma'(u) sigma'(v)] and k1 = E[sigma(u) sigma(v)] against a direct
  two-dimensional integration over the Gaussian pair's density (scipy's dblquad, each
  quadrant on its own so that kinks at 0 fall on edges), at the task's norms;
- erf's closed forms against the quadrature; the quadrature's check refuses too few nodes;
- the finite network's tangent kernel at width m (hidden units sigma(sqrt(m) w.x)/sqrt(m)),
  sampled, against the limit within its own Monte Carlo error;
- sigma' against central differences of sigma; sigma and sigma' compile with Numba for a
  float64 scalar and give the array form's values;
- bad names and node counts are refused by name.
"""
import math

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from fastsd import kernels
from fastsd.activations import (ACTIVATIONS, Activation, abrelu, gauss_hermite, get_activation,
                                hermite_series)

NAMES = sorted(ACTIVATIONS)


def _pairs(seed=0, n=4, p=64):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) / math.sqrt(p / 2)        # |x|^2 near 2, as the task's
    Y = np.vstack([X[:1], rng.standard_normal((n - 1, p)) / math.sqrt(p / 2)])
    return X, Y


def test_relus_kernels_are_the_arc_cosine_kernels():
    """k0 and k1 from Gram entries, bit for bit; the kernels family's (from the vectors,
    ntk by its own formula) to rounding."""
    from fastsd.kernels._reference import kernels_from_gram

    X, Y = _pairs()
    got = ACTIVATIONS["relu"].kernels(X, Y)
    want = kernels_from_gram(X @ Y.T, np.einsum("ij,ij->i", X, X)[:, None],
                             np.einsum("ij,ij->i", Y, Y)[None, :])
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])   # k0, k1
    assert np.allclose(got[2], kernels.ntk(X, Y), rtol=1e-14, atol=1e-14)
    assert np.allclose(got[1], kernels.nngp(X, Y), rtol=1e-14, atol=1e-14)
    assert np.allclose(got[0], kernels.arccos(X, Y, order=0), rtol=1e-14, atol=1e-14)
    assert got[2][0, 0] == pytest.approx(np.dot(X[0], X[0]), rel=1e-14)   # ntk(x, x) = |x|^2


def _direct(f, nx2, ny2, dot):
    """E[f(u) f(v)] over (u, v) ~ N(0, [[nx2, dot], [dot, ny2]]) by dblquad, quadrant by
    quadrant."""
    inv = np.linalg.inv([[nx2, dot], [dot, ny2]])
    norm = 2 * math.pi * math.sqrt(nx2 * ny2 - dot * dot)

    def g(v, u):
        q = inv[0, 0] * u * u + 2 * inv[0, 1] * u * v + inv[1, 1] * v * v
        return float(f(np.float64(u))) * float(f(np.float64(v))) * math.exp(-0.5 * q) / norm
    bu, bv = 12 * math.sqrt(nx2), 12 * math.sqrt(ny2)
    return sum(integrate.dblquad(g, lu, hu, lv, hv, epsabs=1e-12, epsrel=1e-11)[0]
               for lu, hu in ((-bu, 0.0), (0.0, bu)) for lv, hv in ((-bv, 0.0), (0.0, bv)))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("nx2, ny2, dot", [(2.0, 1.8, 0.3), (2.1, 2.0, 1.95), (1.0, 2.5, -0.9)])
def test_each_activations_kernels_are_the_gaussian_expectations(name, nx2, ny2, dot):
    act = ACTIVATIONS[name]
    k0, k1 = act.kernels_from_gram(dot, nx2, ny2)
    assert float(k0) == pytest.approx(_direct(act.derivative, nx2, ny2, dot), abs=1e-8)
    assert float(k1) == pytest.approx(_direct(act, nx2, ny2, dot), abs=1e-8)


def test_erfs_closed_forms_are_its_quadrature():
    X, Y = _pairs(1)
    dot, nx2, ny2 = X @ Y.T, (X * X).sum(1)[:, None], (Y * Y).sum(1)[None, :]
    closed = ACTIVATIONS["erf"].kernels_from_gram(dot, nx2, ny2)
    quad = gauss_hermite(ACTIVATIONS["erf"], dot, nx2, ny2, points=256)
    for c, q in zip(closed, quad):
        assert np.allclose(c, q, rtol=0, atol=1e-11)


def test_too_few_quadrature_nodes_are_an_error_not_a_rough_kernel():
    X, Y = _pairs(2)
    tanh = ACTIVATIONS["tanh"]
    dot, nx2, ny2 = 9 * X @ Y.T, 9 * (X * X).sum(1)[:, None], 9 * (Y * Y).sum(1)[None, :]
    with pytest.raises(ValueError, match=r"`points` 128 are too few for the Gauss-Hermite "
                                         r"quadrature of the 'tanh' kernels at \|x\|\^2 = "):
        gauss_hermite(tanh, dot, nx2, ny2)
    with pytest.raises(ValueError, match=r"`points` 16 are too few for the Hermite "
                                         r"coefficients of the 'tanh' kernels at \|x\|\^2 = "
                                         r"[0-9.]+, even doubled to 128"):
        tanh.ntk(3 * X, 3 * Y, points=16)
    assert np.isfinite(tanh.ntk(3 * X, 3 * Y, points=64)).all()     # doubled to 512
    # on enough nodes either holds, and they agree to about their accuracy
    series = hermite_series(tanh, dot, nx2, ny2, points=512)
    quad = gauss_hermite(tanh, dot, nx2, ny2, points=1024)
    for a, b in zip(series, quad):
        assert np.allclose(a, b, rtol=0, atol=1e-7)
    with pytest.raises(ValueError, match="`points` must be an integer >= 8; got 4"):
        tanh.ntk(X, Y, points=4)
    with pytest.raises(ValueError, match="`terms` must be an integer >= 1; got 0"):
        hermite_series(tanh, dot, nx2, ny2, terms=0)


@pytest.mark.parametrize("name", ["erf", "tanh", "gelu", "sigmoid", "softplus"])
def test_the_hermite_series_is_the_expectation(name):
    """Mehler's series against independent values: erf's closed forms (its series taken as if
    it had none), the others' two-dimensional quadrature on 512 nodes a dimension away from
    rho = +-1 (to its own accuracy), and at rho = +-1 scipy's adaptive one-dimensional
    integral."""
    act = ACTIVATIONS[name]
    series_only = Activation(name, act.fn, act.grad, None, act.array_fn, act.array_grad)
    rng = np.random.default_rng(11)
    nx2, ny2 = rng.uniform(0.5, 3.0, 300), rng.uniform(0.5, 3.0, 300)
    dot = rng.uniform(-0.97, 0.97, 300) * np.sqrt(nx2 * ny2)
    got = hermite_series(series_only, dot, nx2, ny2)
    want = act.closed(dot, nx2, ny2) if act.closed else gauss_hermite(act, dot, nx2, ny2, 512)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-9 * (1 + np.sqrt(nx2 * ny2)).max())
    for sign in (1.0, -1.0):                       # collinear pairs
        a, b = np.sqrt(nx2[:3]), sign * np.sqrt(ny2[:3])
        k0, k1 = hermite_series(series_only, a * b, a * a, b * b)
        for i in range(3):
            for k, f in ((k0, act.derivative), (k1, act)):
                exact = integrate.quad(lambda z: float(f(np.array(a[i] * z)) * f(np.array(b[i] * z)))
                                 * math.exp(-z * z / 2) / math.sqrt(2 * math.pi),
                                 -np.inf, np.inf, epsabs=1e-14, limit=200)[0]
                assert k[i] == pytest.approx(exact, abs=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_the_finite_networks_tangent_kernel_samples_the_limit(name):
    """Theta_m(x, y) = (1/m) sum_i [sigma(u_i) sigma(v_i) + (x.y) a_i^2 sigma'(u_i)
    sigma'(v_i)] with u_i = sqrt(m) w_i.x, sqrt(m) w_i ~ N(0, I) and sqrt(m) a_i ~ N(0, 1):
    within 5 of its own standard errors of the limit's ntk."""
    act, m = ACTIVATIONS[name], 1 << 15
    X, Y = _pairs(3, n=3)
    rng = np.random.default_rng(4)
    W, a = rng.standard_normal((m, X.shape[1])), rng.standard_normal(m)
    U, V = X @ W.T, Y @ W.T                                   # (n, m), (k, m)
    terms = (act(U)[:, None, :] * act(V)[None, :, :] + (X @ Y.T)[:, :, None] * a * a
             * act.derivative(U)[:, None, :] * act.derivative(V)[None, :, :])
    sampled, err = terms.mean(-1), terms.std(-1) / math.sqrt(m)
    assert np.all(np.abs(sampled - act.ntk(X, Y)) <= 5 * err + 1e-12)


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=30, deadline=None)
@given(u=st.floats(-6.0, 6.0).filter(lambda u: abs(u) > 1e-3))
def test_the_derivative_is_the_functions_slope(name, u):
    act, h = ACTIVATIONS[name], 1e-6
    x = np.array([u - h, u, u + h])
    slope = (act(x)[2] - act(x)[0]) / (2 * h)
    assert act.derivative(x)[1] == pytest.approx(slope, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("name", NAMES)
def test_the_function_and_derivative_compile_with_numba_to_the_array_values(name):
    act = ACTIVATIONS[name]
    fn, grad = numba.njit(act.fn), numba.njit(act.grad)
    u = np.linspace(-5.0, 5.0, 41)
    assert np.allclose([fn(x) for x in u], act(u), rtol=1e-15, atol=1e-15)
    assert np.allclose([grad(x) for x in u], act.derivative(u), rtol=1e-15, atol=1e-15)


def test_abrelus_family_holds_relu_leaky_relu_and_abs():
    X, Y = _pairs(5)
    assert np.allclose(abrelu(1, 0).ntk(X, Y), ACTIVATIONS["relu"].ntk(X, Y), atol=1e-14)
    u = np.linspace(-2, 2, 9)
    assert np.array_equal(ACTIVATIONS["abs"](u), np.abs(u))
    assert np.array_equal(ACTIVATIONS["leaky_relu"](u), np.where(u > 0, u, 0.01 * u))


def test_bad_activations_are_refused_by_name():
    assert get_activation("gelu") is ACTIVATIONS["gelu"]
    assert get_activation(ACTIVATIONS["tanh"]) is ACTIVATIONS["tanh"]
    for bad in ("ReLU", "swish", None, np.tanh):
        with pytest.raises(ValueError, match=r"`activation` must be one of 'relu', .* or a "
                                             r"fastsd.activations.Activation; got"):
            get_activation(bad)
    with pytest.raises(ValueError, match="`a`"):
        abrelu(float("nan"), 1.0)
