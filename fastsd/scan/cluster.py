"""Scans on a job-queue cluster (SLURM, PBS, LSF, ...) through dask-jobqueue.

``jobqueue_client(kind, workers)`` starts dask-jobqueue's cluster of that kind,
which submits jobs that each start Dask workers, asks for ``workers`` worker
processes, and returns a ``distributed.Client`` on it: an executor for
``fastsd.scan.run`` and ``fastsd.reproduce`` (``fastsd reproduce --cluster``).
The jobs' queue, account, memory, walltime and cores come from the user's Dask
configuration (``~/.config/dask/jobqueue.yaml``, section ``jobqueue.<kind>``;
README, "On a cluster") or from ``options``. fastsd runs each group on one
thread, so a job's ``processes`` should equal its ``cores``. Closing the client
closes the cluster, which cancels its jobs. ``kind="local"`` runs the jobs as
processes of this machine (dask-jobqueue's own ``LocalCluster``: the same job
scripts and scaling, no queue): for a trial before submitting, and the tests.
"""
from .._validation import check_choice, check_int

#: The cluster kinds: dask-jobqueue's class of each ("local": its LocalCluster).
KINDS = {"slurm": "SLURMCluster", "pbs": "PBSCluster", "lsf": "LSFCluster",
         "sge": "SGECluster", "htcondor": "HTCondorCluster", "moab": "MoabCluster",
         "oar": "OARCluster", "local": "LocalCluster"}
#: A "local" job: one single-threaded worker process.
LOCAL_JOB = {"cores": 1, "processes": 1, "memory": "2GiB"}


def jobqueue_cluster(kind, **options):
    """dask-jobqueue's cluster of ``kind``, configured but with no job submitted yet.

    Parameters
    ----------
    kind : {"slurm", "pbs", "lsf", "sge", "htcondor", "moab", "oar", "local"}
        The scheduler the jobs go to ("local": processes of this machine).
    **options
        Keyword arguments of the dask-jobqueue cluster class (``queue``,
        ``account``, ``cores``, ``processes``, ``memory``, ``walltime``,
        ``job_extra_directives``, ...); those not given come from the Dask
        configuration.

    Returns
    -------
    dask_jobqueue.JobQueueCluster
        Its ``job_script()`` is what each job runs.

    Raises
    ------
    ValueError
        For an unknown ``kind``, dask-jobqueue not installed, or a cluster the
        configuration does not describe (dask-jobqueue's message, with where the
        configuration goes).
    """
    check_choice("cluster", kind, tuple(KINDS))
    dask_jobqueue = _import_jobqueue()
    if kind == "local":
        from dask_jobqueue.local import LocalCluster as cls
        options = {**LOCAL_JOB, **options}
    else:
        cls = getattr(dask_jobqueue, KINDS[kind])
    try:
        return cls(**options)
    except ValueError as exc:
        raise ValueError(f"`cluster` {kind!r} is not configured: {' '.join(str(exc).split())} "
                         f"Give the jobs' cores, "
                         f"processes (= cores: fastsd's workers use one thread), memory, "
                         f"queue and walltime in ~/.config/dask/jobqueue.yaml under "
                         f"jobqueue.{kind} (README, \"On a cluster\").") from None


def _import_jobqueue():
    """dask_jobqueue, imported without the SIGINT handler it installs.

    Its ``runner`` module (imported by its SLURM cluster) sets SIGINT to ``sys.exit()`` when
    imported: under ``fastsd reproduce --cluster slurm`` a Ctrl-C then exited 0 with no
    message and no table, so that ``fastsd ... && next-step`` ran the next step. The
    handler in place before the import (the CLI's: exit 130, cells kept) is put back.
    """
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()   # handlers live there
    before = signal.getsignal(signal.SIGINT) if main else None
    try:
        import dask_jobqueue
        import dask_jobqueue.runner  # noqa: F401 - the module that installs the handler
    except ImportError:
        raise ValueError("`cluster` needs dask-jobqueue; fix: pip install -e '.[cluster]' in "
                         "the fastsd checkout") from None
    finally:
        if main and before is not None:
            signal.signal(signal.SIGINT, before)
    return dask_jobqueue


#: Each kind's submit command in its dry-run form: it checks a job script against the
#: queue's partitions and limits, and submits nothing.
TEST_ONLY = {"slurm": ("sbatch", "--test-only")}
#: The yaml key to change for what a scheduler's refusal names.
_REFUSAL_KEYS = (("partition", "`queue` to a partition `sinfo` lists"),
                 ("memory", "`memory` to what a node has (`sinfo -o '%P %c %m'`: CPUs, MB)"),
                 ("node configuration", "`cores`, `processes` and `memory` to what a node "
                                        "has (`sinfo -o '%P %c %m'`: CPUs, MB)"),
                 ("time limit", "`walltime` to the partition's limit (`scontrol show "
                                "partition`)"),
                 ("account", "`account` to one you may charge (`sacctmgr show assoc "
                             "user=$USER`)"))


def check_submission(cluster, kind):
    """Raise, before any job is submitted, if the scheduler would refuse ``cluster``'s jobs.

    Runs the kind's dry-run submission (``TEST_ONLY``: ``sbatch --test-only``) on the job
    script; kinds without one are not checked. Against a real SLURM, a yaml's partition that
    does not exist had shown tracebacks and then waited 10 minutes for workers that never
    came, and a request no node can meet had stayed pending with nothing said.

    Raises
    ------
    ValueError
        Naming the scheduler's reason and the key of ``jobqueue.<kind>`` to change.
    """
    import os
    import subprocess
    import tempfile

    command = TEST_ONLY.get(kind)
    if command is None:
        return
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as fh:
        fh.write(cluster.job_script())
    try:
        done = subprocess.run([*command, fh.name], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise ValueError(f"`cluster` {kind!r} needs {command[0]} on the PATH of this machine "
                         f"(run from the cluster's login node)") from None
    except subprocess.TimeoutExpired:
        raise ValueError(f"`cluster` {kind!r}: {' '.join(command)} did not answer in 60 s; "
                         f"is the scheduler up (`sinfo`)?") from None
    finally:
        os.unlink(fh.name)
    if done.returncode != 0:
        reason = " ".join(done.stderr.replace("sbatch: error:", "").split()) or \
            f"exit status {done.returncode}"
        key = next((k for word, k in _REFUSAL_KEYS if word in reason.lower()),
                   "`queue`, `cores`, `memory` and `walltime` to what the queue allows")
        raise ValueError(f"`cluster` {kind!r}: the scheduler refuses its jobs ({reason}); fix: "
                         f"set {key} under jobqueue.{kind} in ~/.config/dask/jobqueue.yaml "
                         f"(README, \"On a cluster\"). Nothing was submitted.")


def jobqueue_client(kind, workers, **options):
    """A Dask client on a dask-jobqueue cluster of ``workers`` worker processes.

    Parameters
    ----------
    kind, **options
        As ``jobqueue_cluster``.
    workers : int
        Worker processes to ask for (``cluster.scale(n=workers)``), >= 1; the
        jobs are submitted now and the workers join as the queue starts them.

    Returns
    -------
    distributed.Client
        Its ``cluster`` is the cluster, ``planned_workers`` the workers asked for;
        its ``close()`` closes the cluster too.

    Raises
    ------
    ValueError
        As ``jobqueue_cluster``, and for ``workers`` < 1.
    """
    check_int("workers", workers, 1)
    cluster = jobqueue_cluster(kind, **options)
    from distributed import Client

    class _ClusterClient(Client):
        def close(self, *args, **kwargs):
            try:
                return super().close(*args, **kwargs)
            finally:
                cluster.close()

    try:
        check_submission(cluster, kind)
        cluster.scale(n=workers)
        client = _ClusterClient(cluster)
    except BaseException:
        cluster.close()
        raise
    client.planned_workers = workers       # before they join: the scan plans for them
    return client


__all__ = ["KINDS", "LOCAL_JOB", "TEST_ONLY", "check_submission", "jobqueue_client",
           "jobqueue_cluster"]
