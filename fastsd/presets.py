"""The paper's figures as scan presets: named grids, each with a quick variant.

A ``Preset`` is the list of ``(predictor, Grid)`` parts behind one figure of
the paper, run through ``fastsd.scan.run``; ``PRESETS`` holds every figure's
full grid and a ``-quick`` variant that runs in minutes on a laptop.
"""
from dataclasses import dataclass

import numpy as np

from ._validation import check_choice
from .scan import Grid, get_predictor
from .scan.cells import Cell


@dataclass(frozen=True)
class Preset:
    """The grids of one figure.

    Attributes
    ----------
    name : str
        File stem of the results, e.g. "fig1c" or "fig1c-quick".
    axis : {"L", "d", "gamma"}
        The swept quantity on the figure's x-axis ("gamma": activation change,
        Fig. F1; otherwise test accuracy).
    title : str
        One line saying what the figure shows.
    parts : tuple of (str, str, Grid)
        Label, predictor name and grid of each part, run in order. A preset
        with one part stores it in ``<name>.jsonl``, one with several in
        ``<name>-<label>.jsonl``.
    """

    name: str
    axis: str
    title: str
    parts: tuple

    def store_name(self, label):
        """File stem of a part's store: the preset's name, plus the label with several parts."""
        return self.name if len(self.parts) == 1 else f"{self.name}-{label}"

    def cells(self, predictor="mlp"):
        """Return the prepared settings of every cell of the ``predictor`` parts.

        For "mlp" they are ``Cell`` objects, for the others dicts.
        """
        pred = get_predictor(predictor)
        out = [pred.prepare(s) for _, p, grid in self.parts if p == predictor
               for _, s in grid.cells()]
        return [Cell(**s) for s in out] if predictor == "mlp" else out


def _grid(ds, Ls, gammas, seeds, **common):
    """One "mlp" part over d x L x gamma x seed ("lazy" is gamma = 1e-5/sqrt(d))."""
    return (("mlp", "mlp", Grid(d=list(ds), L=list(Ls), gamma=list(gammas), seed=list(seeds),
                                **common)),)


_PAPER_GAMMAS = ("lazy", 0.05, 0.1, 0.25, 0.5, 1.0)
_PAPER = dict(width=1024, steps=25_000, eval_every=1000)
# Quick runs: the paper's d and m, fewer L (or d), gammas and seeds, and
# 10,000 steps instead of 25,000: the rich models' test accuracy is flat after
# ~500 steps and every model's training accuracy reaches 1 within ~1,000.
# Evaluating every 400 steps keeps the paper's 25 test checkpoints, so "best
# test accuracy" is the same statistic as in the paper, and, as with the
# paper's 1,000-step spacing, no checkpoint falls in the first few hundred
# steps, where lazy models pass through a transient above chance.
_QUICK_GAMMAS = ("lazy", 0.1, 1.0)
_QUICK = dict(width=1024, steps=10_000, eval_every=400)

PRESETS = {
    "fig1c": Preset(
        "fig1c", "L", "Fig. 1c: test accuracy vs number of training symbols L (d=256, m=1024)",
        _grid([256], [2 ** k for k in range(1, 11)], _PAPER_GAMMAS, range(3), **_PAPER)),
    "fig1c-quick": Preset(
        "fig1c-quick", "L", "Fig. 1c (quick): test accuracy vs L (d=256, m=1024)",
        _grid([256], [2, 3, 4, 6, 8, 16], _QUICK_GAMMAS, range(2), **_QUICK)),
    "fig1f": Preset(
        "fig1f", "d", "Fig. 1f: test accuracy vs input dimension d (L=16, m=1024)",
        _grid([2 ** k for k in range(4, 11)], [16], _PAPER_GAMMAS, range(3), **_PAPER)),
    "fig1f-quick": Preset(
        "fig1f-quick", "d", "Fig. 1f (quick): test accuracy vs d (L=16, m=1024)",
        _grid([16, 64, 256, 1024], [16], _QUICK_GAMMAS, range(2), **_QUICK)),
}


# Fig. C3: the ultra-rich regime, gamma > 1 with alpha = gamma sqrt(d) alpha0 (App. G.1);
# the published grid is d = 256, L = 2..12, log10 gamma in {0, .4, ..., 2}.
_ULTRA_GAMMAS = tuple(10.0 ** e for e in (0.0, 0.4, 0.8, 1.2, 1.6, 2.0))
PRESETS.update({
    "figC3": Preset(
        "figC3", "L", "Fig. C3: rich and ultra-rich test accuracy vs L (d=256, m=1024)",
        _grid([256], range(2, 13), _ULTRA_GAMMAS, range(3), **_PAPER)),
    "figC3-quick": Preset(
        "figC3-quick", "L", "Fig. C3 (quick): ultra-rich test accuracy vs L (d=256, m=1024)",
        _grid([256], [2, 3, 4, 6, 8], _ULTRA_GAMMAS[::2] + (100.0,), range(2), **_QUICK)),
})
# Fig. F1: activation change against gamma, with and without the 1/sqrt(d)
# prefactor; published grid L = 16, m = 4096, d in {128, ..., 1024},
# log10 gamma in linspace(-5, 0, 11), 25k steps, 3 seeds.
_F1_GAMMAS = tuple(10.0 ** e for e in np.linspace(-5, 0, 11))


def _f1_grid(ds, gammas, seeds, **common):
    return (("mlp", "mlp", Grid(root_d=[False, True], d=list(ds), gamma=list(gammas),
                                seed=list(seeds), L=16, **common)),)


PRESETS.update({
    "figF1": Preset(
        "figF1", "gamma", "Fig. F1: activation change vs gamma (L=16, m=4096)",
        _f1_grid([128, 256, 512, 1024], _F1_GAMMAS, range(3), width=4096, steps=25_000,
                 eval_every=1000)),
    "figF1-quick": Preset(
        "figF1-quick", "gamma", "Fig. F1 (quick): activation change vs gamma (L=16, m=1024)",
        _f1_grid([128, 512], _F1_GAMMAS[::2], range(1), width=1024, steps=3000,
                 eval_every=500)),
})
# Fig. 1b: the rich model (gamma = 1) over d x L; published grid m = 4096, 50k steps,
# 3 seeds, d and L in round(2^linspace(1, 10, 20)) = 2, 3, 4, 5, 7, ..., 1024.
_1B_AXIS = sorted({int(round(v)) for v in 2.0 ** np.linspace(1, 10, 20)})
PRESETS.update({
    "fig1b": Preset(
        "fig1b", "heatmap", "Fig. 1b: rich (gamma=1) test accuracy over d and L (m=4096)",
        _grid(_1B_AXIS, _1B_AXIS, [1.0], range(3), width=4096, steps=50_000, eval_every=2000)),
    "fig1b-quick": Preset(
        "fig1b-quick", "heatmap", "Fig. 1b (quick): rich (gamma=1) test accuracy over d and L "
        "(m=1024)", _grid([16, 64, 256, 1024], [2, 3, 5, 10, 28], [1.0], range(2), width=1024,
                          steps=2000, eval_every=200)),
})
GRID_FIGURES = ("fig1b", "fig1c", "fig1e", "fig1f", "fig2", "fig3", "figC3", "figF1")

#: Fig. C1 is no training grid: max-margin matrices over (L, P) at one d.
MAX_MARGIN = {
    "figC1": dict(d=32, Ls=(256, 4096, 65536), Ps=(1024, 16384, 262144)),
    "figC1-quick": dict(d=32, Ls=(256,), Ps=(256, 1024, 4096, 16384)),
}
# Fig. 1e: the lazy model over d x L. The paper uses finite networks (m = 4096, gamma =
# 1e-5, 50k steps) on d, L in 128..1024; here the heatmap is the exact gamma -> 0,
# infinite-width network (fastsd.kernels.lazy_limit, logistic flow over all ordered
# pairs), whose cost grows like L^4, so its grid sits at smaller d and L, with finite
# gamma ~ 0 networks on a few of the same cells (same symbols) to compare.
_1E_D = sorted({int(round(v)) for v in 2.0 ** np.linspace(2, 6, 9)})
_1E_L = sorted({int(round(v)) for v in 2.0 ** np.linspace(2, 7, 11)})
PRESETS.update({
    "fig1e": Preset(
        "fig1e", "lazy_heatmap", "Fig. 1e: lazy (gamma -> 0) test accuracy over d and L",
        (("lazy_limit", "lazy_limit", Grid(d=_1E_D, L=_1E_L, seed=[0, 1, 2], steps=25_000,
                             eval_every=1000, n_test=1024)),
         ("mlp", "mlp", Grid(d=[8, 16, 32, 64], L=[8, 32, 128], gamma="lazy", seed=[0, 1, 2],
                      width=4096, steps=25_000, eval_every=1000, n_test=1024)))),
    "fig1e-quick": Preset(
        "fig1e-quick", "lazy_heatmap", "Fig. 1e (quick): lazy (gamma -> 0) test accuracy "
        "over d and L", (("lazy_limit", "lazy_limit", Grid(d=[4, 8, 16, 32], L=[4, 8, 16, 32, 64], seed=0,
                                             steps=5000, eval_every=1000, n_test=1024)),
                         ("mlp", "mlp", Grid(d=[8, 16, 32], L=[16, 64], gamma="lazy", seed=0,
                                      width=1024, steps=5000, eval_every=1000,
                                      n_test=1024)))),
})

# Fig. 2: the noisy task (Sec. 3.4) with both Bayes-optimal classifiers (App. E). Published:
# d = 64, m = 1024, sigma2 in {0, 1, 2, 4}, L = 2^1..2^13, log10 gamma in linspace(-5, 0, 11)
# (-5 is the lazy 1e-5/sqrt(d)), 25k steps, 3 seeds. The quick grid keeps every fourth L
# (both ends, so the comparison with Bayes runs at L = 8192), lazy and gamma = 1, one seed,
# 8000 steps (gamma = 1 at sigma2 = 4, L = 8192 levels off between 4000 and 8000 steps) and
# 10 evaluations on 4096 pairs (fewer, larger test sets: "best over the history" then
# overstates the accuracy by about 0.01 instead of up to 0.03).
_F2_SIGMA2 = [0.0, 1.0, 2.0, 4.0]
_F2_GAMMAS = ["lazy"] + [float(10.0 ** e) for e in np.linspace(-4.5, 0, 10)]
_F2_LS = [2 ** k for k in range(1, 14)]
PRESETS.update({
    "fig2": Preset(
        "fig2", "noisy", "Fig. 2: noisy task, test accuracy vs L with the Bayes-optimal "
        "accuracies (d=64, m=1024)",
        (("mlp", "mlp", Grid(sigma2=_F2_SIGMA2, L=_F2_LS, gamma=_F2_GAMMAS, seed=[0, 1, 2], d=64,
                      **_PAPER)),
         ("bayes", "bayes", Grid(sigma2=_F2_SIGMA2, L=_F2_LS, prior=["generalizing", "memorizing"],
                        seed=[0, 1, 2], d=64, n_test=20_000)))),
    "fig2-quick": Preset(
        "fig2-quick", "noisy", "Fig. 2 (quick): noisy task, test accuracy vs L with the "
        "Bayes-optimal accuracies (d=64, m=1024)",
        (("mlp", "mlp", Grid(sigma2=_F2_SIGMA2, L=[2, 32, 512, 8192], gamma=["lazy", 1.0], seed=0,
                      d=64, width=1024, steps=8000, eval_every=800, n_test=4096)),
         ("bayes", "bayes", Grid(sigma2=_F2_SIGMA2, L=[2, 32, 512, 8192],
                        prior=["generalizing", "memorizing"], seed=0, d=64, n_test=20_000)))),
})

# Fig. 3 (b, c, e, f): the visual tasks over gamma (Sec. 4, App. G.3-G.4). Published code:
# m = 512, 100k steps, 3 seeds; b: PSVRT on 5 x 5 patches, 16..2048 training patterns;
# c: 1024 patterns, 2..10 patches a side; e: Pentomino width 2, 2..16 training shapes;
# f: 14 shapes, width 2..10. The quick grid: m = 256, 3000 steps (the rich models are still
# improving; the lazy ones are flat), 2 seeds, fewer x values.
_F3_GAMMAS = ["lazy", 1e-4, 1e-3, 1e-2, 1e-1, 1.0]


def _f3_parts(seeds, train, b, c, c_L, e, f):
    common = dict(gamma=_F3_GAMMAS, seed=list(seeds), **train)
    return (("b", "mlp_image", Grid(task="psvrt", L=b, patch=5, n_patches=5, **common)),
            ("c", "mlp_image", Grid(task="psvrt", n_patches=c, L=c_L, patch=5,
                                    **common)),
            ("e", "mlp_image", Grid(task="pentomino", L=e, image_width=2, blur=0.5, **common)),
            ("f", "mlp_image", Grid(task="pentomino", image_width=f, L=14, blur=0.5, **common)))


PRESETS.update({
    "fig3": Preset(
        "fig3", "visual", "Fig. 3: PSVRT (b, c) and Pentomino (e, f) test accuracy over gamma",
        _f3_parts(range(3), dict(width=512, steps=100_000, eval_every=5000, n_test=1024),
                  b=[16, 32, 64, 128, 256, 512, 1024, 2048], c=list(range(2, 11)), c_L=1024,
                  e=list(range(2, 17, 2)), f=list(range(2, 11)))),
    "fig3-quick": Preset(
        "fig3-quick", "visual", "Fig. 3 (quick): PSVRT (b, c) and Pentomino (e, f) test "
        "accuracy over gamma (m=256, 3000 steps)",
        _f3_parts(range(2), dict(width=256, steps=3000, eval_every=250, n_test=1024),
                  b=[16, 64, 256, 1024], c=[2, 4, 6], c_L=256, e=[2, 6, 10, 16], f=[2, 3, 4])),
})

#: Fig. A1: hidden weights as images, a rich and a lazy model on PSVRT and Pentomino with
#: two cells a side (App. A).
WEIGHT_IMAGES = {
    "figA1": dict(width=512, steps=20_000, eval_every=2000, seed=0),
    "figA1-quick": dict(width=256, steps=3000, eval_every=500, seed=0),
}

#: Fig. 1a/1d trains one rich and one lazy model and reads their weight structure.
WEIGHT_STRUCTURE = {
    "fig1a": dict(d=128, L=16, width=1024, steps=15_000, eval_every=3000, seed=0),
    "fig1a-quick": dict(d=128, L=16, width=256, steps=2000, eval_every=400, seed=0),
}
FIGURES = ("fig1a",) + GRID_FIGURES + ("figA1", "figC1")


def get_preset(figure, quick=False):
    """Return the grid of ``figure`` (one of ``GRID_FIGURES``), optionally its quick variant.

    Raises
    ------
    ValueError
        For an unknown figure.
    """
    check_choice("figure", figure, GRID_FIGURES)
    return PRESETS[f"{figure}-quick" if quick else figure]
