"""Drawing the paper's figures: what every figure shares, and the drawings several share.

Each figure's own drawing is in its module of ``fastsd.figures``; here are
the pieces they are made of, and the accuracy curve against L (Fig. 1c, C3)
and the heatmap (Fig. 1b, 1e). Each accuracy figure draws test accuracy (the
best over the training history, App. G.1) against the swept quantity, one
line per gamma: the mean over seeds with a shaded 95% confidence interval of
that mean, the paper's "empirical 95 percent confidence interval" (a
percentile bootstrap over seeds, 1000 resamples, as seaborn draws it; no band
for one seed), the theory dashed in black and chance (0.5) dotted; every line
and the band are in the legend. Titles use the paper's symbols (γ, →, ±, σ²)
and wrap at spaces only, never inside a number or a formula. Figures are
drawn on an Agg canvas without pyplot, so no global matplotlib state changes,
and written as ``<out_prefix>.png`` and ``<out_prefix>.svg``.
"""
import os
import re
import textwrap
from collections import defaultdict

import numpy as np

from ._validation import check_choice
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


def _signed_image(ax, image, vmax, title, fontsize):
    """Draw a signed matrix or weight image on ``ax`` (blue < 0 < red, no ticks)."""
    im = ax.imshow(image, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=fontsize)
    return im


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


def _check_records(records, fixed):
    if not records:
        raise ValueError("`records` must hold at least one record; got none.")
    values = {r[fixed] for r in records}
    if len(values) != 1:
        raise ValueError(f"`records` must share one {fixed}; got {fixed} in {sorted(values)}.")
    return values.pop()


#: The axis label of each quantity accuracy is drawn against.
_AXIS_LABELS = {"L": "training symbols L", "d": "input dimension d"}


def plot_accuracy_vs(records, axis, out_prefix, title=None):
    """Fig. 1c (against L, at one d) and Fig. 1f (against d, at one L): test accuracy.

    One curve per gamma, mean over seeds with a band, and the rich-regime
    prediction of Eq. 3 as a dashed black line: at every integer L against L,
    or at the records' L (it does not depend on d) against d.

    Parameters
    ----------
    records : sequence of dict
        Stored records (``d``, ``L``, ``gamma``, ``width``,
        ``best_test_accuracy``), all with one value of the other quantity.
    axis : {"L", "d"}
        The quantity on the horizontal axis.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional
        Defaults to "d = <d>, m = <width>" (or "L = <L>, ...").

    Returns
    -------
    list of str
        The PNG and SVG paths written.

    Raises
    ------
    ValueError
        When ``axis`` is not "L" or "d", or ``records`` is empty or mixes
        several values of the other quantity.
    """
    check_choice("axis", axis, tuple(_AXIS_LABELS))
    fixed = "d" if axis == "L" else "L"
    value = _check_records(records, fixed)
    fig, ax = _new_axes()
    banded = _draw_gammas(ax, records, axis)
    if axis == "L":
        Ls = np.arange(2, max(r["L"] for r in records) + 1)
        ax.plot(Ls, rich_test_accuracy(Ls), "k--", lw=1.2, label="Eq. 3 (rich theory)")
    else:
        ax.axhline(float(rich_test_accuracy(value)), color="k", ls="--", lw=1.2,
                   label=f"Eq. 3 at L = {value} (rich theory)")
    return _finish(fig, ax, _AXIS_LABELS[axis], out_prefix, banded,
                   title or f"{fixed} = {value}, m = {records[0]['width']}")


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
