"""The kernel mean-difference classifier and its theory (issue 44).

Independent facts: the classifier's logits are the explicit NTK's mean over the same
training pairs minus the mean over the different ones (``fastsd.kernels.ntk`` on the
explicit pairs); the flow's first step points along it; the theory's one-dimensional
expectations agree with a Monte Carlo of the quadratic form they reduce, with its
large-L limit, and with the measured classifier at large d, task by task.
"""
import numpy as np
import pytest

from fastsd import SameDifferent
from fastsd.kernels import lazy_limit, ntk
from fastsd.theory import mean_difference_accuracy, mean_difference_accuracy_large_L


def explicit_mean_difference(task, x):
    L = task.L
    u, v = np.divmod(np.arange(L * L), L)
    X = np.hstack([task.symbols[u], task.symbols[v]])
    same = u == v
    K = ntk(x, X)
    return (K[:, same].mean(axis=1) - K[:, ~same].mean(axis=1)) / 2


@pytest.mark.parametrize("d, L, solver", [(16, 5, "auto"), (64, 12, "dense"), (8, 40, "kron")])
def test_the_classifier_is_the_kernel_mean_difference(d, L, solver):
    task = SameDifferent(d=d, L=L, seed=3)
    x = task.sample_test(200, seed=9)[0]
    r = lazy_limit(task, "mean_difference", n_test=256, seed=1, test_x=x, solver=solver)
    want = explicit_mean_difference(task, x)
    np.testing.assert_allclose(r.predictions, want, rtol=1e-6, atol=1e-9 * np.abs(want).max())
    assert r.best_test_accuracy == r.test_accuracy
    assert "steps" not in r.config and "eval_at" not in r.config
    assert r.solver == ("cg" if solver == "auto" else solver)


def test_the_flows_first_step_points_along_the_classifier():
    task = SameDifferent(d=128, L=10, seed=0)
    x = task.sample_test(300, seed=4)[0]
    g = explicit_mean_difference(task, x)
    f = lazy_limit(task, steps=1, eval_every=1, n_test=64, seed=0, test_x=x,
                   solver="dense").predictions
    # f = alpha0 t g / ... + O(t^2): g is O(1/d) (the kernel's common part cancels in it), the
    # second order is not, but it is nearly the same for every input: f = a g + b
    assert np.corrcoef(f, g)[0, 1] > 1 - 1e-4
    a, b = np.polyfit(g, f, 1)
    assert a > 0 and np.abs(f - (a * g + b)).max() <= 0.01 * np.abs(f).max()


def monte_carlo(L, n_samples, rng, r=3 / 8):
    """The reduction the theory integrates: -s_n^2 / 16 + 2 r s_uv, sampled."""
    n = rng.normal(0.0, np.sqrt(2.0), (n_samples, L))
    u, v = rng.normal(size=(n_samples, L)), rng.normal(size=(n_samples, L))
    var_n = np.var(n, axis=1, ddof=1)
    cov = ((u - u.mean(1, keepdims=True)) * (v - v.mean(1, keepdims=True))).sum(1) / (L - 1)
    var_u = np.var(u, axis=1, ddof=1)
    same = np.mean(-var_n / 16 + 2 * r * var_u > 0)
    different = np.mean(-var_n / 16 + 2 * r * cov <= 0)
    return same, different


@pytest.mark.parametrize("L", [3, 8, 30])
def test_the_theorys_integrals_are_its_reduction_sampled(L):
    same, different = monte_carlo(L, 200_000, np.random.default_rng(L))
    got = mean_difference_accuracy(L)
    assert got["same"] == pytest.approx(same, abs=0.005)           # 200k samples: se <= 0.0011
    assert got["different"] == pytest.approx(different, abs=0.005)
    assert got["accuracy"] == pytest.approx((same + different) / 2, abs=0.004)


def test_the_theory_tends_to_its_large_L_form():
    for L in (400, 900):
        assert mean_difference_accuracy(L)["accuracy"] == pytest.approx(
            float(mean_difference_accuracy_large_L(L)), abs=0.002)


@pytest.mark.parametrize("L, seed", [(8, 0), (8, 2), (32, 1)])
def test_the_theory_predicts_each_tasks_classifier_at_large_d(L, seed):
    # measured (d = 1024, 4000 test pairs, 3 tasks each at L = 8, 32): |theory - classifier|
    # <= 0.008; the test pairs' standard error is about 0.006
    task = SameDifferent(d=1024, L=L, seed=seed)
    measured = lazy_limit(task, "mean_difference", n_test=4000, seed=5).test_accuracy
    assert mean_difference_accuracy(L, task.symbols)["accuracy"] == pytest.approx(measured,
                                                                                  abs=0.025)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="`L` must be"):
        mean_difference_accuracy(2)
    with pytest.raises(ValueError, match="`symbols`"):
        mean_difference_accuracy(4, np.ones((3, 8)))
    with pytest.raises(ValueError, match="`kernel`"):
        mean_difference_accuracy(4, kernel="rbf")
