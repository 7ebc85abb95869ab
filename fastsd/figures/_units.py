"""Resumable units of the figures that are no scan grid (Fig. 1a/1d, A1, C1).

Such a figure's settings are a ``Units`` (its store's name, title and shared
settings); its ``collect`` computes the units through ``run_units``, which
keeps one record per unit (a trained model, one (L, P) of the max-margin
matrix) in a ``fastsd.store.ResultStore``, bound like a scan's store to the
settings the units share, and computes only the units the store lacks, with a
progress bar over units. Records come back as the store gives them (through
JSON), so a figure drawn on the first run and on a rerun is drawn from the
same numbers.
"""
import json
import os
import time
from dataclasses import dataclass

from .. import _progress, _stop
from .._json import strict_json
from ..store import ResultStore


@dataclass(frozen=True)
class Units:
    """The settings of a figure that is no scan grid: its name, title and shared settings.

    ``name`` (the store's file stem, e.g. "figC1-quick") and ``title`` are as in
    ``fastsd.presets.Preset``; ``settings`` is the JSON-ready dict the figure's
    units are computed with.
    """

    name: str
    title: str
    settings: dict

    def store(self, out):
        """The path of the figure's store in the folder ``out``: ``<out>/<name>.jsonl``."""
        return os.path.join(out, self.name + ".jsonl")


def unit_key(unit):
    """The store key of a unit: its settings as ``name=value`` pairs, e.g. ``"L=256,P=1024"``."""
    return ",".join(f"{k}={v}" for k, v in unit.items())


def run_units(path, kind, fixed, units, compute, *, group=None, progress=True, desc=None):
    """Compute the units ``path`` lacks, store each as it finishes; return every unit's record.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.jsonl`` store.
    kind : str
        What computes the units (e.g. "max_margin"); the store's predictor.
    fixed : dict
        JSON-ready settings shared by every unit. The store is bound to them
        (``ResultStore.bind``), so a store of other settings is refused.
    units : sequence of dict
        Each unit's own settings, all with the same names in the same order
        (the store's axes); they name the unit's key (``unit_key``).
    compute : callable
        ``compute(list of unit dicts) -> list of dict``: the records of the
        given units, in their order (without ``key``; the unit's settings are
        added).
    group : callable, optional
        ``group(unit)`` -> hashable: the missing units with one group value
        are passed to ``compute`` together (e.g. models trained in lockstep);
        default each unit alone.
    progress : bool, default True
        A tqdm bar over units on stderr.
    desc : str, optional
        The bar's label; default ``kind``.

    Returns
    -------
    list of dict
        One record per unit, in the order of ``units``: the first stored
        record of its key, as read back from JSON.

    Raises
    ------
    ValueError
        When the store belongs to other settings (see ``ResultStore.bind``).
    fastsd.StoreLockedError
        When another run is writing the store (``ResultStore.lock``).
    KeyboardInterrupt
        On Ctrl-C, or once a stop was requested (``fastsd._stop``, SIGTERM
        through the ``fastsd`` command): no unit is written after it.
    """
    store = ResultStore(path)
    units = [dict(u) for u in units]
    with store.lock(), _stop.scope():
        store.bind({"predictor": kind, "fixed": fixed, "axes": list(units[0]) if units else []})
        stored = _first_by_key(store.load())
        missing = {}
        for u in units:
            if unit_key(u) not in stored:
                missing.setdefault(group(u) if group else unit_key(u), []).append(u)
        with _progress.bar(progress, total=len(units), unit="unit", desc=desc or kind,
                           initial=len(units) - sum(map(len, missing.values()))) as bar:
            for todo in missing.values():
                _stop.check()
                for u, record in zip(todo, compute(todo), strict=True):
                    record = strict_json({**record, **u, "key": unit_key(u), "predictor": kind,
                                          "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                       time.gmtime())})
                    with _stop.writing():
                        store.write(record)
                    stored[record["key"]] = json.loads(json.dumps(record))
                    bar.update(1)
    return [stored[unit_key(u)] for u in units]


def _first_by_key(records):
    """{key: the first record of that key} (a unit stored twice, by two racing runs, counts once)."""
    first = {}
    for r in records:
        first.setdefault(r.get("key"), r)
    return first


def train_models(task, units, settings, progress, backend="auto"):
    """Train one model per unit (its ``gamma``) on ``task`` in lockstep, with ``settings``.

    ``settings`` holds the ensemble's ``seed``, ``width``, ``steps`` and
    ``eval_every``; returns ``fastsd.mlp.train_ensemble``'s results on
    ``backend``, in the order of ``units``.
    """
    from ..mlp import train_ensemble

    return train_ensemble(task, [u["gamma"] for u in units], settings["seed"],
                          width=settings["width"], steps=settings["steps"],
                          eval_every=settings["eval_every"], backend=backend,
                          progress=progress)


def trained_on(result):
    """The backend, path and dtype a ``TrainResult`` was trained with, for its unit's record."""
    return {k: result.config[k] for k in ("backend", "path", "dtype")}
