"""What the symbol-task grids share: the paper's training settings, the d x L grid, the report.

``PAPER_TRAINING`` and ``PAPER_GAMMAS`` are the published training settings and
gammas of Fig. 1 (m = 1024, 25k steps); ``QUICK_TRAINING`` and
``QUICK_GAMMAS`` those of the quick grids. ``report_accuracy`` tabulates and
draws a figure of test accuracy against one swept quantity (Fig. 1c, 1f, C3).
"""
from ..scan import Grid

PAPER_GAMMAS = ("lazy", 0.05, 0.1, 0.25, 0.5, 1.0)
PAPER_TRAINING = dict(width=1024, steps=25_000, eval_every=1000)
# Quick runs: the paper's d and m, fewer L (or d), gammas and seeds, and
# 10,000 steps instead of 25,000: the rich models' test accuracy is flat after
# ~500 steps and every model's training accuracy reaches 1 within ~1,000.
# Evaluating every 400 steps keeps the paper's 25 test checkpoints, so "best
# test accuracy" is the same statistic as in the paper, and, as with the
# paper's 1,000-step spacing, no checkpoint falls in the first few hundred
# steps, where lazy models pass through a transient above chance.
QUICK_GAMMAS = ("lazy", 0.1, 1.0)
QUICK_TRAINING = dict(width=1024, steps=10_000, eval_every=400)


def symbol_grid(ds, Ls, gammas, seeds, **common):
    """One "mlp" part over d x L x gamma x seed ("lazy" is gamma = 1e-5/sqrt(d))."""
    return (("mlp", "mlp", Grid(d=list(ds), L=list(Ls), gamma=list(gammas), seed=list(seeds),
                                **common)),)


def report_accuracy(preset, records, prefix):
    """Tabulate and draw test accuracy against ``preset.axis`` ("L" or "d"), a column per gamma.

    ``preset`` has one "mlp" part, drawn by ``fastsd.plots.plot_accuracy_vs``;
    otherwise as every figure's ``report`` (``fastsd.figures``), with
    ``fastsd.scan.summarize``'s table as ``summary``.
    """
    from ..plots import plot_accuracy_vs
    from ..scan import format_table, summarize

    mlp = records["mlp"]
    figures = plot_accuracy_vs(mlp, preset.axis, prefix, title=preset.title)
    summary = summarize(mlp, preset.axis)
    heading = "mean best test accuracy over seeds; Eq.3 = rich-regime theory"
    return heading, format_table(summary), summary, figures
