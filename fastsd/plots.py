"""The paper's figures from stored records, one function per figure.

Each accuracy figure draws test accuracy (the best over the training history,
App. G.1) against the swept quantity, one line per gamma: the mean over seeds
with a shaded 95% confidence interval of that mean, the paper's "empirical 95
percent confidence interval" (a percentile bootstrap over seeds, 1000
resamples, as seaborn draws it; no band for one seed), the theory dashed in
black and chance (0.5) dotted; every line and the band are in the legend.
Titles use the paper's symbols (γ, →, ±, σ²) and wrap at spaces only, never
inside a number or a formula. Figures are drawn on an Agg canvas without
pyplot, so no global matplotlib state changes, and written as
``<out_prefix>.png`` and ``<out_prefix>.svg``.
"""
import os
import re
import textwrap
from collections import defaultdict

import numpy as np

from .conventions import gamma_group, gamma_label
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


#: The legend entry of the shaded bands.
BAND_LABEL = "95% CI of the mean over seeds (bootstrap)"


def bootstrap_ci(values, level=0.95, n_boot=1000, seed=0):
    """Percentile bootstrap confidence interval of the mean of ``values``.

    Parameters
    ----------
    values : array_like, shape (n,)
        One value per seed, n >= 1.
    level : float, default 0.95
    n_boot : int, default 1000
        Resamples (with replacement, n values each).
    seed : int, default 0
        Seed of the resampling, so that a figure is drawn the same every time.

    Returns
    -------
    (float, float)
        The interval; both ends equal the value for n = 1.
    """
    values = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(n_boot, values.size))].mean(axis=1)
    tail = 50.0 * (1.0 - level)
    lo, hi = np.percentile(means, [tail, 100.0 - tail])
    return float(lo), float(hi)


def _draw_gammas(ax, records, axis):
    """One mean line with its 95% band per gamma group, against ``axis``; True if any band."""
    import matplotlib

    acc = defaultdict(lambda: defaultdict(list))
    for r in records:
        acc[gamma_group(r["gamma"], r.get("d", 1))][r[axis]].append(r["best_test_accuracy"])
    groups = sorted(acc)
    cmap = matplotlib.colormaps["plasma"]
    banded = False
    for i, g in enumerate(groups):
        x = np.array(sorted(acc[g]))
        runs = [np.asarray(acc[g][v]) for v in x]
        mean = np.array([a.mean() for a in runs])
        lo, hi = np.array([bootstrap_ci(a) for a in runs]).T
        color = cmap(0.9 * i / max(len(groups) - 1, 1))
        ax.plot(x, mean, "o-", color=color, ms=3, lw=1.5, label=gamma_label(g))
        ax.fill_between(x, lo, hi, color=color, alpha=0.25, lw=0)
        banded |= any(a.size > 1 for a in runs)
    return banded


def _chance(ax):
    ax.axhline(0.5, color="0.5", ls=":", lw=1, label="chance")


def _legend(ax, banded, **kwargs):
    """The legend of ``ax``'s labelled lines, plus the band's entry when bands were drawn."""
    from matplotlib.patches import Patch

    handles, labels = ax.get_legend_handles_labels()
    if banded:
        handles.append(Patch(color="0.5", alpha=0.35, lw=0))
        labels.append(BAND_LABEL)
    ax.legend(handles, labels, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              **kwargs)


def _finish(fig, ax, xlabel, out_prefix, banded, title):
    from matplotlib.ticker import FuncFormatter

    _chance(ax)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test accuracy (best over training)")
    ax.set_ylim(0.45, 1.02)
    _legend(ax, banded, fontsize=8)
    ax.set_title(figure_title(title, 60), fontsize=9)
    return _save(fig, out_prefix)


def _finish_panels(fig, axes, out_prefix, title, banded):
    """Accuracy label on the first panel, the legend beside the last, title; save."""
    axes[0].set_ylabel("test accuracy (best over training)")
    _legend(axes[-1], banded, fontsize=7)
    return _save(fig, out_prefix, title)


#: ASCII spellings in titles and the paper's symbols that replace them.
_SYMBOLS = ((r"\bgamma\b", "γ"), (r"\bsigma2\b", "σ²"), (r"/sqrt\(d\)", "/√d"),
            (r"\s*\+-\s*", "\u00a0±\u00a0"), (r"\s*->\s*", "\u00a0→\u00a0"),
            (r" = ", "\u00a0=\u00a0"))


def figure_title(text, width=80):
    """``text`` with the paper's symbols, wrapped at spaces to lines of about ``width``.

    "gamma" becomes γ, "sigma2" σ², "/sqrt(d)" /√d, "+-" ± and "->" →. Lines
    break only at spaces outside mathtext (``$...$``), and never around "±",
    "→" or " = ", so a number, "1.50 ± 0.10", "γ → 0", "d = 128" or a formula
    is never split; explicit newlines are kept.

    Parameters
    ----------
    text : str or None
    width : int, default 80

    Returns
    -------
    str or None
    """
    if not text:
        return text
    for pattern, symbol in _SYMBOLS:
        text = re.sub(pattern, symbol, text)
    # keep mathtext in one piece: hide its spaces from the wrapping, then restore them
    text = re.sub(r"\$[^$]*\$", lambda m: m.group(0).replace(" ", "\0"), text)
    return "\n".join("\n".join(textwrap.wrap(line, width, break_long_words=False,
                                             break_on_hyphens=False)) or line
                     for line in text.split("\n")).replace("\0", " ")


def _save(fig, out_prefix, title=None):
    """Title the figure (when given) and write it as PNG and SVG; return the paths."""
    if title:
        fig.suptitle(figure_title(title, int(fig.get_figwidth() * 14)), fontsize=9)
    folder = os.path.dirname(os.fspath(out_prefix))
    if folder:
        os.makedirs(folder, exist_ok=True)
    paths = [f"{os.fspath(out_prefix)}.{ext}" for ext in ("png", "svg")]
    for p in paths:
        fig.savefig(p, dpi=150)
    return paths


def plot_max_margin(matrix, ideal, rows, out_prefix, title=None):
    """Fig. C1: the empirical max-margin matrix beside its limit, and the alignments vs P.

    The top panels show the matrix and its limit (Theorem 1, App. C.1) on one
    colour scale; the bottom ones, per L against the number of pairs P, the
    alignment v1.v2/(|v1||v2|) of the top (-> +1) and the bottom (-> -1)
    eigenvector and the relative Frobenius distance to the limit.

    Parameters
    ----------
    matrix, ideal : ndarray, shape (2d, 2d)
        ``theory.max_margin(...)["matrix"]`` and ``theory.max_margin_ideal(d)``.
    rows : sequence of dict
        ``L``, ``P``, ``top_alignment``, ``bottom_alignment`` and
        ``relative_distance`` per (L, P), as ``fastsd reproduce figC1`` tabulates.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional

    Returns
    -------
    list of str
        The PNG and SVG paths written.
    """
    import matplotlib
    from matplotlib.ticker import FuncFormatter

    fig = _new_figure(7.2, 6.4)
    (m_ax, i_ax), (a_ax, d_ax) = fig.subplots(2, 2)
    vmax = float(np.abs(ideal).max())
    for ax, mat, name in ((m_ax, matrix, "empirical"), (i_ax, ideal, "ideal (P, L → ∞)")):
        im = ax.imshow(mat, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        ax.set_title(name, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=[m_ax, i_ax], shrink=0.8, label="matrix entry")
    Ls = sorted({r["L"] for r in rows})
    cmap = matplotlib.colormaps["viridis"]
    for i, L in enumerate(Ls):
        pts = sorted((r for r in rows if r["L"] == L), key=lambda r: r["P"])
        P = [r["P"] for r in pts]
        color = cmap(0.85 * i / max(len(Ls) - 1, 1))
        a_ax.plot(P, [r["top_alignment"] for r in pts], "o-", ms=3, color=color,
                  label=f"top, L = {L}")
        a_ax.plot(P, [r["bottom_alignment"] for r in pts], "s--", ms=3, color=color,
                  label=f"bottom, L = {L}")
        d_ax.plot(P, [r["relative_distance"] for r in pts], "o-", ms=3, color=color,
                  label=f"L = {L}")
    a_ax.plot([0, 1, np.nan, 0, 1], [1, 1, np.nan, -1, -1], color="0.5", ls=":", lw=1,
              transform=a_ax.get_yaxis_transform(), label="limits ±1")
    a_ax.set_ylim(-1.1, 1.1)
    a_ax.set_ylabel(r"alignment $v^1\cdot v^2/(|v^1||v^2|)$", fontsize=8)
    a_ax.set_title("top and bottom eigenvectors", fontsize=9)
    d_ax.set_yscale("log")
    d_ax.set_ylabel("relative distance to the limit", fontsize=8)
    d_ax.set_title("‖X − X∞‖ / ‖X∞‖ (Frobenius)", fontsize=9)
    for ax in (a_ax, d_ax):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("sampled pairs P")
        ax.legend(fontsize=7, frameon=False)
    d_ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    d_ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
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
    banded = _draw_gammas(ax, records, "L")
    Ls = np.arange(2, max(r["L"] for r in records) + 1)
    ax.plot(Ls, rich_test_accuracy(Ls), "k--", lw=1.2, label="Eq. 3 (rich theory)")
    return _finish(fig, ax, "training symbols L", out_prefix, banded,
                   title or f"d = {d}, m = {records[0]['width']}")


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
    banded = _draw_gammas(ax, records, "d")
    ax.axhline(float(rich_test_accuracy(L)), color="k", ls="--", lw=1.2,
               label=f"Eq. 3 at L = {L} (rich theory)")
    return _finish(fig, ax, "input dimension d", out_prefix, banded,
                   title or f"L = {L}, m = {records[0]['width']}")


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
        Record fields on the horizontal and vertical axes: log scales (base
        2), one cell per distinct value centred on it.
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
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

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
    xe, ye = _log_edges(xs), _log_edges(ys)
    im = ax.pcolormesh(xe, ye, np.ma.masked_invalid(grid), cmap="viridis", vmin=0.5, vmax=1.0)
    for axis, values in ((ax.xaxis, xs), (ax.yaxis, ys)):
        (ax.set_xscale if axis is ax.xaxis else ax.set_yscale)("log", base=2)
        # a tick on every cell while the labels fit, else on the powers of 2
        axis.set_major_locator(FixedLocator(values) if len(values) <= 10
                               else LogLocator(base=2, numticks=12))
        axis.set_minor_locator(NullLocator())
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.tick_params(labelsize=8)
    ax.set_xlabel("input dimension d" if x == "d" else x)
    ax.set_ylabel("training symbols L" if y == "L" else y)
    fig.colorbar(im, ax=ax, label="test accuracy")
    line_x = np.geomspace(xe[0], xe[-1], 100)
    for (label, x0, y0, slope), style in zip(lines, ("w--", "w:", "w-.")):
        ax.plot(line_x, y0 * (line_x / x0) ** slope, style, lw=1.5, label=label)
    ax.set_xlim(xe[0], xe[-1])
    ax.set_ylim(ye[0], ye[-1])
    if lines:
        ax.legend(fontsize=8, frameon=False, loc="lower right", labelcolor="white")
    if title:
        ax.set_title(figure_title(title, 60), fontsize=8)
    return _save(fig, out_prefix)


def _log_edges(values):
    """Cell edges on a log axis: geometric midpoints, the outer cells as wide as their neighbours."""
    v = np.asarray(values, dtype=float)
    if v.size == 1:
        return np.array([v[0] / np.sqrt(2), v[0] * np.sqrt(2)])
    mid = np.sqrt(v[1:] * v[:-1])
    return np.concatenate([[v[0] ** 2 / mid[0]], mid, [v[-1] ** 2 / mid[-1]]])


def plot_weight_structure(rich, lazy, out_prefix, title=None):
    """Fig. 1a/1d: alignment v1.v2/(|v1||v2|) against readout a_i, rich beside lazy.

    Parameters
    ----------
    rich, lazy : WeightStructure or dict
        ``fastsd.walkers.weight_structure`` of a rich and a lazy model, or its
        ``to_record()``: per-unit ``readout`` and ``alignment`` and the
        ``readout_ratio``.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional

    Returns
    -------
    list of str
        The PNG and SVG paths written.
    """
    from matplotlib.ticker import MaxNLocator

    fig = _new_figure(7.2, 3.2)
    axes = fig.subplots(1, 2)
    for ax, ws, name, color in zip(axes, (rich, lazy), ("(a) rich", "(d) lazy"), ("C0", "C1")):
        ax.xaxis.set_major_locator(MaxNLocator(5))
        get = ws.get if isinstance(ws, dict) else lambda k: getattr(ws, k)
        ax.scatter(np.asarray(get("readout"), dtype=float),
                   np.asarray(get("alignment"), dtype=float), s=4, alpha=0.5, color=color)
        ax.axhline(0, color="0.7", lw=0.5)
        ax.axvline(0, color="0.7", lw=0.5)
        ax.set_ylim(-1.05, 1.05)
        ax.set_xlabel("readout $a_i$")
        ax.set_title(f"{name}: |mean a₋| / |mean a₊| = {get('readout_ratio'):.2f}", fontsize=9)
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
    from matplotlib.ticker import FuncFormatter

    _check_records(mlp_records, "d")
    sigma2s = sorted({r["sigma2"] for r in mlp_records})
    fig = _new_figure(3.0 * len(sigma2s) + 1.6, 3.2)
    axes = np.atleast_1d(fig.subplots(1, len(sigma2s), sharey=True))
    styles = {"generalizing": ("--", "Bayes (generalizing)"),
              "memorizing": ("-.", "Bayes (memorizing)")}
    banded = False
    for ax, s2 in zip(axes, sigma2s):
        banded |= _draw_gammas(ax, [r for r in mlp_records if r["sigma2"] == s2], "L")
        for prior, (style, label) in styles.items():
            pts = defaultdict(list)
            for r in bayes_records:
                if r["sigma2"] == s2 and r["prior"] == prior:
                    pts[r["L"]].append(r["accuracy"])
            if pts:
                Ls = sorted(pts)
                ax.plot(Ls, [np.mean(pts[L]) for L in Ls], style, lw=1.2, label=label,
                        color="k" if prior == "generalizing" else "0.45")
        _chance(ax)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("training symbols L")
        ax.set_title(f"σ² = {s2:g}", fontsize=9)
        ax.set_ylim(0.45, 1.02)
    return _finish_panels(fig, axes, out_prefix, title, banded)


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
    banded = False
    for ax, (name, records, axis) in zip(axes, panels):
        banded |= _draw_gammas(ax, records, axis)
        _chance(ax)
        if axis == "L":
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(name, fontsize=8)
        ax.set_ylim(0.45, 1.02)
    return _finish_panels(fig, axes, out_prefix, title, banded)


def plot_weight_images(shown, out_prefix, title=None):
    """Fig. A1: hidden weights as images, the units with the largest and the most negative a.

    One column per model; the images of one task share a symmetric colour
    scale, drawn as a colour bar beside that task's columns, so the small
    weights of a lazy model show as faint next to a rich one (App. A).

    Parameters
    ----------
    shown : sequence of (str, str, ndarray, ndarray)
        Task, model and the two weight images (H, W) of one model: the unit
        with the largest readout and the one with the most negative readout.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional

    Returns
    -------
    list of str
        The PNG and SVG paths written.
    """
    fig = _new_figure(2.0 * len(shown) + 0.6 * len({t for t, *_ in shown}), 4.4)
    axes = fig.subplots(2, len(shown), squeeze=False)
    for task in dict.fromkeys(t for t, *_ in shown):
        cols = [j for j, (t, *_) in enumerate(shown) if t == task]
        vmax = max(float(np.abs(img).max()) for j in cols for img in shown[j][2:]) or 1.0
        for j in cols:
            _, model, top, bottom = shown[j]
            for i, (img, which) in enumerate(((top, "largest a"), (bottom, "most negative a"))):
                ax = axes[i, j]
                im = ax.imshow(img, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
                ax.set_xticks([])
                ax.set_yticks([])
                ax.set_title(f"{task}, {model}\n{which}", fontsize=7)
        bar = fig.colorbar(im, ax=axes[:, cols].ravel().tolist(), shrink=0.8)
        bar.set_label(f"{task} weight", fontsize=7)
        bar.ax.tick_params(labelsize=6)
    return _save(fig, out_prefix, title)
