"""`--cluster slurm` against a real SLURM (slurmctld and slurmd, one node; issue 43).

``bash .ci/slurm up`` (root) brings up the cluster; ``.ci/run`` does, and sets
``FASTSD_SLURM_REQUIRED=1`` so that these tests fail there rather than skip. Elsewhere,
without a SLURM whose node is up, they skip with the reason.

- Fig. 1c quick through two real SLURM jobs stores the records of a plain run (times aside);
- Ctrl-C (SIGINT) on a `--cluster slurm` run exits 130 with "interrupted", its jobs
  cancelled (it had exited 0 with no message: dask-jobqueue's import replaced the handler).
"""
import json
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


def test_ctrl_c_on_a_slurm_run_exits_130_and_cancels_its_jobs(tmp_path, slurm_env):
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
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err[-3000:]
        assert "fastsd: interrupted (finished cells are saved; rerun to resume)" in err
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
    import re

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
