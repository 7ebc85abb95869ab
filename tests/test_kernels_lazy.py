"""The lazy-limit solver against explicit pair vectors and finite networks.

- regression equals a dense solve over explicit pair vectors with ``ntk`` and the
  training distribution's weights (1/(2L) same, 1/(2L(L-1)) different), and
  interpolates the labels +-1 at vanishing ridge;
- logistic_flow equals SciPy's ODE solution of dc/dt = -alpha0 W (sigmoid(K c) - y)
  at every evaluation, and its phi functions their series;
- logistic_sgd is the limit of finite networks trained at gamma = 1e-5/sqrt(d):
  the logit gap shrinks like 1/sqrt(width); with kernel="nngp", of networks whose
  readout alone is trained (here in NumPy);
- backends and solvers agree; duplicates and near-singular Grams stay finite;
- bad input and too-large solves fail early with clear messages.
"""
import importlib.util
import contextlib
import itertools
import json
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import solve_ivp

from fastsd import SameDifferent, train
from fastsd.kernels import SolveTooLargeError, dynamics, lazy_cell, lazy_limit, ntk
from fastsd._rng import train_streams
from fastsd.schedules import Evaluations
from fastsd.mlp.model import init_params
from fastsd.tasks.base import BatchStream


def explicit(task, u, v):
    return np.hstack([task.symbols[u], task.symbols[v]])


def all_pairs(L):
    u, v = np.divmod(np.arange(L * L), L)
    w = np.where(u == v, 1 / (2 * L), 1 / (2 * L * (L - 1)))
    return u, v, w


def test_regression_equals_dense_solve_on_explicit_vectors():
    task = SameDifferent(d=5, L=6, seed=0)
    u, v, w = all_pairs(6)
    X = explicit(task, u, v)
    xt, _ = task.sample_test(40, seed=9)
    K = ntk(X, X)
    sw = np.sqrt(w)
    ridge = 1e-3
    lam = ridge * np.mean(w * np.sum(X * X, axis=1))
    z = np.linalg.solve(sw[:, None] * K * sw + lam * np.eye(36), sw * np.where(u == v, 1., -1.))
    want = ntk(xt, X) @ (sw * z)
    for backend in ("numpy", "cpu"):
        for solver in ("dense", "cg"):
            r = lazy_limit(task, "regression", ridge=ridge, test_x=xt, n_test=50, backend=backend,
                           solver=solver, tol=1e-12)
            np.testing.assert_allclose(r.predictions, want, rtol=1e-7, atol=1e-9)
            assert r.n_train_pairs == 36 and r.n_same == 6 and r.pair_selection == \
                "all ordered pairs"


def test_regression_interpolates_training_labels():
    task = SameDifferent(d=6, L=5, seed=1)
    u, v, _ = all_pairs(5)
    r = lazy_limit(task, "regression", ridge=1e-12, test_x=explicit(task, u, v), n_test=20)
    np.testing.assert_allclose(r.predictions, np.where(u == v, 1.0, -1.0), atol=1e-5)


def test_logistic_flow_matches_scipy_ode():
    task = SameDifferent(d=4, L=4, seed=2)
    u, v, w = all_pairs(4)
    X = explicit(task, u, v)
    K = ntk(X, X)
    y = (u == v) * 1.0
    alpha0, steps = 0.1, 600
    sol = solve_ivp(lambda t, c: -alpha0 * w * (1 / (1 + np.exp(-K @ c)) - y), (0, steps),
                    np.zeros(16), rtol=1e-11, atol=1e-13)
    xt, _ = task.sample_test(30, seed=3)
    r = lazy_limit(task, "logistic_flow", steps=steps, eval_every=200, test_x=xt, n_test=20,
                   seed=0)
    # exponential RK4 steps (dynamics.logistic_flow): logits O(1) to ~1e-6
    np.testing.assert_allclose(r.predictions, ntk(xt, X) @ sol.y[:, -1], rtol=0, atol=2e-6)
    assert r.history["step"] == [200, 400, 600]
    assert r.best_test_accuracy == max(r.history["test_accuracy"])
    losses = r.history["train_loss"]
    assert losses[0] < math.log(2) and all(a > b for a, b in itertools.pairwise(losses))


class Matrix:
    """The solver interface logistic_flow uses (xp, @, threads) over an explicit matrix."""
    xp = np

    def __init__(self, K):
        self.K = K

    def __matmul__(self, v):
        return self.K @ v

    def threads(self):
        return contextlib.nullcontext()


@pytest.mark.parametrize("d, L, steps, seed, dup, eval_at", [
    (4, 4, 600, 2, False, None), (16, 8, 25000, 0, False, None),
    (256, 12, 2000, 5, False, None), (3, 6, 5000, 4, False, None),
    (8, 7, 4000, 1, True, None), (128, 16, 1000, 0, False, "log"),
    (64, 8, 300, 3, False, [1, 7, 299])])
def test_the_flow_follows_scipy_at_every_evaluation(d, L, steps, seed, dup, eval_at):
    # fast early steps, 25k saturating ones, a large d (an isolated leading mode), a small d,
    # a duplicated symbol (two identical rows of K), and schedules that read the first steps
    task = SameDifferent(d=d, L=L, seed=seed)
    if dup:
        task.symbols[1] = task.symbols[0]
    u, v, w = all_pairs(L)
    X = explicit(task, u, v)
    K = ntk(X, X)
    y = (u == v) * 1.0
    Kt = ntk(task.sample_test(64, seed=3)[0], X)
    got = []
    evals = Evaluations(steps, steps // 5, eval_at)
    c, hist, info = dynamics.logistic_flow(
        Matrix(K), w, y, lambda c, t: got.append(Kt @ c) or 0.5, alpha0=0.1, evals=evals)
    assert hist["step"] == list(evals)
    sol = solve_ivp(lambda t, c: -0.1 * w * (1 / (1 + np.exp(-K @ c)) - y), (0, steps),
                    np.zeros(L * L), method="DOP853", rtol=1e-12, atol=1e-14, t_eval=hist["step"])
    want = (Kt @ sol.y).T
    # measured worst 2e-7 (d = 4, L = 4, the first evaluation); the previous integrator,
    # RK4 at a quarter of RK4's limit on the whole kernel: 5e-11 with 2-7x more products
    assert np.max(np.abs(np.array(got) - want)) <= 1e-6 * np.max(np.abs(want))
    assert info["flow_products"] == 2 * dynamics.POWER_ITERS + 1 + 4 * info["flow_steps"]
    eig = np.linalg.eigvalsh(np.sqrt(w)[:, None] * K * np.sqrt(w))
    assert info["lambda_max"] == pytest.approx(eig[-1], rel=1e-8)
    assert info["lambda_2"] >= eig[-2]       # the step's bound holds


@settings(max_examples=60, deadline=None)
@given(z=st.floats(-1e4, 2.0))
def test_phi_functions_match_their_series(z):
    # the alternating series' terms reach 26^26/26! ~ 1e10 at z = -26: summed at 60 digits
    # (at mpmath's default 15 the reference itself lost 10 digits there, a flaky failure)
    with mpmath.workdps(60):
        want = [mpmath.nsum(lambda j: mpmath.mpf(z) ** j / mpmath.factorial(j + k),
                            [0, mpmath.inf]) if z > -30 else None for k in range(5)]
    got = dynamics.phi(z)
    for k, (g, ref) in enumerate(zip(got, want)):
        if ref is not None:
            assert g == pytest.approx(float(ref), rel=1e-13, abs=1e-300)
        if k:                               # phi_k(z) = (phi_{k-1}(z) - 1/(k-1)!) / z
            assert 0 < g <= 1.0 / math.factorial(k) * (1 if z <= 0 else math.exp(z))


def test_logistic_sgd_is_the_limit_of_wide_lazy_networks():
    d = 4
    task = SameDifferent(d=d, L=6, seed=4)
    xt, _ = task.sample_test(64, seed=5)
    kw = {"steps": 300, "eval_every": 100, "n_test": 64, "seed": 6}
    lim = lazy_limit(task, "logistic_sgd", test_x=xt, backend="cpu", **kw)
    assert lim.history["test_accuracy"] == lazy_limit(task, "logistic_sgd", backend="numpy",
                                                      **kw).history["test_accuracy"]
    gap = {}
    for m in (256, 4096):
        net = train(task, 1e-5 / math.sqrt(d), width=m, dtype="float64", **kw)
        gap[m] = np.sqrt(np.mean((net.predict(xt) - lim.predictions) ** 2))
    scale = np.sqrt(np.mean(lim.predictions ** 2))
    # 16x the width: the gap falls ~4x (1/sqrt(width)); it is a small fraction at m = 4096
    assert gap[256] / gap[4096] > 2.0 and gap[4096] < 0.2 * scale


def readout_only_network(task, xt, width, gamma, seed, steps, batch_size=128, alpha0=0.1):
    """Test logits of a centered network whose readout alone is trained, by SGD in NumPy.

    f~(x) = (1/(gamma sqrt(d))) sum_i (a_i - a_i(0)) relu(w_i.x), w_i ~ N(0, I/m) frozen,
    alpha = gamma^2 d alpha0, on the batches lazy_limit(..., seed=seed) draws.
    """
    d = task.d
    w = init_params(np.random.default_rng(width), width, 2 * d).w
    scale, lr = 1.0 / (gamma * math.sqrt(d)), gamma * gamma * d * alpha0
    bu, bv, by = BatchStream(task, train_streams(seed)["pairs"], batch_size).take(steps)
    delta = np.zeros(width)                                     # a - a(0)
    for t in range(steps):
        phi = np.maximum(np.hstack([task.symbols[bu[t]], task.symbols[bv[t]]]) @ w.T, 0.0)
        g = (1.0 / (1.0 + np.exp(-scale * (phi @ delta))) - by[t]) / batch_size
        delta -= lr * scale * (phi.T @ g)
    return scale * (np.maximum(xt @ w.T, 0.0) @ delta)


def test_the_nngp_limit_is_that_of_wide_readout_only_networks():
    d = 4
    task = SameDifferent(d=d, L=6, seed=4)
    xt, _ = task.sample_test(64, seed=5)
    kw = {"steps": 300, "eval_every": 100, "n_test": 64, "seed": 6}
    lim = lazy_limit(task, "logistic_sgd", kernel="nngp", test_x=xt, backend="cpu", **kw)
    assert lim.config["kernel"] == "nngp"
    ntk_lim = lazy_limit(task, "logistic_sgd", test_x=xt, backend="cpu", **kw)
    gap = {m: np.sqrt(np.mean((readout_only_network(task, xt, m, 1.0, 6, 300)
                               - lim.predictions) ** 2)) for m in (256, 4096)}
    scale = np.sqrt(np.mean(lim.predictions ** 2))
    # 16x the width: the gap falls ~4x (1/sqrt(width)); small at m = 4096, and far smaller
    # than the gap to the NTK limit (both layers trained)
    assert gap[256] / gap[4096] > 2.0 and gap[4096] < 0.2 * scale
    assert gap[4096] < 0.2 * np.sqrt(np.mean((ntk_lim.predictions - lim.predictions) ** 2))
    # linear in the readout: the same network at the lazy gamma moves the same way
    lazy = readout_only_network(task, xt, 256, 1e-5 / math.sqrt(d), 6, 300)
    np.testing.assert_allclose(lazy, readout_only_network(task, xt, 256, 1.0, 6, 300),
                               rtol=1e-6, atol=1e-9)


def test_logistic_sgd_batches_independent_of_eval_every(monkeypatch):
    """The network's batch stream (BatchStream): any schedule, across its blocks (16 steps here)."""
    monkeypatch.setattr(BatchStream, "BLOCK", 16)
    task = SameDifferent(d=3, L=4, seed=1)
    xt, _ = task.sample_test(16, seed=2)
    kw = dict(steps=300, n_test=8, seed=3, test_x=xt, backend="cpu")
    whole = lazy_limit(task, "logistic_sgd", eval_every=300, **kw)
    np.testing.assert_array_equal(whole.predictions,
                                  lazy_limit(task, "logistic_sgd", eval_every=7, **kw).predictions)


def test_duplicates_and_near_singular_grams_stay_finite():
    task = SameDifferent(d=3, L=4, seed=7)
    pairs = np.array([[0, 0], [0, 0], [1, 2], [1, 2], [1, 2], [3, 3]])
    xt, _ = task.sample_test(10, seed=1)
    r = lazy_limit(task, "regression", pairs=pairs, ridge=0.0, test_x=xt, n_test=10)
    assert np.all(np.isfinite(r.predictions)) and r.solver_info["jitter"] > 0
    assert (r.n_train_pairs, r.n_same, r.n_diff, r.pair_selection) == (6, 3, 3, "given")
    task.symbols[1] = task.symbols[0] + 1e-14          # two numerically equal symbols
    for method in ("regression", "logistic_flow"):
        for solver in ("dense", "cg"):
            r = lazy_limit(task, method, ridge=0.0, test_x=xt, n_test=10, solver=solver,
                           steps=50, eval_every=50)
            assert np.all(np.isfinite(r.predictions)), (method, solver)


def test_sampled_pairs_are_distinct_balanced_and_recorded():
    task = SameDifferent(d=3, L=10, seed=8)
    r = lazy_limit(task, "regression", pairs=50, seed=3, n_test=100)
    assert (r.n_train_pairs, r.n_same, r.n_diff) == (50, 10, 40)
    assert r.pair_selection.startswith("sampled: 10 distinct same pairs and 40 distinct")
    rec = r.to_record()
    assert json.loads(json.dumps(rec, allow_nan=False)) == rec
    assert rec["test_accuracy"] == r.test_accuracy and rec["d"] == 3 and rec["L"] == 10
    # the Wilson half-width (fastsd._stats), within O(1/n) of the plain binomial error
    assert r.test_accuracy_se == pytest.approx(
        math.sqrt(100 * r.test_accuracy * (1 - r.test_accuracy) + 0.25) / 101, rel=1e-14)
    assert r.test_accuracy_se == pytest.approx(
        math.sqrt(r.test_accuracy * (1 - r.test_accuracy) / 100), rel=0.02)
    assert lazy_cell(3, 10, task_seed=8, seed=3, method="regression", pairs=50,
                     n_test=100)["test_accuracy"] \
        == r.test_accuracy


def test_bad_input_and_too_large_solves_fail_early():
    task = SameDifferent(d=3, L=4, seed=0)
    with pytest.raises(ValueError, match="`method` must be one of"):
        lazy_limit(task, "svm")
    with pytest.raises(ValueError, match="sigma2 = 0"):
        lazy_limit(SameDifferent(d=3, L=4, sigma2=0.5))
    with pytest.raises(ValueError, match=r"`pairs` must hold symbol indices in \[0, 3\]"):
        lazy_limit(task, pairs=np.array([[0, 4]]))
    with pytest.raises(ValueError, match="`pairs` must be 'all', an integer"):
        lazy_limit(task, pairs=np.array([0, 1]))
    with pytest.raises(ValueError, match="`pairs` must be an integer <= 16"):
        lazy_limit(task, pairs=17)
    with pytest.raises(ValueError, match=r"`test_x` must be an array of shape \(n, 6\)"):
        lazy_limit(task, test_x=np.ones((2, 5)))
    with pytest.raises(ValueError, match="`pairs` must be 'all' with method 'logistic_sgd'"):
        lazy_limit(task, "logistic_sgd", pairs=8)
    with pytest.raises(TypeError, match="`task` must be a fastsd symbol task"):
        lazy_limit("task")
    with pytest.raises(SolveTooLargeError, match=r"P = 16 training pairs needs 2048 bytes "
                                                 r".* `max_bytes` = 1000 bytes"):
        lazy_limit(task, solver="dense", max_bytes=1000)
    big = SameDifferent(d=2, L=400, seed=0)
    with pytest.raises(MemoryError, match=r"P = 160000 training pairs .* 190.73 GiB"):
        lazy_limit(big, max_bytes=1 << 20)


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None,
                    reason="CuPy is not installed: the 'cuda' backend (the reference on CuPy "
                           "arrays) is tested only on a GPU machine")
def test_cuda_backend_matches_numpy():
    task = SameDifferent(d=5, L=8, seed=0)
    xt, _ = task.sample_test(20, seed=1)
    for method, solver in itertools.product(("regression", "logistic_flow"), ("dense", "kron")):
        kw = dict(test_x=xt, steps=200, eval_every=100, solver=solver)
        a = lazy_limit(task, method, backend="numpy", **kw)
        b = lazy_limit(task, method, backend="cuda", **kw)
        np.testing.assert_allclose(b.predictions, a.predictions, rtol=1e-8, atol=1e-10)


def test_lazy_limit_progress_is_off_by_default_and_counts_flow_time(capsys):
    from fastsd.kernels import lazy_cell
    kw = dict(method="logistic_flow", steps=300, eval_every=100, n_test=64)
    quiet = lazy_cell(4, 4, **kw)
    assert capsys.readouterr().err == ""                    # as in the scan's workers
    shown = lazy_cell(4, 4, progress=True, **kw)
    assert "300/300" in capsys.readouterr().err
    assert shown["test_accuracy"] == quiet["test_accuracy"]


@pytest.mark.parametrize("solver", ["kron", "cg"])
def test_lazy_limit_progress_counts_kron_terms_and_cg_iterations(solver, capsys):
    task = SameDifferent(d=16, L=8, seed=0)
    kw = dict(method="regression", n_test=64, seed=1, solver=solver, backend="numpy")
    quiet = lazy_limit(task, **kw)
    assert capsys.readouterr().err == ""
    shown = lazy_limit(task, progress=True, **kw)
    err = capsys.readouterr().err
    assert shown.test_accuracy == quiet.test_accuracy
    info = shown.solver_info
    its = info["cg_iterations"]
    assert f"{solver} regression (CG): " in err and f" {its}/" in err
    if solver == "kron":
        assert f"kron factors (L = 8): {info['kron_aca_terms']}" in err


def test_a_registered_solver_plugs_into_lazy_limit_and_auto():
    from fastsd.kernels import solvers

    @solvers.register_solver("toy", auto_rank=-1)
    class Toy(solvers.DenseSolver):
        """The stored kernel, solved by LU; preferred by "auto" on all pairs."""

        @classmethod
        def auto_refusal(cls, size):
            return None if size.all_pairs else "the toy solver needs all pairs"

        def solve(self, w, b, lam, *, tol, maxiter):
            sw = np.sqrt(w)
            A = sw[:, None] * self.matrix * sw + lam * np.eye(len(w))
            return np.linalg.solve(A, b), {"jitter": lam, "toy": True}

    try:
        with pytest.raises(ValueError, match="'toy' is taken"):
            solvers.register_solver("toy", auto_rank=0)
        task = SameDifferent(d=4, L=5, seed=2)
        xt, _ = task.sample_test(12, seed=3)
        kw = dict(test_x=xt, n_test=20, seed=1, ridge=1e-6, steps=40, eval_every=20)
        r = lazy_limit(task, "regression", **kw)
        assert r.solver == "toy" and r.solver_info["toy"] is True
        np.testing.assert_allclose(r.predictions, lazy_limit(task, "regression", solver="dense",
                                                             **kw).predictions, rtol=1e-8)
        assert lazy_limit(task, "regression", pairs=10, **kw).solver == "dense"
        flow = lazy_limit(task, "logistic_flow", solver="toy", **kw)
        assert flow.history == lazy_limit(task, "logistic_flow", solver="dense", **kw).history
    finally:
        solvers.SOLVERS.pop("toy")
    assert lazy_limit(task, "regression", **kw).solver == "dense"
