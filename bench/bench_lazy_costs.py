#!/usr/bin/env python
"""Benchmark: the lazy limit's time model (``fastsd.kernels.costs``) against timed cells.

Times "lazy_limit" cells with the predictor's defaults (logistic flow of the
NTK over all L^2 pairs, solver "auto", which takes "kron"; evaluations every
1,000 steps on 1,024 test pairs, backend "cpu") with ``lazy_cell``, two at a
time in spawned processes on one thread each (``--workers``), as the scan's
workers run on the 2-core machine, each in a fresh process, and appends one
JSON line a cell (its settings, wall time, peak resident memory above the
process's before the cell, and ``solver_info``) to ``--out``.

Then, over every cell in ``--out`` (this run's and earlier ones):

* the count laws (``COUNT_LAWS``: R, the cross-approximation terms, the
  flow's steps) are fitted by least squares on their logarithms and the prices
  (``PRICES``) by non-negative least squares on relative error at the cells'
  recorded counts (``fastsd._pricing.fit``); ``--fit`` prints both as Python,
  to paste into ``fastsd/kernels/costs.py``;
* a table gives, per cell, the measured seconds and the ratio measured /
  predicted by the shipped model (``predicted_seconds``: counts by the laws)
  and by the refitted prices at the recorded counts, and where it was
  measured, the peak memory against ``memory_bytes``.

    python bench/bench_lazy_costs.py                      # the default sample, ~25 min
    python bench/bench_lazy_costs.py --cells 256:1024 128:724 --steps 25000
    python bench/bench_lazy_costs.py --cells none --fit   # refit from --out only

A benchmark, not a test: it asserts nothing.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
#: The default sample: Fig. 1e's range (d, L 128..1024) and below it (d 8..64, L 64..256).
SAMPLE = ([(d, L) for L in (512, 362, 256, 181, 128) for d in (128, 256, 512, 1024)]
          + [(d, L) for L in (256, 128, 64) for d in (8, 16, 32, 64)])


def _rss():
    """This process's resident bytes now (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _cell(args):
    """One cell in a fresh process: a tiny cell first (Numba's cache), then the timed one and
    its peak resident memory above what the process held before it."""
    import resource

    d, L, seed, steps, eval_every, n_test = args
    from fastsd.kernels.lazy import lazy_cell

    lazy_cell(8, 8, seed=0, steps=10, eval_every=10, n_test=16, backend="cpu")
    before = _rss()
    start = time.perf_counter()
    rec = lazy_cell(d, L, seed=seed, steps=steps, eval_every=eval_every, n_test=n_test,
                    backend="cpu")
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    return dict(d=d, L=L, seed=seed, steps=steps, eval_every=eval_every, n_test=n_test,
                wall=wall, peak_bytes=peak, solver=rec["solver"], info=rec["solver_info"],
                best_test_accuracy=rec["best_test_accuracy"])


def measure(cells, workers, out):
    """Time ``cells`` (tuples of _cell's arguments) on ``workers`` processes; append to out."""
    from multiprocessing import get_context

    with get_context("spawn").Pool(workers, maxtasksperchild=1) as pool:
        with open(out, "a") as f:
            for rec in pool.imap_unordered(_cell, cells):
                f.write(json.dumps(rec) + "\n")
                f.flush()
                print(f"  timed d = {rec['d']}, L = {rec['L']}, {rec['steps']} steps: "
                      f"{rec['wall']:.1f} s, {rec['peak_bytes'] / 2**20:.0f} MiB", flush=True)


def _design(rows, law):
    u, v = np.log([r["d"] for r in rows]), np.log([r["L"] for r in rows])
    cols = [np.ones_like(u), u, u * u, v, u * v]
    if law == "flow_steps":
        cols.append(np.log([r["steps"] for r in rows]))
    return np.stack(cols, axis=1)


def fit_laws(rows):
    """COUNT_LAWS fitted to the cells' recorded counts (least squares on logarithms)."""
    from fastsd.kernels.costs import evaluations

    laws = {}
    for law, key in (("terms", "kron_terms"), ("aca_terms", "kron_aca_terms")):
        y = np.log([r["info"][key] for r in rows])
        laws[law] = tuple(np.linalg.lstsq(_design(rows, law), y, rcond=None)[0])
    y = np.log([1 + r["info"]["flow_steps"] - evaluations(r["steps"], r["eval_every"])
                for r in rows])
    laws["flow_steps"] = tuple(np.linalg.lstsq(_design(rows, "flow_steps"), y, rcond=None)[0])
    return laws


def _pair(text):
    """A --cells value: 'd:L' with d >= 1 and L >= 2, or 'none'."""
    if text == "none":
        return text
    try:
        d, L = map(int, text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected d:L (e.g. 256:512) or 'none'; got {text!r}")
    if d < 1 or L < 2:
        raise argparse.ArgumentTypeError(f"expected d >= 1 and L >= 2; got {text!r}")
    return d, L


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.strip().split("\n\n")[0].split()),
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--cells", nargs="+", default=None, type=_pair,
                    help="d:L pairs to time (default: the built-in sample); 'none' times nothing")
    ap.add_argument("--steps", type=int, nargs="+", default=[25000],
                    help="SGD steps' worth of flow time of each cell")
    ap.add_argument("--seed", type=int, default=0, help="seed of the cells")
    ap.add_argument("--workers", type=int, default=2, help="cells timed at once")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "bench_lazy_costs.jsonl"),
                    help="JSON lines: appended to, and every cell in it is fitted")
    ap.add_argument("--fit", action="store_true", help="print the refitted constants")
    args = ap.parse_args(argv)
    if args.cells is not None and "none" in args.cells and len(args.cells) > 1:
        ap.error("--cells: 'none' cannot be given with d:L pairs")

    from fastsd import _pricing
    from fastsd.kernels import costs

    if args.cells == ["none"] and not os.path.exists(args.out):
        raise SystemExit(f"no timed cells: {args.out} does not exist (bench/out is not in "
                         f"the repository); time some first, without --cells none")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    if args.cells != ["none"]:
        pairs = SAMPLE if args.cells is None else args.cells
        cells = sorted(((d, L, args.seed, s, 1000, 1024) for d, L in pairs for s in args.steps),
                       key=lambda c: -c[1] ** 3 * c[3])        # largest first
        measure(cells, args.workers, args.out)
    with open(args.out) as f:
        rows = [r for r in map(json.loads, f) if r["solver"] == "kron"]
    if not rows:
        raise SystemExit(f"no cells on solver 'kron' in {args.out}")

    def features(r, counts=None):
        return costs.cost_features(r["d"], r["L"], steps=r["steps"],
                                   eval_every=r["eval_every"], n_test=r["n_test"],
                                   counts=counts)

    def memory(r):
        return costs.memory_bytes(r["d"], r["L"], n_test=r["n_test"])

    prices = _pricing.fit([features(r, r["info"]) for r in rows], [r["wall"] for r in rows])
    laws = fit_laws(rows)
    print(f"{len(rows)} cells from {args.out}")
    print(f"{'d':>5} {'L':>5} {'steps':>6} {'terms':>6} {'products':>8} {'seconds':>8} "
          f"{'meas/shipped':>12} {'meas/refit':>10} {'MiB':>6} {'meas/pred':>9}")
    for r in sorted(rows, key=lambda r: (r["steps"], r["L"], r["d"])):
        shipped = costs.predicted_seconds(r["d"], r["L"], steps=r["steps"],
                                          eval_every=r["eval_every"], n_test=r["n_test"])
        refit = _pricing.predict(prices, features(r, r["info"]))
        print(f"{r['d']:>5} {r['L']:>5} {r['steps']:>6} {r['info']['kron_terms']:>6} "
              f"{r['info']['flow_products']:>8} {r['wall']:>8.1f} "
              f"{r['wall'] / shipped if shipped else math.inf:>12.2f} {r['wall'] / refit:>10.2f}"
              + (f" {r['peak_bytes'] / 2**20:>6.0f} {r['peak_bytes'] / memory(r):>9.2f}"
                 if "peak_bytes" in r else ""))
    if args.fit:
        print("COUNT_LAWS = {")
        for k, v in laws.items():
            print(f"    {k!r}: ({', '.join(f'{c:.4f}' for c in v)}),")
        print("}")
        print("PRICES = {" + ", ".join(f"{k!r}: {v:.4g}" for k, v in prices.items()) + "}")


if __name__ == "__main__":
    main()
