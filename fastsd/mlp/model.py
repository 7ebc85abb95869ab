"""Parameters and initialisation of the centered two-layer ReLU MLP (Eq. 1, App. F)."""
from dataclasses import dataclass

import numpy as np

from .._validation import check_choice
from ..params import MLP

INITS = MLP["init"].choices


@dataclass(frozen=True)
class Params:
    """Weights of the two-layer bias-free MLP f(x) = scale * sum_i a_i relu(w_i . x).

    Attributes
    ----------
    w : ndarray, shape (m, p)
        Hidden weights, one row per hidden unit; p is the input length (2d).
    a : ndarray, shape (m,)
        Readout weights.
    """

    w: np.ndarray
    a: np.ndarray

    @property
    def width(self):
        """Number of hidden units m."""
        return self.a.shape[0]


def init_params(rng, width, input_dim, init="normal"):
    """Draw initial weights (App. G.1).

    Parameters
    ----------
    rng : numpy.random.Generator
    width : int
        Number of hidden units m.
    input_dim : int
        Input length p.
    init : {"normal", "truncated"}
        "normal": w_i ~ N(0, I/m), a_i ~ N(0, 1/m), as in the paper.
        "truncated": the published code's convention: w from a normal with
        sigma = 1/sqrt(m) truncated at +-2 sigma without variance correction
        (variance 0.774/m), and a from a truncated normal rescaled to
        variance 1/m (Flax ``lecun_normal``).

    Returns
    -------
    Params
        float64 weights.
    """
    check_choice("init", init, INITS)
    sigma = 1.0 / np.sqrt(width)
    if init == "normal":
        w = rng.standard_normal((width, input_dim)) * sigma
        a = rng.standard_normal(width) * sigma
    else:
        from scipy.stats import truncnorm     # slow to import: only when used

        w = truncnorm.rvs(-2, 2, size=(width, input_dim), random_state=rng) * sigma
        unit_std = truncnorm.std(-2, 2)
        a = truncnorm.rvs(-2, 2, size=width, random_state=rng) * sigma / unit_std
    return Params(w=w, a=a)
