"""The machine probe (fastsd._probe): factors measured once per machine, cached, applied.

The factors scale the shipped prices (fitted on the reference machine) to this
one; they must be positive, cached under the machine's key, ignored when the
key differs or the file is damaged, and left at 1 under FASTSD_COSTS=fallback.
"""
import json

import pytest

from fastsd import _probe, bayes
from fastsd.kernels import costs as lazy_costs
from fastsd.mlp import calibration, costs
from fastsd.mlp import prices as mlp_prices


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty cache root, the probe's memo cleared, FASTSD_COSTS unset (auto)."""
    monkeypatch.setattr(_probe, "_MEMO", {})
    monkeypatch.delenv("FASTSD_COSTS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return {"XDG_CACHE_HOME": str(tmp_path)}


def test_each_familys_probe_measures_positive_factors_of_its_kinds():
    for probe, kinds in ((calibration.probe, calibration.PROBE_KINDS),
                         (lazy_costs.probe, lazy_costs.PROBE_KINDS),
                         (_probe.generic, bayes.PROBE_KINDS)):
        f = probe(repeats=2)
        assert set(f) == set(kinds)
        # any real CPU is within a factor of 20 of the development machine
        assert all(0.05 <= v < 20 for v in f.values()), f


def test_fallback_keeps_the_prices_as_fitted():
    fallback = {"FASTSD_COSTS": "fallback"}
    for family in (costs, lazy_costs, bayes):
        assert set(family.machine_factors(fallback).values()) == {1.0}
        assert family.correction(fallback) == 1.0
    assert lazy_costs.prices(fallback) == lazy_costs.PRICES
    assert bayes.prices(fallback) == bayes.PRICES
    assert _probe.busy_cores(environ=fallback) == 0.0


FAKE = {"gemm": 2.5, "scalar": 1.5}


def test_factors_are_measured_once_and_cached_per_family_and_machine(home, monkeypatch):
    calls = []

    def fake(repeats=5):
        calls.append(repeats)
        return dict(FAKE)

    monkeypatch.setattr(costs, "probe", fake)
    assert costs.machine_factors(home) == FAKE
    path = _probe.cache_path(home)
    stored = json.load(open(path))
    entry, = stored["entries"].values()
    assert entry["machine"] == calibration.machine_key("cpu") and stored["format"] == _probe.FORMAT
    assert entry["family"] == "mlp"
    monkeypatch.setattr(_probe, "_MEMO", {})                 # a new process reads the file
    f = costs.machine_factors(home)
    assert f == FAKE and len(calls) == 1
    # scaled prices: each unit by its kind's factor, ``other`` where none is named
    prices = {"gemm": 2.0, "unit": 4.0}
    assert _probe.scale(prices, f, {"gemm": "gemm"}) == {"gemm": 5.0, "unit": 6.0}
    assert _probe.scale(prices, {"a": 3.0, "b": 0.5}, {"gemm": "a"}, other="b") == {
        "gemm": 6.0, "unit": 2.0}
    # an entry of another machine or family under this key's name, a damaged one, one
    # lacking a kind, or a file of another layout: measured again
    ident, = stored["entries"]
    for damage in ({**entry, "machine": dict(entry["machine"], cpu="another CPU")},
                   {**entry, "family": "kernels"},
                   {**entry, "factors": {"gemm": -1.0, "scalar": 1.0}},
                   {**entry, "factors": {"gemm": 1e308, "scalar": 1.0}},
                   {**entry, "factors": {"gemm": 1.0}},
                   "not json {", {"format": 5, "entries": {ident: entry}}):
        with open(path, "w") as fh:
            fh.write(damage if isinstance(damage, str) else json.dumps(
                damage if "format" in damage else
                {"format": _probe.FORMAT, "entries": {ident: damage}}))
        monkeypatch.setattr(_probe, "_MEMO", {})
        costs.machine_factors(home)
    assert len(calls) == 8


def test_another_checkouts_or_familys_entry_is_kept_beside_this_ones(home, monkeypatch):
    """Issue 42: one slot held the factors, so a checkout with other sources probed again
    and overwrote the other's (two caches on one machine held GEMM x1.51 and x9.93). Each
    family and machine key now has its own entry: all stay, and none measures again."""
    measured = []

    def probe_as(factors):
        def measure():
            measured.append(factors)
            return dict(factors)
        return measure

    key_a = calibration.machine_key("cpu")
    key_b = dict(key_a, sources="another checkout's engines")
    fa, fb, fc = dict(FAKE), dict(FAKE, gemm=9.5), dict(FAKE, gemm=0.5)
    kinds = tuple(FAKE)
    assert _probe.factors("mlp", probe_as(fa), key_a, kinds, home) == fa
    assert _probe.factors("mlp", probe_as(fb), key_b, kinds, home) == fb
    assert _probe.factors("other", probe_as(fc), key_a, kinds, home) == fc
    entries = json.load(open(_probe.cache_path(home)))["entries"]
    assert sorted(e["factors"]["gemm"] for e in entries.values()) == [0.5, 2.5, 9.5]
    monkeypatch.setattr(_probe, "_MEMO", {})
    assert _probe.factors("mlp", probe_as({}), key_a, kinds, home) == fa
    assert _probe.factors("mlp", probe_as({}), key_b, kinds, home) == fb
    assert _probe.factors("other", probe_as({}), key_a, kinds, home) == fc
    assert measured == [fa, fb, fc]


def test_runs_that_keep_taking_longer_than_predicted_correct_the_prices(home, monkeypatch):
    """The runs' measured CPU seconds feed back into the prices: a model that predicted
    half the time of its runs predicts twice as long after three of them (the median of
    their ratios: one odd run does not set it); runs too short to tell and entries that
    were never probed keep nothing; the latest runs count."""
    monkeypatch.setattr(costs, "probe", lambda repeats=5: dict(FAKE))
    before = costs.time_model("cpu", "float32", home)
    assert costs.correction(home) == 1.0
    costs.record(10.0, 200.0, home)   # one odd run (the kernels compiled): no correction yet
    for n in range(3):         # the model's own prediction each time: 10 s of work as it says
        assert costs.correction(home) == (1.0 if n < 2 else pytest.approx(2.0))
        costs.record(10.0 * costs.correction(home), 20.0, home)
    assert costs.correction(home) == pytest.approx(2.0)   # it does not feed on itself, and
    costs.record(0.5, 50.0, home)                       # a run too short to tell is left out
    assert costs.correction(home) == pytest.approx(2.0)
    after = costs.time_model("cpu", "float32", home)
    sizes = dict(L=64, input_dim=128, width=256, batch_size=128)
    for path in ("dense", "symbol"):
        assert after.step_seconds(path, **sizes) == pytest.approx(
            2.0 * before.step_seconds(path, **sizes))
    assert "feedback x2.00" in after.describe()
    for _ in range(_probe.FEEDBACK_RUNS):             # the latest runs replace the older
        costs.record(10.0 * costs.correction(home), 5.0, home)
    assert costs.correction(home) == pytest.approx(0.5)
    for _ in range(_probe.FEEDBACK_RUNS):             # and a correction stays in its limits
        costs.record(10.0 * costs.correction(home), 1000.0, home)
    assert costs.correction(home) == _probe.CORRECTION_LIMITS[1]
    # a family without a probed entry keeps nothing (there is nothing to correct yet)
    lazy_costs.record(10.0, 20.0, home)
    assert lazy_costs.correction(home) == 1.0
    # under FASTSD_COSTS=fallback nothing is kept or applied
    costs.record(10.0, 20.0, dict(home, FASTSD_COSTS="fallback"))
    assert costs.correction(dict(home, FASTSD_COSTS="fallback")) == 1.0


def test_the_busy_cores_are_other_processes_work_and_slow_a_wall_time_down():
    """A busy process on this machine shows as at least most of a core of other work,
    whatever else runs (on a machine others keep busy, the cores may already be full); the
    slowdown of W workers beside B busy cores on C cores is max(1, (W + B) / C),
    the share a fair scheduler gives each."""
    import multiprocessing
    import os

    cores = len(os.sched_getaffinity(0))
    quiet = _probe.busy_cores(interval=0.3, environ={})
    assert 0.0 <= quiet <= cores
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    spinner = ctx.Process(target=_spin, args=(stop,))
    spinner.start()
    try:
        import time
        time.sleep(0.5)                                 # the spinner is up
        busy = _probe.busy_cores(interval=0.5, environ={})
    finally:
        stop.set()
        spinner.join()
    assert 0.7 < busy <= cores + 0.01, (quiet, busy)
    assert _probe.slowdown(2, 0.0, 2) == 1.0
    assert _probe.slowdown(2, 2.0, 2) == 2.0
    assert _probe.slowdown(1, 2.0, 2) == 1.5
    assert _probe.slowdown(2, 8.0, 2) == 5.0


def _spin(stop):
    while not stop.is_set():
        pass


def test_the_probe_times_the_threads_cpu_time_not_the_wall_clock(monkeypatch):
    """Time a probe spends waiting for a core another process holds is not its work: the
    probe's clock is the thread's CPU time (a sleep, which uses none, adds nothing)."""
    import time

    assert _probe.clock is time.thread_time
    start = _probe.clock()
    time.sleep(0.2)
    assert _probe.clock() - start < 0.05
    run = calibration.step_timer("dense", L=4, d=8, width=16, batch_size=8, clock=_probe.clock)
    run(1)
    from fastsd import SameDifferent
    monkeypatch.setattr(SameDifferent, "draw_pairs", _waiting(SameDifferent.draw_pairs))
    assert run(4) < 0.1             # four tiny steps that waited 0.2 s each for their batches


def _waiting(draw_pairs):
    """``draw_pairs`` made to wait 0.2 s (asleep, as for a core) before it draws."""
    import time

    def slow(self, *args, **kwargs):
        time.sleep(0.2)
        return draw_pairs(self, *args, **kwargs)
    return slow


def test_without_a_calibration_the_cost_models_use_the_probed_prices(home, monkeypatch):
    monkeypatch.setattr(costs, "probe", lambda repeats=5: {"gemm": 2.0, "scalar": 3.0})
    monkeypatch.setattr(lazy_costs, "probe",
                        lambda repeats=3: {"gemm64": 4.0, "numpy": 6.0, "entries": 5.0})
    monkeypatch.setattr(_probe, "generic", lambda repeats=3: {"gemm64": 4.0, "numpy": 7.0})
    model = costs.time_model("cpu", "float32", home)
    shipped = mlp_prices.fallback("cpu", "float32")
    assert model.source == "probed" and "probe" in model.describe()
    gemm_units = mlp_prices.TABLES["cpu"]["gemm_units"]
    for path, prices in shipped.prices.items():
        for unit, price in prices.items():
            factor = 2.0 if unit in gemm_units else 3.0
            assert model.prices[path][unit] == pytest.approx(factor * price)
    # the GPU's nominal prices are not the host's to scale
    assert costs.time_model("cuda", "float32", home).source == "fallback"
    lazy = lazy_costs.prices(home)     # its GEMMs by "gemm64", its entries by "entries"
    by_kind = {"gemm64": 4.0, "entries": 5.0}
    for unit, price in lazy_costs.PRICES.items():
        factor = by_kind.get(lazy_costs.UNIT_KINDS.get(unit), 6.0)
        assert lazy[unit] == pytest.approx(factor * price)
    assert {"gemm", "cross"} <= {u for u, k in lazy_costs.UNIT_KINDS.items() if k == "gemm64"}
    bayes_features = bayes.cost_features(64, 1024, 2000, "memorizing")
    assert bayes.predicted_seconds(64, 1024, 2000, "memorizing") == pytest.approx(sum(
        (4.0 if unit == "gemm" else 7.0) * price * bayes_features[unit]
        for unit, price in bayes.PRICES.items()))


def test_the_lazy_limits_gemm_and_entry_units_are_priced_near_the_probes_references():
    # the prices were fitted phase by phase, each unit to the time of the work it counts,
    # at the probe's rates: a product's GEMM flop costs about what the probe's does
    assert 0.7 < lazy_costs.PRICES["gemm"] / _probe.REFERENCES["float64_gemm"] < 1.5
    assert 0.7 < lazy_costs.PRICES["test"] / lazy_costs.TABLE["kernel_entry"] < 1.5


def test_kernel_entry_seconds_times_the_matrix_free_test_logits():
    s = lazy_costs.kernel_entry_seconds(repeats=1)
    # between 0.1 ns and 1 us an entry on one thread: a time, not a count
    assert 1e-10 < s < 1e-6, s


def test_float64_gemm_and_numpy_seconds_are_times_not_counts():
    # between 10 TFLOP/s and 100 MFLOP/s on one thread
    assert 1e-13 < _probe.float64_gemm_seconds(repeats=1) < 1e-8
    # between 0.1 ns and 1 us an element
    assert 1e-10 < _probe.numpy_seconds(repeats=1) < 1e-6


def test_every_shipped_price_table_states_its_provenance(tmp_path, monkeypatch):
    from fastsd import _pricing

    for table in (*mlp_prices.TABLES.values(), lazy_costs.TABLE, bayes.TABLE, _probe.REFERENCES):
        assert set(_pricing.PROVENANCE) <= set(table["provenance"])
    pkg = tmp_path / "fakepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "t.json").write_text(json.dumps({"provenance": {"machine": "x"}, "prices": {}}))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match="must state its provenance.*lacks measured, fastsd"):
        _pricing.table("fakepkg", "t.json")


def _probe_cache(root, factors):
    """A cache root holding this machine's probe entry with ``factors``."""
    env = {"XDG_CACHE_HOME": str(root)}
    _probe.factors("mlp", lambda: dict(factors), calibration.machine_key("cpu"),
                   calibration.PROBE_KINDS, env)
    return env


def test_the_same_call_gives_the_same_bits_whatever_the_probe_cache_holds(tmp_path, monkeypatch):
    """Issue 42: path="auto" chose by the probed prices, so the same call, seed and machine
    ran the symbol path with one probe cache and the dense path with another (seen: an idle
    probe and one taken under load), and the weights differed by 0.85% after 500 steps. The
    two caches here make the probed models disagree about the path; the runs must not."""
    from fastsd import SameDifferent, train

    monkeypatch.delenv("FASTSD_COSTS", raising=False)
    caches = [_probe_cache(tmp_path / "gemm-slow", {"gemm": 20.0, "scalar": 0.05}),
              _probe_cache(tmp_path / "scalar-slow", {"gemm": 0.05, "scalar": 20.0})]
    task = SameDifferent(d=16, L=100, seed=0)
    sizes = dict(L=task.L, input_dim=task.input_dim, width=256, batch_size=128)
    probed = []
    for env in caches:
        monkeypatch.setattr(_probe, "_MEMO", {})
        model = costs.time_model("cpu", "float32", env)
        assert model.source == "probed"
        probed.append(model.choose(**sizes))
    assert probed[0] != probed[1], probed           # the probes would have chosen apart
    runs = []
    for env in caches:
        monkeypatch.setattr(_probe, "_MEMO", {})
        monkeypatch.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])
        runs.append(train(task, 1.0, width=256, steps=30, eval_every=10, n_test=64, seed=3,
                          backend="cpu"))
    a, b = runs
    assert a.path == b.path == mlp_prices.fallback("cpu", "float32").choose(**sizes)
    assert (a.final_params.w == b.final_params.w).all()
    assert (a.final_params.a == b.final_params.a).all()
    assert (a.history["test_accuracy"] == b.history["test_accuracy"]).all()


def test_a_store_resumed_under_another_probe_keeps_its_cells_paths(tmp_path, monkeypatch):
    """Issue 42: a resumed store could mix paths when the probe was redone between its runs.
    A scan stopped after its first cell under one probe cache and resumed under another that
    disagrees with it about the path stores the records of an uninterrupted run, on the
    shipped prices' path."""
    from fastsd.scan import Grid, run

    monkeypatch.delenv("FASTSD_COSTS", raising=False)
    caches = [_probe_cache(tmp_path / "gemm-slow", {"gemm": 20.0, "scalar": 0.05}),
              _probe_cache(tmp_path / "scalar-slow", {"gemm": 0.05, "scalar": 20.0})]
    common = dict(d=[16], gamma=[1.0], seed=[0], width=256, steps=30, eval_every=10, n_test=64)
    first, whole = Grid(L=[100], **common), Grid(L=[100, 120], **common)
    options = dict(executor="serial", backend="cpu", progress=False)

    def records(store):
        timeless = ("wall_time", "finished_at")
        return sorted((json.dumps({k: v for k, v in json.loads(line).items() if k not in timeless},
                                  sort_keys=True)
                       for line in open(store) if '"key"' in line))

    monkeypatch.setattr(_probe, "_MEMO", {})
    sizes = dict(L=100, input_dim=32, width=256, batch_size=128)
    assert costs.time_model("cpu", "float32", caches[0]).choose(**sizes) != \
        mlp_prices.fallback("cpu", "float32").choose(**sizes)     # the first probe disagrees
    resumed = tmp_path / "resumed.jsonl"
    for grid, env in ((first, caches[0]), (whole, caches[1])):
        monkeypatch.setattr(_probe, "_MEMO", {})
        monkeypatch.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])
        run(grid, "mlp", str(resumed), **options)
    monkeypatch.setenv("FASTSD_COSTS", "fallback")
    clean = tmp_path / "clean.jsonl"
    run(whole, "mlp", str(clean), **options)
    got = records(resumed)
    assert len(got) == 2 and got == records(clean)
    shipped = mlp_prices.fallback("cpu", "float32")
    for line in got:
        r = json.loads(line)
        assert r["path"] == shipped.choose(L=r["settings"]["L"], input_dim=32, width=256,
                                           batch_size=128)


def test_a_scan_gives_its_measured_cpu_seconds_back_to_its_time_model(home, monkeypatch):
    """A scan keeps, for each predictor with a time model, its groups' predicted seconds and
    the CPU seconds they took, in the family's probe entry (``fastsd._probe.record``)."""
    from fastsd.scan import Grid, plan, run

    monkeypatch.setattr(costs, "probe", lambda repeats=5: {"gemm": 1.0, "scalar": 1.0})
    monkeypatch.setattr(_probe, "FEEDBACK_MIN_SECONDS", 0.0)
    grid = Grid(d=[16], L=[8], gamma=[1.0, 0.5], seed=[0], width=64, steps=40, eval_every=20,
                n_test=64)
    store = str(home["XDG_CACHE_HOME"]) + "/cells.jsonl"
    predicted = plan(grid, "mlp", store, "serial", backend="cpu").work
    start = __import__("time").process_time()
    run(grid, "mlp", store, executor="serial", backend="cpu", progress=False)
    spent = __import__("time").process_time() - start
    entry, = json.load(open(_probe.cache_path(home)))["entries"].values()
    (kept_predicted, kept_measured), = entry["runs"]
    assert kept_predicted == pytest.approx(predicted)
    assert 0 < kept_measured <= spent
    assert costs.correction(home) == 1.0     # one run: not yet (FEEDBACK_MIN_RUNS)


def test_a_cache_of_another_layout_is_left_alone(home, monkeypatch):
    """A checkout of the previous layout (format 5, ``probe.json``) shares the cache root:
    each had rewritten the other's file as damaged. Each layout now has its own file."""
    import os

    old = os.path.join(home["XDG_CACHE_HOME"], "fastsd", "probe.json")
    os.makedirs(os.path.dirname(old))
    text = json.dumps({"format": 5, "entries": {"abc": {"factors": {"gemm": 1.0}}}})
    with open(old, "w") as fh:
        fh.write(text)
    monkeypatch.setattr(costs, "probe", lambda repeats=5: dict(FAKE))
    assert costs.machine_factors(home) == FAKE
    assert _probe.cache_path(home) != old and open(old).read() == text
