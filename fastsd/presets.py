"""The paper's simulation grids as data: cells, presets and gamma labels.

A ``Cell`` is one training run of the same-different task (Sec. 2); a
``Preset`` is the list of cells behind one figure. ``PRESETS`` holds the
grids of Fig. 1c (accuracy vs L, d = 256) and Fig. 1f (accuracy vs d,
L = 16), each with a ``quick`` variant that runs in minutes on a laptop.
"""
import math
from dataclasses import asdict, dataclass, fields
from itertools import product

import numpy as np

from ._validation import check_choice, check_float, check_int

#: gamma * sqrt(d) of the paper's "gamma ~ 0" (lazy) models: gamma = 1e-5/sqrt(d).
LAZY_GAMMA_SQRT_D = 1e-5


def lazy_gamma(d):
    """Return the paper's "gamma ~ 0", 1e-5/sqrt(d) (Sec. 2, App. G.1)."""
    return LAZY_GAMMA_SQRT_D / math.sqrt(d)


def derive_task_seed(seed, L, d):
    """Return the seed of a cell's training symbols, derived from (seed, L, d).

    Cells that differ only in gamma share their symbols, and a rerun draws the
    same symbols; the symbols do not share a stream with the model, whose seed
    is ``seed`` itself.

    Parameters
    ----------
    seed, L, d : int

    Returns
    -------
    int
        A non-negative 63-bit integer.
    """
    state = np.random.SeedSequence([seed, L, d]).generate_state(1, np.uint64)[0]
    return int(state >> np.uint64(1))


@dataclass(frozen=True)
class Cell:
    """One training run: a ``SameDifferent`` task and an MLP trained on it.

    Parameters
    ----------
    d, L : int
        Symbol dimension and number of training symbols.
    gamma : float
        Richness (Eq. 1).
    seed : int
        Model seed (initialisation, batches, test sets).
    width, steps : int
        Hidden units m and SGD steps.
    sigma2 : float, default 0.0
        Input noise variance.
    batch_size, eval_every, n_test : int
        As in ``fastsd.train``.
    alpha0 : float, optional
        Base learning rate; None for the task's default (0.1).
    init : {"normal", "truncated"}
    task_seed : int, optional
        Seed of the training symbols; None derives it from (seed, L, d) with
        ``derive_task_seed``.
    root_d : bool, default True
        Keep the 1/sqrt(d) output prefactor (see ``SameDifferent``).

    Raises
    ------
    ValueError, TypeError
        When a field is out of range or of the wrong type.
    """

    d: int
    L: int
    gamma: float
    seed: int
    width: int
    steps: int
    sigma2: float = 0.0
    batch_size: int = 128
    eval_every: int = 1000
    n_test: int = 1024
    alpha0: float = None
    init: str = "normal"
    task_seed: int = None
    root_d: bool = True

    def __post_init__(self):
        ints = {"d": 1, "L": 2, "seed": 0, "width": 1, "steps": 1, "batch_size": 1,
                "eval_every": 1, "n_test": 1}
        for name, minimum in ints.items():
            object.__setattr__(self, name, check_int(name, getattr(self, name), minimum))
        object.__setattr__(self, "gamma", check_float("gamma", self.gamma, positive=True))
        object.__setattr__(self, "sigma2", check_float("sigma2", self.sigma2, nonnegative=True))
        if self.alpha0 is not None:
            object.__setattr__(self, "alpha0", check_float("alpha0", self.alpha0, positive=True))
        check_choice("init", self.init, ("normal", "truncated"))
        check_choice("root_d", self.root_d, (True, False))
        task_seed = (derive_task_seed(self.seed, self.L, self.d) if self.task_seed is None
                     else check_int("task_seed", self.task_seed, 0))
        object.__setattr__(self, "task_seed", task_seed)

    @property
    def key(self):
        """Stable string naming the cell: every field as ``name=repr(value)``, sorted by name."""
        return ",".join(f"{f}={getattr(self, f)!r}" for f in sorted(asdict(self)))

    def ensemble_key(self):
        """Return the fields an ensemble shares: all but gamma, seed and task_seed.

        Cells with equal ensemble keys train together in one
        ``train_ensemble`` call (same d, L, width, steps, ...).
        """
        return tuple(getattr(self, f.name) for f in fields(self)
                     if f.name not in ("gamma", "seed", "task_seed"))


@dataclass(frozen=True)
class Preset:
    """The grid of one figure.

    Attributes
    ----------
    name : str
        File stem of the results, e.g. "fig1c" or "fig1c-quick".
    axis : {"L", "d", "gamma"}
        The swept quantity on the figure's x-axis ("gamma": activation change,
        Fig. F1; otherwise test accuracy).
    title : str
        One line saying what the figure shows.
    cells : tuple of Cell
    """

    name: str
    axis: str
    title: str
    cells: tuple


def gamma_group(gamma, d):
    """Return the column a model belongs to: 0.0 for the lazy gamma = 1e-5/sqrt(d), else gamma.

    The lazy gamma depends on d, so grouping by the raw value would split
    Fig. 1f's lazy curve into one point per d.
    """
    return 0.0 if math.isclose(gamma * math.sqrt(d), LAZY_GAMMA_SQRT_D, rel_tol=1e-9) else gamma


def gamma_label(group):
    """Legend label of a gamma group, e.g. "γ≈0 (1e-5/√d)" or "γ = 0.1"."""
    return "γ≈0 (1e-5/√d)" if group == 0.0 else f"γ = {group:.3g}"


def gamma_name(group):
    """ASCII column name of a gamma group, e.g. "gamma~0" or "gamma=0.1"."""
    return "gamma~0" if group == 0.0 else f"gamma={group:.3g}"


def _grid(ds, Ls, richness, seeds, **common):
    """Cells over d x L x gamma x seed; ``richness`` holds None for the lazy gamma."""
    return tuple(Cell(d=d, L=L, gamma=lazy_gamma(d) if g is None else g, seed=s, **common)
                 for d, L, g, s in product(ds, Ls, richness, seeds))


_PAPER_GAMMAS = (None, 0.05, 0.1, 0.25, 0.5, 1.0)
_PAPER = dict(width=1024, steps=25_000, eval_every=1000)
# Quick runs: the paper's d and m, fewer L (or d), gammas and seeds, and
# 10,000 steps instead of 25,000: the rich models' test accuracy is flat after
# ~500 steps and every model's training accuracy reaches 1 within ~1,000.
# Evaluating every 400 steps keeps the paper's 25 test checkpoints, so "best
# test accuracy" is the same statistic as in the paper, and, as with the
# paper's 1,000-step spacing, no checkpoint falls in the first few hundred
# steps, where lazy models pass through a transient above chance.
_QUICK_GAMMAS = (None, 0.1, 1.0)
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
    return tuple(Cell(d=d, L=16, gamma=g, seed=s, root_d=rd, **common)
                 for rd, d, g, s in product((False, True), ds, gammas, seeds))


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
GRID_FIGURES = ("fig1c", "fig1f", "figC3", "figF1")

#: Fig. C1 is no training grid: max-margin matrices over (L, P) at one d.
MAX_MARGIN = {
    "figC1": dict(d=32, Ls=(256, 4096, 65536), Ps=(1024, 16384, 262144)),
    "figC1-quick": dict(d=32, Ls=(256,), Ps=(256, 1024, 4096, 16384)),
}
FIGURES = GRID_FIGURES + ("figC1",)


def get_preset(figure, quick=False):
    """Return the grid of ``figure`` (one of ``GRID_FIGURES``), optionally its quick variant.

    Raises
    ------
    ValueError
        For an unknown figure.
    """
    check_choice("figure", figure, GRID_FIGURES)
    return PRESETS[f"{figure}-quick" if quick else figure]
