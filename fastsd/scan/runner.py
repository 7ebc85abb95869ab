"""Run a grid through a predictor into a resumable store (``run``, ``run_many``): lock the
stores, compute the groups the stores miss on the executor, write each record as its group
finishes."""
import contextlib
import os
import time
import warnings
from typing import Any, List, Optional, Sequence, Tuple

from .._dispatch import traits
from .. import _progress, _stop
from .._json import strict_json
from .._types import BackendName, DtypeLike
from .._validation import check_int
from .executors import submit_groups
from .grid import Grid
from .mainguard import workers_unavailable
from .parts import check_distinct_stores, check_run_options, prepare_parts
from .records import cell_records, check_stored_settings
from .records import StoreLike
from .scheduling import pending, predicted_wall, schedule, walltime_of, workers_of


class ScanError(RuntimeError):
    """Some cells of a scan failed; the finished ones are in the store."""


def run(grid: Grid, predictor: str, store: StoreLike, executor: Any = None, *,
        backend: BackendName = "auto", dtype: DtypeLike = None, threads: Optional[int] = None,
        progress: bool = True) -> List[dict]:
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


def run_many(runs: Sequence[Tuple[Grid, str, StoreLike]], executor: Any = None, *,
             backend: BackendName = "auto", dtype: DtypeLike = None,
             threads: Optional[int] = None, progress: bool = True) -> List[List[dict]]:
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
    check_run_options(backend, dtype, executor)
    parts = prepare_parts(runs)
    written, errors = run_parts(parts, executor, backend, dtype, threads, progress)
    for error in errors:
        if error is not None:
            raise error
    return written


def run_parts(parts, executor, backend, dtype, threads, progress):
    """Compute what the stores of ``parts`` miss, on one executor, in one queue of groups.

    The options are checked as ``run`` checks them, and the stores checked
    writable and locked, all of them before any group runs. Returns the
    records written per part and, per part, None or the ``ScanError`` of its
    failed cells (its finished cells saved).
    """
    target = check_run_options(backend, dtype, executor)
    if threads is not None:
        threads = check_int("threads", threads, 1)
    if executor is None and traits(target).one_process:
        executor = "serial"         # one GPU: one process drives it
    check_distinct_stores(parts)
    for p in parts:
        p.store.check_writable()            # before the locks and any group
    with contextlib.ExitStack() as stack:
        for p in parts:
            stack.enter_context(p.store.lock())
        stack.enter_context(_stop.scope())
        return _compute(parts, executor, target, backend, dtype, threads, progress)


def _compute(parts, executor, target, backend, dtype, threads, progress):
    """The part of ``run_parts`` after validation, with the stores locked: compute what is
    missing."""
    fresh = [p.store.grid_signature() is None for p in parts]
    for p in parts:
        check_stored_settings(p.store, p.pred)
    items = [it for k, p in enumerate(parts)
             for it in pending(k, p.pred, p.cells,
                               {r["key"] for r in cell_records(p.store, p.pred)}, target, dtype)]
    for it in items:            # what a group's run would refuse, refused before any runs
        parts[it.part].pred.check([s for _, _, s in it.group], target, dtype)
    preds = [p.pred for p in parts]
    items = schedule(items, preds, workers_of(executor, target), target, dtype,
                     walltime_of(executor))        # refuses what outlasts a walltime
    for p in parts:
        p.store.bind(p.grid.signature(p.pred.name), p.pred.defaults)
    jobs = [(preds[it.part].name, [s for _, _, s in it.group], backend, dtype) for it in items]
    if executor is None and jobs:
        fallback = workers_unavailable()
        if fallback is not None:
            warnings.warn(fallback, RuntimeWarning, stacklevel=5)
            executor = "serial"

    written, failed = [[] for _ in parts], [[] for _ in parts]
    timed = [[0.0, 0.0] for _ in parts]     # predicted and measured CPU seconds of groups
    n_done = [len(p.cells) for p in parts]
    for it in items:
        n_done[it.part] -= len(it.group)
    workers = workers_of(executor, target)
    with contextlib.ExitStack() as stack:
        bars = [_bar(stack, progress, p, [it for it in items if it.part == k], n_done[k],
                     workers, executor, items if k == 0 else None)
                for k, p in enumerate(parts)]
        for i, outcome, error in submit_groups(executor, jobs, threads):
            it = items[i]
            p = parts[it.part]
            if error is not None:
                failed[it.part].append((it.group, error))
                continue
            records, cpu = outcome
            if it.modelled:
                timed[it.part][0] += it.work
                timed[it.part][1] += cpu
            for (key, coords, prepared), record in zip(it.group, records):
                record = strict_json(dict(
                    record, key=key, predictor=p.pred.name, coords=coords, settings=prepared,
                    finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
                with _stop.writing():
                    p.store.write(record)
                written[it.part].append(record)
            bars[it.part].set_description_str(
                _bar_text(p, n_done[it.part] + len(written[it.part])), refresh=False)
            _progress.advance(bars[it.part], it.work)
    for p, (predicted, measured) in zip(parts, timed):     # the time models' feedback
        p.pred.record(predicted, measured, target, dtype)
    errors = [None if not failed[k] else
              _failure(p, fresh[k], failed[k], n_done[k] + len(written[k]))
              for k, p in enumerate(parts)]
    return written, errors


def _bar_text(part, done, tail=""):
    """A part's bar's words: its store's name (a figure and its part, as "fig1e-quick-mlp"),
    the predictor where the name lacks it, and the cells done."""
    stem = os.path.basename(part.store.path).removesuffix(".jsonl")
    name = stem if part.pred.name in stem else f"{stem} ({part.pred.name})"
    return f"{name}: {done}/{len(part.cells)} cells{tail}"


def _bar(stack, progress, part, items, n_done, workers, executor, run_items=None):
    """A part's progress bar, entered on ``stack``, named by its store and predictor
    (``_bar_text``). It counts predicted work (seconds on one thread, where the predictor has
    a model), so that its percentage and tqdm's time left follow the time, not the cell
    count. The first part's bar (``run_items``: every part's items) also shows the predicted
    wall time of the run's modelled cells on local workers: the part's own where it is the
    only part, else that of all parts, which share the workers."""
    modelled = [it.work for it in run_items or () if it.modelled]
    first = ""
    if modelled and executor in (None, "serial"):
        n_parts = len({it.part for it in run_items})
        first = (f"; predicted {_progress.clock(predicted_wall(modelled, workers))}"
                 + (f" for the {n_parts} parts" if n_parts > 1 else "")
                 + f" on {workers} worker{'s' * (workers > 1)}")
    return stack.enter_context(_progress.bar(
        progress, total=sum(it.work for it in items) if items else 1, initial=0 if items else 1,
        smoothing=0, desc=_bar_text(part, n_done, first),
        bar_format="{desc} {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]"))


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


def _describe(error):
    from concurrent.futures.process import BrokenProcessPool

    if isinstance(error, BrokenProcessPool):
        return ("a worker process died: it was killed or ran out of memory, or it could not "
                "start (a script that calls run with executor=None needs its code under "
                "`if __name__ == \"__main__\":`, because each worker re-imports the script)")
    return f"{type(error).__name__}: {error}"

