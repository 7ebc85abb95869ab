"""Backend "cuda" (``fastsd.mlp._cuda``) against the float64 NumPy reference.

By default (tests/conftest.py) the Numba-CUDA kernels run on Numba's CPU
simulator with NumPy arrays in place of CuPy, so the whole training loop is
tested without a GPU; the simulator runs every thread in Python, hence the
tiny sizes. On a GPU machine, ``NUMBA_ENABLE_CUDASIM=0 pytest tests/test_cuda.py``
runs the same tests on the device with CuPy.

The truths: the reference SGD loop of ``test_backends`` fed the same
host-drawn batches (to the float32/float64 tolerances documented there), exact
small cases (relu'(0) = 0, logits of +-F), the Random123 known-answer vectors
of Philox4x32-10, and distribution tests of the on-device batches.
"""
import math

import numpy as np
import pytest
import test_backends
from test_philox import PHILOX_KAT, hexwords
from scipy import stats
from test_backends import (
    assert_results_close,
    check_against_reference,
    lazy_gamma,
    reference_run,
)

from fastsd import PSVRT, Pentomino, SameDifferent, _philox, train, train_ensemble
from fastsd._dispatch import cuda_simulator, cuda_unavailable_reason
from fastsd.mlp import _reference as ref

if not cuda_simulator() and cuda_unavailable_reason(needs_cupy=True) is not None:
    pytest.skip("NUMBA_ENABLE_CUDASIM=0 and " + cuda_unavailable_reason(needs_cupy=True),
                allow_module_level=True)

from numba import cuda

from fastsd.mlp import _cuda

TINY = dict(width=3, steps=4, batch_size=4, eval_every=2, n_test=8)


def host(a):
    return a if isinstance(a, np.ndarray) else a.get()


# -- the training loop against the reference ---------------------------------------

@pytest.mark.parametrize("path, sigma2s, gammas, dtype", [
    ("dense", (0.0, 0.3), ("lazy", 0.5), "float32"),
    ("dense", (0.0, 0.0), (2.0, 0.1), "float64"),
    ("symbol", (0.0, 0.0), (0.5, "lazy"), "float32"),
    ("symbol", (0.0, 0.0), (2.0, 0.1), "float64"),
])
def test_ensemble_matches_reference(path, sigma2s, gammas, dtype):
    """Each model of a 2-model ensemble follows the reference SGD loop on the same batches
    (the lazy model's displacement is below float32 resolution of w0)."""
    d, L = 3, 3
    tasks = [SameDifferent(d=d, L=L, sigma2=s2, seed=20 + k) for k, s2 in enumerate(sigma2s)]
    gs = [lazy_gamma(d) if g == "lazy" else g for g in gammas]
    seeds = [5, 6]
    rs = train_ensemble(tasks, gs, seeds, backend="cuda", path=path, dtype=dtype, **TINY)
    for k, r in enumerate(rs):
        assert (r.config["backend"], r.config["path"], r.config["dtype"]) == ("cuda", path, dtype)
        R = reference_run(tasks[k], gs[k], seeds[k], **TINY)
        check_against_reference(r, R, dtype, label=f"cuda/{path}/{dtype}/{k}")


@pytest.mark.parametrize("engine", ["DenseEngine", "SymbolEngine"])
def test_relu_derivative_at_zero_is_zero(engine):
    """The CPU engines' exact check (a unit whose preactivation is 0 on every pair never moves)."""
    test_backends.test_relu_derivative_at_zero_is_zero_in_every_engine(
        getattr(_cuda, engine), "float32")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("F", [1000.0, 2.0**100])
def test_fused_kernels_exact_at_huge_logits(dtype, F):
    """f~ = +-F exactly: BCE is F or 0, sigmoid(f~) - y is exactly 0 or +-1."""
    k = _cuda.kernels(_cuda.SIM_THREADS, dtype)
    # unit 0 (a0 = +1) carries F on rows with f~ = +F, unit 1 (a0 = -1) on the others
    fsign = np.array([1, -1, 1, -1])
    B, m = fsign.size, 2
    y = np.array([[[0.0, 1.0, 1.0, 0.0]]])                   # (M, n, B)
    h0, da = np.zeros((1, B, m), dtype), np.zeros((1, m), dtype)
    dh = np.zeros((1, B, m), dtype)
    dh[0, np.arange(B), (fsign < 0).astype(int)] = F
    a0 = np.array([[1.0, -1.0]], dtype)
    scale, lr = np.array([1.0]), np.array([0.5])
    G = np.full((1, B, m), np.nan, dtype)
    ef = np.zeros((1, B))
    rl, rc = np.zeros((1, B)), np.zeros((1, B))
    loss, correct = np.zeros((1, 1)), np.zeros((1, 1))
    h = h0 + dh
    k.forward_backward[B, k.threads](h0, dh, a0, da, y, 0, scale, lr, G, ef, rl, rc, 1.0)
    k.readout_update[(1, 1), k.threads](dh, ef, lr, da, rl, rc, loss, correct, 0, 1.0)
    err = np.where(fsign > 0, 1.0, 0.0) - y[0, 0]
    assert loss[0, 0] == np.where(err != 0, F, 0.0).sum()
    assert correct[0, 0] == np.sum(err == 0)
    np.testing.assert_array_equal(dh, h)                     # dh now holds h
    expect_G = np.where(h[0] > 0, -0.5 * err[:, None] / B * a0[0], 0.0)
    np.testing.assert_array_equal(G[0], expect_G.astype(dtype))
    expect_da = -0.5 * np.array([sum(err[b] / B * h[0, b, i] for b in range(B)) for i in range(m)])
    np.testing.assert_array_equal(da[0], expect_da.astype(dtype))


def test_row_reduction_over_several_levels():
    """8 threads per block (a 3-level tree, lanes strided over m = 37) against the reference."""
    rng = np.random.default_rng(3)
    M, n, p, m = 2, 2, 4, 37
    w0, dw = rng.standard_normal((M, m, p)), 1e-3 * rng.standard_normal((M, m, p))
    a0, da = rng.standard_normal((M, m)), 1e-3 * rng.standard_normal((M, m))
    X = rng.standard_normal((M, n, p))
    scale = np.array([0.3, 2.0])
    k = _cuda.kernels(8, "float64")
    out = np.zeros((M, n))
    h0 = np.matmul(X, w0.transpose(0, 2, 1))
    dh = np.matmul(X, dw.transpose(0, 2, 1))
    k.centered_rows[M * n, 8](h0, dh, a0, da, scale, out, 1.0)
    for j in range(M):
        expect = ref.centered_output(w0[j], a0[j], w0[j] + dw[j], a0[j] + da[j], X[j], scale[j])
        np.testing.assert_allclose(out[j], expect, rtol=1e-10, atol=1e-13)
    with pytest.raises(ValueError, match=r"`threads` must be a power of two; got 6"):
        _cuda.kernels(6, "float64")


# -- on-device random numbers -------------------------------------------------------

def test_philox_known_answers():
    philox = _cuda.kernels(_cuda.SIM_THREADS, "float32").philox

    @cuda.jit
    def run(inp, out):
        i = cuda.grid(1)
        if i < inp.shape[0]:
            r = philox(inp[i, 0], inp[i, 1], inp[i, 2], inp[i, 3], inp[i, 4], inp[i, 5])
            for j in range(4):
                out[i, j] = r[j]

    inp = np.array([hexwords(c + " " + k) for c, k, _ in PHILOX_KAT], dtype=np.uint64)
    out = np.zeros((3, 4), np.uint64)
    run[1, 4](inp, out)
    np.testing.assert_array_equal(out, np.array([hexwords(o) for _, _, o in PHILOX_KAT]))


def test_device_pairs_are_balanced_and_uniform():
    k = _cuda.kernels(_cuda.SIM_THREADS, "float32")
    Ls = np.array([5, 2])
    M, n, B = 2, 300, 5
    keys = _philox.keys([12345, 2**63 + 7])
    U, V = np.zeros((M, n, B), np.int32), np.zeros((M, n, B), np.int32)
    Y = np.zeros((M, n, B))
    k.draw_pairs[(M * B + 3) // 4, 4](Ls, 11, keys, U, V, Y)
    # rows 0, 1 same, rows 2, 3 different, row 4 (odd B) a fair coin
    assert np.all(Y[:, :, :2] == 1) and np.all(Y[:, :, 2:4] == 0)
    for j in range(M):
        coin = Y[j, :, 4]
        assert abs(coin.mean() - 0.5) < 4 * 0.5 / math.sqrt(n)
    same = Y == 1
    assert np.all(U[same] == V[same]) and np.all(U[~same] != V[~same])
    for j, L in enumerate(Ls):
        u = U[j].ravel()
        assert u.min() >= 0 and u.max() < L and V[j].max() < L
        assert stats.chisquare(np.bincount(u, minlength=L)).pvalue > 1e-3
        if L > 2:
            off = ((V[j] - U[j]) % L)[~same[j]]
            assert stats.chisquare(np.bincount(off, minlength=L)[1:]).pvalue > 1e-3
    # a model's draws depend on its key and the step only, not on the ensemble
    U1, V1, Y1 = (np.zeros((1, n, B), a.dtype) for a in (U, V, Y))
    k.draw_pairs[2, 4](Ls[1:], 11, keys[1:], U1, V1, Y1)
    np.testing.assert_array_equal(U1[0], U[1])
    np.testing.assert_array_equal(V1[0], V[1])
    np.testing.assert_array_equal(Y1[0], Y[1])


def test_device_noise_is_standard_normal():
    k = _cuda.kernels(_cuda.SIM_THREADS, "float64")
    M, B, p, steps = 1, 2, 62, 8             # p not a multiple of 4: the tail is filled
    S = np.zeros((M, 2, p // 2))
    U = V = np.zeros((M, 1, B), np.int32)
    std = np.array([1.0])
    keys = _philox.keys([99])
    draws = []
    for step in range(steps):
        X = np.full((M, B, p), np.nan)
        k.gather_inputs[M * B, k.threads](S, U, V, 0, step, std, keys, X)
        draws.append(X.ravel().copy())
    z = np.concatenate(draws)
    assert np.all(np.isfinite(z))
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(np.corrcoef(z[:-1], z[1:])[0, 1]) < 4 / math.sqrt(z.size)
    assert len(np.unique(z)) == z.size       # no repeated counters across steps, rows, lanes
    # the host's counter-based stream: the same numbers for the same key and steps
    host = _philox.box_muller(_philox.words(keys[0], np.arange(steps), B, p), np.float64)
    np.testing.assert_allclose(z, host[..., :p].ravel(), rtol=1e-13, atol=1e-13)


def test_image_task_inputs_built_on_the_host():
    """An image task (no symbols, no counter-based noise) trains on "cuda" from inputs built
    on the host, as on the CPU (it raised AttributeError: no 'symbols')."""
    task = PSVRT(n_train_patterns=4, seed=0)
    kw = dict(width=4, steps=6, batch_size=4, eval_every=3, n_test=8, seed=5,
              dtype="float64")
    gpu = train(task, 1.0, backend="cuda", **kw)
    cpu = train(task, 1.0, backend="cpu", **kw)
    assert_results_close(cpu, gpu, 1e-9)


@pytest.mark.parametrize("task, dtype, tol", [
    (PSVRT(patch=2, n_patches=3, n_train_patterns=4, seed=0), "float64", 1e-12),
    (Pentomino(width=2, n_train_shapes=4, blur=0.7, seed=1), "float64", 1e-12),
    (Pentomino(width=2, n_train_shapes=4, blur=0.7, seed=1), "float32", 1e-4)])
def test_sparse_path_trains_the_cpu_dense_models(task, dtype, tol):
    """path="sparse" on "cuda" (pixels sorted on the host, rows and updates on the device):
    a 2-seed, 2-gamma ensemble's weights are the cpu dense path's (a seed's models share
    their inputs; several chunks and evaluation windows)."""
    kw = dict(width=3, steps=6, batch_size=4, eval_every=2, n_test=8, dtype=dtype,
              progress=False)
    args = (task, [1.0, 0.3, 1.0, 0.3], [5, 5, 6, 6])
    gpu = train_ensemble(*args, backend="cuda", path="sparse", **kw)
    cpu = train_ensemble(*args, backend="cpu", path="dense", **kw)
    for g, c in zip(gpu, cpu):
        assert g.path == "sparse"
        for name in ("w", "a"):
            x, y = getattr(g.final_params, name), getattr(c.final_params, name)
            assert np.abs(x - y).max() <= tol * np.abs(y).max()


def test_device_batches_are_for_symbol_tasks_only():
    # gather_inputs reads the symbols: an image task has none (it indexed past them)
    with pytest.raises(ValueError, match="`batches` must be 'host' for PSVRT"):
        train(PSVRT(n_train_patterns=4, seed=0), 1.0, backend="cuda", batches="device",
              **dict(TINY, seed=3))


def test_device_batches_per_model_and_path():
    """batches="device": a model's run depends on its seed only, not on the ensemble around
    it, and the symbol-basis path sees the same device batches as the dense path."""
    tasks = [SameDifferent(d=3, L=3, seed=1), SameDifferent(d=3, L=3, sigma2=0.2, seed=2)]
    kw = dict(TINY, backend="cuda", path="dense", batches="device")
    rs = train_ensemble(tasks, [0.5, 1.0], [3, 4], **kw)
    single = train(tasks[1], 1.0, seed=4, **kw)
    assert (single.config["batches"], single.config["dtype"]) == ("device", "float32")
    assert_results_close(single, rs[1], 1e-6)
    symbol = train(tasks[0], 0.5, seed=3, **dict(kw, path="symbol"))
    assert symbol.config["path"] == "symbol"
    assert_results_close(rs[0], symbol, 1e-4)


# -- GPU only -------------------------------------------------------------------

needs_cupy = pytest.mark.skipif(
    cuda_simulator() or cuda_unavailable_reason(needs_cupy=True) is not None,
    reason="needs CuPy and a GPU: run `NUMBA_ENABLE_CUDASIM=0 pytest tests/test_cuda.py` on a "
           "GPU machine with `pip install -e '.[gpu]'`")


@needs_cupy
def test_cupy_engine_state_stays_on_the_device():
    import cupy
    task = SameDifferent(d=8, L=4, seed=0)
    p0 = [train(task, 1.0, seed=0, steps=1, width=16, eval_every=1, n_test=8,
                backend="cpu").initial_params]
    eng = _cuda.DenseEngine([task], p0, [0.5], [0.1], "float32")
    assert isinstance(eng.dwT, cupy.ndarray) and isinstance(eng.da, cupy.ndarray)
    loss, _ = eng.run([task.draw_pairs(np.random.default_rng(0), (5, 16))],
                        [np.random.default_rng(1)])
    assert isinstance(loss, np.ndarray) and loss.shape == (1, 5)
