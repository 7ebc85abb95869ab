#!/usr/bin/env python
"""Benchmark: does ``path="auto"`` pick the faster training path? Both paths, side by side.

For every (L, d) of a grid, an ensemble of models of one seed (as a scan's
group on the CPU: the gammas of one seed) trains on the dense path and on the
symbol-basis path of backend "cpu", on one thread, with the real engines of
``train_ensemble`` (``fastsd.mlp.costs.step_timer``: batches drawn and the
engine run, as one evaluation window of training). The two paths' runs
alternate, ``--repeats`` times, and the fastest of each is kept. The table
shows the path the cost model (``fastsd.mlp.costs.load``: this machine's
calibration, or the shipped fallback prices) picks, the measured time per
step of the picked and of the rejected path, the model's predictions,
auto / best (1.00 when auto picked the faster path) and the path the shipped
fallback prices pick. Target: auto never more
than 10% slower than the better path.

Run from the repository root::

    python bench/bench_paths.py                       # the full grid, ~5-10 min on 2 cores
    python bench/bench_paths.py --Ls 64,256 --ds 256  # part of it
    python bench/bench_paths.py --costs fallback      # judge the shipped prices

It prints the table and appends one JSON line per cell to
``bench/out/bench_paths.jsonl``. A benchmark, not a test: it asserts nothing.
"""
import argparse
import datetime
import json
import os
import platform
import sys
import time
import uuid


def _ints(text):
    return [int(x) for x in text.split(",") if x]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--Ls", type=_ints, default=[16, 64, 128, 256, 512, 1024])
    ap.add_argument("--ds", type=_ints, default=[64, 256, 1024])
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--models", type=int, default=6)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--steps", type=int, default=200,
                    help="steps per timed run (fewer where a run would exceed --max-seconds)")
    ap.add_argument("--max-seconds", type=float, default=1.5,
                    help="longest timed run, predicted by the cost model (default 1.5)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    ap.add_argument("--costs", default="auto", choices=("auto", "fallback"),
                    help="the cost model auto uses: this machine's calibration where stored "
                         "(auto), or the shipped prices (fallback)")
    ap.add_argument("--out", default=os.path.join("bench", "out", "bench_paths.jsonl"))
    args = ap.parse_args(argv)

    from fastsd.mlp import costs
    from fastsd.scan.executors import thread_limit

    model = costs.load("cpu", args.dtype, environ={**os.environ, costs.ENV: args.costs})
    shipped = costs.fallback("cpu", args.dtype)
    run_id = uuid.uuid4().hex[:12]
    machine = {"cpu": costs.cpu_model(), "cores": os.cpu_count(), "python": sys.version.split()[0],
               "platform": platform.platform(), "load_average": os.getloadavg()}
    print(f"CPU: {machine['cpu']}, {machine['cores']} cores; load average "
          f"{machine['load_average'][0]:.2f}; one thread; {args.models} models of one seed, "
          f"m = {args.width}, B = {args.batch_size}, {args.dtype}")
    print(f"cost model: {model.describe()}")
    print(f"best of {args.repeats} alternating runs per path; ms per ensemble step")
    head = (f"{'L':>5} {'d':>5} {'steps':>5} {'auto':>6} {'auto ms':>9} {'other ms':>9} "
            f"{'pred dense':>10} {'pred sym':>9} {'auto/best':>9} {'shipped':>7}")
    print(head)
    print("-" * len(head))
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    worst, start = None, time.perf_counter()
    for d in args.ds:
        for L in args.Ls:
            sizes = dict(L=L, input_dim=2 * d, width=args.width, batch_size=args.batch_size)
            pred = {p: model.step_seconds(p, models=args.models, **sizes) for p in costs.PATHS}
            auto = model.choose(**sizes)
            steps = {p: max(2, min(args.steps, int(args.max_seconds / pred[p])))
                     for p in costs.PATHS}
            runs = {p: costs.step_timer(p, L=L, d=d, width=args.width,
                                        batch_size=args.batch_size, models=args.models,
                                        dtype=args.dtype) for p in costs.PATHS}
            best = {p: float("inf") for p in costs.PATHS}
            with thread_limit(1):
                for p in costs.PATHS:
                    runs[p](1)                  # load the kernels
                for _ in range(args.repeats):
                    for p in costs.PATHS:
                        best[p] = min(best[p], runs[p](steps[p]) / steps[p])
            other = "symbol" if auto == "dense" else "dense"
            ratio = best[auto] / min(best.values())
            worst = ratio if worst is None else max(worst, ratio)
            print(f"{L:>5} {d:>5} {min(steps.values()):>5} {auto:>6} {best[auto] * 1e3:>9.2f} "
                  f"{best[other] * 1e3:>9.2f} {pred['dense'] * 1e3:>10.2f} "
                  f"{pred['symbol'] * 1e3:>9.2f} {ratio:>9.2f} {shipped.choose(**sizes):>7}",
                  flush=True)
            record = {"run_id": run_id, "time": datetime.datetime.now(
                datetime.timezone.utc).isoformat(timespec="seconds"), "L": L, "d": d,
                "width": args.width, "models": args.models, "batch_size": args.batch_size,
                "dtype": args.dtype, "steps": steps, "seconds_per_step": best,
                "predicted": pred, "auto": auto, "auto_over_best": ratio,
                "shipped": shipped.choose(**sizes),
                "cost_model": model.describe(), "machine": machine}
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, sort_keys=True) + "\n")
    print(f"worst auto/best: {worst:.2f} (target <= 1.10); {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
