"""L*(d) along the lazy regime's time axis: the limit and lazy networks read at every step of a log schedule.
==========================================================================================================

The paper reads Fig. 1e's accuracy as the best of evaluations every 1000 steps. This
script reads it at t = 1, 2, 3, 5, 10, 20, ... steps (``eval_at="log"``,
``fastsd.schedules``) besides every 1000, for

- the gamma -> 0, infinite-width network (the "lazy_limit" cells of Fig. 1e: the BCE
  gradient flow over all L^2 ordered pairs, solver "auto" with float32 Kronecker
  products, 1024 fresh test pairs an evaluation), over a lattice of L from 2 to
  ``--L-max`` x d (``paper_lattice``, every ``--L-stride``-th point), for each d and seed;
- with ``--widths``, lazy networks (gamma = 1e-5/sqrt(d), ``fastsd.train``) of those
  widths on the same symbols (the "mlp" cells of the same seed, L and d), at the L given
  by ``--network-L`` (default: the limit's).

Every cell goes to a store per (model, d) under ``--out`` through one
``fastsd.scan.run_many`` (``--workers`` local processes; a rerun computes only what is
missing). Then, per model, L*(d, t) where the mean accuracy over seeds first reaches
``--level`` (``fastsd.figures.fig1e.lazy_scaling`` with ``at=t``) at each reading time
t, at "best" (the best over the schedule) and "protocol" (the best over the paper's
evaluations of the same runs), with the power-law and affine fits of L*(d) and their
bootstrap intervals over the seeds; with networks and the limit, each width's L*(d, t)
over the limit's on the same cells.

    python examples/lazy_time_axis.py --quick                  # d = 16, 32
    python examples/lazy_time_axis.py --ds 64 128 256 512      # docs/howto/lazy-limit.md's table
    python examples/lazy_time_axis.py --ds 64 128 --widths 4096 16384 --network-L 6 8 10 13
"""
import argparse
import json
import os
import time

from fastsd import ResultStore
from fastsd.figures.fig1e import lazy_scaling, paper_lattice
from fastsd.scan import Grid, cell_records, get_predictor, run_many

#: The reading times of the table: the log schedule's 1-3-10 points, and the two bests.
TIMES = (1, 3, 10, 30, 100, 300, 1000, 3000, 10000, 30000)


def lattice(d, L_max, stride):
    """The L of a d: the paper's lattice from 2 to L_max x d, every stride-th point."""
    return paper_lattice(2, max(4, int(L_max * d)))[::stride]


def runs(args):
    """The (grid, predictor, store) of every part: the limit, then each width, per d."""
    common = dict(seed=args.seeds, steps=args.steps, eval_every=args.eval_every, eval_at="log",
                  n_test=args.n_test)
    out = []
    for d in args.ds:
        Ls = lattice(d, args.L_max, args.L_stride)
        if not args.no_limit:
            out.append((Grid(d=d, L=Ls, dtype="float32", **common), "lazy_limit",
                        os.path.join(args.out, f"limit-d{d}.jsonl")))
        for m in args.widths:
            out.append((Grid(d=d, L=args.network_L or Ls, gamma="lazy", width=m, **common),
                        "mlp", os.path.join(args.out, f"m{m}-d{d}.jsonl")))
    return out


def table(records, times, level, n_boot):
    """{reading: lazy_scaling(...)} for each reading time the records evaluated."""
    steps = set.intersection(*(set(r["history"]["step"]) for r in records))
    return {at: lazy_scaling(records, level=level, n_boot=n_boot, at=at)
            for at in [t for t in times if t in steps] + ["best", "protocol"]}


def fmt(scaling, ds):
    """One row: L* per d, then the fits."""
    cells = " ".join(f"{scaling['L_star'][d]:>8.1f}" if d in scaling["L_star"] else
                     f"{'-':>8}" for d in ds)
    aff = scaling["affine"]
    if aff is None:
        return cells
    b, ci, sci = scaling["exponent"], scaling["exponent_ci"], aff["slope_ci"]
    text = f"  d^{b:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
    text += f"  {aff['slope']:.3f} d {aff['intercept']:+.1f}"
    return cells + text + (f" [{sci[0]:.3f}, {sci[1]:.3f}]" if sci else "")


def check(parser, args):
    """Refuse bad arguments before anything runs (argparse's message, exit 2)."""
    def positive(name, values, lo=1):
        if any(v < lo for v in values):
            parser.error(f"--{name} must be integers >= {lo}; got "
                         f"{' '.join(map(str, values))}")

    positive("ds", args.ds)
    positive("seeds", args.seeds, 0)
    if len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds must be distinct; got {' '.join(map(str, args.seeds))}")
    for name in ("steps", "eval_every", "L_stride", "workers"):
        positive(name.replace("_", "-"), [getattr(args, name)])
    positive("n-test", [args.n_test], 2)
    positive("widths", args.widths)
    positive("network-L", args.network_L or [], 2)
    positive("n-boot", [args.n_boot], 0)
    if not args.L_max > 0:
        parser.error(f"--L-max must be > 0; got {args.L_max}")
    if not 0.5 < args.level < 1:
        parser.error(f"--level must be an accuracy in (0.5, 1); got {args.level}")
    if args.no_limit and not args.widths:
        parser.error("--no-limit needs --widths (there is nothing else to run)")


def main(argv=None):
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="d = 16, 32, L up to 2 d, 300 steps")
    p.add_argument("--ds", type=int, nargs="+", default=[64, 128, 256, 512],
                   help="symbol dimensions d (default 64 128 256 512)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                   help="seeds: the symbols, test sets and networks of each (default 0 1 2)")
    p.add_argument("--steps", type=int, default=1000, help="SGD steps of time (default 1000)")
    p.add_argument("--eval-every", type=int, default=1000,
                   help="steps between the paper's evaluations (default 1000)")
    p.add_argument("--n-test", type=int, default=1024,
                   help="fresh test pairs an evaluation (default 1024)")
    p.add_argument("--L-max", type=float, default=2.5,
                   help="largest L, in units of d (default 2.5)")
    p.add_argument("--L-stride", type=int, default=2,
                   help="every k-th point of the paper's lattice of L (default 2)")
    p.add_argument("--widths", type=int, nargs="*", default=[], help="lazy networks' widths m")
    p.add_argument("--network-L", type=int, nargs="*", help="the networks' L (default: the "
                   "limit's)")
    p.add_argument("--no-limit", action="store_true", help="networks only")
    p.add_argument("--level", type=float, default=0.75,
                   help="the accuracy that defines L* (default 0.75)")
    p.add_argument("--n-boot", type=int, default=2000,
                   help="bootstrap replicates of the fits' intervals (default 2000; 0: none)")
    p.add_argument("--workers", type=int, default=2, help="local worker processes (1: this "
                   "process)")
    p.add_argument("--out", default="lazy-time",
                   help="folder of the stores, one per model and d (default lazy-time)")
    p.add_argument("--json", action="store_true", help="print the tables as JSON")
    args = p.parse_args(argv)
    check(p, args)
    if args.quick:
        args.ds, args.steps, args.L_max, args.L_stride, args.n_test = [16, 32], 300, 2.0, 3, 512
        args.seeds = args.seeds[:2]
    os.makedirs(args.out, exist_ok=True)
    parts = runs(args)
    start = time.perf_counter()
    if args.workers > 1:
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        with ProcessPoolExecutor(args.workers, mp_context=get_context("spawn")) as pool:
            run_many(parts, pool, threads=1, progress=not args.json)
    else:
        run_many(parts, "serial", progress=not args.json)
    wall = time.perf_counter() - start
    models = {}
    for grid, name, store in parts:     # this run's cells (a store may hold more seeds or L)
        key = "limit" if name == "lazy_limit" else f"m={grid.fixed['width']}"
        Ls, seeds = set(grid.axes["L"]), set(args.seeds)
        models.setdefault(key, []).extend(
            r for r in cell_records(ResultStore(store), get_predictor(name))
            if r["L"] in Ls and r["seed"] in seeds)
    result = {k: table(v, TIMES, args.level, args.n_boot) for k, v in models.items()}
    ratios = {k: {at: {d: s["L_star"][d] / result["limit"][at]["L_star"][d]
                       for d in s["L_star"] if d in result["limit"][at]["L_star"]}
                  for at, s in rows.items() if at in result["limit"]}
              for k, rows in result.items() if k != "limit" and "limit" in result}
    if args.json:
        print(json.dumps({"L_star": {k: {str(at): s for at, s in v.items()}
                                     for k, v in result.items()},
                          "ratio_to_limit": {k: {str(at): s for at, s in v.items()}
                                             for k, v in ratios.items()}}, default=str))
        return
    print(f"scans: {wall:.0f} s ({sum(len(g) for g, _, _ in parts)} cells, "
          f"{args.workers} worker(s))")
    for key, rows in result.items():
        print(f"\nL*(d, t) of the {key} at accuracy {args.level} (mean over seeds "
              f"{args.seeds}); fits L* ~ d^b and L* = a d + c, 95% bootstrap intervals")
        print(f"{'t':>9} " + " ".join(f"{'d=' + str(d):>8}" for d in args.ds) + "  fits")
        for at, s in rows.items():
            print(f"{at!s:>9} " + fmt(s, args.ds))
    for key, rows in ratios.items():
        print(f"\nL*(d, t) of the {key} over the limit's (same symbols, seeds and L; '-': "
              f"either has no crossing inside the grid)")
        print(f"{'t':>9} " + " ".join(f"{'d=' + str(d):>8}" for d in args.ds))
        for at, r in rows.items():
            print(f"{at!s:>9} " + " ".join(f"{r[d]:>8.2f}" if d in r else f"{'-':>8}"
                                           for d in args.ds))


if __name__ == "__main__":
    main()
