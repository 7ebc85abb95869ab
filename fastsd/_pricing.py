"""Time models by counted work units: a prediction is counts times prices in seconds.

Shared by the MLP's cost model (``fastsd.mlp.costs``), the Bayes-optimal part
(``fastsd.bayes``) and the lazy limit (``fastsd.kernels.costs``): each states
what a call does as counts of its own units; the prices are non-negative, so a
prediction grows with every count.
"""
import numpy as np


def predict(prices, features):
    """Seconds of ``features`` (unit -> count) at ``prices`` (unit -> seconds); a unit
    without a price costs nothing."""
    return float(sum(prices.get(unit, 0.0) * count for unit, count in features.items()))


def fit(rows, seconds):
    """Prices that best predict measured ``seconds`` from ``rows`` of counts: non-negative
    least squares on relative error.

    Parameters
    ----------
    rows : sequence of dict of str to float
        The counts of each measurement, all with the same units.
    seconds : sequence of float
        The measured times, > 0.

    Returns
    -------
    dict of str to float
        A price >= 0 for every unit.
    """
    from scipy.optimize import nnls

    units = list(rows[0])
    seconds = np.asarray(seconds, dtype=float)
    A = np.array([[row[u] for u in units] for row in rows], dtype=float) / seconds[:, None]
    norm = np.linalg.norm(A, axis=0)
    norm[norm == 0] = 1.0
    x, _ = nnls(A / norm, np.ones(len(seconds)))
    return {u: float(v) for u, v in zip(units, x / norm)}
