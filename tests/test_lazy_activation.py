"""The lazy limit of a network of another activation (issue 52): its kernels from the symbols'
dot-product tables (``fastsd.kernels.activation``) against independent computations.

- The mean-difference classifier's logits at test pairs, and weighted kernel regression's,
  against the same classifiers built here from the explicit pair vectors (2d each) and
  ``Activation.ntk`` / ``nngp`` of those vectors, solved by NumPy: every activation, backends
  "numpy" and "cpu", both kernels;
- an odd activation's limit is odd: its logits at -x are minus those at x, so it is at chance
  on a test set closed under negation, as the finite network is;
- the Kronecker solver factorises another activation's kernel as it does ReLU's (its
  logits against the stored kernel's); what takes ReLU's arc-cosine kernels only (float32
  products, backend "cuda") refuses another activation naming `activation`, before anything
  runs; a ReLU limit's record is what it was, another's names its activation.
"""
import numpy as np
import pytest

from fastsd import SameDifferent
from fastsd.activations import ACTIVATIONS
from fastsd.kernels import lazy_limit
from fastsd.params import LAZY_LIMIT

NAMES = ["abs", "erf", "gelu", "tanh", "softplus"]


def _explicit(task, kind, name):
    """Training pair vectors of all L^2 pairs, their class weights and labels."""
    S, L = task.symbols, task.L
    u, v = np.divmod(np.arange(L * L), L)
    X = np.hstack([S[u], S[v]])
    same = u == v
    w = np.where(same, 0.5 / same.sum(), 0.5 / (~same).sum())
    act = ACTIVATIONS[name]
    return X, w, same.astype(float), (act.ntk if kind == "ntk" else act.nngp)


@pytest.mark.parametrize("kind", ["ntk", "nngp"])
@pytest.mark.parametrize("backend", ["numpy", "cpu"])
@pytest.mark.parametrize("name", NAMES)
def test_the_classifiers_are_the_explicit_kernels(name, backend, kind):
    task = SameDifferent(d=6, L=5, seed=4)
    x, _ = task.sample_test(40, 9)
    X, w, y, k = _explicit(task, kind, name)
    common = dict(backend=backend, activation=name, kernel=kind, test_x=x, n_test=64, seed=1)
    mean = lazy_limit(task, "mean_difference", **common)
    want = k(x, X) @ (w * (2 * y - 1))
    np.testing.assert_allclose(mean.predictions, want, rtol=0, atol=1e-12 * np.abs(want).max())
    assert mean.config["activation"] == name and mean.solver in ("dense", "cg")

    ridge = 1e-3
    reg = lazy_limit(task, "regression", ridge=ridge, tol=1e-12, **common)
    K, sw = k(X, X), np.sqrt(w)
    lam = ridge * np.sum(w * np.diag(K)) / len(w)
    z = np.linalg.solve(sw[:, None] * K * sw[None, :] + lam * np.eye(len(w)), sw * (2 * y - 1))
    want = k(x, X) @ (sw * z)
    np.testing.assert_allclose(reg.predictions, want, rtol=0, atol=1e-7 * np.abs(want).max())


@pytest.mark.parametrize("name", ["tanh", "erf"])
def test_an_odd_activations_limit_is_odd(name):
    task = SameDifferent(d=8, L=6, seed=2)
    x, y = task.sample_test(100, 3)
    xs, ys = np.vstack([x, -x]), np.concatenate([y, y])
    r = lazy_limit(task, "logistic_flow", backend="cpu", activation=name, test_x=xs, n_test=64,
                   steps=500, eval_every=500, seed=0)
    f = r.predictions
    np.testing.assert_allclose(f[100:], -f[:100], rtol=1e-10, atol=1e-14 * np.abs(f).max())
    assert np.all(f != 0) and np.mean((f > 0) == (ys > 0.5)) == 0.5


def test_the_kronecker_solver_takes_another_activations_kernel():
    task = SameDifferent(d=8, L=10, seed=1)
    x, _ = task.sample_test(60, 3)
    kw = dict(activation="gelu", test_x=x, n_test=64, seed=0, backend="cpu", tol=1e-10)
    dense = lazy_limit(task, "regression", solver="dense", **kw)
    kron = lazy_limit(task, "regression", solver="kron", **kw)
    assert kron.solver == "kron"
    f = dense.predictions
    np.testing.assert_allclose(kron.predictions, f, rtol=0, atol=1e-5 * np.abs(f).max())


def test_what_takes_relus_kernels_only_refuses_another_activation():
    task = SameDifferent(d=6, L=5, seed=0)
    with pytest.raises(ValueError, match="`activation` must be 'relu' with dtype='float32'.*"
                                         "got 'gelu'"):
        lazy_limit(task, "regression", activation="gelu", dtype="float32")
    with pytest.raises(ValueError, match="`activation` must be one of 'relu'"):
        lazy_limit(task, "regression", activation="Gelu")
    from fastsd._dispatch import cuda_unavailable_reason

    if cuda_unavailable_reason(needs_cupy=True) is None:      # the kernels' cuda is CuPy's
        with pytest.raises(ValueError, match="`activation` must be 'relu' with backend 'cuda'"):
            lazy_limit(task, "regression", activation="gelu", backend="cuda")


def test_records_and_keys_name_the_activation_only_off_relu():
    task = SameDifferent(d=6, L=5, seed=0)
    relu = lazy_limit(task, "mean_difference", backend="cpu", n_test=64, seed=0)
    erf = lazy_limit(task, "mean_difference", backend="cpu", n_test=64, seed=0, activation="erf")
    assert "activation" not in relu.config and erf.config["activation"] == "erf"
    assert "activation" not in str(relu.to_record())
    base = dict(d=6, L=5)
    assert "activation" not in LAZY_LIMIT.keyed(LAZY_LIMIT.check(dict(base, activation="relu")))
    assert LAZY_LIMIT.keyed(LAZY_LIMIT.check(dict(base, activation="erf")))["activation"] == "erf"
