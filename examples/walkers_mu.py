#!/usr/bin/env python
"""mu of the walker ensemble as App. C.4 measures it: L = 16, batch 512, 100 runs.
===============================================================================

The paper reports mu (mixed-sign category, s1 s2 < 0) = 0.508 +- 0.056 for
a > 0 and 0.499 +- 0.009 for a < 0 (mean +- 2 sd over 100 runs). One run is
one walker of ``n_iters`` = 100 batches, as in the published simulation.
Prints, for each readout sign and seed, mu of every category (mean +- 2 sd
over the runs where the category occurred, with that number of runs).

Usage::

    python examples/walkers_mu.py                    # seeds 0..4
    python examples/walkers_mu.py --seeds 7 --runs 1000 --backend numpy
"""
import argparse
import json

from fastsd.walkers import CATEGORIES, simulate


def main():
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--runs", type=int, default=100)
    p.add_argument("--L", type=int, default=16)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--backend", default="auto")
    p.add_argument("--json", action="store_true", help="also print one JSON line per run set")
    args = p.parse_args()
    print(f"L={args.L}, batch {args.batch}, {args.iters} iterations, {args.runs} runs per row; "
          "mu = mean +- 2 sd [runs kept]")
    print(f"{'a':>3} {'seed':>5} " + " ".join(f"{c:>24}" for c in CATEGORIES))
    for readout in (1, -1):
        for seed in args.seeds:
            r = simulate(args.L, args.batch, args.iters, readout, args.runs, seed=seed,
                         backend=args.backend)
            cells = []
            for c in CATEGORIES:
                s = r.mu_summary(c)
                cells.append(f"{s['mean']:.3f} +- {s['two_sd']:.3f} [{s['n_runs']:>4}]")
            print(f"{readout:>+3} {seed:>5} " + " ".join(f"{x:>24}" for x in cells), flush=True)
            if args.json:
                rec = r.to_record()
                print(json.dumps({k: rec[k] for k in ("L", "batch_size", "n_iters", "readout",
                                                      "n_walkers", "seed", "backend", "mu",
                                                      "alignment", "norm_ratio", "wall_time")}))


if __name__ == "__main__":
    main()
