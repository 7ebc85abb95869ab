"""Fig. F1: activation change against gamma, with and without the 1/sqrt(d) prefactor (App. F).

Published grid: L = 16, m = 4096, d in {128, ..., 1024}, log10 gamma in
linspace(-5, 0, 11), 25k steps, 3 seeds.
"""
import numpy as np

from ..presets import Preset
from ..scan import Grid

HELP = "activation change vs gamma, with and without 1/sqrt(d)"
GAMMAS = tuple(10.0 ** e for e in np.linspace(-5, 0, 11))


def _grid(ds, gammas, seeds, **common):
    return (("mlp", "mlp", Grid(root_d=[False, True], d=list(ds), gamma=list(gammas),
                                seed=list(seeds), L=16, **common)),)


FULL = Preset(
    "figF1", "gamma", "Fig. F1: activation change vs gamma (L=16, m=4096)",
    _grid([128, 256, 512, 1024], GAMMAS, range(3), width=4096, steps=25_000, eval_every=1000))
QUICK = Preset(
    "figF1-quick", "gamma", "Fig. F1 (quick): activation change vs gamma (L=16, m=1024)",
    _grid([128, 512], GAMMAS[::2], range(1), width=1024, steps=3000, eval_every=500))


def report(preset, records, prefix):
    """Tabulate and draw Fig. F1 (``fastsd.figures``): mean activation change per gamma and d.

    ``summary`` is ``fastsd.scan.summarize_activation``'s table.
    """
    from ..scan import format_activation_table, summarize_activation

    mlp = records["mlp"]
    figures = plot_activation_change(mlp, prefix, title=preset.title)
    summary = summarize_activation(mlp)
    heading = "mean activation change |w(T).x - w(0).x| / |w(0).x| over seeds (App. F)"
    return heading, format_activation_table(summary), summary, figures


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
    from collections import defaultdict

    import matplotlib

    from .. import plots

    fig = plots._new_figure(8.0, 3.4)
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
    return plots._save(fig, out_prefix, title)
