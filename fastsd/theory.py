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


#: r = h2 / (4 h0) of each limit kernel, K(x, x') = |x||x'| h(rho) with
#: h(rho) = h0 + h1 rho + h2 rho^2 + O(rho^4): the NTK's h = (1 + pi rho + 3 rho^2 / 2 + ...)
#: / (2 pi), the NNGP's (1 + pi rho / 2 + rho^2 / 2 + ...) / (2 pi) (``fastsd.kernels.arccos``).
MEAN_DIFFERENCE_R = {"ntk": 3.0 / 8.0, "nngp": 1.0 / 8.0}
#: Quantiles of the training symbols' norm spread averaged over (``mean_difference_accuracy``).
_TASK_QUANTILES = 256


def mean_difference_accuracy(L, symbols=None, kernel="ntk"):
    """Test accuracy of the kernel mean-difference classifier, to leading order in 1/d (issue 44).

    The classifier (``lazy_limit(method="mean_difference")``, the direction the lazy
    limit's flow starts along) labels a pair x same when the mean of K(x, x_q) over the L
    same training pairs exceeds the mean over the L(L - 1) different ones. With
    K(x, x') = |x||x'| h(rho) expanded in the overlaps rho = O(d^-1/2) of fresh test
    symbols with the training ones, the terms linear in rho cancel exactly between the
    two means (each symbol is in both classes equally), and d times the difference is,
    up to O(d^-1/2) and the positive factor 2 h0,

        -s_n^2 / 16 + 2 r s_uv,

    where n_i = sqrt(d)(|z_i|^2 - 1) are the training symbols' norm deviations
    (N(0, 2) for z ~ N(0, I/d)), s_n^2 their sample variance, r = h2 / (4 h0)
    (``MEAN_DIFFERENCE_R``: 3/8 for the NTK), and s_uv the sample covariance over
    i of u_i = sqrt(d) a.z_i and v_i = sqrt(d) b.z_i for a test pair (a, b):
    independent N(0, 1) vectors for a different pair, v = u for a same one. So with
    theta = s_n^2 / (32 r), a same pair is right when s_u^2 > theta, that is
    chi^2_{L-1} > (L - 1) theta, and a different pair when s_uv < theta ((L - 1) s_uv
    is a sum of L - 1 products of independent normals: given the second vector's
    squared norm R ~ chi^2_{L-1}, it is N(0, R)), each a one-dimensional expectation
    (taken over 256 quantiles). The accuracy depends on L and not on d; the different
    pairs limit it: for large L it is 1/2 + Phi(sqrt(L - 1) / 6) / 2 with the NTK
    (``mean_difference_accuracy_large_L``).

    Parameters
    ----------
    L : int
        Training symbols, >= 3 (at L = 2 the sample statistics have one degree of
        freedom; the formula holds, but the expansion's neglected terms are large).
    symbols : array_like, shape (L, d), optional
        The training symbols: theta from their norms relative to their mean square norm
        (the accuracy of this task's classifier; the classifier's sign does not change
        when all symbols are scaled, and neither does this). None: averaged over tasks
        with z ~ N(0, I/d), (L - 1) s_n^2 / 2 ~ chi^2_{L-1} (256 quantiles).
    kernel : {"ntk", "nngp"}, default "ntk"

    Returns
    -------
    dict
        "accuracy" (half same, half different pairs), "same", "different" (the
        accuracy on each class) and "theta" (the threshold; its mean over tasks when
        ``symbols`` is None).

    Raises
    ------
    ValueError
        For L < 3, symbols of another number of rows, without columns, non-finite or
        with a zero row, or an unknown kernel.
    TypeError
        For an L that is not an integer.
    """
    from scipy import stats

    from ._validation import check_array, check_choice, check_int

    L = check_int("L", L, 3)
    r = MEAN_DIFFERENCE_R[check_choice("kernel", kernel, tuple(MEAN_DIFFERENCE_R))]
    k = L - 1
    if symbols is None:
        q = (np.arange(_TASK_QUANTILES) + 0.5) / _TASK_QUANTILES
        thetas = 2.0 * stats.chi2.ppf(q, k) / k / (32.0 * r)
    else:
        z = check_array("symbols", symbols, shape=(L, None))
        norms = np.einsum("ij,ij->i", z, z)
        if z.shape[1] == 0 or not norms.all():
            raise ValueError(f"`symbols` must have d >= 1 columns and no row of zeros; got "
                             f"shape {z.shape}" + ("" if z.shape[1] == 0 else
                                                   f", row {int(np.argmin(norms))} zero") + ".")
        n = np.sqrt(z.shape[1]) * (norms / norms.mean() - 1.0)
        thetas = np.array([np.var(n, ddof=1) / (32.0 * r)])
    same = stats.chi2.sf(k * thetas, k)
    # s_uv (L - 1) = sum of k products g_j h_j: given |h|^2 = R ~ chi^2_k it is N(0, R), so
    # P(s_uv < theta) = E_R[Phi((L - 1) theta / sqrt(R))], over R's quantiles
    R = stats.chi2.ppf((np.arange(_TASK_QUANTILES) + 0.5) / _TASK_QUANTILES, k)
    different = ndtr(k * thetas[:, None] / np.sqrt(R)[None, :]).mean(axis=1)
    return {"accuracy": float(np.mean(same + different) / 2), "same": float(np.mean(same)),
            "different": float(np.mean(different)), "theta": float(np.mean(thetas))}


def mean_difference_accuracy_large_L(L):
    """The NTK mean-difference classifier's accuracy for large L: 1/2 + Phi(sqrt(L - 1) / 6) / 2.

    The limit of ``mean_difference_accuracy`` (averaged over tasks) as L grows: same
    pairs right with probability -> 1 (s_u^2 -> 1 > theta -> 1/6), different pairs
    when the sample covariance s_uv ~ N(0, 1/(L - 1)) stays below theta = 1/6.

    Parameters
    ----------
    L : int or array_like
        Training symbols, >= 2.

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        When L < 2.
    """
    L = _check_L(L).astype(float)
    out = 0.5 + 0.5 * ndtr(np.sqrt(L - 1.0) / 6.0)
    return out[()] if out.ndim == 0 else out
