"""Scans on a job-queue cluster through dask-jobqueue (fastsd.scan.cluster, `--cluster`).

- The cluster how-to's SLURM recipe (docs/howto/cluster.md), read from the page itself, gives jobs of single-threaded
  workers with its directives (the job script dask-jobqueue would submit);
- a scan through dask-jobqueue's local cluster of 4 worker processes, one of them killed
  mid-run, stores the same records as a serial run, none lost;
- bad kinds, sizes and an unconfigured scheduler are refused by name.
"""
import os
import re
import signal
import threading
import time

import pytest

from fastsd.scan import Grid, load, run

pytest.importorskip("dask_jobqueue")
distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

from fastsd.scan.cluster import jobqueue_client, jobqueue_cluster  # noqa: E402

RECIPE = os.path.join(os.path.dirname(__file__), os.pardir, "docs", "howto", "cluster.md")


def _readme_jobqueue_yaml():
    text = open(RECIPE, encoding="utf-8").read()
    block = re.search(r"```yaml\n(# ~/.config/dask/jobqueue.yaml\n.*?)```", text, re.S)
    assert block, "the cluster how-to's SLURM recipe (a ```yaml block for jobqueue.yaml) is missing"
    return block.group(1)


def test_the_readmes_slurm_recipe_makes_single_threaded_workers():
    import yaml

    config = yaml.safe_load(_readme_jobqueue_yaml())
    slurm = config["jobqueue"]["slurm"]
    # as Dask reads the file: merged into dask-jobqueue's defaults
    with dask.config.set({f"jobqueue.slurm.{k}": v for k, v in slurm.items()}):
        cluster = jobqueue_cluster("slurm")
        try:
            script = cluster.job_script()
        finally:
            cluster.close()
    assert slurm["cores"] == slurm["processes"]         # one thread a worker
    assert f"#SBATCH -n 1\n#SBATCH --cpus-per-task={slurm['cores']}" in script
    assert ("#SBATCH -p" not in script if slurm["queue"] is None     # the default partition
            else f"#SBATCH -p {slurm['queue']}" in script)
    assert f"#SBATCH -t {slurm['walltime']}" in script
    assert "--nthreads 1" in script and f"--nworkers {slurm['processes']}" in script


def test_bad_clusters_are_refused_by_name():
    with pytest.raises(ValueError, match="`cluster` must be one of 'slurm', .*; got 'slurmm'"):
        jobqueue_client("slurmm", 4)
    with pytest.raises(ValueError, match="`workers` must be an integer >= 1; got 0"):
        jobqueue_client("local", 0)
    with dask.config.set({"jobqueue.pbs.cores": None, "jobqueue.pbs.memory": None}):
        with pytest.raises(ValueError, match=r"`cluster` 'pbs' is not configured: .* in "
                                             r"~/.config/dask/jobqueue.yaml under jobqueue.pbs"):
            jobqueue_cluster("pbs")


def test_a_scan_on_four_jobqueue_workers_loses_nothing_when_one_is_killed(tmp_path):
    grid = Grid(L=[2, 3, 4, 5, 6], gamma=[0.5, 1.0, 2.0, 4.0], seed=[0, 1], d=8, width=16,
                steps=1500, eval_every=500, n_test=64)
    serial = {r["key"]: r for r in run(grid, "mlp", tmp_path / "serial.jsonl", "serial",
                                       backend="cpu", progress=False)}
    path = tmp_path / "cluster.jsonl"
    client = jobqueue_client("local", 4)
    try:
        client.wait_for_workers(4, timeout=120)
        pids = list(client.run(os.getpid).values())

        def kill_one():                          # once the first cells are stored
            while not (path.exists() and len(path.read_text().splitlines()) >= 2):
                time.sleep(0.05)
            os.kill(pids[0], signal.SIGKILL)
        killer = threading.Thread(target=kill_one, daemon=True)
        killer.start()
        written = run(grid, "mlp", path, client, backend="cpu", progress=False)
        killer.join(timeout=5)
    finally:
        client.close()
    assert len(grid) == 40 and len(written) == 40
    stored = load(path)
    assert len(stored) == 40 and set(stored["key"]) == set(serial)
    for _, r in stored.iterrows():
        assert r["best_test_accuracy"] == serial[r["key"]]["best_test_accuracy"]
        assert r["history"]["train_loss"] == serial[r["key"]]["history"]["train_loss"]


def test_the_cli_says_when_every_worker_is_gone_and_exits_1(tmp_path, monkeypatch, capsys):
    from fastsd.cli import main
    from fastsd.scan import executors

    monkeypatch.setattr(executors, "NO_WORKERS_WARN", 0.5)
    monkeypatch.setenv("FASTSD_NO_WORKERS_TIMEOUT", "1")
    with distributed.LocalCluster(n_workers=0, processes=False,
                                  dashboard_address=None) as cluster:    # no worker at all
        code = main(["reproduce", "fig1c", "--quick", "--quiet", "--dask",
                     cluster.scheduler_address, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert re.search(r"fastsd: error: no Dask worker for 1 s with \d+ group\(s\) left; the "
                     r"finished cells are saved", err), err


def test_importing_dask_jobqueue_keeps_the_sigint_handler():
    """Seen against a real SLURM: dask-jobqueue's runner module sets SIGINT to sys.exit()
    when imported, so a Ctrl-C on `fastsd reproduce --cluster slurm` exited 0 with no
    message. A fresh process (where dask_jobqueue is not imported yet) installs a handler,
    builds a cluster, and must find its handler still in place."""
    import subprocess
    import sys

    code = ("import signal, sys\n"
            "def mine(*args): pass\n"
            "signal.signal(signal.SIGINT, mine)\n"
            "assert 'dask_jobqueue' not in sys.modules\n"
            "from fastsd.scan.cluster import jobqueue_cluster\n"
            "jobqueue_cluster('local').close()\n"
            "assert 'dask_jobqueue.runner' in sys.modules\n"
            "sys.exit(0 if signal.getsignal(signal.SIGINT) is mine else 3)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


class _FakeCluster:
    """What JobWatcher reads and calls of a dask-jobqueue cluster: jobs by name (their
    workers' suffixes), the workers connected, each job's id, the event loop and scale."""

    def __init__(self, jobs, processes=2):
        self.group = [f"-{k}" for k in range(processes)]
        self.new_spec = {"group": self.group}
        self.worker_spec, self.workers, self.scheduler_info = {}, {}, {"workers": {}}
        self.next_id, self.loop, self._i = 100, self, 0
        self.scale(jobs=jobs)

    def add_callback(self, fn):
        fn()

    def scale(self, jobs):
        """As SpecCluster: names from a counter that stops at the first free one; then the
        jobs of names gone from the spec are closed and those new in it submitted."""
        while len(self.worker_spec) < jobs:
            while f"SLURMCluster-{self._i}" in self.worker_spec:
                self._i += 1
            self.worker_spec[f"SLURMCluster-{self._i}"] = dict(self.new_spec)
        for name in set(self.workers) - set(self.worker_spec):
            del self.workers[name]
        for name in [n for n in self.worker_spec if n not in self.workers]:
            self.workers[name] = type("Job", (), {"job_id": str(self.next_id)})()
            self.next_id += 1

    def join(self, name):
        for suffix in self.group:
            self.scheduler_info["workers"][f"tcp://{name}{suffix}"] = {"name": name + suffix}

    def lose(self, name):
        for suffix in self.group:
            self.scheduler_info["workers"].pop(f"tcp://{name}{suffix}", None)


def test_the_job_watcher_replaces_ended_jobs_up_to_its_cap_then_gives_up():
    import io

    from fastsd.scan.cluster import LOST_GRACE, JobWatcher

    cluster, out = _FakeCluster(jobs=2), io.StringIO()
    watcher = JobWatcher(cluster, "local", jobs=2, cap=1, pending_after=1e9, out=out)
    for name in list(cluster.worker_spec):
        cluster.join(name)
    assert watcher.poll(0.0) == []
    cluster.lose("SLURMCluster-0")                       # its job ended
    assert watcher.poll(1.0) == []                       # its workers may come back
    assert watcher.poll(1.0 + LOST_GRACE) == ["SLURMCluster-0"]
    assert "job 100 (SLURMCluster-0) ended; submitted a replacement (1 of at most 1" in \
        out.getvalue()
    assert len(cluster.worker_spec) == 2 and "SLURMCluster-0" not in cluster.worker_spec
    new, = set(cluster.worker_spec) - {"SLURMCluster-1"}
    assert cluster.workers[new].job_id == "102"          # a new job was submitted
    cluster.join(new)
    assert watcher.poll(2.0 + LOST_GRACE) == [] and watcher.gave_up is None
    for name in list(cluster.worker_spec):               # every job ends: no replacement left
        cluster.lose(name)
    watcher.poll(3.0 + LOST_GRACE)
    assert watcher.poll(4.0 + 2 * LOST_GRACE) == []
    assert "no replacement: 1 of at most 1 submitted" in out.getvalue()
    assert watcher.gave_up.startswith("every job of the cluster has ended (3, 1 of them "
                                      "replacements; at most 1")


def test_the_job_watcher_reports_a_job_pending_too_long_once():
    import io

    from fastsd.scan.cluster import JobWatcher

    cluster, out = _FakeCluster(jobs=2), io.StringIO()
    watcher = JobWatcher(cluster, "local", jobs=2, cap=4, pending_after=60.0, out=out)
    cluster.join("SLURMCluster-0")
    watcher.poll(0.0)
    watcher.poll(59.0)
    assert out.getvalue() == ""
    watcher.poll(61.0)
    watcher.poll(200.0)
    text = out.getvalue()
    assert text.count("waited") == 1 and "1 job(s) (101) have waited 61 s in the queue" in text
    assert watcher.gave_up is None


def test_the_resubmission_cap_and_the_pending_wait_are_read_from_the_environment(monkeypatch):
    from fastsd.scan.cluster import PENDING_REPORT, max_resubmits, pending_report

    monkeypatch.delenv("FASTSD_MAX_RESUBMITS", raising=False)
    monkeypatch.delenv("FASTSD_PENDING_REPORT", raising=False)
    assert max_resubmits(4) == 8 and pending_report() == PENDING_REPORT
    monkeypatch.setenv("FASTSD_MAX_RESUBMITS", "0")
    monkeypatch.setenv("FASTSD_PENDING_REPORT", "2.5")
    assert max_resubmits(4) == 0 and pending_report() == 2.5
    for name, bad in (("FASTSD_MAX_RESUBMITS", "-1"), ("FASTSD_MAX_RESUBMITS", "many"),
                      ("FASTSD_PENDING_REPORT", "inf")):
        monkeypatch.setenv(name, bad)
        with pytest.raises(ValueError, match=f"`{name}` must be a number >= 0; got '{bad}'"):
            max_resubmits(4) if name == "FASTSD_MAX_RESUBMITS" else pending_report()
        monkeypatch.delenv(name)


def test_a_job_that_left_the_queue_before_its_workers_joined_is_replaced(monkeypatch):
    """A job cancelled (or failed) before its workers joined never loses a worker: it counts
    as ended once its id has been missing from the scheduler's queue two looks in a row (it
    had stayed 'pending' for ever and was never replaced: seen in CI, where a job cancelled
    10 s after it started had not joined yet)."""
    import io
    import sys

    from fastsd.scan import cluster as cl

    queue = {"ids": "100\n101\n"}
    monkeypatch.setitem(cl.QUEUE_IDS, "fake", (sys.executable, "-c",
                                               "import os; print(os.environ['FAKE_QUEUE'])"))
    cluster, out = _FakeCluster(jobs=2), io.StringIO()
    watcher = cl.JobWatcher(cluster, "fake", jobs=2, cap=2, pending_after=1e9, out=out)
    cluster.join("SLURMCluster-0")

    def look(t):
        monkeypatch.setenv("FAKE_QUEUE", queue["ids"])
        return watcher.poll(t)
    assert look(0.0) == [] and look(5.0) == []               # 101 waits in the queue
    queue["ids"] = "100"                                     # 101 left it, never joined
    assert look(10.0) == []                                  # one look: not yet
    assert look(15.0) == ["SLURMCluster-1"]
    assert "job 101 (SLURMCluster-1) ended; submitted a replacement (1 of at most 2" in \
        out.getvalue()
    assert len(cluster.worker_spec) == 2 and watcher.gave_up is None
    # the ended job was the one the cluster's counter would name next: its replacement is a
    # new job all the same (under that name it had not been submitted: seen on SLURM)
    assert sorted(j.job_id for j in cluster.workers.values()) == ["100", "102"]


def _watch(jobs, cap, walltime=None):
    import io

    from fastsd.scan.cluster import JobWatcher

    cluster, out = _FakeCluster(jobs=jobs, processes=1), io.StringIO()
    watcher = JobWatcher(cluster, "local", jobs=jobs, cap=cap, pending_after=1e9, out=out,
                         walltime=walltime)
    for name in list(cluster.worker_spec):
        cluster.join(name)
    assert watcher.poll(0.0) == []
    return cluster, watcher, out


def test_the_last_live_job_ending_is_replaced_not_given_up_on():
    """Seen on a real SLURM (issue 56): a one-job run's job reached its walltime; the
    watcher submitted a replacement and, judging from the jobs it had read before, said
    every job had ended: exit 1, the replacement cancelled 0.4 s after its submission."""
    from fastsd.scan.cluster import LOST_GRACE

    cluster, watcher, out = _watch(jobs=1, cap=2)
    cluster.lose("SLURMCluster-0")
    watcher.poll(1.0)
    assert watcher.poll(1.0 + LOST_GRACE) == ["SLURMCluster-0"]
    assert watcher.gave_up is None, watcher.gave_up
    new, = cluster.worker_spec
    assert new != "SLURMCluster-0" and cluster.workers[new].job_id == "101"
    assert watcher.poll(2.0 + LOST_GRACE) == [] and watcher.gave_up is None   # pending
    cluster.join(new)
    assert watcher.poll(3.0 + LOST_GRACE) == [] and watcher.gave_up is None
    assert "job 100 (SLURMCluster-0) ended; submitted a replacement (1 of at most 2" in \
        out.getvalue()


def test_every_job_ending_in_one_poll_is_replaced_then_given_up_on_only_past_the_cap():
    from fastsd.scan.cluster import LOST_GRACE

    cluster, watcher, out = _watch(jobs=2, cap=2)
    t = 0.0
    for round_ in range(2):
        for name in list(cluster.worker_spec):
            cluster.lose(name)
        watcher.poll(t + 1.0)
        ended = sorted(cluster.worker_spec)
        assert watcher.poll(t + 1.0 + LOST_GRACE) == (ended if round_ == 0 else [])
        t += 2 * LOST_GRACE
        if round_ == 0:
            assert watcher.gave_up is None and len(cluster.worker_spec) == 2
            assert watcher.resubmitted == 2
            for name in list(cluster.worker_spec):
                cluster.join(name)
            watcher.poll(t)
    assert out.getvalue().count("no replacement: 2 of at most 2 submitted") == 2
    assert watcher.gave_up.startswith("every job of the cluster has ended (4, 2 of them "
                                      "replacements; at most 2")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_job_ended_by_its_walltime_is_replaced_each_time_past_the_cap(jobs):
    """A walltime is a job's planned end: each one is replaced, FASTSD_MAX_RESUBMITS (here
    0) counting only the others; an end before the walltime's slack is one of those."""
    from fastsd.scan.cluster import LOST_GRACE, WALLTIME_SLACK

    walltime = 600.0
    cluster, watcher, out = _watch(jobs=jobs, cap=0, walltime=walltime)
    t = 0.0
    for lifetime in range(1, 4):                    # three walltimes, every job ended by each
        t += walltime
        for name in list(cluster.worker_spec):
            cluster.lose(name)
        watcher.poll(t)
        assert len(watcher.poll(t + LOST_GRACE)) == jobs
        assert watcher.gave_up is None and watcher.walltime_ends == jobs * lifetime
        assert watcher.resubmitted == 0 and len(cluster.worker_spec) == jobs
        t += LOST_GRACE
        for name in list(cluster.worker_spec):
            cluster.join(name)
        watcher.poll(t)
    assert out.getvalue().count("reached its walltime (0:10:00); submitted a replacement") == \
        3 * jobs
    assert all(re.fullmatch(r"SLURMCluster-[01]-r[0-9]+", n) for n in cluster.worker_spec)
    t += walltime - WALLTIME_SLACK - LOST_GRACE - 1.0    # ended early: no replacement (cap 0)
    for name in list(cluster.worker_spec):
        cluster.lose(name)
    watcher.poll(t)
    assert watcher.poll(t + LOST_GRACE) == []
    assert watcher.gave_up.startswith(f"every job of the cluster has ended ({4 * jobs}, "
                                      f"{3 * jobs} of them replacements; at most 0")
