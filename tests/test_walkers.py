"""The walker ensemble (App. C.3): core against a transcription of the paper, backends, splits.

The truth for the deterministic core is ``paper_process`` below: a literal,
one-sample-at-a-time transcription of steps 1-5 of App. C.3, fed with
pre-drawn symbols and tie coins. The NumPy reference, the Numba kernels and
the CUDA kernels (on Numba's simulator unless NUMBA_ENABLE_CUDASIM=0) must
reproduce it exactly. ``simulate`` must then give the same trajectories for a
seed on every backend, thread count and split of the walkers into calls.
"""
import hashlib
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from backends import over_backends
from hypothesis import strategies as st

from fastsd.walkers import CATEGORIES, WalkerResult, _cpu, simulate
from fastsd.walkers import _reference as ref
from fastsd.walkers.process import FAMILY

BACKENDS = ("numpy", "cpu", "cuda")
CORES = ("numpy", "cpu", "cpu-direct", "cpu-pairs", "cuda")


def paper_process(u, v, coin, L, N, a):
    """App. C.3 for one walker, sample by sample; also counts the mu categories."""
    w1, w2 = [0] * L, [0] * L
    b1, b2 = [0] * L, [0] * L
    counts, active = [0] * 4, [0] * 4
    n = 0
    for uu, vv, cc in zip(u, v, coin):
        rho = w1[uu] + w2[vv]
        act = rho > 0 or (rho == 0 and cc == 1)
        s1, s2 = w1[uu] + w1[vv], w2[uu] + w2[vv]
        cat = ("positive" if s1 > 0 and s2 > 0 else "negative" if s1 < 0 and s2 < 0
               else "mixed" if s1 * s2 < 0 else "zero")
        counts[CATEGORIES.index(cat)] += 1
        if act:
            active[CATEGORIES.index(cat)] += 1
            up = (a > 0 and uu == vv) or (a < 0 and uu != vv)
            b1[uu] += 1 if up else -1
            b2[vv] += 1 if up else -1
        n += 1
        if n == N:
            w1 = [x + y for x, y in zip(w1, b1)]
            w2 = [x + y for x, y in zip(w2, b2)]
            b1, b2, n = [0] * L, [0] * L, 0
    return w1, w2, counts, active


def core(backend, u, v, coin, L, N, a):
    """The backend's deterministic core on pre-drawn (W, n) arrays.

    "cpu" decides each batch as ``_cpu.use_pairs`` says; "cpu-direct" always
    sample by sample, "cpu-pairs" always pair by pair from the batch's
    histogram (``_cpu.batch_pairs``).
    """
    if backend in ("cpu-direct", "cpu-pairs"):
        out = ref.states(u.shape[0], L)
        _cpu.run_into(u, v, coin, L, N, a, backend == "cpu-pairs", *out)
        return out
    return FAMILY.module(backend).run(u, v, coin, L, N, a)


@st.composite
def drawn(draw, max_walkers=3):
    L = draw(st.integers(2, 5))
    N = draw(st.integers(1, 6))
    T = draw(st.integers(1, 6))
    W = draw(st.integers(1, max_walkers))
    a = draw(st.sampled_from([1, -1]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    u = rng.integers(0, L, (W, N * T))
    same = rng.random((W, N * T)) < draw(st.sampled_from([0.0, 0.5, 1.0]))
    v = np.where(same, u, rng.integers(0, L, (W, N * T)))
    coin = rng.integers(0, 2, (W, N * T))
    return u, v, coin, L, N, a


@pytest.mark.parametrize("backend", CORES)
@settings(max_examples=25, deadline=None)
@given(case=drawn())
def test_core_reproduces_the_paper_process_exactly(backend, case):
    u, v, coin, L, N, a = case
    got = core(backend, u, v, coin, L, N, a)
    for w in range(u.shape[0]):
        want = paper_process(u[w].tolist(), v[w].tolist(), coin[w].tolist(), L, N, a)
        for g, x in zip(got, want):
            np.testing.assert_array_equal(g[w], x)


@pytest.mark.parametrize("backend", CORES)
@settings(max_examples=10, deadline=None)
@given(case=drawn())
def test_a_walker_that_is_never_active_never_moves(backend, case):
    # From omega = 0 every overlap is 0, so with the tie coin always "inactive"
    # no sample is active, whatever the symbols: the state stays at 0.
    u, v, coin, L, N, a = case
    omega1, omega2, counts, active = core(backend, u, v, np.zeros_like(coin), L, N, a)
    assert not omega1.any() and not omega2.any() and not active.any()
    np.testing.assert_array_equal(counts[:, CATEGORIES.index("zero")], u.shape[1])


@pytest.mark.parametrize("readout", [1, -1])
@pytest.mark.parametrize("L, batch_size", [(5, 7), (3, 9)])   # CPU: by sample, by pair
def test_every_backend_gives_the_same_trajectories(readout, L, batch_size):
    assert _cpu.use_pairs(L, batch_size) == (L == 3)
    kw = dict(L=L, batch_size=batch_size, n_iters=6, readout=readout, n_walkers=4, seed=2024)
    results = [simulate(backend=b, **kw) for b in BACKENDS]
    assert results[0].omega1.any()          # the walkers moved
    for r in results[1:]:
        for name in ("omega1", "omega2", "counts", "active"):
            np.testing.assert_array_equal(getattr(r, name), getattr(results[0], name))


@over_backends("walkers")
def test_splitting_walkers_into_calls_changes_nothing(backend):
    kw = dict(L=6, batch_size=5, n_iters=5, readout=-1, seed=7, backend=backend)
    whole = simulate(n_walkers=5, **kw)
    parts = [simulate(n_walkers=2, **kw), simulate(n_walkers=3, walker_offset=2, **kw)]
    for name in ("omega1", "omega2", "counts", "active"):
        np.testing.assert_array_equal(getattr(whole, name),
                                      np.concatenate([getattr(p, name) for p in parts]))
    # walker k depends on its global index: a shifted call gives shifted walkers
    shifted = simulate(n_walkers=2, walker_offset=3, **kw)
    np.testing.assert_array_equal(shifted.omega1, whole.omega1[3:5])


@over_backends("walkers")
def test_splitting_batches_into_calls_changes_nothing(backend, monkeypatch):
    """The batches go to the kernels in spans of bounded time (fastsd._calls): one batch a
    call, or ever longer calls, give the bits of one call."""
    from fastsd import _calls

    kw = dict(L=5, batch_size=3, n_iters=40, readout=1, n_walkers=3, seed=2, backend=backend)
    runs = []
    for seconds in (0.0, math.inf):
        monkeypatch.setattr(_calls, "CALL_SECONDS", seconds)
        runs.append(simulate(**kw))
    core = FAMILY.module("numpy").simulate(*_seed_and_sizes(kw))
    for name, want in zip(("omega1", "omega2", "counts", "active"), core):
        for r in runs:
            np.testing.assert_array_equal(getattr(r, name), want)


def _seed_and_sizes(kw):
    from fastsd.walkers.process import seed_state
    return (seed_state(kw["seed"])[0], 0, kw["n_walkers"], kw["L"], kw["batch_size"],
            kw["n_iters"], kw["readout"])


def _digest(results):
    return hashlib.sha256(b"".join(getattr(r, k).tobytes() for r in results
                                   for k in ("omega1", "omega2", "counts", "active"))).hexdigest()


def test_cpu_trajectories_do_not_depend_on_the_thread_count():
    # L = 16 with batch 64 decides sample by sample, with batch 256 pair by pair
    runs = [dict(L=16, batch_size=b, n_iters=10, readout=1, n_walkers=33, seed=99)
            for b in (64, 256)]
    code = ("import numba, test_walkers as t; from fastsd.walkers import simulate; "
            f"print(numba.get_num_threads(), t._digest([simulate(backend='cpu', **kw) "
            f"for kw in {runs!r}]))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.path.dirname(__file__)]))
    out = {}
    for threads in ("1", "2"):
        env["NUMBA_NUM_THREADS"] = threads
        res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)
        n, digest = res.stdout.split()
        assert n == threads
        out[threads] = digest
    assert out["1"] == out["2"] == _digest([simulate(backend="numpy", **kw) for kw in runs])


def test_same_seed_same_run_and_other_seed_other_run():
    kw = dict(L=8, batch_size=16, n_iters=10, n_walkers=3, backend="cpu")
    a, b, c = simulate(seed=1, **kw), simulate(seed=1, **kw), simulate(seed=2, **kw)
    np.testing.assert_array_equal(a.omega1, b.omega1)
    assert (a.omega1 != c.omega1).any()
    fresh = simulate(seed=None, **kw)
    again = simulate(seed=fresh.config["seed"], **kw)
    np.testing.assert_array_equal(fresh.omega1, again.omega1)
    np.testing.assert_array_equal(simulate(seed=np.random.SeedSequence(1), **kw).omega1, a.omega1)


def test_first_batch_from_zero_is_a_fair_coin_per_sample():
    # At omega = 0 every sample has rho = 0 and s1 = s2 = 0: all fall in the
    # "zero" category and each is active with probability 1/2 (App. C.3 step 3).
    W, N = 200, 50
    r = simulate(L=8, batch_size=N, n_iters=1, readout=1, n_walkers=W, seed=3, backend="cpu")
    zero = CATEGORIES.index("zero")
    np.testing.assert_array_equal(r.counts[:, zero], N)
    frac = r.active[:, zero].sum() / (W * N)
    assert abs(frac - 0.5) < 4 * np.sqrt(0.25 / (W * N))
    # each active sample moves omega1 by +-1, so |sum omega1| <= active count and has its parity
    s = r.omega1.sum(axis=1)
    assert np.all(np.abs(s) <= r.active[:, zero]) and np.all((s - r.active[:, zero]) % 2 == 0)


@pytest.mark.parametrize("readout, sign", [(1, 1), (-1, -1)])
def test_walkers_become_parallel_or_antiparallel(readout, sign):
    # App. C.4: alignment -> +1 for a > 0 and -1 for a < 0; mu (mixed) near 1/2
    r = simulate(L=16, batch_size=512, n_iters=100, readout=readout, n_walkers=24, seed=11,
                 backend="cpu")
    assert sign * np.nanmean(r.alignment()) > 0.95
    assert abs(np.nanmedian(r.norm_ratio()) - 1) < 0.2
    assert abs(r.mu_summary()["mean"] - 0.5) < 0.05


def test_result_statistics_and_record():
    counts = np.array([[4, 0, 10, 2], [2, 2, 0, 4], [1, 1, 5, 1]])
    active = np.array([[4, 0, 6, 1], [1, 0, 0, 2], [1, 0, 2, 1]])
    omega1 = np.array([[1, 2], [0, 0], [3, 0]])
    omega2 = np.array([[2, 4], [1, 1], [-6, 0]])
    r = WalkerResult(omega1, omega2, counts, active, config={"L": 2})
    np.testing.assert_allclose(r.mu("mixed"), [0.6, np.nan, 0.4])
    np.testing.assert_allclose(r.mu("positive"), [1.0, 0.5, 1.0])
    s = r.mu_summary("mixed")
    assert s["n_runs"] == 2 and s["mean"] == pytest.approx(0.5)
    assert s["two_sd"] == pytest.approx(2 * np.std([0.6, 0.4], ddof=1))
    np.testing.assert_allclose(r.alignment(), [1.0, np.nan, -1.0])
    np.testing.assert_allclose(r.norm_ratio(), [0.5, 0.0, 0.5])
    rec = r.to_record()
    back = json.loads(json.dumps(rec, allow_nan=False))
    assert back["mu"]["mixed"]["n_runs"] == 2
    assert back["mu_runs"]["mixed"] == [0.6, None, 0.4]
    assert back["omega2"] == omega2.tolist() and back["L"] == 2
    with pytest.raises(ValueError, match=r"`category` must be one of 'positive'"):
        r.mu("both")


def test_simulate_record_is_strict_json():
    r = simulate(L=4, batch_size=3, n_iters=2, readout=-1, n_walkers=2, seed=5, backend="numpy")
    rec = json.loads(json.dumps(r.to_record(), allow_nan=False))
    assert rec["seed"] == 5 and rec["n_iters"] == 2 and rec["mu"]["zero"]["n_runs"] == 2
    assert rec["backend"] == "numpy" and rec["readout"] == -1 and len(rec["omega1"]) == 2


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(L=1), ValueError, r"`L` must be an integer >= 2; got 1\."),
    (dict(L=2**16 + 1), ValueError, r"`L` must be an integer <= 65536; got 65537\."),
    (dict(L=4.0), TypeError, r"`L` must be an integer >= 2; got 4\.0\."),
    (dict(batch_size=0), ValueError, r"`batch_size` must be an integer >= 1; got 0\."),
    (dict(n_iters=0), ValueError, r"`n_iters` must be an integer >= 1; got 0\."),
    (dict(n_walkers=0), ValueError, r"`n_walkers` must be an integer >= 1; got 0\."),
    (dict(readout=0), ValueError, r"`readout` must be \+1 or -1; got 0\."),
    (dict(readout=0.5), ValueError, r"`readout` must be \+1 or -1; got 0\.5\."),
    (dict(readout="+1"), TypeError, r"`readout` must be \+1 or -1; got '\+1'\."),
    (dict(readout=True), TypeError, r"`readout` must be \+1 or -1; got True\."),
    (dict(walker_offset=-1), ValueError, r"`walker_offset` must be an integer >= 0; got -1\."),
    (dict(seed=-3), ValueError, r"`seed` must be an integer >= 0; got -3\."),
    (dict(seed=np.random.default_rng(0)), TypeError, r"`seed` must be an integer >= 0, a "),
    (dict(backend="gpu"), ValueError, r"`backend` must be one of 'auto', 'numpy'"),
])
def test_bad_inputs_get_clear_errors(kwargs, exc, message):
    args = dict(L=4, batch_size=2, n_iters=1, readout=1, n_walkers=1, seed=0, backend="numpy")
    args.update(kwargs)
    with pytest.raises(exc, match=message):
        simulate(**args)


def test_readout_accepts_float_one():
    a = simulate(L=3, batch_size=2, n_iters=2, readout=-1.0, n_walkers=1, seed=0, backend="numpy")
    assert a.config["readout"] == -1
