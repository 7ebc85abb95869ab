"""The measured cost model of the training paths (fastsd.mlp.costs): its form, its cache, its use.

No test here times anything to assert on it: the calibrations below use tiny shapes and
the assertions are about what is stored, read back and chosen.
"""
import inspect
import json
import os

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fastsd import SameDifferent, train, train_ensemble
from fastsd.mlp import _cpu, _cuda, calibration, costs
from fastsd.mlp import prices as mlp_prices
from fastsd.params import CALIBRATE

#: Tiny shapes, two or more per path: a calibration of a fraction of a second.
TINY_SHAPES = (("dense", 4, 4, 8, 4, 1, "symbols"), ("dense", 4, 8, 16, 8, 2, "noise"),
               ("dense", 4, 8, 8, 4, 1, "images"),
               ("symbol", 4, 4, 8, 4, 1, "symbols"), ("symbol", 8, 4, 16, 8, 2, "symbols"),
               ("sparse", 4, 8, 8, 4, 1, "images"), ("sparse", 4, 128, 16, 8, 2, "images"),
               ("sparse", 4, 8, 8, 4, 1, "stamps"), ("sparse", 4, 128, 16, 8, 2, "stamps"))


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An environment whose cache root is a fresh folder, calibrations allowed; the machine
    probe (tests/test_probe.py) answers fixed factors."""
    from fastsd import _probe

    monkeypatch.setattr(_probe, "_MEMO", {})
    monkeypatch.setattr(costs, "probe", lambda repeats=5: {"gemm": 2.0, "scalar": 1.5})
    return {"XDG_CACHE_HOME": str(tmp_path / "cache"), costs.ENV: "auto"}


def tiny_calibration(home, dtype="float32"):
    return calibration.calibrate("cpu", dtype, shapes=TINY_SHAPES, repeats=1, seconds=0.001,
                           environ=home)


# -- the model's form ----------------------------------------------------------------

SIZES = st.fixed_dictionaries({"L": st.integers(2, 4096), "input_dim": st.integers(1, 4096),
                               "width": st.integers(1, 8192), "batch_size": st.integers(1, 1024),
                               "models": st.integers(1, 64)})
PRICES = st.dictionaries(st.sampled_from(["step", "model", "unit", "input", "weights", "gemm",
                                          "noise", "draw", "pair", "update", "rows",
                                          "flop", "entry", "stamp", "pixel", "scan"]),
                         st.floats(0, 1e-3), min_size=1)
MODELS = [mlp_prices.fallback("cpu", "float32"), mlp_prices.fallback("cpu", "float64"),
          mlp_prices.fallback("cuda", "float32")]


@given(sizes=SIZES, grow=st.sampled_from(["L", "input_dim", "width", "batch_size", "models",
                                         "entries"]),
       by=st.integers(1, 1000), prices=PRICES,
       path=st.sampled_from(["dense", "symbol", "sparse"]),
       backend=st.sampled_from(["cpu", "cuda"]), images=st.sampled_from(["images", "stamps"]))
@example(sizes={"L": 2, "input_dim": 1, "width": 1, "batch_size": 1, "models": 1}, grow="L",
         by=1, prices={"pair": 1.0}, path="symbol", backend="cpu",
         images="images")                                                # half a draw per kind
def test_a_step_takes_no_less_time_when_any_size_grows(sizes, grow, by, prices, path, backend,
                                                       images):
    # for the shipped prices and for any non-negative ones a calibration can fit
    fitted = mlp_prices.CostModel(backend, "float32", {"dense": prices, "symbol": prices,
                                                  "sparse": prices}, "calibrated")
    # the sparse path trains images (blurred, or sharp stamps), of a number of pixels each
    kind = dict(inputs=images, entries=1.0 + sizes["L"] / 7) if path == "sparse" else {}
    sizes = dict(sizes, **kind)
    if grow == "entries" and path != "sparse":
        return
    bigger = dict(sizes, **{grow: sizes[grow] + by})
    for model in MODELS + [fitted]:
        if model.backend != backend and model is not fitted:
            continue
        assert model.step_seconds(path, **bigger) >= model.step_seconds(path, **sizes)
        if path == "dense" and not kind:    # inputs that change every step cost more
            for inputs in ("noise", "images", "stamps"):
                assert (model.step_seconds(path, **sizes, inputs=inputs)
                        >= model.step_seconds(path, **sizes))


@given(sizes=SIZES, steps=st.integers(1, 10_000), more=st.integers(1, 10_000),
       eval_every=st.integers(1, 5000))
def test_training_takes_no_less_time_with_more_steps_or_evaluations(sizes, steps, more,
                                                                    eval_every):
    model = mlp_prices.fallback()
    kw = dict(sizes, eval_every=eval_every, n_test=64)
    t = model.train_seconds("symbol", steps=steps, **kw)
    assert model.train_seconds("symbol", steps=steps + more, **kw) >= t > 0
    assert model.train_seconds("symbol", steps=steps, **dict(kw, eval_every=1)) >= t
    assert model.train_seconds("symbol", steps=steps, extra_evals=1, **kw) > t


def test_the_choice_is_per_model_and_ties_go_dense():
    model = mlp_prices.fallback()
    sizes = dict(L=64, input_dim=512, width=1024, batch_size=128)
    assert model.choose(**sizes) == "symbol"
    flat = mlp_prices.CostModel("cpu", "float32", {"dense": {"step": 1.0}, "symbol": {"step": 1.0}},
                           "calibrated")
    assert flat.choose(**sizes) == "dense"
    # the symbol path's time grows with L and the dense path's does not: one crossover
    L = mlp_prices.crossover(model, input_dim=512, width=1024, batch_size=128)
    assert model.choose(**dict(sizes, L=L)) == "symbol"
    assert model.choose(**dict(sizes, L=L + 1)) == "dense"
    assert mlp_prices.crossover(flat, input_dim=512, width=1024, batch_size=128) == 1


def test_the_shipped_prices_pick_the_faster_path_at_the_measured_points():
    # prices_cpu.json's "check": both paths timed side by side by bench/bench_paths.py on the
    # machine the prices were fitted on; wherever one path was more than 15% faster (closer
    # is a tie there: a busy machine's runs of one cell spread by about 10%), the shipped
    # prices pick it, and they predict each time within a factor 1.5.
    model = mlp_prices.fallback("cpu", "float32")
    check = mlp_prices.TABLES["cpu"]["check"]
    assert len(check["points"]) >= 12
    decided = 0
    for measured in check["points"]:
        L, d = measured["L"], measured["d"]
        sizes = dict(L=L, input_dim=2 * d, width=check["width"], batch_size=check["batch_size"])
        dense, symbol = measured["dense"], measured["symbol"]
        if max(dense, symbol) > 1.15 * min(dense, symbol):
            decided += 1
            assert model.choose(**sizes) == ("dense" if dense < symbol else "symbol"), (L, d)
        for path in ("dense", "symbol"):
            pred = model.step_seconds(path, models=check["models"], **sizes)
            assert 1 / 1.5 < pred / measured[path] < 1.5, (L, d, path)
    assert decided >= len(check["points"]) - 2


def test_the_gpu_keeps_its_operation_count_choice():
    # no GPU has calibrated backend "cuda": its nominal prices choose as its operation
    # counts did, symbol when 2 L (B + L) m < 4 B p m
    model = costs.time_model("cuda", "float32")
    assert model.source == "fallback"
    for L in (2, 16, 100, 256, 1000, 4096):
        for d in (4, 64, 256, 1024):
            B, m, p = 128, 1024, 2 * d
            want = "symbol" if 2 * L * (B + L) * m < 4 * B * p * m else "dense"
            assert model.choose(L=L, input_dim=p, width=m, batch_size=B) == want, (L, d)


def test_bad_sizes_and_paths_are_refused_by_name():
    model = mlp_prices.fallback()
    sizes = dict(L=8, input_dim=8, width=8, batch_size=8)
    with pytest.raises(ValueError, match="`path` must be one of"):
        model.step_seconds("images", **sizes)
    with pytest.raises(ValueError, match="`inputs` must be 'images' or 'stamps' on the sparse path"):
        model.step_seconds("sparse", **sizes, entries=10)
    with pytest.raises(TypeError, match="`entries` must be"):
        model.step_seconds("sparse", **sizes, inputs="images")
    with pytest.raises(ValueError, match="`width` must be an integer >= 1"):
        model.step_seconds("dense", **dict(sizes, width=0))
    with pytest.raises(ValueError, match="`L` must be an integer >= 2"):
        model.step_seconds("symbol", **dict(sizes, L=1))
    with pytest.raises(ValueError, match="`inputs` must be 'symbols' on the symbol path .*"
                                         "got 'noise'"):
        model.step_seconds("symbol", **sizes, inputs="noise")
    with pytest.raises(ValueError, match="`inputs` must be one of 'symbols', 'noise', 'images'"):
        model.step_seconds("dense", **sizes, inputs=True)
    # the timers check as the model does: the symbol path trains clean symbol pairs, and a
    # batch is half same pairs (measure('symbol', inputs='noise') timed a run train refuses)
    for inputs in ("noise", "images"):
        with pytest.raises(ValueError, match="`inputs` must be 'symbols' on the symbol path"):
            calibration.measure("symbol", L=4, d=8, width=8, batch_size=4, inputs=inputs, steps=2,
                          repeats=1)
    with pytest.raises(ValueError, match="`batch_size` must be an even integer >= 2"):
        calibration.step_timer("dense", L=4, d=8, width=8, batch_size=3)
    with pytest.raises(ValueError, match="`backend` must have two training paths"):
        costs.time_model("numpy")
    with pytest.raises(ValueError, match="`dtype` must be one of"):
        costs.time_model("cpu", "float16")
    with pytest.raises(ValueError, match="`FASTSD_COSTS` must be one of 'auto', 'fallback'"):
        costs.time_model("cpu", environ={costs.ENV: "calibrated"})


# -- calibration and its cache ---------------------------------------------------------

def test_a_calibration_round_trips_through_the_cache(home):
    model = tiny_calibration(home)
    assert model.source == "calibrated" and model.machine == calibration.machine_key("cpu")
    assert [pt["path"] for pt in model.points] == [s[0] for s in TINY_SHAPES]
    assert all(pt["seconds"] > 0 for pt in model.points)
    assert all(v >= 0 for units in model.prices.values() for v in units.values())
    path = calibration.cache_path("cpu", home)
    assert path.startswith(home["XDG_CACHE_HOME"]) and path.endswith("costs/cpu.json")
    assert costs.time_model("cpu", "float32", home) == model
    assert calibration.cached("cpu", "float64", home) is None       # only what was measured
    other = tiny_calibration(home, "float64")
    assert costs.time_model("cpu", "float32", home) == model and costs.time_model("cpu", "float64",
                                                                      home) == other
    # FASTSD_COSTS=fallback ignores it
    assert costs.time_model("cpu", "float32", dict(home, **{costs.ENV: "fallback"})) == \
        mlp_prices.fallback()


@pytest.mark.parametrize("field, value", [("cpu", "another CPU"), ("cores", 64),
                                          ("sources", "0" * 16), ("fastsd", "0.0.0")])
def test_a_calibration_of_another_machine_or_other_sources_is_ignored(home, field, value):
    tiny_calibration(home)
    path = calibration.cache_path("cpu", home)
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    data["machine"][field] = value
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    assert calibration.cached("cpu", "float32", home) is None
    assert costs.time_model("cpu", "float32", home) == costs.probed("cpu", "float32", home)
    fresh = tiny_calibration(home)               # calibrating here replaces it
    assert costs.time_model("cpu", "float32", home) == fresh


def test_an_unreadable_cache_falls_back(home):
    path = calibration.cache_path("cpu", home)
    os.makedirs(os.path.dirname(path))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("{not json")
    assert costs.time_model("cpu", "float32", home) == costs.probed("cpu", "float32", home)


def test_calibration_needs_every_path_and_a_backend_that_has_one():
    with pytest.raises(ValueError, match="`shapes` must time every path .* 'symbol'"):
        calibration.calibrate("cpu", shapes=TINY_SHAPES[:2], save=False)
    with pytest.raises(ValueError, match="`backend` must have two training paths"):
        calibration.calibrate("numpy", save=False)
    with pytest.raises(ValueError, match="`repeats` must be an integer >= 1"):
        calibration.calibrate("cpu", shapes=TINY_SHAPES, repeats=0, save=False)


def test_calibrate_defaults_are_the_declared_parameters():
    sig = inspect.signature(calibration.calibrate).parameters
    for name, param in CALIBRATE.items():
        assert sig[name].default == param.default, name


# -- path="auto" uses it, through the backend module ---------------------------------------

def test_auto_follows_the_shipped_prices_not_a_calibration(home, monkeypatch):
    """Issue 42: a calibration (or probe) predicts times; it does not choose the path, which
    would make a call's numbers depend on a measured time."""
    task = SameDifferent(d=8, L=4, seed=0)
    kw = dict(width=8, steps=4, batch_size=4, eval_every=2, n_test=8, backend="cpu", seed=1)
    shipped = train(task, 1.0, **kw)
    assert shipped.path == "symbol"                         # the shipped prices
    # a calibration that finds the symbol path slow: it predicts so, and auto stays symbol
    model = tiny_calibration(home)
    slow = mlp_prices.CostModel("cpu", "float32", dict(model.prices, symbol={"step": 1.0}),
                           "calibrated", model.machine, model.measured_at, model.points)
    calibration.write(slow, home)
    for name, value in home.items():
        monkeypatch.setenv(name, value)
    assert costs.time_model().choose(L=4, input_dim=16, width=8, batch_size=4) == "dense"
    rs = train_ensemble([task, task], [1.0, 0.5], [1, 2], **{k: v for k, v in kw.items()
                                                            if k != "seed"})
    assert [r.path for r in rs] == ["symbol", "symbol"]
    again = train(task, 1.0, **kw)
    assert again.path == "symbol" and (again.history["train_loss"]
                                       == shipped.history["train_loss"]).all()
    dense = train(task, 1.0, path="dense", **kw)            # an explicit path is kept
    assert dense.path == "dense"


def test_step_costs_are_the_models_seconds():
    from fastsd.mlp.training import step_costs

    symbol, dense = step_costs(64, 128, 1024, 512)
    model = mlp_prices.fallback()
    sizes = dict(L=64, input_dim=512, width=1024, batch_size=128)
    assert (symbol, dense) == (model.step_seconds("symbol", **sizes),
                               model.step_seconds("dense", **sizes))
    assert symbol < dense


def test_each_two_path_backend_states_its_model():
    for backend, module in (("cpu", _cpu), ("cuda", _cuda)):
        shipped = mlp_prices.TABLES[backend]["prices"]
        for dtype in mlp_prices.DTYPES:
            for path in module.ENGINES:
                inputs = "images" if path == "sparse" else "symbols"
                units = module.step_features(path, 4, 8, 16, 8, 1, inputs, 4.0)
                assert set(units) <= set(shipped[dtype][path]), (backend, dtype, path)
            assert set(module.eval_features(8, 16, 8)) <= set(shipped[dtype]["dense"])
    cpu = mlp_prices.TABLES["cpu"]
    assert all(len(s) == 7 for s in cpu["calibration"]) and "calibration" not in \
        mlp_prices.TABLES["cuda"]
    assert {s[0] for s in cpu["calibration"]} == set(_cpu.ENGINES)
    assert set(cpu["gemm_units"]) <= set().union(*cpu["prices"]["float32"].values())


def test_the_calibrate_command_stores_and_prints_the_model(tmp_path, monkeypatch, capsys):
    from fastsd.cli import main

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(mlp_prices.TABLES["cpu"], "calibration", TINY_SHAPES)
    assert main(["calibrate", "--quiet", "--repeats", "1", "--seconds", "0.001"]) == 0
    out = capsys.readouterr().out
    path = tmp_path / "fastsd" / "costs" / "cpu.json"
    assert f"stored in {path}" in out and "calibrated on this machine" in out
    assert out.count(" ms") == 2 * len(TINY_SHAPES) and "symbol for L <=" in out
    assert main(["calibrate", "--quiet", "--repeats", "1", "--seconds", "0.001", "--dtype",
                 "float64", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["source"] == "calibrated" and record["dtype"] == "float64"
    assert record["file"] == str(path) and len(record["points"]) == len(TINY_SHAPES)
    stored = json.loads(path.read_text())
    assert set(stored["models"]) == {"float32", "float64"}
    assert main(["calibrate", "--repeats", "0"]) == 1
    assert "`--repeats` must be an integer >= 1" in capsys.readouterr().err
