"""The standard error of an accuracy measured on finitely many test pairs.

Every accuracy fastsd reports with an error (a trained network's on fresh
pairs, the lazy limit's, a Bayes-optimal classifier's Monte Carlo estimate) is
a fraction p of n independent trials. Its error is the half-width of the
Wilson score interval at one standard deviation (z = 1),

    se = sqrt(n p (1 - p) + 1/4) / (n + 1),

which is sqrt(p (1 - p) / n) to O(1/n) and, unlike it, is never 0: a perfect
score on n pairs is not an exact result (n = 1 gave 1.0 +- 0.0), its error is
about 1 / (2 n).
"""
import math


def accuracy_se(p, n):
    """Standard error of an accuracy ``p`` measured on ``n`` trials (module notes).

    Parameters
    ----------
    p : float
        The fraction correct, in [0, 1].
    n : int
        Trials, >= 1.

    Returns
    -------
    float
        sqrt(n p (1 - p) + 1/4) / (n + 1), > 0.
    """
    return math.sqrt(n * p * (1.0 - p) + 0.25) / (n + 1.0)


def stratified_accuracy_se(parts):
    """Standard error of the accuracy over classes of fixed sizes (same and different pairs).

    Parameters
    ----------
    parts : iterable of (int, float)
        Each class's trials n_c (>= 0; empty classes are left out) and accuracy p_c.

    Returns
    -------
    float
        sqrt(sum_c n_c^2 se_c^2) / n with se_c = ``accuracy_se(p_c, n_c)`` and
        n = sum_c n_c.
    """
    parts = [(n, p) for n, p in parts if n]
    n = sum(nc for nc, _ in parts)
    return math.sqrt(sum((nc * accuracy_se(p, nc)) ** 2 for nc, p in parts)) / n


__all__ = ["accuracy_se", "stratified_accuracy_se"]
