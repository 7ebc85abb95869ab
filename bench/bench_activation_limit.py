#!/usr/bin/env python
"""Benchmark: the exact lazy limit of each activation's network against ReLU's, side by side.

For each built-in activation, ``fastsd.kernels.lazy_limit`` on the same symbols (d, L, the
logistic flow over all L^2 ordered pairs, solver "kron", float64, evaluations every
``--steps`` / 5 steps on 1024 fresh pairs); the activations take turns, ``--repeats`` rounds
after one that compiles, and the fastest run of each is kept. The table gives seconds and the
ratio to ReLU's in the same round-robin. ReLU's kernels are the arc-cosine closed forms
(compiled); erf, leaky ReLU and abs have closed forms too (NumPy); tanh, GELU, sigmoid and
softplus sum Mehler's Hermite series entry by entry (``fastsd._mehler``: coefficients once a
norm, compiled sums stopped at rounding), so the ratio is the price of those entries.

    python bench/bench_activation_limit.py             # d = 64, L = 128, 5000 steps
    python bench/bench_activation_limit.py --quick     # L = 32, 1000 steps, 2 rounds

Prints the table and, with ``--json FILE``, writes one JSON line per activation.
A benchmark, not a test: it asserts nothing.
"""
import argparse
import json
import os
import platform
import time

from fastsd.activations import ACTIVATIONS
from fastsd.kernels import lazy_limit
from fastsd.tasks import make_task


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="L = 32, 1000 steps, 2 rounds")
    parser.add_argument("--d", type=int, default=64, help="symbol dimension (default 64)")
    parser.add_argument("--L", type=int, default=None, help="training symbols (default 128)")
    parser.add_argument("--steps", type=int, default=None, help="flow steps (default 5000)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (best kept)")
    parser.add_argument("--json", default=None, help="write JSON lines here")
    args = parser.parse_args(argv)
    L = args.L or (32 if args.quick else 128)
    steps = args.steps or (1000 if args.quick else 5000)
    repeats = args.repeats or (2 if args.quick else 3)
    task = make_task("symbols", L, task_seed=0, d=args.d)

    def run(name):
        start = time.perf_counter()
        r = lazy_limit(task, seed=0, steps=steps, eval_every=steps // 5, n_test=1024,
                       solver="kron", dtype="float64", activation=name)
        return time.perf_counter() - start, r.best_test_accuracy

    print(f"{platform.processor() or platform.machine()}; {os.cpu_count()} logical CPUs, "
          f"default threads; d = {args.d}, L = {L}, {steps} steps; best of {repeats} rounds")
    for name in ACTIVATIONS:
        run(name)                                   # compile or load the kernels
    best = {name: (float("inf"), None) for name in ACTIVATIONS}
    for _ in range(repeats):
        for name in ACTIVATIONS:
            seconds, acc = run(name)
            best[name] = (min(best[name][0], seconds), acc)
    relu = best["relu"][0]
    print(f"{'activation':>11} {'seconds':>9} {'/ relu':>7} {'best acc':>9}")
    rows = []
    for name, (seconds, acc) in best.items():
        print(f"{name:>11} {seconds:9.2f} {seconds / relu:7.2f} {acc:9.4f}")
        rows.append(dict(activation=name, d=args.d, L=L, steps=steps, seconds=seconds,
                         ratio=seconds / relu, best_test_accuracy=acc))
    if args.json:
        with open(args.json, "a") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
