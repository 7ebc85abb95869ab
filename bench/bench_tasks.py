#!/usr/bin/env python
"""Benchmark: images per second of the visual tasks' batch generation, and its share of a step.

Measures, in one run and interleaved (best of several repeats, so that every
method sees the same machine state):

* ``vectorised``: fastsd's ``task.training_inputs(u, v, rng)`` on batches of
  128, the call the trainer makes once per model and SGD step;
* ``loop``: the same images made one example at a time in Python (cells by
  ``rng.choice``, pieces rotated by ``np.rot90``, blur by
  ``scipy.ndimage.gaussian_filter``), the straightforward way;
* ``step``: one SGD step of a Fig. 3 model (m = 512, batch 128, float32, Numba
  dense engine), per model, in a 6-gamma ``train_ensemble`` as the Fig. 3
  quick grid runs it; generation is included in the step.

The share of generation in a training step is vectorised time per batch /
step time per model, in wall time and in process CPU time (on a busy shared
machine the CPU-time share is the closer estimate of the idle one). Every
library runs on one thread (set the *_NUM_THREADS variables to change it),
as in the workers of ``fastsd reproduce fig3``. Settings: PSVRT at Fig. 3b/c sizes (patch 5, 5 and 10
patches per side), Pentomino at Fig. 3e/f sizes (width 2 and 6, blur 0.5).

Run from the repository root::

    python bench/bench_tasks.py            # ~1 minute on 2 idle cores
    python bench/bench_tasks.py --quick    # smoke run

It prints a table and appends JSON lines to ``bench/out/bench_tasks.jsonl``.
This is a benchmark, not a test: it asserts nothing about speed.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402

import numpy as np  # noqa: E402
from scipy import ndimage  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_train import background_busy, machine_info  # noqa: E402

from fastsd import train_ensemble  # noqa: E402
from fastsd.tasks import PSVRT, Pentomino  # noqa: E402
from fastsd.tasks.pentomino import PIECE_TEMPLATES, centred  # noqa: E402

BATCH = 128
WIDTH = 512
GAMMAS = [1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]
OUT = os.path.join(HERE, "out", "bench_tasks.jsonl")


def loop_images(task, u, v, rng):
    """The images of ``training_inputs``, made one example at a time (the baseline)."""
    H, W = task.image_shape
    g, c, s = task.grid, task.cell, task.stamp
    off = (c - s) // 2
    out = np.zeros((len(u), H * W))
    for i in range(len(u)):
        img = np.zeros((H, W))
        cells = rng.choice(g * g, size=2, replace=False)
        if isinstance(task, PSVRT):
            stamps = (task.patterns[u[i]], task.patterns[v[i]])
        else:
            pieces = (task.train_pieces[u[i]], task.train_pieces[v[i]])
            stamps = [centred(np.rot90(PIECE_TEMPLATES[p], rng.integers(4))) for p in pieces]
        for cell, stamp in zip(cells, stamps):
            r, col = divmod(int(cell), g)
            img[r * c + off:r * c + off + s, col * c + off:col * c + off + s] = stamp
        if isinstance(task, Pentomino) and task.blur > 0:
            img = ndimage.gaussian_filter(img, rng.uniform(0, task.blur))
        out[i] = img.ravel()
    return out


def _timed(fn, count):
    """(wall, process CPU) seconds of fn() divided by count."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return np.array([time.perf_counter() - wall, time.process_time() - cpu]) / count


def time_generation(fn, task, n_batches, rng):
    """(wall, CPU) seconds per batch of fn(u, v, rng)."""
    u, v, _ = task.draw_pairs(rng, (n_batches, BATCH))

    def run():
        for t in range(n_batches):      # each batch freed before the next, as in training
            fn(u[t], v[t], rng)
    return _timed(run, n_batches)


def time_step(task, steps):
    """(wall, CPU) seconds per model and SGD step in a 6-gamma ensemble (one eval at the end)."""
    kw = {"width": WIDTH, "steps": steps, "eval_every": steps, "n_test": BATCH}
    return _timed(lambda: train_ensemble(task, GAMMAS, 0, **kw), steps * len(GAMMAS))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short smoke run")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    n_vec, n_loop, steps = (20, 2, 20) if args.quick else (100, 5, 60)
    repeats = 1 if args.quick else args.repeats
    settings = {
        "psvrt-5x5": PSVRT(patch=5, n_patches=5, n_train_patterns=1024, seed=0),
        "psvrt-10x10": PSVRT(patch=5, n_patches=10, n_train_patterns=1024, seed=0),
        "pentomino-w2": Pentomino(width=2, n_train_shapes=14, blur=0.5, seed=0),
        "pentomino-w6": Pentomino(width=6, n_train_shapes=14, blur=0.5, seed=0),
    }
    for task in settings.values():                      # compile and warm up
        time_step(task, 2)
    best = {name: {k: np.full(2, np.inf) for k in ("vectorised", "loop", "step")}
            for name in settings}
    busy = []
    for _ in range(repeats):
        busy.append(background_busy(0.5))
        for name, task in settings.items():
            rng = np.random.default_rng(1)
            b = best[name]
            b["vectorised"] = np.minimum(b["vectorised"], time_generation(
                task.training_inputs, task, n_vec, rng))
            b["loop"] = np.minimum(b["loop"], time_generation(
                lambda u, v, r, task=task: loop_images(task, u, v, r), task, n_loop, rng))
            b["step"] = np.minimum(b["step"], time_step(task, steps))

    run_id = uuid.uuid4().hex[:8]
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    info = machine_info()
    print(f"batch {BATCH}, Fig. 3 model m={WIDTH} float32 in a {len(GAMMAS)}-gamma ensemble; "
          f"best of {repeats}; background CPU busy {[None if x is None else round(x, 2) for x in busy]}")
    head = (f"{'setting':<14} {'pixels':>6} {'vec img/s':>11} {'loop img/s':>11} {'speedup':>8} "
            f"{'gen ms/batch':>12} {'step ms':>8} {'gen share':>9} {'cpu share':>9}")
    print(head)
    print("-" * len(head))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "a") as fh:
        for name, task in settings.items():
            b = {k: v[0] for k, v in best[name].items()}         # wall
            cpu = {k: v[1] for k, v in best[name].items()}
            rec = {"run_id": run_id, "time": stamp, "setting": name, "repr": repr(task),
                   "pixels": task.input_dim, "batch": BATCH, "width": WIDTH,
                   "vectorised_images_per_s": BATCH / b["vectorised"],
                   "loop_images_per_s": BATCH / b["loop"],
                   "speedup": b["loop"] / b["vectorised"],
                   "generation_s_per_batch": b["vectorised"],
                   "step_s_per_model": b["step"],
                   "generation_share_of_step": b["vectorised"] / b["step"],
                   "cpu_s": cpu,
                   "generation_share_of_step_cpu": cpu["vectorised"] / cpu["step"],
                   "repeats": repeats, "quick": args.quick, "background_busy": busy,
                   "machine": info}
            fh.write(json.dumps(rec) + "\n")
            print(f"{name:<14} {task.input_dim:>6} {rec['vectorised_images_per_s']:>11.3g} "
                  f"{rec['loop_images_per_s']:>11.3g} {rec['speedup']:>7.1f}x "
                  f"{1e3 * b['vectorised']:>12.3f} {1e3 * b['step']:>8.2f} "
                  f"{rec['generation_share_of_step']:>8.1%} "
                  f"{rec['generation_share_of_step_cpu']:>8.1%}")
    print(f"appended to {os.path.relpath(OUT)} (run {run_id})")


if __name__ == "__main__":
    main()
