"""Reproduce a figure of the paper: run its preset through the scan API, draw it, tabulate it.

``reproduce(figure)`` runs every part of the figure's preset with
``fastsd.scan.run`` into ``<out>/<name>.jsonl`` (resuming: finished cells are
skipped), draws ``<out>/<name>.png`` and ``.svg`` with ``fastsd.plots`` and
returns the table the ``fastsd reproduce`` command prints. The figures that are
no scan grid (Fig. 1a/1d, A1, C1) store one record per unit (a trained model,
one (L, P)) in ``<out>/<name>.jsonl`` through ``fastsd.units.run_units``, with
what their plot needs (weight readouts and alignments, weight images, the
max-margin matrix), so a rerun computes nothing it has and draws the same figure.
"""
import os
import warnings

from . import _stop
from ._validation import check_choice
from .presets import FIGURES, MAX_MARGIN, WEIGHT_IMAGES, WEIGHT_STRUCTURE, get_preset
from .conventions import IMAGE_LAZY_GAMMA


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


def _unit_result(name, store, title, heading, lines, rows, figures):
    """The result dict of a figure that is no scan grid (Fig. 1a/1d, A1, C1)."""
    return {"figure": name, "title": title, "heading": heading, "table": "\n".join(lines),
            "summary": {"rows": rows}, "results": [store], "figures": figures}


def _max_margin(name, out, progress):
    import numpy as np

    from .plots import plot_max_margin
    from .tasks import SameDifferent
    from .theory import max_margin, max_margin_ideal
    from .units import run_units

    cfg = MAX_MARGIN[name]

    def compute(units):
        (u,) = units
        r = max_margin(SameDifferent(cfg["d"], u["L"], seed=u["L"]), u["P"], seed=u["P"])
        return [{"top_alignment": r["top"]["alignment"],
                 "bottom_alignment": r["bottom"]["alignment"],
                 "relative_distance": r["relative_distance"], "matrix": r["matrix"]}]

    store = os.path.join(out, name + ".jsonl")
    records = run_units(store, "max_margin", {"d": cfg["d"]},
                        [{"L": L, "P": P} for L in cfg["Ls"] for P in cfg["Ps"]], compute,
                        progress=progress, desc=f"{name} (L, P)")
    rows = [{"d": cfg["d"], **{k: r[k] for k in ("L", "P", "top_alignment", "bottom_alignment",
                                                 "relative_distance")}} for r in records]
    last = records[-1]
    prefix = os.path.join(out, name)
    title = f"Fig. C1: max-margin matrix, d = {cfg['d']}, L = {last['L']}, P = {last['P']}"
    figures = plot_max_margin(np.array(last["matrix"]), max_margin_ideal(cfg["d"]), rows,
                              prefix, title=title)
    lines = [f"{'d':>4} {'L':>6} {'P':>7} {'top':>8} {'bottom':>8} {'distance':>9}"]
    for w in rows:
        lines.append(f"{w['d']:>4} {w['L']:>6} {w['P']:>7} {w['top_alignment']:>+8.4f} "
                     f"{w['bottom_alignment']:>+8.4f} {w['relative_distance']:>9.4f}")
    return _unit_result(
        name, store, "Fig. C1: max-margin matrix and its limit (Theorem 1)",
        "alignment v1.v2/(|v1||v2|) of the top and bottom eigenvectors of the max-margin "
        "matrix, and its relative Frobenius distance to the limit", lines, rows, figures)


def _weight_structure(name, out, progress):
    from .mlp import train_ensemble
    from .plots import plot_weight_structure
    from .conventions import lazy_gamma
    from .tasks import SameDifferent
    from .units import run_units
    from .walkers import weight_structure

    cfg = WEIGHT_STRUCTURE[name]

    def compute(units):
        task = SameDifferent(d=cfg["d"], L=cfg["L"], seed=cfg["seed"])
        results = train_ensemble(task, [u["gamma"] for u in units], cfg["seed"],
                                 width=cfg["width"], steps=cfg["steps"],
                                 eval_every=cfg["eval_every"], progress=progress)
        records = []
        for r in results:
            ws = weight_structure(r)
            records.append({"best_test_accuracy": r.best_test_accuracy,
                            "alignment_positive": float(ws.alignment[ws.readout > 0].mean()),
                            "alignment_negative": float(ws.alignment[ws.readout < 0].mean()),
                            "readout_ratio": ws.readout_ratio, "structure": ws.to_record()})
        return records

    store = os.path.join(out, name + ".jsonl")
    units = [{"model": "rich", "gamma": 1.0}, {"model": "lazy", "gamma": lazy_gamma(cfg["d"])}]
    records = run_units(store, "weight_structure", cfg, units, compute, group=lambda u: 0,
                        progress=progress, desc=f"{name} models")
    rows = [{k: r[k] for k in ("model", "gamma", "best_test_accuracy", "alignment_positive",
                               "alignment_negative", "readout_ratio")} for r in records]
    prefix = os.path.join(out, name)
    title = (f"Fig. 1a/1d: hidden-weight alignment vs readout, rich (gamma = 1) and lazy "
             f"(gamma = 1e-5/sqrt(d)); L = {cfg['L']}, d = {cfg['d']}, m = {cfg['width']}, "
             f"{cfg['steps']} steps")
    figures = plot_weight_structure(*(r["structure"] for r in records), prefix, title=title)
    lines = [f"{'model':>6} {'best acc':>9} {'align a>0':>10} {'align a<0':>10} "
             f"{'|a-|/|a+|':>10}"]
    for w in rows:
        lines.append(f"{w['model']:>6} {w['best_test_accuracy']:>9.3f} "
                     f"{w['alignment_positive']:>+10.3f} {w['alignment_negative']:>+10.3f} "
                     f"{w['readout_ratio']:>10.3f}")
    return _unit_result(
        name, store, "Fig. 1a/1d: hidden-weight alignment against readout",
        "mean alignment v1.v2/(|v1||v2|) of units with a > 0 and a < 0, and the readout ratio "
        "|mean a-|/|mean a+| (App. C.4.3)", lines, rows, figures)


def lazy_scaling(records, level=0.75):
    """L*(d) where the mean accuracy first reaches ``level``, and the fitted L* ~ d^b.

    Parameters
    ----------
    records : sequence of dict
        Records with ``d``, ``L`` and ``best_test_accuracy`` (e.g. of the
        "lazy_limit" predictor over a d x L grid).
    level : float, default 0.75

    Returns
    -------
    dict
        ``level``; ``L_star``, {d: L*} for the d whose accuracy crosses
        ``level`` inside the grid; ``exponent`` and ``exponent_se`` of the
        log-log least-squares fit (None with fewer than 2 crossings).
    """
    from collections import defaultdict

    import numpy as np

    from .analysis import power_law_fit, threshold_crossing

    acc = defaultdict(lambda: defaultdict(list))
    for r in records:
        acc[r["d"]][r["L"]].append(r["best_test_accuracy"])
    L_star = {}
    for d in sorted(acc):
        Ls = sorted(acc[d])
        hit = threshold_crossing(Ls, [np.mean(acc[d][L]) for L in Ls], level)
        if hit is not None:
            L_star[d] = hit
    b = se = None
    if len(L_star) >= 2:
        b, se = power_law_fit(list(L_star), list(L_star.values()))
        se = None if se != se else se
    return {"level": level, "L_star": L_star, "exponent": b, "exponent_se": se}


def _lazy_heatmap(preset, records, prefix):
    from collections import defaultdict

    import numpy as np

    from . import plots
    from .scan import format_table, summarize

    limit, finite = records["lazy_limit"], records.get("mlp", [])
    scaling = lazy_scaling(limit)
    fit = ("" if scaling["exponent"] is None else
           f"; fitted L* ~ d^{scaling['exponent']:.2f}"
           + ("" if scaling["exponent_se"] is None else f" +- {scaling['exponent_se']:.2f}"))
    lines, title = [], preset.title
    if scaling["L_star"]:
        d0, L0 = next(iter(scaling["L_star"].items()))
        lines.append((r"$L \propto d^2$ (Theorem 2)", d0, L0, 2.0))
        if scaling["exponent"] is not None:
            b, se = scaling["exponent"], scaling["exponent_se"]
            lines.append((rf"fit: $L^* \propto d^{{{b:.2f}}}$", d0, L0, b))
            power = f"{b:.2f}" if se is None else rf"{b:.2f} \pm {se:.2f}"
            title += (f"\nfitted $L^* \\propto d^{{{power}}}$ "
                      f"(L* where accuracy first reaches {scaling['level']})")
    figures = plots.plot_heatmap(limit, prefix, title=title, lines=lines)
    means = defaultdict(list)
    for r in limit:
        means[r["d"], r["L"]].append(r["best_test_accuracy"])
    nets = defaultdict(list)
    for r in finite:
        nets[r["d"], r["L"], r["width"]].append(r["best_test_accuracy"])
    compare = [{"d": d, "L": L, "width": m, "finite": float(np.mean(v)),
                "limit": float(np.mean(means[d, L])) if means.get((d, L)) else None}
               for (d, L, m), v in sorted(nets.items())]
    limit_table = summarize(limit, "L", columns="d")
    text = [format_table(limit_table, eq3=False), "",
             f"L*(d) at accuracy {scaling['level']}: "
             + ", ".join(f"d={d}: {v:.1f}" for d, v in scaling["L_star"].items()) + fit, "",
             "finite gamma ~ 0 networks (1e-5/sqrt(d)) against the limit, same symbols",
             f"{'d':>5} {'L':>5} {'width':>6} {'finite':>7} {'limit':>7} {'gap':>7}"]
    for c in compare:
        lim = "-" if c["limit"] is None else f"{c['limit']:.3f}"
        gap = "-" if c["limit"] is None else f"{c['finite'] - c['limit']:+.3f}"
        text.append(f"{c['d']:>5} {c['L']:>5} {c['width']:>6} {c['finite']:>7.3f} {lim:>7} "
                    f"{gap:>7}")
    heading = ("best test accuracy of the gamma -> 0, infinite-width network (logistic flow, "
               "App. D), rows L, columns d")
    return heading, "\n".join(text), {"limit": limit_table, "scaling": scaling,
                                       "finite_vs_limit": compare}, figures


def _noisy(preset, records, prefix):
    from collections import defaultdict

    import numpy as np

    from . import plots
    from .scan import format_table, summarize

    mlp, bayes = records["mlp"], records.get("bayes", [])
    acc = defaultdict(list)
    for r in bayes:
        acc[r["sigma2"], r["L"], r["prior"]].append(r["accuracy"])
    blocks, text = [], []
    for s2 in sorted({r["sigma2"] for r in mlp}):
        table = summarize([r for r in mlp if r["sigma2"] == s2], "L")
        for row in table["rows"]:
            for prior, name in (("generalizing", "Bayes gen."), ("memorizing", "Bayes mem.")):
                if acc.get((s2, row["L"], prior)):
                    row["mean"][name] = float(np.mean(acc[s2, row["L"], prior]))
        table["columns"] += [{"name": "Bayes gen."}, {"name": "Bayes mem."}]
        blocks.append({"sigma2": s2, "table": table})
        text += [f"sigma2 = {s2:g}", format_table(table, eq3=False), ""]
    figures = plots.plot_noisy(mlp, bayes, prefix, title=preset.title)
    heading = ("mean best test accuracy over seeds per sigma2, with the Bayes-optimal accuracy "
               "under the generalizing and the memorizing prior (App. E)")
    return heading, "\n".join(text).rstrip(), {"blocks": blocks}, figures


#: The x axis of each Fig. 3 panel and its label.
_F3_AXES = {"b": ("L", "training bit-patterns (PSVRT, 5 x 5 patches)"),
            "c": ("n_patches", "image side in patches (PSVRT)"),
            "e": ("L", "training shapes (Pentomino, width 2)"),
            "f": ("image_width", "image side in cells (Pentomino)")}


def _visual(preset, records, prefix):
    from . import plots
    from .scan import format_table, summarize

    panels, text, blocks = [], [], []
    for label, _, _ in preset.parts:
        axis, xlabel = _F3_AXES[label]
        table = summarize(records[label], axis)
        blocks.append({"panel": label, "axis": axis, "table": table})
        text += [f"Fig. 3{label}: {xlabel}", format_table(table, eq3=False), ""]
        panels.append((f"({label}) {xlabel}", records[label], axis))
    figures = plots.plot_panels(panels, prefix, title=preset.title)
    heading = "mean best test accuracy over seeds on held-out patterns / shapes, per gamma"
    return heading, "\n".join(text).rstrip(), {"panels": blocks}, figures


#: Fig. A1's tasks: images two cells a side (App. A), and the two models trained on each.
_A1_TASKS = {"PSVRT": dict(patch=5, n_patches=2, n_train_patterns=256),
             "Pentomino": dict(width=2, n_train_shapes=14)}
_A1_MODELS = {"rich": 1.0, "lazy": IMAGE_LAZY_GAMMA}


def _weight_images(name, out, progress):
    import numpy as np

    from .analysis import cell_correlations
    from .mlp import train_ensemble
    from .plots import plot_weight_images
    from .tasks import PSVRT, Pentomino
    from .units import run_units

    cfg = WEIGHT_IMAGES[name]
    iu = np.triu_indices(4, 1)

    def compute(units):
        kind = units[0]["task"]
        task = {"PSVRT": PSVRT, "Pentomino": Pentomino}[kind](**_A1_TASKS[kind],
                                                             seed=cfg["seed"])
        results = train_ensemble(task, [u["gamma"] for u in units], cfg["seed"],
                                 width=cfg["width"], steps=cfg["steps"],
                                 eval_every=cfg["eval_every"], progress=progress)
        records = []
        for r in results:
            w, a = r.final_params.w, r.final_params.a
            corr = np.abs(cell_correlations(task, w)[:, iu[0], iu[1]])
            top = np.argsort(-np.abs(a))[:16]
            images = task.weights_as_images(w)
            records.append({"best_test_accuracy": r.best_test_accuracy,
                            "cell_correlation_top16": float(corr[top].mean()),
                            "cell_correlation_all": float(corr.mean()),
                            "image_largest_a": images[np.argmax(a)],
                            "image_most_negative_a": images[np.argmin(a)]})
        return records

    store = os.path.join(out, name + ".jsonl")
    units = [{"task": t, "model": m, "gamma": g} for t in _A1_TASKS for m, g in _A1_MODELS.items()]
    records = run_units(store, "weight_images", {**cfg, "tasks": _A1_TASKS}, units, compute,
                        group=lambda u: u["task"], progress=progress, desc=f"{name} models")
    rows = [{k: r[k] for k in ("task", "model", "gamma", "best_test_accuracy",
                               "cell_correlation_top16", "cell_correlation_all")}
            for r in records]
    shown = [(r["task"], r["model"], np.array(r["image_largest_a"]),
              np.array(r["image_most_negative_a"])) for r in records]
    prefix = os.path.join(out, name)
    figures = plot_weight_images(shown, prefix, title=f"Fig. A1: hidden weights as images "
                                 f"(m = {cfg['width']}, {cfg['steps']} steps)")
    lines = [f"{'task':>10} {'model':>6} {'best acc':>9} {'|corr| top16':>13} {'|corr| all':>11}"]
    for w in rows:
        lines.append(f"{w['task']:>10} {w['model']:>6} {w['best_test_accuracy']:>9.3f} "
                     f"{w['cell_correlation_top16']:>13.3f} {w['cell_correlation_all']:>11.3f}")
    return _unit_result(
        name, store, "Fig. A1: parallel and antiparallel regions in hidden weights (App. A)",
        "mean |correlation| between the image cells a unit reads, over the 16 units with the "
        "largest |a| and over all units", lines, rows, figures)


def reproduce(figure, *, quick=False, out="results", progress=True, backend="auto",
              executor=None):
    """Run, draw and tabulate one figure of the paper.

    Parameters
    ----------
    figure : str
        One of ``fastsd.presets.FIGURES``.
    quick : bool, default False
        Use the figure's reduced grid (minutes on a laptop).
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
        JSON-ready: ``figure`` (the preset name), ``title``, ``heading`` and
        ``table`` (the text the CLI prints), ``summary`` (the table as data),
        ``results`` (store paths) and ``figures`` (image paths).

    Raises
    ------
    ValueError
        For an unknown figure, or (from ``fastsd.scan.run``) a store of a
        different grid.
    OSError
        When ``out`` cannot be created.
    fastsd.scan.ScanError
        When some cells failed; the finished ones are saved.
    """
    from . import plots
    from ._dispatch import BACKENDS
    from .scan import (
        format_activation_table,
        format_table,
        summarize,
        summarize_activation,
    )

    check_choice("figure", figure, FIGURES)
    check_choice("backend", backend, BACKENDS)
    out = os.fspath(out)
    os.makedirs(out, exist_ok=True)     # fail on a bad folder before any training
    if figure == "figC1":
        return _max_margin("figC1-quick" if quick else "figC1", out, progress)
    if figure == "fig1a":
        return _weight_structure("fig1a-quick" if quick else "fig1a", out, progress)
    if figure == "figA1":
        return _weight_images("figA1-quick" if quick else "figA1", out, progress)
    preset = get_preset(figure, quick=quick)
    records, stores = run_preset(preset, out, progress=progress, backend=backend,
                                 executor=executor)
    mlp = records.get("mlp")
    prefix = os.path.join(out, preset.name)
    if preset.axis == "lazy_heatmap":
        heading, table, summary, figures = _lazy_heatmap(preset, records, prefix)
    elif preset.axis == "noisy":
        heading, table, summary, figures = _noisy(preset, records, prefix)
    elif preset.axis == "visual":
        heading, table, summary, figures = _visual(preset, records, prefix)
    elif preset.axis == "gamma":
        figures = plots.plot_activation_change(mlp, prefix, title=preset.title)
        summary = summarize_activation(mlp)
        heading = "mean activation change |w(T).x - w(0).x| / |w(0).x| over seeds (App. F)"
        table = format_activation_table(summary)
    elif preset.axis == "heatmap":
        figures = plots.plot_heatmap(mlp, prefix, title=preset.title)
        summary = summarize(mlp, "L", columns="d")
        heading = "mean best test accuracy over seeds, rows L, columns d"
        table = format_table(summary)
    else:
        plot = plots.plot_accuracy_vs_L if preset.axis == "L" else plots.plot_accuracy_vs_d
        figures = plot(mlp, prefix, title=preset.title)
        summary = summarize(mlp, preset.axis)
        heading = "mean best test accuracy over seeds; Eq.3 = rich-regime theory"
        table = format_table(summary)
    return {"figure": preset.name, "title": preset.title, "heading": heading, "table": table,
            "summary": summary, "results": stores, "figures": figures}
