"""What a run is given, checked before anything runs: its options, and each of its grids
with its predictor and store as a ``Part`` whose cells are validated and keyed."""
import os
import warnings
from dataclasses import dataclass

from .._dispatch import BACKENDS, check_dtype, target_backend
from .._validation import check_choice
from .executors import check_executor
from .grid import Grid
from ..store import ResultStore
from .predictors import get_predictor
from .records import as_store

#: The largest grid ``run`` takes (a slip such as three 1000-value axes is 1e9 cells).
MAX_CELLS = 1_000_000


def check_run_options(backend, dtype, executor):
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
    store = as_store(store)
    return Part(grid, pred, store, prepared_cells(grid, pred))


def prepare_parts(runs):
    """The ``Part`` of each ``(grid, predictor, store)`` of ``runs``, in order."""
    return [prepare_part(*_run_triple(r)) for r in runs]


def _run_triple(run):
    try:
        grid, predictor, store = run
    except (TypeError, ValueError):
        raise TypeError(f"each of `runs` must be a (grid, predictor, store) triple; got "
                        f"{run!r}.") from None
    return grid, predictor, store


def check_distinct_stores(parts):
    """Refuse two parts on one store file (ValueError)."""
    seen = set()
    for p in parts:
        path = os.path.realpath(p.store.path)
        if path in seen:
            raise ValueError(f"each run must have its own store; got {p.store.path!r} twice.")
        seen.add(path)


def prepared_cells(grid, pred):
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

