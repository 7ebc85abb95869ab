"""A quick Fig. 3 (b, c, e, f): visual same-different accuracy over richness gamma.

Panels (Sec. 4, App. G.3-G.4), each cell one ``train_ensemble`` call that
trains every gamma in 10^-5..10^0 (and every seed) in lockstep:

* b: PSVRT, test accuracy vs the number of training bit-patterns (5 x 5 patches);
* c: PSVRT, test accuracy vs the image width in patches (fixed pattern count);
* e: Pentomino, test accuracy vs the number of training shapes (width 2);
* f: Pentomino, test accuracy vs the image width in cells (14 training shapes).

Reported accuracy is the best test accuracy over the history (App. G.1) on
held-out patterns / shapes, averaged over seeds. The grid (``GRID``) is far
smaller than the paper's (m = 512, 100,000 steps, 3 seeds): fewer steps and
a narrower model, so that the whole grid runs in under 10 minutes on two
idle cores. Cells run in two single-threaded worker processes (faster than
one two-threaded process on these small GEMMs); each cell reports its wall
time and its CPU time, which on a busy machine estimates the idle wall time.

    python examples/fig3_quick.py           # the quick grid
    python examples/fig3_quick.py --smoke   # a seconds-long check of the plumbing
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402

import numpy as np  # noqa: E402

GAMMAS = [1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0]

#: The quick grid: per panel the task, the swept parameter and its values,
#: the fixed parameters, and the training settings shared by every cell.
GRID = {
    "b": {"task": "PSVRT", "x": "n_train_patterns", "values": [16, 64, 256, 1024],
          "fixed": {"patch": 5, "n_patches": 5}},
    "c": {"task": "PSVRT", "x": "n_patches", "values": [2, 4, 6],
          "fixed": {"patch": 5, "n_train_patterns": 256}},
    "e": {"task": "Pentomino", "x": "n_train_shapes", "values": [2, 6, 10, 16],
          "fixed": {"width": 2, "blur": 0.5}},
    "f": {"task": "Pentomino", "x": "width", "values": [2, 3, 4],
          "fixed": {"n_train_shapes": 14, "blur": 0.5}},
}
TRAIN = {"width": 256, "steps": 3000, "batch_size": 128, "eval_every": 250, "n_test": 1024}
SEEDS = [0, 1]
SMOKE_TRAIN = {"width": 16, "steps": 20, "batch_size": 32, "eval_every": 10, "n_test": 64}


def run_cell(panel, x, train, seeds):
    """Train every (gamma, seed) of one cell in one ensemble; return accuracies and times."""
    from fastsd import train_ensemble
    from fastsd.tasks import PSVRT, Pentomino

    spec = GRID[panel]
    cls = {"PSVRT": PSVRT, "Pentomino": Pentomino}[spec["task"]]
    runs = [(g, s) for g in GAMMAS for s in seeds]
    tasks = [cls(**spec["fixed"], **{spec["x"]: x}, seed=1000 + s) for _, s in runs]
    wall, cpu = time.perf_counter(), time.process_time()
    res = train_ensemble(tasks, [g for g, _ in runs], [s for _, s in runs], **train)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    acc = np.array([r.best_test_accuracy for r in res]).reshape(len(GAMMAS), len(seeds))
    return {"panel": panel, "x": x, "acc": acc.mean(axis=1), "wall": wall, "cpu": cpu,
            "pixels": tasks[0].input_dim}


def _pixels(panel, x):
    spec = dict(GRID[panel]["fixed"], **{GRID[panel]["x"]: x})
    side = 5 * spec["n_patches"] if GRID[panel]["task"] == "PSVRT" else 7 * spec["width"]
    return side * side


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny training, to check the plumbing")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    train = SMOKE_TRAIN if args.smoke else TRAIN
    seeds = SEEDS[:1] if args.smoke else SEEDS
    cells = [(p, x) for p, spec in GRID.items() for x in spec["values"]]
    cells.sort(key=lambda c: -_pixels(*c))          # largest first, for load balance
    print(f"grid: {GRID}\ntraining: {train}, seeds {seeds}, gammas {GAMMAS}\n")
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        out = list(pool.map(run_cell, *zip(*cells), [train] * len(cells),
                            [seeds] * len(cells)))
    total = time.perf_counter() - start
    for panel, spec in GRID.items():
        print(f"Fig. 3{panel}: {spec['task']} best test accuracy vs {spec['x']} "
              f"({', '.join(f'{k}={v}' for k, v in spec['fixed'].items())})")
        print(f"{spec['x']:>17} " + " ".join(f"{g:>7.0e}" for g in GAMMAS)
              + f" {'wall s':>7} {'cpu s':>7}")
        for r in sorted(out, key=lambda r: r["x"]):
            if r["panel"] == panel:
                print(f"{r['x']:>17} " + " ".join(f"{a:>7.3f}" for a in r["acc"])
                      + f" {r['wall']:>7.1f} {r['cpu']:>7.1f}")
        print()
    cpu = sum(r["cpu"] for r in out)
    print(f"total wall {total:.1f} s with {args.workers} workers; summed cell CPU {cpu:.1f} s "
          f"(~{cpu / args.workers:.0f} s wall on {args.workers} idle cores)")


if __name__ == "__main__":
    main()
