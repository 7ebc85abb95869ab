#!/usr/bin/env python
"""Walker alignment and norm ratio against training time (App. C.4.1-C.4.2).
=========================================================================

App. C.4 argues that the cosine of the two halves v1, v2 of a walker's vector tends to +1
for a > 0 (parallel) and -1 for a < 0 (antiparallel), with equal norms, as t grows. This
prints, for growing ``n_iters``, the alignment and the norm ratio over the walkers (mean +-
2 sd; walkers with a zero vector are skipped) at L = 16, batch 512. Each
``n_iters`` is a fresh run with the same seed, so the rows are the same
walkers observed at later times.

Usage::

    python examples/walkers_alignment.py
    python examples/walkers_alignment.py --iters 1 10 100 1000 --walkers 1000
"""
import argparse

import numpy as np

from fastsd.walkers import simulate, summary


def main():
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--iters", type=int, nargs="+", default=[1, 3, 10, 30, 100, 300, 1000])
    p.add_argument("--walkers", type=int, default=100)
    p.add_argument("--L", type=int, default=16)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--backend", default="auto")
    args = p.parse_args()
    print(f"L={args.L}, batch {args.batch}, {args.walkers} walkers, seed {args.seed}; "
          "mean +- 2 sd over walkers")
    print(f"{'a':>3} {'n_iters':>7} {'alignment':>18} {'|v1|/|v2|':>18} {'min align':>10} "
          f"{'max align':>10}")
    for readout in (1, -1):
        for n in args.iters:
            r = simulate(args.L, args.batch, n, readout, args.walkers, seed=args.seed,
                         backend=args.backend)
            al, nr = r.alignment(), r.norm_ratio()
            sa, sn = summary(al), summary(nr)
            print(f"{readout:>+3} {n:>7} {sa['mean']:>9.4f} +- {sa['two_sd']:<6.4f} "
                  f"{sn['mean']:>9.4f} +- {sn['two_sd']:<6.4f} {np.nanmin(al):>10.4f} "
                  f"{np.nanmax(al):>10.4f}", flush=True)


if __name__ == "__main__":
    main()
