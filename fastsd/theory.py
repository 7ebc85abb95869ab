"""Closed forms of the paper, each with its equation number."""
import math

import numpy as np
from scipy.special import ndtr


def _shown(a):
    """A value as it was given: a scalar, or the list (first 10 entries) of an array."""
    return a.item() if a.ndim == 0 else a.ravel()[:10].tolist()


def _check_L(L):
    given = L
    L = np.asarray(L)
    if L.dtype.kind not in "iuf" or np.any(~np.isfinite(L)) or np.any(L < 2):
        shown = _shown(L) if L.dtype.kind in "iufb" else repr(given)
        raise ValueError(f"`L` must be a number (or array of numbers) >= 2; got {shown}.")
    return L


def different_accuracy(L, rho):
    """Probability that a rich network classifies an unseen different pair correctly (Eq. C.18).

    p(f(x) < 0) = Phi( sqrt( (2L^2 - 2L) (rho - 1)^2 / ((pi - 2)(rho^2 + 1)) ) ),

    where rho = |mean negative readout| / |mean positive readout| (App. C.5).
    As written, the formula does not distinguish rho < 1 from rho > 1; it is
    meant for rho >= 1.

    Parameters
    ----------
    L : float or array_like
        Number of training symbols, >= 2.
    rho : float or array_like
        Readout ratio, > 0.

    Returns
    -------
    float or ndarray
        Broadcast over ``L`` and ``rho``.

    Raises
    ------
    ValueError
        When L < 2 or rho <= 0.
    """
    L = _check_L(L).astype(float)
    rho = np.asarray(rho, dtype=float)
    if np.any(~np.isfinite(rho)) or np.any(rho <= 0):
        raise ValueError(f"`rho` must be a finite number > 0; got {rho!r}.")
    try:
        np.broadcast(L, rho)
    except ValueError:
        raise ValueError(f"`L` and `rho` must broadcast together; got shapes {L.shape} "
                         f"and {rho.shape}.") from None
    arg = (2 * L**2 - 2 * L) * (rho - 1) ** 2 / ((math.pi - 2) * (rho**2 + 1))
    out = ndtr(np.sqrt(arg))
    return out[()] if out.ndim == 0 else out


def rich_test_accuracy(L):
    """Rich-regime test accuracy on unseen symbols (Eq. 3).

    p = 1/2 + 1/2 Phi( sqrt( 2(L^2 - L) / (13 (pi - 2)) ) ) for L >= 3, which is
    Eq. C.18 with rho = 1.5, plus perfect accuracy on same pairs (App. C.5).
    For L = 2 the readout ratio is rho = 1 (App. C.4.3), so the accuracy is
    1/2 + 1/2 Phi(0) = 3/4.

    Parameters
    ----------
    L : int or array_like
        Number of training symbols, whole numbers >= 2 (integer-valued
        floats are accepted).

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        When any L < 2 or is not a whole number.

    Examples
    --------
    >>> float(rich_test_accuracy(2))
    0.75
    >>> round(float(rich_test_accuracy(3)), 3)
    0.908
    """
    L = _check_L(L)
    if np.any(L != np.floor(L)):
        raise ValueError(f"`L` must be a whole number of training symbols >= 2 (the readout "
                         f"ratio jumps from 1 at L = 2 to 1.5 from L = 3); got {_shown(L)}.")
    rho = np.where(L < 3, 1.0, 1.5)
    return 0.5 + 0.5 * different_accuracy(L, rho)


def handcrafted_network(d, rho):
    """The hand-crafted 4-unit solution of Eq. 2 (Sec. 3.1, App. B), as ``Params``.

    w1+ = (1; 1), w2+ = (-1; -1) with readout 1, and w1- = (1; -1),
    w2- = (-1; 1) with readout -rho, so that
    f(x) = relu(w1+ . x) + relu(w2+ . x) - rho (relu(w1- . x) + relu(w2- . x)).
    A same pair (z; z) gives 2 |1 . z| > 0; a different pair of independent
    Gaussian symbols is classified correctly with probability (2/pi) atan(rho)
    (``handcrafted_different_accuracy``). Evaluate it with
    ``fastsd.mlp.output`` or ``fastsd.mlp.accuracy`` (scale 1, no centering).

    Parameters
    ----------
    d : int
        Symbol dimension, >= 1; inputs have length 2d.
    rho : float
        Ratio of the negative to the positive readout, > 0.

    Returns
    -------
    fastsd.mlp.Params
        w of shape (4, 2d) and a of shape (4,), float64.

    Raises
    ------
    ValueError, TypeError
        When d < 1 or rho is not a finite number > 0.
    """
    from ._validation import check_float, check_int
    from .mlp.model import Params
    d = check_int("d", d, minimum=1)
    rho = check_float("rho", rho, positive=True)
    one = np.ones(d)
    w = np.stack([np.concatenate(s) for s in ((one, one), (-one, -one), (one, -one),
                                              (-one, one))])
    return Params(w=w, a=np.array([1.0, 1.0, -rho, -rho]))


def max_margin_ideal(d):
    """Limit of the max-margin matrix as P, L -> infinity (App. C.1): 1/(2d) on the off-diagonal blocks.

    Parameters
    ----------
    d : int
        Symbol dimension, >= 1.

    Returns
    -------
    ndarray, shape (2d, 2d), float64
        [[0, I/(2d)], [I/(2d), 0]]: eigenvalue +1/(2d) on (v; v) and -1/(2d)
        on (v; -v).
    """
    from ._validation import check_int
    d = check_int("d", d, minimum=1)
    eye = np.eye(d) / (2 * d)
    zero = np.zeros((d, d))
    return np.block([[zero, eye], [eye, zero]])


def max_margin(task, n_pairs, seed=None):
    """Max-average-margin directions for quadratic activations (Theorem 1, App. C.1).

    Builds X = (1/P) [X+^T X+ - X-^T X-] from P balanced training pairs (rows of
    X+ same pairs, of X- different pairs). With fixed readouts +-1 and unit
    weights, the margin is maximised by the top eigenvector of X for a > 0 and
    by the bottom one for a < 0. Splitting an eigenvector as (v1; v2), Theorem 1
    says the alignment v1 . v2 / (|v1| |v2|) tends to +1 (top) and -1 (bottom),
    with |v1| = |v2|, as P and L grow.

    Parameters
    ----------
    task : SameDifferent
        Supplies ``sample_train``; its L sets how many symbols the pairs use.
    n_pairs : int
        P, >= 2.
    seed : int, SeedSequence, Generator or None

    Returns
    -------
    dict
        "matrix" (2d, 2d); "top" and "bottom": dicts with "eigenvalue",
        "v1", "v2" (each (d,)), "alignment" and "norm_ratio" |v1|/|v2|;
        "relative_distance": ||X - ideal||_F / ||ideal||_F against
        ``max_margin_ideal``; "n_pairs".

    Raises
    ------
    ValueError, TypeError
        When n_pairs < 2 or the seed is invalid.
    """
    from ._validation import check_int
    n_pairs = check_int("n_pairs", n_pairs, minimum=2)
    x, y = task.sample_train(n_pairs, seed)
    sign = np.where(y > 0.5, 1.0, -1.0)
    X = (x * sign[:, None]).T @ x / n_pairs
    vals, vecs = np.linalg.eigh(X)
    d = x.shape[1] // 2
    out = {"matrix": X, "n_pairs": n_pairs}
    for name, k in (("top", -1), ("bottom", 0)):
        v1, v2 = vecs[:d, k], vecs[d:, k]
        n1, n2 = np.linalg.norm(v1), np.linalg.norm(v2)
        out[name] = {"eigenvalue": float(vals[k]), "v1": v1, "v2": v2,
                     "alignment": float(v1 @ v2 / (n1 * n2)), "norm_ratio": float(n1 / n2)}
    ideal = max_margin_ideal(d)
    out["relative_distance"] = float(np.linalg.norm(X - ideal) / np.linalg.norm(ideal))
    return out


def handcrafted_different_accuracy(rho):
    """Accuracy of the hand-crafted network (Eq. 2) on different pairs: (2/pi) atan(rho) (App. B).

    Parameters
    ----------
    rho : float or array_like
        Ratio a^- / a^+ of the negative to the positive readout, > 0.

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        When rho <= 0 or is not finite.
    """
    rho = np.asarray(rho, dtype=float)
    if np.any(~np.isfinite(rho)) or np.any(rho <= 0):
        raise ValueError(f"`rho` must be a finite number > 0; got {rho!r}.")
    out = 2.0 / math.pi * np.arctan(rho)
    return out[()] if out.ndim == 0 else out
