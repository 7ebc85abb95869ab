"""The float64 NumPy reference (fastsd.mlp._reference) against independent facts.

- gradients: central finite differences of the mean BCE loss;
- forward: an explicit per-unit loop of f~(x) = f(x; w, a) - f(x; w0, a0);
- loss and sigmoid: exact values and limits at +-1000 and +-inf;
- relu'(0) = 0.
"""
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fastsd.mlp import _reference as ref
from extremes import EXTREME

EPS64 = np.finfo(np.float64).eps


def draw_problem(d, width, n, gamma, pert, seed):
    """Small random centered-MLP problem with w != w0 (displacement ~ pert * gamma)."""
    rng = np.random.default_rng(seed)
    p = 2 * d
    w0 = rng.standard_normal((width, p)) / math.sqrt(width)
    a0 = rng.standard_normal(width) / math.sqrt(width)
    # a displacement of order gamma makes the centered output O(pert) (the output
    # scale is 1/(gamma sqrt d))
    w = w0 + pert * gamma * rng.standard_normal((width, p))
    a = a0 + pert * gamma * rng.standard_normal(width)
    x = rng.standard_normal((n, p)) / math.sqrt(d)
    y = rng.integers(0, 2, size=n).astype(float)
    scale = 1.0 / (gamma * math.sqrt(d))
    return w0, a0, w, a, x, y, scale


def loop_centered_output(w0, a0, w, a, x, scale):
    """f~(x) by explicit loops over examples and units (Eq. 1, App. F)."""
    out = np.zeros(x.shape[0])
    for b in range(x.shape[0]):
        s = 0.0
        for i in range(w.shape[0]):
            s += a[i] * max(float(w[i] @ x[b]), 0.0) - a0[i] * max(float(w0[i] @ x[b]), 0.0)
        out[b] = scale * s
    return out


def mean_bce(f, y):
    """Mean of -y log sigmoid(f) - (1 - y) log(1 - sigmoid(f)), via logaddexp."""
    return float(np.mean(y * np.logaddexp(0.0, -f) + (1 - y) * np.logaddexp(0.0, f)))


@settings(max_examples=30, deadline=None)
@given(d=st.integers(1, 4), width=st.integers(1, 8), n=st.integers(1, 8),
       log_gamma=st.floats(-3.0, 1.0), pert=st.floats(0.1, 3.0),
       seed=st.integers(0, 2**32 - 1))
def test_gradients_match_central_finite_differences(d, width, n, log_gamma, pert, seed):
    gamma = 10.0**log_gamma
    w0, a0, w, a, x, y, scale = draw_problem(d, width, n, gamma, pert, seed)
    # the loss varies on the scale gamma in (w, a): step relative to it
    step = 1e-6 * min(gamma, 1.0)
    h = x @ w.T
    # stay away from ReLU kinks: a step moves a preactivation by at most step*max|x|
    assume(np.min(np.abs(h)) > 1e-6 + 10 * step * np.max(np.abs(x)))

    loss, gw, ga, f = ref.loss_and_grads(w0, a0, w, a, x, y, scale)
    assert gw.shape == w.shape and ga.shape == a.shape and f.shape == (n,)
    assume(np.max(np.abs(f)) > 1e-3)            # a non-trivial centered output

    def L(w_, a_):
        return mean_bce(loop_centered_output(w0, a0, w_, a_, x, scale), y)

    fd_w = np.zeros_like(w)
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            e = np.zeros_like(w)
            e[i, j] = step
            fd_w[i, j] = (L(w + e, a) - L(w - e, a)) / (2 * step)
    fd_a = np.zeros_like(a)
    for i in range(a.shape[0]):
        e = np.zeros_like(a)
        e[i] = step
        fd_a[i] = (L(w, a + e) - L(w, a - e)) / (2 * step)

    g = np.concatenate([gw.ravel(), ga])
    fd = np.concatenate([fd_w.ravel(), fd_a])
    # rounding floor of a central difference: a few ulps of the loss over 2*step
    floor = 8 * EPS64 * max(abs(loss), 1.0) / (2 * step) * math.sqrt(g.size)
    err = np.linalg.norm(fd - g)
    assert err <= 1e-6 * np.linalg.norm(g) + floor, (err, np.linalg.norm(g), floor)
    # the loss value itself is the mean BCE of the independently computed outputs
    f_loop = loop_centered_output(w0, a0, w, a, x, scale)
    np.testing.assert_allclose(f, f_loop, rtol=1e-10, atol=1e-12 * scale)
    assert loss == pytest.approx(mean_bce(f_loop, y), rel=1e-10, abs=1e-12)


@settings(max_examples=20, deadline=None)
@given(d=st.integers(1, 4), width=st.integers(1, 8), n=st.integers(1, 8),
       log_gamma=st.floats(-3.0, 1.0), seed=st.integers(0, 2**32 - 1))
def test_centered_output_zero_at_init_and_loss_log2(d, width, n, log_gamma, seed):
    """At w = w0, a = a0 the centered output is exactly 0 and the loss is log 2."""
    gamma = 10.0**log_gamma
    w0, a0, _, _, x, y, scale = draw_problem(d, width, n, gamma, 1.0, seed)
    loss, gw, ga, f = ref.loss_and_grads(w0, a0, w0, a0, x, y, scale)
    np.testing.assert_array_equal(f, np.zeros(n))
    assert loss == pytest.approx(math.log(2.0), rel=1e-15)
    # sigmoid(0) - y = 1/2 - y: grad_a = scale/n sum_b (1/2 - y_b) relu(h_b)
    expect_ga = scale * np.maximum(x @ w0.T, 0).T @ (0.5 - y) / n
    np.testing.assert_allclose(ga, expect_ga, rtol=1e-12, atol=1e-15 * scale)


@settings(max_examples=20, deadline=None)
@given(d=st.integers(1, 4), width=st.integers(1, 8), n=st.integers(1, 8),
       log_gamma=st.floats(-3.0, 1.0), lr=st.floats(1e-4, 1.0), seed=st.integers(0, 2**32 - 1))
def test_sgd_step_is_plain_gradient_descent(d, width, n, log_gamma, lr, seed):
    gamma = 10.0**log_gamma
    w0, a0, w, a, x, y, scale = draw_problem(d, width, n, gamma, 1.0, seed)
    loss, gw, ga, f = ref.loss_and_grads(w0, a0, w, a, x, y, scale)
    w1, a1, loss1, f1 = ref.sgd_step(w0, a0, w, a, x, y, scale, lr)
    np.testing.assert_array_equal(w1, w - lr * gw)
    np.testing.assert_array_equal(a1, a - lr * ga)
    assert loss1 == loss
    np.testing.assert_array_equal(f1, f)
    # inputs are not modified in place
    w_again, a_again = draw_problem(d, width, n, gamma, 1.0, seed)[2:4]
    np.testing.assert_array_equal(w, w_again)
    np.testing.assert_array_equal(a, a_again)


# -- loss and sigmoid at extreme logits -----------------------------------------------



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("f, y, loss, grad", EXTREME)
def test_reference_loss_and_gradient_exact_at_extremes(dtype, f, y, loss, grad):
    fa = np.asarray(f, dtype=dtype)
    ya = np.asarray(y, dtype=dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        got_loss = float(ref.bce(fa, ya))
        got_grad = float(ref.sigmoid(fa) - ya)
    assert got_loss == loss
    assert got_grad == grad
    # the same values inside an array with ordinary entries
    arr = np.array([f, 0.0, -2.0, 3.0], dtype=dtype)
    yarr = np.array([y, 1.0, 0.0, 1.0], dtype=dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        lv = ref.bce(arr, yarr)
        sv = ref.sigmoid(arr)
    assert lv[0] == loss and sv[0] - y == grad
    assert not np.any(np.isnan(lv)) and not np.any(np.isnan(sv))


@settings(max_examples=30, deadline=None)
@given(f=st.floats(-700.0, 700.0), y=st.sampled_from([0.0, 1.0]))
def test_reference_loss_and_sigmoid_match_closed_form(f, y):
    t = (1 - 2 * y) * f
    exact = max(t, 0.0) + math.log1p(math.exp(-abs(t)))
    assert float(ref.bce(f, y)) == pytest.approx(exact, rel=1e-14, abs=1e-300)
    sig = 1.0 / (1.0 + math.exp(-f)) if f >= 0 else math.exp(f) / (1.0 + math.exp(f))
    assert float(ref.sigmoid(f)) == pytest.approx(sig, rel=1e-14, abs=1e-300)
    # symmetry sigmoid(-f) = 1 - sigmoid(f) and BCE(f, 1) = BCE(-f, 0); forming 1 - sig
    # rounds by up to half an ulp of 1, so allow two ulps of 1 in absolute terms
    assert float(ref.sigmoid(-f)) == pytest.approx(1.0 - sig, rel=1e-12, abs=2 * 2.0**-52)
    assert float(ref.bce(f, 1.0)) == float(ref.bce(-f, 0.0))


def test_reference_relu_grad_at_zero_is_zero():
    h = np.array([-1.0, -0.0, 0.0, 1e-300, 2.0])
    np.testing.assert_array_equal(ref.RELU.unit_derivative(h), [0.0, 0.0, 0.0, 1.0, 1.0])
    np.testing.assert_array_equal(ref.RELU.unit(h), [0.0, 0.0, 0.0, 1e-300, 2.0])


def zero_preactivation_problem():
    """Integer-valued case where hidden unit 0 has preactivation exactly 0 on every input.

    Symbols (1, 0), (0, 1), (2, -1), (-1, 2) all have coordinate sum 1, so
    w_0 = (1, 1; -1, -1) gives w_0 . (s_u; s_v) = 1 - 1 = 0 for every pair.
    """
    S = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, -1.0], [-1.0, 2.0]])
    w0 = np.array([[1.0, 1.0, -1.0, -1.0],
                   [0.5, -0.25, 0.75, 1.0],
                   [-0.5, 1.0, 0.25, 0.5]])
    a0 = np.array([0.5, -1.0, 0.75])
    return S, w0, a0


def test_reference_gradient_of_unit_at_kink_is_zero():
    S, w0, a0 = zero_preactivation_problem()
    u = np.array([0, 1, 2, 3, 0, 2])
    v = np.array([0, 1, 2, 3, 1, 3])
    x = np.concatenate([S[u], S[v]], axis=1)
    y = (u == v).astype(float)
    assert np.all(x @ w0[0] == 0.0)
    # a displaced network where unit 0 is unchanged, so the centered output is non-zero
    w = w0.copy()
    w[1:] += 0.1
    a = a0.copy()
    a[1:] -= 0.2
    loss, gw, ga, f = ref.loss_and_grads(w0, a0, w, a, x, y, scale=0.7)
    assert np.any(f != 0)
    np.testing.assert_array_equal(gw[0], np.zeros(4))
    assert ga[0] == 0.0
    # the other units do get gradient (so the check above is not vacuous)
    assert np.any(gw[1:] != 0) and np.any(ga[1:] != 0)
