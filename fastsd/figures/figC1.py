"""Fig. C1: the max-margin matrix against its limit (Theorem 1, App. C.1) over (L, P).

One scan part of the "max_margin" predictor: each (L, P) at one d is a cell,
stored with its alignments and its matrix (solved in NumPy on any backend), so
a rerun computes nothing and draws the last one the same.
"""
from ..presets import Preset
from ..scan import Grid

HELP = "max-margin matrix and alignments (d=32)"


def preset(name, d, Ls, Ps):
    """The figure's ``Preset`` named ``name``: every (L, P) of ``Ls`` x ``Ps`` at ``d``, L-major."""
    return Preset(name, "max_margin", "Fig. C1: max-margin matrix and its limit (Theorem 1)",
                  (("matrix", "max_margin", Grid(d=d, L=list(Ls), P=list(Ps))),))


FULL = preset("figC1", 32, (256, 4096, 65536), (1024, 16384, 262144))
QUICK = preset("figC1-quick", 32, (256,), (256, 1024, 4096, 16384))


def report(spec, records, prefix):
    """Tabulate Fig. C1 (``fastsd.figures``): alignments and distance per (L, P); draw the last.

    ``summary`` holds ``rows``, one per (L, P); the drawing shows the last (L, P)'s matrix.
    """
    import numpy as np

    from ..theory import max_margin_ideal

    records = records["matrix"]
    d = spec.parts[0][2].fixed["d"]
    rows = [{"d": d, **{k: r[k] for k in ("L", "P", "top_alignment", "bottom_alignment",
                                          "relative_distance")}} for r in records]
    last = records[-1]
    title = f"Fig. C1: max-margin matrix, d = {d}, L = {last['L']}, P = {last['P']}"
    figures = plot_max_margin(np.array(last["matrix"]), max_margin_ideal(d), rows, prefix,
                              title=title)
    lines = [f"{'d':>4} {'L':>6} {'P':>7} {'top':>8} {'bottom':>8} {'distance':>9}"]
    for w in rows:
        lines.append(f"{w['d']:>4} {w['L']:>6} {w['P']:>7} {w['top_alignment']:>+8.4f} "
                     f"{w['bottom_alignment']:>+8.4f} {w['relative_distance']:>9.4f}")
    heading = ("alignment v1.v2/(|v1||v2|) of the top and bottom eigenvectors of the max-margin "
               "matrix, and its relative Frobenius distance to the limit")
    return heading, "\n".join(lines), {"rows": rows}, figures


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
    import numpy as np
    from matplotlib.ticker import FuncFormatter

    from .. import plots

    fig = plots._new_figure(7.2, 6.4)
    (m_ax, i_ax), (a_ax, d_ax) = fig.subplots(2, 2)
    vmax = float(np.abs(ideal).max())
    for ax, mat, name in ((m_ax, matrix, "empirical"), (i_ax, ideal, "ideal (P, L → ∞)")):
        im = plots._signed_image(ax, mat, vmax, name, 9)
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
    return plots._save(fig, out_prefix, title)
