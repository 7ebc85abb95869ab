"""The closed forms of fastsd.theory against independent evaluations.

Eq. 3 and Eq. C.18 are recomputed here with ``math.erf``; the hand-crafted
accuracy (App. B) is checked by a Monte Carlo of the 4-unit network of Eq. 2.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsd import theory


def Phi(z):
    """Standard normal CDF via math.erf."""
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def eq3(L):
    """Eq. 3 of the paper, for L >= 3."""
    return 0.5 + 0.5 * Phi(math.sqrt(2.0 * (L * L - L) / (13.0 * (math.pi - 2.0))))


def eq_c18(L, rho):
    """Eq. C.18: Phi(sqrt((2L^2 - 2L)(rho - 1)^2 / ((pi - 2)(rho^2 + 1))))."""
    return Phi(math.sqrt((2 * L * L - 2 * L) * (rho - 1) ** 2 / ((math.pi - 2) * (rho**2 + 1))))


def test_rich_accuracy_L2_is_three_quarters():
    assert theory.rich_test_accuracy(2) == 0.75


@pytest.mark.parametrize("L", [3, 4, 5, 8, 16, 32, 100])
def test_rich_accuracy_matches_eq3(L):
    assert float(theory.rich_test_accuracy(L)) == pytest.approx(eq3(L), rel=1e-12, abs=1e-14)


def test_rich_accuracy_known_value_and_monotone():
    # Eq. 3 at L = 3: sqrt(12 / (13 (pi - 2))) = 0.8993..., Phi of it = 0.8158...
    assert float(theory.rich_test_accuracy(3)) == pytest.approx(0.5 + 0.5 * Phi(
        math.sqrt(12 / (13 * (math.pi - 2)))), rel=1e-14)
    Ls = np.arange(2, 60)
    acc = np.asarray(theory.rich_test_accuracy(Ls))
    assert acc.shape == Ls.shape
    # nondecreasing in L, strictly while below the float ceiling of 1
    assert np.all(np.diff(acc) >= 0)
    below = acc < 1.0
    assert below.sum() > 10 and np.all(np.diff(acc[below]) > 0)
    assert np.all((acc >= 0.75) & (acc <= 1.0))
    assert acc[-1] == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(L=st.integers(3, 500))
def test_rich_accuracy_is_eq_c18_with_rho_1_5(L):
    got = float(theory.rich_test_accuracy(L))
    assert got == pytest.approx(0.5 + 0.5 * float(theory.different_accuracy(L, 1.5)),
                                rel=1e-13)
    assert got == pytest.approx(0.5 + 0.5 * eq_c18(L, 1.5), rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(L=st.floats(2.0, 200.0), rho=st.floats(1e-3, 1e3))
def test_different_accuracy_matches_eq_c18(L, rho):
    got = float(theory.different_accuracy(L, rho))
    assert got == pytest.approx(eq_c18(L, rho), rel=1e-12, abs=1e-15)
    assert 0.5 <= got <= 1.0


def test_different_accuracy_rho_one_is_half_and_broadcasts():
    assert float(theory.different_accuracy(7, 1.0)) == 0.5
    L = np.array([[2], [3], [10]])
    rho = np.array([1.0, 1.5, 3.0])
    out = theory.different_accuracy(L, rho)
    assert out.shape == (3, 3)
    for i in range(3):
        for j in range(3):
            assert out[i, j] == pytest.approx(eq_c18(int(L[i, 0]), rho[j]), rel=1e-12)


def test_rich_accuracy_array_input():
    Ls = np.array([2, 3, 7])
    out = theory.rich_test_accuracy(Ls)
    np.testing.assert_allclose(out, [0.75, eq3(3), eq3(7)], rtol=1e-12)
    # lists work too
    np.testing.assert_allclose(theory.rich_test_accuracy([2, 3, 7]), out, rtol=0)


@pytest.mark.parametrize("rho", [0.25, 1.0, 4.0, 1e3])
def test_handcrafted_closed_form(rho):
    """(2/pi) atan(rho): P(|A| < rho |B|) for A, B iid normal."""
    assert float(theory.handcrafted_different_accuracy(rho)) == pytest.approx(
        2 / math.pi * math.atan(rho), rel=1e-14)


def handcrafted_network(d, rho):
    """Eq. 2 as an explicit 4-unit ReLU network: weights (4, 2d) and readouts (4,)."""
    one = np.ones(d)
    W = np.stack([np.concatenate([one, one]),          # w1+
                  np.concatenate([-one, -one]),        # w2+
                  np.concatenate([one, -one]),         # w1-
                  np.concatenate([-one, one])])        # w2-
    a = np.array([1.0, 1.0, -rho, -rho])               # a+ = 1, a- = rho (subtracted)
    return W, a


@pytest.mark.parametrize("rho", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("d", [1, 5])
def test_handcrafted_accuracy_monte_carlo(rho, d):
    n = 100_000
    rng = np.random.default_rng(1000 + d + int(10 * rho))
    z1 = rng.standard_normal((n, d)) / math.sqrt(d)
    z2 = rng.standard_normal((n, d)) / math.sqrt(d)        # independent: a different pair
    W, a = handcrafted_network(d, rho)
    f_diff = np.maximum(np.concatenate([z1, z2], axis=1) @ W.T, 0.0) @ a
    p_hat = np.mean(f_diff < 0)
    p = float(theory.handcrafted_different_accuracy(rho))
    se = math.sqrt(p * (1 - p) / n)
    assert abs(p_hat - p) < 4 * se
    # and the network classifies every same pair correctly (f > 0), as App. B says
    f_same = np.maximum(np.concatenate([z1, z1], axis=1) @ W.T, 0.0) @ a
    assert np.all(f_same > 0)


def test_handcrafted_array_input():
    rho = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(theory.handcrafted_different_accuracy(rho),
                               2 / np.pi * np.arctan(rho), rtol=1e-14)
