"""Weight structure of walkers and trained networks (App. C.4, Fig. 1a/1d).

For a hidden unit with weights w = (v1; v2) (v1 acting on the first item of a
pair, v2 on the second), the paper reads its structure off the alignment
v1.v2 / (|v1| |v2|): +1 (parallel) for units with readout a > 0 and -1
(antiparallel) for a < 0 in the rich regime (App. C.4.1-C.4.2), and off the
readout magnitude ratio |mean a-| / |mean a+| (App. C.4.3). For a walker the
vectors are its coordinates omega1, omega2 in the basis of the training
symbols, orthonormal as d -> infinity, so the same formulas apply.
"""
import math
from dataclasses import dataclass, field

import numpy as np

from .._json import strict_json
from .._validation import check_array


def alignment(v1, v2):
    """Row-wise cosine v1.v2 / (|v1| |v2|).

    Parameters
    ----------
    v1, v2 : array_like, shape (n, k)
        One vector per row (walker coordinates omega1, omega2, or the two
        halves of hidden weights).

    Returns
    -------
    ndarray, shape (n,), float64
        In [-1, 1]; NaN where either vector is zero.

    Examples
    --------
    >>> alignment([[1, 2], [1, 0]], [[2, 4], [-3, 0]])
    array([ 1., -1.])
    """
    v1, v2 = np.asarray(v1, np.float64), np.asarray(v2, np.float64)
    n1, n2 = np.linalg.norm(v1, axis=1), np.linalg.norm(v2, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.einsum("ij,ij->i", v1, v2) / (n1 * n2)
    return np.clip(cos, -1.0, 1.0)


def norm_ratio(v1, v2):
    """Row-wise |v1| / |v2| (shape (n,)); inf where only v2 is zero, NaN where both are."""
    n1 = np.linalg.norm(np.asarray(v1, np.float64), axis=1)
    n2 = np.linalg.norm(np.asarray(v2, np.float64), axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return n1 / n2


def summary(values):
    """Mean and two standard deviations over the finite entries, as the paper reports.

    Parameters
    ----------
    values : array_like, shape (n,)
        Per-run values; NaN marks a run without a value (skipped, as the
        published simulation skips runs where a category never occurs).

    Returns
    -------
    dict
        ``mean``, ``two_sd`` (2 x the sample standard deviation, ddof=1; NaN
        for fewer than 2 values) and ``n_runs`` (the finite values used).
    """
    x = np.asarray(values, np.float64)
    x = x[np.isfinite(x)]
    mean = float(x.mean()) if x.size else math.nan
    two_sd = float(2 * x.std(ddof=1)) if x.size > 1 else math.nan
    return {"mean": mean, "two_sd": two_sd, "n_runs": int(x.size)}


def readout_ratio(a):
    """|mean of the negative readouts| / |mean of the positive readouts| (App. C.4.3).

    Returns NaN when a has no negative or no positive entry.
    """
    a = np.asarray(a, np.float64)
    neg, pos = a[a < 0], a[a > 0]
    if not (neg.size and pos.size):
        return math.nan
    return float(abs(neg.mean()) / abs(pos.mean()))


@dataclass(eq=False)
class WeightStructure:
    """Per-unit weight structure of a trained two-layer network (Fig. 1a/1d, App. C.4).

    Attributes
    ----------
    readout : ndarray, shape (m,)
        Final readouts a_i.
    alignment : ndarray, shape (m,)
        v1.v2 / (|v1||v2|) of the final hidden weights w_i = (v1; v2).
    alignment_change : ndarray, shape (m,)
        The same for the change w_i(T) - w_i(0) since initialisation.
    norm_ratio, norm_ratio_change : ndarray, shape (m,)
        |v1| / |v2| of the final weights and of their change.
    readout_ratio : float
        |mean a-| / |mean a+| of the final readouts (App. C.4.3; the published
        code's statistic, up to its sign).
    readout_ratio_change : float
        The same for the readout change a(T) - a(0).
    config : dict
        The training run's config.
    """

    readout: np.ndarray
    alignment: np.ndarray
    alignment_change: np.ndarray
    norm_ratio: np.ndarray
    norm_ratio_change: np.ndarray
    readout_ratio: float
    readout_ratio_change: float
    config: dict = field(default_factory=dict)

    def to_record(self):
        """Strict-JSON dict: the ratios, per-unit arrays (NaN -> null) and the config."""
        return strict_json({
            "readout_ratio": self.readout_ratio,
            "readout_ratio_change": self.readout_ratio_change,
            "alignment_positive": summary(self.alignment[self.readout > 0]),
            "alignment_negative": summary(self.alignment[self.readout < 0]),
            "readout": self.readout, "alignment": self.alignment,
            "alignment_change": self.alignment_change, "config": self.config})


def weight_structure(result):
    """Weight structure of a trained model: per-unit readout, alignment, readout ratio.

    Splits each hidden weight vector w_i (length 2d) into the halves v1, v2
    acting on the two items of a pair, and measures their alignment both on
    the final weights (what Fig. 1a/1d plot against a_i) and on the change
    since initialisation (the part that learning added, which App. C.2
    describes). The readout ratio |mean a-| / |mean a+| is App. C.4.3's: about
    1.5 for rich networks with L >= 3 and 1 for L = 2.

    Parameters
    ----------
    result : TrainResult
        A trained model (``fastsd.train`` or ``fastsd.train_ensemble``).

    Returns
    -------
    WeightStructure

    Raises
    ------
    TypeError
        When ``result`` has no ``initial_params`` / ``final_params``.
    ValueError
        When the hidden weights do not have an even input length or contain
        NaN or inf (a diverged run).

    Examples
    --------
    >>> from fastsd import SameDifferent, train
    >>> r = train(SameDifferent(d=16, L=4, seed=0), 1.0, width=32, steps=300, seed=1)
    >>> ws = weight_structure(r)
    >>> ws.alignment.shape, ws.readout.shape
    ((32,), (32,))
    """
    if not (hasattr(result, "initial_params") and hasattr(result, "final_params")):
        raise TypeError("`result` must be a TrainResult (with initial_params and final_params); "
                        f"got {type(result).__name__}.")
    w = check_array("result.final_params.w", result.final_params.w, ndim=2)
    w0 = check_array("result.initial_params.w", result.initial_params.w, shape=w.shape)
    a = check_array("result.final_params.a", result.final_params.a, shape=(w.shape[0],))
    a0 = check_array("result.initial_params.a", result.initial_params.a, shape=a.shape)
    if w.shape[1] % 2:
        raise ValueError("`result` must have hidden weights over pairs (an even input length "
                         f"2d); got input length {w.shape[1]}.")
    d = w.shape[1] // 2
    dw = w - w0
    return WeightStructure(
        readout=a, alignment=alignment(w[:, :d], w[:, d:]),
        alignment_change=alignment(dw[:, :d], dw[:, d:]),
        norm_ratio=norm_ratio(w[:, :d], w[:, d:]), norm_ratio_change=norm_ratio(dw[:, :d], dw[:, d:]),
        readout_ratio=readout_ratio(a), readout_ratio_change=readout_ratio(a - a0),
        config=dict(getattr(result, "config", {})))
