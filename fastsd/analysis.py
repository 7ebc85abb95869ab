"""Measurements on trained networks."""
import numpy as np

from ._validation import check_array


def activation_change(result, x):
    """Learning richness as relative activation change (App. F, Fig. F1).

    mean |w_i(T) . x - w_i(0) . x| / mean |w_i(0) . x|, both means over the
    test inputs and the hidden units. Rich training moves the preactivations
    by a large fraction of their initial size; lazy training barely moves them.

    Parameters
    ----------
    result : TrainResult
        A trained model (its ``initial_params`` and ``final_params`` are used).
    x : array_like, shape (n, p)
        Test inputs, e.g. ``task.sample_test(n)[0]``.

    Returns
    -------
    float
        The ratio; 0 for a model that has not moved.

    Raises
    ------
    ValueError
        When ``x`` is empty, has the wrong shape or contains NaN or inf, or
        when every initial preactivation is zero.
    """
    return activation_changes([result], x)[0]


def activation_changes(results, x):
    """``activation_change`` of several models on the same inputs, in float64.

    Models with equal initial weights (an ensemble's models of one seed) share
    the denominator, which is computed once.

    Parameters
    ----------
    results : sequence of TrainResult
        Models whose input dimension is p.
    x : array_like, shape (n, p)

    Returns
    -------
    list of float

    Raises
    ------
    TypeError
        When ``results`` is not a list or tuple of TrainResult.
    ValueError
        As ``activation_change``.
    """
    from .mlp.training import TrainResult

    if not isinstance(results, (list, tuple)):
        raise TypeError(f"`results` must be a list of TrainResult (use activation_change for "
                        f"one); got {type(results).__name__}.")
    for i, r in enumerate(results):
        if not isinstance(r, TrainResult):
            raise TypeError(f"`results` must be a list of TrainResult; got a "
                            f"{type(r).__name__} at index {i}.")
    out = []
    initial = []        # (w0, mean |x w0^T|) per distinct w0
    for result in results:
        w0 = result.initial_params.w
        x = check_array("x", x, shape=(None, w0.shape[1]))
        if x.shape[0] == 0:
            raise ValueError("`x` must hold at least one input; got shape "
                             f"{x.shape}.")
        mean0 = next((m for w, m in initial if w.shape == w0.shape and np.array_equal(w, w0)),
                     None)
        if mean0 is None:
            mean0 = np.mean(np.abs(x @ w0.T))
            initial.append((w0, mean0))
        if mean0 == 0:
            raise ValueError("`x` must give non-zero initial preactivations; got all zero.")
        dw = result.final_params.w - w0
        out.append(float(np.mean(np.abs(x @ dw.T)) / mean0))
    return out


def threshold_crossing(Ls, accuracies, level=0.75):
    """Return the L at which accuracy first reaches ``level``, or None if it never does.

    Interpolates linearly in log L between the two grid points around the
    first upward crossing; used to read L*(d) off a Fig. 1e heatmap.

    Parameters
    ----------
    Ls : sequence of float, increasing
    accuracies : sequence of float, same length
    level : float, default 0.75

    Returns
    -------
    float or None
        None when no crossing lies inside the grid (including a first point
        already at or above ``level``).
    """
    Ls, acc = np.asarray(Ls, float), np.asarray(accuracies, float)
    if Ls.shape != acc.shape or Ls.ndim != 1:
        raise ValueError(f"`Ls` and `accuracies` must be 1-d of one length; got shapes "
                         f"{Ls.shape} and {acc.shape}.")
    for i in range(1, len(Ls)):
        if acc[i - 1] < level <= acc[i]:
            t = (level - acc[i - 1]) / (acc[i] - acc[i - 1])
            return float(np.exp(np.log(Ls[i - 1]) + t * np.log(Ls[i] / Ls[i - 1])))
    return None


def power_law_fit(x, y):
    """Least-squares fit of y = c x**b on log-log axes; return (b, standard error of b).

    Parameters
    ----------
    x, y : sequence of float > 0, same length >= 2

    Returns
    -------
    exponent : float
    stderr : float
        The regression standard error of the slope; NaN with two points.
    """
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    if lx.shape != ly.shape or lx.size < 2 or not np.all(np.isfinite(lx + ly)):
        raise ValueError(f"`x` and `y` must hold at least 2 positive values each, of one "
                         f"length; got {list(x)!r} and {list(y)!r}.")
    A = np.vstack([np.ones_like(lx), lx]).T
    coef, *_ = np.linalg.lstsq(A, ly, rcond=None)
    resid = ly - A @ coef
    if lx.size < 3:
        return float(coef[1]), float("nan")
    s2 = resid @ resid / (lx.size - 2)
    return float(coef[1]), float(np.sqrt(s2 * np.linalg.inv(A.T @ A)[1, 1]))


def affine_fit(x, y):
    """Least-squares fit of y = a x + c; return (a, c, standard error of a).

    The lazy limit's L*(d) can be affine in d (Fig. 1e; its fits are on the
    documentation's results page), which a power law through few points reads
    as an exponent near 1.

    Parameters
    ----------
    x, y : sequence of float, same length >= 2, finite

    Returns
    -------
    slope, intercept : float
    stderr : float
        The regression standard error of the slope; NaN with two points.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2 or not np.all(np.isfinite(x + y)) \
            or np.ptp(x) == 0:
        raise ValueError(f"`x` and `y` must hold at least 2 finite values each, of one length, "
                         f"with two distinct x; got {list(x)!r} and {list(y)!r}.")
    A = np.vstack([x, np.ones_like(x)]).T
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    if x.size < 3:
        return float(coef[0]), float(coef[1]), float("nan")
    resid = y - A @ coef
    s2 = resid @ resid / (x.size - 2)
    return float(coef[0]), float(coef[1]), float(np.sqrt(s2 * np.linalg.inv(A.T @ A)[0, 0]))


def cell_correlations(task, w):
    """Correlations between the image cells each hidden unit reads (App. A, Fig. A1).

    Rich units on PSVRT and Pentomino develop parallel or antiparallel
    regions: the weights over one cell of the image grid equal (or are the
    negative of) those over another, so the correlations are near +-1; lazy
    units stay near their random initialisation, with correlations near 0.

    Parameters
    ----------
    task : PSVRT or Pentomino
        A grid task (with ``as_cells``).
    w : ndarray, shape (m, input_dim)
        Hidden weights, one row per unit.

    Returns
    -------
    ndarray, shape (m, c, c)
        For each unit, the correlation matrix of its weights over the c cells.
    """
    cells = task.as_cells(np.asarray(w, float))
    cells = cells.reshape(cells.shape[0], -1, cells.shape[-2] * cells.shape[-1])
    cells = cells - cells.mean(axis=2, keepdims=True)
    cells /= np.maximum(np.linalg.norm(cells, axis=2, keepdims=True), np.finfo(float).tiny)
    return cells @ cells.transpose(0, 2, 1)
