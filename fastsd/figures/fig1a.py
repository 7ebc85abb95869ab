"""Fig. 1a/1d: hidden-weight alignment against readout, one rich and one lazy model.

One scan part of the "weight_structure" predictor: the two models (gamma = 1 and
the lazy 1e-5/sqrt(d)) train in lockstep on one task, each stored as a cell with
its weight structure (``fastsd.walkers.weight_structure``), so a rerun trains
nothing.
"""
from ..presets import Preset
from ..scan import Grid

HELP = "weight alignment vs readout, rich and lazy (d=128, L=16)"


def preset(name, **settings):
    """The figure's ``Preset`` named ``name``: the rich and the lazy model at ``settings``
    (d, L, width, steps, eval_every, seed of the "weight_structure" predictor)."""
    return Preset(name, "readout", "Fig. 1a/1d: hidden-weight alignment against readout",
                  (("models", "weight_structure", Grid(model=["rich", "lazy"], **settings)),))


FULL = preset("fig1a", d=128, L=16, width=1024, steps=15_000, eval_every=3000, seed=0)
QUICK = preset("fig1a-quick", d=128, L=16, width=256, steps=2000, eval_every=400, seed=0)


def report(spec, records, prefix):
    """Tabulate and draw Fig. 1a/1d (``fastsd.figures``): alignments and readout ratio per model.

    ``summary`` holds ``rows``, one per model.
    """
    cfg = spec.parts[0][2].fixed
    records = records["models"]
    rows = [{k: r[k] for k in ("model", "gamma", "best_test_accuracy", "alignment_positive",
                               "alignment_negative", "readout_ratio")} for r in records]
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
    heading = ("mean alignment v1.v2/(|v1||v2|) of units with a > 0 and a < 0, and the readout "
               "ratio |mean a-|/|mean a+| (App. C.4.3)")
    return heading, "\n".join(lines), {"rows": rows}, figures


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
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    from .. import plots

    fig = plots._new_figure(7.2, 3.2)
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
    return plots._save(fig, out_prefix, title)
