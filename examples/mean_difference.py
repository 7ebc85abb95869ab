"""The kernel mean-difference classifier against its theory, over L and d.
=======================================================================

The lazy limit's flow starts along the classifier sign(mean of K(x, .) over the same
training pairs - mean over the different ones) (``lazy_limit(method="mean_difference")``).
``fastsd.theory.mean_difference_accuracy`` predicts its accuracy to leading order in 1/d:
a function of L alone, averaged over tasks, or of a task's own symbols (their norms set
the threshold). For each d and L this script measures the classifier on ``--n-test``
fresh pairs for each seed's symbols (the symbols of the "mlp" and "lazy_limit" cells of
that seed, L and d) and prints the measured accuracy (mean and sd over seeds, same and
different pairs), the theory for those tasks (mean over seeds) and the theory averaged
over tasks.

    python examples/mean_difference.py --quick            # seconds
    python examples/mean_difference.py                    # d = 64, 256, 1024; L = 4..64
"""
import argparse
import json
import time

import numpy as np

from fastsd import SameDifferent
from fastsd.conventions import resolve_task_seed
from fastsd.kernels import lazy_limit
from fastsd.theory import mean_difference_accuracy


def cell(d, L, seed, n_test):
    """The classifier on seed's symbols: accuracy, on same and different pairs, theory."""
    task = SameDifferent(d=d, L=L, seed=resolve_task_seed(None, seed, L, d))
    x, y = task.sample_test(n_test, seed=seed)
    f = lazy_limit(task, "mean_difference", n_test=2, seed=seed, test_x=x).predictions
    same = y > 0.5
    return {"accuracy": float(np.mean((f > 0) == same)), "same": float(np.mean(f[same] > 0)),
            "different": float(np.mean(f[~same] <= 0)),
            "theory": mean_difference_accuracy(L, task.symbols)["accuracy"]}


def main(argv=None):
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--quick", action="store_true", help="d = 64, 256; L = 4, 16; 2 seeds")
    p.add_argument("--ds", type=int, nargs="+", default=[64, 256, 1024],
                   help="symbol dimensions d (default 64 256 1024)")
    p.add_argument("--Ls", type=int, nargs="+", default=[4, 8, 16, 32, 64],
                   help="training symbols L, >= 3 (default 4 8 16 32 64)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                   help="seeds of the symbols and test pairs (default 0 1 2)")
    p.add_argument("--n-test", type=int, default=4000, help="fresh test pairs a cell")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = p.parse_args(argv)
    for name, values, lo in (("ds", args.ds, 1), ("Ls", args.Ls, 3), ("seeds", args.seeds, 0),
                             ("n-test", [args.n_test], 2)):
        if any(v < lo for v in values):
            p.error(f"--{name} must be integers >= {lo}; got {' '.join(map(str, values))}")
    if args.quick:
        args.ds, args.Ls, args.seeds, args.n_test = [64, 256], [4, 16], [0, 1], 2000
    start = time.perf_counter()
    rows = []
    for L in args.Ls:
        averaged = mean_difference_accuracy(L)
        for d in args.ds:
            cells = [cell(d, L, s, args.n_test) for s in args.seeds]
            acc = [c["accuracy"] for c in cells]
            rows.append({"d": d, "L": L, "measured": float(np.mean(acc)),
                         "measured_sd": float(np.std(acc)),
                         "same": float(np.mean([c["same"] for c in cells])),
                         "different": float(np.mean([c["different"] for c in cells])),
                         "theory_tasks": float(np.mean([c["theory"] for c in cells])),
                         "theory": averaged["accuracy"], "theory_same": averaged["same"],
                         "theory_different": averaged["different"]})
    if args.json:
        print(json.dumps(rows))
        return
    print(f"kernel mean-difference classifier (NTK), {args.n_test} test pairs a cell, seeds "
          f"{args.seeds}; {time.perf_counter() - start:.0f} s")
    print("measured: mean +- sd over seeds, and its same and different pairs; theory (tasks): "
          "for each seed's symbols, mean; theory: averaged over tasks, and its same and "
          "different pairs")
    print(f"{'L':>4} {'d':>5} {'measured':>14} {'same':>6} {'diff':>6} {'theory (tasks)':>14} "
          f"{'theory':>7} {'same':>6} {'diff':>6}")
    for r in rows:
        print(f"{r['L']:>4} {r['d']:>5} {r['measured']:>7.3f} +- {r['measured_sd']:.3f} "
              f"{r['same']:>6.3f} {r['different']:>6.3f} {r['theory_tasks']:>14.3f} "
              f"{r['theory']:>7.3f} {r['theory_same']:>6.3f} {r['theory_different']:>6.3f}")


if __name__ == "__main__":
    main()
