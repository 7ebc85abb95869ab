"""The exact lazy limit against wide finite networks trained at gamma = 1e-5/sqrt(d).

One small cell (default d = 8, L = 16, task seed 0). The limit is ``lazy_limit(...,
"logistic_sgd")``: kernel SGD of the gamma -> 0, infinite-width network on the
very batches and test sets that ``fastsd.train`` draws from the same seed, so the
remaining gap is the finite width (and gamma > 0). For each width the script
prints the test accuracy at every evaluation, the best accuracy, the RMS gap of
the logits on 512 fixed test pairs (relative to the limit's RMS logit), and the
fraction of those pairs classified differently. The BCE gradient flow
("logistic_flow", the batch-averaged dynamics) and ridgeless regression are
printed for reference.

    PYTHONPATH=. python examples/lazy_vs_finite.py
    PYTHONPATH=. python examples/lazy_vs_finite.py --d 128 --L 128 --steps 2000 --eval-every 1000 \
        --widths 1024 4096 --no-reference      # a near-chance cell at the paper's scale
"""
import argparse
import math
import time

import numpy as np

from fastsd import SameDifferent, train
from fastsd.kernels import lazy_limit

SEED = 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--L", type=int, default=16)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--widths", type=int, nargs="+", default=[256, 1024, 4096, 16384])
    ap.add_argument("--no-reference", action="store_true", help="skip flow and regression")
    args = ap.parse_args()
    D, L, STEPS, EVAL, WIDTHS = args.d, args.L, args.steps, args.eval_every, args.widths
    task = SameDifferent(d=D, L=L, seed=0)
    xt, _ = task.sample_test(512, seed=5)
    kw = {"steps": STEPS, "eval_every": EVAL, "n_test": 1024, "seed": SEED}
    t0 = time.perf_counter()
    lim = lazy_limit(task, "logistic_sgd", test_x=xt, **kw)
    print(f"d={D} L={L}, {STEPS} steps, batch 128, alpha0 0.1, eval every {EVAL} on 1024 "
          f"fresh pairs")
    print(f"limit (logistic_sgd)      acc {np.round(lim.history['test_accuracy'], 3)} "
          f"best {lim.best_test_accuracy:.3f}  ({time.perf_counter() - t0:.1f}s)")
    if not args.no_reference:
        flow = lazy_limit(task, "logistic_flow", **kw)
        reg = lazy_limit(task, "regression", n_test=4096, seed=SEED)
        print(f"limit (logistic_flow)     acc {np.round(flow.history['test_accuracy'], 3)} "
              f"best {flow.best_test_accuracy:.3f}")
        print(f"limit (regression)        acc {reg.test_accuracy:.3f} +- "
              f"{reg.test_accuracy_se:.3f}")
    scale = math.sqrt(np.mean(lim.predictions ** 2))
    gaps = []
    for m in WIDTHS:
        t0 = time.perf_counter()
        net = train(task, 1e-5 / math.sqrt(D), width=m, dtype="float64", **kw)
        f = net.predict(xt)
        gap = math.sqrt(np.mean((f - lim.predictions) ** 2))
        gaps.append(gap)
        print(f"width {m:6d}              acc {np.round(net.history['test_accuracy'], 3)} "
              f"best {net.best_test_accuracy:.3f}  logit RMS gap {gap:.4f} "
              f"({gap / scale:.3f} of RMS logit), labels differ on "
              f"{np.mean((f > 0) != (lim.predictions > 0)):.3f}  "
              f"({time.perf_counter() - t0:.1f}s)")
    slope = np.polyfit(np.log(WIDTHS), np.log(gaps), 1)[0]
    print(f"slope of log gap vs log width: {slope:.2f} (1/sqrt(width): -0.5)")


if __name__ == "__main__":
    main()
