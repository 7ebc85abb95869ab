#!/usr/bin/env python
"""Benchmark: walker-samples per second of the walker ensemble (App. C.3).

L = 16, batch 512, 1024 walkers (the issue's setting); one walker-sample is
one (u, v) draw of one walker. Measured side by side in one run, interleaved
and best of ``--repeats``:

* the vectorised NumPy reference (``backend="numpy"``; fewer iterations, as
  its cost per sample does not depend on the run length),
* the Numba CPU kernel (``backend="cpu"``, prange over walkers) at 1 thread
  and at every thread count up to the machine's,

and checks that all of them give the same trajectories on the common prefix.
Besides wall-clock samples/s it reports samples per CPU-second of this
process: on a shared machine, the per-core rate the code reaches when it runs.
Prints a table and appends one JSON line to ``bench/out/bench_walkers.jsonl``.
Target (issue 3): >= 2e8 samples/s on the CPU with 2 threads. This is a
benchmark, not a test: it asserts nothing about speed.

Usage::

    python bench/bench_walkers.py            # ~1 minute
    python bench/bench_walkers.py --quick
"""
import argparse
import datetime
import json
import os
import platform
import time

import numba
import numpy as np

from fastsd.walkers import _cpu
from fastsd.walkers import _reference as ref
from fastsd.walkers.process import seed_state

L, BATCH, WALKERS = 16, 512, 1024


def timed(f, *args):
    """(wall seconds, CPU seconds of this process, f's result)."""
    w, c = time.perf_counter(), time.process_time()
    out = f(*args)
    return time.perf_counter() - w, time.process_time() - c, out


def run_cpu(seed64, n_iters, threads):
    numba.set_num_threads(threads)
    return timed(_cpu.simulate, seed64, 0, WALKERS, L, BATCH, n_iters, 1)


def run_numpy(seed64, n_iters):
    return timed(ref.simulate, seed64, 0, WALKERS, L, BATCH, n_iters, 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=200, help="batches per Numba run")
    p.add_argument("--numpy-iters", type=int, default=10, help="batches per NumPy run")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    args = p.parse_args()
    if args.quick:
        args.iters, args.numpy_iters, args.repeats = 20, 3, 2
    seed64, _ = seed_state(0)
    max_threads = numba.config.NUMBA_NUM_THREADS
    thread_counts = sorted({1, *range(2, max_threads + 1)})
    run_cpu(seed64, 1, max_threads)                       # compile / load cache

    best, best_cpu, outs = {}, {}, {}
    for _ in range(args.repeats):
        for key, (wall, cpu, outs[key]), n in (
                [("numpy", run_numpy(seed64, args.numpy_iters), args.numpy_iters)]
                + [(th, run_cpu(seed64, args.iters, th), args.iters) for th in thread_counts]):
            best[key] = min(best.get(key, np.inf), wall / (WALKERS * BATCH * n))
            best_cpu[key] = min(best_cpu.get(key, np.inf), cpu / (WALKERS * BATCH * n))

    # same trajectories: the NumPy prefix run against a Numba run of equal length
    _, _, prefix = run_cpu(seed64, args.numpy_iters, max_threads)
    same = all(np.array_equal(a, b) for a, b in zip(prefix, outs["numpy"]))
    same_threads = all(np.array_equal(a, b) for th in thread_counts
                       for a, b in zip(outs[th], outs[thread_counts[0]]))

    rate = {k: 1.0 / v for k, v in best.items()}
    rate_cpu = {k: 1.0 / v for k, v in best_cpu.items()}
    print(f"walkers: L={L}, batch {BATCH}, {WALKERS} walkers; best of {args.repeats}; "
          f"identical to the reference: {same}, across thread counts: {same_threads}")
    print("samples/s is wall-clock; per CPU-second divides by the CPU time this process got "
          "(on a shared machine, the rate per core it would reach alone)")
    print(f"{'method':<24} {'samples/s':>11} {'vs NumPy':>9} {'per CPU-s':>11}")
    for key in ["numpy", *thread_counts]:
        name = "numpy reference" if key == "numpy" else f"numba cpu, {key} thread(s)"
        print(f"{name:<24} {rate[key]:>11.3e} {rate[key] / rate['numpy']:>9.2f} "
              f"{rate_cpu[key]:>11.3e}")
    rec = {
        "bench": "walkers", "time": datetime.datetime.now(datetime.UTC).isoformat(),
        "host": platform.node(), "cpu_count": os.cpu_count(), "numba": numba.__version__,
        "numpy": np.__version__, "L": L, "batch": BATCH, "walkers": WALKERS,
        "iters": args.iters, "numpy_iters": args.numpy_iters, "repeats": args.repeats,
        "samples_per_s": {str(k): v for k, v in rate.items()},
        "samples_per_cpu_s": {str(k): v for k, v in rate_cpu.items()},
        "identical_to_reference": same, "identical_across_threads": same_threads,
        "load_avg": os.getloadavg(),
    }
    os.makedirs(os.path.join(os.path.dirname(__file__), "out"), exist_ok=True)
    with open(os.path.join(os.path.dirname(__file__), "out", "bench_walkers.jsonl"), "a") as f:
        f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
