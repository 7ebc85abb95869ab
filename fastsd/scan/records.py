"""Reading a scan's store: its cells' records (``cell_records``), a check that an earlier
fastsd's store is not taken for this one's, and ``load`` as a DataFrame or a Dataset."""
import importlib.util
import os
import warnings
from typing import Any, Union

from ..store import ResultStore, skipped_lines
from .predictors import PREDICTORS

#: A scan's store: its path, or the store itself.
StoreLike = Union[str, "os.PathLike[str]", ResultStore]

#: Record fields that describe a run rather than its result, left out of xarray variables.
_META = ("key", "predictor", "coords", "settings", "history", "finished_at", "version",
         "backend", "dtype", "path", "task", "init")


def as_store(store: StoreLike) -> ResultStore:
    """``store`` as a ``ResultStore`` (a path opens one; a ResultStore is itself)."""
    if isinstance(store, ResultStore):
        return store
    try:
        return ResultStore(store)
    except TypeError:
        raise TypeError(f"`store` must be a path or a fastsd.ResultStore; got "
                        f"{type(store).__name__} {store!r}.") from None


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


def check_stored_settings(store, pred):
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


def load(store: StoreLike, *, xarray: bool = False) -> Any:
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
    store = as_store(store)
    if not os.path.exists(store.path):
        raise FileNotFoundError(f"`store` must be an existing results file; got {store.path}, "
                                "which does not exist.")
    signature = store.grid_signature()
    pred = PREDICTORS.get(signature["predictor"]) if signature else None
    first: dict = {}
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
