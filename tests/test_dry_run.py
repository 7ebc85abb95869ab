"""``fastsd reproduce --dry-run`` and ``fastsd.scan.plan``: what a run would do, doing nothing.

They count the cells (and those already stored), predict the wall time from the measured
cost model (fastsd.mlp.costs) and the memory from train_ensemble's needs, and write
nothing: no folder, store, binding, lock or figure.
"""
import json
import os

import pytest

from fastsd.cli import main
from fastsd.figures import fig1c, fig1e
from fastsd.mlp import costs
from fastsd.presets import Preset
from fastsd.scan import Grid, get_predictor, plan, run
from fastsd.scan.scheduling import predicted_wall

FIXED = dict(d=8, width=16, steps=20, eval_every=10, n_test=64)
PLAN_KEYS = {"predictor", "store", "backend", "cells", "done", "remaining", "groups",
             "workers", "modelled", "work_seconds", "seconds", "memory_bytes",
             "peak_memory_bytes", "cost_model", "label", "seconds_now", "busy_cores",
             "walltime_s", "job_lifetimes"}
RESULT_KEYS = {"figure", "title", "dry_run", "grid", "parts", "available_bytes", "cells",
               "done", "remaining", "workers", "seconds", "modelled_seconds", "memory_bytes",
               "peak_memory_bytes", "predicted_wall_s", "predicted_wall_now_s", "busy_cores",
               "walltime_s", "job_lifetimes"}


@pytest.fixture
def tiny_fig1c(monkeypatch):
    grid = Grid(L=[2, 4], gamma=["lazy", 1.0], seed=[0, 1], **FIXED)
    monkeypatch.setattr(fig1c, "QUICK", Preset("fig1c-quick", "L", "tiny",
                                               (("mlp", "mlp", grid),)))
    return grid


def snapshot(folder):
    """Every file under ``folder`` with its size and modification time."""
    out = {}
    for root, _, files in os.walk(folder):
        for name in files:
            st = os.stat(os.path.join(root, name))
            out[os.path.join(root, name)] = (st.st_size, st.st_mtime_ns)
    return out


def test_a_dry_run_counts_the_cells_and_creates_nothing(tmp_path, capsys, tiny_fig1c):
    out = tmp_path / "results"
    assert main(["reproduce", "fig1c", "--quick", "--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert not out.exists()
    assert "dry run, nothing was run or written" in text
    assert "mlp: 8 cells, 0 in" in text and "8 to compute in 4 groups" in text
    assert "predicted 0:00:" in text and ("on 2 workers" in text or "on 1 worker" in text)
    assert "memory:" in text and "for the largest group" in text
    assert "cost model: the shipped fallback prices" in text      # tests use them


def test_a_dry_run_on_a_partly_done_store_counts_what_is_left(tmp_path, capsys, tiny_fig1c):
    store = tmp_path / "fig1c-quick.jsonl"
    run(Grid(L=[2], gamma=["lazy", 1.0], seed=[0, 1], **FIXED), "mlp", store, "serial",
        backend="cpu", progress=False)
    before = snapshot(tmp_path)
    assert main(["reproduce", "fig1c", "--quick", "--out", str(tmp_path), "--dry-run",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert snapshot(tmp_path) == before                 # no lock, binding, record or figure
    assert set(result) == RESULT_KEYS and result["dry_run"] and result["grid"]
    assert (result["cells"], result["done"], result["remaining"]) == (8, 4, 4)
    part, = result["parts"]
    assert set(part) == PLAN_KEYS
    assert (part["cells"], part["done"], part["remaining"], part["groups"]) == (8, 4, 4, 2)
    assert part["store"] == str(store) and part["modelled"] and part["backend"] == "cpu"
    assert result["seconds"] == part["seconds"] > 0 and part["work_seconds"] >= part["seconds"]
    assert 0 < part["memory_bytes"] <= result["peak_memory_bytes"]
    assert isinstance(result["available_bytes"], (int, type(None)))

    # the cells the store has are those a real run skips
    assert len(run(tiny_fig1c, "mlp", store, "serial", backend="cpu", progress=False)) == 4
    assert main(["reproduce", "fig1c", "--quick", "--out", str(tmp_path), "--dry-run",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["done"], result["remaining"], result["seconds"]) == (8, 0, 0.0)


def test_plan_predicts_from_the_cost_model_and_says_what_it_cannot(tmp_path):
    grid = Grid(L=[2, 4, 64], gamma=[1.0, 0.5], seed=[0, 1, 2], **FIXED)
    store = tmp_path / "s.jsonl"
    local, serial = plan(grid, "mlp", store), plan(grid, "mlp", store, "serial")
    assert (local.cells, local.done, len(local.group_sizes)) == (18, 0, 9)
    assert serial.workers == 1 and serial.seconds == pytest.approx(serial.work)
    assert local.seconds == pytest.approx(predicted_wall(local.group_seconds, local.workers))
    # each group's time is the cost model's, for its ensemble on its path
    pred, model = get_predictor("mlp"), costs.time_model("cpu", "float32")
    cell = pred.prepare(dict(L=64, gamma=1.0, seed=0, **FIXED))
    want = model.train_seconds(model.choose(L=64, input_dim=16, width=16, batch_size=128),
                               L=64, input_dim=16, width=16, batch_size=128, steps=20,
                               eval_every=10, n_test=64, models=2, extra_evals=1)
    assert pred.seconds([cell, dict(cell, gamma=0.5)]) == pytest.approx(want)
    assert max(local.group_seconds) == pytest.approx(want)      # L = 64 is the largest
    assert local.cost_model == model.describe()
    # backends and predictors without a model: cells counted, time and memory not predicted
    numpy = plan(grid, "mlp", store, backend="numpy")
    theory = plan(Grid(L=[2, 3]), "theory", tmp_path / "t.jsonl")
    for p in (numpy, theory):
        assert not p.modelled and p.seconds is None and p.work is None
    assert theory.memory is None and theory.cells == 2 and numpy.memory > 0
    assert not os.listdir(tmp_path)
    # the Bayes-optimal classifiers have a (shipped) time model
    bayes = plan(Grid(L=[2, 8], d=4, sigma2=1.0, n_test=50), "bayes", tmp_path / "b.jsonl")
    assert bayes.modelled and bayes.seconds > 0


def test_plan_returns_a_scan_plan_named_apart_from_a_training_plan(tmp_path):
    """``fastsd.scan.ScanPlan`` (a scan's dry run; it was ``fastsd.scan.Plan``) is not
    ``fastsd.mlp.training.Plan`` (a ``train_ensemble`` call's arguments, checked)."""
    import fastsd.scan
    from fastsd.mlp.training import Plan
    from fastsd.scan import ScanPlan

    p = plan(Grid(L=[2, 3]), "theory", tmp_path / "t.jsonl")
    assert isinstance(p, ScanPlan) and not isinstance(p, Plan)
    assert type(p).__module__ == "fastsd.scan.plans"
    assert not hasattr(fastsd.scan, "Plan") and "Plan" not in fastsd.scan.__all__


def test_plan_refuses_a_store_of_another_grid_and_writes_nothing(tmp_path):
    store = tmp_path / "s.jsonl"
    run(Grid(L=[2, 3]), "theory", store, "serial", progress=False)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match="belongs to a different grid"):
        plan(Grid(L=[2, 3], d=4, gamma=1.0, width=4, steps=2), "mlp", store)
    assert plan(Grid(L=[2, 3, 4]), "theory", store).done == 2
    assert snapshot(tmp_path) == before


def test_a_dry_run_of_parts_and_of_a_figure_of_trained_models(tmp_path, capsys, monkeypatch):
    tiny = Preset("fig1e-quick", "lazy_heatmap", "tiny", (
        ("lazy_limit", "lazy_limit", Grid(d=[4], L=[2, 3], steps=20, eval_every=10,
                                          n_test=8)),
        ("mlp", "mlp", Grid(L=[2], gamma="lazy", seed=0, **FIXED))))
    monkeypatch.setattr(fig1e, "QUICK", tiny)
    assert main(["reproduce", "fig1e", "--quick", "--out", str(tmp_path), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "lazy_limit: 2 cells" in text and "time not modelled (predictor 'lazy_limit')" in text
    assert "mlp: 1 cells" in text and "for the modelled parts; the others not modelled" in text
    assert main(["reproduce", "fig1a", "--quick", "--out", str(tmp_path), "--dry-run"]) == 0
    text = capsys.readouterr().out                  # planned as every figure is
    assert "models (weight_structure): 2 cells" in text and "in 1 group\n" in text
    assert "time not modelled (predictor 'weight_structure')" in text
    assert not os.listdir(tmp_path)


def test_a_dry_run_of_every_full_figure_is_one_json_line_each(tmp_path, capsys):
    from fastsd.figures import FIGURES

    assert main(["reproduce", "all", "--out", str(tmp_path / "r"), "--dry-run", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    *results, whole = [json.loads(line) for line in lines]
    assert [r["figure"] for r in results] == list(FIGURES) and not (tmp_path / "r").exists()
    # and one line for the whole run, every figure's groups in one queue
    assert whole["figure"] == "all" and whole["figures"] == list(FIGURES)
    assert whole["predicted_wall_s"] is None            # fig1a, figA1, figC1 are not modelled
    walls = [r["predicted_wall_s"] for r in results if r["predicted_wall_s"] is not None]
    assert whole["one_after_another_s"] == pytest.approx(sum(walls))
    assert max(walls) <= whole["modelled_wall_s"] <= whole["one_after_another_s"]
    full = {r["figure"]: r for r in results}
    assert full["fig1c"]["cells"] == 180 and full["fig1c"]["seconds"] > 0
    assert full["fig2"]["seconds"] >= full["fig2"]["modelled_seconds"] > 0   # Bayes modelled
    # the lazy limit's flow cells have a (shipped) time and memory model
    assert full["fig1e"]["seconds"] == full["fig1e"]["modelled_seconds"] > 0
    assert all(p["memory_bytes"] > 0 for f in ("fig1e", "fig2") for p in full[f]["parts"])
    # every figure is planned: the models and matrices of Fig. 1a/1d, A1 and C1 too
    assert all(r["grid"] and r["cells"] > 0 for r in results)
    assert (full["fig1a"]["cells"], full["figA1"]["cells"], full["figC1"]["cells"]) == (2, 4, 9)


def test_the_scan_bar_counts_predicted_time(tmp_path, capsys):
    grid = Grid(L=[2, 4], gamma=[1.0], seed=[0, 1], **FIXED)
    run(grid, "mlp", tmp_path / "s.jsonl", "serial", backend="cpu", progress=True)
    err = capsys.readouterr().err
    assert "s (mlp): 4/4 cells 100%" in err and ", 4/4" not in err
    assert "s (mlp): 0/4 cells; predicted 0:00:" in err and "on 1 worker" in err


def test_the_bars_of_a_run_of_several_parts_name_each_part_and_predict_the_whole_run(
        tmp_path, capsys):
    from fastsd.scan import run_many

    grids = [(Grid(L=[2, 4], gamma=[1.0], seed=[0], **FIXED), "mlp", tmp_path / "a-mlp.jsonl"),
             (Grid(L=[3], gamma=[1.0], seed=[0, 1], **FIXED), "mlp", tmp_path / "b-mlp.jsonl")]
    run_many(grids, "serial", backend="cpu", progress=True)
    lines = capsys.readouterr().err.replace("\r", "\n").splitlines()
    first = [ln for ln in lines if ln.startswith("a-mlp: 0/2 cells")]
    second = [ln for ln in lines if ln.startswith("b-mlp: 0/2 cells")]
    # the first bar carries the run's prediction once, for both parts; the other none
    assert first and "; predicted 0:00:" in first[0] and "for the 2 parts on 1 worker" in first[0]
    assert second and "predicted" not in second[0]
    assert any(ln.startswith("a-mlp: 2/2 cells 100%") for ln in lines)
    assert any(ln.startswith("b-mlp: 2/2 cells 100%") for ln in lines)


def test_a_dry_run_on_n_workers_schedules_the_groups_as_the_run_hands_them_out(tmp_path,
                                                                                capsys, monkeypatch):
    from fastsd.reproduce import plan
    from fastsd.scan.scheduling import predicted_wall

    by = {n: plan("fig1c", out=tmp_path, workers=n) for n in (1, 2, 16, 64)}
    work = sum(p["work_seconds"] for p in by[1]["parts"])
    assert by[1]["predicted_wall_s"] == pytest.approx(work)          # one worker: the sum
    walls = [by[n]["predicted_wall_s"] for n in (1, 2, 16, 64)]
    assert walls == sorted(walls, reverse=True) and all(w > 0 for w in walls)
    # no better than perfect sharing, no worse than the largest group
    assert by[64]["predicted_wall_s"] >= work / 64
    assert by[2]["workers"] == 2 and by[64]["seconds"] == by[64]["predicted_wall_s"]
    assert predicted_wall([3.0, 2.0, 2.0, 1.0], 2) == 4.0            # largest first: 3+1, 2+2
    assert main(["reproduce", "fig1c", "--dry-run", "--workers", "16", "--out",
                 str(tmp_path)]) == 0
    assert "on 16 workers" in capsys.readouterr().out
    for usage, message in ((["--workers", "16"], "--workers plans a run on N workers (with "
                                                  "--dry-run) or starts them (with --cluster)"),
                           (["--dry-run", "--serial", "--workers", "4"],
                            "--workers N plans N workers and --serial one process"),
                           (["--cluster", "slurm"], "--cluster slurm needs --workers N"),
                           (["--cluster", "slurmm", "--workers", "4"], "invalid choice")):
        with pytest.raises(SystemExit) as exit_:            # usage errors: argparse's 2
            main(["reproduce", "fig1c", *usage, "--out", str(tmp_path)])
        assert exit_.value.code == 2 and message in capsys.readouterr().err
    # a cluster's dry run plans its workers and submits nothing (no dask-jobqueue, no
    # configuration needed: where the jobs cannot be checked it says so and plans anyway)
    monkeypatch.setenv("DASK_CONFIG", str(tmp_path / "no-dask-config"))
    assert main(["reproduce", "fig1c", "--dry-run", "--cluster", "slurm", "--workers", "16",
                 "--out", str(tmp_path / "out")]) == 0
    got = capsys.readouterr()
    assert "on 16 workers" in got.out and "the jobs were not checked" in got.err
    assert not (tmp_path / "out").exists()
    for bad in ("0", "-3"):                             # a usage error, as "1.5" is
        with pytest.raises(SystemExit) as exit_:
            main(["reproduce", "fig1c", "--dry-run", "--workers", bad])
        assert exit_.value.code == 2
        assert f"--workers must be an integer >= 1; got {bad}" in capsys.readouterr().err


def test_a_dry_run_on_a_busy_machine_predicts_the_quiet_and_the_loaded_wall_time(
        tmp_path, capsys, monkeypatch, tiny_fig1c):
    """Issue 42: the prediction was the quiet machine's whatever the load; a run beside two
    busy processes on 2 cores took twice as long. The plan now reads the cores other
    processes keep busy (``fastsd._probe.busy_cores``) and gives both times: local workers
    W beside B busy cores on C cores take max(1, (W + B) / C) times as long."""
    from fastsd import _probe
    from fastsd.scan import plans

    monkeypatch.setattr(plans, "cpu_count", lambda: 2)
    monkeypatch.setattr(plans, "workers_of", lambda executor, target: 2)
    for busy, slowdown in ((0.0, 1.0), (2.0, 2.0), (8.0, 5.0)):
        monkeypatch.setattr(_probe, "busy_cores", lambda interval=0.5, environ=None: busy)
        assert main(["reproduce", "fig1c", "--quick", "--out", str(tmp_path), "--dry-run",
                     "--json"]) == 0
        got = json.loads(capsys.readouterr().out)
        assert got["busy_cores"] == busy and got["workers"] == 2
        assert got["predicted_wall_now_s"] == pytest.approx(slowdown * got["predicted_wall_s"])
        part, = got["parts"]
        assert part["seconds_now"] == pytest.approx(slowdown * part["seconds"])
        assert main(["reproduce", "fig1c", "--quick", "--out", str(tmp_path), "--dry-run"]) == 0
        text = capsys.readouterr().out
        assert ("at this moment's load" in text) == (slowdown > 1), text
    # a cluster's workers do not share this machine: no load is read for them
    g = plan(Grid(L=[2], gamma=[1.0], seed=[0], **FIXED), "mlp", tmp_path / "s.jsonl",
             workers=16)
    assert g.busy_cores is None and g.seconds_now == g.seconds
