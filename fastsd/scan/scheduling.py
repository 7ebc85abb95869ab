"""The order a scan's groups go to the executor: each group's predicted work (``Item``),
largest first, the groups that would set the critical path or outlast a cluster job's
walltime split (``schedule``), and the wall time that order takes on a number of workers
whose jobs may end at a walltime (``predicted_wall``, ``lifetimes``, ``workers_of``,
``walltime_of``)."""
import heapq
from typing import NamedTuple

from .._dispatch import traits
from .._threads import cpu_count
from .executors import is_dask_client


class Item(NamedTuple):
    """One group of a run: its work, whether that is predicted seconds (``modelled``) or a
    relative cost, its part's index and its cells, (key, coords, prepared settings) each."""

    work: float
    modelled: bool
    part: int
    group: list


def pending(k, pred, cells, done, target, dtype):
    """The groups of part ``k``'s cells not in ``done``, as ``Item``s.

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
        return Item(seconds, True, k, group)
    return Item(sum(pred.cost(p) for _, _, p in group), False, k, group)


def schedule(items, preds, workers, target, dtype, walltime=None):
    """The ``Item``s of the parts whose predictors are ``preds``, in the order the executor
    gets them.

    Seconds and relative costs do not compare: the groups whose time is not
    modelled go first (each part's largest first), then the modelled ones,
    largest first. On ``workers`` > 1, the splittable groups of each unit
    (all the modelled seconds; one part's relative costs) that would set
    the critical path are halved (``_split_long``). On jobs that end at a
    ``walltime`` (seconds), each modelled group must fit in ``WALLTIME_FIT`` of it
    (``fit_walltime``: split, or refused).

    Raises
    ------
    ValueError
        Naming ``walltime``, for a group that cannot be split and is predicted longer
        than ``WALLTIME_FIT`` of it.
    """
    if walltime is not None:
        items = fit_walltime(items, preds, walltime, target, dtype)
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
    it gives alone. ``items`` are ``Item``s of one unit of work, ``preds`` the parts'
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


#: The part of a cluster job's walltime one group may be predicted to take; the rest is the
#: margin for a node slower or busier than the prediction's and for the job's start.
WALLTIME_FIT = 0.5


def fit_walltime(items, preds, walltime, target, dtype):
    """``items`` with each modelled group predicted longer than ``WALLTIME_FIT`` of
    ``walltime`` (seconds) halved until it fits: a group cut off by its job's walltime
    would be run again from its start, and again, until Dask gave up on it.

    Splitting changes no record (``_split_long``). Groups whose time is not modelled are
    left as they are.

    Raises
    ------
    ValueError
        Naming ``walltime``, for a group of one cell (or of a predictor that does not split)
        predicted longer than the fit; nothing has run.
    """
    from .._progress import clock

    fit = WALLTIME_FIT * walltime

    def pieces(it):
        if not it.modelled or it.work <= fit:
            return [it]
        if len(it.group) > 1 and preds[it.part].splittable:
            half = len(it.group) // 2
            return [p for part in (it.group[:half], it.group[half:])
                    for p in pieces(_item(preds[it.part], it.part, part, target, dtype))]
        raise ValueError(
            f"`walltime` {clock(walltime)} is too short for the cells {it.group[0][1]} "
            f"({preds[it.part].name}, {len(it.group)} cell(s) that run as one group), "
            f"predicted at {clock(it.work)} on one thread: a group must fit in "
            f"{WALLTIME_FIT:g} of a job's walltime (the margin for a slower node and the "
            f"job's start); fix: a walltime of at least {clock(it.work / WALLTIME_FIT)} "
            f"(docs/howto/cluster.md). Nothing was run.")
    return [p for it in items for p in pieces(it)]


def _finish(seconds, workers, walltime):
    """Per worker: (when it finishes, its job lifetimes), for jobs of ``seconds`` each,
    largest first, on ``workers`` that each take the next job when free. A group that would
    run past the worker's job's ``walltime`` (None: no limit) is cut off there and run again
    from its start on the job that replaces it (the queue's wait not counted)."""
    n = max(1, min(workers, len(seconds)))
    free = [(0.0, k, 0.0, 1) for k in range(n)]        # (free at, worker, job start, lifetimes)
    for s in sorted(seconds, reverse=True):
        t, k, start, lives = heapq.heappop(free)
        if walltime is not None and t + s > start + walltime and s <= walltime:
            t = start = start + walltime
            lives += 1
        heapq.heappush(free, (t + s, k, start, lives))
    return [(t, lives) for t, _, _, lives in free]


def predicted_wall(seconds, workers, walltime=None):
    """Wall time of jobs of ``seconds`` each, largest first, on ``workers`` that each take
    the next job when free (how the scan's executors hand out its groups), on cluster jobs
    that end at ``walltime`` seconds (None: no limit; ``_finish``)."""
    return max(t for t, _ in _finish(seconds, workers, walltime))


def lifetimes(seconds, workers, walltime):
    """The job lifetimes of ``walltime`` seconds the busiest worker runs through (1: its first
    job is enough; each one more is a job replaced at its walltime), for jobs of ``seconds``
    each handed out as ``predicted_wall`` hands them out."""
    return max(lives for _, lives in _finish(seconds, workers, walltime))


def walltime_of(executor):
    """Seconds a cluster's job runs before its scheduler ends it (a ``jobqueue_client``'s
    ``walltime``, ``fastsd.scan.cluster``); None for no limit and for other executors."""
    return getattr(executor, "walltime", None) if is_dask_client(executor) else None


def workers_of(executor, target):
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

