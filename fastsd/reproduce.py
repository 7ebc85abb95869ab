"""Reproduce a figure of the paper: run its settings, then let the figure draw and tabulate them.

``reproduce(figure)`` looks the figure up in ``fastsd.figures`` and runs its
full or quick settings into ``out``: a scan grid (``fastsd.presets.Preset``)
through ``run_preset``, every part with ``fastsd.scan.run`` into
``<out>/<name>.jsonl`` (resuming: finished cells are skipped); a figure that is
no grid (Fig. 1a/1d, A1, C1) through its ``collect``, which stores one record
per unit (a trained model, one (L, P)) in ``<out>/<name>.jsonl`` with what its
plot needs (``fastsd.figures._units``), so a rerun computes nothing it has.
The figure's ``report`` then draws ``<out>/<name>.png`` and ``.svg`` and
returns the table the ``fastsd reproduce`` command prints.
"""
import os
import warnings

from . import _stop
from ._validation import check_choice
from .figures import get_figure
from .presets import Preset


def run_preset(preset, out, *, progress=True, backend="auto", executor=None):
    """Run every part of ``preset`` into ``out``; return its records by predictor.

    Returns
    -------
    records : dict of str to list of dict
        The first stored record of each of the preset's cells, per part label.
    stores : list of str
        The store paths.
    """
    from .scan import get_predictor, run
    from .scan.mainguard import workers_unavailable
    from .store import ResultStore

    stores = [ResultStore(os.path.join(out, preset.store_name(label) + ".jsonl"))
              for label, _, _ in preset.parts]
    side_by_side = executor is None and len(preset.parts) > 1 and backend != "cuda"
    if side_by_side:
        fallback = workers_unavailable()
        if fallback is not None:
            warnings.warn(fallback, RuntimeWarning, stacklevel=3)
            side_by_side, executor = False, "serial"
    with _stop.scope():
        if side_by_side:
            _run_parts(preset, stores, backend, progress)
        else:
            for (_, predictor, grid), store in zip(preset.parts, stores):
                run(grid, predictor, store, executor, backend=backend, progress=progress)
    records = {}
    for (label, predictor, grid), store in zip(preset.parts, stores):
        pred = get_predictor(predictor)
        keys = {pred.key(pred.prepare(s)) for _, s in grid.cells()}
        first = {}
        for r in store.load():
            if r.get("key") in keys:
                first.setdefault(r["key"], r)
        records.setdefault(label, []).extend(first.values())
    return records, [store.path for store in stores]


def _run_parts(preset, stores, backend, progress):
    """Run the parts of ``preset`` side by side, one thread each, on one pool of workers.

    The parts share single-threaded workers, so that a part's last, largest
    groups do not leave cores idle while the next part waits. On Ctrl-C or
    SIGTERM the main thread asks every part to stop (``fastsd._stop``) before
    it waits for them: none writes another cell, and the workers are
    terminated.
    """
    from concurrent.futures import ThreadPoolExecutor

    from .scan import run
    from .scan.executors import cpu_count, local_pool

    with local_pool(cpu_count(), 1) as pool, ThreadPoolExecutor(len(stores)) as parts:
        try:
            runs = [parts.submit(run, grid, predictor, store, pool, backend=backend,
                                 progress=progress, threads=1)
                    for (_, predictor, grid), store in zip(preset.parts, stores)]
            for r in runs:
                r.result()
        except KeyboardInterrupt:
            _stop.request()
            raise


def reproduce(figure, *, quick=False, out="results", progress=True, backend="auto",
              executor=None):
    """Run, draw and tabulate one figure of the paper.

    Parameters
    ----------
    figure : str
        One of ``fastsd.figures.FIGURES``.
    quick : bool, default False
        Use the figure's reduced settings (minutes on a laptop).
    out : str or os.PathLike, default "results"
        Folder of the stores and figures; created if missing.
    progress : bool, default True
        Progress bars on stderr: over cells, or over units and training steps.
    backend : {"auto", "numpy", "cpu", "cuda"}
    executor : optional
        As in ``fastsd.scan.run``.

    Returns
    -------
    dict
        JSON-ready: ``figure`` (the settings' name, e.g. "fig1c-quick"),
        ``title``, ``heading`` and ``table`` (the text the CLI prints),
        ``summary`` (the table as data), ``results`` (store paths) and
        ``figures`` (image paths).

    Raises
    ------
    ValueError
        For an unknown figure, or a store of a different grid or different
        settings.
    OSError
        When ``out`` cannot be created.
    fastsd.scan.ScanError
        When some cells failed; the finished ones are saved.
    """
    from ._dispatch import BACKENDS

    fig = get_figure(figure)
    check_choice("backend", backend, BACKENDS)
    out = os.fspath(out)
    os.makedirs(out, exist_ok=True)     # fail on a bad folder before any training
    spec = fig.QUICK if quick else fig.FULL
    if isinstance(spec, Preset):
        records, stores = run_preset(spec, out, progress=progress, backend=backend,
                                     executor=executor)
    else:
        records, stores = fig.collect(spec, out, progress=progress)
    heading, table, summary, figures = fig.report(spec, records, os.path.join(out, spec.name))
    return {"figure": spec.name, "title": spec.title, "heading": heading, "table": table,
            "summary": summary, "results": stores, "figures": figures}
