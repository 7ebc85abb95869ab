"""How many training symbols the lazy regime needs as d grows (Fig. 1e, Theorem 2).
================================================================================

For each d, runs the gamma -> 0, infinite-width network (``lazy_cell``, the
cells of Fig. 1e's limit panel: method "logistic_flow", the BCE gradient flow
over all L^2 ordered training pairs for 25,000 SGD steps' worth of time at
alpha0 = 0.1, the best test accuracy over the evaluations every 1000 steps on
1024 fresh pairs, App. G.1) for every seed, at L on the paper's lattice
(``paper_lattice``: L = 2^(7 + 3k/19), rounded: the points of
round(2^linspace(7, 10, 20)), extended below 128), and bisects for the two
neighbouring L between which the mean accuracy over seeds first reaches the
level. With ``--width m`` it does the same for finite lazy networks of width m
(``fastsd.train``, gamma = 1e-5/sqrt(d), the paper's protocol at m = 4096;
same symbols as the limit's cell of the same seed) beside the limit, and
reports both. L*(d) is where the mean crosses the level (linear in log L),
fitted as a power law L* ~ d^b and as an affine law L* = a d + c, with
bootstrap 95% intervals over the seeds, cell by cell
(``fastsd.figures.fig1e.lazy_scaling``, as the figure reports it). Theorem 2
bounds the need by L ~ d^2. The bisection assumes the mean accuracy grows with
L; every cell it ran is in ``--out`` to check that.

Each search (a d, the limit or the networks) runs on its own worker process
(``--workers``, default 2); every cell is appended to ``--out`` (JSON lines)
as it finishes, and a rerun with the same ``--out`` computes only the cells
not there yet.

    python examples/lazy_d2_scaling.py [--quick] [--ds 128 181 256 362 512]
        [--L-range 32 1024] [--seeds 0 1 2] [--level 0.75] [--steps 25000]
        [--width 4096] [--no-limit] [--dtype float64] [--out FILE] [--workers 2]
"""
import argparse
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context

import numpy as np

from fastsd.conventions import resolve_task_seed
from fastsd.figures.fig1e import lazy_scaling, paper_lattice
from fastsd.kernels import lazy_cell

STEPS = 25_000


def network_cell(d, L, seed, steps, width):
    """One finite lazy network on the symbols of the limit's cell (d, L, seed), a record."""
    from fastsd import SameDifferent, train
    task = SameDifferent(d=d, L=L, seed=resolve_task_seed(None, seed, L, d))
    r = train(task, "lazy", width=width, steps=steps, eval_every=1000, n_test=1024, seed=seed)
    return {"d": d, "L": L, "seed": seed, "width": width, "steps": steps,
            "best_test_accuracy": r.best_test_accuracy, "history": r.history}


def search(d, width, grid, seeds, level, steps, out, done, dtype="float64"):
    """Bisect the L grid for the first L whose mean accuracy over seeds reaches level
    (the limit for width None, else networks of that width)."""
    recs = []
    what = "limit" if width is None else f"m={width}"

    def mean(i):
        for s in seeds:
            rec = done.get((d, grid[i], s, width))
            if rec is None:
                t0 = time.perf_counter()
                if width is None:
                    rec = lazy_cell(d, grid[i], seed=s, steps=steps, eval_every=1000,
                                    n_test=1024, backend="cpu", dtype=dtype)
                    rec["width"] = None
                else:
                    rec = network_cell(d, grid[i], s, steps, width)
                rec.pop("history", None)
                rec.pop("predictions", None)
                with open(out, "a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                print(f"d={d:5d} L={grid[i]:5d} seed={s} {what}: best acc "
                      f"{rec['best_test_accuracy']:.3f} ({time.perf_counter() - t0:.1f} s)",
                      flush=True)
            recs.append(rec)
        return np.mean([r["best_test_accuracy"] for r in recs if r["L"] == grid[i]])

    lo, hi = -1, len(grid)       # mean(lo) < level <= mean(hi), the ends taken as given
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if mean(mid) >= level:
            hi = mid
        else:
            lo = mid
    if lo < 0 or hi == len(grid):
        print(f"d={d:5d} {what}: the level is not crossed inside L = {grid[0]}..{grid[-1]}",
              flush=True)
    return recs


def describe(name, records, level, steps):
    """Print L*(d) and its two fits for one kind of model."""
    if not records:
        print(f"\n{name}: no cells")
        return
    out = lazy_scaling(records, level=level)
    print(f"\n{name}: L* at best test accuracy {level} ({steps} steps):")
    for d, L in out["L_star"].items():
        print(f"  d = {d:5d}: L* = {L:7.1f}   (d^2 = {d * d})")
    if out["exponent"] is None:
        print("  fewer than two d cross the level inside the grid: no fit")
        return
    ci, aff = out["exponent_ci"], out["affine"]
    print(f"  power law L* ~ d^b: b = {out['exponent']:.2f}"
          + ("" if out["exponent_se"] is None else f" (regression se {out['exponent_se']:.2f})")
          + ("" if ci is None else f", bootstrap 95% interval [{ci[0]:.2f}, {ci[1]:.2f}] "
             f"({out['n_boot']} resamples of the seeds)") + "; Theorem 2's bound: b = 2")
    print(f"  affine law L* = a d + c: a = {aff['slope']:.2f}, c = {aff['intercept']:.1f}"
          + ("" if aff["slope_ci"] is None else
             f", 95% intervals a in [{aff['slope_ci'][0]:.2f}, {aff['slope_ci'][1]:.2f}], "
             f"c in [{aff['intercept_ci'][0]:.1f}, {aff['intercept_ci'][1]:.1f}]"))


def main():
    ap = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n")[0] + " The default run: d up to 512, "
        "25,000 steps (long: use --workers); --quick: d = 16, 32, 64, 5000 steps.")
    ap.add_argument("--quick", action="store_true",
                    help="defaults d = 16, 32, 64, L in 8..512, 5000 steps (instead of 25,000)")
    ap.add_argument("--ds", type=int, nargs="+",
                    help="symbol dimensions d >= 1 (default 128 181 256 362 512; quick 16 32 64)")
    ap.add_argument("--L-range", type=int, nargs=2, metavar=("LO", "HI"),
                    help="smallest and largest L of the lattice searched (the paper's, "
                         "round(2^(7 + 3k/19))), 1 <= LO <= HI, holding a point L >= 2 "
                         "(default 32 1024; quick 8 512)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                    help="distinct seeds >= 0 of every cell (default 0 1 2; the interval "
                         "needs two or more)")
    ap.add_argument("--level", type=float, default=0.75,
                    help="accuracy that defines L*, in (0.5, 1) (default 0.75)")
    ap.add_argument("--out", default="results/lazy_d2_scaling.jsonl",
                    help="JSON-lines file of the cells, resumed when it exists "
                         "(default results/lazy_d2_scaling.jsonl)")
    ap.add_argument("--workers", type=int, default=2, help="worker processes >= 1 (default 2; 1: in this process)")
    ap.add_argument("--steps", type=int, help="SGD steps of every cell, >= 1000 (default "
                    f"{STEPS}; quick 5000)")
    ap.add_argument("--width", type=int, help="also bisect finite lazy networks of this "
                    "width m >= 1 (the paper's Fig. 1e: 4096)")
    ap.add_argument("--no-limit", action="store_true", help="only the networks (--width)")
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                    help="the limit's Kronecker products (lazy_limit's dtype; Fig. 1e's limit "
                         "panel uses float32, about 1.4x faster); default float64")
    args = ap.parse_args()
    steps = args.steps or (5000 if args.quick else STEPS)
    if args.ds is None:
        args.ds = [16, 32, 64] if args.quick else [128, 181, 256, 362, 512]
    if args.L_range is None:
        args.L_range = [8, 512] if args.quick else [32, 1024]
    if min(args.ds) < 1:
        ap.error(f"--ds must be integers >= 1; got {min(args.ds)}")
    lo, hi = args.L_range
    if not 1 <= lo <= hi:
        ap.error(f"--L-range must be LO HI with 1 <= LO <= HI; got {lo} {hi}")
    if min(args.seeds) < 0 or len(set(args.seeds)) != len(args.seeds):
        ap.error(f"--seeds must be distinct integers >= 0; got {' '.join(map(str, args.seeds))}")
    if not 0.5 < args.level < 1:
        ap.error(f"--level must be an accuracy in (0.5, 1); got {args.level}")
    if args.workers < 1:
        ap.error(f"--workers must be an integer >= 1; got {args.workers}")
    if steps < 1000:
        ap.error(f"--steps must be an integer >= 1000 (evaluations every 1000); got {steps}")
    if args.width is not None and args.width < 1:
        ap.error(f"--width must be an integer >= 1; got {args.width}")
    if args.no_limit and args.width is None:
        ap.error("--no-limit needs --width (there would be nothing to run)")
    kinds = ([] if args.no_limit else [None]) + ([] if args.width is None else [args.width])
    grid = [L for L in paper_lattice(lo, hi) if L >= 2]
    if not grid:
        ap.error(f"--L-range must hold a point L >= 2 of the paper's lattice round(2^(7 + 3k/19)) "
                 f"(..., 115, 128, 143, ...); got {lo} {hi}, which holds none")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    done = {}
    if os.path.exists(args.out):
        for line in open(args.out):
            r = json.loads(line)
            if r.get("steps") == steps and (r.get("width") is not None
                                            or r.get("dtype", "float64") == args.dtype):
                done[r["d"], r["L"], r["seed"], r.get("width")] = r
    records = {k: [] for k in kinds}
    searches = [(k, (d, k, grid, args.seeds, args.level, steps, args.out, done, args.dtype))
                for d in sorted(args.ds, reverse=True) for k in kinds]
    if args.workers == 1:                   # in this process
        for k, job in searches:
            records[k] += search(*job)
    else:       # spawned, not forked: a fork of a process that ran Numba's threads can die
        with ProcessPoolExecutor(args.workers, mp_context=get_context("spawn")) as pool:
            jobs = {pool.submit(search, *job): k for k, job in searches}
            for job in as_completed(jobs):
                records[jobs[job]] += job.result()
    for k in kinds:
        describe("exact limit" if k is None else f"lazy networks of width {k}", records[k],
                 args.level, steps)


if __name__ == "__main__":
    main()
