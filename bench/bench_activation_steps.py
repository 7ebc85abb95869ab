#!/usr/bin/env python
"""Benchmark: the training step of each activation against ReLU's, side by side in one run.

For each path of backend "cpu" (dense on the clean and the noisy symbol task, symbol on the
clean one, sparse on Pentomino images) and each built-in activation, the engine of
``train_ensemble`` trains a model (``fastsd.mlp.calibration.step_timer``: batches drawn and
the engine run) on one thread; the activations' runs take turns, ``--repeats`` rounds, and
the fastest of each is kept. The table gives seconds per step and the ratio to ReLU's in the
same round-robin. ReLU's kernels are the paper's arithmetic (exact in the lazy regime by the
signs); any other activation's hidden units run in float64 with the difference
sigma(u + du) - sigma(u) by the two-point Gauss-Legendre rule (two sigma' evaluations a
unit) where du is small, so the ratio is the price of that arithmetic and of sigma itself, not of the
per-activation compilation (a template compiled once an activation, the same code path as
ReLU's).

    python bench/bench_activation_steps.py             # d = 64, m = 1024, batch 128
    python bench/bench_activation_steps.py --quick     # m = 256, fewer steps and rounds

Prints the table and, with ``--json FILE``, writes one JSON line per (path, activation).
A benchmark, not a test: it asserts nothing.
"""
import argparse
import json
import platform

from fastsd import thread_limit
from fastsd.activations import ACTIVATIONS
from fastsd.mlp.calibration import step_timer

CASES = (("dense", "symbols"), ("dense", "noise"), ("symbol", "symbols"), ("sparse", "images"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="m = 256, fewer steps and rounds")
    parser.add_argument("--d", type=int, default=64, help="symbol dimension (default 64)")
    parser.add_argument("--width", type=int, default=None, help="hidden units (default 1024)")
    parser.add_argument("--steps", type=int, default=None, help="steps a timed run")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (best kept)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    parser.add_argument("--json", default=None, help="write JSON lines here")
    args = parser.parse_args(argv)
    width = args.width or (256 if args.quick else 1024)
    steps = args.steps or (20 if args.quick else 100)
    repeats = args.repeats or (3 if args.quick else 5)
    print(f"{platform.processor() or platform.machine()}; one thread; d = {args.d}, m = {width}, "
          f"batch 128, {args.dtype}; best of {repeats} rounds of {steps} steps")
    rows = []
    with thread_limit(1):
        for path, inputs in CASES:
            timers = {name: step_timer(path, L=16, d=args.d, width=width, batch_size=128,
                                       inputs=inputs, dtype=args.dtype, activation=act)
                      for name, act in ACTIVATIONS.items()}
            for run in timers.values():
                run(2)                                   # compile or load the kernels
            best = {name: float("inf") for name in timers}
            for _ in range(repeats):
                for name, run in timers.items():
                    best[name] = min(best[name], run(steps) / steps)
            print(f"\n{path} ({inputs})\n{'activation':>11} {'ms/step':>9} {'/ relu':>7}")
            for name, sec in best.items():
                print(f"{name:>11} {1e3 * sec:9.3f} {sec / best['relu']:7.2f}")
                rows.append(dict(path=path, inputs=inputs, activation=name, d=args.d,
                                 width=width, dtype=args.dtype, seconds_per_step=sec,
                                 ratio_to_relu=sec / best["relu"]))
    if args.json:
        with open(args.json, "a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
