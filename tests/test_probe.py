"""The machine probe (fastsd._probe): factors measured once per machine, cached, applied.

The factors scale the shipped prices (fitted on the reference machine) to this
one; they must be positive, cached under the machine's key, ignored when the
key differs or the file is damaged, and left at 1 under FASTSD_COSTS=fallback.
"""
import json

import pytest

from fastsd import _probe, bayes
from fastsd.kernels import costs as lazy_costs
from fastsd.mlp import _cpu, costs


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty cache root, the probe's memo cleared, FASTSD_COSTS unset (auto)."""
    monkeypatch.setattr(_probe, "_MEMO", {})
    monkeypatch.delenv("FASTSD_COSTS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return {"XDG_CACHE_HOME": str(tmp_path)}


def test_the_probe_measures_positive_factors_in_about_a_second():
    f = costs.probe(repeats=2)
    assert set(f) == set(_probe.KINDS)
    # any real CPU is within a factor of 20 of the development machine
    assert all(0.05 <= v < 20 for v in f.values()), f


def test_fallback_keeps_the_prices_as_fitted():
    one = costs.machine_factors({"FASTSD_COSTS": "fallback"})
    assert one == dict.fromkeys(_probe.KINDS, 1.0)
    prices = {"gemm": 2.0, "unit": 3.0}
    assert _probe.scale(prices, one, {"gemm": "gemm"}) == prices


FAKE = {"gemm": 2.5, "scalar": 1.5, "gemm64": 2.0, "entries": 0.5}


def test_factors_are_measured_once_and_cached_per_machine(home, monkeypatch):
    calls = []

    def fake(repeats=5):
        calls.append(repeats)
        return dict(FAKE)

    monkeypatch.setattr(costs, "probe", fake)
    assert costs.machine_factors(home) == FAKE
    path = _probe.cache_path(home)
    stored = json.load(open(path))
    entry, = stored["entries"].values()
    assert entry["machine"] == costs.machine_key("cpu") and stored["format"] == _probe.FORMAT
    monkeypatch.setattr(_probe, "_MEMO", {})                 # a new process reads the file
    f = costs.machine_factors(home)
    assert f == FAKE and len(calls) == 1
    # scaled prices: each unit by its kind's factor, "scalar" where none is named
    prices = {"gemm": 2.0, "entry": 3.0, "unit": 4.0}
    assert _probe.scale(prices, f, {"gemm": "gemm", "entry": "entries"}) == {
        "gemm": 5.0, "entry": 1.5, "unit": 6.0}
    assert _probe.scale(prices, f, {"gemm": "gemm64"}) == {"gemm": 4.0, "entry": 4.5,
                                                          "unit": 6.0}
    # an entry of another machine under this key's name, or a damaged one, or a file of
    # another layout: measured again
    ident, = stored["entries"]
    for damage in ({**entry, "machine": dict(entry["machine"], cpu="another CPU")},
                   {**entry, "factors": {"gemm": -1.0, "scalar": 1.0}},
                   {**entry, "factors": {"gemm": 1e308, "scalar": 1.0, "gemm64": 1.0}},
                   {**entry, "factors": {"gemm": 1.0, "scalar": 1.0, "gemm64": 1.0}},
                   "not json {", {"format": 4, "machine": entry["machine"],
                                  "factors": entry["factors"]}):
        with open(path, "w") as fh:
            fh.write(damage if isinstance(damage, str) else json.dumps(
                damage if "format" in damage else
                {"format": _probe.FORMAT, "entries": {ident: damage}}))
        monkeypatch.setattr(_probe, "_MEMO", {})
        costs.machine_factors(home)
    assert len(calls) == 7


def test_another_checkouts_entry_is_kept_beside_this_ones(home, monkeypatch):
    """Issue 42: one slot held the factors, so a checkout with other sources probed again
    and overwrote the other's (two caches on one machine held GEMM x1.51 and x9.93). Each
    machine key now has its own entry: both stay, and neither measures again."""
    measured = []

    def probe_as(factors):
        def measure():
            measured.append(factors)
            return dict(factors)
        return measure

    key_a = costs.machine_key("cpu")
    key_b = dict(key_a, sources="another checkout's engines")
    fa, fb = dict(FAKE), dict(FAKE, gemm=9.5)
    assert _probe.factors(probe_as(fa), key_a, home) == fa
    assert _probe.factors(probe_as(fb), key_b, home) == fb
    entries = json.load(open(_probe.cache_path(home)))["entries"]
    assert sorted(e["factors"]["gemm"] for e in entries.values()) == [2.5, 9.5]
    monkeypatch.setattr(_probe, "_MEMO", {})
    assert _probe.factors(probe_as({}), key_a, home) == fa
    assert _probe.factors(probe_as({}), key_b, home) == fb
    assert measured == [fa, fb]


def test_the_probe_times_the_threads_cpu_time_not_the_wall_clock(monkeypatch):
    """Time a probe spends waiting for a core another process holds is not its work: the
    probe's clock is the thread's CPU time (a sleep, which uses none, adds nothing)."""
    import time

    assert _probe.clock is time.thread_time
    start = _probe.clock()
    time.sleep(0.2)
    assert _probe.clock() - start < 0.05
    run = costs.step_timer("dense", L=4, d=8, width=16, batch_size=8, clock=_probe.clock)
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
    monkeypatch.setattr(costs, "probe",
                        lambda repeats=5: {"gemm": 2.0, "scalar": 3.0, "gemm64": 4.0,
                                           "entries": 5.0})
    model = costs.load("cpu", "float32", home)
    shipped = costs.fallback("cpu", "float32")
    assert model.source == "probed" and "probe" in model.describe()
    for path, prices in shipped.prices.items():
        for unit, price in prices.items():
            factor = 2.0 if unit in _cpu.GEMM_UNITS else 3.0
            assert model.prices[path][unit] == pytest.approx(factor * price)
    # the GPU's nominal prices are not the host's to scale
    assert costs.load("cuda", "float32", home).source == "fallback"
    lazy = lazy_costs.prices(home)     # float64: its GEMMs by "gemm64", its entries by "entries"
    by_kind = {"gemm64": 4.0, "entries": 5.0}
    for unit, price in lazy_costs.PRICES.items():
        factor = by_kind.get(lazy_costs.UNIT_KINDS.get(unit), 3.0)
        assert lazy[unit] == pytest.approx(factor * price)
    assert {"gemm", "cross"} <= {u for u, k in lazy_costs.UNIT_KINDS.items() if k == "gemm64"}
    bayes_features = bayes.cost_features(64, 1024, 2000, "memorizing")
    assert bayes.predicted_seconds(64, 1024, 2000, "memorizing") == pytest.approx(sum(
        (4.0 if unit == "gemm" else 3.0) * price * bayes_features[unit]
        for unit, price in bayes.PRICES.items()))


def test_the_lazy_limits_gemm_and_entry_units_are_priced_near_the_probes_references():
    # the prices were fitted phase by phase, each unit to the time of the work it counts,
    # at the probe's rates: a product's GEMM flop costs about what the probe's does
    assert 0.7 < lazy_costs.PRICES["gemm"] / _probe.REFERENCE_FLOAT64_GEMM < 1.5
    assert 0.7 < lazy_costs.PRICES["test"] / _probe.REFERENCE_KERNEL_ENTRY < 1.5


def test_kernel_entry_seconds_times_the_matrix_free_test_logits():
    s = _probe.kernel_entry_seconds(repeats=1)
    # between 0.1 ns and 1 us an entry on one thread: a time, not a count
    assert 1e-10 < s < 1e-6, s


def test_float64_gemm_seconds_times_the_flows_product():
    L, R = _probe.FLOAT64_GEMM_SHAPE
    s = _probe.float64_gemm_seconds(repeats=1)
    # between 10 TFLOP/s and 100 MFLOP/s on one thread: a time, not a count
    assert 1e-13 < s < 1e-8, s


def _probe_cache(root, factors):
    """A cache root holding this machine's probe entry with ``factors``."""
    env = {"XDG_CACHE_HOME": str(root)}
    _probe.factors(lambda: dict(factors), costs.machine_key("cpu"), env)
    return env


def test_the_same_call_gives_the_same_bits_whatever_the_probe_cache_holds(tmp_path, monkeypatch):
    """Issue 42: path="auto" chose by the probed prices, so the same call, seed and machine
    ran the symbol path with one probe cache and the dense path with another (seen: an idle
    probe and one taken under load), and the weights differed by 0.85% after 500 steps. The
    two caches here make the probed models disagree about the path; the runs must not."""
    from fastsd import SameDifferent, train

    monkeypatch.delenv("FASTSD_COSTS", raising=False)
    caches = [_probe_cache(tmp_path / "gemm-slow", dict.fromkeys(_probe.KINDS, 1.0) | {
                  "gemm": 20.0, "scalar": 0.05}),
              _probe_cache(tmp_path / "scalar-slow", dict.fromkeys(_probe.KINDS, 1.0) | {
                  "gemm": 0.05, "scalar": 20.0})]
    task = SameDifferent(d=16, L=100, seed=0)
    sizes = dict(L=task.L, input_dim=task.input_dim, width=256, batch_size=128)
    probed = []
    for env in caches:
        monkeypatch.setattr(_probe, "_MEMO", {})
        model = costs.load("cpu", "float32", env)
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
    assert a.path == b.path == costs.fallback("cpu", "float32").choose(**sizes)
    assert (a.final_params.w == b.final_params.w).all()
    assert (a.final_params.a == b.final_params.a).all()
    assert (a.history["test_accuracy"] == b.history["test_accuracy"]).all()
