"""Fig. A1: hidden weights as images, a rich and a lazy model on PSVRT and Pentomino (App. A).

One scan part of the "weight_images" predictor: on each task (images two cells a
side) the two models train in lockstep, each stored as a cell with its cell
correlations and the weight images of its units with the largest and the most
negative readout.
"""
from ..presets import Preset
from ..scan import Grid

HELP = "hidden weights as images, rich and lazy"


def preset(name, **settings):
    """The figure's ``Preset`` named ``name``: a rich and a lazy model on PSVRT and on
    Pentomino at ``settings`` (width, steps, eval_every, seed of "weight_images")."""
    return Preset(name, "images", "Fig. A1: parallel and antiparallel regions in hidden "
                  "weights (App. A)", (("models", "weight_images", Grid(
                      task=["PSVRT", "Pentomino"], model=["rich", "lazy"], **settings)),))


FULL = preset("figA1", width=512, steps=20_000, eval_every=2000, seed=0)
QUICK = preset("figA1-quick", width=256, steps=3000, eval_every=500, seed=0)


def report(spec, records, prefix):
    """Tabulate and draw Fig. A1 (``fastsd.figures``): cell correlations, weight images.

    ``summary`` holds ``rows``, one per (task, model).
    """
    import numpy as np

    cfg = spec.parts[0][2].fixed
    records = records["models"]
    rows = [{k: r[k] for k in ("task", "model", "gamma", "best_test_accuracy",
                               "cell_correlation_top16", "cell_correlation_all")}
            for r in records]
    shown = [(r["task"], r["model"], np.array(r["image_largest_a"]),
              np.array(r["image_most_negative_a"])) for r in records]
    figures = plot_weight_images(shown, prefix, title=f"Fig. A1: hidden weights as images "
                                 f"(m = {cfg['width']}, {cfg['steps']} steps)")
    lines = [f"{'task':>10} {'model':>6} {'best acc':>9} {'|corr| top16':>13} {'|corr| all':>11}"]
    for w in rows:
        lines.append(f"{w['task']:>10} {w['model']:>6} {w['best_test_accuracy']:>9.3f} "
                     f"{w['cell_correlation_top16']:>13.3f} {w['cell_correlation_all']:>11.3f}")
    heading = ("mean |correlation| between the image cells a unit reads, over the 16 units with "
               "the largest |a| and over all units")
    return heading, "\n".join(lines), {"rows": rows}, figures


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
    import numpy as np

    from .. import plots

    fig = plots._new_figure(2.0 * len(shown) + 0.6 * len({t for t, *_ in shown}), 4.4)
    axes = fig.subplots(2, len(shown), squeeze=False)
    for task in dict.fromkeys(t for t, *_ in shown):
        cols = [j for j, (t, *_) in enumerate(shown) if t == task]
        vmax = max(float(np.abs(img).max()) for j in cols for img in shown[j][2:]) or 1.0
        for j in cols:
            _, model, top, bottom = shown[j]
            for i, (img, which) in enumerate(((top, "largest a"), (bottom, "most negative a"))):
                im = plots._signed_image(axes[i, j], img, vmax, f"{task}, {model}\n{which}", 7)
        bar = fig.colorbar(im, ax=axes[:, cols].ravel().tolist(), shrink=0.8)
        bar.set_label(f"{task} weight", fontsize=7)
        bar.ax.tick_params(labelsize=6)
    return plots._save(fig, out_prefix, title)
