"""The proposed ``fastsd reproduce fig1e --quick`` grid, run and timed cell by cell.

Infinite-width panel: ``lazy_cell(d, L, method="logistic_flow")`` over all L^2
pairs, 5,000 SGD steps' worth of time, best test accuracy over 5 evaluations on
1024 fresh pairs, one task seed, d in {4, 8, 16, 32}, L in {4, 8, 16, 32, 64}.
Finite panel: ``fastsd.train`` at gamma = 1e-5/sqrt(d), width 1024, the same
steps and evaluations (same seeds, so the limit and the network see the same
symbols, batches and test sets), d in {8, 16, 32}, L in {16, 64}. Prints a
heatmap-style table, per-cell times and the total.

    PYTHONPATH=. python examples/fig1e_quick_grid.py
"""
import math
import time

from fastsd import SameDifferent, train
from fastsd.kernels import lazy_cell

DS, LS = (4, 8, 16, 32), (4, 8, 16, 32, 64)
NET_DS, NET_LS = (8, 16, 32), (16, 64)
STEPS, EVAL, N_TEST, WIDTH = 5000, 1000, 1024, 1024


def main():
    start = time.perf_counter()
    acc = {}
    for d in DS:
        for L in LS:
            t0 = time.perf_counter()
            rec = lazy_cell(d, L, method="logistic_flow", steps=STEPS, eval_every=EVAL,
                            n_test=N_TEST)
            acc[d, L] = rec["best_test_accuracy"]
            print(f"limit   d={d:3d} L={L:3d}: best acc {acc[d, L]:.3f}  "
                  f"{time.perf_counter() - t0:5.1f}s", flush=True)
    for d in NET_DS:
        for L in NET_LS:
            t0 = time.perf_counter()
            r = train(SameDifferent(d=d, L=L, seed=0), 1e-5 / math.sqrt(d), width=WIDTH,
                      steps=STEPS, eval_every=EVAL, n_test=N_TEST, seed=0)
            print(f"network d={d:3d} L={L:3d}: best acc {r.best_test_accuracy:.3f} (limit "
                  f"{acc.get((d, L), float('nan')):.3f})  {time.perf_counter() - t0:5.1f}s",
                  flush=True)
    print(f"total {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
