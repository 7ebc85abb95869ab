"""Fig. 2: the noisy task (Sec. 3.4), test accuracy against L with both Bayes-optimal accuracies.

Published: d = 64, m = 1024, sigma2 in {0, 1, 2, 4}, L = 2^1..2^13, log10 gamma
in linspace(-5, 0, 11) (-5 is the lazy 1e-5/sqrt(d)), 25k steps, 3 seeds, and
the Bayes-optimal classifiers under both priors (App. E). The quick grid keeps
every fourth L (both ends, so the comparison with Bayes runs at L = 8192),
lazy and gamma = 1, one seed, 8000 steps (by which gamma = 1 at sigma2 = 4,
L = 8192 has levelled off) and 10 evaluations on 4096 pairs (fewer, larger
test sets: "best over the history" then overstates the accuracy less).
"""
import numpy as np

from ..presets import Preset
from ..scan import Grid
from ._grid import PAPER_TRAINING

HELP = "noisy task vs L with the Bayes-optimal accuracies"
SIGMA2 = [0.0, 1.0, 2.0, 4.0]
GAMMAS = ["lazy"] + [float(10.0 ** e) for e in np.linspace(-4.5, 0, 10)]
LS = [2 ** k for k in range(1, 14)]
FULL = Preset(
    "fig2", "noisy", "Fig. 2: noisy task, test accuracy vs L with the Bayes-optimal "
    "accuracies (d=64, m=1024)",
    (("mlp", "mlp", Grid(sigma2=SIGMA2, L=LS, gamma=GAMMAS, seed=[0, 1, 2], d=64,
                         **PAPER_TRAINING)),
     ("bayes", "bayes", Grid(sigma2=SIGMA2, L=LS, prior=["generalizing", "memorizing"],
                             seed=[0, 1, 2], d=64, n_test=20_000))))
QUICK = Preset(
    "fig2-quick", "noisy", "Fig. 2 (quick): noisy task, test accuracy vs L with the "
    "Bayes-optimal accuracies (d=64, m=1024)",
    (("mlp", "mlp", Grid(sigma2=SIGMA2, L=[2, 32, 512, 8192], gamma=["lazy", 1.0], seed=0,
                         d=64, width=1024, steps=8000, eval_every=800, n_test=4096)),
     ("bayes", "bayes", Grid(sigma2=SIGMA2, L=[2, 32, 512, 8192],
                             prior=["generalizing", "memorizing"], seed=0, d=64,
                             n_test=20_000))))


def report(preset, records, prefix):
    """Tabulate and draw Fig. 2 (``fastsd.figures``): per sigma2, accuracy per L beside Bayes.

    ``summary`` holds ``blocks``, one ``fastsd.scan.summarize`` table per sigma2 with the
    columns "Bayes gen." and "Bayes mem." (the "bayes" part's accuracies) added.
    """
    from collections import defaultdict

    from ..scan import format_table, summarize

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
    figures = plot_noisy(mlp, bayes, prefix, title=preset.title)
    heading = ("mean best test accuracy over seeds per sigma2, with the Bayes-optimal accuracy "
               "under the generalizing and the memorizing prior (App. E)")
    return heading, "\n".join(text).rstrip(), {"blocks": blocks}, figures


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
    from collections import defaultdict

    from matplotlib.ticker import FuncFormatter

    from .. import plots

    plots._check_records(mlp_records, "d")
    sigma2s = sorted({r["sigma2"] for r in mlp_records})
    fig = plots._new_figure(3.0 * len(sigma2s) + 1.6, 3.2)
    axes = np.atleast_1d(fig.subplots(1, len(sigma2s), sharey=True))
    styles = {"generalizing": ("--", "Bayes (generalizing)"),
              "memorizing": ("-.", "Bayes (memorizing)")}
    banded = False
    for ax, s2 in zip(axes, sigma2s):
        banded |= plots._draw_gammas(ax, [r for r in mlp_records if r["sigma2"] == s2], "L")
        for prior, (style, label) in styles.items():
            pts = defaultdict(list)
            for r in bayes_records:
                if r["sigma2"] == s2 and r["prior"] == prior:
                    pts[r["L"]].append(r["accuracy"])
            if pts:
                Ls = sorted(pts)
                ax.plot(Ls, [np.mean(pts[L]) for L in Ls], style, lw=1.2, label=label,
                        color="k" if prior == "generalizing" else "0.45")
        plots._chance(ax)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("training symbols L")
        ax.set_title(f"σ² = {s2:g}", fontsize=9)
        ax.set_ylim(0.45, 1.02)
    return plots._finish_panels(fig, axes, out_prefix, title, banded)
