#!/usr/bin/env python
"""Benchmark: predicted against measured wall time, on a quiet machine and a busy one.

For each case the prediction is what a user reads before the run (``fastsd reproduce
... --dry-run --json``, or ``fastsd.scan.plan`` for a grid of cells), and the
measurement is the wall time of the real run that follows, each in a fresh process
(imports, compiles from the cache and the run, as a user waits for them), into a
fresh folder:

- ``fig1c-quick`` and ``fig3-quick``: ``fastsd reproduce <figure> --quick`` (any
  ``<figure>-quick`` of ``fastsd reproduce --help`` may be asked for, and
  ``--figures all`` times every figure's ``--quick`` preset instead of the cases);
- ``fig1c-12``: 12 cells of the full Fig. 1c not in its quick grid (d = 256, L = 32
  and 64, its 6 gammas, seed 0, 25,000 steps, m = 1024);
- ``lazy-512-f32`` and ``lazy-512-f64``: a lazy-limit cell (d = 256, L = 512, the
  logistic flow on solver "kron", float32 or float64 products).

``--load N`` keeps N busy processes (a Python loop each) running through both the
prediction and the run, as other users' work would. The prediction read is the one
for the machine as it is (``predicted_wall_now_s``, the quiet machine's time slowed by
the load the plan measured, ``fastsd._probe.slowdown``) where the checkout gives it,
else the quiet machine's (``predicted_wall_s``): run with ``PYTHONPATH`` set to an
older checkout and ``--predict-only`` to read its predictions beside the same runs.

Run from the repository root::

    python bench/bench_predictions.py --load 0
    python bench/bench_predictions.py --load 2
    python bench/bench_predictions.py --figures all     # every figure's --quick, ~17 min
    PYTHONPATH=/tmp/before python bench/bench_predictions.py --load 2 --predict-only

It prints a table (predicted, measured, measured / predicted) and appends one JSON
line per case to ``bench/out/bench_predictions.jsonl``. A benchmark, not a test.
Run a figure once before timing it (or any figure, the first time after a change to
fastsd), so that its Numba kernels load from the cache rather than compile.
"""
import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

CASES = ("fig1c-quick", "fig3-quick", "fig1c-12", "lazy-512-f32", "lazy-512-f64")

#: The grid cases, run through fastsd.scan in a fresh process.
_GRID = r"""
import json, sys, time
from fastsd.scan import Grid, plan, run
case, out, predict_only = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
if case == "fig1c-12":
    grid, pred = Grid(d=[256], L=[32, 64], gamma=["lazy", 0.05, 0.1, 0.25, 0.5, 1.0], seed=[0],
                      width=1024, steps=25_000, eval_every=1000), "mlp"
else:
    grid, pred = Grid(d=[256], L=[512], dtype=["float32" if case.endswith("f32") else "float64"],
                      steps=25_000, eval_every=1000), "lazy_limit"
p = plan(grid, pred, out)
now = getattr(p, "seconds_now", None)
print(json.dumps({"predicted_wall_s": p.seconds, "predicted_wall_now_s": now,
                  "busy_cores": getattr(p, "busy_cores", None)}), flush=True)
if not predict_only:
    run(grid, pred, out, progress=False)
"""


def _spin():
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


@contextlib.contextmanager
def load(n):
    procs = [_spin() for _ in range(n)]
    try:
        time.sleep(1.0 if n else 0.0)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def _predicted(info):
    now = info.get("predicted_wall_now_s")
    return (now, "now") if now is not None else (info["predicted_wall_s"], "quiet")


def run_case(case, predict_only):
    """(predicted seconds, which prediction, measured wall seconds or None, busy cores)."""
    with tempfile.TemporaryDirectory() as out:
        if case.endswith("-quick"):
            figure = case.split("-")[0]
            dry = subprocess.run([sys.executable, "-m", "fastsd", "reproduce", figure, "--quick",
                                  "--out", out, "--dry-run", "--json"], capture_output=True,
                                 text=True, check=True)
            info = json.loads(dry.stdout)
            cmd = [sys.executable, "-m", "fastsd", "reproduce", figure, "--quick", "--out", out,
                   "--quiet"]
            start = time.perf_counter()
            if not predict_only:
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            wall = time.perf_counter() - start
        else:
            start = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-c", _GRID, case,
                                     os.path.join(out, "cells.jsonl"), str(int(predict_only))],
                                    stdout=subprocess.PIPE, text=True)
            info = json.loads(proc.stdout.readline())
            proc.stdout.read()
            if proc.wait():
                raise SystemExit(f"case {case} failed")
            wall = time.perf_counter() - start
        predicted, which = _predicted(info)
        return predicted, which, None if predict_only else wall, info.get("busy_cores")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES),
                    help=f"comma-separated, of {', '.join(CASES)} (default all)")
    ap.add_argument("--figures", default="",
                    help="comma-separated figures, or 'all': time each figure's --quick preset "
                         "(cases <figure>-quick) instead of --cases")
    ap.add_argument("--load", type=int, default=0, help="busy processes beside (default 0)")
    ap.add_argument("--predict-only", action="store_true", help="read the predictions only")
    ap.add_argument("--out", default="bench/out/bench_predictions.jsonl")
    args = ap.parse_args(argv)
    from fastsd.figures import FIGURES

    quick = tuple(f"{f}-quick" for f in FIGURES)
    if args.figures:
        figures = FIGURES if args.figures == "all" else [f for f in args.figures.split(",") if f]
        bad = [f for f in figures if f not in FIGURES]
        if bad:
            ap.error(f"--figures must be 'all' or among {', '.join(FIGURES)}; got {bad}")
        cases = [f"{f}-quick" for f in figures]
    else:
        cases = [c for c in args.cases.split(",") if c]
    bad = [c for c in cases if c not in CASES + quick]
    if bad or args.load < 0:
        ap.error(f"--cases must be among {', '.join(dict.fromkeys(CASES + quick))} and "
                 f"--load >= 0; got {args.cases!r}, {args.load}")
    import fastsd
    from fastsd._threads import cpu_model

    print(f"{cpu_model()}, {os.cpu_count()} cores; fastsd at {os.path.dirname(fastsd.__file__)}; "
          f"{args.load} busy processes")
    print(f"{'case':<14}{'predicted':>10}{'(which)':>8}{'measured':>10}{'meas/pred':>10}"
          f"{'busy':>6}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with load(args.load):
        for case in cases:
            predicted, which, wall, busy = run_case(case, args.predict_only)
            # a figure whose time is not modelled (fig1a, figA1, figC1) is predicted as None
            ratio = f"{wall / predicted:>10.2f}" if wall and predicted else f"{'':>10}"
            pred = f"{predicted:.1f}s" if predicted is not None else "-"
            print(f"{case:<14}{pred:>10}{which if predicted is not None else '-':>8}"
                  f"{(f'{wall:.1f}s' if wall else '-'):>10}{ratio}"
                  f"{(f'{busy:.1f}' if busy is not None else '-'):>6}", flush=True)
            with open(args.out, "a") as fh:
                fh.write(json.dumps({"case": case, "load": args.load, "predicted_s": predicted,
                                     "prediction": which, "measured_s": wall,
                                     "busy_cores": busy, "cpu": cpu_model(),
                                     "fastsd": os.path.dirname(fastsd.__file__),
                                     "python": platform.python_version(),
                                     "at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                         time.gmtime())}) + "\n")


if __name__ == "__main__":
    main()
