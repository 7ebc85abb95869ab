"""The ``fastsd`` command: through ``python -m fastsd`` and through ``main``."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fastsd import __version__
from fastsd.cli import main
from fastsd.figures import fig1a, fig1c, fig1e, fig2, fig3, figA1, figC1, figF1
from fastsd.presets import Preset
from fastsd.scan import Cell, Grid

TINY = ["--d", "8", "--L", "3", "--gamma", "1", "--width", "16", "--steps", "20",
        "--eval-every", "10", "--n-test", "64"]
WALK = ["--L", "4", "--batch-size", "16", "--n-iters", "5"]


def _run(*args):
    return subprocess.run([sys.executable, "-m", "fastsd", *args], capture_output=True,
                          text=True, timeout=300)


def test_train_json_prints_one_record():
    proc = _run("train", *TINY, "--seed", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "20/20" in proc.stderr                           # a progress bar over steps
    assert _run("train", *TINY, "--json", "--quiet").stderr == ""
    lines = proc.stdout.splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert (rec["d"], rec["L"], rec["gamma"], rec["width"], rec["steps"], rec["seed"]) == (
        8, 3, 1.0, 16, 20, 3)
    assert 0.0 <= rec["best_test_accuracy"] <= 1.0
    assert rec["version"] == __version__ and rec["history"]["step"] == [10, 20]
    assert rec["key"] == Cell(d=8, L=3, gamma=1.0, seed=3, width=16, steps=20, eval_every=10,
                              n_test=64).key


@pytest.mark.parametrize("bad, name", [(["--L", "1"], "`--L`"), (["--gamma", "-1"], "`--gamma`"),
                                       (["--path", "sideways"], "`--path`"),
                                       (["--batch-size", "0"], "`--batch-size`")])
def test_bad_values_exit_1_with_the_parameter_name(bad, name):
    args = list(TINY)
    if bad[0] in args:
        args[args.index(bad[0]) + 1] = bad[1]
    else:
        args += bad
    proc = _run("train", *args)
    assert proc.returncode == 1
    assert proc.stderr.startswith("fastsd: error: ") and name in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_unavailable_backend_exits_1(monkeypatch, capsys):
    from fastsd import _dispatch
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")      # a machine without a GPU
    monkeypatch.setattr(_dispatch, "numba_cuda_available", lambda: False)
    assert main(["train", *TINY, "--backend", "cuda"]) == 1
    assert "or use --backend cpu" in capsys.readouterr().err      # the CLI's spelling


@pytest.mark.parametrize("figure", ["fig1a", "figA1", "figC1", "fig1c"])
def test_every_figure_refuses_an_unavailable_backend_before_making_its_folder(
        figure, tmp_path, monkeypatch, capsys):
    from fastsd import _dispatch
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")      # a machine without a GPU
    monkeypatch.setattr(_dispatch, "numba_cuda_available", lambda: False)
    out = tmp_path / "a" / "b"
    assert main(["reproduce", figure, "--quick", "--backend", "cuda", "--out", str(out)]) == 1
    assert "or use --backend cpu" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


def test_a_figure_of_trained_models_trains_on_the_backend_asked_and_records_it(tmp_path,
                                                                             monkeypatch):
    from fastsd.figures import fig1a
    monkeypatch.setattr(fig1a, "QUICK", fig1a.preset(
        "fig1a-quick", d=8, L=4, width=16, steps=40, eval_every=20, seed=0))
    assert main(["reproduce", "fig1a", "--quick", "--backend", "numpy", "--quiet",
                 "--out", str(tmp_path)]) == 0
    records = [json.loads(line) for line in (tmp_path / "fig1a-quick.jsonl").open()]
    assert [(r["backend"], r["dtype"]) for r in records] == [("numpy", "float64")] * 2


@pytest.mark.parametrize("args", [[], ["train"], ["train", "--d", "x"], ["reproduce", "fig9"]])
def test_bad_usage_exits_2(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2


@pytest.mark.parametrize("args", [["--help"], ["train", "--help"], ["reproduce", "--help"],
                                  ["calibrate", "--help"]])
def test_help_exits_0(args):
    proc = _run(*args)
    assert proc.returncode == 0 and "usage: fastsd" in proc.stdout


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"fastsd {__version__}"


def test_train_summary(capsys):
    assert main(["train", *TINY]) == 0
    out = capsys.readouterr().out
    assert "best test accuracy" in out and "Eq. 3" in out


@pytest.fixture
def tiny_fig1c(monkeypatch):
    grid = Grid(L=[2, 4], gamma=["lazy", 1.0], seed=[0, 1], d=8, width=16, steps=20,
                eval_every=10, n_test=64)
    monkeypatch.setattr(fig1c, "QUICK", Preset("fig1c-quick", "L", "tiny",
                                               (("mlp", "mlp", grid),)))
    return grid.cells()


def test_reproduce_writes_records_figures_and_table(tmp_path, capsys, tiny_fig1c):
    assert main(["reproduce", "fig1c", "--quick", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "gamma~0" in out and "gamma=1" in out and "Eq.3" in out
    for ext in ("jsonl", "png", "svg"):
        assert (tmp_path / f"fig1c-quick.{ext}").stat().st_size > 0
    assert len((tmp_path / "fig1c-quick.jsonl").read_text().splitlines()) == len(tiny_fig1c)

    # A rerun trains nothing and prints the same table as JSON; a record stored
    # twice (two runs racing on one folder) counts once.
    results = tmp_path / "fig1c-quick.jsonl"
    results.write_text(results.read_text() + results.read_text().splitlines(True)[0])
    mtime = results.stat().st_mtime_ns
    assert main(["reproduce", "fig1c", "--quick", "--out", str(tmp_path), "--quiet",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    table = result["summary"]
    assert results.stat().st_mtime_ns == mtime
    assert result["figure"] == "fig1c-quick" and table["axis"] == "L"
    assert [r["L"] for r in table["rows"]] == [2, 4]
    assert all(r["n"] == {"gamma~0": 2, "gamma=1": 2} for r in table["rows"])


def test_reproduce_figC1_quick_reports_alignments_and_draws(tmp_path, capsys):
    assert main(["reproduce", "figC1", "--quick", "--out", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["summary"]["rows"]
    assert [r["P"] for r in rows] == sorted(r["P"] for r in rows)
    dist = [r["relative_distance"] for r in rows]
    assert all(a > b for a, b in zip(dist, dist[1:]))        # shrinks as P grows
    assert rows[-1]["top_alignment"] > 0.95 and rows[-1]["bottom_alignment"] < -0.95
    assert out["results"] == [str(tmp_path / "figC1-quick.jsonl")]
    for path in out["figures"] + out["results"]:
        assert os.path.exists(path)


def _forbid(monkeypatch, target):
    """Make ``target`` (module attribute path) raise, so that a rerun proves it computes nothing."""
    def refuse(*args, **kwargs):
        raise AssertionError(f"{target} was called on a rerun")
    monkeypatch.setattr(target, refuse)


def test_reproduce_figC1_rerun_computes_nothing_and_prints_the_same(tmp_path, capsys,
                                                                     monkeypatch):
    monkeypatch.setattr(figC1, "QUICK", figC1.preset("figC1-quick", 8, (16, 32), (64, 256)))
    # in this process, so that the rerun's max_margin is the one forbidden below
    args = ["reproduce", "figC1", "--quick", "--out", str(tmp_path), "--json", "--serial"]
    store = tmp_path / "figC1-quick.jsonl"
    assert main(args) == 0
    first = capsys.readouterr()
    assert "figC1-quick (max_margin): 4/4 cells" in first.err   # the scan's bar
    records = [json.loads(line) for line in store.read_text().splitlines()]
    assert [(r["L"], r["P"]) for r in records] == [(16, 64), (16, 256), (32, 64), (32, 256)]
    mtime = store.stat().st_mtime_ns
    _forbid(monkeypatch, "fastsd.theory.max_margin")
    assert main(args + ["--quiet"]) == 0
    again = capsys.readouterr()
    assert again.out == first.out and again.err == ""
    assert store.stat().st_mtime_ns == mtime
    # a new P computes only its units; other settings in the same store are refused
    monkeypatch.undo()
    monkeypatch.setattr(figC1, "QUICK", figC1.preset("figC1-quick", 8, (16, 32), (64, 256, 512)))
    assert main(args + ["--quiet"]) == 0
    assert [json.loads(x)["P"] for x in store.read_text().splitlines()][4:] == [512, 512]
    monkeypatch.setattr(figC1, "QUICK", figC1.preset("figC1-quick", 16, (16,), (64,)))
    assert main(args + ["--quiet"]) == 1
    assert "belongs to a different grid" in capsys.readouterr().err


def test_reproduce_figF1_records_activation_change_and_tabulates_it(tmp_path, capsys,
                                                                    monkeypatch):
    grid = Grid(root_d=[False, True], d=[8, 32], gamma=[1e-3, 1.0], L=16, seed=0, width=16,
                steps=40, eval_every=20, n_test=64)
    monkeypatch.setattr(figF1, "QUICK", Preset("figF1-quick", "gamma", "tiny",
                                               (("mlp", "mlp", grid),)))
    assert main(["reproduce", "figF1", "--quick", "--out", str(tmp_path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["columns"] == ["d=8", "d=32", "d=8 no-sqrt-d", "d=32 no-sqrt-d"]
    lazy, rich = summary["rows"]
    for name in summary["columns"]:
        assert lazy["mean"][name] < rich["mean"][name]       # richer moves activations more
    # without the prefactor, larger d is lazier at fixed gamma (App. F)
    assert rich["mean"]["d=32 no-sqrt-d"] < rich["mean"]["d=8 no-sqrt-d"]
    records = [json.loads(line) for line in (tmp_path / "figF1-quick.jsonl").open()]
    assert {r["root_d"] for r in records} == {True, False}
    assert all(r["activation_change"] >= 0 for r in records)


def test_walkers_command_table_json_and_bad_input(capsys):
    assert main(["walkers", "--L", "4", "--batch-size", "16", "--n-iters", "5",
                 "--n-walkers", "8", "--readout", "-1", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["L"] == 4 and rec["readout"] == -1 and len(rec["omega1"]) == 8
    assert main(["walkers", "--L", "4", "--batch-size", "8", "--n-iters", "3",
                 "--n-walkers", "4"]) == 0
    assert "mu mixed" in capsys.readouterr().out
    assert main(["walkers", *WALK, "--readout", "0"]) == 1
    assert "`--readout` must be +1 or -1; got 0" in capsys.readouterr().err


def test_reproduce_fig1a_weight_structure(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(fig1a, "QUICK", fig1a.preset(
        "fig1a-quick", d=8, L=4, width=32, steps=300, eval_every=100, seed=0))
    assert main(["reproduce", "fig1a", "--quick", "--out", str(tmp_path), "--json"]) == 0
    rows = {r["model"]: r for r in json.loads(capsys.readouterr().out)["summary"]["rows"]}
    # rich units align with the sign of their readout (App. C.4); lazy ones barely move
    assert rows["rich"]["alignment_positive"] > rows["lazy"]["alignment_positive"]
    assert rows["rich"]["alignment_negative"] < rows["lazy"]["alignment_negative"]
    assert (tmp_path / "fig1a-quick.png").stat().st_size > 0


def test_reproduce_fig1a_rerun_trains_nothing_and_draws_the_same(tmp_path, capsys,
                                                                  monkeypatch):
    monkeypatch.setattr(fig1a, "QUICK", fig1a.preset(
        "fig1a-quick", d=8, L=4, width=16, steps=60, eval_every=30, seed=0))
    # in this process, so that the rerun's train_ensemble is the one forbidden below
    args = ["reproduce", "fig1a", "--quick", "--out", str(tmp_path), "--json", "--serial"]
    store = tmp_path / "fig1a-quick.jsonl"
    assert main(args) == 0
    first = capsys.readouterr()
    assert "fig1a-quick (weight_structure): 2/2 cells" in first.err       # the scan's bar
    assert [json.loads(x)["model"] for x in store.read_text().splitlines()] == ["rich", "lazy"]
    mtime, png = store.stat().st_mtime_ns, (tmp_path / "fig1a-quick.png").read_bytes()
    _forbid(monkeypatch, "fastsd.mlp.train_ensemble")
    assert main(args + ["--quiet"]) == 0
    again = capsys.readouterr()
    assert again.out == first.out and again.err == ""
    assert store.stat().st_mtime_ns == mtime
    assert (tmp_path / "fig1a-quick.png").read_bytes() == png


def test_reproduce_fig1e_finite_and_limit_heatmaps_scaling_and_comparison(tmp_path, capsys,
                                                                          monkeypatch):
    tiny = Preset("fig1e-quick", "lazy_heatmap", "tiny", (
        ("mlp", "mlp", Grid(d=[4, 8], L=[2, 4, 8, 16], gamma="lazy", seed=[0, 1], width=64,
                            steps=400, eval_every=200, n_test=256)),
        ("lazy_limit", "lazy_limit", Grid(d=[4, 8], L=[2, 4, 8, 16], seed=[0, 1], steps=400,
                                          eval_every=200, n_test=256))))
    monkeypatch.setattr(fig1e, "QUICK", tiny)
    assert main(["reproduce", "fig1e", "--quick", "--out", str(tmp_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["results"] == [str(tmp_path / "fig1e-quick-mlp.jsonl"),
                              str(tmp_path / "fig1e-quick-lazy_limit.jsonl")]
    summary = out["summary"]
    for part in ("finite", "limit"):
        assert [r["L"] for r in summary[part]["rows"]] == [2, 4, 8, 16]
        scaling = summary["scaling"][part]
        assert set(scaling) >= {"L_star", "exponent", "exponent_ci", "affine"}
    cmp = summary["finite_vs_limit"]
    assert [(c["d"], c["L"], c["width"]) for c in cmp] == [
        (d, L, 64) for d in (4, 8) for L in (2, 4, 8, 16)]
    assert all(0.3 < c["limit"] <= 1 and 0.3 < c["finite"] <= 1 for c in cmp)
    assert (tmp_path / "fig1e-quick.png").stat().st_size > 0
    assert (tmp_path / "fig1e-quick-limit.png").stat().st_size > 0
    assert (tmp_path / "fig1e-quick-time.png").stat().st_size > 0
    assert list(summary["in_time"]["limit"]) == ["200", "400", "best", "protocol"]


@pytest.mark.parametrize("option, text, said", [
    ("--gamma", "1e-400", "got '1e-400', which is 0.0 in float64"),
    ("--gamma", "1e400", "got '1e400', which is inf in float64"),
    ("--alpha0", "1e-999", "got '1e-999', which is 0.0 in float64"),
    ("--alpha0", "x", "must be a finite number > 0; got 'x'")])
def test_a_number_is_reported_as_given_not_as_float64_rounds_it(option, text, said, capsys):
    args = ["train", "--d", "4", "--L", "3", "--gamma", "1", "--width", "4", "--steps", "2"]
    with pytest.raises(SystemExit) as exc:
        main(args + [option, text])
    assert exc.value.code == 2 and said in capsys.readouterr().err
    with pytest.raises(SystemExit):             # and --gamma's help says each thing once
        main(["train", "--help"])
    helptext = capsys.readouterr().out
    assert "richness gamma ('lazy': 1e-5/sqrt(d)) (a number > 0 or" in helptext


def test_ntk_command_json_and_bad_pairs(capsys):
    assert main(["ntk", "--d", "4", "--L", "4", "--steps", "200", "--eval-every", "100",
                 "--n-test", "200", "--json"]) == 0
    out = capsys.readouterr()
    rec = json.loads(out.out)
    assert rec["n_train_pairs"] == 16 and rec["method"] == "logistic_flow"
    assert "lazy limit, logistic flow" in out.err and "200/200" in out.err   # flow time
    assert main(["ntk", "--d", "4", "--L", "4", "--steps", "200", "--eval-every", "100",
                 "--n-test", "200", "--json", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    with pytest.raises(SystemExit) as exc:       # a usage error, as any bad option type
        main(["ntk", "--d", "4", "--L", "4", "--pairs", "many"])
    assert exc.value.code == 2
    assert "--pairs: must be 'all' or an integer >= 2; got 'many'" in capsys.readouterr().err


def test_reproduce_fig2_blocks_per_sigma2_with_bayes_columns(tmp_path, capsys, monkeypatch):
    tiny = Preset("fig2-quick", "noisy", "tiny", (
        ("mlp", "mlp", Grid(sigma2=[0.0, 1.0], L=[2, 8], gamma=["lazy", 1.0], seed=0, d=8, width=16,
                     steps=40, eval_every=20, n_test=64)),
        ("bayes", "bayes", Grid(sigma2=[0.0, 1.0], L=[2, 8], prior=["generalizing", "memorizing"],
                       seed=0, d=8, n_test=500))))
    monkeypatch.setattr(fig2, "QUICK", tiny)
    assert main(["reproduce", "fig2", "--quick", "--out", str(tmp_path), "--json"]) == 0
    blocks = json.loads(capsys.readouterr().out)["summary"]["blocks"]
    assert [b["sigma2"] for b in blocks] == [0.0, 1.0]
    for b in blocks:
        for row in b["table"]["rows"]:
            assert {"gamma~0", "gamma=1", "Bayes gen.", "Bayes mem."} <= set(row["mean"])
    # without noise the generalizing Bayes classifier is an exact equality test
    assert all(r["mean"]["Bayes gen."] == 1.0 for r in blocks[0]["table"]["rows"])
    assert (tmp_path / "fig2-quick.png").stat().st_size > 0


def test_reproduce_fig3_panels_and_figA1_images(tmp_path, capsys, monkeypatch):
    train = dict(gamma=["lazy", 1.0], seed=0, width=16, steps=40, eval_every=20, n_test=64)
    tiny = Preset("fig3-quick", "visual", "tiny", (
        ("b", "mlp_image", Grid(task="psvrt", L=[4, 8], patch=3, n_patches=2, **train)),
        ("c", "mlp_image", Grid(task="psvrt", n_patches=[2, 3], L=8, patch=3, **train)),
        ("e", "mlp_image", Grid(task="pentomino", L=[2, 4], image_width=2, **train)),
        ("f", "mlp_image", Grid(task="pentomino", image_width=[2, 3], L=4, **train))))
    monkeypatch.setattr(fig3, "QUICK", tiny)
    assert main(["reproduce", "fig3", "--quick", "--out", str(tmp_path), "--json"]) == 0
    panels = json.loads(capsys.readouterr().out)["summary"]["panels"]
    assert [(p["panel"], p["axis"]) for p in panels] == [
        ("b", "L"), ("c", "n_patches"), ("e", "L"), ("f", "image_width")]
    assert all(set(r["mean"]) == {"gamma~0", "gamma=1"} for p in panels
               for r in p["table"]["rows"])
    monkeypatch.setattr(figA1, "QUICK", figA1.preset(
        "figA1-quick", width=16, steps=40, eval_every=20, seed=0))
    assert main(["reproduce", "figA1", "--quick", "--out", str(tmp_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["summary"]["rows"]
    assert [(r["task"], r["model"]) for r in rows] == [
        ("PSVRT", "rich"), ("PSVRT", "lazy"), ("Pentomino", "rich"), ("Pentomino", "lazy")]
    assert all(0 <= r["cell_correlation_all"] <= 1 for r in rows)
    assert (tmp_path / "figA1-quick.png").stat().st_size > 0
    # a rerun trains nothing and prints the same, also when one unit is missing: only its
    # task trains again, and only that model
    store = tmp_path / "figA1-quick.jsonl"
    lines = store.read_text().splitlines(True)
    store.write_text("".join(lines[:3]))
    trained = []
    from fastsd import mlp
    real = mlp.train_ensemble
    monkeypatch.setattr(mlp, "train_ensemble",
                        lambda task, gamma, *a, **k: trained.append(gamma) or real(task, gamma,
                                                                                   *a, **k))
    assert main(["reproduce", "figA1", "--quick", "--out", str(tmp_path), "--json",
                 "--quiet", "--serial"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["rows"] == rows
    assert trained == [[1e-5]]
    mtime = store.stat().st_mtime_ns
    assert main(["reproduce", "figA1", "--quick", "--out", str(tmp_path), "--json",
                 "--quiet", "--serial"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["rows"] == rows
    assert trained == [[1e-5]] and store.stat().st_mtime_ns == mtime


def test_reproduce_rejects_a_bad_backend_and_an_unusable_out(tmp_path, capsys):
    assert main(["reproduce", "figC1", "--quick", "--backend", "gpu",
                 "--out", str(tmp_path)]) == 1
    assert "`--backend` must be one of" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["reproduce", "figC1", "--quick", "--out", str(blocker)]) == 1
    assert f"`--out` must be a folder; got '{blocker}', which is a file." in \
        capsys.readouterr().err
    assert main(["reproduce", "figC1", "--quick", "--out", str(blocker / "sub")]) == 1
    assert "`--out` must be a folder that exists or can be created" in capsys.readouterr().err
    if os.path.isdir("/proc/1"):            # a folder no one can write in, even root
        for dry in ([], ["--dry-run"]):     # the dry run refuses what the run would
            assert main(["reproduce", "figC1", "--quick", "--out", "/proc/1", *dry]) == 1
            assert "`--out` must be a folder that fastsd can write in; got '/proc/1'" in \
                capsys.readouterr().err
    assert main(["reproduce", "figC1", "--quick", "--dry-run", "--out",
                 str(blocker / "sub")]) == 1
    assert "`--out` must be a folder that exists or can be created" in capsys.readouterr().err
    pytest.importorskip("distributed")
    assert main(["reproduce", "figC1", "--quick", "--out", str(tmp_path),
                 "--dask", "notanaddress"]) == 1
    assert "`--dask` must be the address of a running Dask scheduler" in \
        capsys.readouterr().err


def test_an_unknown_option_shows_its_commands_usage(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "fig1c", "--bogus"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert "usage: fastsd reproduce" in err and "unrecognized arguments: --bogus" in err


_SLOW_REPRODUCE = """
import signal
import sys
# A command typed at a terminal: Ctrl-C is not ignored. A test run started in the background
# of a non-interactive shell (nohup ... &) inherits SIGINT ignored, which the command rightly
# keeps (see test_an_inherited_ignored_sigint_stays_ignored).
signal.signal(signal.SIGINT, signal.default_int_handler)
from fastsd.cli import main

from fastsd.figures import fig1a, fig1c
from fastsd.presets import Preset
from fastsd.scan import Grid


def grid(steps, n):
    return Grid(L=list(range(2, 2 + n)), gamma=[1.0], seed=0, d=8, width=16, steps=steps,
                eval_every=steps // 4, n_test=64)


PARTS = {"one": (("mlp", "mlp", grid(20000, 6)),),         # ~2 s a cell
         "two": (("mlp", "mlp", grid(2000, 300)),          # ~0.2 s a cell: writing all along
                 ("slow", "mlp", grid(20000, 3)))}
fig1c.QUICK = Preset("fig1c-quick", "L", "slow", PARTS.get(sys.argv[2], ()))
fig1a.QUICK = fig1a.preset("fig1a-quick", d=8, L=4, width=32, steps=10**7, eval_every=10**6,
                           seed=0)
if __name__ == "__main__":
    figure = "fig1a" if sys.argv[2] == "in-process" else "fig1c"
    sys.exit(main(["reproduce", figure, "--quick", "--backend", "numpy", "--out", sys.argv[1],
                   *sys.argv[3:]]))
"""


def _start_slow_reproduce(tmp_path, parts, *options):
    script = tmp_path / "slow.py"
    script.write_text(_SLOW_REPRODUCE)
    log = open(tmp_path / "stderr.txt", "w+")
    return subprocess.Popen([sys.executable, str(script), str(tmp_path / "out"), parts, *options],
                            stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)


def _stored(folder):
    return {p.name: len(p.read_text().splitlines()) for p in sorted(folder.glob("*.jsonl"))}


def _workers(psutil, proc):
    return [p for p in psutil.Process(proc.pid).children(recursive=True)
            if "resource_tracker" not in " ".join(p.cmdline())]


@pytest.mark.parametrize("parts, options, sig", [
    ("one", [], "TERM"),             # one part: the scan's own pool, in the main thread
    ("two", [], "TERM"),             # two parts in threads on one shared pool (fig1e, fig2)
    ("two", [], "INT"),              # Ctrl-C in a terminal: SIGINT to the whole process group
    ("one", ["--serial"], "TERM"),   # the groups train in this process
    ("in-process", ["--serial"], "TERM"),   # fig1a: one long training run in this process
])
def test_a_signal_stops_the_command_at_once_and_no_cell_is_written_after(tmp_path, parts,
                                                                         options, sig):
    psutil = pytest.importorskip("psutil")
    proc = _start_slow_reproduce(tmp_path, parts, *options)
    out = tmp_path / "out"
    uses_workers = parts != "in-process" and not options
    started = {"one": lambda: sum(_stored(out).values()) >= 1,
               "two": lambda: _stored(out).get("fig1c-quick-mlp.jsonl", 0) >= 2,   # writing
               "in-process": lambda: psutil.Process(proc.pid).cpu_times().user > 5}[parts]
    deadline = time.monotonic() + 120
    try:
        while not started():
            assert proc.poll() is None, (tmp_path / "stderr.txt").read_text()
            assert time.monotonic() < deadline, "nothing stored in 120 s"
            time.sleep(0.05)
        workers = _workers(psutil, proc) if uses_workers else []
        assert len(workers) == (2 if uses_workers else 0)
        # Freeze the workers so that no group can finish while the signal is on its way; the
        # results already sent reach the store first. Once the signal is sent they go on, and
        # any part still running would store what they finish next.
        for w in workers:
            w.suspend()
        time.sleep(1.0)
        before = _stored(out)
        sent = time.monotonic()
        if sig == "INT":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)         # to the main process only, as `kill` does
        for w in workers:
            w.resume()
        status = proc.wait(timeout=60)
        latency = time.monotonic() - sent
        print(f"{parts} {options} SIG{sig}: exit {status} {latency:.2f} s after the signal")
        err = (tmp_path / "stderr.txt").read_text()
        assert status == (143 if sig == "TERM" else 130), err
        assert latency < 10, f"{latency:.1f} s from the signal to the exit"
        assert _stored(out) == before, "cells were written after the signal"
        last = err.strip().splitlines()[-1]
        assert last == (f"fastsd: {'terminated' if sig == 'TERM' else 'interrupted'} "
                        "(finished cells are saved; rerun to resume)"), err
        assert "Traceback" not in err, err
        gone, alive = psutil.wait_procs(workers, timeout=10)
        assert not alive, "worker processes outlived the scan"
        if parts == "in-process":         # its store holds no unit, and no lock is left
            assert sum(_stored(out).values()) == 0 and not list(out.glob("*.lock"))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.parametrize("command", [
    # one walker for 10^12 batches: once a single compiled call that no signal could stop
    ["walkers", "--L", "4", "--batch-size", "4", "--n-iters", "1000000000000",
     "--n-walkers", "1", "--backend", "cpu"],
    ["train", "--d", "8", "--L", "4", "--gamma", "1", "--width", "4096",
     "--steps", "1000000000", "--eval-every", "100000000", "--backend", "cpu"],
], ids=["walkers", "train"])
def test_sigterm_stops_a_long_compiled_run_at_once(tmp_path, command):
    psutil = pytest.importorskip("psutil")
    log = open(tmp_path / "stderr.txt", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "fastsd", *command], stdout=subprocess.DEVNULL,
                            stderr=log, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while psutil.Process(proc.pid).cpu_times().user < 8:     # imported, compiled, running
            assert proc.poll() is None, (tmp_path / "stderr.txt").read_text()
            assert time.monotonic() < deadline, "not running after 120 s"
            time.sleep(0.05)
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(timeout=60)
        assert status == 143, (tmp_path / "stderr.txt").read_text()
        assert time.monotonic() - sent < 10, f"{time.monotonic() - sent:.1f} s to stop"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_a_second_run_on_a_store_in_use_is_refused_naming_the_first(tmp_path):
    first = _start_slow_reproduce(tmp_path, "one", "--quiet")
    lock = tmp_path / "out" / "fig1c-quick.jsonl.lock"
    try:
        deadline = time.monotonic() + 120
        while not (lock.exists() and lock.read_text()):
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        holder = json.loads(lock.read_text())
        assert holder["pid"] == first.pid and "slow.py" in holder["command"]
        second = subprocess.run([sys.executable, str(tmp_path / "slow.py"), str(tmp_path / "out"),
                                 "one", "--quiet"], capture_output=True, text=True, timeout=120)
        assert second.returncode == 1
        message, = second.stderr.strip().splitlines()
        assert message.startswith("fastsd: error: `store` must not be in use by another run; got "
                                  f"{tmp_path / 'out' / 'fig1c-quick.jsonl'}, which pid "
                                  f"{first.pid} on ")
        assert f"(lock file {lock})" in message and f"delete {lock}." in message
        while not _stored(tmp_path / "out"):
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=60) == 143
        assert not lock.exists(), "the lock outlived its run"
        records = [json.loads(line) for line in
                   (tmp_path / "out" / "fig1c-quick.jsonl").read_text().splitlines()]
        assert len({r["key"] for r in records}) == len(records)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)


@pytest.mark.parametrize("command, advice", [
    (["walkers", *WALK], "use smaller --L, --batch-size, --n-walkers or --n-iters"),
    (["train", *TINY], "use smaller --d, --L, --width, --batch-size or --n-test")])
def test_out_of_memory_advice_names_the_commands_own_options(command, advice, capsys,
                                                             monkeypatch):
    import fastsd.cli

    def exhausted(args):
        raise MemoryError
    monkeypatch.setattr(fastsd.cli, "_cmd_walkers", exhausted)
    monkeypatch.setattr(fastsd.cli, "_cmd_train", exhausted)
    assert main(command) == 1
    assert capsys.readouterr().err == f"fastsd: error: out of memory; {advice}\n"


def test_ntk_uses_the_symbols_of_train_and_the_scans_by_default(capsys):
    # it used to default to task seed 0, so `fastsd ntk` and `fastsd train` with the same
    # d, L and seed compared the limit and the network on different symbols
    from fastsd.conventions import derive_task_seed

    assert main(["ntk", "--d", "8", "--L", "4", "--steps", "100", "--eval-every", "50",
                 "--n-test", "64", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["task_seed"] == derive_task_seed(0, 4, 8)


def test_train_takes_gamma_lazy_as_the_scans_do(capsys):
    from fastsd.conventions import lazy_gamma

    assert main(["train", *TINY[:4], "--gamma", "lazy", *TINY[6:], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gamma"] == lazy_gamma(8)
    with pytest.raises(SystemExit) as exc:
        main(["train", *TINY[:4], "--gamma", "LAZY", *TINY[6:]])
    assert exc.value.code == 2
    assert "must be a number > 0 or 'lazy'" in capsys.readouterr().err


@pytest.mark.parametrize("command, option", [
    (["train", *TINY[:6], "--width", "1000000000", *TINY[8:]], "--width"),
    (["train", *TINY[:-2], "--n-test", "10000000000"], "--n-test"),
    (["walkers", *WALK, "--n-walkers", "1000000000000"], "--n-walkers"),
    (["ntk", "--d", "2", "--L", "1000000", "--pairs", "100"], "--L"),
])
def test_a_size_that_cannot_fit_is_one_line_naming_the_option(command, option, capsys,
                                                              monkeypatch):
    from fastsd import _memory
    monkeypatch.setattr(_memory, "available_bytes", lambda: 16 << 30)
    assert main(command) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"fastsd: error: `{option}` = ")
    assert " needs " in err and "but 16.00 GiB is available" in err
    assert err.endswith(f"use a smaller `{option}`.\n") and "out of memory" not in err


@pytest.mark.parametrize("bad, message", [
    (["--batch-size", "3"], "`--batch-size` must be an even integer >= 2"),
    (["--batch-size", "1"], "`--batch-size` must be an even integer >= 2"),
    (["--n-test", "1"], "`--n-test` must be an integer >= 2; got 1"),
])
def test_train_refuses_odd_batches_and_single_test_pairs(bad, message, capsys):
    assert main(["train", *TINY, *bad]) == 1
    assert message in capsys.readouterr().err


def test_advice_spells_options_as_the_command_does(capsys):
    from fastsd.cli import _option_spelling, build_parser
    ntk = build_parser()._subparsers._group_actions[0].choices["ntk"]
    assert _option_spelling("use solver='cg' (matrix-free) or pairs=<n>; got `n_test`, "
                            "SameDifferent(d=4, L=2) and task.solver='x'", ntk) == (
        "use --solver cg (matrix-free) or --pairs <n>; got `--n-test`, "
        "SameDifferent(d=4, L=2) and task.solver='x'")
    # a dense solve that cannot fit: the lazy limit's own message, in the CLI's spelling
    assert main(["ntk", "--d", "2", "--L", "4000", "--solver", "dense"]) == 1
    err = capsys.readouterr().err
    assert "use --solver cg (matrix-free), --pairs <n> to sample n pairs" in err
    assert "solver='cg'" not in err and err.count("\n") == 1
    # every option the advice names exists: raising the memory limit is --max-bytes
    assert "or raise `--max-bytes`" in err and "max_bytes" not in err
    assert main(["ntk", "--d", "2", "--L", "4", "--solver", "dense", "--max-bytes", "1000",
                 "--quiet"]) == 1
    assert "more than `--max-bytes` = 1000 bytes" in capsys.readouterr().err
    assert main(["ntk", "--d", "2", "--L", "4", "--solver", "dense", "--max-bytes", "4096",
                 "--quiet"]) == 0


def test_defaults_agree_between_the_python_api_the_cli_and_the_scans():
    import inspect

    from fastsd import lazy_limit, train_ensemble
    from fastsd.cli import build_parser
    from fastsd.scan import get_predictor

    sub = build_parser()._subparsers._group_actions[0].choices

    def cli(command, *required):
        return vars(sub[command].parse_args(list(required)))

    def python(func):
        return {k: p.default for k, p in inspect.signature(func).parameters.items()
                if p.default is not inspect.Parameter.empty}

    ntk, api, scan = (cli("ntk", "--d", "1", "--L", "2"), python(lazy_limit),
                      get_predictor("lazy_limit").defaults)
    shared = set(scan) & set(api) - {"seed"}       # the CLI and scans default seed to 0
    assert {"method", "n_test", "steps", "eval_every", "pairs", "ridge", "solver"} <= shared
    for name in shared:
        assert api[name] == ntk[name] == scan[name], name
    assert api["method"] == "logistic_flow" and api["n_test"] == 1024

    train, api, scan = (cli("train", "--d", "1", "--L", "2", "--gamma", "1", "--width", "1",
                            "--steps", "1"), python(train_ensemble),
                        get_predictor("mlp").defaults)
    shared = set(scan) & set(api)
    assert {"batch_size", "eval_every", "n_test", "alpha0", "init"} <= shared
    for name in shared:
        assert api[name] == train[name] == scan[name], name


def test_reproduce_help_points_to_the_dry_run_for_the_wall_time_and_types_no_time():
    # Measured times belong with the benchmarks (the docs' results page), not in the help:
    # the epilog names the command that predicts the wall time here, and no time or machine.
    import re

    proc = subprocess.run([sys.executable, "-m", "fastsd", "reproduce", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    epilog = " ".join(proc.stdout.split("\n\n")[-1].split())
    assert "fastsd reproduce FIGURE --quick --dry-run" in epilog
    assert "compiles" in epilog and "cached" in epilog and "docs/results.md" in epilog
    assert not re.search(r"\d+ ?s\b|EPYC|Xeon|20\d\d-\d\d", proc.stdout), proc.stdout


def test_an_inherited_ignored_sigint_stays_ignored(tmp_path):
    # As for any command: started in the background with SIGINT ignored (nohup, `cmd &` in a
    # script), Ctrl-C to the terminal's process group must not stop it; SIGTERM still does.
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            "from fastsd.cli import main; import fastsd.cli as c; "
            "c._cmd_train = lambda args: (signal.raise_signal(signal.SIGINT), print('ran on'));"
            "sys.exit(main(['train', '--d', '2', '--L', '2', '--gamma', '1', '--width', '2', "
            "'--steps', '1']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "ran on" in proc.stdout, proc.stderr


def test_output_piped_into_a_reader_that_stops_early_ends_quietly():
    # `fastsd ntk --json | head -c 500` printed "fastsd: error: [Errno 32] Broken pipe";
    # `true` closes the pipe before fastsd writes, so the write always fails
    cmd = (f"{sys.executable} -m fastsd ntk --d 2 --L 3 --steps 20 --eval-every 10 "
           f"--n-test 8 --quiet --json | true; echo status=${{PIPESTATUS[0]}}")
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert "status=0" in proc.stdout, (proc.stdout, proc.stderr)
    assert "Broken pipe" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
