#!/usr/bin/env python
"""Readout magnitude ratio of trained rich networks (App. C.4.3)
=============================================================

The paper reports 1.56 +- 0.09 for L = 32 and 0.99 +- 0.07 for L = 2 (mean +-
2 sd over 10 runs; m = 1024, d = 512). It does not state the training length;
the published code's cell for this number trains 5,000 SGD steps (batch 128),
which is the default here. Each seed s draws its own symbols and model.

Conventions (``--convention``):

* ``paper`` (default): gamma = 1, output scale 1/(gamma sqrt d), learning rate
  gamma^2 d alpha0 with alpha0 = 0.1, normal init (App. G.1).
* ``code``: the published cell's settings expressed in fastsd's units: output
  scale 1/sqrt(m) = 1/32 (gamma = sqrt(m/d)), learning rate 10 (alpha0 chosen
  so), truncated-normal init.

Also prints the alignment of the hidden weights' halves for a > 0 and a < 0
units (Fig. 1a), from the final weights and from their change.

Usage::

    python examples/walkers_readout_ratio.py                # L = 32 and 2, 10 seeds, 5000 steps
    python examples/walkers_readout_ratio.py --steps 25000 --L 32
"""
import argparse
import json
import math
import time

import numpy as np

from fastsd import SameDifferent, train_ensemble
from fastsd.walkers import summary, weight_structure


def measure(L, seeds, steps, width, d, convention):
    tasks = [SameDifferent(d=d, L=L, seed=1000 + s) for s in seeds]
    if convention == "paper":
        gamma, alpha0, init = 1.0, 0.1, "normal"
    else:
        gamma = math.sqrt(width / d)                 # 1/(gamma sqrt d) = 1/sqrt(m)
        lr = 10.0
        alpha0 = (lr / (gamma**2 * d)) if gamma <= 1 else lr / (gamma * math.sqrt(d))
        init = "truncated"
    start = time.perf_counter()
    results = train_ensemble(tasks, gamma, list(seeds), width=width, steps=steps, batch_size=128,
                             alpha0=alpha0, eval_every=max(steps // 5, 1), path="symbol",
                             backend="cpu", init=init)
    wall = time.perf_counter() - start
    ws = [weight_structure(r) for r in results]
    row = {
        "L": L, "d": d, "width": width, "steps": steps, "convention": convention,
        "gamma": gamma, "lr": results[0].config["lr"], "n_seeds": len(seeds),
        "readout_ratio": summary([w.readout_ratio for w in ws]),
        "readout_ratio_change": summary([w.readout_ratio_change for w in ws]),
        "ratios": [round(w.readout_ratio, 4) for w in ws],
        "alignment_pos": summary([np.mean(w.alignment[w.readout > 0]) for w in ws]),
        "alignment_neg": summary([np.mean(w.alignment[w.readout < 0]) for w in ws]),
        "alignment_change_pos": summary([np.nanmean(w.alignment_change[w.readout > 0])
                                         for w in ws]),
        "alignment_change_neg": summary([np.nanmean(w.alignment_change[w.readout < 0])
                                         for w in ws]),
        "final_train_loss": summary([r.history["train_loss"][-1] for r in results]),
        "best_test_accuracy": summary([r.best_test_accuracy for r in results]),
        "wall_s": round(wall, 1),
    }
    return row


def main():
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--L", type=int, nargs="+", default=[32, 2])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--steps", type=int, default=5000)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--d", type=int, default=512)
    p.add_argument("--convention", choices=("paper", "code"), default="paper")
    args = p.parse_args()
    print(f"{'L':>3} {'steps':>6} {'ratio mean +- 2sd':>20} {'ratio of change':>20} "
          f"{'align a>0':>10} {'align a<0':>10} {'train loss':>11} {'best acc':>9}")
    for L in args.L:
        row = measure(L, range(args.seeds), args.steps, args.width, args.d, args.convention)
        r, rc = row["readout_ratio"], row["readout_ratio_change"]
        print(f"{L:>3} {args.steps:>6} {r['mean']:>11.3f} +- {r['two_sd']:<5.3f} "
              f"{rc['mean']:>11.3f} +- {rc['two_sd']:<5.3f} {row['alignment_pos']['mean']:>10.3f} "
              f"{row['alignment_neg']['mean']:>10.3f} {row['final_train_loss']['mean']:>11.2e} "
              f"{row['best_test_accuracy']['mean']:>9.3f}", flush=True)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
