#!/usr/bin/env python
"""One Fig. 3 cell on the sparse path, "cuda" against "cpu": wall time and accuracies.

A Fig. 3 cell is one seed's 6 gammas (``fastsd.figures.fig3.GAMMAS``) trained as one
``train_ensemble`` on a visual task (App. G.3-G.4): here PSVRT on 5 x 5 patches of 5 x 5
pixels (1024 training patterns, Fig. 3b's largest quick x value) and Pentomino at width 8
(14 training shapes, blur 0.5, Fig. 3f's widest). Both backends train the same models on
the same host-drawn batches (``batches="host"``), so their accuracies differ by float32
rounding only; each is timed once, after a short warm-up run that compiles its kernels.

Run from the repository root on a GPU machine::

    python bench/gpu_fig3_cell.py [--steps 3000] [--out bench/out/gpu_fig3_cell.jsonl]

``--backends cpu`` (or ``cuda``) runs one side only, so that the two can run at once on
different resources (bench/gpu.sh). Prints one line a (cell, backend) and appends JSON lines
to ``--out``; exits 1 if a run failed. A benchmark, not a test: it asserts nothing.
"""
import argparse
import datetime
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

#: cell name -> (task class name, keyword arguments)
CELLS = {
    "psvrt-5x5": ("PSVRT", dict(patch=5, n_patches=5, n_train_patterns=1024, seed=0)),
    "pentomino-w8": ("Pentomino", dict(width=8, n_train_shapes=14, blur=0.5, seed=0)),
}


def run_cell(cell, backend, steps, width, eval_every, n_test):
    """Train the cell's 6 gammas on ``backend``; its record (times, accuracies)."""
    import fastsd
    from fastsd.figures.fig3 import GAMMAS
    name, kw = CELLS[cell]
    task = getattr(fastsd, name)(**kw)
    common = dict(width=width, eval_every=eval_every, n_test=n_test, backend=backend,
                  path="sparse", dtype="float32")
    t = time.perf_counter()
    fastsd.train_ensemble(task, GAMMAS, 0, steps=2, **{**common, "eval_every": 1, "n_test": 8})
    warm = time.perf_counter() - t
    t = time.perf_counter()
    res = fastsd.train_ensemble(task, GAMMAS, 0, steps=steps, **common)
    wall = time.perf_counter() - t
    return dict(cell=cell, backend=backend, steps=steps, width=width, models=len(GAMMAS),
                eval_every=eval_every, n_test=n_test, warmup_seconds=warm, seconds=wall,
                model_steps_per_s=len(GAMMAS) * steps / wall,
                gammas=[r.gamma for r in res],
                best_test_accuracy=[r.best_test_accuracy for r in res],
                final_test_accuracy=[r.final_test_accuracy for r in res])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cells", nargs="+", default=list(CELLS), choices=list(CELLS))
    ap.add_argument("--backends", nargs="+", default=["cuda", "cpu"], choices=["cuda", "cpu"])
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--n-test", type=int, default=1024)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "gpu_fig3_cell.jsonl"))
    args = ap.parse_args(argv)
    if min(args.steps, args.width, args.eval_every, args.n_test) < 1:
        ap.error("--steps, --width, --eval-every and --n-test must be >= 1")
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    failed = 0
    for cell in args.cells:
        for backend in args.backends:
            try:
                rec = run_cell(cell, backend, args.steps, args.width, args.eval_every,
                               args.n_test)
                print(f"{cell:<14}{backend:<6}{rec['seconds']:8.1f} s "
                      f"{rec['model_steps_per_s']:9.0f} model-steps/s  best acc "
                      + " ".join(f"{a:.3f}" for a in rec["best_test_accuracy"]), flush=True)
            except Exception as exc:  # noqa: BLE001 - one failing side is reported, not fatal
                rec = dict(cell=cell, backend=backend, error=f"{type(exc).__name__}: {exc}")
                failed += 1
                print(f"{cell:<14}{backend:<6}FAILED: {rec['error']}", flush=True)
            with open(args.out, "a") as fh:
                fh.write(json.dumps(dict(bench="gpu_fig3_cell", time=stamp, **rec)) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
