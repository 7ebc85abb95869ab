"""The standard error of a measured accuracy (fastsd._stats) and where fastsd reports one.

- It is the half-width of the Wilson score interval at z = 1, found here independently as
  half the distance between the roots of (p - pi)^2 = pi (1 - pi) / n;
- it approaches the plain binomial sqrt(p (1 - p) / n) as n grows and is never 0;
- the Bayes-optimal accuracy, the lazy limit and a trained network report it (a perfect score on
  one pair was 1.0 +- 0.0).
"""
import math

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastsd import SameDifferent, bayes, train
from fastsd._stats import accuracy_se, stratified_accuracy_se
from fastsd.kernels import lazy_limit
from fastsd.mlp.evaluate import accuracy as network_accuracy


@given(n=st.integers(1, 10 ** 6), k=st.integers(0, 10 ** 6))
def test_it_is_the_half_width_of_the_wilson_interval(n, k):
    k = min(k, n)
    p = k / n
    # (p - pi)^2 = pi (1 - pi) / n  <=>  (1 + 1/n) pi^2 - (2 p + 1/n) pi + p^2 = 0,
    # solved in 50-digit arithmetic
    with mpmath.workdps(50):
        q = mpmath.mpf(k) / n
        a, b, c = 1 + mpmath.mpf(1) / n, -(2 * q + mpmath.mpf(1) / n), q * q
        half = float(mpmath.sqrt(b * b - 4 * a * c) / (2 * a))     # (hi - lo) / 2
    assert accuracy_se(p, n) == pytest.approx(half, rel=1e-9)
    assert accuracy_se(p, n) > 0


@given(p=st.floats(0.05, 0.95), n=st.integers(100, 10 ** 6))
def test_it_approaches_the_binomial_error_for_many_pairs(p, n):
    plain = math.sqrt(p * (1 - p) / n)
    assert accuracy_se(p, n) == pytest.approx(plain, rel=3.0 / n + 1.0 / (8 * n * p * (1 - p)))


def test_stratified_over_one_class_is_the_plain_error_and_empty_classes_drop_out():
    assert stratified_accuracy_se([(40, 0.75), (0, math.nan)]) == accuracy_se(0.75, 40)
    both = stratified_accuracy_se([(50, 1.0), (50, 0.8)])
    assert both == pytest.approx(math.hypot(50 * accuracy_se(1.0, 50),
                                            50 * accuracy_se(0.8, 50)) / 100)


def test_a_perfect_score_on_few_pairs_is_reported_with_an_error():
    task = SameDifferent(8, 4, sigma2=0.5, seed=0)
    one = bayes.accuracy(task, "generalizing", n_test=1, seed=0)
    assert one.stderr == accuracy_se(one.accuracy, 1) > 0.2          # was 1.0 +- 0.0
    r = lazy_limit(SameDifferent(4, 8, seed=0), steps=20, eval_every=10, n_test=2)
    assert r.test_accuracy_se == accuracy_se(r.test_accuracy, 2) > 0
    net = train(SameDifferent(4, 3, seed=0), 1.0, width=8, steps=20, seed=0, backend="numpy")
    out = network_accuracy(net.final_params, SameDifferent(4, 3, seed=0), n_test=4, seed=1,
                           scale=net.config["output_scale"], initial=net.initial_params)
    assert out["accuracy_se"] == accuracy_se(out["accuracy"], 4) > 0
