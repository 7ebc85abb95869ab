"""`--cluster slurm` against a real SLURM (slurmctld and slurmd, one node; issue 43).

``bash .ci/slurm up`` (root) brings up the cluster; ``.ci/run`` does, and sets
``FASTSD_SLURM_REQUIRED=1`` so that these tests fail there rather than skip. Elsewhere,
without a SLURM whose node is up, they skip with the reason.

- Fig. 1c quick through two real SLURM jobs stores the records of a plain run (times aside),
  the jobs' logs under the run's folder (they had been left in the working directory);
- a job cancelled mid-run is replaced by a new one (seen in squeue) and the records equal a
  plain run's; every job cancelled with no replacement allowed stops the run at once with
  the reason (exit 1), and a rerun completes the store;
- jobs that reach their walltime (issue 56: a one-job run's had stopped the run, exit 1): one
  job's, again and again, and two jobs' together, each replaced, the run finished with a
  plain run's records; so for a job requeued (`scontrol requeue`, as preemption does);
- Ctrl-C (SIGINT) and SIGTERM on a `--cluster slurm` run exit 130 and 143, their jobs
  cancelled, the finished cells kept (Ctrl-C had exited 0 with no message: dask-jobqueue's
  import replaced the handler);
- a partition that does not exist, or a request no node meets, is an error within seconds;
- `--dry-run --cluster slurm` prints the job script and SLURM's answer, submitting nothing.
"""
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("dask_jobqueue")


def _slurm_up():
    if shutil.which("sinfo") is None:
        return "no SLURM commands here (sinfo)"
    try:
        states = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True,
                                timeout=10).stdout.split()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sinfo failed: {exc}"
    if not {"idle", "mixed", "allocated"} & set(states):
        return f"no SLURM node is up (sinfo: {states or 'nothing'}); bash .ci/slurm up, as root"
    return None


_WHY = _slurm_up()
if _WHY is not None:
    if os.environ.get("FASTSD_SLURM_REQUIRED"):
        raise RuntimeError(f"FASTSD_SLURM_REQUIRED is set but {_WHY}")
    pytest.skip(_WHY, allow_module_level=True)

YAML = """jobqueue:
  slurm:
    queue: {partition}
    cores: 1
    processes: 1
    memory: 1GiB
    walltime: "00:20:00"
"""


@pytest.fixture
def slurm_env(tmp_path):
    """The Dask configuration of 1-core jobs on this cluster's default partition."""
    partition = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True,
                               timeout=10).stdout.split()[0].rstrip("*")
    config = tmp_path / "dask"
    config.mkdir()
    (config / "jobqueue.yaml").write_text(YAML.format(partition=partition))
    return dict(os.environ, DASK_CONFIG=str(config))


def _jobs():
    out = subprocess.run(["squeue", "-h", "-o", "%i %j"], capture_output=True, text=True,
                         timeout=10).stdout
    return [line.split()[0] for line in out.splitlines() if "dask-worker" in line]


def _records(path):
    keep = ("key", "best_test_accuracy", "final_test_accuracy", "history", "path", "backend")
    return {r["key"]: {k: r.get(k) for k in keep}
            for r in (json.loads(line) for line in open(path))}


def test_fig1c_quick_through_slurm_jobs_stores_a_plain_runs_records(tmp_path, slurm_env):
    cmd = [sys.executable, "-m", "fastsd", "reproduce", "fig1c", "--quick", "--quiet",
           "--backend", "cpu"]
    cluster = subprocess.run(cmd + ["--cluster", "slurm", "--workers", "2", "--out",
                                    str(tmp_path / "slurm")], cwd=tmp_path, env=slurm_env,
                             capture_output=True, text=True, timeout=600)
    assert cluster.returncode == 0, cluster.stderr[-3000:]
    plain = subprocess.run(cmd + ["--out", str(tmp_path / "plain")], cwd=tmp_path,
                           capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0, plain.stderr[-3000:]
    got = _records(tmp_path / "slurm" / "fig1c-quick.jsonl")
    want = _records(tmp_path / "plain" / "fig1c-quick.jsonl")
    assert len(got) == 36 and got == want
    logs = sorted(os.listdir(tmp_path / "slurm" / "cluster-logs"))
    assert len(logs) == 4 and all(n.startswith("dask-worker-") for n in logs), logs
    assert not [n for n in os.listdir(tmp_path) if n.startswith("slurm-")]


#: Quick figures of some 2 minutes of work on one worker (Fig. 1c, 1f and C3): a run on jobs
#: of SLURM's least walltime, 1 minute, outlives their walltime.
SMALL = ("fig1c", "fig1f", "figC3")


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """``plain(*figures)``: the folder of a plain (no cluster) quick run of ``figures``, run
    once for the tests that check a cluster run's records against it."""
    done = {}

    def get(*figures):
        if figures not in done:
            out = tmp_path_factory.mktemp("plain")
            run = subprocess.run([sys.executable, "-m", "fastsd", "reproduce", *figures,
                                  "--quick", "--backend", "cpu", "--quiet", "--out", str(out)],
                                 cwd=out, capture_output=True, text=True, timeout=900)
            assert run.returncode == 0, run.stderr[-3000:]
            done[figures] = out
        return done[figures]
    return get


def _equal_to_plain(out, plain):
    """Assert the stores under ``out`` hold the records of those under ``plain`` (times
    aside); their count."""
    stores = sorted(n for n in os.listdir(plain) if n.endswith(".jsonl"))
    assert stores and stores == sorted(n for n in os.listdir(out) if n.endswith(".jsonl"))
    for name in stores:
        got, want = _records(out / name), _records(plain / name)
        assert got and got == want, name
    return sum(len(_records(out / n)) for n in stores)


def _wait_for(condition, seconds, what, proc=None):
    deadline = time.monotonic() + seconds
    while not condition():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended while waiting for {what}: "
                                 f"{_err(proc)[-3000:]}")
        assert time.monotonic() < deadline, f"no {what} after {seconds} s"
        time.sleep(0.5)


def _start(tmp_path, env, *args, workers=2):
    """A `--cluster slurm` run in the background, its stderr read as it comes (``_err``): Dask
    logs much when a job is cancelled, and a full pipe had blocked the run's threads, the
    job watcher among them."""
    import threading

    proc = subprocess.Popen([sys.executable, "-m", "fastsd", "reproduce", *args, "--backend",
                             "cpu", "--cluster", "slurm", "--workers", str(workers),
                             "--quiet"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    proc.lines = []
    proc.reader = threading.Thread(target=lambda: proc.lines.extend(proc.stderr), daemon=True)
    proc.reader.start()
    return proc


def _err(proc):
    return "".join(proc.lines)


def _finish(proc, timeout):
    """Wait for a run of ``_start``; its stderr."""
    proc.wait(timeout=timeout)
    proc.reader.join(timeout=10)
    return _err(proc)


def _cells(out):
    """The records in the stores of a results folder."""
    if not out.exists():
        return 0
    return sum(len(_records(out / n)) for n in os.listdir(out) if n.endswith(".jsonl"))


def _running(jobs):
    out = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"], capture_output=True,
                         text=True, timeout=10).stdout.split()
    return set(jobs) <= set(out)


def _mid_run(proc, before, out):
    """Wait until ``proc``'s two jobs run and a cell is stored under ``out``; their ids."""
    _wait_for(lambda: len(set(_jobs()) - before) >= 2, 120, "two SLURM jobs", proc)
    jobs = sorted(set(_jobs()) - before, key=int)
    _wait_for(lambda: _running(jobs), 120, "running jobs", proc)
    _wait_for(lambda: _cells(out) > 0, 300, "a finished cell", proc)
    return jobs


def test_a_job_cancelled_mid_run_is_replaced_and_nothing_is_lost(tmp_path, slurm_env, plain):
    before = set(_jobs())
    proc = _start(tmp_path, slurm_env, "fig3", "--quick", "--out", str(tmp_path / "slurm"))
    try:
        first = _mid_run(proc, before, tmp_path / "slurm")
        subprocess.run(["scancel", first[0]], check=True, timeout=10)
        _wait_for(lambda: set(_jobs()) - before - set(first), 120, "a replacement job", proc)
        replacement = sorted(set(_jobs()) - before - set(first), key=int)
        err = _finish(proc, 600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err[-3000:]
    assert f"job {first[0]} (" in err and "ended; submitted a replacement (1 of at most 4" in err
    print(f"cancelled job {first[0]}; replacement job {replacement} in squeue")
    cells = _equal_to_plain(tmp_path / "slurm", plain("fig3"))   # panels b, c, e, f
    print(f"records: {cells} cells in 4 stores, equal to a plain run's")


def test_every_job_cancelled_stops_the_run_at_once_and_a_rerun_completes_it(tmp_path,
                                                                            slurm_env):
    env = dict(slurm_env, FASTSD_MAX_RESUBMITS="0")
    out = tmp_path / "slurm"
    before = set(_jobs())
    proc = _start(tmp_path, env, "fig3", "--quick", "--out", str(out))
    try:
        jobs = _mid_run(proc, before, out)
        subprocess.run(["scancel", *jobs], check=True, timeout=10)
        start = time.monotonic()
        err = _finish(proc, 120)
        took = time.monotonic() - start
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1, err[-3000:]
    assert "every job of the cluster has ended (2, 0 of them replacements; at most 0" in err
    assert "the finished cells are saved: rerun to resume" in err
    assert took < 60, took
    print(f"every job cancelled: exit {proc.returncode} {took:.0f} s after the scancel; "
          f"{err.strip().splitlines()[-1]}")
    kept = _cells(out)
    assert kept > 0
    rerun = _start(tmp_path, slurm_env, "fig3", "--quick", "--out", str(out))
    err = _finish(rerun, 600)
    assert rerun.returncode == 0, err[-3000:]
    assert _cells(out) == 168
    print(f"rerun: {kept} cells kept from the first run, 168 in the stores after the rerun")


def _walltime_env(slurm_env, walltime):
    config = os.path.join(slurm_env["DASK_CONFIG"], "jobqueue.yaml")
    text = open(config).read()
    with open(config, "w") as fh:
        fh.write(text.replace('walltime: "00:20:00"', f'walltime: "{walltime}"'))
    return slurm_env


def _jobs_seen(proc, before, seconds):
    """Job ids of this run seen in squeue while ``proc`` runs (at most ``seconds``)."""
    seen, deadline = set(), time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < deadline:
        seen |= set(_jobs()) - before
        time.sleep(1)
    return seen


@pytest.mark.parametrize("workers, figures", [(1, SMALL), (2, ("fig3",))])
def test_jobs_that_reach_their_walltime_are_replaced_and_the_run_finishes(tmp_path, slurm_env,
                                                                         plain, workers,
                                                                         figures):
    """A walltime of 1 minute (SLURM's least): on one worker, some 2 minutes of work, its
    job's walltime ends again and again; on two, Fig. 3's 3 minutes or so of work each, two
    jobs started together reach their walltimes together (in one look of the watcher)."""
    env = _walltime_env(slurm_env, "00:01:00")
    before = set(_jobs())
    start = time.monotonic()
    proc = _start(tmp_path, env, *figures, "--quick", "--out", str(tmp_path / "slurm"),
                  workers=workers)
    try:
        seen = _jobs_seen(proc, before, 900)
        err = _finish(proc, 60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    took = time.monotonic() - start
    assert proc.returncode == 0, err[-3000:]
    ends = re.findall(r"job (\d+) \(\S+\) reached its walltime \(0:01:00\); submitted a "
                      r"replacement", err)
    assert len(ends) >= workers and "every job of the cluster has ended" not in err, err[-3000:]
    assert len(seen) >= workers + len(ends) - 1         # the replacements ran (squeue)
    cells = _equal_to_plain(tmp_path / "slurm", plain(*figures))
    print(f"{workers} worker(s), walltime 0:01:00: exit 0 in {took:.0f} s; jobs {sorted(ends)} "
          f"reached their walltime and were replaced; {len(seen)} jobs seen in squeue; "
          f"{cells} cells equal to a plain run's")


def test_a_requeued_job_is_replaced_and_nothing_is_lost(tmp_path, slurm_env, plain):
    """`scontrol requeue`, as SLURM's preemption does: the job's processes are killed and
    the job put back in the queue."""
    before = set(_jobs())
    proc = _start(tmp_path, slurm_env, *SMALL, "--quick", "--out", str(tmp_path / "slurm"))
    try:
        first = _mid_run(proc, before, tmp_path / "slurm")
        subprocess.run(["scontrol", "requeue", first[0]], check=True, timeout=10)
        err = _finish(proc, 600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err[-3000:]
    assert "every job of the cluster has ended" not in err
    said = [li for li in err.splitlines() if li.startswith("fastsd: job")]
    cells = _equal_to_plain(tmp_path / "slurm", plain(*SMALL))
    print(f"requeued job {first[0]}: exit 0; {said or 'its workers came back'}; {cells} cells "
          f"equal to a plain run's")


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_on_a_slurm_run_exits_with_its_code_and_cancels_its_jobs(tmp_path, slurm_env,
                                                                          sig, code):
    before = set(_jobs())
    proc = subprocess.Popen([sys.executable, "-m", "fastsd", "reproduce", "fig1c", "--backend",
                             "cpu", "--cluster", "slurm", "--workers", "2", "--out",
                             str(tmp_path / "out")], cwd=tmp_path, env=slurm_env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(set(_jobs()) - before) < 2:           # both jobs submitted
            assert proc.poll() is None, proc.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "no SLURM jobs after 120 s"
            time.sleep(0.5)
        time.sleep(3)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err[-3000:]
        assert "(finished cells are saved; rerun to resume)" in err
        deadline = time.monotonic() + 30
        while set(_jobs()) - before:                    # the cluster cancelled its jobs
            assert time.monotonic() < deadline, f"jobs left: {set(_jobs()) - before}"
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.parametrize("setting, value, words", [
    ("queue", "normal", "invalid partition specified: normal.*fix: set `queue` to a "
                        "partition `sinfo` lists under jobqueue.slurm"),
    ("memory", "4000GiB", "Requested node configuration is not available.*fix: set `cores`, "
                          "`processes` and `memory` to what a node has"),
])
def test_a_job_the_scheduler_refuses_is_an_error_at_once(tmp_path, slurm_env, setting, value,
                                                         words):
    """The README's yaml (queue: normal) had shown tracebacks and then waited 10 minutes for
    workers; a request no node meets had stayed pending. Now: exit 1 within seconds, the
    scheduler's reason and the yaml key named, nothing submitted."""
    config = os.path.join(slurm_env["DASK_CONFIG"], "jobqueue.yaml")
    text = open(config).read()
    line = next(li for li in text.splitlines() if li.strip().startswith(f"{setting}:"))
    with open(config, "w") as fh:
        fh.write(text.replace(line, f"    {setting}: {value}"))
    before = set(_jobs())
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "fastsd", "reproduce", "fig1c", "--quick",
                           "--cluster", "slurm", "--workers", "2", "--out",
                           str(tmp_path / "out")], cwd=tmp_path, env=slurm_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr[-3000:]
    assert time.monotonic() - start < 30
    message, = done.stderr.strip().splitlines()
    assert re.search(r"^fastsd: error: `--cluster` 'slurm': the scheduler refuses its jobs "
                     r"\(.*" + words, message), message
    assert message.endswith("Nothing was submitted.") and set(_jobs()) == before
    assert not (tmp_path / "out").exists()          # no folder left by a refused run
    print(f"{setting}: {value}: exit {done.returncode} in {time.monotonic() - start:.1f} s: "
          f"{message}")


def test_a_dry_run_on_slurm_prints_the_job_script_and_slurms_answer(tmp_path, slurm_env):
    before = set(_jobs())
    done = subprocess.run([sys.executable, "-m", "fastsd", "reproduce", "fig1c", "--quick",
                           "--dry-run", "--cluster", "slurm", "--workers", "2", "--out",
                           str(tmp_path / "out")], cwd=tmp_path, env=slurm_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "#SBATCH -J dask-worker" in out and f"{tmp_path / 'out' / 'cluster-logs'}" in out
    assert "the scheduler's answer to it: Job " in out and " to start at " in out
    assert "predicted" in out and "on 2 workers" in out
    assert set(_jobs()) == before and not (tmp_path / "out").exists()


def test_a_job_pending_past_the_wait_is_reported_with_slurms_reason(tmp_path, slurm_env):
    """Three 1-core jobs on this 2-CPU node: the third waits for resources the whole run; it
    is reported once, with squeue's reason, and the run finishes on the workers that joined."""
    env = dict(slurm_env, FASTSD_PENDING_REPORT="5")
    done = subprocess.run([sys.executable, "-m", "fastsd", "reproduce", "fig1c", "--quick",
                           "--quiet", "--backend", "cpu", "--cluster", "slurm", "--workers",
                           str(os.cpu_count() + 1), "--out", str(tmp_path / "out")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    line, = [li for li in done.stderr.splitlines() if "in the queue" in li]
    assert re.search(r"^fastsd: 1 job\(s\) \(\d+\) have waited \d+ s in the queue \(\d+ PENDING "
                     r"(Resources|Priority)\); the scan runs on the workers that join", line), line
    print(line)
