"""Closed-form arc-cosine kernels and NTK against Monte Carlo, exact values, and finite widths.
============================================================================================

1. For norms of x and y in {0.4, 1, 2, 3} and cosines u from -0.99 to 0.999, the
   closed forms k0, k1 (= nngp) and ntk against 1e6-sample Monte Carlo over
   w ~ N(0, I), reported as z = (MC mean - closed form) / MC standard error.
2. ntk(x, x) equal to the squared norm of x, ntk(x, -x) = 0 in float32 and float64 on 1024-dim
   random inputs, homogeneity ntk(c x, y) = c ntk(x, y), no NaN.
3. The empirical NTK of finite centered networks (``empirical_ntk``) against
   ntk: RMS error over widths 64 .. 16384 (8 seeds each) and the fitted slope
   of log error against log width (1/sqrt(width) gives -1/2).

Usage::

    python examples/kernels_check.py
"""
import itertools
import math

import numpy as np

from fastsd.kernels import arccos, empirical_ntk, ntk

NORMS = (0.4, 1.0, 2.0, 3.0)
COSINES = (-0.99, -0.5, 0.0, 0.5, 0.9, 0.999)
N_MC = 1_000_000


def monte_carlo():
    rng = np.random.default_rng(0)
    worst = 0.0
    rows = 0
    print(f"{'|x|':>4} {'|y|':>4} {'u':>6}   z(k0)   z(k1)  z(ntk)")
    for nx, ny, u in itertools.product(NORMS, NORMS, COSINES):
        x = np.array([nx, 0.0])
        y = ny * np.array([u, math.sqrt(1 - u * u)])
        w = rng.standard_normal((N_MC, 2))     # only the span of x, y matters
        hx, hy = w @ x, w @ y
        s0 = ((hx > 0) & (hy > 0)).astype(float)
        s1 = np.maximum(hx, 0) * np.maximum(hy, 0)
        zs = []
        for s, k in ((s0, arccos(x[None], y[None], 0)), (s1, arccos(x[None], y[None], 1)),
                     ((x @ y) * s0 + s1, ntk(x[None], y[None]))):
            zs.append((s.mean() - k[0, 0]) / (s.std() / math.sqrt(N_MC)))
        worst = max(worst, *map(abs, zs))
        rows += 1
        if nx == ny or (nx, ny) == (0.4, 3.0):
            print(f"{nx:4.1f} {ny:4.1f} {u:6.3f}  " + "  ".join(f"{z:6.2f}" for z in zs))
    print(f"{rows} (norm, norm, u) entries x 3 kernels, {N_MC:.0e} samples each: "
          f"max |z| = {worst:.2f} (all within 4 SE: {worst < 4})")


def exact_values():
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64):
        X = rng.standard_normal((64, 1024)).astype(dtype)
        sq = np.sum(X.astype(np.float64) ** 2, axis=1)
        K, Km = ntk(X, X), ntk(X, -X)
        c = 3.7
        hom = ntk(c * X, X) / (c * K)
        print(f"{np.dtype(dtype).name}: max |ntk(x,x)/|x|^2 - 1| = "
              f"{np.max(np.abs(np.diag(K) / sq - 1)):.1e}, max |ntk(x,-x)| = "
              f"{np.max(np.abs(np.diag(Km))):.1e}, max |ntk(cx,y)/(c ntk(x,y)) - 1| = "
              f"{np.max(np.abs(hom - 1)):.1e}, NaN: {bool(np.isnan(K).any() or np.isnan(Km).any())}")


def widths():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((8, 32)) / 4.0          # |x|^2 ~ 2, as a symbol pair with d = 16
    exact = ntk(X, X)
    ms = (64, 256, 1024, 4096, 16384)
    errs = []
    for m in ms:
        e = [np.sqrt(np.mean((empirical_ntk(X, X, width=m, seed=s) - exact) ** 2))
             for s in range(8)]
        errs.append(np.mean(e))
        print(f"width {m:6d}: RMS error {errs[-1]:.4f} (sd over 8 seeds {np.std(e):.4f})")
    slope, _ = np.polyfit(np.log(ms), np.log(errs), 1)
    print(f"fitted slope of log error vs log width: {slope:.3f} (1/sqrt(width): -0.5)")


if __name__ == "__main__":
    monte_carlo()
    exact_values()
    widths()
