"""Reproduce a figure of the paper: run its settings, then let the figure draw and tabulate them.

``reproduce(figure)`` looks the figure up in ``fastsd.figures`` and runs its
full or quick settings, a ``fastsd.presets.Preset``, into ``out`` through
``run_presets``: every part into ``<out>/<name>.jsonl`` (resuming: finished
cells are skipped, so a rerun computes nothing it has), all parts' groups in
one queue on one pool (``fastsd.scan.run_many``). ``reproduce_all`` does the
same for several figures at once.
The figure's ``report`` then draws ``<out>/<name>.png`` and ``.svg`` and
returns the table the ``fastsd reproduce`` command prints.
"""
import errno
import os
import tempfile

from ._validation import check_choice
from .figures import get_figure


def run_presets(presets, out, *, progress=True, backend="auto", executor=None):
    """Run every part of every preset into ``out``, all on one pool of workers.

    Every group of every part goes to one queue, largest first
    (``fastsd.scan.run_many``), so that the workers do not drain while one
    part's or one figure's last, largest groups finish.

    Returns
    -------
    list of (dict, list, ScanError or None)
        Per preset: its records by part label (the first stored record of
        each of its cells), its store paths, and the error of its failed
        cells, if any (the finished cells are saved).
    """
    from .scan import cell_records
    from .scan.parts import prepare_part
    from .scan.runner import run_parts

    runs = [(preset, label, prepare_part(grid, predictor,
                                  os.path.join(out, preset.store_name(label) + ".jsonl")))
            for preset in presets for label, predictor, grid in preset.parts]
    _, errors = run_parts([p for _, _, p in runs], executor, backend, None, None, progress)
    results = {id(preset): ({}, [], None) for preset in presets}
    for (preset, label, part), error in zip(runs, errors):
        records, stores, first_error = results[id(preset)]
        first = {r["key"]: r for r in cell_records(part.store, part.pred)}  # one record a cell
        records.setdefault(label, []).extend(first[k] for k in part.cells if k in first)
        stores.append(part.store.path)
        results[id(preset)] = (records, stores, first_error or error)
    return [results[id(preset)] for preset in presets]


def plan(figure, *, quick=False, out="results", backend="auto", executor=None, workers=None,
         walltime=None):
    """What ``reproduce`` would run, and its predicted time and memory; nothing is run or written.

    Each part of the figure's grid is planned by ``fastsd.scan.plan``: its
    cells, those already in ``<out>/<name>.jsonl``, and, for the "mlp" and
    "mlp_image" predictors, the predicted wall time on this machine (the
    measured cost model of ``fastsd.mlp.costs``) and the memory of the
    largest group; for "bayes" its time by shipped prices
    (``fastsd.bayes.predicted_seconds``). The parts' groups share the workers
    in one queue (as ``run_presets`` runs them), so the figure's time is that
    of all its groups on those workers (``fastsd.scan.plan_many``).
    No folder, store, lock or figure is created.

    Parameters
    ----------
    figure, quick, out, backend, executor
        As ``reproduce``. With an executor of unknown size (a Dask client)
        the wall time is not predicted; the work (seconds on one thread) is.
    workers : int, optional
        Predict the wall time on this many single-threaded workers (a
        cluster's) instead of the executor's; >= 1.
    walltime : float, optional
        The cluster jobs' walltime in seconds (``fastsd.scan.plan``): groups split to fit
        it, and the wall time and job lifetimes counted on jobs replaced at it.

    Returns
    -------
    dict
        JSON-ready: ``figure`` (the settings' name), ``title``, ``dry_run``
        (True), ``grid`` (True: every figure is a scan grid now; the key stays for
        readers of earlier output, where Fig. 1a/1d, A1 and C1 were not), ``parts`` (per part: its label and
        ``fastsd.scan.ScanPlan.to_json()``), ``cells``, ``done``, ``remaining``,
        ``workers``, ``seconds`` and ``predicted_wall_s`` (the predicted wall time
        of the remaining cells, the same number; None where a part is not
        modelled), ``modelled_seconds`` (that
        of the modelled parts), ``memory_bytes`` and ``peak_memory_bytes``
        (the largest group, and the most that runs at once), ``available_bytes``,
        ``walltime_s`` and ``job_lifetimes`` (the walltime, and the job lifetimes of it
        the busiest worker runs through, ``fastsd.scan.scheduling.lifetimes``; None
        without a walltime or a model of the time).

    Raises
    ------
    ValueError
        For an unknown figure, a store of a different grid, or a group too long for
        ``walltime``.
    """
    from ._memory import available_bytes
    from .scan.plans import plan_many, wall_now

    spec, out, runs = _plan_runs(figure, quick, out, backend)
    plans, wall = plan_many(runs, executor, backend=backend, workers=workers,
                            walltime=walltime)
    result = {"figure": spec.name, "title": spec.title, "dry_run": True, "grid": True,
              "parts": [dict(p.to_json(), label=label)
                        for p, (label, _, _) in zip(plans, spec.parts)],
              "available_bytes": available_bytes()}
    workers = plans[0].workers
    memory = [m for p in plans for m in p.group_memory if m is not None]
    seconds = wall if all(p.modelled for p in plans) else None
    return dict(result, cells=sum(p.cells for p in plans), done=sum(p.done for p in plans),
                remaining=sum(p.remaining for p in plans), workers=workers,
                seconds=seconds, predicted_wall_s=seconds,
                predicted_wall_now_s=None if seconds is None else wall_now(plans, seconds),
                busy_cores=plans[0].busy_cores,
                modelled_seconds=wall, memory_bytes=max(memory) if memory else None,
                peak_memory_bytes=sum(sorted(memory, reverse=True)[:workers or 1])
                if memory else None, **_lifetimes(plans, seconds))


def _lifetimes(plans, seconds):
    """``walltime_s`` and ``job_lifetimes`` of plans whose groups share their workers."""
    from .scan.scheduling import lifetimes

    walltime = plans[0].walltime if plans else None
    groups = [s for p in plans for s in p.group_seconds]
    return {"walltime_s": walltime,
            "job_lifetimes": None if walltime is None or seconds is None else
            lifetimes(groups, plans[0].workers, walltime) if groups else 0}


def _plan_runs(figure, quick, out, backend):
    """The figure's settings, ``out`` checked, and its parts as (grid, predictor, store)."""
    from ._dispatch import BACKENDS

    fig = get_figure(figure)
    check_choice("backend", backend, BACKENDS)
    out = _check_out(out, create=False)
    spec = fig.QUICK if quick else fig.FULL
    return spec, out, [(grid, predictor, os.path.join(out, spec.store_name(label) + ".jsonl"))
                       for label, predictor, grid in spec.parts]


def plan_all(figures, *, quick=False, out="results", backend="auto", executor=None,
             workers=None, walltime=None):
    """What ``reproduce_all(figures)`` would run: each figure's plan, and the whole run's
    predicted wall time with every figure's groups on one pool.

    Parameters
    ----------
    figures : sequence of str
        Distinct names in ``fastsd.figures.FIGURES``, or ["all"] for every figure.
    quick, out, backend, executor, workers, walltime
        As ``plan``.

    Returns
    -------
    dict
        JSON-ready: ``figure`` ("all"), ``figures`` (each figure's ``plan``,
        whose ``predicted_wall_s`` is that figure alone on the workers),
        ``workers``, ``predicted_wall_s`` (all the figures' groups in one
        queue, largest first, as ``reproduce_all`` runs them; None where a
        figure is not modelled), ``modelled_wall_s`` (the same over the
        modelled figures) and ``one_after_another_s`` (the sum of the
        figures' own wall times, over the modelled figures: the run of the
        figures in turn), ``walltime_s`` and ``job_lifetimes`` (as ``plan``'s, for the
        whole run).

    Raises
    ------
    ValueError
        As ``plan``, and for an empty ``figures``.
    """
    from .scan.plans import plan_many, wall_now

    figures = _figure_list(figures)
    plans = [plan(f, quick=quick, out=out, backend=backend, executor=executor, workers=workers,
                  walltime=walltime) for f in figures]
    runs = [r for f in figures for r in _plan_runs(f, quick, out, backend)[2]]
    whole, wall = plan_many(runs, executor, backend=backend, workers=workers, walltime=walltime)
    modelled = all(p["predicted_wall_s"] is not None for p in plans)
    return {"figure": "all", "figures": plans, "workers": plans[0]["workers"],
            "predicted_wall_s": wall if modelled else None, "modelled_wall_s": wall,
            "predicted_wall_now_s": wall_now(whole, wall) if modelled else None,
            "busy_cores": whole[0].busy_cores if whole else None,
            "one_after_another_s": None if wall is None else
            sum(p["modelled_seconds"] or 0.0 for p in plans),
            **_lifetimes(whole, wall if modelled else None)}


def _figure_list(figures):
    """``figures`` checked: a non-empty list of distinct names, ["all"] for every figure."""
    from .figures import FIGURES

    if isinstance(figures, str) or not len(figures):
        raise ValueError(f"`figures` must be a non-empty list of figure names (or ['all']); "
                         f"got {figures!r}.")
    figures = list(figures)
    if figures == ["all"]:
        return list(FIGURES)
    if len(set(figures)) < len(figures):
        raise ValueError(f"`figures` must name each figure once; got {figures!r}.")
    for f in figures:
        get_figure(f)                   # an unknown name, named
    return figures


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
    return reproduce_all([figure], quick=quick, out=out, progress=progress, backend=backend,
                         executor=executor)[0]


def reproduce_all(figures, *, quick=False, out="results", progress=True, backend="auto",
                  executor=None):
    """Run several figures on one pool of workers, then draw and tabulate each.

    Every group of every figure goes to one queue, largest first
    (``run_presets``), so that a cluster does not drain between figures; the
    figures are drawn once all the groups have run.

    Parameters
    ----------
    figures : sequence of str
        Distinct names in ``fastsd.figures.FIGURES``, or ["all"] for every figure.
    quick, out, progress, backend, executor
        As ``reproduce``.

    Returns
    -------
    list of dict
        Each figure's result, as ``reproduce`` returns it, in the order of ``figures``.

    Raises
    ------
    ValueError, BackendUnavailableError
        As ``reproduce``, before anything runs; ValueError also for an empty
        ``figures`` or a figure named twice.
    fastsd.scan.ScanError
        When some cells failed, after every group has run and the figures
        whose cells all finished are drawn: its ``results`` holds theirs.
        The finished cells are saved; a rerun computes only the others.
    """
    from ._dispatch import BACKENDS, resolve_backend
    from .scan import ScanError

    figs = [get_figure(f) for f in _figure_list(figures)]
    check_choice("backend", backend, BACKENDS)
    resolve_backend(backend)            # one that cannot run here fails before `out` is made
    out = _check_out(out, create=True)  # fail on a bad folder before any training
    specs = [f.QUICK if quick else f.FULL for f in figs]
    results, failed = [], []
    for fig, spec, (records, stores, error) in zip(
            figs, specs, run_presets(specs, out, progress=progress, backend=backend,
                                     executor=executor)):
        if error is not None:
            failed.append((spec.name, error))
            continue
        heading, table, summary, images = fig.report(spec, records, os.path.join(out, spec.name))
        results.append({"figure": spec.name, "title": spec.title, "heading": heading,
                        "table": table, "summary": summary, "results": stores,
                        "figures": images})
    if not failed:
        return results
    if len(failed) == 1 and len(figs) == 1:
        exc = failed[0][1]
    else:
        exc = ScanError(f"cells of {len(failed)} of {len(figs)} figures failed (the others are "
                        "drawn): " + "; ".join(f"{name}: {e}" for name, e in failed))
        exc.__cause__ = failed[0][1]
    exc.results = results
    raise exc
