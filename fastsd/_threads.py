"""fastsd's threads: how many, and the team that runs work in fixed parts.

The policy (docs/howto/paths.md, "Reproducibility and threads"):

* BLAS runs on one thread inside fastsd's computations (``compute``). OpenBLAS's
  own threads split a GEMM by the thread count (its float32 Haswell kernel then
  rounds differently with 1 and 2 threads) and spin while they wait, which
  under other CPU-bound work makes a step slower than on one thread
  (``bench/bench_threads.py`` measures it; see the docs' results page).
* Work that pays for threads is cut into parts fixed by its shapes alone, never
  by the thread count, and the parts go to fastsd's team: the calling thread and
  ``threads() - 1`` helper threads that claim parts one by one and sleep (no
  spinning) between jobs. A helper held up by the scheduler delays a job by at
  most the part it holds; the others take the rest. Any thread count, any
  order of claiming, gives the same bits.
* Numba's ``prange`` kernels (walkers, kernel builds, the symbol path's models)
  run on Numba's pool with the same count, never inside a team part.

``threads()`` is Numba's thread count (``NUMBA_NUM_THREADS``,
``numba.set_num_threads``, ``thread_limit``) capped at the cores this process may use:
the one knob. ``thread_limit(threads)`` sets it for a block, and the scans' workers run under
``thread_limit(1)``.
"""
import functools
import itertools
import numbers
import os
import threading
from contextlib import contextmanager
from typing import Any, Callable, TypeVar, cast

#: A decorated function's type (``computing`` keeps it).
F = TypeVar("F", bound=Callable[..., Any])
#: Environment variables that size the thread pools of BLAS, OpenMP and Numba at import.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "NUMBA_NUM_THREADS")


def cpu_count():
    """Return the number of cores this process may use (its CPU affinity)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not on Linux
        return os.cpu_count() or 1


def cpu_model():
    """The CPU's model name (``/proc/cpuinfo``), else the platform's processor or machine."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def threads():
    """The threads fastsd computes on: Numba's thread count, at most ``cpu_count()``.

    Returns
    -------
    int
        At least 1.
    """
    import numba

    return max(1, min(numba.get_num_threads(), cpu_count()))


_controller = None


def _blas_controller():
    global _controller
    if _controller is None:
        import importlib

        from threadpoolctl import ThreadpoolController

        importlib.import_module("scipy.linalg.blas")     # load every BLAS before limiting
        _controller = ThreadpoolController()
    return _controller


@contextmanager
def compute():
    """Run the block's BLAS calls on one thread (every loaded BLAS, via threadpoolctl).

    Entered by fastsd's computing entry points; nested use is cheap.
    """
    if getattr(_state, "depth", 0):
        yield
        return
    _state.depth = 1
    try:
        with _blas_controller().limit(limits=1, user_api="blas"):
            yield
    finally:
        _state.depth = 0


def computing(fn: F) -> F:
    """Decorate a computing entry point: its body runs under ``compute()`` (its signature,
    annotations included, kept)."""
    @functools.wraps(fn)
    def entry(*args, **kwargs):
        with compute():
            return fn(*args, **kwargs)
    return cast(F, entry)


@contextmanager
def thread_limit(threads):
    """Limit fastsd (its team and Numba) and every loaded BLAS to ``threads`` in the block.

    Parameters
    ----------
    threads : int
        Threads, >= 1. The limits are restored after the block.

    Raises
    ------
    ValueError
        If ``n`` is not an integer >= 1.
    """
    import numba

    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or threads < 1:
        raise ValueError(f"`threads` must be an integer >= 1; got {threads!r}.")
    n = int(threads)
    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))
    try:
        with _blas_controller().limit(limits=n):
            yield
    finally:
        numba.set_num_threads(before)


@contextmanager
def at_most(n):
    """Run the block's Numba ``prange`` kernels on at most ``n`` threads (>= 1).

    For kernels with only ``n`` independent items (the symbol path's models): a
    thread with nothing to do would only spin beside the others.
    """
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(n, before)))
    try:
        yield
    finally:
        numba.set_num_threads(before)


_state = threading.local()       # depth of compute(); inside a team part or not


class _Job:
    """fn(i) for i in range(n), parts claimed one at a time by whoever comes."""

    def __init__(self, fn, n):
        self.fn, self.n = fn, n
        self._next = itertools.count()          # next() is atomic under the GIL
        self._lock = threading.Lock()
        self._finished = threading.Event()
        self._done = 0
        self.error = None

    def work(self):
        _state.in_part = True
        try:
            while True:
                i = next(self._next)
                if i >= self.n:
                    return
                try:
                    if self.error is None:
                        self.fn(i)
                except BaseException as exc:     # re-raised by the caller
                    self.error = self.error or exc
                with self._lock:
                    self._done += 1
                    if self._done == self.n:
                        self._finished.set()
        finally:
            _state.in_part = False

    def wait(self):
        self._finished.wait()
        if self.error is not None:
            raise self.error


class _Team:
    """Helper threads (daemons, started on first use) that join the caller's jobs."""

    def __init__(self):
        self._cv = threading.Condition()
        self._job = None
        self._generation = 0
        self._helpers = 0
        self._wanted = 0          # helpers that join the current job
        self._busy = threading.Lock()

    def _helper(self, index):
        seen = 0
        while True:
            with self._cv:
                while self._generation == seen or index >= self._wanted:
                    if self._generation != seen:        # a job this helper sits out
                        seen = self._generation
                    self._cv.wait()
                seen, job = self._generation, self._job
            job.work()

    def run(self, fn, n, nthreads):
        if nthreads <= 1 or n <= 1 or getattr(_state, "in_part", False) \
                or not self._busy.acquire(blocking=False):
            for i in range(n):        # one thread, nested, or another caller has the team
                fn(i)
            return
        try:
            job = _Job(fn, n)
            with self._cv:
                self._wanted = min(nthreads, n) - 1
                while self._helpers < self._wanted:
                    threading.Thread(target=self._helper, args=(self._helpers,), daemon=True,
                                     name=f"fastsd-team-{self._helpers}").start()
                    self._helpers += 1
                self._job = job
                self._generation += 1
                self._cv.notify_all()
            job.work()
            job.wait()
        finally:
            self._busy.release()


_team = _Team()


#: The least work (in multiply-adds of one thread's GEMM) that a job must hold for the team
#: to take it: waking the helpers costs more than a smaller job would gain.
MIN_TEAM_WORK = 1 << 21


def run_parts(fn, n, work, min_work=MIN_TEAM_WORK):
    """Call ``fn(i)`` for i in range(n) on fastsd's team (``threads()`` threads).

    The parts must be independent (each writes its own outputs); which thread
    runs which part must not matter. Exceptions in a part are raised here after
    every claimed part has finished. The parts run here, in order, when
    ``work`` (the job's multiply-adds, or their equivalent) is under
    ``min_work`` (default ``MIN_TEAM_WORK``), when called from inside a part, or
    while another thread uses the team.
    """
    _team.run(fn, n, threads() if n > 1 and work >= min_work else 1)
