"""How many training symbols the exact lazy limit needs as d grows (Fig. 1e, Theorem 2).

For each d, runs the gamma -> 0, infinite-width network (``lazy_limit``,
method "logistic_flow": the BCE gradient flow over all L^2 ordered training
pairs for 25,000 SGD steps' worth of time at alpha0 = 0.1) on a geometric grid
of L, averaging the test accuracy over task seeds, until the mean accuracy
passes the target. ``--measure best`` (default) takes the paper's measure, the
best accuracy over 25 evaluations (every 1,000 steps, 1024 fresh pairs each,
App. G.1); ``--measure final`` the accuracy at the end on 4096 fresh pairs. L*(d) is where the mean accuracy
crosses the target (linear interpolation in log L). The exponent b of
L* ~ d^b is fitted by least squares on log-log axes; its uncertainty is
the standard deviation over bootstrap resamples of the seeds (cell by cell),
and the regression standard error is printed too. Theorem 2 bounds the need
by L ~ d^2.

    PYTHONPATH=. python examples/lazy_d2_scaling.py [--quick] [--measure best|final]
        [--ds 12 16 24 32 48] [--grid 8 12 16 24 32 48 64 96] [--out FILE]
"""
import argparse
import json
import time

import numpy as np

from fastsd import SameDifferent
from fastsd.analysis import power_law_fit as fit
from fastsd.analysis import threshold_crossing
from fastsd.kernels import lazy_limit

TARGET = 0.75


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--measure", choices=("best", "final"), default="best")
    ap.add_argument("--ds", type=int, nargs="+", default=None, help="dimensions to scan")
    ap.add_argument("--grid", type=int, nargs="+", default=None, help="L values to try")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    ds = args.ds or ((4, 6, 8, 12, 16) if args.quick else (4, 6, 8, 12, 16, 24, 32))
    grid = args.grid or (3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96)
    seeds = (0, 1, 2)
    steps = 25000
    if args.measure == "best":
        evals = {"eval_every": 1000, "n_test": 1024}

        def measure(r):
            return r.best_test_accuracy
    else:
        evals = {"eval_every": steps, "n_test": 4096}

        def measure(r):
            return r.test_accuracy
    print(f"measure: {args.measure} test accuracy ({evals})")
    table = {}
    for d in ds:
        Ls, accs = [], []
        for L in grid:
            t0 = time.perf_counter()
            a = [measure(lazy_limit(SameDifferent(d=d, L=L, seed=s), "logistic_flow",
                                    seed=100 + s, steps=steps, **evals))
                 for s in seeds]
            Ls.append(L)
            accs.append(a)
            print(f"d={d:3d} L={L:3d} acc={np.mean(a):.3f} (seeds {', '.join(f'{x:.3f}' for x in a)}) "
                  f"{time.perf_counter() - t0:.1f}s", flush=True)
            if np.mean(a) >= TARGET + 0.05:
                break
        table[d] = (Ls, accs)
    rng = np.random.default_rng(0)
    point = {d: threshold_crossing(Ls, np.mean(a, axis=1), TARGET) for d, (Ls, a) in table.items()}
    good = [d for d in ds if point[d] is not None]
    print("\nL* at accuracy", TARGET, {d: round(point[d], 2) for d in good})
    b, se = fit(np.array(good, float), np.array([point[d] for d in good]))
    boots = []
    for _ in range(1000):
        Lb = []
        for d in good:
            Ls, a = table[d]
            a = np.asarray(a)
            pick = rng.integers(0, a.shape[1], size=a.shape[1])
            Lb.append(threshold_crossing(Ls, a[:, pick].mean(axis=1), TARGET))
        if all(v is not None for v in Lb):
            boots.append(fit(np.array(good, float), np.array(Lb))[0])
    print(f"fitted exponent b = {b:.2f} (regression SE {se:.2f}; bootstrap over seeds: "
          f"SD {np.std(boots):.2f}, 95% interval [{np.percentile(boots, 2.5):.2f}, "
          f"{np.percentile(boots, 97.5):.2f}], {len(boots)} resamples); Theorem 2 bound: 2")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"target": TARGET, "steps": steps, "measure": args.measure, "seeds": list(seeds),
                       "cells": {str(d): {"L": Ls, "acc": a} for d, (Ls, a) in table.items()},
                       "L_star": {str(d): point[d] for d in good}, "exponent": b,
                       "exponent_se": se, "bootstrap": boots}, fh)


if __name__ == "__main__":
    main()
