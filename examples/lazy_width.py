"""Width convergence: lazy networks of width m against the exact lazy limit.
=========================================================================

For each cell (d, L) the script trains lazy networks (gamma = 1e-5/sqrt(d), the
paper's "gamma ~ 0", ``fastsd.train``) at every width m and compares them with
the infinite-width limit on the same symbols, the same test sets and, for
``method="logistic_sgd"``, the very batches the network draws from the same
seed (``lazy_limit``), so what remains is the width (and gamma > 0). The BCE
gradient flow (``"logistic_flow"``, the batch-averaged dynamics) is the second
reference. Reported per width: the best test accuracy (best of the
evaluations on 1024 fresh pairs, App. G.1) of the network and of both limits,
and the RMS gap of the final logits on 512 fixed test pairs, relative to the
limit's RMS logit. The gap's decay is fitted as a power of m per cell and
reference (slope and its standard error; the linearised network's tangent
kernel fluctuates as m^-1/2), and gap x sqrt(m) is the width a cell needs
for a given gap.

Every run is appended to ``--out`` (JSON lines, predictions included) as it
finishes, and a rerun with the same ``--out`` computes only the runs not there
yet (``--report-only`` computes nothing). Runs go widest last, so a stopped run leaves the
narrow widths complete.

    python examples/lazy_width.py --quick                      # d = 16
    python examples/lazy_width.py --steps 4000                 # d = 64, 128, 256; long
    python examples/lazy_width.py --cells 128:128 128:256 --widths 1024 4096 --steps 6000
"""
import argparse
import json
import math
import os
import time

import numpy as np

from fastsd import SameDifferent, train
from fastsd.kernels import lazy_limit

METHODS = {"sgd": "logistic_sgd", "flow": "logistic_flow"}
TEST_PAIRS, TEST_SEED = 512, 5


def cell_spec(text):
    """'d:L' -> (d, L)."""
    try:
        d, L = (int(v) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a cell is d:L with integers d >= 1, L >= 2; got {text!r}")
    if d < 1 or L < 2:
        raise argparse.ArgumentTypeError(f"a cell is d:L with integers d >= 1, L >= 2; got {text!r}")
    return d, L


def run(key, args):
    """One network (key[3] = width) or one limit (key[3] = method name): a JSON record."""
    d, L, seed, what = key
    task = SameDifferent(d=d, L=L, seed=0)
    xt, _ = task.sample_test(TEST_PAIRS, seed=TEST_SEED)
    kw = {"steps": args.steps, "eval_every": args.eval_every, "n_test": 1024, "seed": seed}
    t0 = time.perf_counter()
    if isinstance(what, str):
        r = lazy_limit(task, METHODS[what], test_x=xt, backend="cpu", **kw)
    else:
        r = train(task, "lazy", width=what, dtype=args.dtype, **kw)
        r.predictions = r.predict(xt)
    return {"d": d, "L": L, "seed": seed, "what": what, "steps": args.steps,
            "eval_every": args.eval_every, "dtype": args.dtype if not isinstance(what, str) else
            "float64", "best_test_accuracy": float(r.best_test_accuracy),
            "test_accuracy": [float(a) for a in r.history["test_accuracy"]],
            "predictions": [float(f) for f in np.asarray(r.predictions)],
            "wall_s": time.perf_counter() - t0}


def key_of(rec):
    return rec["d"], rec["L"], rec["seed"], rec["what"]


def report(recs, args):
    """The width table and the fitted decay of the gap with m, as a dict; printed as text
    unless ``--json``."""
    say = (lambda *a, **k: None) if args.json else print
    by = {key_of(r): r for r in recs}
    rows, fits = [], []
    say(f"\n{args.steps} steps, eval every {args.eval_every}; network dtype {args.dtype}; "
          f"gaps: RMS of the final logits' difference on {TEST_PAIRS} test pairs / the limit's "
          f"RMS logit")
    say(f"{'d':>4} {'L':>5} {'m':>6} {'seed':>4} | {'net best':>8} {'sgd best':>8} "
          f"{'flow best':>9} | {'gap sgd':>7} {'gap flow':>8} | {'best-acc gap sgd':>16}")
    for d, L in args.cells:
        for seed in args.seeds:
            lim = {m: by.get((d, L, seed, m)) for m in METHODS}
            for m in args.widths:
                net = by.get((d, L, seed, m))
                if net is None or None in lim.values():
                    continue
                f = np.asarray(net["predictions"])
                row = {"d": d, "L": L, "m": m, "seed": seed, "net_best": net["best_test_accuracy"]}
                for name, rec in lim.items():
                    g = np.asarray(rec["predictions"])
                    row[f"{name}_best"] = rec["best_test_accuracy"]
                    row[f"gap_{name}"] = float(np.sqrt(np.mean((f - g) ** 2) / np.mean(g ** 2)))
                rows.append(row)
                say(f"{d:4d} {L:5d} {m:6d} {seed:4d} | {row['net_best']:8.3f} "
                      f"{row['sgd_best']:8.3f} {row['flow_best']:9.3f} | {row['gap_sgd']:7.3f} "
                      f"{row['gap_flow']:8.3f} | {row['net_best'] - row['sgd_best']:+16.3f}")
    say("\nfit: relative gap = c m^b per cell and reference (all seeds)")
    for d, L in args.cells:
        for name in METHODS:
            sel = [r for r in rows if (r["d"], r["L"]) == (d, L)]
            if len({r["m"] for r in sel}) < 2:
                continue
            x = np.log([r["m"] for r in sel])
            y = np.log([r[f"gap_{name}"] for r in sel])
            A = np.stack([x, np.ones_like(x)], axis=1)
            coef, res, *_ = np.linalg.lstsq(A, y, rcond=None)
            dof = len(x) - 2
            se = (math.sqrt(float(res[0]) / dof * np.linalg.inv(A.T @ A)[0, 0])
                  if dof > 0 and len(res) else float("nan"))
            c_half = float(np.exp(np.mean(y + 0.5 * x)))      # gap x sqrt(m), geometric mean
            fits.append({"d": d, "L": L, "reference": name, "b": float(coef[0]), "b_se": se,
                         "c": float(math.exp(coef[1])), "gap_sqrt_m": c_half})
            say(f"  d = {d:4d} L = {L:5d} vs {name:4s}: b = {coef[0]:+.3f} +- {se:.3f}, "
                  f"c = {math.exp(coef[1]):.3g}; gap x sqrt(m) = {c_half:.2f} (width for a "
                  f"gap of 0.1: {(c_half / 0.1) ** 2:,.0f})")
    return {"rows": rows, "fits": fits}


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for (d, L) in sorted({(r["d"], r["L"]) for r in rows}):
        sel = sorted((r for r in rows if (r["d"], r["L"]) == (d, L)), key=lambda r: r["m"])
        ax.loglog([r["m"] for r in sel], [r["gap_sgd"] for r in sel], "o-", label=f"d={d}, L={L}")
    m = np.array(sorted({r["m"] for r in rows}), dtype=float)
    if len(m):
        ax.loglog(m, 0.5 * (m / m[0]) ** -0.5, "k:", label=r"$\propto m^{-1/2}$")
    ax.set_xlabel("width m")
    ax.set_ylabel("relative RMS logit gap to the limit (SGD)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    print(f"plot: {path}")


def main():
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="cells 16:12 16:32, widths 256 1024 4096, 1000 steps")
    ap.add_argument("--cells", type=cell_spec, nargs="+",
                    help="cells d:L (default 64:64 64:128 128:128 128:256 256:256 256:512: "
                         "one L below and one above the limit's L* ~ 1.47 d - 6 for each d)")
    ap.add_argument("--widths", type=int, nargs="+",
                    help="widths m >= 1 (default 1024 4096 16384 65536)")
    ap.add_argument("--steps", type=int, help="SGD steps >= 1 (default 2000; quick 1000)")
    ap.add_argument("--eval-every", type=int, help="steps between evaluations (default steps/4)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0],
                    help="distinct seeds >= 0 of the networks and their limits (default 0)")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                    help="the networks' arithmetic (default float32, train's default)")
    ap.add_argument("--out", default="results/lazy_width.jsonl",
                    help="JSON-lines file of the runs, resumed when it exists")
    ap.add_argument("--report-only", action="store_true",
                    help="compute nothing: report the runs already in --out")
    ap.add_argument("--json", action="store_true",
                    help="print only the table and fits, as one JSON object")
    ap.add_argument("--plot", help="write the gap against m to this image file")
    args = ap.parse_args()
    q = args.quick
    args.cells = args.cells or ([(16, 12), (16, 32)] if q else
                                [(64, 64), (64, 128), (128, 128), (128, 256), (256, 256),
                                 (256, 512)])
    args.widths = sorted(args.widths or ([256, 1024, 4096] if q else [1024, 4096, 16384, 65536]))
    if args.steps is None:
        args.steps = 1000 if q else 2000
    if args.eval_every is None:
        args.eval_every = max(1, args.steps // 4)
    if min(args.widths) < 1:
        ap.error(f"--widths must be integers >= 1; got {' '.join(map(str, args.widths))}")
    if args.steps < 1:
        ap.error(f"--steps must be an integer >= 1; got {args.steps}")
    if not 1 <= args.eval_every <= args.steps:
        ap.error(f"--eval-every must be an integer in [1, --steps = {args.steps}]; got "
                 f"{args.eval_every}")
    if min(args.seeds) < 0 or len(set(args.seeds)) != len(args.seeds):
        ap.error(f"--seeds must be distinct integers >= 0; got {' '.join(map(str, args.seeds))}")
    if args.report_only and not os.path.exists(args.out):
        ap.error(f"--report-only reports the runs in --out, which does not exist: {args.out}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    recs = []
    if os.path.exists(args.out):
        for line in open(args.out):
            r = json.loads(line)
            if (r["steps"], r["eval_every"]) == (args.steps, args.eval_every) and (
                    isinstance(r["what"], str) or r["dtype"] == args.dtype):
                recs.append(r)
    done = {key_of(r) for r in recs}
    keys = [(d, L, s, w) for w in list(METHODS) + args.widths for d, L in args.cells
            for s in args.seeds]
    for key in keys:
        if key in done or args.report_only:
            continue
        rec = run(key, args)
        recs.append(rec)
        with open(args.out, "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        if not args.json:
            print(f"d={key[0]} L={key[1]} seed={key[2]} {key[3]}: best "
                  f"{rec['best_test_accuracy']:.3f} ({rec['wall_s']:.1f} s)", flush=True)
    out = report(recs, args)
    if args.plot:
        plot(out["rows"], args.plot)
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
