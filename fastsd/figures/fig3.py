"""Fig. 3 (b, c, e, f): the visual tasks over gamma (Sec. 4, App. G.3-G.4).

Published code: m = 512, 100k steps, 3 seeds; b: PSVRT on 5 x 5 patches,
16..2048 training patterns; c: 1024 patterns, 2..10 patches a side; e:
Pentomino width 2, 2..16 training shapes; f: 14 shapes, width 2..10. The quick
grid: m = 256, 3000 steps (the rich models are still improving; the lazy ones
are flat), 2 seeds, fewer x values.
"""
from ..presets import Preset
from ..scan import Grid

HELP = "PSVRT and Pentomino over gamma"
GAMMAS = ["lazy", 1e-4, 1e-3, 1e-2, 1e-1, 1.0]
#: The x axis of each panel and its label.
AXES = {"b": ("L", "training bit-patterns (PSVRT, 5 x 5 patches)"),
        "c": ("n_patches", "image side in patches (PSVRT)"),
        "e": ("L", "training shapes (Pentomino, width 2)"),
        "f": ("image_width", "image side in cells (Pentomino)")}


def _parts(seeds, train, b, c, c_L, e, f):
    common = dict(gamma=GAMMAS, seed=list(seeds), **train)
    return (("b", "mlp_image", Grid(task="psvrt", L=b, patch=5, n_patches=5, **common)),
            ("c", "mlp_image", Grid(task="psvrt", n_patches=c, L=c_L, patch=5,
                                    **common)),
            ("e", "mlp_image", Grid(task="pentomino", L=e, image_width=2, blur=0.5, **common)),
            ("f", "mlp_image", Grid(task="pentomino", image_width=f, L=14, blur=0.5, **common)))


FULL = Preset(
    "fig3", "visual", "Fig. 3: PSVRT (b, c) and Pentomino (e, f) test accuracy over gamma",
    _parts(range(3), dict(width=512, steps=100_000, eval_every=5000, n_test=1024),
           b=[16, 32, 64, 128, 256, 512, 1024, 2048], c=list(range(2, 11)), c_L=1024,
           e=list(range(2, 17, 2)), f=list(range(2, 11))))
QUICK = Preset(
    "fig3-quick", "visual", "Fig. 3 (quick): PSVRT (b, c) and Pentomino (e, f) test "
    "accuracy over gamma (m=256, 3000 steps)",
    _parts(range(2), dict(width=256, steps=3000, eval_every=250, n_test=1024),
           b=[16, 64, 256, 1024], c=[2, 4, 6], c_L=256, e=[2, 6, 10, 16], f=[2, 3, 4]))


def report(preset, records, prefix):
    """Tabulate and draw Fig. 3 (``fastsd.figures``): per panel, accuracy per x value and gamma.

    ``summary`` holds ``panels``, one ``fastsd.scan.summarize`` table per part (``AXES``).
    """
    from ..scan import format_table, summarize

    panels, text, blocks = [], [], []
    for label, _, _ in preset.parts:
        axis, xlabel = AXES[label]
        table = summarize(records[label], axis)
        blocks.append({"panel": label, "axis": axis, "table": table})
        text += [f"Fig. 3{label}: {xlabel}", format_table(table, eq3=False), ""]
        panels.append((f"({label}) {xlabel}", records[label], axis))
    figures = plot_panels(panels, prefix, title=preset.title)
    heading = "mean best test accuracy over seeds on held-out patterns / shapes, per gamma"
    return heading, "\n".join(text).rstrip(), {"panels": blocks}, figures


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
    import numpy as np
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    from .. import plots

    fig = plots._new_figure(3.0 * len(panels) + 1.6, 3.2)
    axes = np.atleast_1d(fig.subplots(1, len(panels), sharey=True))
    banded = False
    for ax, (name, records, axis) in zip(axes, panels):
        banded |= plots._draw_gammas(ax, records, axis)
        plots._chance(ax)
        if axis == "L":
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(name, fontsize=8)
        ax.set_ylim(0.45, 1.02)
    return plots._finish_panels(fig, axes, out_prefix, title, banded)
