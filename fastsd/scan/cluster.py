"""Scans on a job-queue cluster (SLURM, PBS, LSF, ...) through dask-jobqueue.

``jobqueue_client(kind, workers)`` starts dask-jobqueue's cluster of that kind,
which submits jobs that each start Dask workers, asks for ``workers`` worker
processes, and returns a ``distributed.Client`` on it: an executor for
``fastsd.scan.run`` and ``fastsd.reproduce`` (``fastsd reproduce --cluster``).
The jobs' queue, account, memory, walltime and cores come from the user's Dask
configuration (``~/.config/dask/jobqueue.yaml``, section ``jobqueue.<kind>``;
the documentation's docs/howto/cluster.md) or from ``options``. fastsd runs each group on one
thread, so a job's ``processes`` should equal its ``cores``. Closing the client
closes the cluster, which cancels its jobs.

The jobs' walltime (``configured_walltime``, read as the scheduler reads it:
``walltime_seconds``) is the client's ``walltime``: the scan splits its groups to fit it,
and submits the jobs (``start_jobs``) only once they do. While the scan runs, a
``JobWatcher`` looks at the jobs every ``WATCH_POLL`` seconds: a job whose workers had
joined and are gone is replaced by a new job, every time where they lived to its walltime,
and up to ``max_resubmits()`` replacements in all for the other ends (cancelled,
preempted or requeued, its node lost), the last live job's too; a job still waiting in the
queue after ``pending_report()`` seconds is reported on stderr with the scheduler's reason;
and when no job is live or being submitted and none can be replaced, the scan stops at
once (its finished cells saved) rather than waiting for workers that cannot come.
``kind="local"`` runs the jobs as
processes of this machine (dask-jobqueue's own ``LocalCluster``: the same job
scripts and scaling, no queue): for a trial before submitting, and the tests.
"""
import contextlib
import os
import re
import sys
import threading
import time

from .._validation import check_choice, check_int

#: The cluster kinds: dask-jobqueue's class of each ("local": its LocalCluster).
KINDS = {"slurm": "SLURMCluster", "pbs": "PBSCluster", "lsf": "LSFCluster",
         "sge": "SGECluster", "htcondor": "HTCondorCluster", "moab": "MoabCluster",
         "oar": "OARCluster", "local": "LocalCluster"}
#: A "local" job: one single-threaded worker process.
LOCAL_JOB = {"cores": 1, "processes": 1, "memory": "2GiB"}


def jobqueue_cluster(kind, log_directory=None, **options):
    """dask-jobqueue's cluster of ``kind``, configured but with no job submitted yet.

    Parameters
    ----------
    kind : {"slurm", "pbs", "lsf", "sge", "htcondor", "moab", "oar", "local"}
        The scheduler the jobs go to ("local": processes of this machine).
    log_directory : str, optional
        Where the jobs write their output (``fastsd reproduce`` gives
        ``<out>/cluster-logs``); default the configuration's (SLURM: the
        working directory). Created when the job script is made.
    **options
        Keyword arguments of the dask-jobqueue cluster class (``queue``,
        ``account``, ``cores``, ``processes``, ``memory``, ``walltime``,
        ``job_extra_directives``, ...); those not given come from the Dask
        configuration. The scheduler's dashboard takes a free port
        (``scheduler_options``' "dashboard_address" ":0") unless given: two runs on
        one host had warned that port 8787 was in use.

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
    if log_directory is not None:
        options["log_directory"] = os.path.abspath(log_directory)
    options.setdefault("scheduler_options", {})
    options["scheduler_options"] = {"dashboard_address": ":0", **options["scheduler_options"]}
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
                         f"jobqueue.{kind} (docs/howto/cluster.md).") from None


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


#: Walltimes that mean no limit.
_NO_LIMIT = ("", "infinite", "unlimited")


def walltime_seconds(kind, walltime):
    """A job's ``walltime`` as the scheduler of ``kind`` reads it, in seconds.

    Parameters
    ----------
    kind : str
        One of ``KINDS``: "slurm" reads ``sbatch -t``'s forms, "minutes",
        "minutes:seconds", "hours:minutes:seconds", "days-hours", "days-hours:minutes",
        "days-hours:minutes:seconds"; "lsf" ``bsub -W``'s "[hours:]minutes"; "pbs", "sge",
        "moab" and "oar" "[[hours:]minutes:]seconds". "local" and "htcondor" jobs have no
        walltime.
    walltime : str, int or None
        The ``walltime`` of dask-jobqueue's configuration (``jobqueue.<kind>.walltime``).

    Returns
    -------
    float or None
        Seconds, > 0; None for no limit: no walltime, a kind without one, or a SLURM
        job's "0", "UNLIMITED" or "INFINITE".

    Raises
    ------
    ValueError
        Naming ``walltime``, for a text the scheduler would not read, or a limit of 0
        where the scheduler reads none as "no limit".
    """
    if walltime is None or kind in ("local", "htcondor"):
        return None
    text = str(walltime).strip().lower()
    if text in _NO_LIMIT:
        return None
    days, dash, clock = text.rpartition("-") if kind == "slurm" else ("", "", text)
    fields = clock.split(":")
    if not all(f.isdigit() for f in fields + ([days] if dash else [])):
        fields = []
    numbers = [int(f) for f in fields]
    if days and 1 <= len(numbers) <= 3:             # SLURM days-hours[:minutes[:seconds]]
        hms = [int(days) * 24 + numbers[0], *numbers[1:], 0, 0][:3]
    elif kind == "slurm" and 1 <= len(numbers) <= 3:    # minutes[:seconds], or h:m:s
        hms = numbers if len(numbers) == 3 else [0, *numbers, 0][:3]
    elif kind == "lsf" and 1 <= len(numbers) <= 2:      # [hours:]minutes
        hms = [0, *numbers][-2:] + [0]
    elif kind != "lsf" and 1 <= len(numbers) <= 3:      # [[hours:]minutes:]seconds
        hms = [0, 0, *numbers][-3:]
    else:
        raise ValueError(f"`walltime` of a {kind!r} job must be a time its scheduler reads "
                         f"(e.g. '04:00:00'); got {walltime!r}.")
    seconds = hms[0] * 3600 + hms[1] * 60 + hms[2]
    if seconds == 0 and kind == "slurm":            # sbatch -t 0: no limit
        return None
    if seconds <= 0:
        raise ValueError(f"`walltime` of a {kind!r} job must be longer than 0; got {walltime!r}.")
    return float(seconds)


def configured_walltime(kind, options):
    """The jobs' walltime in seconds as dask-jobqueue sets it: ``options["walltime"]``, else
    the Dask configuration's ``jobqueue.<kind>.walltime``, read by ``walltime_seconds``
    (None: no limit). Raises ValueError as ``walltime_seconds``."""
    walltime = options.get("walltime")
    if walltime is None and kind not in ("local", "htcondor"):
        import dask

        walltime = dask.config.get(f"jobqueue.{kind}.walltime", None)
    return walltime_seconds(kind, walltime)


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

    Returns
    -------
    str or None
        The scheduler's answer (for SLURM, when and where a job would start), or None for a
        kind without a dry-run submission.

    Raises
    ------
    ValueError
        Naming the scheduler's reason and the key of ``jobqueue.<kind>`` to change.
    """
    import subprocess
    import tempfile

    command = TEST_ONLY.get(kind)
    if command is None:
        return None
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
                         f"(docs/howto/cluster.md). Nothing was submitted.")
    return " ".join((done.stderr + done.stdout).replace("sbatch:", "").split())


@contextlib.contextmanager
def _folders_undone(path, keep):
    """Within: ``path``'s folders that did not exist may be made; after, those made are
    removed again (empty, deepest first) unless ``keep()`` says otherwise."""
    path = None if path is None else os.path.abspath(path)
    missing = []
    while path is not None and not os.path.exists(path):
        missing.append(path)
        parent = os.path.dirname(path)
        path = parent if parent != path else None
    try:
        yield
    finally:
        if not keep():
            for folder in missing:
                try:
                    os.rmdir(folder)
                except OSError:
                    break


def describe_submission(kind, **options):
    """The job script a ``--cluster`` run would submit and the scheduler's answer to it, with
    nothing submitted: for ``fastsd reproduce --dry-run --cluster``.

    Parameters
    ----------
    kind, **options
        As ``jobqueue_cluster``.

    Returns
    -------
    dict
        "job_script" (str), "scheduler_answer" (``check_submission``'s: None for a kind
        without a dry-run submission) and "walltime_s" (the jobs' walltime in seconds,
        ``configured_walltime``; None: no limit).

    Raises
    ------
    ValueError
        As ``jobqueue_cluster``, ``check_submission`` and ``walltime_seconds``.
    """
    with _folders_undone(options.get("log_directory"), keep=lambda: False):
        walltime = configured_walltime(kind, options)
        cluster = jobqueue_cluster(kind, **options)
        try:
            return {"job_script": cluster.job_script(),
                    "scheduler_answer": check_submission(cluster, kind),
                    "walltime_s": walltime}
        finally:
            cluster.close()


#: Seconds between two looks at the jobs (``JobWatcher``).
WATCH_POLL = 5.0
#: Seconds a job's workers may be gone before it counts as ended (they may reconnect).
LOST_GRACE = 10.0
#: Replacements of ended jobs allowed per job asked for (``FASTSD_MAX_RESUBMITS`` sets the
#: total instead).
RESUBMITS_PER_JOB = 2
#: Seconds a job may wait in the queue before the scan says so (``FASTSD_PENDING_REPORT``).
PENDING_REPORT = 300.0
#: Each kind's command that prints "<job id> <state> <reason>" lines of the given ids.
QUEUE_REASON = {"slurm": ("squeue", "-h", "-o", "%i %T %r", "-j")}
#: Each kind's command that prints the ids of the jobs still in its queue, one a line: a job
#: whose workers never joined counts as ended once its id is gone from there (cancelled or
#: failed before its workers started).
QUEUE_IDS = {"slurm": ("squeue", "-h", "-o", "%i")}
#: Looks in a row a job must be missing from the queue to count as ended.
MISSING_LOOKS = 2
#: Seconds short of its walltime a job's workers may have lived and still count as ended by it
#: (at most half the walltime): the job starts before its workers join, and the watcher
#: sees them join and go up to ``WATCH_POLL`` late each.
WALLTIME_SLACK = 60.0


def _env_number(name, default, kind):
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        got = kind(value)
    except ValueError:
        got = None
    if got is None or not got >= 0 or got == float("inf"):
        raise ValueError(f"`{name}` must be a number >= 0; got {value!r}.")
    return got


def max_resubmits(jobs, environ=None):
    """Replacements of ended jobs a scan of ``jobs`` jobs may submit: ``FASTSD_MAX_RESUBMITS``
    (an integer >= 0), else ``RESUBMITS_PER_JOB`` per job."""
    return _env_number("FASTSD_MAX_RESUBMITS", RESUBMITS_PER_JOB * jobs, int)


def pending_report():
    """Seconds a job waits in the queue before the scan reports it (``FASTSD_PENDING_REPORT``,
    seconds >= 0), else ``PENDING_REPORT``."""
    return _env_number("FASTSD_PENDING_REPORT", PENDING_REPORT, float)


class JobWatcher:
    """Replaces a cluster's ended jobs, reports jobs pending too long, and says when every job
    has ended with no replacement left (``gave_up``).

    ``poll(now)`` is one look; ``start()`` runs it every ``WATCH_POLL`` seconds in a
    daemon thread until ``stop()``. It reads the cluster's jobs (``worker_spec``, a job
    name each, with its workers' names) and the workers connected to its scheduler; a job
    is replaced by giving its entry of ``worker_spec`` a new name and scaling to the jobs
    asked for on the cluster's event loop (dask-jobqueue then cancels the ended one and
    submits the new one).

    A job whose workers lived to within ``WALLTIME_SLACK`` of its ``walltime`` (seconds;
    None: no limit) ended by it, as planned: it is replaced every time. Any other end
    (cancelled, preempted or requeued, its node lost, its workers failed) is replaced up to
    ``cap`` times in all. The run gives up only when no job is live, none is waiting to be
    submitted and none can be replaced.
    """

    def __init__(self, cluster, kind, jobs, cap, pending_after, out=None, walltime=None):
        self.cluster, self.kind, self.jobs, self.cap = cluster, kind, jobs, cap
        self.pending_after, self.out, self.walltime = pending_after, out or sys.stderr, walltime
        self.resubmitted, self.walltime_ends, self.gave_up = 0, 0, None
        self._first_seen, self._joined, self._lost_since = {}, {}, {}
        self._ended, self._reported, self._missing = set(), set(), {}
        self._submitted = set()         # replacements scheduled, not yet in the cluster's spec
        self._stop = threading.Event()
        self._thread = None

    def _say(self, text):
        print(f"fastsd: {text}", file=self.out, flush=True)

    def _job_id(self, name):
        return getattr(self.cluster.workers.get(name), "job_id", None) or "?"

    def _state(self):
        """({job name: its workers' names}, connected worker names), read consistently."""
        for _ in range(5):
            try:
                spec = {name: {f"{name}{suffix}" for suffix in s.get("group", [""])}
                        for name, s in list(self.cluster.worker_spec.items())}
                workers = list(self.cluster.scheduler_info.get("workers", {}).values())
                return spec, {w.get("name") and str(w["name"]) for w in workers}
            except RuntimeError:            # changed while read (the event loop's thread)
                time.sleep(0.01)
        return None, None

    def poll(self, now=None):
        """One look at the jobs; returns the names of those replaced now."""
        now = time.monotonic() if now is None else now
        spec, connected = self._state()
        if spec is None:
            return []
        self._submitted -= set(spec)
        replaced, waiting, unjoined = [], [], []
        for name, workers in spec.items():
            self._first_seen.setdefault(name, now)
            if workers & connected:
                self._joined.setdefault(name, now)
                self._lost_since.pop(name, None)
            elif name in self._ended:
                continue
            elif name in self._joined:
                since = self._lost_since.setdefault(name, now)
                if now - since >= LOST_GRACE:
                    self._ended.add(name)
                    replaced += self._replace(name, self._lived_its_walltime(name, since))
            else:
                unjoined.append(name)
                if now - self._first_seen[name] >= self.pending_after and \
                        name not in self._reported:
                    waiting.append(name)
        for name in self._gone_from_queue(unjoined):
            if name in waiting:
                waiting.remove(name)
            self._ended.add(name)
            replaced += self._replace(name)
        if waiting:
            self._report_pending(waiting, now)
        live = [n for n in spec if n not in self._ended]
        if not live and not self._submitted and self._ended and self.gave_up is None:
            self.gave_up = (f"every job of the cluster has ended ({len(self._ended)}, "
                            f"{self.resubmitted + self.walltime_ends} of them replacements; at "
                            f"most {self.cap} replacements, FASTSD_MAX_RESUBMITS)")
        return replaced

    def _lived_its_walltime(self, name, lost):
        """Whether job ``name``, whose workers were found gone at ``lost``, ended by its
        walltime: they had lived to within ``WALLTIME_SLACK`` (at most half) of it."""
        if self.walltime is None:
            return False
        return lost - self._joined[name] >= self.walltime - min(WALLTIME_SLACK,
                                                                 self.walltime / 2)

    def _gone_from_queue(self, names):
        """Those of ``names`` (jobs whose workers never joined) that have been missing from the
        scheduler's queue for ``MISSING_LOOKS`` looks in a row (``QUEUE_IDS``; none for a
        kind without the command, or when it fails)."""
        import subprocess

        command = QUEUE_IDS.get(self.kind)
        ids = {n: self._job_id(n) for n in names}
        ids = {n: i for n, i in ids.items() if i != "?"}        # submitted, id known
        if command is None or not ids:
            return []
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return []
        if done.returncode != 0:
            return []
        queued = set(done.stdout.split())
        gone = []
        for name, job in ids.items():
            self._missing[name] = 0 if job in queued else self._missing.get(name, 0) + 1
            if self._missing[name] >= MISSING_LOOKS:
                gone.append(name)
        return gone

    def _replace(self, name, at_walltime=False):
        job = self._job_id(name)
        if not at_walltime and self.resubmitted >= self.cap:
            self._say(f"job {job} ({name}) ended; no replacement: {self.resubmitted} of at "
                      f"most {self.cap} submitted (FASTSD_MAX_RESUBMITS)")
            return []
        if at_walltime:
            self.walltime_ends += 1
        else:
            self.resubmitted += 1
        cluster, jobs = self.cluster, self.jobs
        new = f"{re.sub(r'(-r[0-9]+)+$', '', name)}-r{self.resubmitted + self.walltime_ends}"
        self._submitted.add(new)

        def swap():
            # A new name: the cluster's own next name can be the ended job's (its counter
            # stops at the first free name), and a job under the same name is not submitted.
            spec = cluster.worker_spec
            spec[new] = dict(spec.pop(name, None) or cluster.new_spec)
            cluster.scale(jobs=jobs)        # cancels the ended job, submits the new one
        cluster.loop.add_callback(swap)
        if at_walltime:
            from .._progress import clock

            self._say(f"job {job} ({name}) reached its walltime ({clock(self.walltime)}); "
                      f"submitted a replacement (one at each walltime; "
                      f"FASTSD_MAX_RESUBMITS counts the other ends)")
        else:
            self._say(f"job {job} ({name}) ended; submitted a replacement ({self.resubmitted} "
                      f"of at most {self.cap}, FASTSD_MAX_RESUBMITS)")
        return [name]

    def _report_pending(self, names, now):
        import subprocess

        self._reported.update(names)
        ids = [self._job_id(n) for n in names]
        reasons = ""
        command = QUEUE_REASON.get(self.kind)
        if command is not None and "?" not in ids:
            try:
                got = subprocess.run([*command, ",".join(ids)], capture_output=True, text=True,
                                     timeout=10).stdout.split("\n")
                reasons = "; ".join(" ".join(line.split()) for line in got if line.strip())
            except (OSError, subprocess.TimeoutExpired):
                reasons = ""
        wait = max(now - self._first_seen[n] for n in names)
        self._say(f"{len(names)} job(s) ({', '.join(ids)}) have waited {wait:.0f} s in the "
                  f"queue{f' ({reasons})' if reasons else ''}; the scan runs on the workers that "
                  f"join (check the jobs' size against the queue: docs/howto/cluster.md; "
                  f"FASTSD_PENDING_REPORT sets this wait)")

    def start(self):
        def loop():
            while not self._stop.wait(WATCH_POLL):
                try:
                    self.poll()
                except Exception as exc:       # a look that failed is not the scan's failure
                    self._say(f"warning: the cluster's jobs could not be read ({exc})")
        self._thread = threading.Thread(target=loop, name="fastsd-job-watcher", daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=WATCH_POLL + 1)


def jobqueue_client(kind, workers, *, submit=True, **options):
    """A Dask client on a dask-jobqueue cluster of ``workers`` worker processes.

    Parameters
    ----------
    kind, **options
        As ``jobqueue_cluster``.
    workers : int
        Worker processes to ask for (``cluster.scale(n=workers)``), >= 1; the
        workers join as the queue starts their jobs.
    submit : bool, default True
        Submit the jobs now; False leaves it to the client's ``start_jobs()``, which the
        scan calls once it has groups to run that fit in the jobs' walltime (``fastsd
        reproduce --cluster``: a refused or finished run submits nothing).

    Returns
    -------
    distributed.Client
        Its ``cluster`` is the cluster, ``planned_workers`` the workers asked for,
        ``walltime`` the jobs' walltime in seconds (None: no limit; the scan splits groups
        to fit it); its ``close()`` closes the cluster too.

    Raises
    ------
    ValueError
        As ``jobqueue_cluster``, for ``workers`` < 1, and for a ``walltime`` the scheduler
        would not read (``walltime_seconds``).
    """
    check_int("workers", workers, 1)
    submitted = False
    with _folders_undone(options.get("log_directory"), keep=lambda: submitted):
        walltime = configured_walltime(kind, options)
        cluster = jobqueue_cluster(kind, **options)
        client = _start(cluster, kind, workers, walltime, submit)
        submitted = True
    return client


def _start(cluster, kind, workers, walltime, submit):
    """``jobqueue_client``'s client on ``cluster``, its jobs checked, and submitted and
    watched now or at its ``start_jobs()``."""
    from distributed import Client

    watcher = None

    class _ClusterClient(Client):
        @property
        def gave_up(self):
            """Why no worker can come any more (every job ended, no replacement left)."""
            return None if watcher is None else watcher.gave_up

        def start_jobs(self):
            """Submit the jobs and start watching them; once (later calls do nothing)."""
            nonlocal watcher
            if watcher is None:
                cluster.scale(n=workers)
                jobs = len(cluster.worker_spec)         # the workers' jobs (processes per job)
                watcher = JobWatcher(cluster, kind, jobs, max_resubmits(jobs), pending_after,
                                     walltime=walltime).start()

        def close(self, *args, **kwargs):
            try:
                if watcher is not None:
                    watcher.stop()
                return super().close(*args, **kwargs)
            finally:
                cluster.close()

    try:
        check_submission(cluster, kind)
        pending_after = pending_report()
        max_resubmits(1)                    # a bad FASTSD_MAX_RESUBMITS, refused now
        client = _ClusterClient(cluster)
        client.planned_workers = workers    # before they join: the scan plans for them
        client.walltime = walltime
        if submit:
            client.start_jobs()
    except BaseException:
        cluster.close()
        raise
    return client


__all__ = ["KINDS", "LOCAL_JOB", "TEST_ONLY", "JobWatcher", "check_submission",
           "configured_walltime", "describe_submission", "jobqueue_client", "jobqueue_cluster",
           "max_resubmits", "pending_report", "walltime_seconds"]
