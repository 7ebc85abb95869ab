"""Validation at the public entry points.

Every message must name the parameter (in backticks) and the valid range, as in
"`L` must be an integer >= 2; got 1." (DESIGN.md, "Errors and docstrings").
"""
import math
import re

import numpy as np
import pytest

import fastsd
from fastsd import BackendUnavailableError, SameDifferent, theory, train, train_ensemble

TASK = SameDifferent(d=3, L=3, seed=0)
TINY = dict(width=2, steps=2, batch_size=2, eval_every=1, n_test=4, seed=0)


def tiny(**over):
    kw = dict(TINY)
    kw.update(over)
    return kw


# -- the task ------------------------------------------------------------------------

@pytest.mark.parametrize("L", [1, 0, -3])
def test_L_below_two(L):
    with pytest.raises(ValueError, match=r"`L` must be an integer >= 2; got " + str(L)):
        SameDifferent(d=3, L=L)


@pytest.mark.parametrize("d", [0, -1])
def test_d_below_one(d):
    with pytest.raises(ValueError, match=r"`d` must be an integer >= 1; got " + str(d)):
        SameDifferent(d=d, L=3)


@pytest.mark.parametrize("name, kwargs", [("L", dict(d=3, L=2.0)), ("d", dict(d=2.5, L=3)),
                                          ("L", dict(d=3, L=True)), ("d", dict(d="3", L=3))])
def test_task_integer_types(name, kwargs):
    with pytest.raises(TypeError, match=rf"`{name}` must be an integer"):
        SameDifferent(**kwargs)


@pytest.mark.parametrize("sigma2", [-1e-9, -1.0, math.nan, math.inf])
def test_sigma2_negative_or_not_finite(sigma2):
    with pytest.raises(ValueError, match=r"`sigma2` must be a finite number >= 0"):
        SameDifferent(d=3, L=3, sigma2=sigma2)


def test_task_seed():
    with pytest.raises(ValueError, match=r"`seed` must be an integer >= 0; got -1"):
        SameDifferent(d=3, L=3, seed=-1)
    with pytest.raises(TypeError, match=r"`seed` must be an integer"):
        SameDifferent(d=3, L=3, seed=1.5)


@pytest.mark.parametrize("method", ["sample_train", "sample_test"])
def test_sample_sizes(method):
    with pytest.raises(ValueError, match=r"`n` must be an integer >= 1; got 0"):
        getattr(TASK, method)(0)
    with pytest.raises(TypeError, match=r"`n` must be an integer"):
        getattr(TASK, method)(2.5)
    with pytest.raises(ValueError, match=r"`seed` must be an integer >= 0"):
        getattr(TASK, method)(4, seed=-2)


# -- train ---------------------------------------------------------------------------

@pytest.mark.parametrize("name, value, pattern", [
    ("width", 0, r"`width` must be an integer >= 1; got 0"),
    ("width", -4, r"`width` must be an integer >= 1; got -4"),
    ("steps", 0, r"`steps` must be an integer >= 1; got 0"),
    ("batch_size", 0, r"`batch_size` must be an even integer >= 2 \(exactly half of a batch "
                      r"are same pairs\); got 0"),
    ("batch_size", 3, r"`batch_size` must be an even integer >= 2 .*; got 3"),
    ("batch_size", 1, r"`batch_size` must be an even integer >= 2 .*; got 1"),
    ("eval_every", 0, r"`eval_every` must be an integer >= 1; got 0"),
    ("n_test", 0, r"`n_test` must be an integer >= 2; got 0"),
    ("n_test", 1, r"`n_test` must be an integer >= 2; got 1"),
    ("alpha0", 0.0, r"`alpha0` must be a finite number > 0"),
    ("alpha0", math.nan, r"`alpha0` must be a finite number > 0"),
    ("seed", -1, r"`seed` must be an integer >= 0; got -1"),
])
def test_train_out_of_range(name, value, pattern):
    with pytest.raises(ValueError, match=pattern):
        train(TASK, 1.0, **tiny(**{name: value}))


@pytest.mark.parametrize("name, value", [("width", 2.0), ("steps", "10"), ("batch_size", 1.5),
                                         ("width", True)])
def test_train_integer_types(name, value):
    with pytest.raises(TypeError, match=rf"`{name}` must be an integer"):
        train(TASK, 1.0, **tiny(**{name: value}))


@pytest.mark.parametrize("gamma", [0.0, -1.0, math.nan, math.inf, -math.inf])
def test_gamma_not_positive_finite(gamma):
    with pytest.raises(ValueError, match=r"`gamma` must be a finite number > 0"):
        train(TASK, gamma, **TINY)
    with pytest.raises(ValueError, match=r"`gamma` must be a finite number > 0"):
        train_ensemble(TASK, [1.0, gamma], [0, 1], width=2, steps=2)


def test_gamma_types():
    with pytest.raises(TypeError, match=r"`gamma` must be a real number"):
        train(TASK, b"1", **TINY)
    # a string is the vocabulary of the scans and the CLI: "lazy" or an error naming both
    with pytest.raises(ValueError, match=r"`gamma` must be a number > 0 or 'lazy'.*got '1'"):
        train(TASK, "1", **TINY)
    with pytest.raises(TypeError, match=r"`gamma` must be a single value"):
        train(TASK, [1.0, 2.0], **TINY)


@pytest.mark.parametrize("backend", ["tpu", "gpu", "", None])
def test_unknown_backend(backend):
    with pytest.raises(ValueError, match=r"`backend` must be one of 'auto', 'numpy', 'cpu', "
                                         r"'cuda'"):
        train(TASK, 1.0, backend=backend, **TINY)


def no_gpu(monkeypatch, numba_cuda=False):
    """Pretend this is a machine without the simulator, and without a usable GPU
    (``numba_cuda=False``) or with Numba-CUDA but without CuPy."""
    from fastsd import _dispatch
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    monkeypatch.setattr(_dispatch, "numba_cuda_available", lambda: numba_cuda)
    monkeypatch.setattr(_dispatch, "cupy_available", lambda: False)


@pytest.mark.parametrize("numba_cuda, missing", [(False, "NVIDIA GPU"), (True, "CuPy")])
def test_cuda_backend_unavailable_names_the_fix(monkeypatch, numba_cuda, missing):
    no_gpu(monkeypatch, numba_cuda)
    with pytest.raises(BackendUnavailableError, match=rf"cuda.*{missing}.*fix.*backend='cpu'"):
        train(TASK, 1.0, backend="cuda", **TINY)
    assert issubclass(fastsd.BackendUnavailableError, RuntimeError)


def test_device_batches_need_cuda():
    with pytest.raises(ValueError, match=r"`batches` must be 'host' with backend 'cpu'"):
        train(TASK, 1.0, backend="cpu", batches="device", **TINY)
    with pytest.raises(ValueError, match=r"`batches` must be one of 'host', 'device'"):
        train(TASK, 1.0, backend="cpu", batches="gpu", **TINY)


@pytest.mark.parametrize("dtype", ["float16", "int32", "double", np.float16])
def test_unknown_dtype(dtype):
    with pytest.raises(ValueError, match=r"`dtype` must be one of 'float32', 'float64'"):
        train(TASK, 1.0, backend="cpu", dtype=dtype, **TINY)


def test_numpy_backend_is_float64_and_dense_only():
    with pytest.raises(ValueError, match=r"`dtype` must be 'float64' with backend 'numpy'"):
        train(TASK, 1.0, backend="numpy", dtype="float32", **TINY)
    with pytest.raises(ValueError, match=r"`path` must be 'dense' or 'auto' with backend 'numpy'"):
        train(TASK, 1.0, backend="numpy", path="symbol", **TINY)


def test_unknown_path_and_init():
    with pytest.raises(ValueError, match=r"`path` must be one of 'auto', 'dense', 'symbol', "
                                         r"'sparse'"):
        train(TASK, 1.0, path="stamps", **TINY)
    with pytest.raises(ValueError, match=r"`init` must be one of 'normal', 'truncated'"):
        train(TASK, 1.0, init="xavier", **TINY)


def test_symbol_path_needs_clean_task():
    noisy = SameDifferent(d=3, L=3, sigma2=0.5, seed=0)
    with pytest.raises(ValueError, match=r"`path` must be 'dense' or 'auto'.*sigma2"):
        train(noisy, 1.0, backend="cpu", path="symbol", **TINY)
    with pytest.raises(ValueError, match=r"`path` must be 'dense' or 'auto'"):
        train_ensemble([TASK, noisy], 1.0, [0, 1], backend="cpu", path="symbol",
                       width=2, steps=2)


def test_task_type():
    with pytest.raises(TypeError, match=r"`task` must be a fastsd task"):
        train("symbols", 1.0, **TINY)


# -- ensembles ---------------------------------------------------------------------

@pytest.mark.parametrize("tasks, gammas, seeds, name, want, got", [
    (TASK, [1.0, 2.0], [0, 1, 2], "gamma", 3, 2),
    (TASK, [1.0, 2.0, 3.0], [0, 1], "seed", 3, 2),
    ([TASK, TASK], [1.0, 2.0, 3.0], 0, "task", 3, 2),
])
def test_ensemble_length_mismatch(tasks, gammas, seeds, name, want, got):
    with pytest.raises(ValueError, match=rf"`{name}` must have length 1 or {want}.*got length "
                                         rf"{got}"):
        train_ensemble(tasks, gammas, seeds, width=2, steps=2)


def test_ensemble_empty_and_mixed_input_dims():
    with pytest.raises(ValueError, match=r"`gamma` must be a non-empty sequence"):
        train_ensemble(TASK, [], 0, width=2, steps=2)
    with pytest.raises(ValueError, match=r"`task` must share one input dimension"):
        train_ensemble([TASK, SameDifferent(d=4, L=3, seed=0)], 1.0, [0, 1], width=2, steps=2)


# -- theory: arrays with NaN / inf and bad values --------------------------------------

@pytest.mark.parametrize("func", [theory.rich_test_accuracy,
                                  lambda L: theory.different_accuracy(L, 1.5)])
@pytest.mark.parametrize("L", [np.array([3.0, np.nan]), np.array([np.inf, 4.0]), 1,
                               np.array([2, 3, 1]), [5, -np.inf]])
def test_theory_rejects_bad_L(func, L):
    with pytest.raises(ValueError, match=r"`L` must be a number .*>= 2"):
        func(L)


@pytest.mark.parametrize("rho", [0.0, -1.0, np.nan, np.inf, np.array([1.0, np.nan])])
def test_theory_rejects_bad_rho(rho):
    with pytest.raises(ValueError, match=r"`rho` must be a finite number > 0"):
        theory.different_accuracy(3, rho)
    with pytest.raises(ValueError, match=r"`rho` must be a finite number > 0"):
        theory.handcrafted_different_accuracy(rho)


def test_theory_rejects_non_numeric_L():
    with pytest.raises((TypeError, ValueError), match=r"`L`"):
        theory.rich_test_accuracy("3")


@pytest.mark.parametrize("L", [2.5, [2, 3.5], 2.999])
def test_eq3_rejects_fractional_L_instead_of_rounding_it(L):
    # 2.5 used to give the L = 2 value (rho = 1) silently
    with pytest.raises(ValueError, match=r"`L` must be a whole number of training symbols"):
        theory.rich_test_accuracy(L)
    assert theory.rich_test_accuracy(3.0) == theory.rich_test_accuracy(3)


def test_theory_shape_mismatch_names_the_parameters():
    """L and rho that do not broadcast: the error must name them (not a bare NumPy error)."""
    with pytest.raises(ValueError, match=r"`L`|`rho`"):
        theory.different_accuracy(np.array([2, 3]), np.array([1.0, 2.0, 3.0]))


# -- TrainResult.predict ------------------------------------------------------------

@pytest.fixture(scope="module")
def trained():
    return train(TASK, 1.0, **TINY)


def test_predict_exists(trained):
    assert hasattr(trained, "predict"), "TrainResult.predict is missing"


@pytest.mark.parametrize("bad", [np.array([[0.0, 1.0, np.nan, 0.0, 0.0, 0.0]]),
                                 np.full((3, 6), np.inf), [[0, 0, 0, 0, 0, -np.inf]]])
def test_predict_rejects_non_finite(trained, bad):
    if not hasattr(trained, "predict"):
        pytest.skip("TrainResult.predict not implemented")
    with pytest.raises(ValueError, match=r"`x` must be finite"):
        trained.predict(bad)


@pytest.mark.parametrize("bad", [np.zeros((2, 5)), np.zeros(6), np.zeros((2, 6, 1)),
                                 np.zeros((4, 3))])
def test_predict_rejects_wrong_shape(trained, bad):
    if not hasattr(trained, "predict"):
        pytest.skip("TrainResult.predict not implemented")
    with pytest.raises(ValueError, match=r"`x` must be an array of shape \(n, 6\); got shape"):
        trained.predict(bad)


def test_predict_rejects_non_numeric(trained):
    if not hasattr(trained, "predict"):
        pytest.skip("TrainResult.predict not implemented")
    with pytest.raises(TypeError, match=r"`x` must be a numeric array"):
        trained.predict([["a", "b", "c", "d", "e", "f"]])


def test_predict_accepts_lists(trained):
    if not hasattr(trained, "predict"):
        pytest.skip("TrainResult.predict not implemented")
    x, _ = TASK.sample_test(4, seed=1)
    f = trained.predict(x.tolist())
    assert f.shape == (4,) and f.dtype == np.float64
    np.testing.assert_array_equal(f, trained.predict(x))


# -- found by a newcomer's pass ------------------------------------------------------

def test_train_rejects_sequences_of_seeds_and_tasks():
    with pytest.raises(TypeError, match=r"`seed` must be a single value in train"):
        train(TASK, 1.0, **tiny(seed=[0, 1]))
    with pytest.raises(TypeError, match=r"`task` must be a single value in train"):
        train([TASK, TASK], 1.0, **TINY)


def test_gamma_whose_learning_rate_underflows_is_rejected():
    with pytest.raises(ValueError, match=r"`gamma` must lie in \[.*\] for this task with "
                                         r"alpha0=0.1 in float32.*learning rate 0\)"):
        train(TASK, 1e-300, **TINY)
    with pytest.raises(ValueError, match=r"`alpha0` must be smaller: with alpha0=1e\+300 no "
                                         r"gamma gives an output scale"):
        train(TASK, 1.0, **tiny(alpha0=1e300))


def test_task_seed_must_not_be_a_generator():
    with pytest.raises(TypeError, match=r"`seed` must be an integer >= 0, a SeedSequence or "
                                        r"None for a task"):
        SameDifferent(d=3, L=3, seed=np.random.default_rng(0))


def test_seed_none_is_recorded_and_reproduces_the_run():
    import json
    r = train(SameDifferent(d=3, L=3, seed=np.int64(4)), 1.0, **tiny(seed=None))
    again = train(SameDifferent(d=3, L=3, seed=4), 1.0, **tiny(seed=r.config["seed"]))
    np.testing.assert_array_equal(r.final_params.w, again.final_params.w)
    json.dumps(r.to_record())          # numpy integers must not leak into records


def test_divergence_is_flagged_and_records_stay_strict_json():
    import json
    with pytest.warns(RuntimeWarning, match=r"training diverged in 1 of 1 model\(s\).*"
                                            r"alpha0=1e\+36.*lower alpha0 or gamma"):
        r = train(TASK, 1.0, **tiny(alpha0=1e36, width=16, steps=8, eval_every=2))
    assert r.diverged
    rec = r.to_record()
    assert rec["diverged"] is True
    json.dumps(rec, allow_nan=False)


def test_seed_may_be_a_seed_sequence_or_a_generator():
    kw = tiny(seed=None)
    del kw["seed"]
    ss = np.random.SeedSequence(7)
    a = train(TASK, 1.0, seed=ss, **kw)
    b = train(TASK, 1.0, seed=ss, **kw)          # reusing the object repeats the run
    c = train(TASK, 1.0, seed=7, **kw)
    np.testing.assert_array_equal(a.final_params.w, b.final_params.w)
    np.testing.assert_array_equal(a.final_params.w, c.final_params.w)
    r = train(TASK, 1.0, seed=np.random.default_rng(1), **kw)
    assert r.config["seed"] is None and np.all(np.isfinite(r.final_params.w))


def test_train_names_itself_for_an_unknown_option_and_repr_is_short():
    from fastsd import SameDifferent, train

    task = SameDifferent(d=4, L=3, seed=0)
    with pytest.raises(TypeError, match=r"train\(\) got an unexpected keyword argument 'foo'"):
        train(task, 1.0, width=8, steps=5, seed=0, foo=1)
    r = train(task, 1.0, width=8, steps=5, seed=0, eval_every=5, n_test=16)
    assert repr(r).startswith("TrainResult(task='SameDifferent', d=4, L=3, gamma=1.0, width=8")
    assert len(repr(r)) < 200


# -- sizes that cannot fit: refused before allocating, naming the parameter ----------

GiB = 1 << 30


@pytest.fixture
def sixteen_gib(monkeypatch):
    """Pretend 16 GiB are available, whatever the machine has."""
    from fastsd import _memory
    monkeypatch.setattr(_memory, "available_bytes", lambda: 16 * GiB)


def _psvrt():
    return fastsd.PSVRT(n_train_patterns=4, seed=0)


def _big_rows():
    return np.zeros((10**6, 1))


OVERSIZED = [
    ("train width", "width", lambda: train(TASK, 1.0, **tiny(width=10**9))),
    ("train n_test", "n_test", lambda: train(TASK, 1.0, **tiny(n_test=10**10))),
    ("train batch_size", "batch_size", lambda: train(TASK, 1.0, **tiny(batch_size=10**9))),
    ("ensemble of many", "seed", lambda: train_ensemble(TASK, 1.0, range(10**9), width=2,
                                                        steps=2)),
    ("image task width", "width", lambda: train(_psvrt(), 1.0, **tiny(width=10**9))),
    ("symbols", "L", lambda: SameDifferent(d=10**6, L=10**6)),
    ("symbols d", "d", lambda: SameDifferent(d=10**12, L=2)),
    ("sample_test", "n", lambda: TASK.sample_test(10**12)),
    ("image sample_train", "n", lambda: _psvrt().sample_train(10**10)),
    ("PSVRT layout", "n_patches", lambda: fastsd.PSVRT(n_patches=10**6, n_train_patterns=4)),
    ("PSVRT patterns", "n_train_patterns",
     lambda: fastsd.PSVRT(patch=7, n_train_patterns=10**12)),
    ("Pentomino layout", "width", lambda: fastsd.Pentomino(width=10**5, n_train_shapes=4)),
    ("walkers", "n_walkers", lambda: fastsd.walkers.simulate(16, 512, 10, n_walkers=10**12)),
    ("walkers batch", "batch_size", lambda: fastsd.walkers.simulate(16, 10**11, 1, n_walkers=2,
                                                                     backend="numpy")),
    ("lazy n_test", "n_test", lambda: fastsd.lazy_limit(TASK, n_test=10**11)),
    ("lazy Gram", "L", lambda: fastsd.lazy_limit(SameDifferent(d=1, L=10**6, seed=0),
                                                 pairs=100)),
    ("bayes", "n_test", lambda: fastsd.bayes.accuracy(TASK, "generalizing", 10**12)),
]


def test_a_long_evaluation_window_holds_no_more_batches():
    """Batches are drawn a block of steps at a time (BatchStream): a window of 10^9 steps needs
    what a window of one does, and a window of 20000 steps allocates no window-sized array
    (it used to draw the whole window's batches, 20000 x 128 pairs, 100 MB, at once)."""
    import tracemalloc

    from fastsd.mlp.training import memory_needs

    kw = dict(width=2, batch_size=1000, n_test=4)
    assert ([n.nbytes for n in memory_needs(TASK, 1.0, 0, steps=10**9, eval_every=10**9, **kw)]
            == [n.nbytes for n in memory_needs(TASK, 1.0, 0, steps=10**9, eval_every=1, **kw)])
    for run in (lambda: train(TASK, 1.0, **tiny(steps=20000, eval_every=20000, batch_size=128)),
                lambda: fastsd.lazy_limit(TASK, "logistic_sgd", steps=20000, eval_every=20000,
                                          n_test=4, seed=0)):
        run()                                       # compiled and imported before tracing
        tracemalloc.start()
        try:
            run()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 16 << 20, f"{peak} bytes"


@pytest.mark.parametrize("case, name, call", OVERSIZED, ids=[c[0] for c in OVERSIZED])
def test_oversized_inputs_fail_before_allocating(case, name, call, sixteen_gib):
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(fastsd.SizeTooLargeError) as exc:
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    msg = str(exc.value)
    assert msg.startswith(f"`{name}` = "), msg
    assert " needs " in msg and msg.endswith(".") and "\n" not in msg
    needed = float(msg.split(" needs ")[1].split()[0])
    unit = msg.split(" needs ")[1].split()[1]
    assert needed * 2 ** {"GiB": 30, "TiB": 40, "PiB": 50, "EiB": 60}[unit] > 16 * GiB
    assert "but 16.00 GiB is available" in msg
    assert isinstance(exc.value, MemoryError) and isinstance(exc.value, ValueError)
    assert peak < 64 << 20, f"{case} allocated {peak} bytes before refusing"


@pytest.mark.parametrize("kernel", ["ntk", "nngp", "arccos", "empirical_ntk"])
def test_kernels_on_a_million_rows_fail_before_allocating(kernel, sixteen_gib):
    import tracemalloc

    from fastsd import kernels
    X = _big_rows()
    call = {"empirical_ntk": lambda: kernels.empirical_ntk(X, X, width=8)}.get(
        kernel, lambda: getattr(kernels, kernel)(X, X))
    tracemalloc.start()
    try:
        with pytest.raises(fastsd.SizeTooLargeError,
                           match=r"^`X` = 1000000 rows needs [\d.]+ TiB .*\(1000000 x 1000000 "
                                 r"entries\), but 16.00 GiB is available; compute the kernel on "
                                 r"blocks of rows of `X` or `Y`\.$"):
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_sizes_that_fit_run_and_the_check_reads_real_memory():
    from fastsd import _memory
    avail = _memory.available_bytes()
    assert avail is None or avail > 0
    assert _memory.default_max_bytes() > 0
    # the lazy solve keeps its own error, now a kind of SizeTooLargeError
    from fastsd.kernels import SolveTooLargeError
    assert issubclass(SolveTooLargeError, fastsd.SizeTooLargeError)
    assert train(TASK, 1.0, **TINY).best_test_accuracy >= 0.0


def test_walkers_accept_odd_batches_where_each_sample_is_its_own_coin():
    # App. C.3 step 2: v = u with probability 1/2 per sample, so an odd batch is meaningful
    from fastsd.walkers import _reference, simulate
    u, v, _ = _reference.draw(np.uint64(5), np.arange(200), 16, 0, 7)
    same = (u == v).sum(axis=1)
    assert len(set(same.tolist())) > 3                 # not exactly half of each batch
    assert abs(same.mean() / 7 - 0.5) < 0.05
    a = simulate(16, 7, 20, n_walkers=4, seed=1, backend="numpy")
    b = simulate(16, 7, 20, n_walkers=4, seed=1, backend="cpu")
    np.testing.assert_array_equal(a.omega1, b.omega1)
    assert a.counts.sum() == 4 * 7 * 20


# -- one vocabulary: gamma="lazy", seeds as iterables, results' settings --------------

def test_train_takes_gamma_lazy_resolved_by_the_task():
    from fastsd.scan import get_predictor, lazy_gamma
    r = train(TASK, "lazy", **TINY)
    assert r.gamma == TASK.lazy_gamma() == lazy_gamma(TASK.d)
    same = train(TASK, lazy_gamma(TASK.d), **TINY)
    np.testing.assert_array_equal(r.final_params.w, same.final_params.w)
    # image tasks have no sqrt(d): "lazy" is 1e-5, as the mlp_image predictor makes it
    psvrt = _psvrt()
    rs = train_ensemble([TASK, TASK], ["lazy", 1.0], 0, width=2, steps=2, batch_size=2,
                        eval_every=1, n_test=4)
    assert [x.gamma for x in rs] == [lazy_gamma(3), 1.0]
    want = get_predictor("mlp_image").prepare(dict(task="psvrt", L=4, gamma="lazy", seed=0,
                                                   width=2, steps=2))["gamma"]
    assert psvrt.lazy_gamma() == want == 1e-5
    with pytest.raises(ValueError, match=r"`gamma` must be a number > 0 or 'lazy'.*'LAZY'"):
        train_ensemble(TASK, ["LAZY"], 0, width=2, steps=2)


@pytest.mark.parametrize("seeds", [range(3), np.arange(3), (s for s in range(3)), (0, 1, 2)])
def test_ensemble_seeds_may_be_any_iterable_of_ints(seeds):
    kw = dict(width=2, steps=2, batch_size=2, eval_every=1, n_test=4)
    want = [r.final_params.w for r in train_ensemble(TASK, 1.0, [0, 1, 2], **kw)]
    got = train_ensemble(TASK, 1.0, seeds, **kw)
    assert [r.seed for r in got] == [0, 1, 2]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.final_params.w, w)
    with pytest.raises(TypeError, match=r"`seed` must be a single value in train"):
        train(TASK, 1.0, **tiny(seed=range(2)))


def test_train_result_exposes_its_settings_read_only(trained):
    for name in ("gamma", "d", "L", "sigma2", "width", "steps", "seed", "batch_size", "alpha0",
                 "lr", "eval_every", "n_test", "init", "backend", "path", "dtype", "batches"):
        assert getattr(trained, name) == trained.config[name], name
        assert getattr(type(trained), name).__doc__, name
        with pytest.raises(AttributeError):
            setattr(trained, name, 0)
    r = train(_psvrt(), 1.0, **TINY)
    assert r.L == 4
    with pytest.raises(AttributeError, match=r"no setting 'd'"):
        r.d


def test_scan_predictors_refuse_odd_batches_and_single_test_pairs():
    from fastsd.scan import get_predictor
    mlp = dict(d=4, L=3, gamma=1.0, seed=0, width=2, steps=2)
    image = dict(task="psvrt", L=4, gamma=1.0, seed=0, width=2, steps=2)
    for name, base in (("mlp", mlp), ("mlp_image", image)):
        with pytest.raises(ValueError, match=r"`batch_size` must be an even integer >= 2"):
            get_predictor(name).prepare(dict(base, batch_size=5))
        with pytest.raises(ValueError, match=r"`n_test` must be an integer >= 2; got 1"):
            get_predictor(name).prepare(dict(base, n_test=1))
    with pytest.raises(ValueError, match=r"`n_test` must be an integer >= 2; got 1"):
        get_predictor("lazy_limit").prepare(dict(d=4, L=3, n_test=1))
    with pytest.raises(ValueError, match=r"`batch_size` must be an even integer >= 2"):
        fastsd.lazy_limit(TASK, "logistic_sgd", batch_size=3)


def test_a_multidimensional_gamma_or_seed_array_is_refused_by_name():
    from fastsd import train_ensemble
    for name, value in (("gamma", np.ones((2, 2))), ("seed", np.zeros((1, 2), int))):
        kw = {"gamma": 1.0, "seed": 0, name: value}
        with pytest.raises(ValueError, match=rf"`{name}` must be one value or a 1-d sequence "
                                             r"of values \(one per model\); got an array of "
                                             r"shape \("):
            train_ensemble(TASK, kw["gamma"], kw["seed"], width=4, steps=2)


def test_complex_arrays_are_refused_not_cast():
    from fastsd._validation import check_array
    from fastsd.kernels import ntk
    for bad in (np.ones((2, 3)) + 1j, [[1 + 0j, 2, 3]]):
        with pytest.raises(TypeError, match="`X` must be a real array; got a complex array"):
            check_array("X", bad)
        with pytest.raises(TypeError, match="`X` must be a real array"):
            ntk(bad, np.ones((2, 3)))


def test_kernel_inputs_whose_norms_overflow_are_refused_by_name():
    import warnings

    from fastsd.kernels import ntk
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a clear error, not NumPy's overflow warning
        for name, X, Y in (("X", np.full((2, 3), 1e200), np.ones((1, 3))),
                           ("Y", np.ones((2, 3)), np.full((1, 3), -1e160))):
            with pytest.raises(ValueError, match=rf"`{name}` must have squared row norms "
                                                 r"within float64.*rescale"):
                ntk(X, Y)
        assert np.all(np.isfinite(ntk(np.full((2, 3), 1e150), np.ones((1, 3)))))


# -- values whose numbers the training dtype cannot hold; unordered collections (issue 41) ----

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("task", [SameDifferent(d=16, L=4, seed=0),
                                  fastsd.PSVRT(patch=2, n_patches=2, n_train_patterns=4, seed=0)],
                         ids=["symbols", "images"])
def test_gamma_is_refused_where_its_scale_or_learning_rate_leave_the_dtype(task, dtype):
    """gamma = 1e300 (and in float32 anything above about 1e37) ran: the float32 learning
    rate became inf, every weight NaN, and the run was reported as diverged. The range
    ``gamma_range`` gives is where the output scale and the learning rate are normal numbers
    of the dtype; its ends are accepted, just beyond them refused, naming gamma and the range."""
    info = np.finfo(dtype)
    lo, hi = task.gamma_range(0.1, dtype)
    for g in (lo, hi):
        assert info.tiny <= task.output_scale(g) <= info.max
        assert info.tiny <= task.learning_rate(g, 0.1) <= info.max
    kw = dict(width=2, steps=2, batch_size=2, eval_every=1, n_test=4, seed=0, alpha0=0.1,
              backend="cpu", dtype=dtype)
    for g in (lo * (1 + 1e-9), hi * (1 - 1e-9), 1.0):
        train(task, g, **kw)
    for g in (lo * 0.999, hi * 1.001, 1e300 if dtype == "float32" else hi * 1.5):
        with pytest.raises(ValueError, match=re.escape(f"`gamma` must lie in [{lo:.3g}, {hi:.3g}] "
                                                       f"for this task with alpha0=0.1 in {dtype}")
                           + ".*" + re.escape(f"; got gamma={g!r}")):
            train(task, g, **kw)


@pytest.mark.parametrize("name", ["task", "gamma", "seed"])
@pytest.mark.parametrize("kind", [set, frozenset, dict.fromkeys])
def test_an_unordered_collection_is_refused_where_models_take_one_value_each(name, kind):
    """A set as gamma was accepted: which model took which value was the set's order."""
    values = {"task": [TASK, SameDifferent(d=3, L=4, seed=1)], "gamma": [1.0, 0.5],
              "seed": [0, 1]}
    args = {k: v[0] for k, v in values.items()}
    args[name] = kind(values[name])
    kw = {k: v for k, v in TINY.items() if k != "seed"}
    with pytest.raises(TypeError, match=rf"`{name}` must be one value or an ordered sequence "
                                        rf"of values, one per model .*got a "
                                        rf"{type(args[name]).__name__}, whose order"):
        train_ensemble(args["task"], args["gamma"], args["seed"], backend="cpu", **kw)


def test_a_scan_refuses_clashing_options_and_bad_cells_before_it_starts(tmp_path):
    """backend="numpy" with dtype="float32" failed every cell after the scan had started; a
    gamma the dtype cannot hold likewise. Both are refused before anything runs or is
    written (no store, no grid file)."""
    from fastsd.scan import Grid, plan, run
    grid = Grid(d=[8], L=[2, 3], gamma=[1.0], seed=[0], width=4, steps=4, eval_every=2,
                n_test=8)
    store = tmp_path / "s.jsonl"
    for fn in (run, plan):
        with pytest.raises(ValueError, match=r"`dtype` must be 'float64' with backend 'numpy'; "
                                             r"got 'float32'"):
            fn(grid, "mlp", store, "serial", backend="numpy", dtype="float32")
    bad = Grid(d=[8], L=[2, 3], gamma=[1.0, 1e300], seed=[0], width=4, steps=4, eval_every=2,
               n_test=8)
    with pytest.raises(ValueError, match=r"`gamma` must lie in .* got gamma=1e\+300"):
        run(bad, "mlp", store, "serial", backend="cpu", dtype="float32", progress=False)
    assert list(tmp_path.iterdir()) == []
