"""Fig. 1b: the rich model's (gamma = 1) test accuracy over d and L, as a heatmap.

Published grid: m = 4096, 50k steps, 3 seeds, d and L in
round(2^linspace(1, 10, 20)) = 2, 3, 4, 5, 7, ..., 1024.
"""
import numpy as np

from ..presets import Preset
from ._grid import symbol_grid

HELP = "rich accuracy over d x L"
AXIS = sorted({int(round(v)) for v in 2.0 ** np.linspace(1, 10, 20)})
FULL = Preset(
    "fig1b", "heatmap", "Fig. 1b: rich (gamma=1) test accuracy over d and L (m=4096)",
    symbol_grid(AXIS, AXIS, [1.0], range(3), width=4096, steps=50_000, eval_every=2000))
QUICK = Preset(
    "fig1b-quick", "heatmap", "Fig. 1b (quick): rich (gamma=1) test accuracy over d and L "
    "(m=1024)", symbol_grid([16, 64, 256, 1024], [2, 3, 5, 10, 28], [1.0], range(2),
                            width=1024, steps=2000, eval_every=200))


def report(preset, records, prefix):
    """Tabulate and draw Fig. 1b (``fastsd.figures``): mean accuracy per (L, d), a heatmap.

    ``summary`` is ``fastsd.scan.summarize``'s table, rows L, columns d.
    """
    from ..plots import plot_heatmap
    from ..scan import format_table, summarize

    mlp = records["mlp"]
    figures = plot_heatmap(mlp, prefix, title=preset.title)
    summary = summarize(mlp, "L", columns="d")
    heading = "mean best test accuracy over seeds, rows L, columns d"
    return heading, format_table(summary), summary, figures
