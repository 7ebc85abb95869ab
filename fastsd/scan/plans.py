"""A scan's dry run: what ``run`` would compute and what it would take (``plan``,
``plan_many``, each grid's ``ScanPlan``), found without running or writing anything."""
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

from .. import _probe
from .._threads import cpu_count
from .._types import BackendName, DtypeLike
from .._validation import check_float, check_int
from .grid import Grid
from .parts import check_distinct_stores, check_run_options, prepare_parts
from .records import cell_records, check_stored_settings
from .records import StoreLike
from .scheduling import lifetimes, pending, predicted_wall, schedule, walltime_of, workers_of


@dataclass(frozen=True)
class ScanPlan:
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
    busy_cores : float or None
        Cores' worth of other processes' work on this machine when it was planned
        (``fastsd._probe.busy_cores``), which local workers would share the cores with;
        None where the workers are not this machine's (a cluster's, another executor's).
    walltime : float or None
        Seconds a cluster job runs before its scheduler ends it: each group was made to
        fit in ``fastsd.scan.scheduling.WALLTIME_FIT`` of it, and ``seconds`` counts the
        jobs' replacements at their walltime. None: no limit.
    """

    predictor: str
    store: str
    backend: str
    cells: int
    done: int
    group_sizes: tuple
    group_seconds: tuple
    group_memory: tuple
    workers: Optional[int] = None
    cost_model: Optional[str] = None
    busy_cores: Optional[float] = None
    walltime: Optional[float] = None

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
        return predicted_wall(self.group_seconds, self.workers, self.walltime) \
            if self.group_seconds else 0.0

    @property
    def lifetimes(self):
        """Job lifetimes of ``walltime`` the busiest worker runs through (1: no job is
        replaced at its walltime; ``fastsd.scan.scheduling.lifetimes``); None without a
        walltime, a model of the time or the workers."""
        if self.walltime is None or self.seconds is None:
            return None
        return lifetimes(self.group_seconds, self.workers, self.walltime) \
            if self.group_seconds else 0

    @property
    def slowdown(self):
        """Wall time at the load it was planned under over the quiet machine's
        (``fastsd._probe.slowdown`` of the workers that would run at once beside
        ``busy_cores``); 1 where the load is not this machine's or not known."""
        return _slowdown(self.busy_cores, self.workers, len(self.group_sizes))

    @property
    def seconds_now(self):
        """``seconds`` at the load the plan was made under (None: not modelled)."""
        return None if self.seconds is None else self.seconds * self.slowdown

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
                "seconds_now": self.seconds_now, "busy_cores": self.busy_cores,
                "memory_bytes": self.memory, "peak_memory_bytes": self.peak_memory,
                "cost_model": self.cost_model, "walltime_s": self.walltime,
                "job_lifetimes": self.lifetimes}


def _slowdown(busy, workers, groups):
    if busy is None or not workers or not groups:
        return 1.0
    return _probe.slowdown(min(workers, groups), busy, cpu_count())


def wall_now(plans, wall):
    """The predicted wall time ``wall`` of ``plan_many``'s plans together, at the load they
    were planned under (as ``ScanPlan.seconds_now``; None where ``wall`` is)."""
    if wall is None or not plans:
        return wall
    groups = sum(len(p.group_sizes) for p in plans)
    return wall * _slowdown(plans[0].busy_cores, plans[0].workers, groups)


def plan(grid: Grid, predictor: str, store: StoreLike, executor: Any = None, *,
         backend: BackendName = "auto", dtype: DtypeLike = None, workers: Optional[int] = None,
         walltime: Optional[float] = None) -> "ScanPlan":
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
    walltime : float, optional
        Plan it on cluster jobs that end after this many seconds, > 0 (default: the
        executor's, a ``jobqueue_client``'s ``walltime``; else no limit): groups split to
        fit it as ``run`` splits them, and the jobs' replacements counted.

    Returns
    -------
    ScanPlan
        Its ``seconds`` are the quiet machine's; ``seconds_now`` adds the load of this
        machine's other processes, measured now (half a second), for local workers.

    Raises
    ------
    TypeError, ValueError, BackendUnavailableError
        As ``run`` before anything runs; ValueError naming ``walltime`` also for a group
        predicted longer than it allows (``fastsd.scan.scheduling.fit_walltime``).
    """
    plans, _ = plan_many([(grid, predictor, store)], executor, backend=backend, dtype=dtype,
                         workers=workers, walltime=walltime)
    return plans[0]


def plan_many(runs: Sequence[Tuple[Grid, str, StoreLike]], executor: Any = None, *,
              backend: BackendName = "auto", dtype: DtypeLike = None,
              workers: Optional[int] = None,
              walltime: Optional[float] = None) -> Tuple[List["ScanPlan"], Optional[float]]:
    """What ``run_many(runs, ...)`` would compute, and its predicted wall time.

    As ``plan`` for each ``(grid, predictor, store)``, with the groups split
    and handed out as ``run_many`` hands them out: all grids' groups in one
    queue on the same workers.

    Parameters
    ----------
    runs : sequence of (Grid, str, store)
    executor, backend, dtype, workers, walltime
        As ``plan``.

    Returns
    -------
    plans : list of ScanPlan
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
    target = check_run_options(backend, dtype, executor)
    walltime = walltime_of(executor) if walltime is None else \
        check_float("walltime", walltime, positive=True)
    busy = None
    if workers is not None:
        workers = check_int("workers", workers, 1)
    elif executor in (None, "serial"):         # another executor's wall time is not predicted
        workers = workers_of(executor, target)
        busy = _probe.busy_cores()              # the workers would share this machine
    parts = prepare_parts(runs)
    check_distinct_stores(parts)
    items = []
    for k, p in enumerate(parts):
        check_stored_settings(p.store, p.pred)
        p.store.check_writable(create=False)      # as run would, making nothing
        p.store.check_binding(p.grid.signature(p.pred.name), p.pred.defaults)
        done = {r["key"] for r in cell_records(p.store, p.pred)}
        items += pending(k, p.pred, p.cells, done, target, dtype)
    items = schedule(items, [p.pred for p in parts],        # split as run splits
                     workers or workers_of(executor, target), target, dtype, walltime)
    plans = [_plan(p, [it for it in items if it.part == k], target, dtype, workers, busy,
                   walltime)
             for k, p in enumerate(parts)]
    modelled = [it.work for it in items if it.modelled]
    return plans, None if workers is None else \
        predicted_wall(modelled, workers, walltime) if modelled else 0.0


def _plan(part, items, target, dtype, workers, busy, walltime):
    """The ``ScanPlan`` of one part whose pending groups are ``items`` (largest first)."""
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
    return ScanPlan(pred.name, part.store.path, target, len(part.cells),
                    len(part.cells) - sum(len(g) for g in settings), tuple(map(len, settings)),
                    seconds, tuple(memory(g) for g in settings), workers, model, busy,
                    walltime)

