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
    assert stored["machine"] == costs.machine_key("cpu") and stored["format"] == _probe.FORMAT
    monkeypatch.setattr(_probe, "_MEMO", {})                 # a new process reads the file
    f = costs.machine_factors(home)
    assert f == FAKE and len(calls) == 1
    # scaled prices: each unit by its kind's factor, "scalar" where none is named
    prices = {"gemm": 2.0, "entry": 3.0, "unit": 4.0}
    assert _probe.scale(prices, f, {"gemm": "gemm", "entry": "entries"}) == {
        "gemm": 5.0, "entry": 1.5, "unit": 6.0}
    assert _probe.scale(prices, f, {"gemm": "gemm64"}) == {"gemm": 4.0, "entry": 4.5,
                                                          "unit": 6.0}
    # another machine's file, or a damaged one, is measured again
    for damage in ({**stored, "machine": dict(stored["machine"], cpu="another CPU")},
                   {**stored, "factors": {"gemm": -1.0, "scalar": 1.0}},
                   {**stored, "factors": {"gemm": 1e308, "scalar": 1.0, "gemm64": 1.0}},
                   {**stored, "factors": {"gemm": 1.0, "scalar": 1.0, "gemm64": 1.0}},
                   "not json {"):
        with open(path, "w") as fh:
            fh.write(damage if isinstance(damage, str) else json.dumps(damage))
        monkeypatch.setattr(_probe, "_MEMO", {})
        costs.machine_factors(home)
    assert len(calls) == 6


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
    """A cache root holding this machine's probe file with ``factors``."""
    path = _probe.cache_path({"XDG_CACHE_HOME": str(root)})
    path_dir = root / "fastsd"
    path_dir.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        json.dump({"format": _probe.FORMAT, "machine": costs.machine_key("cpu"),
                   "factors": factors}, fh)
    return {"XDG_CACHE_HOME": str(root)}


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
