"""Where the groups of a scan run: this process, local processes, any Executor, or Dask.

No scheduler lives here: the groups go to ``concurrent.futures`` (local
processes by default, or any ``Executor`` the caller passes) or to a Dask
``distributed.Client``, and come back as they finish. Each group runs under a
thread limit (BLAS through threadpoolctl, Numba through ``set_num_threads``),
so that workers sharing a machine do not fight over its cores.
"""
import concurrent.futures as cf
import multiprocessing
import os


def cpu_count():
    """Return the number of cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not on Linux
        return os.cpu_count() or 1


def run_group(predictor, group, backend, dtype, threads):
    """Run one group of prepared cells under a thread limit; return its records.

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
    if threads is None:
        return pred.run_group(group, backend=backend, dtype=dtype)
    import importlib

    import numba
    from threadpoolctl import threadpool_limits

    importlib.import_module("scipy.linalg.blas")     # load every BLAS before limiting them

    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(threads, numba.config.NUMBA_NUM_THREADS)))
    try:
        with threadpool_limits(limits=threads):
            return pred.run_group(group, backend=backend, dtype=dtype)
    finally:
        numba.set_num_threads(before)


#: Environment variables that size the thread pools of BLAS, OpenMP and Numba at import.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")


def _thread_environment(threads):
    """Worker initializer: size the thread pools of the libraries not loaded yet (Numba, SciPy).

    NumPy is already loaded by then (unpickling this function imports
    ``fastsd.scan``); ``run_group`` limits every loaded BLAS at run time.
    """
    for name in THREAD_VARIABLES:
        os.environ[name] = str(threads)


def local_pool(workers, threads):
    """Return a pool of ``workers`` fresh ("spawn") processes with ``threads`` threads each."""
    return cf.ProcessPoolExecutor(max_workers=workers,
                                  mp_context=multiprocessing.get_context("spawn"),
                                  initializer=_thread_environment, initargs=(threads,))


def is_dask_client(executor):
    """True for a ``distributed.Client`` (checked without importing Dask)."""
    return type(executor).__module__.split(".")[0] == "distributed" and hasattr(
        executor, "gather")


def submit_groups(executor, jobs, threads):
    """Run ``jobs`` on ``executor``; yield ``(index, records, error)`` as each finishes.

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
    records : list of dict or None
    error : BaseException or None
        What the job raised; ``concurrent.futures.process.BrokenProcessPool``
        when a worker process died (killed, or out of memory).
    """
    if executor == "serial":
        for i, job in enumerate(jobs):
            try:
                yield i, run_group(*job, threads), None
            except Exception as exc:       # reported with the cell, the scan goes on
                yield i, None, exc
        return
    if is_dask_client(executor):
        from distributed import as_completed

        futures = {executor.submit(run_group, *job, 1 if threads is None else threads,
                                   pure=False): i for i, job in enumerate(jobs)}
        try:
            for fut in as_completed(futures):
                yield _outcome(futures[fut], fut)
        finally:
            for fut in futures:
                fut.cancel()
        return
    own = executor is None
    if own:
        workers = max(1, min(len(jobs), cpu_count()))
        if threads is None:
            threads = max(1, cpu_count() // workers)
        executor = local_pool(workers, threads)
    elif threads is None:
        threads = 1
    futures = {}
    interrupted = False
    try:
        for i, job in enumerate(jobs):
            futures[executor.submit(run_group, *job, threads)] = i
        for fut in cf.as_completed(futures):
            yield _outcome(futures[fut], fut)
    except BaseException:           # Ctrl-C, SIGTERM, or the caller stopped early
        interrupted = True
        if own:
            _stop_workers(executor)
        raise
    finally:
        if own:
            executor.shutdown(wait=not interrupted, cancel_futures=True)
        else:
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
