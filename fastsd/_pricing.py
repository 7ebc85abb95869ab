"""Time models by counted work units: a prediction is counts times prices in seconds.

Shared by the MLP's cost model (``fastsd.mlp.costs``), the Bayes-optimal part
(``fastsd.bayes``) and the lazy limit (``fastsd.kernels.costs``): each states
what a call does as counts of its own units; the prices are non-negative, so a
prediction grows with every count. The shipped prices are data files beside the
code that loads them (``table``), each with its provenance.
"""
import json
from importlib import resources

import numpy as np

#: What a price table's "provenance" must say: where, when, with which fastsd, and how.
PROVENANCE = ("machine", "measured", "fastsd", "how")


def table(package, name):
    """The shipped table ``name`` (a JSON file of ``package``), checked for its provenance.

    Parameters
    ----------
    package : str
        The dotted package the file lies in, e.g. "fastsd.kernels".
    name : str
        The file's name, e.g. "prices.json".

    Returns
    -------
    dict
        The file's content; ``table(...)["provenance"]`` names ``PROVENANCE``.

    Raises
    ------
    ValueError
        When the file has no provenance, or it misses one of ``PROVENANCE``.
    """
    data = json.loads(resources.files(package).joinpath(name).read_text(encoding="utf-8"))
    missing = [k for k in PROVENANCE if k not in data.get("provenance", {})]
    if missing:
        raise ValueError(f"the price table {package}/{name} must state its provenance "
                         f"({', '.join(PROVENANCE)}); it lacks {', '.join(missing)}.")
    return data


def predict(prices, features):
    """Seconds of ``features`` (unit -> count) at ``prices`` (unit -> seconds); a unit
    without a price costs nothing."""
    return float(sum(prices.get(unit, 0.0) * count for unit, count in features.items()))


def fit_prices(rows, seconds):
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
