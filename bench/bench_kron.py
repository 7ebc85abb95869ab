#!/usr/bin/env python
"""Benchmark: the exact lazy limit at large L, solver="kron" against "dense" (issue 17).

The gamma -> 0, infinite-width network's logistic gradient flow
(``lazy_limit(method="logistic_flow")``, 25,000 SGD steps' worth of time, 25
evaluations on 1024 fresh test pairs, backend "cpu") on SameDifferent(d, L) with
all L^2 training pairs, by

* solver="dense": the P x P kernel stored (8 L^4 bytes), where it fits and
  finishes in reasonable time (``--dense-max-L``, default 128);
* solver="kron": the kernel as a short sum of Kronecker products of L x L
  factors plus its exact diagonal (``fastsd.kernels.kron``), default
  ``kernel_tol`` = 1e-10.

Each run is a fresh spawned process (one warm-up call first, so Numba's
cache is loaded), so its peak resident memory is its own; runs of one L are
side by side, and with ``--repeats`` > 1 interleaved and the best kept. Where
both solvers ran, the table gives the largest logit difference at 256 fixed
test pairs relative to the largest logit, and whether the accuracy histories
are identical.

A second table times one kernel product K c (as the flow makes them: one BLAS
thread) by "kron" and by the matrix-free "cg" solver (``pair_kernel_matvec``, P^2
kernel entries), at ``--product-L`` (default 128 and 256), and the "kron"
build (cross approximation, recompression, probes).

It also times one test evaluation (1024 fresh pairs against the L^2 training
pairs) matrix-free (``Logits``, what the flow uses below
``kron.TEST_CROSS_MIN_L``) and by cross approximation of each test pair's
block (``kron.cross_logits``, from there on), with their largest logit
difference relative to the largest logit.

``--estimate-L`` (default 1024) gives an estimate, not a run: the build, one
product and one test evaluation measured at that L, the flow's product count
taken from the largest L that ran (two power iterations, then 4 products an
exponential RK4 step, ``dynamics.logistic_flow``), so wall ~ build +
products x product + 26 x evaluation.

``--crossover`` prints instead what solver="auto"'s choice between "dense" and
"kron" rests on (``kron.AUTO_FLOW_MIN_L``, ``AUTO_REGRESSION_MIN_L``/``_D``):
both solvers' wall time, side by side in spawned processes, best of
``--repeats``, for the flow (``--steps``) and the regression at d = 8, 32, 256
and L = 32, 48, 64, 96, with the solver "auto" takes.

``--accuracy`` prints instead the products' accuracy at L = 8..64 and d = 8,
32, 256 (symbols of SameDifferent): R, the recorded bound, and the relative
Frobenius error ||K~ - K||_F / ||K||_F against the exact dense kernel, K~
formed column by column from products in float64 and with the factors, the
diagonal correction and the vectors cast to float32 (what a float32 device
product would give), beside the dense kernel's own float32 product error.

    python bench/bench_kron.py [--d 256] [--L 16 64 128 256 512] [--dense-max-L 128]
                               [--steps 25000] [--repeats 1] [--product-L 128 256]
                               [--estimate-L 1024] [--quick] [--accuracy]
                               [--backend cpu|cuda|numpy] [--crossover] [--dtypes]

``--dtypes`` prints instead float32 against float64 Kronecker products
(``lazy_limit(dtype=...)``) at ``--L`` (default 256, 512): one product's time,
the whole flow's, the recorded product error, the largest logit difference
relative to the largest logit, and whether the accuracy histories are equal.

Prints the tables and appends JSON lines to ``bench/out/bench_kron.jsonl``.
It asserts nothing about speed.
"""
import argparse
import datetime
import json
import math
import multiprocessing as mp
import os
import resource
import sys
import time
import uuid

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench_train import OUT_DIR, machine_info

N_PRED = 256


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _flow_child(q, d, L, solver, steps, seed, backend, method="logistic_flow"):
    """One lazy_limit run in this (spawned) process; puts its measurements on ``q``."""
    from fastsd import SameDifferent
    from fastsd.kernels import lazy_limit
    try:
        lazy_limit(SameDifferent(d=4, L=4, seed=0), solver=solver, steps=20, eval_every=10,
                   n_test=8, backend=backend)                   # warm-up: Numba's cache
        base = _peak_mib()
        task = SameDifferent(d=d, L=L, seed=0)
        xt, _ = task.sample_test(N_PRED, seed=99)
        t0 = time.perf_counter()
        r = lazy_limit(task, method, solver=solver, steps=steps, seed=seed, test_x=xt,
                       backend=backend)
        wall = time.perf_counter() - t0
        q.put({"wall_s": wall, "solver_info": r.solver_info, "test_accuracy": r.test_accuracy,
               "best_test_accuracy": r.best_test_accuracy,
               "history": r.history.get("test_accuracy"), "predictions": r.predictions.tolist(),
               "peak_rss_mib": _peak_mib(), "baseline_rss_mib": base})
    except Exception as exc:  # noqa: BLE001 - reported in the table
        q.put({"error": f"{type(exc).__name__}: {exc}"})


def _products_child(q, d, L, cg, kron_reps):
    """Build "kron" and time one product by it and (``cg``) by the matrix-free solver."""
    from fastsd import SameDifferent
    from fastsd.kernels.backend import KERNELS
    from fastsd.kernels.kron import KronSolver, cross_logits
    from fastsd.kernels.pairs import Logits, PairKernel, choose_pairs
    from fastsd.kernels.solvers import CGSolver, SolveSize
    try:
        _, ops = KERNELS.load("cpu")
        warm = PairKernel(ops, np.eye(4), *choose_pairs(4, "all", 0)[:2])
        KronSolver(warm) @ np.ones(16)                          # warm-up: Numba's cache
        Logits(warm, np.ones((2, 8))).logits(np.ones(16))
        task = SameDifferent(d=d, L=L, seed=0)
        u, v, _ = choose_pairs(L, "all", 0)
        kernel = PairKernel(ops, np.asarray(task.symbols, np.float64), u, v)
        size = SolveSize(P=L * L, L=L, all_pairs=True, max_bytes=8 << 30)
        c = np.random.default_rng(0).standard_normal(L * L)
        t0 = time.perf_counter()
        op = KronSolver(kernel, size)
        out = {"build_s": time.perf_counter() - t0, "record": op.record()}
        with op.threads():
            best = math.inf
            for _ in range(kron_reps):
                t0 = time.perf_counter()
                op @ c
                best = min(best, time.perf_counter() - t0)
            out["kron_product_s"] = best
            if cg:
                t0 = time.perf_counter()
                CGSolver(kernel, size) @ c
                out["cg_product_s"] = time.perf_counter() - t0
            x, _ = task.sample_test(1024, seed=1)
            t0 = time.perf_counter()
            exact = Logits(kernel, x).logits(c)
            out["evaluation_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            got, error = cross_logits(kernel, x, c)
            out["cross_evaluation_s"] = time.perf_counter() - t0
            out["cross_logit_rel_diff"] = float(np.max(np.abs(got - exact))
                                                / np.max(np.abs(exact)))
            out["cross_block_error"] = error
        out["peak_rss_mib"] = _peak_mib()
        q.put(out)
    except Exception as exc:  # noqa: BLE001
        q.put({"error": f"{type(exc).__name__}: {exc}"})


def _dtype_child(q, d, L, dtype, steps):
    """Solver "kron" with float64 or float32 products: one product (best of 5, one BLAS
    thread) and the whole flow (``lazy_limit(dtype=...)``), in this spawned process."""
    from fastsd import SameDifferent
    from fastsd.kernels import lazy_limit
    from fastsd.kernels.backend import KERNELS
    from fastsd.kernels.kron import KronSolver
    from fastsd.kernels.pairs import PairKernel, choose_pairs
    from fastsd.kernels.solvers import SolveSize
    try:
        _, ops = KERNELS.load("cpu")
        lazy_limit(SameDifferent(d=4, L=4, seed=0), solver="kron", dtype=dtype, steps=20,
                   eval_every=10, n_test=8, backend="cpu")            # warm-up
        task = SameDifferent(d=d, L=L, seed=0)
        u, v, _ = choose_pairs(L, "all", 0)
        kernel = PairKernel(ops, np.asarray(task.symbols, np.float64), u, v)
        op = KronSolver(kernel, SolveSize(P=L * L, L=L, all_pairs=True, max_bytes=8 << 30,
                                          dtype=dtype))
        c = np.random.default_rng(0).standard_normal(L * L)
        best = math.inf
        with op.threads():
            for _ in range(5):
                t0 = time.perf_counter()
                op @ c
                best = min(best, time.perf_counter() - t0)
        xt, _ = task.sample_test(N_PRED, seed=99)
        t0 = time.perf_counter()
        r = lazy_limit(task, solver="kron", dtype=dtype, steps=steps, seed=1, test_x=xt,
                       backend="cpu")
        q.put({"product_s": best, "flow_s": time.perf_counter() - t0,
               "solver_info": r.solver_info, "history": r.history["test_accuracy"],
               "predictions": r.predictions.tolist()})
    except Exception as exc:  # noqa: BLE001 - reported in the table
        q.put({"error": f"{type(exc).__name__}: {exc}"})


def dtype_table(d, Ls, steps, repeats):
    """float32 against float64 Kronecker products, side by side (issue 28 item 5)."""
    print(f"solver 'kron', d = {d}, flow of {steps} steps, one BLAS thread for the product; "
          f"best of {repeats} (interleaved, spawned processes)")
    print(f"{'L':>5} {'R':>4} {'product f64 s':>13} {'f32 s':>8} {'ratio':>6} {'flow f64 s':>10} "
          f"{'f32 s':>8} {'ratio':>6} {'product err':>11} {'logit diff':>10} {'same hist':>9}")
    rows = []
    for L in Ls:
        runs = {"float64": [], "float32": []}
        for _ in range(repeats):
            for dtype in runs:
                runs[dtype].append(_in_child(_dtype_child, d, L, dtype, steps))
        bad = [r["error"] for rs in runs.values() for r in rs if "error" in r]
        if bad:
            print(f"{L:>5} failed: {bad[0]}")
            continue
        best = {k: {"product_s": min(r["product_s"] for r in rs),
                    "flow_s": min(r["flow_s"] for r in rs), **rs[0]} for k, rs in runs.items()}
        a, b = best["float64"], best["float32"]
        fa, fb = np.array(a["predictions"]), np.array(b["predictions"])
        diff = float(np.max(np.abs(fa - fb)) / np.max(np.abs(fa)))
        same = a["history"] == b["history"]
        print(f"{L:>5} {a['solver_info']['kron_terms']:>4} {a['product_s']:13.4f} "
              f"{b['product_s']:8.4f} {a['product_s'] / b['product_s']:6.2f} {a['flow_s']:10.1f} "
              f"{b['flow_s']:8.1f} {a['flow_s'] / b['flow_s']:6.2f} "
              f"{b['solver_info']['kron_product_error']:11.1e} {diff:10.1e} {str(same):>9}")
        rows.append({"table": "dtype", "L": L, "d": d, "steps": steps, "repeats": repeats,
                     "float64": {k: v for k, v in a.items() if k != "predictions"},
                     "float32": {k: v for k, v in b.items() if k != "predictions"},
                     "logit_rel_diff": diff, "same_history": same})
    return rows


def accuracy_table(Ls=(8, 16, 32, 64), ds=(8, 32, 256)):
    """Rows of the ``--accuracy`` table: structured products against the dense kernel."""
    import copy

    from fastsd import SameDifferent
    from fastsd.kernels.backend import KERNELS
    from fastsd.kernels.kron import KronSolver
    from fastsd.kernels.pairs import PairKernel, choose_pairs

    _, ops = KERNELS.load("cpu")
    f32 = np.float32
    rows = []
    for d in ds:
        for L in Ls:
            task = SameDifferent(d=d, L=L, seed=0)
            u, v, _ = choose_pairs(L, "all", 0)
            kernel = PairKernel(ops, np.asarray(task.symbols, np.float64), u, v)
            K = kernel.matrix()
            op = KronSolver(kernel)
            f = op.factors
            low = copy.copy(f)
            low.A, low.Bh, low.dcorr = f.A.astype(f32), f.Bh.astype(f32), f.dcorr.astype(f32)
            eye = np.eye(L * L)
            K64 = np.stack([f.apply(e) for e in eye], axis=1)
            K32 = np.stack([low.apply(e.astype(f32)) for e in eye], axis=1).astype(np.float64)
            norm = np.linalg.norm(K)
            dense32 = K.astype(f32) @ eye.astype(f32)
            rows.append({"d": d, "L": L, "terms": op.record()["kron_terms"],
                         "bound": op.record()["kron_error_bound"],
                         "error_float64": float(np.linalg.norm(K64 - K) / norm),
                         "error_float32": float(np.linalg.norm(K32 - K) / norm),
                         "dense_float32": float(np.linalg.norm(dense32 - K) / norm)})
    return rows


def crossover_table(steps, repeats, backend, Ls=(32, 48, 64, 96), ds=(8, 32, 256)):
    """Rows of the ``--crossover`` table, as they are measured: dense against kron."""
    from fastsd.kernels.solvers import SolveSize, choose_solver

    for method in ("logistic_flow", "regression"):
        for d in ds:
            for L in Ls:
                best = {}
                for _ in range(repeats):
                    for solver in ("dense", "kron"):
                        res = _in_child(_flow_child, d, L, solver, steps, 1, backend, method)
                        if "error" in res:
                            raise RuntimeError(res["error"])
                        best[solver] = min(best.get(solver, math.inf), res["wall_s"])
                size = SolveSize(P=L * L, L=L, all_pairs=True, max_bytes=8 << 30, method=method,
                                 d=d)
                yield {"method": method, "d": d, "L": L, "dense_s": best["dense"],
                       "kron_s": best["kron"], "auto": choose_solver("auto", size).name}


def _in_child(target, *args):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(q, *args))
    p.start()
    out = q.get()
    p.join()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--L", type=int, nargs="+", default=[16, 64, 128, 256, 512])
    ap.add_argument("--dense-max-L", type=int, default=128)
    ap.add_argument("--steps", type=int, default=25000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--product-L", type=int, nargs="*", default=[128, 256])
    ap.add_argument("--estimate-L", type=int, nargs="*", default=[1024])
    ap.add_argument("--quick", action="store_true", help="L = 16, 64; 2500 steps; no estimate")
    ap.add_argument("--out", default=os.path.join(OUT_DIR, "bench_kron.jsonl"))
    ap.add_argument("--backend", default="cpu", choices=("cpu", "cuda", "numpy"),
                    help="backend of the flow runs (the product table is always cpu)")
    ap.add_argument("--crossover", action="store_true",
                    help="only dense against kron where solver='auto' chooses (d = 8, 32, 256; "
                         "L = 32..96; flow and regression)")
    ap.add_argument("--dtypes", action="store_true",
                    help="instead: float32 against float64 products and flows at --L "
                         "(default 256 512), side by side")
    ap.add_argument("--accuracy", action="store_true",
                    help="only the products' accuracy table (L = 8..64, d = 8, 32, 256)")
    args = ap.parse_args()
    if args.dtypes:
        Ls = args.L if args.L != ap.get_default("L") else [256, 512]
        rows = [dict(r, machine=machine_info()) for r in
                dtype_table(args.d, Ls, args.steps, args.repeats)]
        with open(args.out, "a") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
        return
    if args.crossover:
        print(f"CPU: {machine_info().get('cpu_model')}; {args.steps} flow steps, best of "
              f"{args.repeats}, backend {args.backend}")
        print(f"{'method':<14} {'d':>4} {'L':>4} {'dense s':>8} {'kron s':>8} {'dense/kron':>10} "
              f"{'auto':>6}")
        for r in crossover_table(args.steps, args.repeats, args.backend):
            print(f"{r['method']:<14} {r['d']:4d} {r['L']:4d} {r['dense_s']:8.2f} "
                  f"{r['kron_s']:8.2f} {r['dense_s'] / r['kron_s']:10.2f} {r['auto']:>6}",
                  flush=True)
        return
    if args.accuracy:
        print(f"{'d':>4} {'L':>4} {'R':>4} {'bound':>9} {'err f64':>9} {'err f32':>9} "
              f"{'dense f32':>9}")
        for r in accuracy_table():
            print(f"{r['d']:4d} {r['L']:4d} {r['terms']:4d} {r['bound']:9.2e} "
                  f"{r['error_float64']:9.2e} {r['error_float32']:9.2e} {r['dense_float32']:9.2e}")
        return
    if args.quick:
        args.L, args.steps, args.product_L, args.estimate_L = [16, 64], 2500, [64], []
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    run_id = uuid.uuid4().hex[:8]
    info = machine_info()
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    rows = []
    print(f"CPU: {info.get('cpu_model')}, {info.get('cpu_count')} cores; d = {args.d}, "
          f"logistic_flow, {args.steps} steps, backend {args.backend}")
    print(f"{'L':>5} {'P':>8} {'solver':<6} {'wall s':>9} {'R':>4} {'products':>8} "
          f"{'kernel MiB':>10} {'peak RSS MiB':>12} {'test acc':>8} {'logit diff':>10} "
          f"{'same hist':>9}")
    last_products = None
    for L in args.L:
        solvers = (["dense"] if L <= args.dense_max_L else []) + ["kron"]
        best = {}
        for _ in range(args.repeats):
            for solver in solvers:
                res = _in_child(_flow_child, args.d, L, solver, args.steps, 1, args.backend)
                if "error" in res or solver not in best or res["wall_s"] < best[solver]["wall_s"]:
                    best[solver] = res
        for solver in solvers:
            res = best[solver]
            if "error" in res:
                print(f"{L:>5} {L * L:>8} {solver:<6} failed: {res['error']}")
                continue
            si = res["solver_info"]
            diff, same = "--", "--"
            if solver == "kron" and "dense" in best and "error" not in best["dense"]:
                a, b = np.array(best["dense"]["predictions"]), np.array(res["predictions"])
                diff = f"{np.max(np.abs(a - b)) / np.max(np.abs(a)):.1e}"
                same = str(best["dense"]["history"] == res["history"])
            products = si.get("kron_products")
            if products:
                last_products = products
            print(f"{L:>5} {L * L:>8} {solver:<6} {res['wall_s']:9.1f} "
                  f"{si.get('kron_terms', '--'):>4} {products or '--':>8} "
                  f"{si['kernel_bytes'] / 2 ** 20:10.1f} {res['peak_rss_mib']:12.0f} "
                  f"{res['test_accuracy']:8.4f} {diff:>10} {same:>9}")
            rows.append({"run": run_id, "date": stamp, "table": "flow", "L": L, "d": args.d,
                         "solver": solver, "steps": args.steps, "repeats": args.repeats,
                         "backend": args.backend,
                         "logit_rel_diff_vs_dense": None if diff == "--" else float(diff),
                         "same_history_as_dense": None if same == "--" else same == "True",
                         **{k: v for k, v in res.items() if k != "predictions"},
                         "machine": info})
    if args.product_L or args.estimate_L:
        print(f"\none product K c (one BLAS thread), d = {args.d}; the kron build; one test "
              f"evaluation (1024 pairs) matrix-free and by cross approximation")
        print(f"{'L':>5} {'R':>4} {'build s':>8} {'kron s':>9} {'cg s':>9} {'cg/kron':>8} "
              f"{'eval s':>7} {'cross s':>7} {'cross diff':>10} {'peak RSS MiB':>12}")
    for L in args.product_L + args.estimate_L:
        res = _in_child(_products_child, args.d, L, L in args.product_L, 5)
        if "error" in res:
            print(f"{L:>5} failed: {res['error']}")
            continue
        cg = res.get("cg_product_s")
        print(f"{L:>5} {res['record']['kron_terms']:>4} {res['build_s']:8.1f} "
              f"{res['kron_product_s']:9.4f} {cg if cg else math.nan:9.2f} "
              f"{cg / res['kron_product_s'] if cg else math.nan:8.0f} {res['evaluation_s']:7.1f} "
              f"{res['cross_evaluation_s']:7.1f} {res['cross_logit_rel_diff']:10.1e} "
              f"{res['peak_rss_mib']:12.0f}")
        row = {"run": run_id, "date": stamp, "table": "product", "L": L, "d": args.d, **res,
               "machine": info}
        if L in args.estimate_L and last_products:
            from fastsd.kernels.kron import TEST_CROSS_MIN_L
            ev = res["cross_evaluation_s" if L >= TEST_CROSS_MIN_L else "evaluation_s"]
            est = res["build_s"] + last_products * res["kron_product_s"] + 26 * ev
            row["estimated_flow_wall_s"] = est
            print(f"      estimate at L = {L}: {est:.0f} s for the flow ({last_products} products "
                  f"as at the largest L run, 26 test evaluations)")
        rows.append(row)
    with open(args.out, "a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in rows)
    print(f"appended {len(rows)} lines to {args.out}")


if __name__ == "__main__":
    main()
