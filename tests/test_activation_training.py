"""Finite networks of any activation (issue 52): the kernels compiled per activation against
independent facts.

- The NumPy reference's gradient of a non-ReLU network against central finite differences
  of its loss, and its hidden unit against the formula sigma(sqrt(m) h) / sqrt(m) (sigma(h)
  for a homogeneous sigma);
- the CPU kernels' centred output against exact arithmetic (mpmath at 50 digits) in the lazy
  regime, where du is 1e-7 of u and the plain difference sigma(u + du) - sigma(u) would keep
  no digit in float32: each activation to float32's rounding, and exactly 0 at
  initialisation (the centring, the paper's f - f0);
- every built-in activation trained on the dense, symbol and sparse paths of backend "cpu"
  in float64 against the NumPy reference (hypothesis over seeds, gammas, widths; the lazy
  gamma's displacement to the reference's own rounding of it, about 1e-9, on the symbol
  path: ``_displacement_tol``), the same bits alone and in an ensemble
  and on one thread or two;
- every built-in activation trained on the dense, symbol and sparse paths of backend "cuda"
  (Numba's simulator by default, tiny sizes: it runs each thread in Python) in float64
  against the NumPy reference (hypothesis over seeds, gammas, widths), and the CUDA kernels'
  centred output exactly 0 at initialisation and against exact arithmetic in the lazy regime,
  as the CPU kernels';
- a ReLU network's record is what it was (no "activation" entry), another's names it, and a
  scan cell's key names it only off "relu".
"""
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsd import SameDifferent, train, train_ensemble
from fastsd._threads import thread_limit
from fastsd.activations import ACTIVATIONS, Activation
from fastsd.mlp import _cpu_kernels, _reference
from fastsd.params import MLP
from fastsd.tasks import Pentomino

NAMES = sorted(ACTIVATIONS)
SMOOTH = [n for n in NAMES if not ACTIVATIONS[n].homogeneous]

#: Each built-in sigma in mpmath, for exact differences.
MP = {"relu": lambda u: max(u, 0), "leaky_relu": lambda u: u if u > 0 else u / 100,
      "abs": abs, "erf": mpmath.erf, "tanh": mpmath.tanh,
      "gelu": lambda u: u * (1 + mpmath.erf(u / mpmath.sqrt(2))) / 2,
      "sigmoid": lambda u: 1 / (1 + mpmath.exp(-u)),
      "softplus": lambda u: mpmath.log1p(mpmath.exp(u))}


def _loss(act, w0, a0, w, a, x, y, scale):
    return _reference.loss_and_grads(w0, a0, w, a, x, y, scale, act)[0]


@pytest.mark.parametrize("name", SMOOTH)
def test_reference_gradient_matches_finite_differences(name):
    act = ACTIVATIONS[name]
    rng = np.random.default_rng(7)
    m, p, n = 6, 4, 5
    w0, a0 = rng.standard_normal((m, p)) / math.sqrt(m), rng.standard_normal(m) / math.sqrt(m)
    w, a = w0 + 0.3 * rng.standard_normal((m, p)), a0 + 0.3 * rng.standard_normal(m)
    x, y = rng.standard_normal((n, p)), rng.integers(0, 2, n).astype(float)
    _, gw, ga, _ = _reference.loss_and_grads(w0, a0, w, a, x, y, 0.7, act)
    eps = 1e-6
    for arr, grad in ((w, gw), (a, ga)):
        for idx in np.ndindex(arr.shape):
            old = arr[idx]
            arr[idx] = old + eps
            up = _loss(act, w0, a0, w, a, x, y, 0.7)
            arr[idx] = old - eps
            down = _loss(act, w0, a0, w, a, x, y, 0.7)
            arr[idx] = old
            assert grad[idx] == pytest.approx((up - down) / (2 * eps), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_the_hidden_unit_is_sigma_of_the_scaled_preactivation(name):
    if name not in MP:
        pytest.skip(f"{name!r} has no mpmath form in MP")
    act = ACTIVATIONS[name]
    h = np.linspace(-2, 2, 36).reshape(4, 9)       # 9 units
    c = 1.0 if act.homogeneous else 3.0
    expect = np.array([[float(MP[name](mpmath.mpf(c * v)) / c) for v in row] for row in h])
    np.testing.assert_allclose(act.unit(h), expect, rtol=1e-13, atol=1e-15)


def _long_centred(act, h0, dh, a0, da, c):
    """``_exact_centred`` in long double, from the activation's own array form: for an
    activation added to ACTIVATIONS without an mpmath form in ``MP`` (float32's check)."""
    h0, dh, a0, da = (np.asarray(x, np.longdouble) for x in (h0, dh, a0, da))
    u, v = c * h0, c * (h0 + dh)
    return np.asarray(((a0 * (act(v) - act(u)) + da * act(v)) / c).sum(axis=1), float)


def _exact_centred(name, h0, dh, a0, da, c):
    """sum_i a0 (unit(h0 + dh) - unit(h0)) + da unit(h0 + dh), at 50 digits, per row."""
    if name not in MP:
        return _long_centred(ACTIVATIONS[name], h0, dh, a0, da, c)
    sigma = MP[name]
    out = []
    with mpmath.workdps(50):
        for r0, r1 in zip(h0, dh):
            s = mpmath.mpf(0)
            for u0, du, a, d in zip(r0, r1, a0, da):
                u = mpmath.mpf(float(u0)) * c
                v = (mpmath.mpf(float(u0)) + mpmath.mpf(float(du))) * c
                s += (mpmath.mpf(float(a)) * (sigma(v) - sigma(u))
                      + mpmath.mpf(float(d)) * sigma(v)) / c
            out.append(float(s))
    return np.array(out)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", NAMES)
def test_kernels_keep_the_lazy_difference_to_rounding(name, dtype):
    if name not in MP and dtype == np.float64:
        pytest.skip(f"{name!r} has no mpmath form in MP: its float64 check needs one")
    act = ACTIVATIONS[name]
    kern = _cpu_kernels.kernels(act)
    rng = np.random.default_rng(3)
    n, m = 6, 16
    h0 = rng.standard_normal((1, n, m)).astype(dtype) / 4
    dh = (1e-7 * rng.standard_normal((1, n, m))).astype(dtype)
    a0 = rng.standard_normal((1, m)).astype(dtype) / 4
    da = np.zeros_like(a0)
    c = kern.unit_scale(m)
    out = np.empty((1, n))
    kern.centered_output(h0, np.zeros_like(dh), a0, da, np.ones(1), out, c)
    assert np.all(out == 0)                       # centred: f~ = 0 at initialisation
    da = (1e-7 * rng.standard_normal((1, m))).astype(dtype)
    kern.centered_output(h0, dh, a0, da, np.ones(1), out, c)
    exact = _exact_centred(name, h0[0], dh[0], a0[0], da[0], c)
    # each term to its dtype's rounding; the terms are ~1e-7 and the sums ~3e-7
    tol = (2e-6 if dtype == np.float32 else 1e-12) * np.abs(exact).max()
    np.testing.assert_allclose(out[0], exact, rtol=0, atol=tol)


def _run(task, backend, path, act, gammas, seeds, width, batch_size=16, steps=12, eval_every=6,
         n_test=64):
    return train_ensemble(task, gammas, seeds, width=width, steps=steps, batch_size=batch_size,
                          eval_every=eval_every, n_test=n_test, backend=backend, path=path,
                          dtype="float64", activation=act)


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def _displacement_tol(ref, steps):
    """What ``_rel`` of a path's displacement w - w0 to the reference's may be: 1e-10 of
    arithmetic, plus the reference's own rounding of it. The reference keeps w = w0 + dw,
    rounded at each of its ``steps`` updates (half an ulp of |w| each) and once more in
    w - w0, so that where dw is tiny beside w0 (the lazy gamma's 1e-7) its displacement holds
    only eps |w| / |dw| of relative precision (about 1e-9 there)."""
    w = ref.final_params.w
    dw = np.max(np.abs(w - ref.initial_params.w))
    return 1e-10 + (steps + 2) * np.finfo(np.float64).eps * np.max(np.abs(w)) / max(dw, 1e-300)


@settings(deadline=None, max_examples=6)
@given(name=st.sampled_from(NAMES), width=st.sampled_from([8, 33]),
       gamma=st.sampled_from([1e-3, 0.3, 2.0]), seed=st.integers(0, 2**16))
def test_dense_path_trains_the_references_network(name, width, gamma, seed):
    task = SameDifferent(d=6, L=5, sigma2=0.1, seed=seed)
    ref, = _run(task, "numpy", "dense", name, gamma, seed, width)
    cpu, = _run(task, "cpu", "dense", name, gamma, seed, width)
    assert cpu.config["activation" if name != "relu" else "path"] == (
        name if name != "relu" else "dense")
    assert _rel(cpu.history["train_loss"], ref.history["train_loss"]) < 1e-10
    assert _rel(cpu.final_params.w, ref.final_params.w) < 1e-10
    assert _rel(cpu.final_params.a, ref.final_params.a) < 1e-10
    np.testing.assert_array_equal(cpu.history["test_accuracy"], ref.history["test_accuracy"])


@pytest.mark.parametrize("name", NAMES)
def test_sparse_path_trains_the_references_network(name):
    task = Pentomino(width=2, n_train_shapes=6, blur=0.0, seed=4)
    ref, = _run(task, "numpy", "dense", name, 1.0, 2, 16, steps=6)
    cpu, = _run(task, "cpu", "sparse", name, 1.0, 2, 16, steps=6)
    assert cpu.path == "sparse"
    assert _rel(cpu.history["train_loss"], ref.history["train_loss"]) < 1e-10
    assert _rel(cpu.final_params.w, ref.final_params.w) < 1e-10


@pytest.mark.parametrize("name", ["tanh", "gelu", "abs"])
def test_a_model_has_its_bits_alone_in_an_ensemble_and_on_any_thread_count(name):
    task = SameDifferent(d=8, L=6, sigma2=0.05, seed=1)
    kw = dict(width=40, steps=10, eval_every=5, n_test=64, batch_size=32, backend="cpu",
              path="dense", activation=name)
    alone = train(task, 0.5, seed=3, **kw)
    with thread_limit(1):
        ens = train_ensemble(task, [2.0, 0.5], [9, 3], **kw)
    assert alone.final_params.w.tobytes() == ens[1].final_params.w.tobytes()
    assert alone.history["train_loss"].tobytes() == ens[1].history["train_loss"].tobytes()


@settings(deadline=None, max_examples=6)
@given(name=st.sampled_from(NAMES), width=st.sampled_from([8, 33]),
       gamma=st.sampled_from([1e-5, 0.3, 2.0]), seed=st.integers(0, 2**16))
def test_symbol_path_trains_the_references_network(name, width, gamma, seed):
    task = SameDifferent(d=6, L=5, seed=seed)
    ref, = _run(task, "numpy", "dense", name, gamma, seed, width)
    cpu, = _run(task, "cpu", "symbol", name, gamma, seed, width)
    assert cpu.path == "symbol"
    assert _rel(cpu.final_params.w - cpu.initial_params.w,
                ref.final_params.w - ref.initial_params.w) < _displacement_tol(ref, 12)
    assert _rel(cpu.history["train_loss"], ref.history["train_loss"]) < 1e-10


def test_an_unknown_activation_is_refused_by_name():
    task = SameDifferent(d=8, L=4, seed=0)
    with pytest.raises(ValueError, match="`activation` must be one of 'relu'.*got 'ReLU'"):
        train(task, 1.0, width=8, steps=2, activation="ReLU")


def test_records_and_keys_name_the_activation_only_off_relu():
    task = SameDifferent(d=8, L=4, seed=0)
    kw = dict(width=8, steps=2, eval_every=1, n_test=8, backend="cpu", path="dense")
    relu = train(task, 1.0, **kw)
    other = train(task, 1.0, activation="erf", **kw)
    assert "activation" not in relu.to_record() and relu.activation == "relu"
    assert other.to_record()["activation"] == "erf"
    x, _ = task.sample_test(16, 0)
    np.testing.assert_allclose(other.predict(x), _reference.centered_output(
        other.initial_params.w, other.initial_params.a, other.final_params.w,
        other.final_params.a, x, other.config["output_scale"], ACTIVATIONS["erf"]), rtol=1e-12)
    base = dict(d=8, L=4, gamma=1.0, width=8, steps=2)
    assert "activation" not in MLP.keyed(MLP.check(dict(base, activation="relu")))
    assert MLP.keyed(MLP.check(dict(base, activation="gelu")))["activation"] == "gelu"
    assert MLP.check(dict(base, activation=ACTIVATIONS["gelu"]))["activation"] == "gelu"


def _needs_cuda():
    """Skip where backend "cuda" cannot run: the simulator off and no GPU with CuPy."""
    from fastsd._dispatch import cuda_simulator, cuda_unavailable_reason

    if not cuda_simulator() and cuda_unavailable_reason(needs_cupy=True):
        pytest.skip("no CUDA backend here (simulator off): " + cuda_unavailable_reason(True))


#: The CUDA paths' tasks (the reference trains each on dense inputs).
CUDA_TASKS = {"dense": lambda seed: SameDifferent(d=3, L=3, sigma2=0.1, seed=seed),
              "symbol": lambda seed: SameDifferent(d=3, L=3, seed=seed),
              "sparse": lambda seed: Pentomino(width=2, n_train_shapes=4, blur=0.0, seed=seed)}


@pytest.mark.parametrize("path", sorted(CUDA_TASKS))
@pytest.mark.parametrize("name", NAMES)
@settings(deadline=None, max_examples=2)
@given(width=st.sampled_from([3, 5]), gamma=st.sampled_from([1e-3, 0.5, 2.0]),
       seed=st.integers(0, 2**16))
def test_every_cuda_path_trains_the_references_network(path, name, width, gamma, seed):
    _needs_cuda()
    task = CUDA_TASKS[path](seed % 97)
    tiny = dict(batch_size=4, steps=4, eval_every=2, n_test=16)
    ref, = _run(task, "numpy", "dense", name, gamma, seed, width, **tiny)
    gpu, = _run(task, "cuda", path, name, gamma, seed, width, **tiny)
    assert gpu.path == path and gpu.config.get("activation", "relu") == name
    assert _rel(gpu.final_params.w - gpu.initial_params.w,
                ref.final_params.w - ref.initial_params.w) < _displacement_tol(ref, 4)
    assert _rel(gpu.final_params.a, ref.final_params.a) < 1e-10
    assert _rel(gpu.history["train_loss"], ref.history["train_loss"]) < 1e-10
    np.testing.assert_array_equal(gpu.history["test_accuracy"], ref.history["test_accuracy"])


@pytest.mark.parametrize("name", NAMES)
def test_the_device_form_of_an_activation_computes_its_values(name):
    """sigma, sigma' and the difference as the CUDA kernels compile them (NumPy's scalar
    functions the CUDA target lacks as ``math``'s): the values of the NumPy forms."""
    _needs_cuda()
    from fastsd.mlp._cuda import device_form

    act = ACTIVATIONS[name]
    us = np.linspace(-4.0, 4.0, 23)
    for f in (act.fn, act.grad):
        np.testing.assert_allclose([device_form(f)(u) for u in us], [f(u) for u in us],
                                   rtol=1e-14, atol=1e-300)
    if act.delta is not None:
        np.testing.assert_allclose([device_form(act.delta)(u, 0.3) for u in us],
                                   [act.delta(u, 0.3) for u in us], rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", NAMES)
def test_cuda_kernels_are_centred_and_keep_the_lazy_difference_to_rounding(name, dtype):
    """``centered_rows`` of each activation: exactly 0 at initialisation (dh = da = 0), and
    the lazy regime's f~ to its dtype's rounding against exact arithmetic, as the CPU's."""
    if name not in MP and dtype == np.float64:
        pytest.skip(f"{name!r} has no mpmath form in MP: its float64 check needs one")
    _needs_cuda()
    from fastsd.mlp import _cuda

    act = ACTIVATIONS[name]
    k = _cuda.kernels(_cuda.SIM_THREADS, np.dtype(dtype).name, act)
    rng = np.random.default_rng(3)
    n, m = 4, 5
    c = np.float64(act.unit_scale(m))             # as the engines pass it
    h0 = rng.standard_normal((1, n, m)).astype(dtype) / 4
    dh = (1e-7 * rng.standard_normal((1, n, m))).astype(dtype)
    a0 = rng.standard_normal((1, m)).astype(dtype) / 4
    out = np.full((1, n), np.nan)
    k.centered_rows[n, k.threads](h0, np.zeros_like(dh), a0, np.zeros_like(a0), np.ones(1),
                                  out, c)
    assert np.all(out == 0)                       # centred: f~ = 0 at initialisation
    da = (1e-7 * rng.standard_normal((1, m))).astype(dtype)
    k.centered_rows[n, k.threads](h0, dh, a0, da, np.ones(1), out, c)
    exact = _exact_centred(name, h0[0], dh[0], a0[0], da[0], c)
    tol = (2e-6 if dtype == np.float32 else 1e-12) * np.abs(exact).max()
    np.testing.assert_allclose(out[0], exact, rtol=0, atol=tol)


def test_an_activation_of_ones_own_trains_and_predicts():
    def cube(u):                # written in this file: its kernels are cached on disk
        return u * u * u / 3.0 + u

    def cube_grad(u):
        return u * u + 1.0

    act = Activation("cube_plus", cube, cube_grad)
    task = SameDifferent(d=6, L=4, sigma2=0.1, seed=2)
    kw = dict(width=16, steps=8, eval_every=4, n_test=32, batch_size=16, seed=1, dtype="float64",
              activation=act)
    ref = train(task, 0.5, backend="numpy", **kw)
    cpu = train(task, 0.5, backend="cpu", **kw)
    assert cpu.to_record()["activation"] == "cube_plus" and cpu.path == "dense"
    assert _rel(cpu.final_params.w, ref.final_params.w) < 1e-10
    x, _ = task.sample_test(8, 3)
    np.testing.assert_allclose(cpu.predict(x), ref.predict(x), rtol=1e-9)
    assert "cube_plus" not in ACTIVATIONS


def test_an_odd_network_is_at_chance_on_a_test_set_closed_under_negation():
    """No biases and an odd sigma (tanh, erf) make the centred network odd, f(-x) = -f(x),
    while the label of x = (z1; z2) is that of -x: on a test set holding x and -x it gets
    exactly half right, however it trained. ReLU's network is not odd and learns the task."""
    task = SameDifferent(d=8, L=6, seed=3)
    x, y = task.sample_test(200, 5)
    xs, ys = np.vstack([x, -x]), np.concatenate([y, y])
    kw = dict(width=32, steps=300, eval_every=300, n_test=64, seed=2, backend="cpu",
              path="dense", dtype="float64")
    for name in ("tanh", "erf"):
        r = train(task, 1.0, activation=name, **kw)
        f = r.predict(x)
        np.testing.assert_allclose(r.predict(-x), -f, rtol=1e-12, atol=1e-15 * np.abs(f).max())
        assert np.all(f != 0) and np.mean((r.predict(xs) > 0) == (ys > 0.5)) == 0.5
    relu = train(task, 1.0, **kw)
    assert np.mean((relu.predict(xs) > 0) == (ys > 0.5)) > 0.75
