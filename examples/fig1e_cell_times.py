"""Per-cell wall times for sizing the Fig. 1e preset (lazy heatmap over d and L).

Times one ``lazy_cell`` (method "logistic_flow", 25,000 SGD steps' worth of
time, 25 evaluations on 1024 fresh pairs, like the paper's networks) for
representative cells, plus one finite gamma ~ 0 network (``fastsd.train``,
width 1024) for the reduced finite-width grid. Pass cells as d:L[:pairs].

    PYTHONPATH=. python examples/fig1e_cell_times.py 32:64 128:128 1024:1024:4096
"""
import math
import sys
import time

from fastsd import SameDifferent, train
from fastsd.kernels import lazy_cell


def main(argv):
    for spec in argv or ["32:64"]:
        parts = spec.split(":")
        d, L = int(parts[0]), int(parts[1])
        pairs = int(parts[2]) if len(parts) > 2 else "all"
        t0 = time.perf_counter()
        rec = lazy_cell(d, L, method="logistic_flow", pairs=pairs, steps=25000, eval_every=1000,
                        n_test=1024)
        print(f"lazy_cell d={d} L={L} pairs={rec['n_train_pairs']} solver={rec['solver']}: "
              f"best acc {rec['best_test_accuracy']:.3f} final {rec['test_accuracy']:.3f}, "
              f"{time.perf_counter() - t0:.1f}s", flush=True)
    d, L, steps = 128, 128, 2000
    t0 = time.perf_counter()
    r = train(SameDifferent(d=d, L=L, seed=0), 1e-5 / math.sqrt(d), width=1024, steps=steps,
              seed=0)
    dt = time.perf_counter() - t0
    print(f"train d={d} L={L} width 1024, {steps} steps: {dt:.1f}s "
          f"(x{25000 // steps} = {dt * 25000 / steps:.0f}s for 25,000 steps), "
          f"best acc {r.best_test_accuracy:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
