"""A cluster job's walltime as the scan plans for it (issue 56; fastsd.scan.cluster and
fastsd.scan.scheduling).

- ``walltime_seconds`` reads each scheduler's forms as its submit command reads them (SLURM's
  ``sbatch -t``, LSF's ``bsub -W``, PBS's ``-l walltime``), "no limit" as None, and refuses
  the rest by name;
- ``fit_walltime``: every modelled group ends up within ``WALLTIME_FIT`` of the walltime,
  each cell in exactly one contiguous piece; a group that cannot be split and does not fit
  is refused naming ``walltime`` and the walltime it would need;
- ``predicted_wall`` and ``lifetimes`` on jobs replaced at their walltime, against hand-worked
  cases and, without a walltime, the unlimited model;
- ``plan`` with a walltime splits the groups that would not fit and counts the lifetimes.
"""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastsd.scan import Grid, plan
from fastsd.scan.cluster import walltime_seconds
from fastsd.scan.scheduling import (WALLTIME_FIT, Item, fit_walltime, lifetimes,
                                    predicted_wall)


@pytest.mark.parametrize("kind, text, seconds", [
    ("slurm", "00:01:00", 60), ("slurm", "90", 5400), ("slurm", "5:30", 330),
    ("slurm", "1-0", 86400), ("slurm", "2-03", 183600), ("slurm", "1-00:30", 88200),
    ("slurm", "1-00:00:15", 86415), ("slurm", "0", None), ("slurm", "UNLIMITED", None),
    ("slurm", "infinite", None), ("slurm", None, None),
    ("lsf", "90", 5400), ("lsf", "2:15", 8100),
    ("pbs", "3600", 3600), ("pbs", "10:00", 600), ("pbs", "01:00:00", 3600),
    ("sge", "0:0:30", 30), ("local", "00:01:00", None), ("htcondor", "1:00", None),
])
def test_walltimes_are_read_as_the_schedulers_submit_command_reads_them(kind, text, seconds):
    assert walltime_seconds(kind, text) == seconds


@pytest.mark.parametrize("kind, text", [
    ("slurm", "an hour"), ("slurm", "1:2:3:4"), ("slurm", "1-2:3:4:5"), ("slurm", "-5"),
    ("lsf", "1:00:00"), ("pbs", "0"), ("pbs", "1.5"), ("sge", "00:00:00"),
])
def test_a_walltime_no_scheduler_reads_is_refused_by_name(kind, text):
    with pytest.raises(ValueError, match=rf"`walltime` of a '{kind}' job must be"):
        walltime_seconds(kind, text)


class _Ensemble:
    """A splittable predictor whose group costs its cells' work plus a shared second."""

    name, splittable = "ensemble", True

    def seconds(self, group, target, dtype):
        return 1.0 + sum(cell["work"] for cell in group)


class _Single(_Ensemble):
    splittable = False


def _items(pred, groups):
    items, n = [], 0
    for sizes in groups:
        g = [(f"k{n + i}", {"i": n + i}, {"work": w}) for i, w in enumerate(sizes)]
        n += len(sizes)
        items.append(Item(pred.seconds([c for _, _, c in g], "cpu", None), True, 0, g))
    return items, n


@given(groups=st.lists(st.lists(st.floats(0.0, 50.0), min_size=1, max_size=12), min_size=1,
                       max_size=8),
       walltime=st.floats(110.0, 2000.0))
def test_fitting_a_walltime_keeps_every_cell_once_and_each_group_within_its_part(groups,
                                                                                  walltime):
    pred = _Ensemble()
    items, n = _items(pred, groups)
    out = fit_walltime(items, [pred], walltime, "cpu", None)
    assert sorted(k for it in out for k, _, _ in it.group) == sorted(f"k{i}" for i in range(n))
    assert all(it.work <= WALLTIME_FIT * walltime for it in out)
    whole = {k: [c[0] for c in it.group] for it in items for k, *_ in it.group}
    for it in out:                                                  # contiguous pieces
        ks = [k for k, _, _ in it.group]
        start = whole[ks[0]].index(ks[0])
        assert whole[ks[0]][start:start + len(ks)] == ks
    if all(it.work <= WALLTIME_FIT * walltime for it in items):
        assert out == items                                         # nothing to split


def test_a_group_that_cannot_fit_its_walltime_is_refused_naming_walltime():
    items, _ = _items(_Ensemble(), [[10.0, 10.0], [29.0]])          # 21 s and 30 s
    with pytest.raises(ValueError, match=r"`walltime` 0:00:40 is too short for the cells "
                                         r"\{'i': 2\} \(ensemble, 1 cell\(s\).*predicted at "
                                         r"0:00:30.*fix: a walltime of at least 0:01:00"):
        fit_walltime(items, [_Ensemble()], 40.0, "cpu", None)
    items, _ = _items(_Single(), [[5.0, 5.0, 5.0]])                 # 16 s, not splittable
    with pytest.raises(ValueError, match=r"3 cell\(s\) that run as one group"):
        fit_walltime(items, [_Single()], 30.0, "cpu", None)
    assert fit_walltime(items, [_Single()], 32.0, "cpu", None) == items


@pytest.mark.parametrize("seconds, workers, walltime, wall, lives", [
    ([40, 40, 40], 1, None, 120, None),
    ([40, 40, 40], 1, 100, 140, 2),         # the third would run past 100: restarted at 100
    ([40, 40, 40], 1, 120, 120, 1),         # ends exactly at the walltime: fits
    ([30, 30, 30, 30], 2, 50, 80, 2),       # each worker: 30, then 50 + 30
    ([30, 30, 30, 30], 2, 60, 60, 1),
    ([10] * 10, 1, 25, 10 * 10 + 4 * 5, 5),  # two a lifetime, 5 s of each lost
    ([50, 20, 20, 10], 2, 45, 55, 2),       # 20 + 20, then 10 from 45; 50 > 45 as is
])
def test_the_predicted_wall_time_replaces_each_job_at_its_walltime(seconds, workers, walltime,
                                                                  wall, lives):
    assert predicted_wall(seconds, workers, walltime) == wall
    if walltime is None:
        assert predicted_wall(seconds, workers) == wall
    else:
        assert lifetimes(seconds, workers, walltime) == lives


@given(seconds=st.lists(st.floats(0.1, 100.0), min_size=1, max_size=30),
       workers=st.integers(1, 8), walltime=st.floats(200.0, 1e4))
def test_a_walltime_never_shortens_a_run_and_costs_at_most_a_group_a_lifetime(seconds,
                                                                             workers,
                                                                             walltime):
    free = predicted_wall(seconds, workers)
    limited = predicted_wall(seconds, workers, walltime)
    lives = lifetimes(seconds, workers, walltime)
    assert limited >= free - 1e-9
    assert lives >= 1 and (lives > 1 or limited == free)
    assert limited <= lives * walltime + 1e-9
    if free <= walltime:                    # one lifetime holds every worker's share
        assert lives == 1 and limited == pytest.approx(free)


def test_a_plan_on_jobs_with_a_walltime_splits_what_would_not_fit(tmp_path):
    grid = Grid(d=8, L=4, gamma=[0.5, 1.0, 2.0, 4.0], seed=0, width=32, steps=3000,
                eval_every=1000, n_test=128, sigma2=0.1)
    free = plan(grid, "mlp", tmp_path / "p.jsonl", workers=1)
    assert free.group_sizes == (4,) and free.walltime is None and free.lifetimes is None
    walltime = 1.5 * free.work                       # one group: more than half of it
    fitted = plan(grid, "mlp", tmp_path / "p.jsonl", workers=1, walltime=walltime)
    assert fitted.group_sizes == (2, 2) and fitted.walltime == walltime
    assert all(s <= WALLTIME_FIT * walltime for s in fitted.group_seconds)
    assert fitted.to_json()["walltime_s"] == walltime
    assert fitted.lifetimes == lifetimes(fitted.group_seconds, 1, walltime)
    assert fitted.seconds == predicted_wall(fitted.group_seconds, 1, walltime)
    with pytest.raises(ValueError, match="`walltime` must be"):
        plan(grid, "mlp", tmp_path / "p.jsonl", workers=1, walltime=0)


def test_a_scan_refuses_a_group_its_jobs_walltime_cannot_hold_before_submitting(tmp_path):
    """``run`` on a cluster's client whose jobs' walltime no group fits: refused naming
    ``walltime`` before any job is submitted (``start_jobs``) or the store is bound."""
    distributed = pytest.importorskip("distributed")
    from fastsd.scan import run

    grid = Grid(d=8, L=4, gamma=[0.5, 1.0], seed=0, width=32, steps=3000, eval_every=1000,
                n_test=128)
    store = tmp_path / "s.jsonl"
    with distributed.LocalCluster(n_workers=0, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        client.walltime = 1e-3                      # as jobqueue_client sets it, in seconds
        client.start_jobs = lambda: pytest.fail("jobs were submitted")
        with pytest.raises(ValueError, match=r"`walltime` 0:00:00 is too short for the cells "
                                             r".*fix: a walltime of at least"):
            run(grid, "mlp", store, client, backend="cpu", progress=False)
    assert not store.exists() or store.read_text() == ""
    assert not (tmp_path / "s.jsonl.grid.json").exists()      # not bound
