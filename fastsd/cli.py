"""The ``fastsd`` command: train one model, or reproduce a figure of the paper.

Exit status: 0 on success, 2 for bad usage (from argparse), 1 when fastsd
rejects a value or a backend cannot run (the message names the parameter).
"""
import argparse
import json
import os
import sys
import warnings

from . import __version__
from .exceptions import BackendUnavailableError
from .presets import FIGURES



def _add_train_parser(sub):
    p = sub.add_parser(
        "train", help="train one MLP on the same-different task",
        description="Train one centered two-layer ReLU MLP on the same-different task "
                    "(Sec. 2) and report its test accuracy on unseen symbols.")
    req = p.add_argument_group("required")
    req.add_argument("--d", type=int, required=True, help="symbol dimension d")
    req.add_argument("--L", type=int, required=True, help="number of training symbols L (>= 2)")
    req.add_argument("--gamma", type=float, required=True,
                     help="richness gamma > 0; the paper's lazy model is 1e-5/sqrt(d)")
    req.add_argument("--width", type=int, required=True, help="hidden units m")
    req.add_argument("--steps", type=int, required=True, help="SGD steps")
    p.add_argument("--sigma2", type=float, default=0.0, help="input noise variance (default 0)")
    p.add_argument("--seed", type=int, default=0, help="model seed (default 0)")
    p.add_argument("--task-seed", type=int, default=None,
                   help="seed of the training symbols (default: derived from seed, L, d)")
    p.add_argument("--batch-size", type=int, default=128, help="SGD batch size (default 128)")
    p.add_argument("--alpha0", type=float, default=None,
                   help="base learning rate (default: the task's, 0.1)")
    p.add_argument("--eval-every", type=int, default=1000,
                   help="steps between test evaluations (default 1000)")
    p.add_argument("--n-test", type=int, default=1024,
                   help="fresh test pairs per evaluation (default 1024)")
    p.add_argument("--backend", default="auto", help="auto, numpy, cpu or cuda (default auto)")
    p.add_argument("--dtype", default=None,
                   help="float32 or float64 (default float32 on cpu, float64 on numpy)")
    p.add_argument("--path", default="auto", help="auto, dense or symbol (default auto)")
    p.add_argument("--init", default="normal",
                   help="normal (the paper) or truncated (the published code) (default normal)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON record on stdout instead of a summary")
    p.set_defaults(func=_cmd_train)


def _add_reproduce_parser(sub):
    p = sub.add_parser(
        "reproduce", help="run a figure's grid, draw it and print its table",
        description="Run the grid of a figure of the paper, resuming from DIR/<figure>.jsonl "
                    "(cells already there are skipped), then draw DIR/<figure>.png and .svg "
                    "and print the mean best test accuracy per row and gamma.")
    p.add_argument("figure", choices=FIGURES,
                   help="fig1c: accuracy vs L (d=256); fig1f: accuracy vs d (L=16); "
                        "figC3: ultra-rich gamma up to 100, accuracy vs L (d=256); "
                        "figC1: max-margin matrix and alignments (d=32); "
                        "figF1: activation change vs gamma, with and without 1/sqrt(d)")
    p.add_argument("--quick", action="store_true",
                   help="a reduced grid that runs in a few minutes on a laptop")
    p.add_argument("--out", default="results", metavar="DIR",
                   help="folder of the results and figures (default results/)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.set_defaults(func=_cmd_reproduce)


def build_parser():
    """Return the argparse parser of the ``fastsd`` command."""
    parser = argparse.ArgumentParser(
        prog="fastsd",
        description="Fast simulator for 'Learning richness modulates equality reasoning in "
                    "neural networks'.")
    parser.add_argument("--version", action="version", version=f"fastsd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_train_parser(sub)
    _add_reproduce_parser(sub)
    return parser


def _cmd_train(args):
    from .presets import Cell
    from .scan import train_cells
    from .theory import rich_test_accuracy

    cell = Cell(d=args.d, L=args.L, gamma=args.gamma, seed=args.seed, width=args.width,
                steps=args.steps, sigma2=args.sigma2, batch_size=args.batch_size,
                eval_every=args.eval_every, n_test=args.n_test, alpha0=args.alpha0,
                init=args.init, task_seed=args.task_seed)
    record, = train_cells([cell], backend=args.backend, dtype=args.dtype, path=args.path)
    if record["diverged"]:
        warnings.warn("training diverged: the loss became NaN or inf (lower alpha0 or gamma)",
                      RuntimeWarning, stacklevel=2)
    if args.json:
        print(json.dumps(record, sort_keys=True))
        return
    print(f"SameDifferent(d={cell.d}, L={cell.L}, sigma2={cell.sigma2:g}), gamma={cell.gamma:g}, "
          f"m={cell.width}, {cell.steps} steps, seed {cell.seed}, task seed {cell.task_seed}")
    print(f"  best test accuracy   {record['best_test_accuracy']:.4f}")
    print(f"  final test accuracy  {record['final_test_accuracy']:.4f}")
    print(f"  final train accuracy {record['history']['train_accuracy'][-1]:.4f}")
    print(f"  Eq. 3 rich theory    {float(rich_test_accuracy(cell.L)):.4f}")
    print(f"  {record['backend']} backend, {record['path']} path, {record['dtype']}, "
          f"{record['wall_time']:.1f} s")


def _reproduce_max_margin(args):
    from .plots import plot_max_margin
    from .presets import MAX_MARGIN
    from .tasks import SameDifferent
    from .theory import max_margin, max_margin_ideal

    name = "figC1-quick" if args.quick else "figC1"
    cfg = MAX_MARGIN[name]
    rows = []
    for L in cfg["Ls"]:
        task = SameDifferent(cfg["d"], L, seed=L)
        for P in cfg["Ps"]:
            r = max_margin(task, P, seed=P)
            rows.append({"d": cfg["d"], "L": L, "P": P,
                         "top_alignment": r["top"]["alignment"],
                         "bottom_alignment": r["bottom"]["alignment"],
                         "relative_distance": r["relative_distance"]})
    prefix = os.path.join(args.out, name)
    title = f"Fig. C1: max-margin matrix, d = {cfg['d']}, L = {L}, P = {P}"
    figures = plot_max_margin(r["matrix"], max_margin_ideal(cfg["d"]), prefix, title=title)
    with open(prefix + ".json", "w", encoding="utf-8") as fh:
        json.dump(rows, fh, indent=1)
    if args.json:
        print(json.dumps({"figure": name, "rows": rows, "figures": figures}, sort_keys=True))
        return
    print("Fig. C1: alignment v1.v2/(|v1||v2|) of the top and bottom eigenvectors of the "
          "max-margin matrix, and its relative Frobenius distance to the limit")
    print(f"{'d':>4} {'L':>6} {'P':>7} {'top':>8} {'bottom':>8} {'distance':>9}")
    for w in rows:
        print(f"{w['d']:>4} {w['L']:>6} {w['P']:>7} {w['top_alignment']:>+8.4f} "
              f"{w['bottom_alignment']:>+8.4f} {w['relative_distance']:>9.4f}")
    print(f"results: {prefix}.json\nfigures: {', '.join(figures)}")


def _cmd_reproduce(args):
    if args.figure == "figC1":
        os.makedirs(args.out, exist_ok=True)
        return _reproduce_max_margin(args)
    from .plots import plot_accuracy_vs_d, plot_accuracy_vs_L, plot_activation_change
    from .presets import get_preset
    from .scan import (format_activation_table, format_table, run_cells, summarize,
                       summarize_activation)
    from .store import ResultStore

    preset = get_preset(args.figure, quick=args.quick)
    os.makedirs(args.out, exist_ok=True)    # fail on a bad --out before any training
    prefix = os.path.join(args.out, preset.name)
    store = ResultStore(prefix + ".jsonl")
    run_cells(preset.cells, store, progress=not args.quiet)
    keys = {c.key for c in preset.cells}
    by_key = {}
    for r in store.load():                  # first record of each of the preset's cells
        if r.get("key") in keys:
            by_key.setdefault(r["key"], r)
    records = list(by_key.values())
    if preset.axis == "gamma":
        figures = plot_activation_change(records, prefix, title=preset.title)
        summary = summarize_activation(records)
        heading = "mean activation change |w(T).x - w(0).x| / |w(0).x| over seeds (App. F)"
        table = format_activation_table(summary)
    else:
        plot = plot_accuracy_vs_L if preset.axis == "L" else plot_accuracy_vs_d
        figures = plot(records, prefix, title=preset.title)
        summary = summarize(records, preset.axis)
        heading = "mean best test accuracy over seeds; Eq.3 = rich-regime theory"
        table = format_table(summary)
    if args.json:
        summary.update(figure=preset.name, results=store.path, figures=figures)
        print(json.dumps(summary, sort_keys=True))
        return
    print(f"{preset.title}\n{heading}")
    print(table)
    print(f"records: {store.path}\nfigures: {', '.join(figures)}")


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"fastsd: warning: {message}", file=sys.stderr)


def main(argv=None):
    """Run the ``fastsd`` command; return its exit status.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success, 1 when fastsd rejects a value or cannot run the
        backend, 130 on Ctrl-C. Bad usage exits with 2 through argparse.
    """
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            args.func(args)
    except (ValueError, TypeError, BackendUnavailableError, OSError) as exc:
        print(f"fastsd: error: {exc}", file=sys.stderr)
        return 1
    except MemoryError:
        print("fastsd: error: out of memory; use smaller d, L, width, batch_size or n_test",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        note = (" (finished cells are saved; rerun to resume)"
                if args.func is _cmd_reproduce else "")
        print(f"fastsd: interrupted{note}", file=sys.stderr)
        return 130
    return 0
