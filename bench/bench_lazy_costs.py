#!/usr/bin/env python
"""Benchmark: the lazy limit's time model (``fastsd.kernels.costs``) against timed cells.

Times "lazy_limit" cells with the predictor's defaults (logistic flow of the
NTK over all L^2 pairs, solver "auto", which takes "kron"; evaluations every
1,000 steps on 1,024 test pairs, backend "cpu") with ``lazy_cell``, two at a
time in spawned processes on one thread each (``--workers``), as the scan's
workers run on the 2-core machine, each in a fresh process, with the time of
each of its phases (``costs.PHASES``: the factors, the flow's products, the
test blocks' cross approximation and GEMM, the matrix-free test logits), and
appends one JSON line a cell (its settings, wall time and phases, peak
resident memory above the process's before the cell, ``solver_info``, and the
machine's probe factors, ``fastsd._probe``, measured before the run) to ``--out``.

Then, over every cell in ``--out`` (this run's and earlier ones, on any machine):

* the count laws (``COUNT_LAWS``: R, the cross-approximation terms, the
  flow's steps, the test blocks' terms) are fitted by least squares on their
  logarithms, and the prices (``PRICES``) phase by phase by non-negative least
  squares on relative error (``fastsd._pricing.fit_prices``), each unit's count times
  its probe factor, so that the prices are the reference machine's; ``--fit``
  prints both as Python, to paste into ``fastsd/kernels/costs.py``;
* a table gives, per cell, the measured seconds and the ratio measured /
  predicted by the shipped model (counts by the laws) and by the refitted
  prices at the recorded counts, both with the cell's probe factors, and the
  peak memory against ``memory_bytes``.

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


def _phases():
    """Wrap the phases of a flow cell on solver "kron" with timers (this process only).

    Returns a dict that fills as cells run: seconds of "factorise" (the factors),
    "products" (``KronFactors.apply``), "test_aca" (the test blocks' cross
    approximation), "test_gemm" (their logits) and "test_exact" (matrix-free test
    logits, below ``kron.TEST_CROSS_MIN_L``), and the test blocks' work:
    "test_aca_entries" (sum of k n L over the blocks' chunks, k their terms, n their
    pairs), "test_gemm_flops" (2 k n L^2) and "test_blocks" (chunks).
    """
    from fastsd.kernels import kron, solvers

    got = dict.fromkeys(("factorise", "products", "test_aca", "test_gemm", "test_exact",
                         "test_aca_entries", "test_gemm_flops", "test_blocks"), 0.0)

    def timed(owner, name, phase, after=None):
        inner = getattr(owner, name)

        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            out = inner(*args, **kwargs)
            got[phase] += time.perf_counter() - start
            if after is not None:
                after(*args)
            return out
        setattr(owner, name, wrapper)

    def blocks_done(blocks, *_):
        got["test_blocks"] += 1
        got["test_aca_entries"] += blocks.k * blocks.n * blocks.L
        got["test_gemm_flops"] += 2.0 * blocks.k * blocks.n * blocks.L ** 2

    timed(kron, "factorise", "factorise")
    timed(kron.KronFactors, "apply", "products")
    timed(kron._TestBlocks, "__init__", "test_aca", blocks_done)
    timed(kron._TestBlocks, "logits", "test_gemm")
    timed(solvers.Solver, "logits", "test_exact")
    return got


def _cell(args):
    """One cell in a fresh process: a tiny cell first (Numba's cache), then the timed one with
    its phases (``_phases``) and its peak resident memory above what the process held before."""
    import resource

    d, L, seed, steps, eval_every, n_test = args
    from fastsd.kernels.lazy import lazy_cell

    lazy_cell(8, 8, seed=0, steps=10, eval_every=10, n_test=16, backend="cpu")
    phases = _phases()
    before = _rss()
    start = time.perf_counter()
    rec = lazy_cell(d, L, seed=seed, steps=steps, eval_every=eval_every, n_test=n_test,
                    backend="cpu")
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    return dict(d=d, L=L, seed=seed, steps=steps, eval_every=eval_every, n_test=n_test,
                wall=wall, peak_bytes=peak, solver=rec["solver"], info=rec["solver_info"],
                phases=phases, best_test_accuracy=rec["best_test_accuracy"])


def _probe_now(_):
    """This machine's factors for the lazy limit (``fastsd.kernels.costs.probe``), measured
    now, not read from the cache, in a fresh process."""
    from fastsd.kernels.costs import probe

    return probe()


def measure(cells, workers, out):
    """Time ``cells`` (tuples of _cell's arguments) on ``workers`` processes; append to out,
    each line with the machine's probe factors measured before the cells (``_probe_now``)."""
    from multiprocessing import get_context

    with get_context("spawn").Pool(workers, maxtasksperchild=1) as pool:
        factors = pool.map(_probe_now, [None])[0]
        print("  probe factors: " + ", ".join(f"{k} {v:.2f}" for k, v in factors.items()))
        with open(out, "a") as f:
            for rec in pool.imap_unordered(_cell, cells):
                f.write(json.dumps(dict(rec, factors=factors)) + "\n")
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
    crossed = [r for r in rows if _test_terms(r)]
    if len(crossed) >= 3:       # ln k = c0 + c1 u + c2 u^2: the test blocks' terms, by d
        y = np.log([_test_terms(r) for r in crossed])
        laws["test_terms"] = tuple(np.linalg.lstsq(_design(crossed, "test_terms")[:, :3], y,
                                                   rcond=None)[0])
    return laws


def _test_terms(r):
    """The mean terms k of the cell's test-block chunks (0 below kron.TEST_CROSS_MIN_L)."""
    p = r["phases"]
    return p["test_aca_entries"] / (r["n_test"] * r["L"] * p["test_blocks"]) if p[
        "test_blocks"] else 0.0


def _counts(r):
    """The cell's recorded counts, with its test blocks' mean terms."""
    return dict(r["info"], **({"kron_test_terms": _test_terms(r)} if _test_terms(r) else {}))


def fit_prices(rows):
    """``PRICES`` on the reference machine, fitted phase by phase (``costs.PHASES``): each
    phase's seconds against its units at the cell's recorded counts, every unit's count
    times the factor of its kind in the probe run with the cell (so the price is the
    reference machine's)."""
    from fastsd import _pricing
    from fastsd.kernels import costs

    prices = {}
    for phase, units in costs.PHASES.items():
        feats, seconds = [], []
        for r in rows:
            p = r["phases"]
            t = (r["wall"] - sum(p[q] for q in costs.PHASES if q != "rest")
                 if phase == "rest" else p[phase])
            f = _features(r, _counts(r))
            scaled = {u: f[u] * _factor(r, u) for u in units}
            if t > 0 and any(scaled.values()):
                feats.append(scaled)
                seconds.append(t)
        prices.update(_pricing.fit_prices(feats, seconds) if feats else dict.fromkeys(units, 0.0))
    return prices


def _factor(r, unit):
    """The factor of ``unit``'s kind in the probe run with cell r (NumPy work: "numpy"; files
    written before the lazy limit had its own probe call it "scalar", the MLP engine's)."""
    from fastsd.kernels import costs

    kind = costs.UNIT_KINDS.get(unit, "numpy")
    return r["factors"][kind] if kind in r["factors"] else r["factors"]["scalar"]


def _features(r, counts=None):
    from fastsd.kernels import costs

    return costs.cost_features(r["d"], r["L"], steps=r["steps"], eval_every=r["eval_every"],
                               n_test=r["n_test"], counts=counts)


def _predict(prices, r, counts=None):
    """Seconds of cell r at ``prices`` scaled by the factors of the probe run with it."""
    f = _features(r, counts)
    return sum(prices.get(u, 0.0) * _factor(r, u) * f[u] for u in f)


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
        rows = [r for r in map(json.loads, f) if r["solver"] == "kron" and "phases" in r]
    if not rows:
        raise SystemExit(f"no timed cells on solver 'kron' with phases in {args.out}")

    prices = fit_prices(rows)
    laws = fit_laws(rows)
    print(f"{len(rows)} cells from {args.out}; measured / predicted with the factors of the "
          f"probe run with each cell")
    print(f"{'d':>5} {'L':>5} {'steps':>6} {'terms':>6} {'k':>5} {'products':>8} "
          f"{'seconds':>8} {'meas/shipped':>12} {'meas/refit':>10} {'MiB':>6} {'meas/pred':>9}")
    for r in sorted(rows, key=lambda r: (r["steps"], r["L"], r["d"])):
        shipped = _predict(costs.PRICES, r)
        refit = _predict(prices, r, _counts(r))
        memory = costs.memory_bytes(r["d"], r["L"], n_test=r["n_test"])
        print(f"{r['d']:>5} {r['L']:>5} {r['steps']:>6} {r['info']['kron_terms']:>6} "
              f"{_test_terms(r):>5.1f} {r['info']['flow_products']:>8} {r['wall']:>8.1f} "
              f"{r['wall'] / shipped:>12.2f} {r['wall'] / refit:>10.2f} "
              f"{r['peak_bytes'] / 2**20:>6.0f} {r['peak_bytes'] / memory:>9.2f}")
    print("phases, share of the cells' time: " + ", ".join(
        f"{q} {sum(r['phases'][q] for r in rows) / sum(r['wall'] for r in rows):.0%}"
        for q in costs.PHASES if q != "rest"))
    if args.fit:
        print("for fastsd/kernels/prices.json:")
        print(json.dumps({"count_laws": {k: [round(c, 4) for c in v] for k, v in laws.items()},
                          "prices": {k: float(f"{v:.4g}") for k, v in prices.items()}},
                         indent=1))


if __name__ == "__main__":
    main()
