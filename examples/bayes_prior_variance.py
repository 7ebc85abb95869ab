"""Which symbol prior is right for App. E.1: N(0, I/d) or the printed N(0, sigma2 I/d)?
====================================================================================

App. E.1 writes the symbol prior inside the integral for p(z1, z2 | r = 1)
as N(s; 0, sigma2/d). This script settles it against a Monte Carlo of the
generator, ``SameDifferent(d, L, sigma2).sample_test`` (fresh symbols, noise
on each item), for a prior variance tau/d with tau = 1 (the symbols'
N(0, I/d)) and tau = sigma2 (the integrand as printed):

1. the per-coordinate covariance of a same pair, times d, against
   [[tau + sigma2, tau], [tau, tau + sigma2]];
2. the mean log-likelihood of the sampled pairs (same and different) under
   each Gaussian model: the true model has the larger expectation;
3. the test accuracy of the Bayes classifier built on each prior.

The Gaussian models are written here per coordinate (2 x 2 covariances),
independently of ``fastsd.bayes``; for tau = 1 the script also prints the
largest difference from ``fastsd.bayes.log_likelihood_ratio``. At sigma2 = 1
both priors coincide, so that row is a control.

    python examples/bayes_prior_variance.py
"""
import math

import numpy as np

from fastsd.bayes import log_likelihood_ratio
from fastsd.tasks import SameDifferent

D, N = 64, 40_000


def log_densities(z1, z2, sigma2, tau):
    """Per-pair log p(z1, z2 | same) and log p(z1, z2 | different), prior N(0, tau I/d)."""
    d = z1.shape[1]
    a, c = (tau + sigma2) / d, tau / d                     # same: cov [[a, c], [c, a]] per coord
    det = a * a - c * c
    quad = (a * (z1**2 + z2**2) - 2 * c * z1 * z2).sum(axis=1) / det
    log_same = -d * math.log(2 * math.pi) - 0.5 * d * math.log(det) - 0.5 * quad
    log_diff = -d * math.log(2 * math.pi * a) - 0.5 * (z1**2 + z2**2).sum(axis=1) / a
    return log_same, log_diff


def main():
    print(f"d={D}, {N} test pairs from SameDifferent(...).sample_test per sigma2")
    print(f"{'sigma2':>6} {'tau':>7} {'cov same (x d): var, cross':>28} {'model var, cross':>17} "
          f"{'mean loglik':>12} {'Bayes acc.':>11} {'vs fastsd':>10}")
    for sigma2 in (0.25, 1.0, 4.0):
        task = SameDifferent(D, 2, sigma2=sigma2, seed=0)
        x, y = task.sample_test(N, seed=1)
        z1, z2 = x[:, :D], x[:, D:]
        same = y == 1
        var = D * 0.5 * (np.mean(z1[same] ** 2) + np.mean(z2[same] ** 2))
        cross = D * np.mean(z1[same] * z2[same])
        for label, tau in (("1", 1.0), ("sigma2", sigma2)):
            ls, ld = log_densities(z1, z2, sigma2, tau)
            loglik = np.mean(np.where(same, ls, ld)) / D
            llr = ls - ld
            acc = np.mean((llr >= 0) == same)
            check = (f"{np.max(np.abs(llr - log_likelihood_ratio(z1, z2, sigma2))):.1e}"
                     if tau == 1.0 else "")
            print(f"{sigma2:>6} {label:>7} {var:>13.4f}, {cross:>12.4f} {tau + sigma2:>8.3f}, "
                  f"{tau:>7.3f} {loglik:>12.4f} {acc:>11.4f} {check:>10}")
    print("mean loglik: per pair and per coordinate, of the sampled pairs under the model; "
          f"Bayes acc. standard error <= {0.5 / math.sqrt(N):.4f}.")


if __name__ == "__main__":
    main()
