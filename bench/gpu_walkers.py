#!/usr/bin/env python
"""GPU check and timing of the walker ensemble's CUDA kernel; runs unattended, prints JSON.

1. Correctness on the device: ``simulate(backend="cuda")`` against the Numba
   CPU kernel (same seed, both readout signs), and the deterministic core
   (pre-drawn symbols) against the NumPy reference: trajectories must be
   identical.
2. Timing: walker-samples per second at L = 16, batch 512, for growing
   numbers of walkers (one GPU thread each), best of ``--repeats`` after a
   warm-up, including the host-device transfers; and the Numba CPU kernel on
   the same machine at 1024 walkers for comparison. Larger sizes are skipped
   once a run takes longer than ``--max-seconds``.

Prints one JSON object per measurement and a final summary object; also
writes the summary to ``$OUT/gpu_walkers.json`` when ``OUT`` is set.

Usage (on a GPU machine, from the repository root)::

    python bench/gpu_walkers.py
    python bench/gpu_walkers.py --walkers 1024 65536 --iters 50
"""
import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")

import argparse
import json
import sys
import time
import traceback

import numpy as np

L, BATCH = 16, 512


def emit(obj):
    print(json.dumps(obj), flush=True)
    return obj


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--walkers", type=int, nargs="+",
                   default=[1024, 8192, 65536, 262144, 1048576])
    p.add_argument("--iters", type=int, default=100)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--max-seconds", type=float, default=20.0)
    p.add_argument("--check-walkers", type=int, default=300)
    p.add_argument("--check-iters", type=int, default=20)
    args = p.parse_args()
    summary = {"bench": "gpu_walkers", "L": L, "batch": BATCH, "iters": args.iters,
               "checks": {}, "timings": []}
    try:
        import numba
        from numba import cuda

        from fastsd.walkers import _cuda, simulate
        from fastsd.walkers import _reference as ref
        summary["numba"] = numba.__version__
        if not cuda.is_available():
            summary["error"] = "no CUDA GPU available to Numba"
            return emit(summary)
        try:
            name = cuda.get_current_device().name
            summary["device"] = name.decode() if isinstance(name, bytes) else str(name)
        except AttributeError:                  # the simulator has no device object
            summary["device"] = "Numba CUDA simulator"
        summary["cpu_count"] = os.cpu_count()

        t = time.perf_counter()
        for readout in (1, -1):
            kw = dict(L=L, batch_size=BATCH, n_iters=args.check_iters, readout=readout,
                      n_walkers=args.check_walkers, seed=1)
            g, c = simulate(backend="cuda", **kw), simulate(backend="cpu", **kw)
            summary["checks"][f"cuda_equals_cpu_readout_{readout:+d}"] = all(
                np.array_equal(getattr(g, k), getattr(c, k))
                for k in ("omega1", "omega2", "counts", "active"))
        seed64 = np.uint64(12345)
        u, v, coin = ref.draw(seed64, np.arange(64), 5, 0, 7 * 30)
        want = ref.run(u, v, coin, 5, 7, -1)
        got = _cuda.run(u, v, coin, 5, 7, -1)
        summary["checks"]["core_equals_reference"] = all(
            np.array_equal(a, b) for a, b in zip(got, want))
        summary["checks"]["first_compile_and_checks_s"] = round(time.perf_counter() - t, 2)
        emit({"checks": summary["checks"]})

        def timed(backend, W):
            best = np.inf
            for _ in range(args.repeats):
                r = simulate(L, BATCH, args.iters, 1, W, seed=0, backend=backend)
                best = min(best, r.wall_time)
            return best

        simulate(L, BATCH, 1, 1, 1024, seed=0, backend="cpu")          # compile
        cpu_s = timed("cpu", 1024)
        summary["cpu_1024_samples_per_s"] = 1024 * BATCH * args.iters / cpu_s
        emit({"backend": "cpu", "walkers": 1024, "threads": numba.get_num_threads(),
              "seconds": cpu_s, "samples_per_s": summary["cpu_1024_samples_per_s"]})
        for W in args.walkers:
            s = timed("cuda", W)
            row = emit({"backend": "cuda", "walkers": W, "seconds": s,
                        "samples_per_s": W * BATCH * args.iters / s})
            summary["timings"].append(row)
            if s > args.max_seconds:
                summary["skipped_larger_than"] = W
                break
    except Exception:
        summary["error"] = traceback.format_exc()
    emit(summary)
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "gpu_walkers.json"), "w") as f:
            json.dump(summary, f, indent=1)
    return summary


if __name__ == "__main__":
    sys.exit(0 if "error" not in main() else 1)
