#!/usr/bin/env python
"""Benchmark: time to the lazy-limit accuracy of one same-different cell.

In one run, interleaved so that every method sees the same machine state, the
time from the task to the test accuracy of the gamma -> 0, infinite-width
network (weighted ridge(less) kernel regression over the training pairs,
``lazy_limit(method="regression")``) by

* fastsd, backend "cpu" (Numba pair kernel from the L x L symbol Gram, Cholesky);
* fastsd, backend "numpy" (the float64 reference of the same);
* a plain dense NumPy/SciPy solve over explicit pair vectors: X = [s_u, s_v]
  (P x 2d), the NTK from X X^T by the closed form, SciPy Cholesky, and the test
  kernel from X_test X^T.

Cells: L = 64 with all L^2 = 4096 ordered pairs, and L = 256 (65,536 pairs: the
dense kernel needs 32 GiB, so both solve on the same ``--pairs`` sample; the
all-pairs dense baseline is reported as not fitting). d = 256 by default (the
Fig. 1e range), so the explicit vectors cost what the pair structure saves.
Both methods use the same training pairs and the same test set, and their
accuracies must agree. neural-tangents is not installed here (it would only
build the dense Gram matrix, like the baseline).

    python bench/bench_kernels.py [--d 256] [--pairs 8192] [--repeats 3] [--quick]

Prints a table of best-of-repeats seconds and ratios to the baseline, and
appends JSON lines to ``bench/out/bench_kernels.jsonl``. It asserts nothing
about speed.
"""
import argparse
import datetime
import functools
import json
import math
import os
import sys
import time
import uuid

import numpy as np
import scipy.linalg

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench_train import OUT_DIR, machine_info

from fastsd import SameDifferent
from fastsd.kernels import lazy_limit
from fastsd.kernels.pairs import choose_pairs, class_weights

N_TEST = 4096
RIDGE = 1e-8


def ntk_from_gram(dot, n1, n2):
    """Closed-form NTK from x.y and the norms, written out plainly (the baseline's own)."""
    nn = n1[:, None] * n2[None, :]
    rho = np.clip(dot / nn, -1.0, 1.0)
    return nn * (2 * rho * (np.pi - np.arccos(rho)) + np.sqrt(1 - rho * rho)) / (2 * np.pi)


def baseline(task, u, v, seed):
    """Dense solve over explicit pair vectors; returns the test accuracy."""
    X = np.hstack([task.symbols[u], task.symbols[v]])
    nx = np.linalg.norm(X, axis=1)
    w = class_weights(u == v)
    sw = np.sqrt(w)
    A = sw[:, None] * ntk_from_gram(X @ X.T, nx, nx) * sw[None, :]
    lam = RIDGE * np.mean(w * nx * nx)
    A[np.diag_indices_from(A)] += lam
    cf = scipy.linalg.cho_factor(A, lower=True, overwrite_a=True, check_finite=False)
    c = sw * scipy.linalg.cho_solve(cf, sw * np.where(u == v, 1.0, -1.0), check_finite=False)
    xt, yt = task.sample_test(N_TEST, seed)
    f = ntk_from_gram(xt @ X.T, np.linalg.norm(xt, axis=1), nx) @ c
    return float(np.mean((f > 0) == (yt > 0.5)))


def _fastsd(task, **kw):
    return lazy_limit(task, **kw).test_accuracy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--pairs", type=int, default=8192, help="pairs sampled at L = 256")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="L = 32 and 128, 1 repeat")
    ap.add_argument("--out", default=os.path.join(OUT_DIR, "bench_kernels.jsonl"))
    args = ap.parse_args()
    cells = ((32, "all"), (128, 2048)) if args.quick else ((64, "all"), (256, args.pairs))
    repeats = 1 if args.quick else args.repeats
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    run_id = uuid.uuid4().hex[:8]
    info = machine_info()
    lazy_limit(SameDifferent(d=4, L=4, seed=0), backend="cpu", n_test=8)   # compile
    rows = []
    print(f"{'cell':<28} {'method':<26} {'best s':>8} {'vs dense':>9} {'accuracy':>9}")
    for L, pairs in cells:
        task = SameDifferent(d=args.d, L=L, seed=0)
        seed = 1
        u, v, selection = choose_pairs(L, pairs, seed)
        P = len(u)
        kw = {"pairs": pairs, "seed": seed, "n_test": N_TEST, "ridge": RIDGE, "solver": "dense"}
        methods = {
            "fastsd cpu (pair kernel)": functools.partial(_fastsd, task, backend="cpu", **kw),
            "fastsd numpy (reference)": functools.partial(_fastsd, task, backend="numpy", **kw),
            "dense explicit vectors": functools.partial(baseline, task, u, v, seed),
        }
        best = {k: math.inf for k in methods}
        acc = {}
        for _ in range(repeats):
            for name, fn in methods.items():
                t0 = time.perf_counter()
                acc[name] = fn()
                best[name] = min(best[name], time.perf_counter() - t0)
        label = f"L={L} d={args.d} P={P}" + ("" if pairs == "all" else " (sampled)")
        for name in methods:
            ratio = best["dense explicit vectors"] / best[name]
            print(f"{label:<28} {name:<26} {best[name]:8.2f} {ratio:8.2f}x {acc[name]:9.4f}")
            rows.append({"run": run_id, "date": datetime.datetime.now(datetime.UTC)
                         .isoformat(timespec="seconds"), "L": L, "d": args.d, "pairs": P,
                         "pair_selection": selection, "method": name, "best_s": best[name],
                         "speedup_vs_dense": ratio, "accuracy": acc[name],
                         "repeats": repeats, "n_test": N_TEST, "machine": info})
        if pairs != "all":
            need = 8 * (L * L) ** 2
            print(f"{f'L={L} all {L * L} pairs':<28} {'dense explicit vectors':<26} "
                  f"{'--':>8} {'--':>9} {'--':>9}  does not fit: needs {need / 2**30:.0f} GiB")
        if len(set(acc.values())) != 1:
            print(f"  note: accuracies differ across methods: {acc}")
    with open(args.out, "a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    print(f"appended {len(rows)} lines to {args.out}")


if __name__ == "__main__":
    main()
