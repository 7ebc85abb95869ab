#!/usr/bin/env python
"""Benchmark: does grouping pay? A preset's grid through ``fastsd.scan.run`` vs one by one.

Runs, in one process and alternating so that both see the same machine state,

* ``scan``: the grid through ``fastsd.scan.run`` with its default executor
  (local processes, one per core, each training its groups of cells as
  lockstep ensembles: on the CPU, the gammas of one seed, which share their
  initialisation, batches and test sets), into a fresh store, process start
  included;
* ``one-by-one``: the same cells, each with its own ``fastsd.train`` call, in
  this process, as a user without the scan API would.

Both train exactly the same models (same tasks, seeds and settings), and the
benchmark checks that they reach the same best test accuracies. It reports the
best of ``--repeats`` wall times for each and their ratio.

    python bench/bench_scan.py                    # Fig. 1c quick grid, 2 repeats
    python bench/bench_scan.py --preset fig1b-quick --repeats 3

It prints a table and appends one JSON line to ``bench/out/bench_scan.jsonl``.
This is a benchmark, not a test: it asserts nothing about speed.
"""
import argparse
import datetime
import json
import os
import platform
import tempfile
import time

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")


def one_by_one(cells):
    """Train every cell with its own ``fastsd.train`` call; return best accuracies by key."""
    from fastsd import SameDifferent, train

    best = {}
    for c in cells:
        task = SameDifferent(c.d, c.L, sigma2=c.sigma2, seed=c.task_seed, root_d=c.root_d)
        r = train(task, c.gamma, width=c.width, steps=c.steps, seed=c.seed,
                  batch_size=c.batch_size, alpha0=c.alpha0, eval_every=c.eval_every,
                  n_test=c.n_test, init=c.init)
        best[c.key] = r.best_test_accuracy
    return best


def through_scan(preset, folder):
    """Run the preset's "mlp" grid with ``fastsd.scan.run``; return best accuracies by key."""
    from fastsd.scan import run

    (_, predictor, grid), = preset.parts
    records = run(grid, predictor, os.path.join(folder, "scan.jsonl"), progress=False)
    return {r["key"]: r["best_test_accuracy"] for r in records}


def main(argv=None):
    from fastsd import __version__
    from fastsd.figures import PRESETS

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="fig1c-quick", choices=sorted(PRESETS))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(OUT_DIR, "bench_scan.jsonl"))
    args = ap.parse_args(argv)

    preset = PRESETS[args.preset]
    cells = preset.cells()
    one_by_one(cells[:1])                   # compile the kernels once, outside the timings
    times = {"scan": [], "one-by-one": []}
    results = {}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as folder:
            t = time.perf_counter()
            results["scan"] = through_scan(preset, folder)
            times["scan"].append(time.perf_counter() - t)
        t = time.perf_counter()
        results["one-by-one"] = one_by_one(cells)
        times["one-by-one"].append(time.perf_counter() - t)
    same = results["scan"] == results["one-by-one"]
    best = {k: min(v) for k, v in times.items()}
    ratio = best["one-by-one"] / best["scan"]
    print(f"{args.preset}: {len(cells)} cells, best of {args.repeats} repeats, "
          f"{os.cpu_count()} cores")
    print(f"{'method':>12} {'seconds':>9} {'cells/s':>8}")
    for k, v in best.items():
        print(f"{k:>12} {v:>9.1f} {len(cells) / v:>8.2f}")
    print(f"scan is {ratio:.2f}x faster than one by one; same accuracies: {same}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({
            "bench": "bench_scan", "time": datetime.datetime.now(datetime.timezone.utc)
            .isoformat(timespec="seconds"), "version": __version__, "preset": args.preset,
            "cells": len(cells), "repeats": args.repeats, "times": times, "best": best,
            "ratio": ratio, "same_accuracies": same, "cpu_count": os.cpu_count(),
            "machine": platform.processor() or platform.machine()}) + "\n")


if __name__ == "__main__":
    main()
