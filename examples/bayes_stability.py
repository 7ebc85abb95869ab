"""Stability of the Bayes log-likelihood ratios at d = 1000, sigma2 = 0.0025 (App. E).
===================================================================================

At this size every density of App. E is far outside float64's range (the
generalizing normaliser is about 2250^1000), so a direct evaluation of the
paper's formulas returns inf/inf or 0/0. ``fastsd.bayes`` works in log space;
this script compares it at 3 random pairs (a fresh same pair, a fresh
different pair, and a training "same" pair whose items sit next to one
training symbol, where the memorizing sum over distinct pairs is tiny beside
the diagonal) with mpmath at 60 significant digits, evaluating the
unsimplified formulas: the App. E.1 closed forms as printed, and the App. E.2
sums over all L symbols and all L(L - 1) ordered pairs of distinct symbols.

    python examples/bayes_stability.py
"""
import itertools
import math

import mpmath
import numpy as np

from fastsd.bayes import log_likelihood_ratio
from fastsd.tasks import SameDifferent

D, SIGMA2, L = 1000, 0.0025, 16
mpmath.mp.dps = 60


def mp_vec(x):
    return [mpmath.mpf(float(v)) for v in x]


def mp_dot(x, y):
    return mpmath.fsum(a * b for a, b in zip(x, y))


def mp_generalizing(z1, z2):
    """App. E.1: log p(z1,z2|r=1) - log p(z1,z2|r=0), the printed closed forms."""
    d, s2 = D, mpmath.mpf(SIGMA2)
    z1, z2 = mp_vec(z1), mp_vec(z2)
    S = mp_dot(z1, z1) + mp_dot(z2, z2)
    log_same = (d * mpmath.log(d / (2 * mpmath.pi * mpmath.sqrt(s2 * (2 + s2))))
                - d / (2 * s2) * ((1 + s2) / (2 + s2) * S - 2 / (2 + s2) * mp_dot(z1, z2)))
    log_diff = d * mpmath.log(d / (2 * mpmath.pi * (1 + s2))) - d / 2 / (1 + s2) * S
    return log_same - log_diff


def mp_memorizing(z1, z2, symbols):
    """App. E.2: (1/L) sum_i N N over (1/(L(L-1))) sum_{i != j} N N, in mpmath."""
    d, s2 = D, mpmath.mpf(SIGMA2)
    z1, z2 = mp_vec(z1), mp_vec(z2)
    syms = [mp_vec(s) for s in symbols]
    n1 = [mpmath.exp(-d * mpmath.fsum((a - b) ** 2 for a, b in zip(z1, s)) / (2 * s2))
          for s in syms]
    n2 = [mpmath.exp(-d * mpmath.fsum((a - b) ** 2 for a, b in zip(z2, s)) / (2 * s2))
          for s in syms]
    same = mpmath.fsum(n1[i] * n2[i] for i in range(L)) / L
    diff = mpmath.fsum(n1[i] * n2[j] for i, j in itertools.permutations(range(L), 2))
    return mpmath.log(same) - mpmath.log(diff / (L * (L - 1)))


def naive_float64_posterior(z1, z2):
    """p(r=1 | z1, z2) from the App. E.1 densities evaluated directly in float64."""
    d, s2 = D, SIGMA2
    S = z1 @ z1 + z2 @ z2
    with np.errstate(all="ignore"):
        p_same = ((d / (2 * np.pi * np.sqrt(s2 * (2 + s2)))) ** np.float64(d)
                  * np.exp(-d / (2 * s2) * ((1 + s2) / (2 + s2) * S - 2 / (2 + s2) * (z1 @ z2))))
        p_diff = ((d / (2 * np.pi * (1 + s2))) ** np.float64(d)
                  * np.exp(-d / 2 / (1 + s2) * S))
        return p_same / (p_same + p_diff)


def main():
    task = SameDifferent(D, L, sigma2=SIGMA2, seed=2024)
    x_test, y_test = task.sample_test(2, seed=1)       # one same, one different (balanced)
    x_train, y_train = task.sample_train(2, seed=2)
    pairs = [("fresh same", x_test[y_test == 1][0]), ("fresh different", x_test[y_test == 0][0]),
             ("training same", x_train[y_train == 1][0])]
    print(f"d={D}, sigma2={SIGMA2}, L={L} training symbols; mpmath at {mpmath.mp.dps} digits")
    print(f"{'pair':>16} {'prior':>13} {'fastsd llr':>24} {'mpmath llr':>24} {'rel. err':>9} "
          f"{'naive float64 p(same)':>22}")
    for name, x in pairs:
        z1, z2 = x[:D], x[D:]
        for prior, ref in (("generalizing", mp_generalizing(z1, z2)),
                           ("memorizing", mp_memorizing(z1, z2, task.symbols))):
            got = log_likelihood_ratio(z1, z2, SIGMA2, prior,
                                       task.symbols if prior == "memorizing" else None)
            rel = abs(got - float(ref)) / abs(float(ref))
            naive = naive_float64_posterior(z1, z2) if prior == "generalizing" else ""
            print(f"{name:>16} {prior:>13} {got:>24.15g} {mpmath.nstr(ref, 17):>24} "
                  f"{rel:>9.1e} {naive!s:>22}")
            assert math.isfinite(got)


if __name__ == "__main__":
    main()
