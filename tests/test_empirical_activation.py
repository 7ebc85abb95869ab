"""The finite network's tangent kernel for every activation (``empirical_ntk(..., activation=)``,
issue 52).

- at width 65536 it is within a few of its own Monte Carlo standard errors of the limit's
  kernel ``Activation.ntk`` (the standard error from the per-unit spread, estimated from
  independent draws), on random inputs (Hypothesis);
- at widths 1 to 3 it is grad_theta f(x) . grad_theta f(y) of the network
  ``fastsd.mlp.output`` evaluates, by central differences over every weight: a fact
  independent of the code under test;
- ReLU through the general path (``abrelu(1, 0)``) is the ReLU path to rounding, and
  ``activation="relu"`` is the default bit for bit;
- an unknown activation is refused naming ``activation``.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fastsd.activations import ACTIVATIONS, abrelu
from fastsd.kernels import empirical_ntk
from fastsd.mlp import Params, init_params, output

NAMES = sorted(ACTIVATIONS)
WIDTH = 1 << 16
#: Independent units drawn to estimate the per-unit spread of the kernel's terms: their
#: standard deviation is then known to a few per cent (relative error ~ 1/sqrt(2 * 16384)
#: for a Gaussian, a few times that for the heavier-tailed products), far inside the bound's
#: factor.
SPREAD_UNITS = 1 << 14
#: The bound in standard errors: the sampled kernel's entries are means of 65536 independent
#: terms, Gaussian to a good approximation, and exceed 5 standard errors with probability
#: ~6e-7 each (a few hundred entries a run: ~1e-4 for a false failure).
SIGMAS = 5.0


def _unit_terms(act, X, Y, units, rng):
    """The per-unit terms sigma(u) sigma(v) + b^2 sigma'(u) sigma'(v) x.y, u = w.x,
    w ~ N(0, I), b ~ N(0, 1), of ``units`` independent units: (n, k, units)."""
    W, b = rng.standard_normal((units, X.shape[1])), rng.standard_normal(units)
    U, V = X @ W.T, Y @ W.T
    return (act(U)[:, None, :] * act(V)[None, :, :] + (X @ Y.T)[:, :, None] * b * b
            * act.derivative(U)[:, None, :] * act.derivative(V)[None, :, :])


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=8, deadline=None)
@given(X=arrays(np.float64, (3, 4), elements=st.floats(-1.5, 1.5, allow_subnormal=False)),
       seed=st.integers(0, 2 ** 32 - 1))
def test_the_wide_networks_kernel_is_the_limit_within_its_standard_error(name, X, seed):
    act = ACTIVATIONS[name]
    Y = np.vstack([X[1:], -X[:1]])          # pairs with themselves, others and a negation
    got = empirical_ntk(X, Y, WIDTH, seed=seed, activation=name)
    terms = _unit_terms(act, X, Y, SPREAD_UNITS, np.random.default_rng([seed, 1]))
    se = terms.std(-1) / math.sqrt(WIDTH)
    norms = np.sqrt((X * X).sum(1))[:, None] * np.sqrt((Y * Y).sum(1))[None, :]
    # where se is 0 (x = 0, or ReLU's family at y = -x) the rest is rounding: the sampled
    # sum's (~1e-12 of the scale), and the limit's, whose arc-cosine kernels from Gram
    # entries lose ~sqrt(eps) ~ 1.5e-8 of the angle at rho = +-1 (ReLU's ntk(x, -x) is
    # -2e-9 |x|^2, not 0)
    assert np.all(np.abs(got - act.ntk(X, Y)) <= SIGMAS * se + 1e-8 * (1.0 + norms))


#: Central differences' step: truncation ~ step^2 |f'''| ~ 1e-10 and rounding ~ 1e-16 / step
#: ~ 1e-11, both far inside the test's 1e-7 relative tolerance.
STEP = 1e-5
#: No pre-activation of the small networks' weights within this of a kink (ReLU's family at
#: 0), where a central difference would straddle it; the fixed seeds keep away from one.
KINK_CLEARANCE = 1e-3


def _gradient(params, x, activation):
    """grad_theta f(x) over (w, a), flattened, by central differences of fastsd.mlp.output."""
    theta = np.concatenate([params.w.ravel(), params.a])
    m, p = params.w.shape
    grad = np.empty((x.shape[0], theta.size))
    for k in range(theta.size):
        out = []
        for step in (STEP, -STEP):
            t = theta.copy()
            t[k] += step
            out.append(output(Params(w=t[:m * p].reshape(m, p), a=t[m * p:]), x,
                              activation=activation))
        grad[:, k] = (out[0] - out[1]) / (2 * STEP)
    return grad


@pytest.mark.parametrize("activation", NAMES + [abrelu(0.5, -2.0, "abrelu(0.5,-2)")],
                         ids=str)
@pytest.mark.parametrize("width", [1, 2, 3])
def test_the_small_networks_kernel_is_its_gradients_inner_product(activation, width):
    rng = np.random.default_rng(11)
    X, Y = rng.standard_normal((3, 4)) / math.sqrt(2), rng.standard_normal((2, 4)) / math.sqrt(2)
    seed = 100 + width
    # a Generator as the seed: empirical_ntk draws init_params(rng, width, p) from it
    params = init_params(np.random.default_rng(seed), width, X.shape[1])
    assert np.abs(np.vstack([X, Y]) @ params.w.T).min() > KINK_CLEARANCE
    got = empirical_ntk(X, Y, width, seed=np.random.default_rng(seed), activation=activation)
    want = _gradient(params, X, activation) @ _gradient(params, Y, activation).T
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def test_relu_through_the_general_path_is_the_relu_path():
    rng = np.random.default_rng(5)
    X, Y = rng.standard_normal((5, 6)), rng.standard_normal((4, 6))
    for width in (3, 5000):                       # one chunk and two (rescaled) chunks
        relu = empirical_ntk(X, Y, width, seed=2)
        assert np.array_equal(relu, empirical_ntk(X, Y, width, seed=2, activation="relu"))
        assert np.array_equal(relu, empirical_ntk(X, Y, width, seed=2,
                                                  activation=ACTIVATIONS["relu"]))
        general = empirical_ntk(X, Y, width, seed=2, activation=abrelu(1.0, 0.0))
        np.testing.assert_allclose(general, relu, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("bad", ["selu", "ReLU", None, np.tanh])
def test_an_unknown_activation_is_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"^`activation` must be one of 'relu', "):
        empirical_ntk(np.ones((1, 2)), np.ones((1, 2)), width=4, activation=bad)
