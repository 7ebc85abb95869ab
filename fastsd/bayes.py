"""Bayes-optimal classifiers of the noisy same-different task (Sec. 3.4, App. E).

An item is z = s + eta with eta ~ N(0, sigma2 I/d), and a pair (z1, z2) is
"same" (r = 1) when both items share one symbol, "different" (r = 0) when
they come from two distinct symbols; r is 1 or 0 with probability 1/2. The
Bayes-optimal classifier says "same" when p(r = 1 | z1, z2) >= 1/2, that is
when the log-likelihood ratio

    llr(z1, z2) = log p(z1, z2 | r = 1) - log p(z1, z2 | r = 0)

is >= 0 (App. E, Eq. E.1). Two priors over the symbols give two classifiers:

generalizing (App. E.1)
    every symbol is a fresh draw s ~ N(0, I/d), the distribution the test
    symbols come from; the integrals over s are Gaussian and close.
memorizing (App. E.2)
    every symbol is uniform over the L training symbols; a different pair
    uses two distinct training symbols, uniform over the L(L - 1) ordered
    pairs.

The prior variance of the symbols
---------------------------------
App. E.1 writes the symbol prior inside the integral for p(z1, z2 | r = 1)
as N(s; 0, sigma2/d), but the symbols of the task are N(0, I/d)
(``fastsd.tasks.SameDifferent``: z = s + eta, s ~ N(0, I/d),
eta ~ N(0, sigma2 I/d)). The closed forms that App. E.1 states after the
integrals are those of the N(0, I/d) prior: p(z1, z2 | r = 0) has each item
N(0, (1 + sigma2)/d) and p(z1, z2 | r = 1) has the determinant
sigma2 (2 + sigma2) and the quadratic form
((1 + sigma2) (|z1|^2 + |z2|^2) - 2 z1.z2) / (sigma2 (2 + sigma2)), which
are the per-coordinate covariance (1/d) [[1 + sigma2, 1], [1, 1 + sigma2]]
of a same pair. With a sigma2/d prior it would be (sigma2/d) [[2, 1], [1, 2]].
A Monte Carlo of the generator settles it (``examples/bayes_prior_variance.py``):
the empirical covariance of same pairs is the N(0, I/d) one, and the
classifier built on the sigma2/d prior loses accuracy (at sigma2 = 1 the two
coincide). This module uses the N(0, I/d) prior, i.e. the paper's closed
forms; the sigma2/d in the integrand is a typo.

Numerics
--------
Everything is in float64 and in log space. The generalizing ratio is
rewritten with |z1|^2 + |z2|^2 and |z1 - z2|^2 (the latter computed from the
difference), so that nothing cancels as sigma2 -> 0. The memorizing ratio
uses log-sum-exp over symbols, and the sum over ordered pairs of distinct
symbols, sum_{i != j} e^{a_i + b_j} = sum_i e^{a_i} sum_{j != i} e^{b_j},
is evaluated exactly with leave-one-out log-sum-exps: with m = max_j b_j at
j = k, sum_{j != i} e^{b_j} = e^m (sum_j e^{b_j - m} - e^{b_i - m}) for
i != k, a difference bounded below by e^{b_k - m} = 1, and at i = k a
log-sum-exp over the others. That is O(L) per pair after the O(L d) squared
distances, and it never subtracts the diagonal sum_i e^{a_i + b_i} from the
full double sum (which cancels catastrophically when both items sit near
one symbol). The squared distances come from one GEMM,
|z|^2 + |s|^2 - 2 z.s, whose absolute error (about 1e-16 (|z|^2 + |s|^2))
enters the log ratio multiplied by d / (2 sigma2).

sigma2 = 0
----------
The noiseless task is the limit sigma2 -> 0, in which the ratio diverges:
the result is +inf or -inf, a hard decision. Generalizing prior: +inf
exactly where z1 == z2 in every coordinate (an equality test), else -inf.
Memorizing prior: the log-sum-exps become maxima, and the limit is +inf
where the nearest training symbol of z1 is that of z2 (the best same
assignment beats every distinct pair), -inf where it is not, and 0 at an
exact tie (probability zero for continuous inputs).
"""
import math
from dataclasses import dataclass

import numpy as np

from . import __version__, _probe, _threads
from ._json import strict_json
from ._memory import Need, check_fits
from ._pricing import predict, table
from ._rng import seed_sequence
from ._stats import stratified_accuracy_se
from ._validation import check_array, check_choice, check_float, check_seed
from .params import BAYES

PRIORS = BAYES["prior"].choices

#: Pairs x symbols per block of the memorizing computation (memory bound).
_BLOCK = 1 << 20


@_threads.computing
def log_likelihood_ratio(z1, z2, sigma2, prior="generalizing", symbols=None):
    """Log-likelihood ratio of "same" over "different" for noisy pairs (App. E).

    llr = log p(z1, z2 | r = 1) - log p(z1, z2 | r = 0); with equal priors on
    same and different this is also the log posterior odds, and the
    Bayes-optimal classifier says "same" where llr >= 0 (Eq. E.1).

    Generalizing prior (App. E.1; symbols s ~ N(0, I/d), see ``help(fastsd.bayes)``
    on the paper's sigma2/d), with S = |z1|^2 + |z2|^2, D = |z1 - z2|^2:

        llr = d log(1 + sigma2) - (d/2) log(sigma2 (2 + sigma2))
              + d S / (2 (1 + sigma2)(2 + sigma2)) - d D / (2 sigma2 (2 + sigma2)).

    Memorizing prior (App. E.2; symbols uniform over the L training symbols
    s_i), with a_i = -d |z1 - s_i|^2 / (2 sigma2), b_i likewise for z2:

        llr = [LSE_i (a_i + b_i) - log L]
              - [LSE_{i != j} (a_i + b_j) - log(L (L - 1))],

    the second sum over ordered pairs of distinct symbols, computed exactly
    in O(L) per pair (``help(fastsd.bayes)``).

    Parameters
    ----------
    z1, z2 : array_like, shape (n, d) or (d,)
        First and second items of n pairs (one pair when 1-d); same shape.
    sigma2 : float
        Noise variance (per coordinate sigma2/d), >= 0. At 0 the result is the
        sigma2 -> 0 limit, +inf or -inf (module notes).
    prior : {"generalizing", "memorizing"}, default "generalizing"
    symbols : array_like, shape (L, d), optional
        The L >= 2 training symbols; required for "memorizing", and must be
        None for "generalizing".

    Returns
    -------
    ndarray, shape (n,), float64, or float for 1-d input
        The log-likelihood ratios; finite for sigma2 > 0 (except where the
        true ratio overflows float64, at extremely small sigma2).

    Raises
    ------
    ValueError
        When sigma2 < 0 or not finite, z1 and z2 differ in shape or are not
        1-d/2-d, an input holds NaN or inf, ``symbols`` is missing for the
        memorizing prior (or given for the generalizing one), has fewer than
        2 rows, or its dimension is not that of the items.
    TypeError
        When sigma2 is not a real number or an input is not numeric.

    Examples
    --------
    >>> import numpy as np
    >>> z = np.full(4, 0.5)
    >>> log_likelihood_ratio(z, z, 0.1) > 0 > log_likelihood_ratio(z, -z, 0.1)
    True
    >>> s = np.eye(3)
    >>> log_likelihood_ratio(s[0], s[0], 0.0, prior="memorizing", symbols=s)
    inf
    """
    sigma2 = check_float("sigma2", sigma2, nonnegative=True)
    check_choice("prior", prior, PRIORS)
    z1 = check_array("z1", z1)
    z2 = check_array("z2", z2)
    if z1.ndim not in (1, 2) or z1.shape[-1] < 1:
        raise ValueError(f"`z1` must be an array of shape (n, d) or (d,) with d >= 1; "
                         f"got shape {z1.shape}.")
    if z2.shape != z1.shape:
        raise ValueError(f"`z2` must have the shape of `z1`, {z1.shape}; got shape {z2.shape}.")
    single = z1.ndim == 1
    z1, z2 = np.atleast_2d(z1), np.atleast_2d(z2)
    d = z1.shape[1]
    if prior == "generalizing":
        if symbols is not None:
            raise ValueError("`symbols` must be None for prior 'generalizing' (it does not use "
                             "the training symbols); got an array.")
        llr = _generalizing(z1, z2, sigma2)
    else:
        if symbols is None:
            raise ValueError("`symbols` must be the (L, d) training symbols for prior "
                             "'memorizing'; got None.")
        symbols = check_array("symbols", symbols, ndim=2)
        if symbols.shape[0] < 2 or symbols.shape[1] != d:
            raise ValueError(f"`symbols` must be an array of shape (L, {d}) with L >= 2, the "
                             f"dimension of the items; got shape {symbols.shape}.")
        llr = _memorizing(z1, z2, sigma2, symbols)
    return float(llr[0]) if single else llr


def _generalizing(z1, z2, sigma2):
    d = z1.shape[1]
    if sigma2 == 0.0:
        return np.where(np.all(z1 == z2, axis=1), np.inf, -np.inf)
    S = np.einsum("ij,ij->i", z1, z1) + np.einsum("ij,ij->i", z2, z2)
    diff = z1 - z2
    D = np.einsum("ij,ij->i", diff, diff)
    const = d * math.log1p(sigma2) - 0.5 * d * (math.log(sigma2) + math.log(2.0 + sigma2))
    # D / sigma2 last: 0 / tiny sigma2 is 0, never 0 * inf.
    return (const + d * S / (2.0 * (1.0 + sigma2) * (2.0 + sigma2))
            - d * D / (2.0 * (2.0 + sigma2)) / sigma2)


def _squared_distances(z, symbols, sym_sq):
    """|z_k - s_i|^2, shape (n, L), by one GEMM; clipped at 0."""
    q = np.einsum("ij,ij->i", z, z)[:, None] + sym_sq[None, :] - 2.0 * (z @ symbols.T)
    return np.maximum(q, 0.0, out=q)


def _lse(x):
    """Row-wise log-sum-exp of a finite (n, L) array."""
    top = x.max(axis=1)
    return top + np.log(np.exp(x - top[:, None]).sum(axis=1))


def _top_two(x):
    """Row maxima, their positions, and the largest other entries (the second maxima)."""
    rows = np.arange(x.shape[0])
    k = np.argmax(x, axis=1)
    top = x[rows, k]
    x[rows, k] = -np.inf
    second = x.max(axis=1)
    x[rows, k] = top
    return rows, k, top, second


def _max_distinct_pairs(a, b):
    """max_{i != j} (a_i + b_j) per row: the two maxima, unless they share a position."""
    _, ka, a1, a2 = _top_two(a)
    _, kb, b1, b2 = _top_two(b)
    return np.where(ka != kb, a1 + b1, np.maximum(a1 + b2, a2 + b1))


def _log_distinct_pairs(a, b):
    """log sum_{i != j} exp(a_i + b_j) per row of (n, L) arrays, exactly, in O(L).

    With t = max_j b_j at j = k, e_j = exp(b_j - t) and E = sum_j e_j, the
    sum is sum_{i != k} e^{a_i + t} (E - e_i) + e^{a_k} sum_{j != k} e^{b_j}.
    Every E - e_i (i != k) is >= e_k = 1, so the subtraction loses at most a
    factor L of precision, and sum_{j != k} e^{b_j} is summed without e_k, so
    nothing cancels. The diagonal is never subtracted from the full sum.
    """
    rows, k, t, t2 = _top_two(b)
    e = np.exp(b - t[:, None])
    e[rows, k] = 0.0
    rest = e.sum(axis=1)                              # sum_{j != k} e^{b_j - t}
    log_rest = np.log(np.maximum(rest, np.finfo(float).tiny))
    deep = t - t2 > 600.0                             # rest under- or denormal-flows
    if deep.any():
        sub = b[deep] - t2[deep, None]
        sub[rows[:deep.sum()], k[deep]] = -np.inf
        log_rest[deep] = np.log(np.exp(sub).sum(axis=1)) + (t2 - t)[deep]
    head = a[rows, k] + t + log_rest                  # log of the i = k term
    a_k = a[rows, k]
    a[rows, k] = -np.inf
    top = np.maximum(a.max(axis=1) + t, head)
    c = np.exp(a + (t - top)[:, None])                # c_k = 0
    a[rows, k] = a_k
    body = (rest + 1.0) * c.sum(axis=1) - np.einsum("ij,ij->i", c, e)
    return top + np.log(body + np.exp(head - top))


def _memorizing(z1, z2, sigma2, symbols):
    n, d = z1.shape
    L = symbols.shape[0]
    sym_sq = np.einsum("ij,ij->i", symbols, symbols)
    out = np.empty(n)
    rows = max(1, _BLOCK // L)
    for lo in range(0, n, rows):
        hi = min(n, lo + rows)
        q1 = _squared_distances(z1[lo:hi], symbols, sym_sq)
        q2 = _squared_distances(z2[lo:hi], symbols, sym_sq)
        if sigma2 == 0.0:
            # sigma2 -> 0: both log-sum-exps become maxima of -q times d / (2 sigma2) -> inf.
            gap = np.max(-(q1 + q2), axis=1) - _max_distinct_pairs(-q1, -q2)
            out[lo:hi] = np.where(gap > 0, np.inf, np.where(gap < 0, -np.inf, 0.0))
        else:
            a = q1 * (-0.5 * d)
            a /= sigma2                 # divide last: 0 / tiny sigma2 is 0, never 0 * inf
            b = q2 * (-0.5 * d)
            b /= sigma2
            out[lo:hi] = (_lse(a + b) - _log_distinct_pairs(a, b)) + math.log(L - 1)
    return out


@dataclass(frozen=True)
class BayesAccuracy:
    """Monte Carlo test accuracy of a Bayes-optimal classifier.

    Attributes
    ----------
    accuracy : float
        Fraction of the ``n_test`` fresh test pairs classified correctly.
    stderr : float
        Its standard error over the two classes c (same, different) with n_c
        pairs and accuracy p_c, whose counts the balanced test set fixes:
        sqrt(sum_c n_c^2 se_c^2) / n with se_c the Wilson half-width
        (``fastsd._stats``), about sqrt(sum_c n_c p_c (1 - p_c)) / n and never 0.
    same_accuracy, different_accuracy : float
        Accuracy on the same pairs and on the different pairs (NaN when a
        class has no pair, i.e. n_test = 1).
    n_test : int
    prior : str
    d, L : int
    sigma2 : float
    seed : int or None
        The seed of the test pairs (the fresh entropy for ``seed=None``;
        None when a Generator or a spawned SeedSequence was passed).
    task_seed_entropy : int or None
        The task's symbol seed, which rebuilds its training symbols (None for
        given symbols, ``SameDifferent.from_symbols``).
    """

    accuracy: float
    stderr: float
    same_accuracy: float
    different_accuracy: float
    n_test: int
    prior: str
    d: int
    L: int
    sigma2: float
    seed: object
    task_seed_entropy: object

    def to_record(self):
        """Return a strict-JSON dict: every field, plus ``kind`` ("bayes") and ``version``.

        NaN (a class without pairs) becomes None.
        """
        return strict_json({"kind": "bayes", "version": __version__, **self.__dict__})


@_threads.computing
def accuracy(task, prior, n_test, seed=None):
    """Test accuracy of the Bayes-optimal classifier on fresh noisy pairs (Sec. 3.4, Fig. 2).

    Draws ``n_test`` balanced test pairs with ``task.sample_test`` (fresh
    symbols s ~ N(0, I/d) for every pair, noise sigma2 on each item, as the
    networks are tested), and classifies each as "same" where
    ``log_likelihood_ratio`` under ``prior`` is >= 0 (Eq. E.1, equal priors
    on same and different). The memorizing prior uses the task's L training
    symbols.

    Parameters
    ----------
    task : fastsd.tasks.SameDifferent
        Gives d, sigma2, the training symbols and the test-pair generator.
    prior : {"generalizing", "memorizing"}
    n_test : int
        Number of test pairs, >= 1 (half same, half different).
    seed : int, SeedSequence, Generator or None
        Seed of the test pairs (its "sample_test" stream, as in
        ``SameDifferent.sample_test``).

    Returns
    -------
    BayesAccuracy
        Accuracy, its standard error, per-class accuracies and the settings;
        ``to_record()`` gives a strict-JSON dict.

    Raises
    ------
    TypeError
        When ``task`` is not a ``SameDifferent``, or n_test/seed have the
        wrong type.
    ValueError
        For an unknown prior or n_test < 1.
    SizeTooLargeError
        Before drawing, when the test pairs and their likelihood terms would
        not fit in the memory available.

    Examples
    --------
    >>> from fastsd.tasks import SameDifferent
    >>> res = accuracy(SameDifferent(d=16, L=8, sigma2=1.0, seed=0), "generalizing", 2000, seed=1)
    >>> 0.5 < res.accuracy < 1.0 and res.stderr < 0.02
    True
    """
    from ._rng import recorded_seed
    from .tasks import SameDifferent
    from .tasks.base import task_identity

    if not isinstance(task, SameDifferent):
        raise TypeError(f"`task` must be a fastsd.tasks.SameDifferent; got {task!r}.")
    n_test = BAYES.check({"prior": prior, "n_test": n_test})["n_test"]
    check_seed("seed", seed)
    # the pairs with their items, and per pair and symbol the memorizing prior's log terms
    check_fits([Need(memory_bytes(task.d, task.L, n_test, prior), f"the test pairs and their "
                     f"likelihood terms ({n_test} pairs x ({task.input_dim} inputs + "
                     f"{task.L} symbols))", "n_test", n_test)])
    if not isinstance(seed, np.random.Generator):
        seed = seed_sequence(seed)
    x, y = task.sample_test(n_test, seed)
    d = task.d
    symbols = task.symbols if prior == "memorizing" else None
    llr = log_likelihood_ratio(x[:, :d], x[:, d:], task.sigma2, prior, symbols)
    same = y == 1.0
    correct = (llr >= 0.0) == same
    n_same, n_diff = int(same.sum()), int((~same).sum())
    p_same = float(correct[same].mean()) if n_same else math.nan
    p_diff = float(correct[~same].mean()) if n_diff else math.nan
    return BayesAccuracy(
        accuracy=float(correct.mean()),
        stderr=stratified_accuracy_se(((n_same, p_same), (n_diff, p_diff))),
        same_accuracy=p_same, different_accuracy=p_diff, n_test=n_test, prior=prior,
        d=d, L=task.L, sigma2=task.sigma2, seed=recorded_seed(seed),
        task_seed_entropy=task_identity(task)["task_seed_entropy"])


def memory_bytes(d, L, n_test, prior):
    """Bytes ``accuracy`` allocates for n_test pairs of 2 d inputs: the pairs, their labels
    and halves, and for the memorizing prior the log terms of one block of pairs against the
    L symbols (``_BLOCK`` entries, or one pair's L; eight such arrays at once)."""
    terms = 64 * min(n_test * L, max(_BLOCK, L)) if prior == "memorizing" else 0
    return n_test * 48 * d + terms


def cost_features(d, L, n_test, prior):
    """What ``accuracy`` does for one cell, in counted units (its time model's form).

    "cell": the fixed work of a call; "symbols": the L x d training symbols
    drawn; "inputs": n_test x d, for the test pairs' 2 d coordinates drawn and,
    for the generalizing prior, the closed form over them; for the memorizing prior
    "gemm", the multiply-adds of the squared distances of both items to every
    symbol (2 n_test L d), and "terms", the n_test x L log-sum-exp terms.

    Parameters
    ----------
    d, L, n_test : int
    prior : {"generalizing", "memorizing"}

    Returns
    -------
    dict of str to float
        Counts by unit; each grows with d, L and n_test.

    Raises
    ------
    ValueError, TypeError
        For d < 1, L < 2, n_test < 1 or an unknown prior, as ``accuracy``.
    """
    c = BAYES.check({"d": d, "L": L, "n_test": n_test, "prior": prior})
    d, L, n_test, memorizing = c["d"], c["L"], c["n_test"], c["prior"] == "memorizing"
    return {"cell": 1.0, "symbols": float(L * d), "inputs": float(n_test * d),
            "gemm": 2.0 * n_test * L * d if memorizing else 0.0,
            "terms": float(n_test * L) if memorizing else 0.0}


#: The shipped prices (``bayes_prices.json`` beside this module, with their provenance):
#: seconds per unit of ``cost_features`` on one thread (float64 NumPy/BLAS) on the reference
#: machine; a rough estimate for ``fastsd reproduce --dry-run``.
TABLE = table("fastsd", "bayes_prices.json")
PRICES = dict(TABLE["prices"])
#: Where ``PRICES`` were measured.
MEASURED_ON = f"{TABLE['provenance']['machine']}, {TABLE['provenance']['measured']}"
#: The family's name in the probe's cache, the kinds of its factors (``fastsd._probe.generic``:
#: "gemm" for the distances' multiply-adds, "numpy" for the rest) and its sources.
FAMILY = "bayes"
PROBE_KINDS = _probe.GENERIC
SOURCES = ("bayes.py",)


def _key():
    return _probe.machine_key(SOURCES)


def machine_factors(environ=None):
    """This machine's factors (``PROBE_KINDS``), cached by ``fastsd._probe``; 1 under
    ``FASTSD_COSTS=fallback``."""
    return _probe.factors(FAMILY, _probe.generic, _key(), PROBE_KINDS, environ)


def correction(environ=None):
    """The runs' feedback on the Bayes-optimal prices (``fastsd._probe.correction``)."""
    return _probe.correction(FAMILY, _key(), environ)


def record(predicted, measured, environ=None):
    """Keep a scan's predicted and measured CPU seconds of Bayes-optimal cells."""
    _probe.record(FAMILY, _key(), predicted, measured, environ)


def prices(environ=None):
    """``PRICES`` scaled to this machine by its probe and its runs' feedback."""
    c = correction(environ)
    f = {k: v * c for k, v in machine_factors(environ).items()}
    return _probe.scale(PRICES, f, {"gemm": "gemm64"}, other="numpy")


def predicted_seconds(d, L, n_test, prior):
    """Predicted seconds of ``accuracy`` on one thread (``cost_features`` times ``prices``)."""
    return predict(prices(), cost_features(d, L, n_test, prior))


def describe():
    """One line on where the Bayes-optimal part's prices come from, for ``--dry-run``."""
    f, c = machine_factors(), correction()
    runs = f", its runs' feedback x{c:.2f}" if c != 1.0 else ""
    return (f"bayes: shipped prices measured on {MEASURED_ON}, scaled to this machine by "
            f"its probe (float64 GEMM x{f['gemm64']:.2f}, NumPy x{f['numpy']:.2f}{runs})")
