"""Reproduce a figure of the paper: run its settings, then let the figure draw and tabulate them.

``reproduce(figure)`` looks the figure up in ``fastsd.figures`` and runs its
full or quick settings, a ``fastsd.presets.Preset``, into ``out`` through
``run_preset``: every part with ``fastsd.scan.run`` into ``<out>/<name>.jsonl``
(resuming: finished cells are skipped, so a rerun computes nothing it has).
The figure's ``report`` then draws ``<out>/<name>.png`` and ``.svg`` and
returns the table the ``fastsd reproduce`` command prints.
"""
import errno
import os
import tempfile
import warnings

from . import _stop
from ._dispatch import target_backend, traits
from ._validation import check_choice
from .figures import get_figure


def run_preset(preset, out, *, progress=True, backend="auto", executor=None):
    """Run every part of ``preset`` into ``out``; return its records by predictor.

    Returns
    -------
    records : dict of str to list of dict
        The first stored record of each of the preset's cells, per part label.
    stores : list of str
        The store paths.
    """
    from .scan import cell_records, get_predictor, run
    from .scan.mainguard import workers_unavailable
    from .store import ResultStore

    stores = [ResultStore(os.path.join(out, preset.store_name(label) + ".jsonl"))
              for label, _, _ in preset.parts]
    side_by_side = (executor is None and len(preset.parts) > 1
                    and not traits(target_backend(backend)).one_process)
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
        keys = [pred.key(pred.prepare(s)) for _, s in grid.cells()]
        first = {r["key"]: r for r in cell_records(store, pred)}    # one record a cell
        records.setdefault(label, []).extend(first[k] for k in keys if k in first)
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
    from ._threads import cpu_count
    from .scan.executors import local_pool

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


def plan(figure, *, quick=False, out="results", backend="auto", executor=None, workers=None):
    """What ``reproduce`` would run, and its predicted time and memory; nothing is run or written.

    Each part of the figure's grid is planned by ``fastsd.scan.plan``: its
    cells, those already in ``<out>/<name>.jsonl``, and, for the "mlp" and
    "mlp_image" predictors, the predicted wall time on this machine (the
    measured cost model of ``fastsd.mlp.costs``) and the memory of the
    largest group; for "bayes" its time by shipped prices
    (``fastsd.bayes.predicted_seconds``). The parts' groups share the local workers (as
    ``run_preset`` runs them side by side), so the figure's time is that of
    all its groups on those workers. No folder, store, lock or figure is
    created.

    Parameters
    ----------
    figure, quick, out, backend, executor
        As ``reproduce``. With an executor of unknown size (a Dask client)
        the wall time is not predicted; the work (seconds on one thread) is.
    workers : int, optional
        Predict the wall time on this many single-threaded workers (a
        cluster's) instead of the executor's; >= 1.

    Returns
    -------
    dict
        JSON-ready: ``figure`` (the settings' name), ``title``, ``dry_run``
        (True), ``grid`` (True: every figure is a scan grid now; the key stays for
        readers of earlier output, where Fig. 1a/1d, A1 and C1 were not), ``parts`` (per part: its label and
        ``fastsd.scan.Plan.to_json()``), ``cells``, ``done``, ``remaining``,
        ``workers``, ``seconds`` and ``predicted_wall_s`` (the predicted wall time
        of the remaining cells, the same number; None where a part is not
        modelled), ``modelled_seconds`` (that
        of the modelled parts), ``memory_bytes`` and ``peak_memory_bytes``
        (the largest group, and the most that runs at once), ``available_bytes``.

    Raises
    ------
    ValueError
        For an unknown figure, or a store of a different grid.
    """
    from ._dispatch import BACKENDS
    from ._memory import available_bytes
    from .scan import plan as plan_grid
    from .scan.runner import predicted_wall

    fig = get_figure(figure)
    check_choice("backend", backend, BACKENDS)
    out = _check_out(out, create=False)
    spec = fig.QUICK if quick else fig.FULL
    result = {"figure": spec.name, "title": spec.title, "dry_run": True, "grid": True,
              "parts": [], "available_bytes": available_bytes()}
    plans = []
    for label, predictor, grid in spec.parts:
        store = os.path.join(out, spec.store_name(label) + ".jsonl")
        plans.append(plan_grid(grid, predictor, store, executor, backend=backend,
                               workers=workers))
        result["parts"].append(dict(plans[-1].to_json(), label=label))
    workers = plans[0].workers
    modelled = [s for p in plans if p.modelled for s in p.group_seconds]
    wall = None if workers is None else predicted_wall(modelled, workers) if modelled else 0.0
    memory = [m for p in plans for m in p.group_memory if m is not None]
    seconds = wall if all(p.modelled for p in plans) else None
    return dict(result, cells=sum(p.cells for p in plans), done=sum(p.done for p in plans),
                remaining=sum(p.remaining for p in plans), workers=workers,
                seconds=seconds, predicted_wall_s=seconds,
                modelled_seconds=wall, memory_bytes=max(memory) if memory else None,
                peak_memory_bytes=sum(sorted(memory, reverse=True)[:workers or 1])
                if memory else None)


def _check_out(out, create):
    """``out`` as a path, checked to be a folder fastsd can write in: made when ``create``,
    else (a dry run) its nearest existing folder is; a ValueError naming ``out`` otherwise."""
    out = os.fspath(out)
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"`out` must be a folder; got {out!r}, which is a file.")
    folder = out
    try:
        if create:
            os.makedirs(out, exist_ok=True)
        else:
            folder = os.path.abspath(out)
            while not os.path.exists(folder):
                folder = os.path.dirname(folder)
            if not os.path.isdir(folder):
                raise NotADirectoryError(errno.ENOTDIR, f"{folder} is a file")
    except OSError as exc:
        raise ValueError(f"`out` must be a folder that exists or can be created; got {out!r} "
                         f"({exc.strerror or exc}).") from None
    try:                                # a folder that cannot be written (read-only)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise ValueError(f"`out` must be a folder that fastsd can write in; got {out!r} "
                         f"(creating a file in {folder!r} failed: {exc.strerror or exc})."
                         ) from None
    return out


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
        For an unknown figure, an ``out`` that cannot be created, or a store
        of a different grid or different settings.
    BackendUnavailableError
        When ``backend`` cannot run here (before ``out`` is created).
    fastsd.scan.ScanError
        When some cells failed; the finished ones are saved.
    """
    from ._dispatch import BACKENDS, resolve_backend

    fig = get_figure(figure)
    check_choice("backend", backend, BACKENDS)
    resolve_backend(backend)            # one that cannot run here fails before `out` is made
    out = _check_out(out, create=True)  # fail on a bad folder before any training
    spec = fig.QUICK if quick else fig.FULL
    records, stores = run_preset(spec, out, progress=progress, backend=backend,
                                 executor=executor)
    heading, table, summary, figures = fig.report(spec, records, os.path.join(out, spec.name))
    return {"figure": spec.name, "title": spec.title, "heading": heading, "table": table,
            "summary": summary, "results": stores, "figures": figures}
