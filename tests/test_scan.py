"""Scans: grid validation, executors (processes, any Executor, Dask), kill and resume."""
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import fastsd.scan.predictors
from fastsd.scan import Grid, ScanError, load, run
from fastsd.store import ResultStore

TIMING = ("wall_time", "finished_at")
TINY = dict(d=8, width=16, eval_every=10, n_test=64)


def _records(path):
    """Records of a store by key, without the timing fields; every line must parse."""
    lines = open(path, encoding="utf-8").read().splitlines()
    records = [json.loads(line) for line in lines]
    keys = [r["key"] for r in records]
    assert len(keys) == len(set(keys)), "a cell was stored twice"
    return {r["key"]: {k: v for k, v in r.items() if k not in TIMING} for r in records}


# ---------------------------------------------------------------- the grid


def test_each_scan_module_has_one_job_and_the_package_names_them_all():
    """``fastsd.scan``'s names come from the module whose job they are: running
    (``runner``), the dry run (``plans``), reading a store (``records``); the order of the
    groups is ``scheduling``'s and the checks of what a run is given ``parts``'."""
    import fastsd.scan as scan
    from fastsd.scan import scheduling

    homes = {"runner": ("run", "run_many", "ScanError"), "plans": ("plan", "plan_many", "ScanPlan"),
             "records": ("cell_records", "load")}
    for module, names in homes.items():
        for name in names:
            assert getattr(scan, name).__module__ == f"fastsd.scan.{module}", name
            assert name in scan.__all__
    assert scheduling.predicted_wall([3.0, 2.0, 2.0], 2) == 4.0      # 3 | 2 + 2



def test_grid_axes_fixed_settings_and_order():
    g = Grid(gamma=[1.0, "lazy"], L=range(2, 4), seed=np.arange(2), d=64, width=256)
    assert g.axes == {"gamma": (1.0, "lazy"), "L": (2, 3), "seed": (0, 1)}
    assert g.fixed == {"d": 64, "width": 256} and len(g) == 8
    coords = [c for c, _ in g.cells()]
    assert coords[0] == {"gamma": 1.0, "L": 2, "seed": 0}
    assert coords[1] == {"gamma": 1.0, "L": 2, "seed": 1}          # last axis fastest
    assert all(type(c["seed"]) is int for c in coords)            # numpy ints made plain
    assert g == Grid(gamma=[1.0, "lazy"], L=[2, 3], seed=[0, 1], d=64, width=256)


@pytest.mark.parametrize("settings, exc, match", [
    ({}, ValueError, "at least one setting"),
    ({"L": []}, ValueError, "axis `L` must have at least one value; got an empty list"),
    ({"L": [2, 2]}, ValueError, "axis `L` must not repeat a value; got 2"),
    ({"L": [[2, 3]]}, TypeError, "`L` must be a number"),
    ({"gamma": float("nan")}, ValueError, "`gamma` must be finite"),
    ({"L": np.ones((2, 2))}, ValueError, "must be 1-d"),
])
def test_bad_grids_are_rejected(settings, exc, match):
    with pytest.raises(exc, match=match):
        Grid(**settings)


@pytest.mark.parametrize("grid, predictor, exc, match", [
    (Grid(L=[2, 3], gamma=1.0, seed=0, d=8, width=16, steps=10, depth=[2]), "mlp", ValueError,
     r"`depth` is not a setting of predictor 'mlp'; valid settings: .*width"),
    (Grid(L=[2, 3], gamma=1.0, seed=0, d=8, steps=10), "mlp", ValueError,
     r"`width` must be given for predictor 'mlp'"),
    (Grid(L=[2, 1], gamma=1.0, seed=0, d=8, width=16, steps=10), "mlp", ValueError,
     r"`L` must be an integer >= 2; got 1\. \(in the cell \{'L': 1\}\)"),
    (Grid(L=[4], gamma=[1.0, -0.5], seed=0, d=8, width=16, steps=10), "mlp", ValueError,
     r"`gamma` must be a finite number > 0; got -0\.5"),
    (Grid(L=[4], gamma=[1.0], seed=0, d=8, width=16, steps=2.5), "mlp", TypeError,
     r"`steps` must be an integer"),
    (Grid(L=[2, 3]), "walkerz", ValueError, r"`predictor` must be one of 'mlp'"),
    (Grid(L=[1, 2]), "theory", ValueError, r"`L` must be an integer >= 2; got 1"),
])
def test_bad_cells_fail_before_anything_runs(tmp_path, grid, predictor, exc, match):
    path = tmp_path / "s.jsonl"
    with pytest.raises(exc, match=match):
        run(grid, predictor, path, "serial", progress=False)
    assert not path.exists() and not os.path.exists(str(path) + ".grid.json")


def test_a_store_of_another_grid_is_refused_but_axes_may_grow(tmp_path):
    path = tmp_path / "s.jsonl"
    small = Grid(L=[2], gamma=[1.0], seed=[0], steps=10, **TINY)
    run(small, "mlp", path, "serial", backend="numpy", progress=False)
    wider = Grid(L=[2, 3], gamma=[1.0], seed=[0, 1], steps=10, **TINY)
    assert len(run(wider, "mlp", path, "serial", backend="numpy", progress=False)) == 3
    other = Grid(L=[2], gamma=[1.0], seed=[0], steps=20, **TINY)
    with pytest.raises(ValueError, match=r"belongs to a different grid \(fixed setting "
                                         r"`steps`: stored 10, this grid 20\)"):
        run(other, "mlp", path, "serial", progress=False)
    with pytest.raises(ValueError, match=r"different grid \(predictor: stored 'mlp'"):
        run(Grid(L=[2]), "theory", path, "serial", progress=False)
    # an axis of the store may be fixed in a later grid: its cells are already there
    assert run(Grid(L=2, gamma=[1.0], seed=[0], steps=10, **TINY), "mlp", path, "serial") == []


def test_other_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="`grid` must be a fastsd.scan.Grid"):
        run({"L": [2]}, "theory", tmp_path / "s.jsonl")
    with pytest.raises(ValueError, match="`backend` must be one of"):
        run(Grid(L=[2]), "theory", tmp_path / "s.jsonl", backend="tpu")
    with pytest.raises(ValueError, match="`threads` must be an integer >= 1"):
        run(Grid(L=[2]), "theory", tmp_path / "s.jsonl", threads=0)
    with pytest.raises(TypeError, match="`store` must be a path"):
        run(Grid(L=[2]), "theory", 3.5)


# ---------------------------------------------------------------- running


def test_lazy_gamma_is_resolved_per_d_and_loads_as_zero(tmp_path):
    grid = Grid(d=[8, 32], gamma=["lazy", 1.0], L=2, seed=0, width=16, steps=10, eval_every=10,
                n_test=64)
    recs = run(grid, "mlp", tmp_path / "s.jsonl", "serial", backend="numpy", progress=False)
    lazy = {r["d"]: r["gamma"] for r in recs if r["coords"]["gamma"] == "lazy"}
    assert lazy == {8: pytest.approx(1e-5 / 8 ** 0.5), 32: pytest.approx(1e-5 / 32 ** 0.5)}
    ds = load(tmp_path / "s.jsonl", xarray=True)
    assert sorted(ds["gamma"].values) == [0.0, 1.0] and sorted(ds["d"].values) == [8, 32]
    assert ds["best_test_accuracy"].shape == (2, 2)


def test_a_failing_group_is_reported_and_the_others_are_saved(tmp_path, monkeypatch):
    real = fastsd.scan.predictors.train_cells

    def flaky(cells, **kwargs):
        if cells[0].L == 3:
            raise FloatingPointError("boom")
        return real(cells, **kwargs)

    monkeypatch.setattr(fastsd.scan.predictors, "train_cells", flaky)
    grid = Grid(L=[2, 3, 4], gamma=[1.0], seed=[0], steps=10, **TINY)
    with pytest.raises(ScanError, match=r"1 of 3 cells failed; the 2 finished cells are saved"
                                        r".*'L': 3.*FloatingPointError: boom"):
        run(grid, "mlp", tmp_path / "s.jsonl", "serial", backend="numpy", progress=False)
    assert {r["L"] for r in ResultStore(tmp_path / "s.jsonl").load()} == {2, 4}
    monkeypatch.setattr(fastsd.scan.predictors, "train_cells", real)
    assert [r["L"] for r in run(grid, "mlp", tmp_path / "s.jsonl", "serial", backend="numpy",
                                progress=False)] == [3]


def test_a_thread_pool_gives_the_serial_records(tmp_path):
    grid = Grid(L=[2, 3], gamma=[0.1, 1.0], seed=[0], steps=20, **TINY)
    run(grid, "mlp", tmp_path / "a.jsonl", "serial", backend="numpy", progress=False)
    with ThreadPoolExecutor(2) as pool:
        run(grid, "mlp", tmp_path / "b.jsonl", pool, backend="numpy", progress=False)
    assert _records(tmp_path / "a.jsonl") == _records(tmp_path / "b.jsonl")


def test_local_processes_and_a_dask_cluster_give_identical_records(tmp_path):
    distributed = pytest.importorskip("distributed")
    grid = Grid(L=[2, 3, 4], gamma=["lazy", 1.0], seed=[0, 1], steps=30, **TINY)
    run(grid, "mlp", tmp_path / "local.jsonl", backend="cpu", progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        run(grid, "mlp", tmp_path / "dask.jsonl", client, backend="cpu", progress=False)
    local, dask = _records(tmp_path / "local.jsonl"), _records(tmp_path / "dask.jsonl")
    assert len(local) == len(grid) == 12 and local == dask


_SCAN = textwrap.dedent("""
    import sys
    from fastsd.scan import Grid, run
    if __name__ == "__main__":
        grid = Grid(L=[2, 3, 4, 5, 6, 7], gamma=[1.0], seed=[0], d=8, width=16, steps=STEPS,
                    eval_every=500, n_test=64)
        run(grid, "mlp", sys.argv[1], backend="numpy", threads=1, progress=False)
""")


@pytest.mark.parametrize("victim", ["worker", "scan", "scan-only-KILL", "scan-only-TERM"])
def test_sigkill_mid_scan_then_resume_equals_an_uninterrupted_run(tmp_path, victim):
    psutil = pytest.importorskip("psutil")
    script = tmp_path / "scan.py"
    script.write_text(_SCAN.replace("STEPS", "2000"))
    killed, clean = tmp_path / "killed.jsonl", tmp_path / "clean.jsonl"

    log = open(tmp_path / "stderr.txt", "w+")
    proc = subprocess.Popen([sys.executable, str(script), str(killed)], stdout=log, stderr=log,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while not (killed.exists() and killed.read_text().count("\n") >= 1):
        assert proc.poll() is None, (tmp_path / "stderr.txt").read_text()
        assert time.monotonic() < deadline, "the scan wrote nothing in 120 s"
        time.sleep(0.05)
    if victim == "worker":
        workers = [p for p in psutil.Process(proc.pid).children(recursive=True)
                   if "resource_tracker" not in " ".join(p.cmdline())]
        assert workers
        os.kill(workers[0].pid, signal.SIGKILL)
        assert proc.wait(timeout=120) == 1
        assert "a worker process died" in (tmp_path / "stderr.txt").read_text()
    elif victim == "scan":      # kill -9 the whole scan: its process and its workers
        os.killpg(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=120) == -signal.SIGKILL
    else:                       # only the scan's own process: its workers must follow it
        workers = psutil.Process(proc.pid).children(recursive=True)
        assert workers
        sig = getattr(signal, "SIG" + victim.split("-")[-1])
        os.kill(proc.pid, sig)
        assert proc.wait(timeout=120) == -sig
        gone, alive = psutil.wait_procs(workers, timeout=20)
        assert not alive, [p.cmdline() for p in alive]
    partial = _records(killed)
    assert 1 <= len(partial) < 6
    # A killed scan (SIGKILL, or SIGTERM's default action in a script) leaves its lock file,
    # unlocked: the rerun takes it over with a warning.
    lock = f"{killed}.lock"
    assert os.path.exists(lock) == (victim != "worker")

    rerun = subprocess.run([sys.executable, str(script), str(killed)], check=True, timeout=300,
                           capture_output=True, text=True)
    assert ("taking over the lock" in rerun.stderr) == (victim != "worker")
    assert not os.path.exists(lock)
    subprocess.run([sys.executable, str(script), str(clean)], check=True, timeout=300)
    resumed = _records(killed)
    assert len(resumed) == 6 and resumed == _records(clean)
    assert all(resumed[k] == v for k, v in partial.items())


_UNGUARDED = """
import sys
from fastsd.scan import Grid, run
grid = Grid(L=[2, 3], gamma=[1.0], seed=[0], d=8, width=16, steps=20, eval_every=10, n_test=64)
print(len(run(grid, "mlp", sys.argv[-1], backend="numpy", progress=False)))
"""


@pytest.mark.parametrize("how", ["stdin", "unguarded", "guarded", "-c"])
def test_run_works_where_workers_cannot_import_main_with_one_warning(tmp_path, how):
    store = tmp_path / "s.jsonl"
    script = tmp_path / "scan.py"
    code = _UNGUARDED
    if how == "guarded":
        code = code.replace("\nprint(", "\nif __name__ == '__main__':\n    print(")
    script.write_text(code)
    argv = {"stdin": ["-", str(store)], "-c": ["-c", code, str(store)]}.get(
        how, [str(script), str(store)])
    done = subprocess.run([sys.executable, *argv], input=code if how == "stdin" else None,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout == "2\n", done.stderr
    assert "Traceback" not in done.stderr
    assert len(_records(store)) == 2
    warnings = [line for line in done.stderr.splitlines() if "RuntimeWarning" in line]
    if how in ("guarded", "-c"):            # the workers start: no warning
        assert not warnings, done.stderr
        return
    warning, = warnings
    why = {"stdin": "the main module is <stdin>, which a worker process cannot re-import",
           "unguarded": f"{script}, line 5, starts the scan while the script is imported, and "
                        "each worker process would import it again"}[how]
    assert (f"RuntimeWarning: running the scan in this process, without worker processes: "
            f"{why}. For parallel workers, put the code that starts it under `if __name__ == "
            '"__main__":`') in warning


def test_walkers_predictor_records_mu_and_alignment(tmp_path):
    grid = Grid(readout=[1, -1], L=4, batch_size=64, n_iters=30, n_walkers=20, seed=0)
    recs = {r["readout"]: r for r in run(grid, "walkers", tmp_path / "w.jsonl", "serial",
                                          progress=False)}
    from fastsd.walkers import simulate
    direct = simulate(4, 64, 30, -1, 20, seed=0).mu_summary("mixed")
    assert recs[-1]["mu_mixed"] == direct["mean"]
    assert recs[1]["alignment"] > 0.5 and recs[-1]["alignment"] < -0.5


def test_bayes_predictor_shares_the_networks_symbols(tmp_path):
    from fastsd.scan import Cell
    rec, = run(Grid(d=8, L=[4], sigma2=1.0, prior="memorizing", n_test=200, seed=3), "bayes",
               tmp_path / "b.jsonl", "serial", progress=False)
    cell = Cell(d=8, L=4, gamma=1.0, seed=3, width=4, steps=1, sigma2=1.0)
    assert rec["task_seed"] == cell.task_seed and 0.0 <= rec["accuracy"] <= 1.0
    assert rec["stderr"] > 0 and rec["prior"] == "memorizing"


def test_image_predictor_settings(tmp_path):
    grid = Grid(task="pentomino", L=[4], gamma=["lazy", 1.0], seed=0, width=8, steps=20,
                eval_every=10, n_test=64)
    recs = run(grid, "mlp_image", tmp_path / "i.jsonl", "serial", progress=False)
    assert {r["gamma"] for r in recs} == {1e-5, 1.0}          # no sqrt(d) on image tasks
    assert {(r["image_width"], r["blur"], r["patch"]) for r in recs} == {(2, 0.5, None)}
    with pytest.raises(ValueError, match=r"`n_patches` must be None \(it is a setting of task "
                                         r"'psvrt'\) with task 'pentomino'"):
        run(Grid(task="pentomino", L=[4], gamma=1.0, seed=0, width=8, steps=20, n_patches=3),
            "mlp_image", tmp_path / "j.jsonl", "serial")
    with pytest.raises(ValueError, match=r"`n_train_shapes` must be an integer <= 16"):
        run(Grid(task="pentomino", L=[17], gamma=1.0, seed=0, width=8, steps=20),
            "mlp_image", tmp_path / "k.jsonl", "serial")


def test_records_stay_strict_json_after_divergence_and_bad_executor_or_store(tmp_path):
    # a diverged network's activation change is NaN: stored as null, as strict JSON wants
    grid = Grid(L=[16], gamma=1e6, alpha0=1000.0, seed=0, steps=20, d=64, width=64,
                eval_every=10, n_test=64)
    run(grid, "mlp", tmp_path / "s.jsonl", "serial", backend="cpu", progress=False)
    text = (tmp_path / "s.jsonl").read_text()
    rec = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert rec["diverged"] and rec["activation_change"] is None
    with pytest.raises(ValueError, match=r"`executor` must be None \(local processes\), "
                                         r"'serial', .*; got 'threads'"):
        run(Grid(L=[2]), "theory", tmp_path / "t.jsonl", "threads")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load(tmp_path / "missing.jsonl")


def test_groups_are_per_seed_on_the_cpu_and_span_seeds_on_the_gpu():
    # On the CPU only models of one seed share work (init, batches, test sets), and
    # groups per seed balance over the workers; on the GPU one ensemble fills the device.
    from fastsd.scan.predictors import get_predictor

    grid = Grid(L=[2, 3], gamma=["lazy", 1.0], seed=[0, 1], steps=20, **TINY)
    for name in ("mlp", "mlp_image"):
        pred = get_predictor(name)
        cells = [pred.prepare(s) for _, s in grid.cells()] if name == "mlp" else [
            pred.prepare(dict(task="psvrt", L=L, gamma=g, seed=s, width=16, steps=20))
            for L in (2, 3) for g in ("lazy", 1.0) for s in (0, 1)]
        for backend, size in (("cpu", 2), ("numpy", 2), ("cuda", 4)):
            groups = {}
            for s in cells:
                groups.setdefault(pred.group_key(s, backend), []).append(s)
            assert len(groups) == 8 // size, (name, backend)
            for g in groups.values():
                assert len(g) == size and len({s["L"] for s in g}) == 1
                assert len({s["gamma"] for s in g}) == 2
                if backend != "cuda":
                    assert len({(s["seed"], s["task_seed"]) for s in g}) == 1


def test_group_cost_orders_cells_by_their_work():
    # the symbol path's cost grows with L; noisy cells take the dense path (cost ~ d)
    from fastsd.scan.predictors import get_predictor

    pred = get_predictor("mlp")
    cost = {(L, s2): pred.cost(pred.prepare(dict(d=256, L=L, gamma=1.0, seed=0, width=1024,
                                                 steps=1000, sigma2=s2)))
            for L in (2, 8, 16) for s2 in (0.0, 1.0)}
    assert cost[2, 0.0] < cost[8, 0.0] < cost[16, 0.0] < cost[2, 1.0] == cost[16, 1.0]


def test_bad_executor_or_backend_fails_before_the_store_is_bound(tmp_path, monkeypatch):
    import fastsd._dispatch
    from fastsd.exceptions import BackendUnavailableError

    grid = Grid(L=[2], gamma=[1.0], seed=[0], steps=10, **TINY)
    store = tmp_path / "s.jsonl"
    for executor, exc in ((4, TypeError), (object(), TypeError), ("threads", ValueError)):
        with pytest.raises(exc, match=r"`executor` must be None \(local processes\), 'serial'"):
            run(grid, "mlp", store, executor, progress=False)
    monkeypatch.setattr(fastsd._dispatch, "numba_cuda_available", lambda: False)
    with pytest.raises(BackendUnavailableError, match=r"backend 'cuda' needs an NVIDIA GPU"):
        run(grid, "mlp", store, backend="cuda", progress=False)
    assert not os.path.exists(f"{store}.grid.json") and not store.exists()


def test_a_forking_process_pool_is_refused_once_openmp_threads_run(tmp_path):
    # A forked child of a process running GNU OpenMP dies at its first parallel kernel
    # ("fork() called from a process already using GNU OpenMP"); a spawning pool works.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import numba

    grid = Grid(L=[2, 3], gamma=[1.0], seed=[0], steps=10, **TINY)
    run(grid, "mlp", tmp_path / "serial.jsonl", "serial", backend="cpu", progress=False)
    if numba.threading_layer() != "omp":
        pytest.skip(f"Numba runs on {numba.threading_layer()!r} here, not OpenMP")
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        with pytest.raises(ValueError, match=r"`executor` is a ProcessPoolExecutor that forks"):
            run(grid, "mlp", tmp_path / "fork.jsonl", pool, backend="cpu", progress=False)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        run(grid, "mlp", tmp_path / "spawn.jsonl", pool, backend="cpu", progress=False)
    assert _records(tmp_path / "spawn.jsonl") == _records(tmp_path / "serial.jsonl")


def test_cells_that_prepare_to_one_are_computed_once_with_a_warning(tmp_path):
    lazy8 = 1e-5 / np.sqrt(8)
    grid = Grid(L=[2], gamma=["lazy", lazy8, 1.0], seed=[0], steps=10, **TINY)
    with pytest.warns(RuntimeWarning, match=r"are the same cell once prepared"):
        records = run(grid, "mlp", tmp_path / "s.jsonl", "serial", progress=False)
    assert len(records) == 2


def test_setting_errors_say_where_and_name_lazy(tmp_path):
    with pytest.raises(ValueError, match=r"`gamma` must be a number > 0 or 'lazy' .*got 'LAZY'"):
        run(Grid(L=[2], gamma=["LAZY"], seed=0, steps=10, **TINY), "mlp", tmp_path / "a.jsonl",
            progress=False)
    with pytest.raises(ValueError, match=r"`width` must be an integer >= 1; got 0\. "
                                         r"\(in the grid's fixed settings\)"):
        run(Grid(L=2, gamma=1.0, seed=0, steps=10, **dict(TINY, width=0)), "mlp",
            tmp_path / "b.jsonl", progress=False)


def test_walker_offset_is_a_walkers_setting(tmp_path):
    # walker_offset was in every walkers record but refused as a setting
    from fastsd.walkers import simulate, summary

    grid = Grid(L=[4], batch_size=16, n_iters=5, n_walkers=4, walker_offset=[0, 4])
    records = run(grid, "walkers", tmp_path / "w.jsonl", "serial", progress=False)
    whole = simulate(4, 16, 5, n_walkers=8, seed=0, backend="numpy").alignment()
    for r in records:
        off = r["walker_offset"]
        assert r["alignment"] == summary(whole[off:off + 4])["mean"]


def test_stating_a_default_is_the_same_grid_and_a_new_value_needs_an_axis(tmp_path):
    path = tmp_path / "s.jsonl"
    grid = dict(L=[2, 3], gamma=1.0, seed=0, steps=10, **TINY)
    assert len(run(Grid(**grid), "mlp", path, "serial", backend="numpy", progress=False)) == 2
    for default in (0.0, 0):
        assert run(Grid(**grid, sigma2=default), "mlp", path, "serial", progress=False) == []
    with pytest.raises(ValueError, match=r"different grid \(fixed setting `sigma2`: stored "
                                         r"0\.0, this grid 0\.5\); to add cells with this "
                                         r"`sigma2` to the store, make it an axis: "
                                         r"sigma2=\[0\.5\]"):
        run(Grid(**grid, sigma2=0.5), "mlp", path, "serial", progress=False)
    added = run(Grid(**grid, sigma2=[0.5]), "mlp", path, "serial", backend="numpy",
                progress=False)
    assert sorted((r["L"], r["sigma2"]) for r in added) == [(2, 0.5), (3, 0.5)]
    ds = load(path, xarray=True)
    assert ds["best_test_accuracy"].dims == ("L", "sigma2")
    assert list(ds["sigma2"].values) == [0.0, 0.5]
    assert not ds["best_test_accuracy"].isnull().any()


def test_load_sorts_coordinates_and_keeps_the_grid_order_of_axes(tmp_path):
    from fastsd.theory import rich_test_accuracy

    run(Grid(L=[16, 3, 2, 8, 4]), "theory", tmp_path / "t.jsonl", "serial", progress=False)
    ds = load(tmp_path / "t.jsonl", xarray=True)
    assert list(ds["L"].values) == [2, 3, 4, 8, 16]
    assert list(ds["test_accuracy"].values) == [float(rich_test_accuracy(L))
                                                for L in (2, 3, 4, 8, 16)]
    grid = Grid(seed=[1, 0], L=[3, 2], gamma=1.0, steps=10, **TINY)
    run(grid, "mlp", tmp_path / "m.jsonl", "serial", backend="numpy", progress=False)
    ds = load(tmp_path / "m.jsonl", xarray=True)
    assert ds["best_test_accuracy"].dims == ("seed", "L")
    assert list(ds["seed"].values) == [0, 1] and list(ds["L"].values) == [2, 3]
    frame = load(tmp_path / "m.jsonl").set_index(["seed", "L"])
    for seed, L in [(0, 2), (1, 3)]:
        assert float(ds["best_test_accuracy"].sel(seed=seed, L=L)) == \
            frame.loc[(seed, L), "best_test_accuracy"]


def test_a_fixed_lazy_gamma_turned_axis_stays_the_coordinate_zero(tmp_path):
    path = tmp_path / "s.jsonl"
    grid = dict(L=[2], d=[8, 32], seed=0, width=16, steps=10, eval_every=10, n_test=64)
    run(Grid(**grid, gamma="lazy"), "mlp", path, "serial", backend="numpy", progress=False)
    added = run(Grid(**grid, gamma=["lazy", 1.0]), "mlp", path, "serial", backend="numpy",
                progress=False)
    assert [r["coords"]["gamma"] for r in added] == [1.0, 1.0]
    ds = load(path, xarray=True)
    assert ds["best_test_accuracy"].dims == ("L", "d", "gamma")
    assert list(ds["gamma"].values) == [0.0, 1.0] and list(ds["d"].values) == [8, 32]
    assert not ds["best_test_accuracy"].isnull().any()


def test_lazy_limit_settings_are_checked_before_the_store_is_bound(tmp_path):
    # alpha0, ridge and the pairs bound used to fail only in the worker, after the store
    # had been bound to the bad grid, so the corrected rerun was refused
    fixed = dict(d=8, L=[4], steps=100, eval_every=50, n_test=64)
    store = tmp_path / "lz.jsonl"
    for bad, match in ((dict(alpha0=-1.0), r"`alpha0` must be a finite number > 0"),
                       (dict(ridge=-1.0), r"`ridge` must be"),
                       (dict(pairs=1), r"`pairs` must be an integer >= 2"),
                       (dict(pairs=17), r"`pairs` must be an integer <= 16; got 17")):
        with pytest.raises(ValueError, match=match):
            run(Grid(**fixed, **bad), "lazy_limit", store, "serial", progress=False)
    assert not os.path.exists(f"{store}.grid.json")
    assert len(run(Grid(**fixed, alpha0=0.1), "lazy_limit", store, "serial",
                   progress=False)) == 1


def test_a_scan_that_stored_nothing_leaves_no_binding(tmp_path, monkeypatch):
    def broken(cells, **kwargs):
        raise FloatingPointError("boom")

    monkeypatch.setattr(fastsd.scan.predictors, "train_cells", broken)
    store = tmp_path / "s.jsonl"
    with pytest.raises(ScanError, match="boom") as failure:
        run(Grid(L=[2], gamma=[1.0], seed=[0], steps=10, **TINY), "mlp", store, "serial",
            progress=False)
    assert not os.path.exists(f"{store}.grid.json")
    assert "1 of 1 cells failed; nothing was stored. First failure" in str(failure.value)
    assert str(store) not in str(failure.value)         # names no file that does not exist


def test_a_grid_too_large_to_hold_is_refused_at_once(tmp_path):
    grid = Grid(gamma=list(range(1, 1001)), L=list(range(2, 1002)), seed=list(range(1000)),
                steps=20, **TINY)
    with pytest.raises(ValueError, match=r"`grid` must have at most 1,000,000 cells.*"
                                         r"got 1,000,000,000"):
        run(grid, "mlp", tmp_path / "s.jsonl", progress=False)


def test_a_store_of_settings_the_predictor_no_longer_has_is_refused_with_what_to_do(tmp_path):
    # Fig. 1a's store as fastsd wrote it before its models were scan cells: gamma an axis
    path = tmp_path / "fig1a-quick.jsonl"
    ResultStore(path).bind({"predictor": "weight_structure", "axes": ["model", "gamma"],
                            "fixed": {"d": 8, "L": 4, "width": 16, "steps": 40,
                                      "eval_every": 20, "seed": 0}})
    grid = Grid(model=["rich", "lazy"], d=8, L=4, width=16, steps=40, eval_every=20, seed=0)
    for call in (run, fastsd.scan.plan):
        with pytest.raises(ValueError, match="setting `gamma`, which 'weight_structure' no "
                                             "longer has .* delete it and .*grid.json"):
            call(grid, "weight_structure", path, "serial")
    assert not os.path.exists(path)                 # nothing computed, nothing written


def test_the_max_margin_cells_are_the_theorys_matrix(tmp_path):
    from fastsd.tasks import SameDifferent
    from fastsd.theory import max_margin

    records = run(Grid(d=4, L=[8], P=[32, 64]), "max_margin", tmp_path / "m.jsonl", "serial",
                  progress=False)
    for r in records:
        want = max_margin(SameDifferent(4, r["L"], seed=r["L"]), r["P"], seed=r["P"])
        assert r["top_alignment"] == want["top"]["alignment"]
        np.testing.assert_array_equal(np.array(r["matrix"]), want["matrix"])


def test_a_store_that_cannot_be_written_is_refused_before_anything_is_computed(tmp_path,
                                                                               monkeypatch):
    import errno

    from fastsd import store as store_module

    pred = fastsd.scan.predictors.PREDICTORS["theory"]
    monkeypatch.setattr(type(pred), "run_group",
                        lambda *a, **k: pytest.fail("a group was computed"))
    path = tmp_path / "ro.jsonl"
    path.write_text("")
    real_open = os.open

    def read_only(p, flags, *args):          # the file system refuses to append (as root
        if os.fspath(p) == str(path) and flags & os.O_APPEND:   # chmod 444 would not)
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(p, flags, *args)

    monkeypatch.setattr(store_module.os, "open", read_only)
    with pytest.raises(ValueError, match=r"`store` must be a file that can be written; "
                                         r".*ro.jsonl' cannot be \(Permission denied\)"):
        run(Grid(L=[2, 3]), "theory", path, "serial", progress=False)
    with pytest.raises(ValueError, match="`path` of a store must name a file.*got ''"):
        run(Grid(L=[2, 3]), "theory", "", "serial", progress=False)


def test_damaged_records_are_named_skipped_and_computed_again(tmp_path):
    path = tmp_path / "s.jsonl"
    grid = Grid(L=[2, 3, 4])
    run(grid, "theory", path, "serial", progress=False)
    lines = path.read_text().splitlines()
    good = json.loads(lines[1])
    damaged = [json.dumps({"foreign": 1, "fields": "x"}),                    # valid JSON
               json.dumps(dict(json.loads(lines[0]), test_accuracy="high")),  # wrong type
               json.dumps(dict(good, settings=dict(good["settings"], L="three")))]
    path.write_text("\n".join(damaged + [lines[2]]) + "\n")
    with pytest.warns(RuntimeWarning, match=r"s.jsonl: skipping 3 record\(s\) that are no "
                                            r"'theory' cell, to compute their cells again: "
                                            r"line 1: no `key`; line 2: "):
        plan_ = fastsd.scan.plan(grid, "theory", path, "serial")
    assert plan_.remaining == 2                     # L = 2 and 3 again; L = 4 is kept
    with pytest.warns(RuntimeWarning, match="line 2: `test_accuracy` is 'high', not a number; "
                                            "line 3: its settings: `L` must be an integer"):
        from fastsd.scan import cell_records
        from fastsd.scan.predictors import PREDICTORS
        cell_records(fastsd.store.ResultStore(path), PREDICTORS["theory"])
    with pytest.warns(RuntimeWarning, match="skipping 3 record"):
        written = run(grid, "theory", path, "serial", progress=False)
    assert sorted(r["L"] for r in written) == [2, 3]
    pytest.importorskip("xarray")
    with pytest.warns(RuntimeWarning, match="skipping 3 record"):
        ds = load(path, xarray=True)                # was AttributeError on the foreign line
    assert sorted(ds["L"].values.tolist()) == [2, 3, 4]


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_number_that_is_not_finite_is_damage_named_and_computed_again(tmp_path, token):
    """Issue 41: a stored accuracy of NaN (a token strict JSON does not have, which fastsd
    never writes: it writes null) loaded silently and its cell was never computed again. Any
    such number, anywhere in a line, makes the line damage: named with file and line, its
    cell computed again."""
    path = tmp_path / "s.jsonl"
    grid = Grid(L=[2, 3])
    run(grid, "theory", path, "serial", progress=False)
    first, second = path.read_text().splitlines()
    record = json.loads(first)
    assert isinstance(record["test_accuracy"], float)
    damaged = first.replace(f'"test_accuracy": {json.dumps(record["test_accuracy"])}',
                            f'"test_accuracy": {token}')
    assert damaged != first
    path.write_text(damaged + "\n" + second + "\n")
    with pytest.warns(RuntimeWarning, match=rf"s.jsonl: skipped, not records: line 1: holds "
                                            rf"{token}, not a finite number \(fastsd writes "
                                            r"null there\)$"):
        assert fastsd.scan.plan(grid, "theory", path, "serial").remaining == 1
    with pytest.warns(RuntimeWarning, match=rf"holds {token}"):
        written = run(grid, "theory", path, "serial", progress=False)
    assert [r["L"] for r in written] == [2]
    assert json.loads(path.read_text().splitlines()[-1])["test_accuracy"] == \
        record["test_accuracy"]


def test_a_key_apart_from_its_settings_is_damage_and_a_conflicting_repeat_is_named(tmp_path):
    from fastsd.scan import cell_records
    from fastsd.scan.predictors import PREDICTORS

    path = tmp_path / "s.jsonl"
    grid = Grid(L=[2, 3])
    run(grid, "theory", path, "serial", progress=False)
    lines = path.read_text().splitlines()
    r2, r3 = (json.loads(line) for line in lines)
    edited = dict(r2, key=r3["key"])                # L = 2's record filed under L = 3's key
    same = dict(r3)                                 # a harmless repeat: the same numbers
    other = dict(r3, test_accuracy=0.5)             # a repeat that disagrees
    path.write_text("\n".join(json.dumps(r) for r in (edited, r3, same, other)) + "\n")
    with pytest.warns(RuntimeWarning) as caught:
        records = cell_records(fastsd.store.ResultStore(path), PREDICTORS["theory"])
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2
    assert re.search(r"skipping 1 record\(s\).*again: line 1: `key` 'L=3' is not its "
                     r"settings' \('L=2'\)$", messages[0]), messages[0]
    assert re.search(r"1 record\(s\) repeat a cell stored before with other numbers .* the "
                     r"first record of each cell is used: line 4: `test_accuracy` "
                     r"0.5 against 0.\d+ on line 2, kept$", messages[1]), messages[1]
    assert [r["key"] for r in records] == [r3["key"]] and records[0] == r3
    with pytest.warns(RuntimeWarning):
        assert fastsd.scan.plan(grid, "theory", path, "serial").remaining == 1   # L = 2


def test_a_dask_scan_without_workers_says_so_gives_up_and_the_rerun_completes(tmp_path,
                                                                              monkeypatch,
                                                                              capsys):
    distributed = pytest.importorskip("distributed")
    import threading

    from fastsd.scan import executors

    monkeypatch.setattr(executors, "NO_WORKERS_WARN", 1.0)
    monkeypatch.setenv("FASTSD_NO_WORKERS_TIMEOUT", "3")
    grid = Grid(L=[2, 3, 4, 5], gamma=1.0, seed=0, d=8, width=16, steps=4000, eval_every=1000,
                n_test=64)
    path = tmp_path / "s.jsonl"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        def lose_the_workers():             # once the first cell is stored
            while not (path.exists() and path.read_text().strip()):
                time.sleep(0.05)
            cluster.scale(0)
        threading.Thread(target=lose_the_workers, daemon=True).start()
        start = time.monotonic()
        with pytest.raises(executors.NoWorkersError, match=r"no Dask worker for 3 s with \d "
                                                           r"group\(s\) left; the finished "
                                                           r"cells are saved"):
            run(grid, "mlp", path, client, backend="cpu", progress=False)
        assert time.monotonic() - start < 60
    err = capsys.readouterr().err
    assert "no Dask worker has been alive for 1 s" in err and "FASTSD_NO_WORKERS_TIMEOUT" in err
    kept = len(path.read_text().splitlines())
    assert 1 <= kept < 4
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        written = run(grid, "mlp", path, client, backend="cpu", progress=False)
    assert len(written) == 4 - kept and len(path.read_text().splitlines()) == 4


def test_the_no_workers_timeout_is_read_from_the_environment():
    from fastsd.scan.executors import NO_WORKERS_TIMEOUT, no_workers_timeout
    assert no_workers_timeout({}) == NO_WORKERS_TIMEOUT
    assert no_workers_timeout({"FASTSD_NO_WORKERS_TIMEOUT": "90"}) == 90.0
    assert no_workers_timeout({"FASTSD_NO_WORKERS_TIMEOUT": "never"}) is None
    for bad in ("0", "-1", "soon", "inf", "nan"):
        with pytest.raises(ValueError, match="`FASTSD_NO_WORKERS_TIMEOUT` must be a number "
                                             "of seconds > 0 or 'never'"):
            no_workers_timeout({"FASTSD_NO_WORKERS_TIMEOUT": bad})


def test_a_record_with_a_key_or_settings_of_the_wrong_type_is_named(tmp_path):
    from fastsd.scan import cell_records
    from fastsd.scan.predictors import PREDICTORS

    path = tmp_path / "s.jsonl"
    run(Grid(L=[2]), "theory", path, "serial", progress=False)
    good = json.loads(path.read_text())
    with open(path, "a") as fh:
        for bad in (dict(good, key=12), dict(good, settings="x"), dict(good, settings=None),
                    dict(good, test_accuracy=True)):
            fh.write(json.dumps(bad) + "\n")
    with pytest.warns(RuntimeWarning, match=r"lines 2, 3, 4, 5 \(line 2: `key` is 12, not a "
                                            r"string; line 3: `settings` is 'x', not an object; "
                                            r"line 4: `settings` is None, not an object; \.\.\.\)"):
        assert len(cell_records(ResultStore(path), PREDICTORS["theory"])) == 1


def test_a_store_from_before_a_later_setting_existed_still_names_its_cells(tmp_path):
    """A setting declared later (lazy_limit's dtype, not in ``LAZY_LIMIT.always_keyed``) at
    its default stays out of the cell's key, so the records stored before it existed are not
    taken for damage and computed again; at another value it is a cell of its own."""
    import json as _json
    import warnings

    from fastsd.params import LAZY_LIMIT
    from fastsd.scan import Grid, run
    assert "dtype" in LAZY_LIMIT and "dtype" not in LAZY_LIMIT.always_keyed
    path = tmp_path / "s.jsonl"
    grid = Grid(d=4, L=[4, 6], steps=100, eval_every=50, n_test=32)
    first = run(grid, "lazy_limit", str(path), "serial", progress=False)
    assert len(first) == 2 and all("dtype" not in r["key"] for r in first)
    old = []
    for line in path.read_text().splitlines():          # as written before dtype existed
        r = _json.loads(line)
        del r["settings"]["dtype"], r["dtype"]
        old.append(_json.dumps(r))
    path.write_text("\n".join(old) + "\n")
    manifest = tmp_path / "s.jsonl.grid.json"
    grid_file = _json.loads(manifest.read_text())
    del grid_file["fixed"]["dtype"]
    manifest.write_text(_json.dumps(grid_file))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = run(grid, "lazy_limit", str(path), "serial", progress=False)
    assert again == [] and len(path.read_text().splitlines()) == 2
    f32 = run(Grid(d=4, L=[4, 6], steps=100, eval_every=50, n_test=32, dtype="float32"),
              "lazy_limit", str(tmp_path / "f32.jsonl"), "serial", progress=False)
    assert len(f32) == 2 and all("dtype='float32'" in r["key"] for r in f32)
