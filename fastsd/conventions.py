"""The paper's conventions, in one place: the lazy gamma, the symbols' seed, gamma's names.

* "gamma ~ 0" (lazy) is gamma = 1e-5/sqrt(d) on the symbol task (Sec. 2,
  App. G.1) and 1e-5 on the image tasks, which have no sqrt(d) factor
  (App. G.3-G.4); ``gamma="lazy"`` means it everywhere (``is_lazy``,
  ``lazy_gamma``, ``Task.lazy_gamma``, ``IMAGE_LAZY_GAMMA``).
* A cell's training symbols come from (seed, L, d) (``derive_task_seed``),
  so cells that differ only in gamma, or in the predictor, share symbols.
* Tables and legends group the lazy gamma of every d into one column
  (``gamma_group``) and name it "gamma~0" / "γ≈0 (1e-5/√d)".
"""
import math

import numpy as np

from ._validation import check_int

#: gamma * sqrt(d) of the paper's "gamma ~ 0" (lazy) models: gamma = 1e-5/sqrt(d) on the
#: symbol task (Sec. 2, App. G.1); tasks without the sqrt(d) factor use gamma = 1e-5.
LAZY_GAMMA_SQRT_D = 1e-5


#: The paper's "gamma ~ 0" on an image task, which has no sqrt(d) factor (App. G.3-G.4):
#: what ``ImageTask.lazy_gamma()`` gives, the number itself.
IMAGE_LAZY_GAMMA = LAZY_GAMMA_SQRT_D


def is_lazy(gamma):
    """True for the setting gamma = "lazy"; any other string is an error.

    Raises
    ------
    ValueError
        For a string other than "lazy" (e.g. "LAZY"), naming both spellings
        that are accepted.
    """
    if isinstance(gamma, str) and gamma != "lazy":
        raise ValueError(f"`gamma` must be a number > 0 or 'lazy' (the paper's gamma ~ 0); got "
                         f"{gamma!r}.")
    return gamma == "lazy"


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

    Raises
    ------
    ValueError, TypeError
        When seed, L or d is not an integer >= 0, naming it.
    """
    seed, L, d = (check_int(n, v, 0) for n, v in (("seed", seed), ("L", L), ("d", d)))
    state = np.random.SeedSequence([seed, L, d]).generate_state(1, np.uint64)[0]
    return int(state >> np.uint64(1))


def resolve_task_seed(task_seed, seed, L, d):
    """Return ``task_seed`` checked (an integer >= 0), or derived from (seed, L, d) when None.

    Every predictor that uses training symbols resolves its task seed here,
    so that cells of one (seed, L, d) share their symbols across predictors.
    """
    if task_seed is None:
        return derive_task_seed(seed, L, d)
    return check_int("task_seed", task_seed, 0)


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
