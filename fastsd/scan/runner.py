"""Run a grid through a predictor into a resumable store, and load the results."""
import contextlib
import heapq
import importlib.util
import os
import time
import warnings
from dataclasses import dataclass
from typing import NamedTuple

from .._dispatch import BACKENDS, check_dtype, target_backend, traits
from .. import _progress, _stop
from .._json import strict_json
from .._validation import check_choice, check_int
from ..store import ResultStore, skipped_lines
from .._threads import cpu_count
from .executors import check_executor, is_dask_client, submit_groups
from .grid import Grid
from .mainguard import workers_unavailable
from .predictors import PREDICTORS, get_predictor

#: Record fields that describe a run rather than its result, left out of xarray variables.
_META = ("key", "predictor", "coords", "settings", "history", "finished_at", "version",
         "backend", "dtype", "path", "task", "init")


#: The largest grid ``run`` takes (a slip such as three 1000-value axes is 1e9 cells).
MAX_CELLS = 1_000_000


class ScanError(RuntimeError):
    """Some cells of a scan failed; the finished ones are in the store."""


def _as_store(store):
    if isinstance(store, ResultStore):
        return store
    try:
        return ResultStore(store)
    except TypeError:
        raise TypeError(f"`store` must be a path or a fastsd.ResultStore; got "
                        f"{type(store).__name__} {store!r}.") from None


def run(grid, predictor, store, executor=None, *, backend="auto", dtype=None, threads=None,
        progress=True):
    """Compute every cell of ``grid`` not yet in ``store``, writing each as it finishes.

    All cells are validated before anything runs. Cells that can share one
    call (for "mlp": the same d, L, width, steps, ...; every gamma of a seed,
    or on the GPU every gamma and seed, then trains in one lockstep
    ensemble) form a group; the groups go to the executor, and each finished
    group's records are appended to the store at once, atomically. A scan
    killed at any point (even ``kill -9``) loses at most the groups in
    flight, and its local workers exit with it; rerunning the same call
    computes only what is missing.

    While it runs, the store is locked (``<store>.lock``, naming this run's
    pid, host, command line and start time): a second run on the same store
    is refused at once, so that no cell is computed twice into one file. The
    lock goes with the run, however it ends; a lock file left behind by a
    killed run is taken over with a warning.

    With the default executor (local processes started with "spawn"), each
    worker re-imports the main module, so a script must call ``run`` under
    ``if __name__ == "__main__":``. Where the workers could not start (code
    read from stdin, as in ``python - <<EOF``; a call at a script's top
    level, outside that guard), ``run`` says so in one ``RuntimeWarning``
    and computes the cells in this process instead. From ``python -c`` or an
    interactive prompt the workers start as usual.

    Parameters
    ----------
    grid : Grid
        The cells, e.g. ``Grid(gamma=[1.0, 0.1], L=[4, 8], seed=[0, 1], d=64,
        width=256, steps=2000)``.
    predictor : {"mlp", "mlp_image", "theory", "walkers", "lazy_limit", "bayes"}
        "mlp": finite networks trained with SGD (``fastsd.train_ensemble``,
        Sec. 2); "mlp_image": the same on PSVRT and Pentomino (Sec. 4);
        "theory": the rich-regime closed form (Eq. 3); "walkers": the
        Markov walker ensemble (App. C.3); "lazy_limit": the gamma -> 0,
        infinite-width network (App. D); "bayes": Bayes-optimal accuracy on
        the noisy task (App. E). See ``fastsd.scan.PREDICTORS`` for each
        one's settings.
    store : str, os.PathLike or fastsd.ResultStore
        JSON Lines file of the records. It is bound to the grid's signature
        (predictor, fixed settings with the predictor's defaults, axis names)
        in a ``.grid.json`` file next to it. A later grid of the same
        predictor may add axis values and turn fixed settings into axes (the
        signature becomes the union); a setting fixed in both must keep its
        value.
    executor : None, "serial", concurrent.futures.Executor or distributed.Client
        None (default): local processes, at most one per core, each limited
        to cores // workers threads; when the groups run on "cuda" (asked
        for, or picked by "auto" on a GPU), this process. "serial": this
        process. An Executor or a Dask client: each group is one task,
        limited to ``threads`` threads (default 1). A ``ProcessPoolExecutor``
        that forks is refused once this process has run Numba's OpenMP
        threads (its workers would die); give it a "spawn" context.
    backend : {"auto", "numpy", "cpu", "cuda"}
        As in ``fastsd.train``. The closed forms ("theory", "bayes") always
        run in NumPy, and their records say so.
    dtype : {None, "float32", "float64"}
        As in ``fastsd.train``; None is the backend's default.
    threads : int, optional
        Threads per group (BLAS and Numba).
    progress : bool, default True
        A progress bar on stderr: cells done, cells per second, time left.

    Returns
    -------
    list of dict
        The records written by this call, in the order they finished. Each
        holds the predictor's result and configuration (including the
        package version, backend, dtype, seed and wall time), plus ``key``,
        ``predictor``, ``coords`` (the cell's value on each axis),
        ``settings`` (every setting, defaults included) and ``finished_at``
        (UTC, ISO 8601).

    Raises
    ------
    TypeError, ValueError
        Before anything runs: for a grid that is not a ``Grid``, an unknown
        predictor, a setting the predictor does not know, a missing or
        out-of-range value (the message names the cell), an executor that
        cannot run the groups, or a store that belongs to a different grid.
    BackendUnavailableError
        Before anything runs, for an explicit backend that cannot run here.
    StoreLockedError
        Before anything runs, when another run is writing the store; the
        message names it and its lock file.
    ScanError
        After the run, when some groups failed (or a worker process died);
        the finished cells are saved and a rerun retries only the others.
    KeyboardInterrupt
        On Ctrl-C (and SIGTERM in the ``fastsd`` command): the local workers
        are terminated at once and no further cell is written.

    Examples
    --------
    >>> import os, tempfile
    >>> from fastsd.scan import Grid, run
    >>> grid = Grid(L=[2, 3, 4])
    >>> path = os.path.join(tempfile.mkdtemp(), "eq3.jsonl")
    >>> [round(r["test_accuracy"], 3) for r in run(grid, "theory", path, "serial",
    ...                                          progress=False)]
    [0.75, 0.908, 0.949]
    """
    return run_many([(grid, predictor, store)], executor, backend=backend, dtype=dtype,
                    threads=threads, progress=progress)[0]


def run_many(runs, executor=None, *, backend="auto", dtype=None, threads=None, progress=True):
    """Run several grids, each into its own store, on one executor: every group of every grid
    in one queue, largest first.

    As ``run`` for each ``(grid, predictor, store)``, except that the groups of
    all grids share the workers: a cluster does not drain while one grid's
    last, largest groups finish before the next grid starts (``fastsd
    reproduce all`` runs every figure so). The groups whose time the
    predictors model go largest first by predicted seconds, after those
    whose time is not modelled; a splittable group longer than all the
    modelled work over the workers is split, as ``run`` splits it.

    Parameters
    ----------
    runs : sequence of (Grid, str, store)
        The grids, their predictors and their stores (distinct files).
    executor, backend, dtype, threads, progress
        As ``run`` (one progress bar a grid).

    Returns
    -------
    list of list of dict
        The records written for each grid, as ``run`` returns them.

    Raises
    ------
    TypeError, ValueError, BackendUnavailableError, StoreLockedError
        As ``run``, before anything runs; ValueError also for two runs on one store.
    ScanError
        After every grid has run, for the first grid with failed cells (the
        finished cells of all grids are saved).
    """
    _check_run_options(backend, dtype, executor)
    parts = [prepare_part(*_run_triple(r)) for r in runs]
    written, errors = run_parts(parts, executor, backend, dtype, threads, progress)
    for error in errors:
        if error is not None:
            raise error
    return written


def _run_triple(run):
    try:
        grid, predictor, store = run
    except (TypeError, ValueError):
        raise TypeError(f"each of `runs` must be a (grid, predictor, store) triple; got "
                        f"{run!r}.") from None
    return grid, predictor, store


def _check_run_options(backend, dtype, executor):
    """The options ``run`` and ``plan`` share, checked; returns the target backend."""
    check_choice("backend", backend, BACKENDS)
    check_choice("dtype", dtype, (None, "float32", "float64"))
    check_executor(executor)
    target = target_backend(backend)
    if dtype is not None:
        check_dtype(target, dtype, asked=backend)
    return target


@dataclass(frozen=True)
class Part:
    """One grid of a run, validated: its predictor, its store and its prepared cells
    ({key: (coords, settings)})."""

    grid: Grid
    pred: object
    store: ResultStore
    cells: dict


def prepare_part(grid, predictor, store):
    """A ``Part``: the grid, predictor and store checked and every cell prepared."""
    if not isinstance(grid, Grid):
        raise TypeError(f"`grid` must be a fastsd.scan.Grid; got {type(grid).__name__}.")
    if len(grid) > MAX_CELLS:
        raise ValueError(f"`grid` must have at most {MAX_CELLS:,} cells (each is validated and "
                         f"kept in memory before anything runs); got {len(grid):,}. Split it "
                         f"into several grids on the same store.")
    pred = get_predictor(predictor)
    store = _as_store(store)
    return Part(grid, pred, store, _prepared_cells(grid, pred))


def _distinct_stores(parts):
    seen = set()
    for p in parts:
        path = os.path.realpath(p.store.path)
        if path in seen:
            raise ValueError(f"each run must have its own store; got {p.store.path!r} twice.")
        seen.add(path)


def run_parts(parts, executor, backend, dtype, threads, progress):
    """Compute what the stores of ``parts`` miss, on one executor, in one queue of groups.

    The options are checked as ``run`` checks them, and the stores checked
    writable and locked, all of them before any group runs. Returns the
    records written per part and, per part, None or the ``ScanError`` of its
    failed cells (its finished cells saved).
    """
    target = _check_run_options(backend, dtype, executor)
    if threads is not None:
        threads = check_int("threads", threads, 1)
    if executor is None and traits(target).one_process:
        executor = "serial"         # one GPU: one process drives it
    _distinct_stores(parts)
    for p in parts:
        p.store.check_writable()            # before the locks and any group
    with contextlib.ExitStack() as stack:
        for p in parts:
            stack.enter_context(p.store.lock())
        stack.enter_context(_stop.scope())
        return _compute(parts, executor, target, backend, dtype, threads, progress)


def _prepared_cells(grid, pred):
    """{key: (coords, prepared settings)} of the grid's cells, each validated; the cells that
    prepare to one key are kept once, with a warning."""
    cells = {}
    for coords, settings in grid.cells():
        try:
            prepared = pred.prepare(settings)
        except (ValueError, TypeError) as exc:
            where = f"in the cell {coords}" if coords else "in the grid's fixed settings"
            raise type(exc)(f"{exc} ({where})") from None
        key = pred.key(prepared)
        if key in cells:
            warnings.warn(f"the cells {cells[key][0]} and {coords} of the grid are the same "
                          f"cell once prepared (e.g. gamma='lazy' and 1e-5/sqrt(d)); it is "
                          f"computed once", RuntimeWarning, stacklevel=3)
            continue
        cells[key] = (coords, prepared)
    return cells


class _Item(NamedTuple):
    """One group of a run: its work, whether that is predicted seconds (``modelled``) or a
    relative cost, its part's index and its cells, (key, coords, prepared settings) each."""

    work: float
    modelled: bool
    part: int
    group: list


def _pending(k, pred, cells, done, target, dtype):
    """The groups of part ``k``'s cells not in ``done``, as ``_Item``s.

    A group's work is the predictor's predicted seconds on one thread
    (``Predictor.seconds``), or, where it has no model, the sum of its
    cells' relative costs.
    """
    groups = {}
    for key, (coords, prepared) in cells.items():
        if key not in done:
            groups.setdefault(pred.group_key(prepared, target), []).append(
                (key, coords, prepared))
    return [_item(pred, k, g, target, dtype) for g in groups.values()]


def _item(pred, k, group, target, dtype):
    seconds = pred.seconds([p for _, _, p in group], target, dtype)
    if seconds is not None:
        return _Item(seconds, True, k, group)
    return _Item(sum(pred.cost(p) for _, _, p in group), False, k, group)


def _schedule(items, preds, workers, target, dtype):
    """The ``_Item``s of the parts whose predictors are ``preds``, in the order the executor
    gets them.

    Seconds and relative costs do not compare: the groups whose time is not
    modelled go first (each part's largest first), then the modelled ones,
    largest first. On ``workers`` > 1, the splittable groups of each unit
    (all the modelled seconds; one part's relative costs) that would set
    the critical path are halved (``_split_long``).
    """
    units = {}
    for item in items:
        units.setdefault(None if item.modelled else item.part, []).append(item)
    order = []
    for unit in sorted(units, key=lambda u: (u is None, u or 0)):
        group = units[unit]
        if workers > 1:
            group = _split_long(preds, group, workers, target, dtype)
        order += sorted(group, key=lambda item: -item.work)
    return order


#: How far ``_split_long`` looks for a shorter wall time: down to groups of this fraction of
#: a perfect share of the work; and the gain a further split must bring (a fraction of the
#: wall time) to be kept, since each loses what the group's models share.
SPLIT_DEPTH = 0.1
SPLIT_GAIN = 0.005


def _split_long(preds, items, workers, target, dtype):
    """Halve the longest splittable group of two cells or more while it takes longer than all
    the work over ``workers`` (the wall time of a perfect share): it would set the critical
    path. Then go on halving the longest down to ``SPLIT_DEPTH`` of the share, and keep the
    split with the shortest predicted wall time (``predicted_wall``; a split kept must
    shorten it by ``SPLIT_GAIN``): groups just under the share can still leave workers idle
    at the end, and one halving alone may not show it (several groups of one length).

    Splitting loses what the group's models share (on the CPU, their test sets and
    batches) and changes no record: each model of a ``train_ensemble`` gives the numbers
    it gives alone. ``items`` are ``_Item``s of one unit of work, ``preds`` the parts'
    predictors; returns the items, split.
    """
    items, best, best_wall = list(items), None, None
    while True:
        many = [i for i, it in enumerate(items) if len(it.group) > 1 and preds[it.part].splittable]
        i = max(many, key=lambda i: items[i].work, default=None)
        share = sum(it.work for it in items) / workers
        if i is not None and items[i].work <= share and best is None:
            best, best_wall = items, predicted_wall([it.work for it in items], workers)
        if i is None or items[i].work < SPLIT_DEPTH * share:
            break
        it = items[i]
        half = len(it.group) // 2
        items = items[:i] + [_item(preds[it.part], it.part, part, target, dtype)
                             for part in (it.group[:half], it.group[half:])] + items[i + 1:]
        if best is not None:
            wall = predicted_wall([it.work for it in items], workers)
            if wall < (1 - SPLIT_GAIN) * best_wall:
                best, best_wall = items, wall
    return items if best is None else best


def predicted_wall(seconds, workers):
    """Wall time of jobs of ``seconds`` each, largest first, on ``workers`` that each take
    the next job when free (how the scan's executors hand out its groups)."""
    finish = [0.0] * max(1, min(workers, len(seconds)))
    for s in sorted(seconds, reverse=True):
        heapq.heapreplace(finish, finish[0] + s)
    return max(finish)


def _workers_of(executor, target):
    """The groups ``executor`` runs at once: one a core with local processes on the CPU, one
    in this process or on the GPU, a pool's workers, a Dask cluster's worker threads (or the
    workers it was asked for: ``planned_workers``, ``fastsd.scan.cluster``)."""
    if executor == "serial" or traits(target).one_process:
        return 1
    if executor is None:
        return cpu_count()
    if is_dask_client(executor):
        planned = getattr(executor, "planned_workers", None)
        return max(planned or 0, sum(executor.nthreads().values()), 1)
    return getattr(executor, "_max_workers", 1)


def _compute(parts, executor, target, backend, dtype, threads, progress):
    """The part of ``run_parts`` after validation, with the stores locked: compute what is
    missing."""
    fresh = [p.store.grid_signature() is None for p in parts]
    for p in parts:
        _check_stored_settings(p.store, p.pred)
    items = [it for k, p in enumerate(parts)
             for it in _pending(k, p.pred, p.cells, {r["key"] for r in cell_records(p.store,
                                                                                p.pred)},
                                target, dtype)]
    for it in items:            # what a group's run would refuse, refused before any runs
        parts[it.part].pred.check([s for _, _, s in it.group], target, dtype)
    for p in parts:
        p.store.bind(p.grid.signature(p.pred.name), p.pred.defaults)
    preds = [p.pred for p in parts]
    items = _schedule(items, preds, _workers_of(executor, target), target, dtype)
    jobs = [(preds[it.part].name, [s for _, _, s in it.group], backend, dtype) for it in items]
    if executor is None and jobs:
        fallback = workers_unavailable()
        if fallback is not None:
            warnings.warn(fallback, RuntimeWarning, stacklevel=5)
            executor = "serial"

    written, failed = [[] for _ in parts], [[] for _ in parts]
    n_done = [len(p.cells) for p in parts]
    for it in items:
        n_done[it.part] -= len(it.group)
    workers = _workers_of(executor, target)
    with contextlib.ExitStack() as stack:
        bars = [_bar(stack, progress, p, [it for it in items if it.part == k], n_done[k],
                     workers, executor, len(parts))
                for k, p in enumerate(parts)]
        for i, records, error in submit_groups(executor, jobs, threads):
            it = items[i]
            p = parts[it.part]
            if error is not None:
                failed[it.part].append((it.group, error))
                continue
            for (key, coords, prepared), record in zip(it.group, records):
                record = strict_json(dict(
                    record, key=key, predictor=p.pred.name, coords=coords, settings=prepared,
                    finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
                with _stop.writing():
                    p.store.write(record)
                written[it.part].append(record)
            bars[it.part].set_postfix_str(
                f"{n_done[it.part] + len(written[it.part])}/{len(p.cells)} cells", refresh=False)
            bars[it.part].update(it.work)
    errors = [None if not failed[k] else
              _failure(p, fresh[k], failed[k], n_done[k] + len(written[k]))
              for k, p in enumerate(parts)]
    return written, errors


def _bar(stack, progress, part, items, n_done, workers, executor, n_parts):
    """A part's progress bar, entered on ``stack``. It counts predicted work (seconds on one thread, where the
    predictor has a model), so that its percentage and tqdm's time left follow the time, not
    the cell count; a run of one part also shows its predicted wall time."""
    modelled = bool(items) and items[0].modelled
    first = (f"; predicted {_progress.clock(predicted_wall([it.work for it in items], workers))}"
             f" on {workers} worker{'s' * (workers > 1)}"
             if modelled and n_parts == 1 and executor in (None, "serial") else "")
    bar = stack.enter_context(_progress.bar(
        progress, total=sum(it.work for it in items) if items else 1, initial=0 if items else 1,
        smoothing=0, desc=f"{part.pred.name} cells",
        bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix} [{elapsed}<{remaining}]"))
    bar.set_postfix_str(f"{n_done}/{len(part.cells)} cells{first}")
    return bar


def _failure(part, fresh, failed, n_stored):
    """The ``ScanError`` of a part's failed groups ((group, error) pairs); a fresh store with
    nothing stored loses its binding."""
    stored = os.path.exists(part.store.path)
    if fresh and not stored:        # nothing stored: leave no binding
        os.remove(part.store.grid_path)
    n_failed = sum(len(g) for g, _ in failed)
    saved = (f"the {n_stored} finished cells are saved in {part.store.path}, and rerunning "
             "retries only the others" if stored and n_stored else "nothing was stored")
    group, error = failed[0]
    exc = ScanError(f"{n_failed} of {len(part.cells)} cells failed; {saved}. First failure, in "
                    f"the cell {group[0][1]}: {_describe(error)}")
    exc.__cause__ = error
    return exc


@dataclass(frozen=True)
class Plan:
    """What ``run`` would compute, and what it would take, found without running anything.

    Attributes
    ----------
    predictor, store, backend : str
        The predictor, the store's path and the backend the groups would run on.
    cells, done : int
        The grid's distinct cells, and how many of them the store already has.
    group_sizes : tuple of int
        Cells per group still to compute, largest group first.
    group_seconds : tuple of float or None
        Each group's predicted seconds on one thread (``Predictor.seconds``);
        None where the predictor has no model of its time.
    group_memory : tuple of int or None
        Each group's bytes (``Predictor.memory``); None where not modelled.
    workers : int or None
        Groups computed at once (local processes: one per core; one in
        this process or on the GPU); None on an executor of unknown size.
    cost_model : str or None
        The time model's description (``Predictor.cost_model``) where it was used.
    """

    predictor: str
    store: str
    backend: str
    cells: int
    done: int
    group_sizes: tuple
    group_seconds: tuple
    group_memory: tuple
    workers: int = None
    cost_model: str = None

    @property
    def remaining(self):
        """Cells still to compute."""
        return self.cells - self.done

    @property
    def modelled(self):
        """Whether every remaining group's time is predicted."""
        return all(s is not None for s in self.group_seconds)

    @property
    def work(self):
        """Predicted seconds of the remaining groups on one thread, in all (None: not modelled)."""
        return float(sum(self.group_seconds)) if self.modelled else None

    @property
    def seconds(self):
        """Predicted wall time of the remaining groups on ``workers`` (None: not modelled)."""
        if not self.modelled or self.workers is None:
            return None
        return predicted_wall(self.group_seconds, self.workers) if self.group_seconds else 0.0

    @property
    def memory(self):
        """Bytes of the largest remaining group (None: not modelled or nothing to compute)."""
        known = [m for m in self.group_memory if m is not None]
        return max(known) if known and len(known) == len(self.group_memory) else None

    @property
    def peak_memory(self):
        """Bytes of the ``workers`` largest groups together: the most that can run at once."""
        if self.memory is None:
            return None
        return sum(sorted(self.group_memory, reverse=True)[:self.workers or 1])

    def to_json(self):
        """A JSON-ready dict: the attributes and properties (without the per-group lists)."""
        return {"predictor": self.predictor, "store": self.store, "backend": self.backend,
                "cells": self.cells, "done": self.done, "remaining": self.remaining,
                "groups": len(self.group_sizes), "workers": self.workers,
                "modelled": self.modelled, "work_seconds": self.work, "seconds": self.seconds,
                "memory_bytes": self.memory, "peak_memory_bytes": self.peak_memory,
                "cost_model": self.cost_model}


def plan(grid, predictor, store, executor=None, *, backend="auto", dtype=None, workers=None):
    """What ``run(grid, predictor, store, ...)`` would compute, and its predicted time and memory.

    Nothing is run or written: no store, no lock, no binding. The grid is
    validated and the store's binding checked as ``run`` does, the cells the
    store already has are counted, and the rest are grouped as ``run``
    would group them.

    Parameters
    ----------
    grid, predictor, store, executor, backend, dtype
        As ``run``. The executor sets the groups computed at once: one per
        core with local processes (None) on the CPU, one in this process
        ("serial") or on the GPU, unknown on another executor (its wall time
        is then not predicted, its work on one thread is).
    workers : int, optional
        Plan the run on this many single-threaded workers instead (a cluster's:
        the groups handed out largest first, as ``run`` hands them out); >= 1.

    Returns
    -------
    Plan

    Raises
    ------
    TypeError, ValueError, BackendUnavailableError
        As ``run`` before anything runs.
    """
    plans, _ = plan_many([(grid, predictor, store)], executor, backend=backend, dtype=dtype,
                         workers=workers)
    return plans[0]


def plan_many(runs, executor=None, *, backend="auto", dtype=None, workers=None):
    """What ``run_many(runs, ...)`` would compute, and its predicted wall time.

    As ``plan`` for each ``(grid, predictor, store)``, with the groups split
    and handed out as ``run_many`` hands them out: all grids' groups in one
    queue on the same workers.

    Parameters
    ----------
    runs : sequence of (Grid, str, store)
    executor, backend, dtype, workers
        As ``plan``.

    Returns
    -------
    plans : list of Plan
        One a grid (its ``seconds``: that grid's groups alone on the workers).
    seconds : float or None
        The predicted wall time of all the modelled groups together on the
        workers (None: the workers unknown); groups whose time is not
        modelled are left out of it.

    Raises
    ------
    TypeError, ValueError, BackendUnavailableError
        As ``run_many`` before anything runs.
    """
    target = _check_run_options(backend, dtype, executor)
    if workers is not None:
        workers = check_int("workers", workers, 1)
    elif executor in (None, "serial"):         # another executor's wall time is not predicted
        workers = _workers_of(executor, target)
    parts = [prepare_part(*_run_triple(r)) for r in runs]
    _distinct_stores(parts)
    items = []
    for k, p in enumerate(parts):
        _check_stored_settings(p.store, p.pred)
        p.store.check_writable(create=False)      # as run would, making nothing
        p.store.check_binding(p.grid.signature(p.pred.name), p.pred.defaults)
        done = {r["key"] for r in cell_records(p.store, p.pred)}
        items += _pending(k, p.pred, p.cells, done, target, dtype)
    items = _schedule(items, [p.pred for p in parts],       # split as run splits
                      workers or _workers_of(executor, target), target, dtype)
    plans = [_plan(p, [it for it in items if it.part == k], target, dtype, workers)
             for k, p in enumerate(parts)]
    modelled = [it.work for it in items if it.modelled]
    return plans, None if workers is None else predicted_wall(modelled, workers) if modelled \
        else 0.0


def _plan(part, items, target, dtype, workers):
    """The ``Plan`` of one part whose pending groups are ``items`` (largest first)."""
    pred = part.pred
    settings = [[p for _, _, p in it.group] for it in items]
    seconds = tuple(it.work if it.modelled else None for it in items)
    known = {}

    def memory(g):          # the bytes depend on the sizes and the group's shape only
        shape = (pred.group_key(g[0], "cuda"), len(g), len({s.get("seed") for s in g}))
        if shape not in known:
            known[shape] = pred.memory(g, target, dtype)
        return known[shape]

    model = pred.cost_model(target, dtype) if seconds and seconds[0] is not None else None
    return Plan(pred.name, part.store.path, target, len(part.cells),
                len(part.cells) - sum(len(g) for g in settings), tuple(map(len, settings)),
                seconds, tuple(memory(g) for g in settings), workers, model)


def cell_records(store, pred):
    """The records of ``store`` that are cells of ``pred``, in file order; others skipped.

    A record is a cell when it has a string ``key`` that is the key of its
    ``settings``, names ``pred`` as its ``predictor``, holds ``settings`` that
    ``pred`` accepts (``prepare``: names, types, ranges) and has each of
    ``pred.numbers`` as a number or null. Any other line (a foreign record, a
    field of the wrong type, a key edited apart from its settings: a damaged
    store) is skipped with one ``RuntimeWarning`` naming the file, the line and
    why, so that its cell is computed again; torn lines are skipped by
    ``ResultStore.load``. A cell stored twice keeps its first record; a later
    one whose numbers differ is named in a ``RuntimeWarning`` too (the store was
    written by two runs that disagree, or edited).

    Parameters
    ----------
    store : fastsd.store.ResultStore
    pred : fastsd.scan.predictors.Predictor

    Returns
    -------
    list of dict
    """
    records, skipped, first, conflicts = [], [], {}, []
    for number, record in store.load(lines=True):
        why = _not_a_cell(record, pred)
        if why is not None:
            skipped.append((number, why))
        elif record["key"] not in first:
            first[record["key"]] = number, record
            records.append(record)
        else:
            line, kept = first[record["key"]]
            differ = [n for n in pred.numbers if record.get(n) != kept.get(n)]
            if differ:
                conflicts.append((number, f"`{differ[0]}` {record.get(differ[0])!r} against "
                                          f"{kept.get(differ[0])!r} on line {line}, kept"))
    if skipped:
        warnings.warn(f"{store.path}: skipping {len(skipped)} record(s) that are no "
                      f"{pred.name!r} cell, to compute their cells again: "
                      f"{skipped_lines(skipped)}", RuntimeWarning, stacklevel=2)
    if conflicts:
        warnings.warn(f"{store.path}: {len(conflicts)} record(s) repeat a cell stored before "
                      f"with other numbers (two runs that disagree, or an edited store); the "
                      f"first record of each cell is used: {skipped_lines(conflicts)}",
                      RuntimeWarning, stacklevel=2)
    return records


def _not_a_cell(record, pred):
    """Why ``record`` is no stored cell of ``pred``; None when it is one."""
    for name, kind, what in (("key", str, "a string"), ("settings", dict, "an object")):
        if name not in record:
            return f"no `{name}`"
        if not isinstance(record[name], kind):
            return f"`{name}` is {record[name]!r:.40}, not {what}"
    if record.get("predictor") != pred.name:
        return f"`predictor` is {record.get('predictor')!r}"
    try:
        key = pred.key(pred.prepare(record["settings"]))
    except (ValueError, TypeError) as exc:
        return f"its settings: {exc}"
    if record["key"] != key:
        return f"`key` {record['key']!r:.60} is not its settings' ({key!r:.60})"
    for name in pred.numbers:
        value = record.get(name, ...)
        if value is ...:
            return f"no `{name}`"
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, (int, float))):
            return f"`{name}` is {value!r:.40}, not a number"
    return None


def _check_stored_settings(store, pred):
    """Refuse a store whose grid names settings ``pred`` does not have (an earlier fastsd's).

    Fig. 1a/1d, A1 and C1 stored their models and matrices outside the scan
    before they were scan parts, with settings their predictors no longer take
    (``gamma`` as an axis, ``tasks``): such a store is refused with what to do.
    """
    stored = store.grid_signature()
    if stored is None or stored.get("predictor") != pred.name:
        return                      # none yet, or another predictor's: bind says so
    known = set(pred.required) | set(pred.defaults)
    unknown = sorted((set(stored.get("fixed", {})) | set(stored.get("axes", []))) - known)
    if unknown:
        raise ValueError(
            f"`store` {store.path} holds {pred.name!r} cells with the setting "
            f"`{unknown[0]}`, which {pred.name!r} no longer has (written by an earlier "
            f"fastsd); use another store path, or delete it and {store.grid_path} to compute "
            f"its cells again.")


def _describe(error):
    from concurrent.futures.process import BrokenProcessPool

    if isinstance(error, BrokenProcessPool):
        return ("a worker process died: it was killed or ran out of memory, or it could not "
                "start (a script that calls run with executor=None needs its code under "
                "`if __name__ == \"__main__\":`, because each worker re-imports the script)")
    return f"{type(error).__name__}: {error}"


def load(store, *, xarray=False):
    """Load a scan's records as a pandas DataFrame or an xarray Dataset.

    Parameters
    ----------
    store : str, os.PathLike or fastsd.ResultStore
    xarray : bool, default False
        Return an ``xarray.Dataset`` whose dimensions are the grid's axes, in
        the grid's order, with coordinates sorted ascending, and whose
        variables are the numeric results (fixed settings go to ``attrs``;
        those left to None, resolved per cell like ``task_seed``, stay
        variables).
        A cell stored while an axis was still a fixed setting (before the
        grid was extended) has that setting as its coordinate. On the gamma
        axis, the lazy gamma ("lazy", 1e-5/sqrt(d)) is the coordinate 0.0.

    Returns
    -------
    pandas.DataFrame or xarray.Dataset
        The DataFrame has one row per cell (the first record of each key) and
        one column per record field.

    Raises
    ------
    ImportError
        When pandas (or, with ``xarray=True``, xarray) is not installed.
    FileNotFoundError
        When the store's file does not exist.
    ValueError
        With ``xarray=True``, for a store not bound to a grid.
    """
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError("fastsd.scan.load needs pandas; fix: pip install -e '.[analysis]' "
                          "in the fastsd checkout "
                          "(or use fastsd.ResultStore(path).load() for a list of dicts)") from exc
    store = _as_store(store)
    if not os.path.exists(store.path):
        raise FileNotFoundError(f"`store` must be an existing results file; got {store.path}, "
                                "which does not exist.")
    signature = store.grid_signature()
    pred = PREDICTORS.get(signature["predictor"]) if signature else None
    first = {}
    for record in (cell_records(store, pred) if pred is not None else store.load()):
        first.setdefault(record.get("key"), record)
    frame = pd.DataFrame(list(first.values()))
    if not xarray:
        return frame
    if importlib.util.find_spec("xarray") is None:       # DataFrame.to_xarray needs it
        raise ImportError("fastsd.scan.load(..., xarray=True) needs xarray; fix: "
                          "pip install -e '.[analysis]' in the fastsd checkout")
    if signature is None:
        raise ValueError(f"`store` {store.path} must be bound to a grid (written by "
                         "fastsd.scan.run) to load as xarray; it has no .grid.json.")
    axes = signature["axes"]
    variables = [c for c in frame.columns if c not in _META and c not in axes
                 and signature["fixed"].get(c) is None      # None: resolved per cell
                 and frame[c].map(lambda v: isinstance(v, (int, float, bool))).all()]
    table = frame[variables].copy()
    for axis in axes:
        table[axis] = [_coordinate(axis, coords, settings)
                       for coords, settings in zip(frame["coords"], frame["settings"])]
    ds = table.set_index(axes).to_xarray().sortby(axes)
    ds.attrs.update({k: v for k, v in signature["fixed"].items() if v is not None},
                    predictor=signature["predictor"])
    return ds


def _coordinate(axis, coords, settings):
    """Return a record's coordinate on ``axis``, from its ``coords`` and ``settings``.

    A cell written while ``axis`` was a fixed setting has no coordinate on
    it; its setting is the coordinate. On the gamma axis the numeric setting
    is used, so that the lazy gamma is 0.0 (``gamma_group``) either way.
    """
    from ..conventions import gamma_group

    if axis == "gamma":
        return gamma_group(settings["gamma"], settings.get("d", 1))
    return coords.get(axis, settings[axis])
