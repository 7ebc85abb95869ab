#!/usr/bin/env python
"""Benchmark: the full presets' wall time on this machine, from a timed sample of their cells.

For every full preset (``fastsd reproduce X`` without ``--quick``) whose parts
are scan grids, each part's groups are formed as the scan forms them (on the
CPU: the cells of one seed train as one lockstep ensemble) and a fixed sample
of them is timed: the largest, the median and the smallest group by the cost
model's prediction (``fastsd.mlp.costs``), each trained for fewer steps
(``--sample-seconds`` of predicted work, at least ``--min-steps``) with the
scan's own ``run_group`` on one thread, as a scan worker runs. The ratio of
measured to predicted seconds over the sample scales the prediction of the
whole part, and the groups are then laid out on this machine's cores as the
scan's executor hands them out: the extrapolated wall time.

The same cells trained one model at a time (the way the published code runs:
one model per job, each step one ``jax.jit`` call or a PyTorch eager step) by
the peers of ``bench_train.py``, on one thread each, one job per core: each
distinct shape (d or input size, m, B, noise) of the part is timed once and
multiplied by the steps of its cells. Image tasks are timed as symbol pairs of
the same input size (the peers' step costs depend on the shapes only), and
the peers leave out the evaluations.

Parts computed by a shipped time model (the lazy limit's flow cells,
``fastsd.kernels.costs``; the Bayes-optimal classifiers, ``fastsd.bayes``) are
sampled the same way but their sampled groups are run in full, those predicted
to take at most ``--untrained-max-seconds``, and have no peers (the published
code has no such part); parts with no time model are listed as not modelled.
``--run-full fig1c`` also runs that full preset (``fastsd.reproduce``, into a
new folder under ``--full-out``) and prints its measured wall time beside the
extrapolation, and its table.

Run from the repository root::

    python bench/bench_presets.py                       # every full preset, ~5-10 min
    python bench/bench_presets.py --presets fig1c,fig2  # some of them
    python bench/bench_presets.py --presets fig1c --run-full fig1c   # + the real run (~30 min)
    python bench/bench_presets.py --peers none          # fastsd only

It prints a table and appends one JSON line per preset to
``bench/out/bench_presets.jsonl``. A benchmark, not a test: it asserts nothing.
"""
import os
import sys

# One thread per process for every library, before any of them loads: a scan's workers
# each run on one core, and the peers' jobs are timed the same way.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false"
                           " intra_op_parallelism_threads=1").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
PEERS = ("torch", "jax")
#: Predictors whose cells are networks trained by SGD (timed, with peers).
TRAINED = ("mlp", "mlp_image")


def _sample(work):
    """Indices of the largest, the median and the smallest group (distinct, in that order)."""
    order = sorted(range(len(work)), key=lambda i: -work[i])
    picks = [order[0], order[len(order) // 2], order[-1]]
    return list(dict.fromkeys(picks))


def _reduced(group, steps):
    """The group's settings trained for ``steps`` steps (evaluations at most every step)."""
    return [dict(s, steps=steps, eval_every=min(s["eval_every"], steps)) for s in group]


def _shape(s, predictor):
    """(d, m, B, sigma2) of a cell as the peers train it: an image task of p inputs as pairs
    of p / 2 dimensions."""
    if predictor == "mlp":
        d = s["d"]
    else:
        from fastsd.scan.predictors import MLPImagePredictor
        d = max(1, MLPImagePredictor.make_task(s).input_dim // 2)
    return (d, s["width"], s["batch_size"], float(s.get("sigma2", 0.0)))


def _peer_step_seconds(peer, shape, L, steps):
    """Seconds per step of one peer model of ``shape`` (best of two timed runs), on one CPU.

    The calling thread is pinned to one CPU meanwhile (the peers' thread pools, created
    here, keep that CPU: XLA keeps helper threads whatever its flags); the scan's workers,
    started later, are not affected.
    """
    import bench_train
    bench_train.THREADS = 1                 # torch.set_num_threads(1) in its runner
    d, m, B, sigma2 = shape
    L = max(2, L)
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if before:
        os.sched_setaffinity(0, {min(before)})
    try:
        if peer == "torch":
            run, _ = bench_train.torch_runner(d, m, L, compiled=False, sigma2=sigma2, batch=B)
        else:
            run, _ = bench_train.jax_runner(d, m, L, sigma2=sigma2, batch=B)
        return min(run(steps)[0] / steps for _ in range(2))
    finally:
        if before:
            os.sched_setaffinity(0, before)


def time_part(label, predictor, grid, args, workers):
    """The part's sample, extrapolation and peers, as a JSON-ready dict."""
    from fastsd import thread_limit
    from fastsd.scan.predictors import get_predictor
    from fastsd.scan.parts import prepared_cells
    from fastsd.scan.scheduling import pending, schedule

    pred = get_predictor(predictor)
    cells = prepared_cells(grid, pred)
    items = schedule(pending(0, pred, cells, set(), "cpu", None), [pred], 1, "cpu", None)
    groups = [[p for _, _, p in it.group] for it in items]
    out = {"part": label, "predictor": predictor, "cells": len(cells), "groups": len(groups)}
    seconds = [pred.seconds(g, "cpu") for g in groups]
    if any(s is None for s in seconds):
        return dict(out, modelled=False)
    if predictor not in TRAINED:
        return _time_untrained(out, pred, groups, seconds, args, workers)
    sample, measured, predicted = _sample(seconds), 0.0, 0.0
    for i in sample:
        g = groups[i]
        per_step = seconds[i] / g[0]["steps"]
        steps = min(g[0]["steps"], max(args.min_steps, int(args.sample_seconds / per_step)))
        small = _reduced(g, steps)
        with thread_limit(1):
            pred.run_group(_reduced(g, min(steps, 2)), "cpu")          # load the kernels
            start = time.perf_counter()
            pred.run_group(small, "cpu")
            measured += time.perf_counter() - start
        predicted += pred.seconds(small, "cpu")
    out.update(_extrapolated(seconds, len(sample), measured, predicted, workers))
    peers = {}
    for peer in args.peers:
        steps_by_shape = {}
        for g in groups:
            for s in g:
                shape = _shape(s, predictor)
                steps_by_shape.setdefault(shape, [0, s.get("L", 2)])[0] += s["steps"]
        jobs = []
        for shape, (steps, L) in steps_by_shape.items():
            per_step = _peer_step_seconds(peer, shape, L, args.peer_steps)
            jobs.append(steps * per_step)
        # one model per job, a job per core: the total work on the cores
        peers[peer] = sum(jobs) / workers
    out["peers_wall_s"] = peers
    return out


def _time_untrained(out, pred, groups, seconds, args, workers):
    """A part computed by a shipped time model (the lazy limit, the Bayes-optimal
    classifiers): the sampled groups predicted to take at most ``--untrained-max-seconds``
    are run in full (their cells cannot be shortened as training can), no peers."""
    from fastsd import thread_limit

    timed = [i for i in _sample(seconds) if seconds[i] <= args.untrained_max_seconds]
    measured = predicted = 0.0
    for i in timed:
        with thread_limit(1):
            start = time.perf_counter()
            pred.run_group(groups[i], "cpu")
            measured += time.perf_counter() - start
        predicted += seconds[i]
    return dict(out, **_extrapolated(seconds, len(timed), measured, predicted, workers),
                peers_wall_s={})


def _extrapolated(seconds, sampled, measured, predicted, workers):
    """A modelled part's record: its groups' predicted seconds, the sample's measured over
    predicted time (1 when nothing was timed), and both laid out on the workers."""
    from fastsd.scan.scheduling import predicted_wall

    ratio = measured / predicted if sampled else 1.0
    return dict(modelled=True, sampled_groups=sampled, sample_measured_s=measured,
                sample_predicted_s=predicted, measured_over_predicted=ratio,
                group_seconds=seconds, predicted_wall_s=predicted_wall(seconds, workers),
                extrapolated_wall_s=predicted_wall([s * ratio for s in seconds], workers))


def _fmt(seconds):
    if seconds is None:
        return "-"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def main(argv=None):
    from fastsd import figures
    from fastsd.figures import get_preset

    # Every figure is a preset of scan grids since 4738ff1 (GRID_FIGURES is gone).
    full = list(getattr(figures, "GRID_FIGURES", figures.FIGURES))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--presets", default=",".join(full),
                    help=f"comma-separated figures (default: every grid preset: {','.join(full)})")
    ap.add_argument("--sample-seconds", type=float, default=2.0,
                    help="predicted seconds of each sampled group's shortened run (default 2)")
    ap.add_argument("--min-steps", type=int, default=20,
                    help="fewest steps of a sampled run (default 20)")
    ap.add_argument("--peers", default="torch,jax",
                    help="peers timed one model at a time, comma-separated: torch, jax, "
                         "torch,jax or none (default torch,jax)")
    ap.add_argument("--peer-steps", type=int, default=20,
                    help="steps of each timed peer run (default 20)")
    ap.add_argument("--untrained-max-seconds", type=float, default=60.0,
                    help="parts by a shipped time model (lazy limit, Bayes-optimal): run the "
                         "sampled groups predicted to take at most this, in full (default 60)")
    ap.add_argument("--run-full", default="", help="comma-separated presets also run in full")
    ap.add_argument("--full-out", default=os.path.join(HERE, "out", "presets-full"),
                    help="where --run-full writes, in a new folder per run (default "
                         "bench/out/presets-full/<run id>)")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "bench_presets.jsonl"))
    args = ap.parse_args(argv)
    figures = [f for f in args.presets.split(",") if f]
    for f in figures:
        if f not in full:
            ap.error(f"--presets: {f!r} is not one of the grid presets {full}")
    args.peers = [] if args.peers == "none" else [p for p in args.peers.split(",") if p]
    for p in args.peers:
        if p not in PEERS:
            ap.error(f"--peers: {p!r} is not one of {PEERS} or 'none'")
    available = []
    for p in args.peers:
        try:
            __import__(p)
            available.append(p)
        except ImportError:
            print(f"note: {p} is not importable; its column is left out")
    args.peers = available
    run_full = [f for f in args.run_full.split(",") if f]

    from fastsd.mlp import costs
    from fastsd._threads import cpu_count, cpu_model
    from fastsd.scan.scheduling import predicted_wall

    workers = cpu_count()
    run_id = uuid.uuid4().hex[:12]
    print(f"CPU: {cpu_model()}, {workers} cores (one worker per core, one thread each)")
    print(f"cost model: {costs.time_model('cpu', 'float32').describe()}")
    head = (f"{'preset':<8} {'part':<10} {'cells':>5} {'groups':>6} {'meas/pred':>9} "
            f"{'predicted':>9} {'extrapol.':>9} {'measured':>9}"
            + "".join(f" {p + ' 1-by-1':>12} {'x':>5}" for p in args.peers))
    print(head)
    print("-" * len(head))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    for fig in figures:
        spec = get_preset(fig)
        parts = [time_part(label, predictor, grid, args, workers)
                 for label, predictor, grid in spec.parts]
        measured = None
        report = None
        if fig in run_full:
            from fastsd.reproduce import reproduce
            folder = os.path.join(args.full_out, run_id)
            start = time.perf_counter()
            report = reproduce(fig, out=folder, progress=False)
            measured = time.perf_counter() - start
        modelled = [p for p in parts if p["modelled"]]
        rows = [(p["part"], p) for p in parts]
        if len(parts) > 1:
            rows.append(("total", None))
        for label, part in rows:
            if part is not None and not part["modelled"]:
                print(f"{fig:<8} {label:<10} {part['cells']:>5} {part['groups']:>6}   time not "
                      f"modelled ({part['predictor']})")
                continue
            if part is None:            # the parts' groups share the workers
                group = modelled
                cells = sum(p["cells"] for p in parts)
                groups = sum(p["groups"] for p in parts)
                pred_wall = predicted_wall([s for p in group for s in p["group_seconds"]],
                                           workers)
                extra = predicted_wall([s * p["measured_over_predicted"] for p in group
                                        for s in p["group_seconds"]], workers)
                ratio = extra / pred_wall if pred_wall else float("nan")
                peers = {q: sum(p["peers_wall_s"][q] for p in group)
                         if all(q in p["peers_wall_s"] for p in group) else None
                         for q in args.peers}
            else:
                cells, groups, pred_wall = part["cells"], part["groups"], part["predicted_wall_s"]
                extra, ratio = part["extrapolated_wall_s"], part["measured_over_predicted"]
                peers = {q: part["peers_wall_s"].get(q) for q in args.peers}
            line = (f"{fig:<8} {label:<10} {cells:>5} {groups:>6} {ratio:>9.2f} "
                    f"{_fmt(pred_wall):>9} {_fmt(extra):>9} "
                    f"{_fmt(measured if part is None or len(parts) == 1 else None):>9}")
            for q in args.peers:
                x = f"{peers[q] / extra:.1f}" if peers[q] is not None else "-"
                line += f" {_fmt(peers[q]):>12} {x:>5}"
            print(line, flush=True)
        if report is not None:
            print(f"{report['heading']}\n{report['table']}\n(results in {folder})")
        record = {"run_id": run_id, "time": datetime.datetime.now(datetime.timezone.utc)
                  .isoformat(timespec="seconds"), "preset": fig, "parts": parts,
                  "measured_wall_s": measured, "workers": workers, "cpu": cpu_model(),
                  "cost_model": costs.time_model("cpu", "float32").describe()}
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
    print("(H:MM:SS on this machine; 'x': the peer's wall time over fastsd's extrapolated one; "
          "parts of one preset share the workers, so a preset's time is about their sum)")


if __name__ == "__main__":
    main()
