#!/usr/bin/env python
"""Benchmark: does ``path="auto"`` pick the faster training path? Both paths, side by side.

For every (L, d) of a grid, an ensemble of models of one seed (as a scan's
group on the CPU: the gammas of one seed) trains on the dense path and on the
symbol-basis path of backend "cpu", on one thread, with the real engines of
``train_ensemble`` (``fastsd.mlp.calibration.step_timer``: batches drawn and the
engine run, as one evaluation window of training). The two paths' runs
alternate, ``--repeats`` times, and the fastest of each is kept. The table
shows the path the cost model (``fastsd.mlp.costs.time_model``: this machine's
calibration, or the shipped fallback prices) picks, the measured time per
step of the picked and of the rejected path, the model's predictions,
auto / best (1.00 when auto picked the faster path) and the path the shipped
fallback prices pick. Target: auto never more
than 10% slower than the better path.

Run from the repository root::

    python bench/bench_paths.py                       # the full grid, ~5-10 min on 2 cores
    python bench/bench_paths.py --Ls 64,256 --ds 256  # part of it
    python bench/bench_paths.py --costs fallback      # judge the shipped prices
    git worktree add /tmp/before <rev>
    python bench/bench_paths.py --against /tmp/before # before and after, in one run

``--against DIR`` times another checkout of fastsd in the same run: a child
process imports fastsd from DIR (its cost model from its own calibration,
kept apart under ``--against-cache``), and its two paths' runs take turns
with this checkout's, so that both tables share the machine's state. The
extra columns give the other checkout's auto path, its time and how many
times faster this checkout's auto is.

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
import subprocess
import uuid

#: The child of ``--against``: times the other checkout's engines on request (one JSON line
#: in, one out), on one thread, loading each (path, L, d)'s kernels once.
_CHILD = r"""
import json, os, sys
import fastsd
from fastsd.mlp import costs
try:                                      # a checkout from before the time model's split
    from fastsd.mlp.calibration import step_timer
    time_model = costs.time_model
except ImportError:
    step_timer, time_model = costs.step_timer, costs.load
try:
    from fastsd import thread_limit
except ImportError:                       # a checkout from before fastsd.thread_limit
    from fastsd.scan.executors import thread_limit
print(json.dumps({"fastsd": os.path.dirname(fastsd.__file__)}), flush=True)
model, runs = None, {}
for line in sys.stdin:
    q = json.loads(line)
    if model is None:
        model = time_model("cpu", q["dtype"])
    key = (q["path"], q["L"], q["d"])
    with thread_limit(1):
        if key not in runs:
            runs[key] = step_timer(q["path"], L=q["L"], d=q["d"], width=q["width"],
                                   batch_size=q["batch_size"], models=q["models"],
                                   dtype=q["dtype"])
            runs[key](1)
        seconds = runs[key](q["steps"]) / q["steps"]
    auto = model.choose(L=q["L"], input_dim=2 * q["d"], width=q["width"],
                        batch_size=q["batch_size"])
    print(json.dumps({"seconds": seconds, "auto": auto}), flush=True)
"""


class _Against:
    """Another checkout's engines, timed in a child process (``--against``)."""

    def __init__(self, folder, cache):
        env = {**os.environ, "PYTHONPATH": os.path.abspath(folder), "XDG_CACHE_HOME": cache}
        self.proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env,
                                     cwd=os.path.abspath(folder))
        self.where = json.loads(self.proc.stdout.readline())["fastsd"]

    def time(self, **query):
        self.proc.stdin.write(json.dumps(query) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


#: The two paths of the clean symbol task, timed side by side.
PATHS = ("dense", "symbol")


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
    ap.add_argument("--against", metavar="DIR",
                    help="another checkout of fastsd to time side by side (before/after)")
    ap.add_argument("--against-cache", default=os.path.join("bench", "out", "against-cache"),
                    help="XDG_CACHE_HOME of the --against child: its calibration (run "
                         "`fastsd calibrate` there first under the same variable) and kernels")
    ap.add_argument("--out", default=os.path.join("bench", "out", "bench_paths.jsonl"))
    args = ap.parse_args(argv)
    if args.repeats < 1 or args.steps < 1 or not args.max_seconds > 0:
        ap.error(f"--repeats and --steps must be integers >= 1 and --max-seconds > 0; got "
                 f"{args.repeats}, {args.steps}, {args.max_seconds}")
    if args.against and not os.path.isfile(os.path.join(args.against, "fastsd", "__init__.py")):
        ap.error(f"--against must be a checkout of fastsd (a folder holding fastsd/__init__.py); "
                 f"got {args.against!r}")
    from fastsd.mlp import calibration, costs
    from fastsd.mlp import prices as mlp_prices
    from fastsd import thread_limit
    from fastsd._threads import cpu_model

    model = costs.time_model("cpu", args.dtype, environ={**os.environ, costs.ENV: args.costs})
    shipped = mlp_prices.fallback("cpu", args.dtype)
    run_id = uuid.uuid4().hex[:12]
    machine = {"cpu": cpu_model(), "cores": os.cpu_count(), "python": sys.version.split()[0],
               "platform": platform.platform(), "load_average": os.getloadavg()}
    print(f"CPU: {machine['cpu']}, {machine['cores']} cores; load average "
          f"{machine['load_average'][0]:.2f}; one thread; {args.models} models of one seed, "
          f"m = {args.width}, B = {args.batch_size}, {args.dtype}")
    print(f"cost model: {model.describe()}")
    against = _Against(args.against, os.path.abspath(args.against_cache)) if args.against else None
    if against:
        print(f"against: fastsd at {against.where}")
    print(f"best of {args.repeats} alternating runs per path; ms per ensemble step")
    head = (f"{'L':>5} {'d':>5} {'steps':>5} {'auto':>6} {'auto ms':>9} {'other ms':>9} "
            f"{'pred dense':>10} {'pred sym':>9} {'auto/best':>9} {'shipped':>7}")
    if against:
        head += f" {'before':>7} {'b. auto ms':>10} {'b. other ms':>11} {'speedup':>7}"
    print(head)
    print("-" * len(head))
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    worst, start = None, time.perf_counter()
    for d in args.ds:
        for L in args.Ls:
            sizes = dict(L=L, input_dim=2 * d, width=args.width, batch_size=args.batch_size)
            pred = {p: model.step_seconds(p, models=args.models, **sizes) for p in PATHS}
            auto = model.choose(**sizes)
            steps = {p: max(2, min(args.steps, int(args.max_seconds / pred[p])))
                     for p in PATHS}
            runs = {p: calibration.step_timer(p, L=L, d=d, width=args.width,
                                        batch_size=args.batch_size, models=args.models,
                                        dtype=args.dtype) for p in PATHS}
            best = {p: float("inf") for p in PATHS}
            before, before_auto = {p: float("inf") for p in PATHS}, None
            with thread_limit(1):
                for p in PATHS:
                    runs[p](1)                  # load the kernels
                for _ in range(args.repeats):
                    for p in PATHS:
                        best[p] = min(best[p], runs[p](steps[p]) / steps[p])
                        if against:
                            got = against.time(path=p, L=L, d=d, width=args.width,
                                               batch_size=args.batch_size, models=args.models,
                                               dtype=args.dtype, steps=steps[p])
                            before[p] = min(before[p], got["seconds"])
                            before_auto = got["auto"]
            other = "symbol" if auto == "dense" else "dense"
            ratio = best[auto] / min(best.values())
            worst = ratio if worst is None else max(worst, ratio)
            line = (f"{L:>5} {d:>5} {min(steps.values()):>5} {auto:>6} {best[auto] * 1e3:>9.2f} "
                    f"{best[other] * 1e3:>9.2f} {pred['dense'] * 1e3:>10.2f} "
                    f"{pred['symbol'] * 1e3:>9.2f} {ratio:>9.2f} {shipped.choose(**sizes):>7}")
            if against:
                b_other = "symbol" if before_auto == "dense" else "dense"
                line += (f" {before_auto:>7} {before[before_auto] * 1e3:>10.2f} "
                         f"{before[b_other] * 1e3:>11.2f} "
                         f"{before[before_auto] / best[auto]:>7.2f}")
            print(line, flush=True)
            record = {"run_id": run_id, "time": datetime.datetime.now(
                datetime.timezone.utc).isoformat(timespec="seconds"), "L": L, "d": d,
                "width": args.width, "models": args.models, "batch_size": args.batch_size,
                "dtype": args.dtype, "steps": steps, "seconds_per_step": best,
                "predicted": pred, "auto": auto, "auto_over_best": ratio,
                "shipped": shipped.choose(**sizes),
                "cost_model": model.describe(), "machine": machine}
            if against:
                record["against"] = {"fastsd": against.where, "auto": before_auto,
                                     "seconds_per_step": before}
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, sort_keys=True) + "\n")
    if against:
        against.close()
    print(f"worst auto/best: {worst:.2f} (target <= 1.10); {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
