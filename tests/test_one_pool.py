"""Several grids, or several figures, on one pool: every group in one queue, largest first.

- ``run_many`` hands the groups of all its grids to the executor by predicted seconds,
  largest first, interleaving the grids (those whose time is not modelled go first), and
  stores what separate ``run`` calls store;
- ``plan_many`` predicts that schedule: its wall time is that of all the groups together,
  at most the grids' own wall times one after another;
- two runs on one store are refused before anything runs;
- ``fastsd reproduce A B`` computes both figures' cells, then draws each; when one figure's
  cells fail the other is still drawn and printed, the command exits 1, and the rerun
  computes only what failed.
"""
import concurrent.futures as cf
import json

import pytest

from fastsd.cli import main
from fastsd.figures import figC1
from fastsd.scan import Grid, plan, plan_many, run, run_many
from fastsd.scan.scheduling import predicted_wall

FIXED = dict(d=8, L=4, width=16, eval_every=1000, n_test=64, gamma=1.0, seed=0)


class _Recording(cf.Executor):
    """Runs each group at once in this process and keeps the order of submission."""

    def __init__(self):
        self.jobs = []

    def submit(self, fn, *args, **kwargs):
        self.jobs.append(args)
        future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:                    # pragma: no cover - reported by the scan
            future.set_exception(exc)
        return future


def _strip(records):
    return sorted(json.dumps({k: v for k, v in r.items() if k not in ("wall_time", "finished_at")},
                             sort_keys=True) for r in records)


def test_run_many_hands_out_every_grids_groups_largest_first(tmp_path):
    a = Grid(steps=[1000, 4000], **FIXED)
    b = Grid(steps=[2000, 3000], **FIXED)
    c = Grid(L=[2, 3])                                          # Eq. 3: not modelled
    pool = _Recording()
    written = run_many([(a, "mlp", tmp_path / "a.jsonl"), (b, "mlp", tmp_path / "b.jsonl"),
                        (c, "theory", tmp_path / "c.jsonl")], pool, backend="cpu",
                       progress=False)
    order = [(job[0], job[1][0].get("steps")) for job in pool.jobs]
    assert order[:2] == [("theory", None)] * 2
    assert order[2:] == [("mlp", 4000), ("mlp", 3000), ("mlp", 2000), ("mlp", 1000)]
    assert [len(w) for w in written] == [2, 2, 2]
    # the records are those of separate runs
    alone = run(a, "mlp", tmp_path / "a2.jsonl", "serial", backend="cpu", progress=False)
    assert _strip(alone) == _strip(written[0])


def test_plan_many_predicts_the_one_queue(tmp_path):
    a = Grid(steps=[1000, 4000], **FIXED)
    b = Grid(steps=[2000, 3000], **FIXED)
    runs = [(a, "mlp", tmp_path / "a.jsonl"), (b, "mlp", tmp_path / "b.jsonl")]
    plans, wall = plan_many(runs, workers=2, backend="cpu")
    seconds = [s for p in plans for s in p.group_seconds]
    assert wall == pytest.approx(predicted_wall(seconds, 2))
    assert max(p.seconds for p in plans) <= wall < sum(p.seconds for p in plans)
    alone = plan(a, "mlp", tmp_path / "a.jsonl", workers=2, backend="cpu")
    assert plans[0].group_seconds == alone.group_seconds     # no split: the same groups


def test_two_runs_on_one_store_are_refused_before_anything_runs(tmp_path):
    grid = Grid(L=[2, 3])
    with pytest.raises(ValueError, match="each run must have its own store"):
        run_many([(grid, "theory", tmp_path / "s.jsonl"),
                  (grid, "theory", tmp_path / "." / "s.jsonl")], "serial", progress=False)
    with pytest.raises(TypeError, match=r"\(grid, predictor, store\) triple"):
        run_many([(grid, "theory")], "serial", progress=False)
    assert not list(tmp_path.iterdir())


def test_a_figure_whose_cells_fail_leaves_the_other_drawn(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(figC1, "QUICK", figC1.preset("figC1-quick", 8, (16,), (64,)))

    def broken(*args, **kwargs):
        raise RuntimeError("max_margin broke")

    args = ["reproduce", "fig1a", "figC1", "--quick", "--out", str(tmp_path), "--json",
            "--serial", "--quiet"]
    with monkeypatch.context() as m:
        m.setattr("fastsd.theory.max_margin", broken)
        assert main(args) == 1
    out, err = capsys.readouterr()
    drawn = [json.loads(line) for line in out.splitlines()]
    assert [r["figure"] for r in drawn] == ["fig1a-quick"]
    assert "figC1-quick" in err and "max_margin broke" in err
    assert main(args) == 0                          # the rerun: only figC1's cell
    assert [json.loads(line)["figure"] for line in capsys.readouterr().out.splitlines()] == [
        "fig1a-quick", "figC1-quick"]


def test_all_is_given_alone_and_each_figure_once(capsys):
    from fastsd.figures import FIGURES
    from fastsd.reproduce import plan_all

    for args, message in ((["all", "fig1c"], "'all' is every figure: give it alone"),
                          (["fig1c", "fig1c"], "name each figure once; got fig1c fig1c")):
        with pytest.raises(SystemExit) as exc:
            main(["reproduce", *args, "--dry-run"])
        assert exc.value.code == 2 and message in capsys.readouterr().err
    # the same in Python, where ["all"] is every figure
    with pytest.raises(ValueError, match=r"`figures` must name each figure once"):
        plan_all(["fig1c", "fig1c"])
    with pytest.raises(ValueError, match=r"`figures` must be a non-empty list"):
        plan_all("fig1c")
    assert [p["figure"] for p in plan_all(["all"], quick=True, workers=4)["figures"]] == [
        f"{f}-quick" for f in FIGURES]
