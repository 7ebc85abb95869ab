"""Fig. 1e's L*(d) and its fitted exponent, on synthetic heatmaps with a known law.

Accuracy(d, L) = 0.5 + 0.5 tanh(log(L / L*(d))) with L*(d) = 3 d^b, per-seed noise
added; the fit must recover b, its bootstrap interval must cover b and shrink with
the noise, and collapse to the point when the seeds agree.
"""
import re

import numpy as np
import pytest

from fastsd.figures.fig1e import PAPER_DL, lazy_scaling, paper_lattice

DS = [16, 23, 32, 45, 64, 91, 128]
LS = [int(round(v)) for v in 2.0 ** np.arange(4, 17, 0.5)]


def heatmap(b, noise, seeds, rng):
    recs = []
    for d in DS:
        for L in LS:
            p = 0.5 + 0.5 * np.tanh(np.log(L / (3.0 * d ** b)))
            for s in range(seeds):
                recs.append({"d": d, "L": L, "seed": s,
                             "best_test_accuracy": float(np.clip(p + noise * rng.standard_normal(),
                                                                 0, 1))})
    return recs


@pytest.mark.parametrize("b", [1.0, 1.5, 2.0])
def test_the_fit_recovers_a_known_exponent_and_its_interval_covers_it(b):
    rng = np.random.default_rng(int(10 * b))
    out = lazy_scaling(heatmap(b, 0.02, 5, rng))
    assert set(out["L_star"]) == set(DS)
    lo, hi = out["exponent_ci"]
    assert lo <= b <= hi and hi - lo < 0.3
    assert out["exponent"] == pytest.approx(b, abs=0.1)
    # one seed a cell: no interval from resampling seeds
    assert lazy_scaling(heatmap(b, 0.02, 1, rng))["exponent_ci"] is None


def test_the_interval_shrinks_with_the_noise_and_closes_when_seeds_agree():
    rng = np.random.default_rng(0)
    wide = lazy_scaling(heatmap(1.5, 0.05, 4, rng))["exponent_ci"]
    narrow = lazy_scaling(heatmap(1.5, 0.01, 4, rng))["exponent_ci"]
    assert narrow[1] - narrow[0] < wide[1] - wide[0]
    exact = lazy_scaling(heatmap(1.5, 0.0, 3, rng))
    assert exact["exponent_ci"] == pytest.approx([exact["exponent"]] * 2, abs=1e-12)
    # the bootstrap is seeded: the same records give the same interval
    recs = heatmap(1.5, 0.03, 3, rng)
    assert lazy_scaling(recs)["exponent_ci"] == lazy_scaling(recs)["exponent_ci"]


def _example():
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parents[1] / "examples" / "lazy_d2_scaling.py"
    spec = importlib.util.spec_from_file_location("lazy_d2_scaling", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_paper_lattice_is_the_paper_grid_extended_at_its_spacing():
    paper = sorted({int(round(v)) for v in 2.0 ** np.linspace(7, 10, 20)})
    assert paper_lattice(128, 1024) == PAPER_DL == paper
    wide = paper_lattice(8, 1024)
    assert wide[-len(paper):] == paper and wide[0] == 8
    every = {int(round(2.0 ** (7 + 3 * k / 19))) for k in range(-40, 20)}
    assert wide == sorted(L for L in every if 8 <= L <= 1024)
    with pytest.raises(ValueError, match="`hi` must be an integer >= 100"):
        paper_lattice(100, 10)
    with pytest.raises(ValueError, match="`lo` must be an integer >= 1"):
        paper_lattice(0, 10)


def test_the_example_passes_the_limit_dtype_and_keeps_dtypes_apart(tmp_path, monkeypatch):
    ex = _example()
    seen = []

    def fake_cell(d, L, *, seed, dtype, **kw):
        seen.append(dtype)
        return {"d": d, "L": L, "seed": seed, "steps": 1000, "dtype": dtype,
                "best_test_accuracy": 0.5 + 0.5 * np.tanh(np.log(L / 100.0))}

    monkeypatch.setattr(ex, "lazy_cell", fake_cell)
    out = str(tmp_path / "o.jsonl")
    for dtype in ("float32", "float32", "float64"):
        monkeypatch.setattr("sys.argv", ["x", "--ds", "64", "--seeds", "0", "--steps", "1000",
                                         "--L-range", "32", "512", "--workers", "1",
                                         "--dtype", dtype, "--out", out])
        n = len(seen)                           # --workers 1: in this process
        ex.main()
        assert set(seen[n:]) <= {dtype}
    first = seen.count("float32")
    assert first > 0 and seen.count("float64") == first    # float32's rerun computed nothing


@pytest.mark.parametrize("width", [None, 4096])
@pytest.mark.parametrize("L_star", [40.0, 100.0, 700.0, 1e4, 2.0])
def test_the_example_bisection_brackets_the_first_crossing(L_star, width, tmp_path,
                                                           monkeypatch):
    ex = _example()
    calls = []

    def fake_cell(d, L, *, seed, **kw):
        calls.append(L)
        acc = 0.5 + 0.5 * np.tanh(np.log(L / L_star)) + 0.01 * (seed - 1)
        return {"d": d, "L": L, "seed": seed, "best_test_accuracy": float(acc)}

    monkeypatch.setattr(ex, "lazy_cell", fake_cell)
    monkeypatch.setattr(ex, "network_cell", lambda d, L, seed, steps, m: fake_cell(
        d, L, seed=seed))
    grid = paper_lattice(32, 1024)
    recs = ex.search(64, width, grid, [0, 1, 2], 0.75, 100, str(tmp_path / "out.jsonl"), {})
    assert len(set(calls)) <= int(np.ceil(np.log2(len(grid) + 1)))     # a bisection
    crossing = L_star * np.exp(np.arctanh(0.5))                          # mean reaches 0.75
    out = lazy_scaling(recs, n_boot=0)
    if grid[0] < crossing <= grid[-1]:
        assert out["L_star"][64] == pytest.approx(crossing, rel=0.02)
    else:
        assert 64 not in out["L_star"]
    assert len(open(tmp_path / "out.jsonl").read().splitlines()) == len(recs)


@pytest.mark.parametrize("argv, message", [
    (["--ds", "0"], "--ds must be integers >= 1; got 0"),
    (["--L-range", "100", "10"], "--L-range must be LO HI with 1 <= LO <= HI; got 100 10"),
    (["--L-range", "0", "10"], "--L-range must be LO HI with 1 <= LO <= HI; got 0 10"),
    (["--seeds", "0", "0"], "--seeds must be distinct integers >= 0; got 0 0"),
    (["--level", "2"], r"--level must be an accuracy in \(0.5, 1\); got 2.0"),
    (["--workers", "0"], "--workers must be an integer >= 1; got 0"),
    (["--steps", "999"], "--steps must be an integer >= 1000 .evaluations every 1000.; got 999"),
    (["--width", "0"], "--width must be an integer >= 1; got 0"),
    (["--no-limit"], "--no-limit needs --width"),
    (["--L-range", "300", "300"], "--L-range must hold a point L >= 2 of the paper's lattice")])
def test_the_example_refuses_bad_arguments_before_running(argv, message, monkeypatch, capsys):
    ex = _example()
    monkeypatch.setattr(ex, "search", lambda *a: pytest.fail("ran"))
    monkeypatch.setattr("sys.argv", ["lazy_d2_scaling.py", *argv])
    with pytest.raises(SystemExit) as stop:
        ex.main()
    assert stop.value.code == 2
    assert re.search(message, capsys.readouterr().err)


def test_the_example_quick_keeps_the_ds_asked_for(tmp_path, monkeypatch, capsys):
    from concurrent.futures import ThreadPoolExecutor
    ex = _example()
    asked = []
    spawned = []        # the pool's start method: spawned (a fork of Numba's threads can die)
    monkeypatch.setattr(ex, "ProcessPoolExecutor", lambda n, mp_context: spawned.append(
        mp_context.get_start_method()) or ThreadPoolExecutor(n))
    monkeypatch.setattr(ex, "search", lambda d, width, grid, seeds, level, steps, out, done,
                        dtype: asked.append((d, width or 0, steps, grid[0], grid[-1])) or [])
    monkeypatch.setattr("sys.argv", ["x", "--quick", "--ds", "16", "32",
                                     "--out", str(tmp_path / "q.jsonl")])
    ex.main()
    assert sorted(asked) == [(16, 0, 5000, 8, 476), (32, 0, 5000, 8, 476)]
    asked.clear()                                   # the networks beside the limit, or alone
    monkeypatch.setattr("sys.argv", ["x", "--quick", "--ds", "16", "--width", "64",
                                     "--steps", "2000", "--out", str(tmp_path / "q.jsonl")])
    ex.main()
    assert sorted(asked) == [(16, 0, 2000, 8, 476), (16, 64, 2000, 8, 476)]
    asked.clear()
    monkeypatch.setattr("sys.argv", ["x", "--quick", "--ds", "16", "--width", "64",
                                     "--no-limit", "--out", str(tmp_path / "q.jsonl")])
    ex.main()
    assert asked == [(16, 64, 5000, 8, 476)] and set(spawned) == {"spawn"}
    asked.clear()                                   # --workers 1: in this process, no pool
    monkeypatch.setattr(ex, "ProcessPoolExecutor", lambda *a, **k: pytest.fail("a pool"))
    monkeypatch.setattr("sys.argv", ["x", "--quick", "--ds", "16", "32", "--workers", "1",
                                     "--out", str(tmp_path / "q.jsonl")])
    ex.main()
    assert sorted(asked) == [(16, 0, 5000, 8, 476), (32, 0, 5000, 8, 476)]


def test_the_example_network_cell_trains_on_the_limit_cells_symbols(monkeypatch):
    """network_cell's task has the symbols of lazy_cell's cell of the same (d, L, seed)."""
    import fastsd
    from fastsd import SameDifferent
    ex = _example()
    seen = []
    real = fastsd.train
    monkeypatch.setattr(fastsd, "train", lambda task, *a, **kw: seen.append(task) or real(
        task, *a, **kw))
    net = ex.network_cell(4, 6, 1, 1000, 32)
    lim = ex.lazy_cell(4, 6, seed=1, steps=1000, eval_every=1000, n_test=64)
    assert net["width"] == 32 and 0 <= net["best_test_accuracy"] <= 1
    assert np.array_equal(seen[0].symbols, SameDifferent(4, 6, seed=lim["task_seed"]).symbols)


def timed_heatmap(ds, Ls, seeds, steps, eval_every, law, width=None):
    """Records with histories at evaluation_steps(steps, eval_every, "log"): accuracy
    0.5 + 0.5 tanh(log(L / law(d, t))) at step t, as the flows' records hold them."""
    from fastsd.schedules import evaluation_steps

    evals = evaluation_steps(steps, eval_every, "log")
    recs = []
    for d in ds:
        for L in Ls:
            for s in range(seeds):
                acc = [float(0.5 + 0.5 * np.tanh(np.log(L / law(d, t)))) for t in evals]
                rec = {"d": d, "L": L, "seed": s, "eval_every": eval_every, "eval_at": "log",
                       "best_test_accuracy": max(acc),
                       "history": {"step": evals, "test_accuracy": acc}}
                if width:
                    rec["width"] = width
                recs.append(rec)
    return recs


def law(d, t):
    return 3.0 + 0.002 * d * t            # L* grows with the reading time


def test_L_star_is_read_at_each_evaluated_step():
    from fastsd.figures.fig1e import scaling_in_time

    Ls = paper_lattice(2, 4096)
    recs = timed_heatmap([64, 128, 256], Ls, 2, 2000, 1000, law)
    crossing = np.exp(np.arctanh(0.5))               # L / law(d, t) where accuracy is 0.75
    rows = scaling_in_time(recs, n_boot=0)
    assert [k for k in rows if not isinstance(k, str)] == [1, 2, 3, 5, 10, 20, 30, 50, 100,
                                                           200, 300, 500, 1000, 2000]
    for t in (3, 100, 1000):
        for d in (64, 128, 256):
            assert rows[t]["L_star"][d] == pytest.approx(crossing * law(d, t), rel=0.03)
    # the protocol reads steps 1000 and 2000, the best every step: here the earliest
    assert rows["protocol"]["L_star"] == rows[1000]["L_star"]
    assert rows["best"]["L_star"] == rows[1]["L_star"]
    with pytest.raises(ValueError, match="step 7 is not among the steps of the record of "
                                         "d=64, L=2, seed=0 .eval_at='log': 1, 2, 3, 5, 10"):
        lazy_scaling(recs, at=7)
    # records of two runs are not seeds of one
    other = [dict(r, eval_at="1,3") for r in recs[:3]]
    with pytest.raises(ValueError, match="`records` must share one `eval_at`"):
        lazy_scaling(recs + other)
    with pytest.raises(ValueError, match=r"`level` must be an accuracy in \(0, 1\); got 1.5"):
        lazy_scaling(recs, level=1.5)
    with pytest.raises(ValueError, match="`records` must hold at least one record"):
        scaling_in_time([])
    with pytest.raises(TypeError, match="`at` must be 'best', 'protocol' or a step"):
        lazy_scaling(recs, at="worst")


def test_the_report_draws_and_tabulates_the_time_panel(tmp_path):
    from fastsd.figures import fig1e

    Ls = paper_lattice(2, 700)[::2]
    parts = {"lazy_limit": timed_heatmap([48, 92], Ls, 2, 3000, 1000, law),
             "mlp": timed_heatmap([48, 92], Ls, 2, 3000, 1000,
                                  lambda d, t: 1.2 * law(d, t), width=1024)}
    heading, text, tables, figures = fig1e.report(fig1e.QUICK, parts, str(tmp_path / "f"))
    assert str(tmp_path / "f-time.png") in figures
    assert "L*(d) of the limit against the reading time" in text
    assert "L*(d) of the lazy networks against the reading time" in text
    rows = tables["in_time"]["limit"]          # keyed by text, as JSON keeps them
    assert rows["1000"]["L_star"][48] == pytest.approx(np.exp(np.arctanh(0.5)) * law(48, 1000),
                                                     rel=0.03)
    # the heatmaps keep the paper's reading: the best of the evaluations every 1000 steps
    assert tables["scaling"]["limit"]["L_star"] == rows["protocol"]["L_star"]
    assert tables["scaling"]["limit"]["at"] == "protocol"
