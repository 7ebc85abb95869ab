"""Where the groups of a scan run: this process, local processes, any Executor, or Dask.

No scheduler lives here: the groups go to ``concurrent.futures`` (local
processes by default, or any ``Executor`` the caller passes) or to a Dask
``distributed.Client``, and come back as they finish. Each group runs under a
thread limit (BLAS through threadpoolctl, Numba through ``set_num_threads``),
so that workers sharing a machine do not fight over its cores.
"""
import concurrent.futures as cf
import math
import multiprocessing
import os
import signal
import threading
import time
from contextlib import contextmanager

from .. import _stop
from .._threads import THREAD_VARIABLES, cpu_count, thread_limit


def run_group(predictor, group, backend, dtype, threads):
    """Run one group of prepared cells under a thread limit; return its records and the CPU
    seconds it took (this process's, every thread's: what a time model predicts, which
    another process's load does not add to).

    This is the function the workers execute; it is importable, so any
    executor can pickle it.

    Parameters
    ----------
    predictor : str
        A name in ``fastsd.scan.PREDICTORS``.
    group : list of dict
        Prepared settings of cells that share one call.
    backend, dtype
        Passed to the predictor.
    threads : int or None
        Threads for BLAS and Numba in this call; None leaves them as they are.
    """
    from .predictors import get_predictor

    pred = get_predictor(predictor)
    start = time.process_time()
    if threads is None:
        records = pred.run_group(group, backend=backend, dtype=dtype)
    else:
        with thread_limit(threads):
            records = pred.run_group(group, backend=backend, dtype=dtype)
    return records, time.process_time() - start


def _worker_init(threads, parent):
    """Initializer of the local workers: thread pools sized, and an exit when the scan dies.

    Sizes the thread pools of the libraries not loaded yet (Numba, SciPy);
    NumPy is already loaded by then (unpickling this function imports
    ``fastsd.scan``), and ``run_group`` limits every loaded BLAS at run time.
    Ctrl-C in a terminal reaches the whole process group: the workers ignore
    it, and the scan, which handles it, terminates them. A daemon thread ends
    the worker once its parent ``parent`` (the scan) is gone: killed by
    SIGKILL or SIGTERM, the scan cannot stop its workers, and they would
    otherwise compute on, orphaned, until their queue closed.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True,
                     name="fastsd-parent-watch").start()


def _exit_with_parent(parent, interval=0.5):
    while os.getppid() == parent:
        time.sleep(interval)
    os._exit(1)


class _LocalPool(cf.ProcessPoolExecutor):
    """A pool made by ``local_pool``: stopped by terminating its workers, not by cancelling.

    Its futures are never cancelled: once a pool's workers are terminated,
    CPython < 3.12 sets an exception on every pending future, and its manager
    thread dies with ``InvalidStateError`` (a traceback on stderr) on one
    that was cancelled.
    """


@contextmanager
def local_pool(workers, threads):
    """A pool of ``workers`` fresh ("spawn") processes with ``threads`` threads each.

    Leaving the block normally waits for the pool to shut down; leaving it by
    an exception (Ctrl-C, SIGTERM, an error, or a generator closed early)
    terminates the workers at once, without waiting for their groups. The
    workers also exit on their own when this process dies.
    """
    pool = _LocalPool(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                      initializer=_worker_init, initargs=(threads, os.getpid()))
    try:
        yield pool
    except BaseException:
        _stop_workers(pool)
        pool.shutdown(wait=False)
        raise
    pool.shutdown(wait=True)


def check_executor(executor):
    """Refuse, before anything runs, an executor that cannot run the groups.

    Raises
    ------
    TypeError
        For anything but None, "serial", a ``concurrent.futures.Executor`` or
        a Dask ``distributed.Client``.
    ValueError
        For an unknown string, and for a ``ProcessPoolExecutor`` that forks
        once this process runs GNU OpenMP threads (Numba's "omp" layer, after
        any training here): a forked child cannot use them and dies at its
        first group.
    """
    if executor is None or executor == "serial" or is_dask_client(executor):
        return
    if isinstance(executor, str):
        raise ValueError(f"`executor` must be None (local processes), 'serial', a "
                         f"concurrent.futures.Executor or a Dask distributed.Client; got "
                         f"{executor!r}.")
    if not isinstance(executor, cf.Executor):
        raise TypeError(f"`executor` must be None (local processes), 'serial', a "
                        f"concurrent.futures.Executor or a Dask distributed.Client; got "
                        f"{type(executor).__name__} {executor!r}.")
    if isinstance(executor, cf.ProcessPoolExecutor) and _forks(executor) and _gnu_openmp_running():
        raise ValueError(
            "`executor` is a ProcessPoolExecutor that forks, and this process already runs "
            "GNU OpenMP threads (Numba's parallel kernels), which a forked worker cannot use: "
            "it would die at its first group. Fix: ProcessPoolExecutor(..., mp_context="
            "multiprocessing.get_context('spawn')), or executor=None for fastsd's own pool.")


def _forks(pool):
    context = getattr(pool, "_mp_context", None) or multiprocessing.get_context()
    return context.get_start_method() == "fork"


def _gnu_openmp_running():
    """True once Numba's parallel kernels run on its OpenMP layer in this process."""
    import sys

    numba = sys.modules.get("numba")
    if numba is None:
        return False
    try:
        return numba.threading_layer() == "omp"
    except ValueError:                  # no parallel kernel has run yet
        return False


def is_dask_client(executor):
    """True for a ``distributed.Client`` or a subclass of it (checked without importing
    Dask)."""
    return any(c.__module__.split(".")[0] == "distributed" and c.__name__ == "Client"
               for c in type(executor).__mro__)


def submit_groups(executor, jobs, threads):
    """Run ``jobs`` on ``executor``; yield ``(index, (records, cpu seconds), error)`` as each
    finishes.

    Parameters
    ----------
    executor : None, "serial", concurrent.futures.Executor or distributed.Client
        None: a pool of ``len(jobs)`` local processes at most, one per core,
        started with "spawn" (no state inherited from this process).
        "serial": in this process, in order.
    jobs : list of tuple
        Arguments of ``run_group`` without ``threads``.
    threads : int or None
        Threads per group; None picks cores // workers for the local pool,
        1 for a caller's executor or Dask (which decide how many groups run at
        once), and no limit for "serial".

    Yields
    ------
    index : int
        Position of the job in ``jobs``.
    outcome : (list of dict, float) or None
        ``run_group``'s records and CPU seconds.
    error : BaseException or None
        What the job raised; ``concurrent.futures.process.BrokenProcessPool``
        when a worker process died (killed, or out of memory).

    Raises
    ------
    fastsd._stop.Stopped
        Once a stop was requested (``fastsd._stop.request``): before the next
        group in "serial", within ``STOP_POLL`` seconds on an Executor. The
        local pool's workers are then terminated.
    """
    if executor == "serial":
        for i, job in enumerate(jobs):
            _stop.check()
            try:
                yield i, run_group(*job, threads), None
            except Exception as exc:       # reported with the cell, the scan goes on
                yield i, None, exc
        return
    if is_dask_client(executor):
        yield from _submit_dask(executor, jobs, 1 if threads is None else threads)
        return
    if executor is not None:
        yield from _submit(executor, jobs, 1 if threads is None else threads)
        return
    workers = max(1, min(len(jobs), cpu_count()))
    if threads is None:
        threads = max(1, cpu_count() // workers)
    with local_pool(workers, threads) as pool:
        yield from _submit(pool, jobs, threads)


#: Seconds between two looks at the stop request while groups run.
STOP_POLL = 0.1
#: Seconds without a single Dask worker before the scan says so on stderr.
NO_WORKERS_WARN = 60.0
#: Seconds without a single Dask worker before the scan gives up (the finished cells are
#: saved): ``FASTSD_NO_WORKERS_TIMEOUT`` (seconds, or "never" to keep waiting), else this.
NO_WORKERS_TIMEOUT = 600.0


class NoWorkersError(RuntimeError):
    """A Dask scan had no worker for ``no_workers_timeout()`` seconds."""


def no_workers_timeout(environ=None):
    """Seconds a Dask scan waits without any worker (``FASTSD_NO_WORKERS_TIMEOUT``; None: ever).

    Raises
    ------
    ValueError
        For a value that is neither a number of seconds > 0 nor "never".
    """
    value = (os.environ if environ is None else environ).get("FASTSD_NO_WORKERS_TIMEOUT")
    if value is None:
        return NO_WORKERS_TIMEOUT
    if value.strip().lower() == "never":
        return None
    try:
        seconds = float(value)
    except ValueError:
        seconds = float("nan")
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"`FASTSD_NO_WORKERS_TIMEOUT` must be a number of seconds > 0 or "
                         f"'never'; got {value!r}.")
    return seconds


def _submit_dask(client, jobs, threads):
    """Run ``jobs`` on a Dask client; yield each outcome as it finishes.

    A client whose cluster's jobs wait to be submitted (``start_jobs``, ``fastsd.scan.cluster``)
    submits them first. Looks at the stop request every second, and at the cluster's workers: with
    none for ``NO_WORKERS_WARN`` seconds it says so on stderr; with none for
    ``no_workers_timeout()`` seconds, or none while the client's cluster says no job
    can come any more (``gave_up``, ``fastsd.scan.cluster.JobWatcher``), it raises
    ``NoWorkersError`` (the outcomes yielded so far are the caller's to keep).
    """
    import sys

    from distributed import wait

    timeout = no_workers_timeout()
    start_jobs = getattr(client, "start_jobs", None)    # a cluster's jobs, submitted on use
    if jobs and start_jobs is not None:
        start_jobs()
    futures = {client.submit(run_group, *job, threads, pure=False): i
               for i, job in enumerate(jobs)}
    pending, alone_since, warned = set(futures), None, False
    try:
        while pending:
            try:
                done, pending = wait(pending, timeout=1.0, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = ()
            for fut in done:
                _stop.check()
                yield _outcome(futures[fut], fut)
            _stop.check()
            if not pending or client.scheduler_info(n_workers=1).get("workers"):
                alone_since, warned = None, False
                continue
            gave_up = getattr(client, "gave_up", None)     # a cluster's jobs all ended
            if gave_up:
                raise NoWorkersError(
                    f"{gave_up}, with {len(pending)} group(s) left; the finished cells are "
                    f"saved: rerun to resume")
            now = time.monotonic()
            alone_since = now if alone_since is None else alone_since
            if not warned and now - alone_since >= min(NO_WORKERS_WARN, timeout or math.inf):
                warned = True
                print(f"fastsd: warning: no Dask worker has been alive for "
                      f"{now - alone_since:.0f} s; {len(pending)} group(s) wait. Start workers "
                      f"for the scheduler, or stop with Ctrl-C (finished cells are saved); the "
                      f"scan gives up after "
                      f"{'never' if timeout is None else f'{timeout:.0f} s'} without one "
                      f"(FASTSD_NO_WORKERS_TIMEOUT).", file=sys.stderr, flush=True)
            if timeout is not None and now - alone_since >= timeout:
                raise NoWorkersError(
                    f"no Dask worker for {timeout:.0f} s with {len(pending)} group(s) left; "
                    f"the finished cells are saved: start workers and rerun to resume "
                    f"(FASTSD_NO_WORKERS_TIMEOUT sets the wait, 'never' keeps waiting)")
    finally:
        for fut in futures:
            fut.cancel()


def _submit(executor, jobs, threads):
    """Run ``jobs`` on a ``concurrent.futures`` executor; yield each outcome as it finishes.

    Raises ``fastsd._stop.Stopped`` within ``STOP_POLL`` seconds of a stop
    request (the scan may run in a thread that no signal reaches). Stopping
    early cancels the jobs not started, except on a ``local_pool``, whose
    owner terminates its workers.
    """
    futures = {}
    try:
        for i, job in enumerate(jobs):
            futures[executor.submit(run_group, *job, threads)] = i
        pending = set(futures)
        while pending:
            done, pending = cf.wait(pending, timeout=STOP_POLL,
                                    return_when=cf.FIRST_COMPLETED)
            for fut in done:
                _stop.check()
                yield _outcome(futures[fut], fut)
            _stop.check()
    finally:
        if not isinstance(executor, _LocalPool):
            for fut in futures:
                fut.cancel()


def _stop_workers(pool):
    """Terminate a process pool's workers now, without waiting for their groups."""
    if hasattr(pool, "terminate_workers"):          # Python >= 3.14
        pool.terminate_workers()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.terminate()


def _outcome(index, future):
    try:
        return index, future.result(), None
    except Exception as exc:
        return index, None, exc
