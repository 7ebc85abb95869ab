"""The paper's figures from stored records, one function per figure.

Each function draws test accuracy (the best over the training history, App.
G.1) against the swept quantity, one line per gamma: the mean over seeds with
a shaded 95% band (mean +- 1.96 standard errors; no band for one seed), the
theory dashed in black and chance (0.5) dotted. Figures are drawn on an Agg
canvas without pyplot, so no global matplotlib state changes, and written as
``<out_prefix>.png`` and ``<out_prefix>.svg``.
"""
import os
from collections import defaultdict

import numpy as np

from .scan.cells import gamma_group, gamma_label
from .theory import rich_test_accuracy


def _new_figure(width, height):
    """A matplotlib Figure on its own Agg canvas (no pyplot, no global state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _new_axes():
    fig = _new_figure(6.4, 3.6)
    return fig, fig.add_subplot()


def _draw_gammas(ax, records, axis):
    """One mean line with a 95% band per gamma group, against ``axis``."""
    import matplotlib

    acc = defaultdict(lambda: defaultdict(list))
    for r in records:
        acc[gamma_group(r["gamma"], r.get("d", 1))][r[axis]].append(r["best_test_accuracy"])
    groups = sorted(acc)
    cmap = matplotlib.colormaps["plasma"]
    for i, g in enumerate(groups):
        x = np.array(sorted(acc[g]))
        runs = [np.asarray(acc[g][v]) for v in x]
        mean = np.array([a.mean() for a in runs])
        half = np.array([1.96 * a.std(ddof=1) / np.sqrt(a.size) if a.size > 1 else 0.0
                         for a in runs])
        color = cmap(0.9 * i / max(len(groups) - 1, 1))
        ax.plot(x, mean, "o-", color=color, ms=3, lw=1.5, label=gamma_label(g))
        ax.fill_between(x, mean - half, mean + half, color=color, alpha=0.25, lw=0)


def _finish(fig, ax, xlabel, out_prefix):
    from matplotlib.ticker import FuncFormatter

    ax.axhline(0.5, color="0.5", ls=":", lw=1, label="chance")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test accuracy (best over training)")
    ax.set_ylim(0.45, 1.02)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, out_prefix)


def _finish_panels(fig, axes, out_prefix, title):
    """Accuracy label on the first panel, the legend beside the last, title; save."""
    axes[0].set_ylabel("test accuracy (best over training)")
    axes[-1].legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, out_prefix, title)


def _save(fig, out_prefix, title=None):
    """Title the figure (when given) and write it as PNG and SVG; return the paths."""
    if title:
        fig.suptitle(title, fontsize=9)
    folder = os.path.dirname(os.fspath(out_prefix))
    if folder:
        os.makedirs(folder, exist_ok=True)
    paths = [f"{os.fspath(out_prefix)}.{ext}" for ext in ("png", "svg")]
    for p in paths:
        fig.savefig(p, dpi=150)
    return paths


def plot_max_margin(matrix, ideal, out_prefix, title=None):
    """Fig. C1: the empirical max-margin matrix beside its limit (Theorem 1, App. C.1).

    Parameters
    ----------
    matrix, ideal : ndarray, shape (2d, 2d)
        ``theory.max_margin(...)["matrix"]`` and ``theory.max_margin_ideal(d)``.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional

    Returns
    -------
    list of str
        The PNG and SVG paths written.
    """
    fig = _new_figure(7.2, 3.4)
    axes = fig.subplots(1, 2)
    vmax = float(np.abs(ideal).max())
    for ax, mat, name in zip(axes, (matrix, ideal), ("empirical", "ideal (P, L → ∞)")):
        im = ax.imshow(mat, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        ax.set_title(name, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=axes, shrink=0.8)
    return _save(fig, out_prefix, title)


def _check_records(records, fixed):
    if not records:
        raise ValueError("`records` must hold at least one record; got none.")
    values = {r[fixed] for r in records}
    if len(values) != 1:
        raise ValueError(f"`records` must share one {fixed}; got {fixed} in {sorted(values)}.")
    return values.pop()


def plot_accuracy_vs_L(records, out_prefix, title=None):
    """Fig. 1c: test accuracy against the number of training symbols L.

    Adds the rich-regime prediction of Eq. 3 (dashed black, at integer L).

    Parameters
    ----------
    records : sequence of dict
        Stored records (``d``, ``L``, ``gamma``, ``width``,
        ``best_test_accuracy``), all with one d.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional
        Defaults to "d = <d>, m = <width>".

    Returns
    -------
    list of str
        The PNG and SVG paths written.

    Raises
    ------
    ValueError
        When ``records`` is empty or mixes several d.
    """
    d = _check_records(records, "d")
    fig, ax = _new_axes()
    _draw_gammas(ax, records, "L")
    Ls = np.arange(2, max(r["L"] for r in records) + 1)
    ax.plot(Ls, rich_test_accuracy(Ls), "k--", lw=1.2, label="Eq. 3 (rich theory)")
    ax.set_title(title or f"d = {d}, m = {records[0]['width']}", fontsize=9)
    return _finish(fig, ax, "training symbols L", out_prefix)


def plot_accuracy_vs_d(records, out_prefix, title=None):
    """Fig. 1f: test accuracy against the input dimension d at fixed L.

    Adds the rich-regime prediction of Eq. 3 at that L as a dashed black
    line (it does not depend on d).

    Parameters
    ----------
    records : sequence of dict
        Stored records (``d``, ``L``, ``gamma``, ``width``,
        ``best_test_accuracy``), all with one L.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional
        Defaults to "L = <L>, m = <width>".

    Returns
    -------
    list of str
        The PNG and SVG paths written.

    Raises
    ------
    ValueError
        When ``records`` is empty or mixes several L.
    """
    L = _check_records(records, "L")
    fig, ax = _new_axes()
    _draw_gammas(ax, records, "d")
    ax.axhline(float(rich_test_accuracy(L)), color="k", ls="--", lw=1.2,
               label=f"Eq. 3 at L = {L} (rich theory)")
    ax.set_title(title or f"L = {L}, m = {records[0]['width']}", fontsize=9)
    return _finish(fig, ax, "input dimension d", out_prefix)


def plot_activation_change(records, out_prefix, title=None):
    """Fig. F1: activation change against gamma, one line per d, with and without 1/sqrt(d).

    Parameters
    ----------
    records : sequence of dict
        Stored records with ``gamma``, ``d``, ``root_d`` and
        ``activation_change`` (App. F).
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional

    Returns
    -------
    list of str
        The PNG and SVG paths written.
    """
    import matplotlib

    fig = _new_figure(8.0, 3.4)
    axes = fig.subplots(1, 2, sharey=True)
    ds = sorted({r["d"] for r in records})
    cmap = matplotlib.colormaps["viridis"]
    for ax, root_d in zip(axes, (False, True)):
        for i, d in enumerate(ds):
            pts = defaultdict(list)
            for r in records:
                if r["d"] == d and r.get("root_d", True) == root_d:
                    pts[r["gamma"]].append(r["activation_change"])
            if pts:
                g = np.array(sorted(pts))
                ax.plot(g, [np.mean(pts[v]) for v in g], "o-", ms=3,
                        color=cmap(i / max(1, len(ds) - 1)), label=f"d = {d}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("γ")
        ax.set_title("with 1/√d prefactor" if root_d else "without 1/√d prefactor", fontsize=9)
    axes[0].set_ylabel("activation change |w(T)·x − w(0)·x| / |w(0)·x|")
    axes[1].legend(fontsize=8, frameon=False)
    return _save(fig, out_prefix, title)


def plot_heatmap(records, out_prefix, title=None, x="d", y="L", value="best_test_accuracy",
                 lines=()):
    """Fig. 1b/1e: mean ``value`` over seeds on the (x, y) grid, as a heatmap.

    Parameters
    ----------
    records : sequence of dict
        Stored records holding ``x``, ``y`` and ``value``.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional
    x, y : str, default "d", "L"
        Record fields on the horizontal and vertical axes (log scale, one
        cell per distinct value).
    value : str, default "best_test_accuracy"
    lines : sequence of (label, d0, L0, slope), optional
        Power laws y = L0 (x / d0)**slope to overlay (Fig. 1e draws L
        proportional to d^2 through the measured L*(d) of the smallest d).

    Returns
    -------
    list of str
        The PNG and SVG paths written.

    Raises
    ------
    ValueError
        When ``records`` is empty.
    """
    if not records:
        raise ValueError("`records` must hold at least one record; got none.")
    vals = defaultdict(list)
    for r in records:
        vals[r[x], r[y]].append(r[value])
    xs = sorted({k[0] for k in vals})
    ys = sorted({k[1] for k in vals})
    grid = np.full((len(ys), len(xs)), np.nan)
    for (a, b), v in vals.items():
        grid[ys.index(b), xs.index(a)] = np.mean(v)
    fig = _new_figure(5.2, 4.2)
    ax = fig.add_subplot()
    im = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0.5, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(xs)), [f"{v:g}" for v in xs], rotation=90, fontsize=7)
    ax.set_yticks(range(len(ys)), [f"{v:g}" for v in ys], fontsize=7)
    ax.set_xlabel("input dimension d" if x == "d" else x)
    ax.set_ylabel("training symbols L" if y == "L" else y)
    fig.colorbar(im, ax=ax, label="test accuracy")
    for (label, x0, y0, slope), style in zip(lines, ("w--", "w:", "w-.")):
        lx = np.log(np.asarray(xs, float))
        ly = np.log(y0) + slope * (lx - np.log(x0))
        # cell coordinates: interpolate log x and log y onto the column and row indices
        cols = np.interp(lx, lx, np.arange(len(xs)))
        rows = np.interp(ly, np.log(np.asarray(ys, float)), np.arange(len(ys)),
                         left=np.nan, right=np.nan)
        ax.plot(cols, rows, style, lw=1.5, label=label)
    if lines:
        ax.legend(fontsize=8, frameon=False, loc="lower right", labelcolor="white")
    if title:
        ax.set_title(title, fontsize=8, wrap=True)
    return _save(fig, out_prefix)


def plot_weight_structure(rich, lazy, out_prefix, title=None):
    """Fig. 1a/1d: alignment v1.v2/(|v1||v2|) against readout a_i, rich beside lazy.

    Parameters
    ----------
    rich, lazy : WeightStructure
        ``fastsd.walkers.weight_structure`` of a rich and a lazy model.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional

    Returns
    -------
    list of str
        The PNG and SVG paths written.
    """
    fig = _new_figure(7.2, 3.2)
    axes = fig.subplots(1, 2)
    for ax, ws, name in zip(axes, (rich, lazy), ("(a) rich", "(d) lazy")):
        ax.scatter(ws.readout, ws.alignment, s=4, alpha=0.5, color="C0" if ws is rich else "C1")
        ax.axhline(0, color="0.7", lw=0.5)
        ax.axvline(0, color="0.7", lw=0.5)
        ax.set_ylim(-1.05, 1.05)
        ax.set_xlabel("readout $a_i$")
        ax.set_title(f"{name}: |mean a-|/|mean a+| = {ws.readout_ratio:.2f}", fontsize=9)
    axes[0].set_ylabel(r"alignment $v^1\cdot v^2/(|v^1||v^2|)$")
    return _save(fig, out_prefix, title)


def plot_noisy(mlp_records, bayes_records, out_prefix, title=None):
    """Fig. 2: test accuracy against L on the noisy task, one panel per sigma2.

    One line per gamma (mean over seeds, 95% band), and the Bayes-optimal
    accuracies under the generalizing (black dashed) and memorizing (grey
    dash-dotted) priors of App. E.

    Parameters
    ----------
    mlp_records : sequence of dict
        "mlp" records with ``sigma2``, ``L``, ``d``, ``gamma``, ``best_test_accuracy``.
    bayes_records : sequence of dict
        "bayes" records with ``sigma2``, ``L``, ``prior``, ``accuracy``.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional

    Returns
    -------
    list of str
        The PNG and SVG paths written.
    """
    _check_records(mlp_records, "d")
    sigma2s = sorted({r["sigma2"] for r in mlp_records})
    fig = _new_figure(3.0 * len(sigma2s) + 1.6, 3.2)
    axes = np.atleast_1d(fig.subplots(1, len(sigma2s), sharey=True))
    styles = {"generalizing": ("--", "Bayes (generalizing)"),
              "memorizing": ("-.", "Bayes (memorizing)")}
    for ax, s2 in zip(axes, sigma2s):
        _draw_gammas(ax, [r for r in mlp_records if r["sigma2"] == s2], "L")
        for prior, (style, label) in styles.items():
            pts = defaultdict(list)
            for r in bayes_records:
                if r["sigma2"] == s2 and r["prior"] == prior:
                    pts[r["L"]].append(r["accuracy"])
            if pts:
                Ls = sorted(pts)
                ax.plot(Ls, [np.mean(pts[L]) for L in Ls], style, lw=1.2, label=label,
                        color="k" if prior == "generalizing" else "0.45")
        ax.axhline(0.5, color="0.5", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("training symbols L")
        ax.set_title(f"σ² = {s2:g}", fontsize=9)
        ax.set_ylim(0.45, 1.02)
    return _finish_panels(fig, axes, out_prefix, title)


def plot_panels(panels, out_prefix, title=None):
    """Fig. 3: test accuracy against each panel's swept quantity, one line per gamma.

    Parameters
    ----------
    panels : sequence of (str, sequence of dict, str)
        Panel title, records (``gamma``, ``best_test_accuracy`` and the
        axis field) and the record field on the x axis.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional

    Returns
    -------
    list of str
        The PNG and SVG paths written.
    """
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    fig = _new_figure(3.0 * len(panels) + 1.6, 3.2)
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True))
    for ax, (name, records, axis) in zip(axes, panels):
        _draw_gammas(ax, records, axis)
        ax.axhline(0.5, color="0.5", ls=":", lw=1)
        if axis == "L":
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(name, fontsize=8)
        ax.set_ylim(0.45, 1.02)
    return _finish_panels(fig, axes, out_prefix, title)


def plot_weight_images(shown, out_prefix, title=None):
    """Fig. A1: hidden weights as images, the units with the largest and the most negative a.

    Parameters
    ----------
    shown : sequence of (str, ndarray, ndarray)
        A label and the two weight images (H, W) of one model: the unit with
        the largest readout and the one with the most negative readout.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional

    Returns
    -------
    list of str
        The PNG and SVG paths written.
    """
    fig = _new_figure(2.0 * len(shown), 4.2)
    axes = fig.subplots(2, len(shown), squeeze=False)
    for j, (label, top, bottom) in enumerate(shown):
        for i, (img, which) in enumerate(((top, "largest a"), (bottom, "most negative a"))):
            ax = axes[i, j]
            vmax = float(np.abs(img).max()) or 1.0
            ax.imshow(img, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(f"{label}\n{which}", fontsize=7)
    return _save(fig, out_prefix, title)
