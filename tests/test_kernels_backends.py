"""The kernels family's backends: one interface, each backend against the reference.

- every backend module (``_reference``, ``_cpu``, ``_cuda``) defines the names of
  ``KERNELS.interface`` with the reference's signatures;
- one harness body, run over ``KERNELS.available()``, compares each backend's
  primitives (arc-cosine kernels, pair NTK, its matrix-free product, kernel SGD
  on a stored and a matrix-free kernel, the Cholesky solve) with the reference;
- where CuPy is not installed, ``_cuda`` is loaded against NumPy standing in for
  CuPy, so that its own lines (the class binding, Cholesky, scatter-add, host
  copy) run through the same harness;
- ``lazy_limit`` on every available backend equals the reference's.
"""
import importlib.util
import inspect
import math
import pathlib
import sys
import types

import numpy as np
import pytest
import scipy.linalg

from fastsd import SameDifferent
from fastsd._dispatch import BACKEND_TRAITS, FAMILIES
from fastsd.kernels import lazy_limit
from fastsd.kernels.backend import KERNELS

REF = KERNELS.module("numpy")
CUPY_MISSING = importlib.util.find_spec("cupy") is None
#: the "cuda" module run on NumPy where CuPy is missing (see ``cuda_on_numpy``)
STUB = "cuda-on-numpy"


def cuda_on_numpy(monkeypatch):
    """``fastsd.kernels._cuda`` loaded afresh with NumPy (and SciPy) standing in for CuPy."""
    cupy = types.ModuleType("cupy")
    cupy.__getattr__ = lambda name: getattr(np, name)      # cupy.<f> -> numpy.<f>
    cupy.asnumpy = np.asarray
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_add = np.add.at
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy.linalg = types.ModuleType("cupyx.scipy.linalg")
    cupyx.scipy.linalg.solve_triangular = scipy.linalg.solve_triangular
    for name, mod in [("cupy", cupy), ("cupyx", cupyx), ("cupyx.scipy", cupyx.scipy),
                      ("cupyx.scipy.linalg", cupyx.scipy.linalg)]:
        monkeypatch.setitem(sys.modules, name, mod)
    path = pathlib.Path(REF.__file__).with_name("_cuda.py")
    spec = importlib.util.spec_from_file_location("fastsd.kernels._cuda_on_numpy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)         # not entered in sys.modules
    return module


def _harness_backends():
    out = list(KERNELS.available())
    if "cuda" not in out and CUPY_MISSING:
        out.append(STUB)
    return out


@pytest.fixture(params=_harness_backends())
def backend_module(request, monkeypatch):
    """Each backend module that can run here (and the CuPy one on NumPy without CuPy)."""
    if request.param == STUB:
        return cuda_on_numpy(monkeypatch)
    return KERNELS.module(request.param)


def test_kernels_family_is_registered_once_with_its_three_modules():
    assert FAMILIES["kernels"] is KERNELS
    assert KERNELS.package == "fastsd.kernels" and KERNELS.needs_cupy is True
    assert KERNELS.available()[0] == "numpy" and "cpu" in KERNELS.available()
    for backend in KERNELS.backends:
        module = BACKEND_TRAITS[backend].module
        assert (pathlib.Path(REF.__file__).parent / f"{module}.py").is_file(), backend


@pytest.mark.parametrize("backend", list(BACKEND_TRAITS))
def test_every_backend_module_defines_the_interface_with_the_references_signatures(
        backend, monkeypatch):
    if backend == "cuda" and CUPY_MISSING:
        mod = cuda_on_numpy(monkeypatch)
    elif backend == "cpu" and importlib.util.find_spec("numba") is None:
        pytest.skip("backend 'cpu' needs Numba")
    else:
        mod = KERNELS.module(backend)
    for name in KERNELS.interface:
        assert hasattr(mod, name), f"{mod.__name__} lacks {name}"
        got, want = getattr(mod, name), getattr(REF, name)
        if name == "xp":
            assert isinstance(got, types.ModuleType)
            continue
        assert callable(got), (backend, name)
        assert inspect.signature(got) == inspect.signature(want), (backend, name)


class _Op:
    """What ``kernel_sgd`` reads of a training kernel: ``rows``, and ``matrix`` or None."""

    def __init__(self, K, stored):
        self.K, self.matrix = K, (K if stored else None)

    def rows(self, idx):
        return self.K[idx]


def _on(mod, *arrays):
    return [mod.xp.asarray(a) for a in arrays]


def _pair_tables(rng, L=6, d=5, k=11):
    S = rng.standard_normal((L, d)) / math.sqrt(d)
    S[1] = S[0]                                  # equal symbols: rho exactly 1
    G = S @ S.T
    u, v = np.divmod(np.arange(L * L, dtype=np.int64), L)
    c = rng.integers(0, L, size=(2, k))
    return G, u, v, G[u, u] + G[v, v], c[0], c[1], G[c[0], c[0]] + G[c[1], c[1]]


def test_backend_primitives_match_the_reference(backend_module):
    mod = backend_module
    rng = np.random.default_rng(0)
    close = {"rtol": 1e-12, "atol": 1e-13}

    X = rng.standard_normal((7, 4))
    X[1] = -3.0 * X[0]                           # anti-collinear, and a zero row
    X[2] = 0.0
    Y = np.vstack([X[:3], rng.standard_normal((3, 4))])
    for got, want in zip(mod.arccos_kernels(*_on(mod, X, Y)), REF.arccos_kernels(X, Y)):
        np.testing.assert_allclose(mod.to_host(got), want, **close)

    G, u, v, n2, c1, c2, cn2 = _pair_tables(rng)
    args = (G, u, G, v, n2, c1, c2, cn2)
    V = rng.standard_normal((len(c1), 3))
    dot = G[u][:, c1] + G[v][:, c2]
    for kind in ("ntk", "nngp"):
        want = REF.pair_kernel(*args, kind)
        np.testing.assert_allclose(mod.to_host(mod.pair_kernel(*_on(mod, *args), kind)), want,
                                   **close)
        np.testing.assert_allclose(
            mod.to_host(mod.pair_kernel_matvec(*_on(mod, *args, V), kind)), want @ V, **close)
        # entry by entry: each row against its own inputs (here the same ones)
        got = mod.kernel_entries(*_on(mod, dot, n2, np.tile(cn2, (len(n2), 1))), kind)
        np.testing.assert_allclose(mod.to_host(got), want, **close)
    want = REF.pair_kernel(*args)

    A = want[:, :5].T @ want[:, :5] + np.eye(5)
    b = rng.standard_normal(5)
    np.testing.assert_allclose(mod.to_host(mod.cho_solve(*_on(mod, A, b))),
                               np.linalg.solve(A, b), rtol=1e-10)
    with pytest.raises(np.linalg.LinAlgError):
        mod.cho_solve(*_on(mod, -A, b))

    # kernel SGD with repeated indices in a batch, on a stored and a matrix-free kernel
    idx = rng.integers(0, len(u), size=(5, 4))
    idx[:, 1] = idx[:, 0]
    y = rng.integers(0, 2, size=(5, 4)).astype(np.float64)
    K = REF.pair_kernel(G, u, G, v, n2, u, v, n2)
    c_ref, loss_ref = REF.kernel_sgd(_Op(K, True), np.zeros(len(u)), idx, y, 0.3)
    for stored in (True, False):
        op = _Op(mod.xp.asarray(K), stored)
        c, loss = mod.kernel_sgd(op, mod.xp.zeros(len(u)), idx, y, 0.3)
        np.testing.assert_allclose(mod.to_host(c), c_ref, **close)
        assert loss == pytest.approx(loss_ref, rel=1e-12)
    assert isinstance(mod.to_host(mod.xp.zeros(2)), np.ndarray)


@pytest.mark.parametrize("backend", KERNELS.available())
@pytest.mark.parametrize("method,solver", [("regression", "dense"), ("regression", "cg"),
                                           ("logistic_flow", "dense"),
                                           ("logistic_flow", "kron"),
                                           ("logistic_sgd", "cg")])
def test_lazy_limit_on_every_backend_equals_the_reference(backend, method, solver):
    task = SameDifferent(d=5, L=6, seed=3)
    xt, _ = task.sample_test(16, seed=4)
    kw = dict(solver=solver, test_x=xt, n_test=32, seed=5, steps=60, eval_every=30,
              batch_size=8, tol=1e-12)
    ref = lazy_limit(task, method, backend="numpy", **kw)
    got = lazy_limit(task, method, backend=backend, **kw)
    np.testing.assert_allclose(got.predictions, ref.predictions, rtol=1e-9, atol=1e-11)
    assert got.config["backend"] == backend and got.solver == solver
    assert got.history.keys() == ref.history.keys() and got.n_test == ref.n_test
    assert got.solver_info.keys() == ref.solver_info.keys()
