"""Scans on a job-queue cluster through dask-jobqueue (fastsd.scan.cluster, `--cluster`).

- The README's SLURM recipe, read from the README itself, gives jobs of single-threaded
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

README = os.path.join(os.path.dirname(__file__), os.pardir, "README.md")


def _readme_jobqueue_yaml():
    text = open(README, encoding="utf-8").read()
    block = re.search(r"```yaml\n(# ~/.config/dask/jobqueue.yaml\n.*?)```", text, re.S)
    assert block, "the README's SLURM recipe (a ```yaml block for jobqueue.yaml) is missing"
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
