"""The ``fastsd`` command: train one model, or reproduce a figure of the paper.

Exit status: 0 on success, 2 for bad usage (from argparse), 1 when fastsd
rejects a value, refuses a size that would not fit in memory or a backend
cannot run (the message, one line, names the option).
"""
import argparse
import json
import os
import re
import signal
import sys
import threading
import warnings

from . import __version__, _stop
from .exceptions import BackendUnavailableError, SizeTooLargeError, StoreLockedError
from .figures import FIGURES, REGISTRY
from .params import BACKEND, CALIBRATE, LAZY_LIMIT, MLP, WALKERS
from .scan import ScanError
from .scan.cluster import KINDS as CLUSTER_KINDS
from .scan.executors import NoWorkersError


def _add_command(sub, name, summary, description, spec, func, *, json_help, quiet_help=None,
                 names=None, extra=()):
    """A command whose options are ``spec``'s declared parameters (``names``), --backend, the
    ``extra`` (flag, argparse keywords) options, --quiet (with ``quiet_help``) and --json."""
    p = sub.add_parser(name, help=summary, description=description)
    spec.add_arguments(p, names)
    BACKEND.add_argument(p)
    for flag, kw in extra:
        p.add_argument(flag, **kw)
    if quiet_help:
        p.add_argument("--quiet", action="store_true", help=quiet_help)
    p.add_argument("--json", action="store_true", help=json_help)
    p.set_defaults(func=func)
    return p


#: The task ``fastsd train`` trains without ``--task``: the symbols of Sec. 2, as a scan's "mlp"
#: cell (``fastsd.scan.Cell``); every visual task trains as an "mlp_image" cell.
SYMBOLS = "symbols"


def train_tasks():
    """The tasks ``fastsd train --task`` can name: "symbols" and the visual tasks of
    ``fastsd.tasks.TASKS`` (those the "mlp_image" predictor trains), in registration order.

    Returns
    -------
    dict
        {name: ``fastsd.tasks.registry.TaskEntry``}, read at the call: a task registered in a
        file of ``fastsd.tasks`` (or before ``build_parser``) is among them.
    """
    from .tasks import TASKS

    return {name: e for name, e in TASKS.items() if e.visual or name == SYMBOLS}


def _image_options():
    """The parameters of ``MLP`` that the "mlp_image" predictor takes (L, gamma, the seeds and
    the training settings), in ``MLP``'s order; the others (d, sigma2) are the symbols'."""
    from .scan import get_predictor

    pred = get_predictor("mlp_image")
    return [n for n in MLP if n in set(pred.required) | set(pred.defaults)]


def _symbol_options():
    """The options of ``fastsd train`` that only the symbol task has: ``MLP``'s settings that
    "mlp_image" does not take, and --path (the image cells' path is "auto")."""
    return [n for n in MLP if n not in _image_options() and n != "root_d"] + ["path"]


def _type_name(default):
    """The type a task setting's value is parsed as, from its registered default, in words."""
    for kind, words in ((bool, "a bool (true or false)"), (int, "an integer"),   # bool: an int
                        (float, "a number"), (str, "text")):
        if isinstance(default, kind):
            return words
    return "a number or text"


def _parse_value(default, text):
    """``text`` as the type of ``default`` (``_type_name``); ValueError where it is not one."""
    if isinstance(default, bool):
        words = {"true": True, "1": True, "yes": True, "on": True,
                 "false": False, "0": False, "no": False, "off": False}
        return words[text.strip().lower()]          # KeyError: not a bool
    if isinstance(default, (int, float, str)):
        return type(default)(text)
    for kind in (int, float):                       # a default of None: the likeliest number
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _describe_settings(entry):
    """A task's own settings in words: "patch=5 (an integer), n_patches=5 (an integer)"."""
    return ", ".join(f"{k}={v} ({_type_name(v)})" for k, v in entry.settings.items()) or "none"


def task_settings(task, given):
    """Parse ``fastsd train``'s ``--task-setting KEY=VALUE`` options for ``task``.

    Parameters
    ----------
    task : str
        A name of ``train_tasks()``.
    given : sequence of str or None
        The options' values, "KEY=VALUE" each; KEY a setting of the task, VALUE parsed as
        the type of its registered default (int, float, str, or bool: true/false, 1/0,
        yes/no, on/off; a default of None: an int, else a float, else the text).

    Returns
    -------
    dict
        {setting: value} of the settings given (the task's defaults fill in the others).

    Raises
    ------
    ValueError
        For an option without "=", a KEY that is not the task's setting or given twice, a
        VALUE not of the setting's type, or any option with task "symbols" (whose settings
        are --d and --sigma2): one line naming --task-setting, the task, its settings and
        what was received.
    """
    entry = train_tasks()[task]
    out, texts = {}, {}
    for text in given or ():
        if task == SYMBOLS:
            raise ValueError(f"`--task-setting` is for the settings of a visual task; task "
                             f"{SYMBOLS!r} takes its own as --d and --sigma2; got {text!r}.")
        key, eq, value = text.partition("=")
        key = key.strip()
        if not eq or key not in entry.settings:
            raise ValueError(f"`--task-setting` must be KEY=VALUE with KEY a setting of task "
                             f"{task!r} ({_describe_settings(entry)}); got {text!r}.")
        if key in out:
            raise ValueError(f"`--task-setting` must name each setting of task {task!r} once; "
                             f"got {key!r} twice ({texts[key]!r} and {text!r}).")
        texts[key] = text
        default = entry.settings[key]
        try:
            out[key] = _parse_value(default, value)
        except (KeyError, ValueError):
            raise ValueError(f"`--task-setting {key}` of task {task!r} must be "
                             f"{_type_name(default)} (default {default!r}); got "
                             f"{value!r}.") from None
    return out


def _train_epilog(tasks):
    """``fastsd train --help``'s list of the tasks and their own settings."""
    parts = [f"{SYMBOLS} (the default: its settings are --d, required, and --sigma2)"
             if name == SYMBOLS else f"{name}: {_describe_settings(e)}"
             for name, e in tasks.items()]
    return ("Tasks (--task) and their own settings with their defaults (--task-setting "
            "KEY=VALUE): " + "; ".join(parts) + ". A visual task trains as a scan's "
            "\"mlp_image\" cell (gamma 'lazy' is 1e-5 there, the task's lazy gamma); --d, "
            "--sigma2 and --path (other than auto) are refused with it.")


def _add_train_parser(sub):
    import dataclasses

    tasks = train_tasks()
    p = _add_command(
        sub, "train", "train one MLP on a same-different task",
        "Train one centered two-layer MLP on a same-different task: by default the symbols of "
        "Sec. 2, or a visual task of Sec. 4 (--task), and report its test accuracy on unseen "
        "items.", MLP, _cmd_train, names=_image_options(),
        extra=[("--dtype", dict(default=None, help="float32 or float64 (default float32 on "
                                                   "cpu, float64 on numpy)")),
               ("--path", dict(default="auto", help="auto, dense or symbol (default auto; "
                                                    "the symbol task only)")),
               ("--task", dict(default=SYMBOLS, choices=tuple(tasks), metavar="NAME",
                               help=f"the task: {', '.join(tasks)} (default {SYMBOLS}; "
                                    f"its settings below)")),
               ("--task-setting", dict(action="append", metavar="KEY=VALUE",
                                       help="a setting of a visual task, e.g. patch=3 "
                                            "(repeatable; the others at their defaults)"))],
        quiet_help="no progress bar", json_help="print one JSON record on stdout instead of a "
                                                "summary")
    p.epilog = _train_epilog(tasks)
    own = p.add_argument_group(f"the {SYMBOLS} task's settings (refused with another task)")
    for name in _symbol_options():
        if name in MLP:         # --d: required with the symbols, checked by _cmd_train
            param = MLP[name]
            if param.required:
                param = dataclasses.replace(param, default=None, optional=True,
                                            help=f"{param.help}, required with --task {SYMBOLS}")
            param.add_argument(own)


def _add_reproduce_parser(sub):
    import textwrap

    p = sub.add_parser(
        "reproduce", help="run a figure's grid, draw it and print its table",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Run the grid of a figure of the paper through fastsd.scan, resuming from "
            "DIR/<figure>.jsonl (cells already there are skipped), then draw "
            "DIR/<figure>.png and .svg and print its table, with progress bars on stderr "
            "(--quiet: none). Several figures, or 'all' (every figure), run on one pool of "
            "workers: every figure's groups in one queue, largest first, each figure drawn "
            "once all have run.", 78),
        epilog=textwrap.fill(
            "The wall time on this machine: `fastsd reproduce FIGURE --quick --dry-run` "
            "predicts it (and the memory) without running anything. The first run also "
            "compiles fastsd's Numba kernels, once: they are cached afterwards, until fastsd "
            "changes. Measured wall times, with their machine and date, are on the "
            "documentation's results page (docs/results.md).", 78))
    p.add_argument("figure", nargs="+", choices=FIGURES + ("all",), metavar="FIGURE",
                   help="one or more of: "
                   + "; ".join(f"{name}: {figure.HELP}" for name, figure in REGISTRY.items())
                   + "; all: every figure")
    p.add_argument("--quick", action="store_true",
                   help="a reduced grid that runs in a few minutes on a laptop")
    p.add_argument("--out", default="results", metavar="DIR",
                   help="folder of the results and figures (default results/)")
    BACKEND.add_argument(p)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--serial", action="store_true",
                       help="run in this process instead of local worker processes")
    where.add_argument("--dask", metavar="ADDRESS",
                       help="run on the Dask cluster whose scheduler is at ADDRESS "
                            "(e.g. tcp://host:8786); needs the [dist] extra")
    where.add_argument("--cluster", choices=tuple(CLUSTER_KINDS), metavar="KIND",
                       help="run on --workers N Dask workers in jobs that dask-jobqueue submits "
                            "to a batch scheduler: " + ", ".join(k for k in CLUSTER_KINDS
                                                                 if k != "local")
                            + " (the jobs as described in ~/.config/dask/jobqueue.yaml: "
                              "docs/howto/cluster.md), or local (the same jobs as processes here); "
                              "needs the [cluster] extra")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--dry-run", action="store_true",
                   help="run and write nothing: print the cells, how many DIR already has, the "
                        "predicted wall time on this machine (fastsd calibrate's cost model, else "
                        "the shipped prices scaled by this machine's probe) and the memory "
                        "needed")
    p.add_argument("--workers", type=int, metavar="N",
                   help="with --dry-run: predict the wall time on N single-threaded workers "
                        "(a cluster's) instead of this machine's cores; with --cluster: the "
                        "workers to start")
    p.set_defaults(func=_cmd_reproduce)


def _add_calibrate_parser(sub):
    _add_command(
        sub, "calibrate", "measure this machine's cost model of the training paths",
        "Time the MLP's training engines on one thread at a few shapes (about 10 s), fit the "
        "cost model that path='auto' and `fastsd reproduce --dry-run` use, and store it for "
        "this machine (fastsd.mlp.calibration; in ~/.cache/fastsd/costs/, or $XDG_CACHE_HOME/fastsd/"
        "costs/). Without it, the shipped prices of the development machine are used.",
        CALIBRATE, _cmd_calibrate, quiet_help="no progress bar",
        json_help="print the fitted model as JSON")


def _add_walkers_parser(sub):
    _add_command(
        sub, "walkers", "run the Markov walker ensemble of App. C.3",
        "Simulate independent sign-update Markov processes (App. C.3), one per run, and report "
        "mu (App. C.4) per sample category as mean +- 2 sd over runs, the alignment "
        "v1.v2/(|v1||v2|) and |v1|/|v2|.", WALKERS, _cmd_walkers,
        names=[n for n in WALKERS if n != "walker_offset"],
        json_help="print one JSON record (WalkerResult.to_record) instead of a table")


def _add_ntk_parser(sub):
    _add_command(
        sub, "ntk", "test accuracy of the gamma -> 0, infinite-width network on one cell",
        "Solve the lazy limit (gamma -> 0, infinite width; App. D) of the MLP on "
        "SameDifferent(d, L) exactly, through the L x L symbol Gram matrix, and report its "
        "test accuracy on unseen symbols.", LAZY_LIMIT, _cmd_ntk,
        extra=[("--max-bytes", dict(type=int, default=None, metavar="BYTES",
                                    help="memory the dense solve may use (default: half of "
                                         "what is available)"))],
        quiet_help="no progress bar over the flow's time", json_help="print one JSON record")


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
    _add_calibrate_parser(sub)
    _add_walkers_parser(sub)
    _add_ntk_parser(sub)
    for command in sub.choices.values():       # so that a bad option shows its command's usage
        command.set_defaults(_parser=command)
    return parser


def _cmd_train(args):
    if args.task != SYMBOLS:
        return _train_visual(args)
    from .scan import Cell, train_cells
    from .theory import rich_test_accuracy

    task_settings(args.task, args.task_setting)      # refuses any
    if args.d is None:
        args._parser.error("the following arguments are required: --d")
    cell = Cell(**{n: getattr(args, n) for n in MLP if n != "root_d"})
    record, = train_cells([cell], backend=args.backend, dtype=args.dtype, path=args.path,
                          progress=not args.quiet)
    record["key"] = cell.key            # a diverged run is warned of by train_ensemble
    if args.json:
        print(json.dumps(record, sort_keys=True))
        return
    print(f"SameDifferent(d={cell.d}, L={cell.L}, sigma2={cell.sigma2:g}), gamma={cell.gamma:g}, "
          f"m={cell.width}, {cell.steps} steps, seed {cell.seed}, task seed {cell.task_seed}")
    _print_accuracies(record)
    print(f"  Eq. 3 rich theory    {float(rich_test_accuracy(cell.L)):.4f}")
    _print_run(record)


def _print_accuracies(record):
    print(f"  best test accuracy   {record['best_test_accuracy']:.4f}")
    print(f"  final test accuracy  {record['final_test_accuracy']:.4f}")
    print(f"  final train accuracy {record['history']['train_accuracy'][-1]:.4f}")


def _print_run(record):
    print(f"  {record['backend']} backend, {record['path']} path, {record['dtype']}, "
          f"{record['wall_time']:.1f} s")


def _train_visual(args):
    """``fastsd train --task NAME`` for a visual task: one "mlp_image" cell."""
    from .scan import get_predictor

    parser = args._parser
    for name in _symbol_options():              # given off their defaults
        if getattr(args, name) != parser.get_default(name):
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"`{flag}` is a setting of task {SYMBOLS!r} only; got {flag} "
                             f"{getattr(args, name)} with --task {args.task}.")
    own = task_settings(args.task, args.task_setting)
    pred = get_predictor("mlp_image")
    try:
        settings = pred.prepare({"task": args.task,
                                 **{n: getattr(args, n) for n in _image_options()}, **own})
    except (ValueError, TypeError) as exc:      # the task's check names its setting: as given
        if type(exc) in (ValueError, TypeError):
            text = str(exc)
            for key in train_tasks()[args.task].settings:
                text = text.replace(f"`{key}`", f"`--task-setting {key}`")
            raise type(exc)(text) from None
        raise
    record, = pred.run_group([settings], backend=args.backend, dtype=args.dtype,
                             progress=not args.quiet)
    record["key"] = pred.key(settings)
    if args.json:
        print(json.dumps(record, sort_keys=True))
        return
    named = ", ".join(f"{k}={settings[k]}" for k in train_tasks()[args.task].settings)
    print(f"{args.task}({named}), L={settings['L']}, gamma={settings['gamma']:g}, "
          f"m={settings['width']}, {settings['steps']} steps, seed {settings['seed']}, "
          f"task seed {settings['task_seed']}")
    _print_accuracies(record)
    _print_run(record)


def _cmd_walkers(args):
    from .walkers import CATEGORIES, simulate, summary

    r = simulate(args.L, args.batch_size, args.n_iters, args.readout, args.n_walkers,
                 seed=args.seed, backend=args.backend)
    if args.json:
        print(json.dumps(r.to_record(), sort_keys=True))
        return
    print(f"walkers: L={args.L}, batch {args.batch_size}, {args.n_iters} iterations, "
          f"{args.n_walkers} runs, readout {args.readout:+d}, seed {args.seed}; "
          "mean +- 2 sd over runs")
    for c in CATEGORIES:
        m = r.mu_summary(c)
        print(f"  mu {c:<9} {m['mean']:.4f} +- {m['two_sd']:.4f}  ({m['n_runs']} runs)")
    for name, values in (("alignment", r.alignment()), ("|v1|/|v2|", r.norm_ratio())):
        m = summary(values)
        print(f"  {name:<12} {m['mean']:+.4f} +- {m['two_sd']:.4f}  ({m['n_runs']} runs)")
    print(f"  {r.config['backend']} backend, {r.wall_time:.2f} s")


def _cmd_ntk(args):
    from .kernels import lazy_cell

    s = LAZY_LIMIT.check({n: getattr(args, n) for n in LAZY_LIMIT})
    rec = lazy_cell(max_bytes=args.max_bytes, backend=args.backend, progress=not args.quiet,
                    **s)
    if args.json:
        print(json.dumps(rec, sort_keys=True))
        return
    print(f"lazy limit of SameDifferent(d={args.d}, L={args.L}), {rec['method']}: "
          f"test accuracy {rec['test_accuracy']:.4f} +- {rec['test_accuracy_se']:.4f}, best "
          f"{rec['best_test_accuracy']:.4f}; {rec['n_train_pairs']} training pairs "
          f"({rec['pair_selection']}), {rec['solver']} solver, {rec['wall_time']:.1f} s")


def _cluster_logs(args):
    """Where a ``--cluster`` run's jobs write their output: under the run's own folder."""
    return os.path.join(args.out, "cluster-logs")


def _print_submission(args):
    """``--dry-run --cluster``: the job script and the scheduler's answer, nothing submitted;
    returns the jobs' walltime in seconds (None: no limit, or not known)."""
    from .scan.cluster import describe_submission

    try:
        got = describe_submission(args.cluster, log_directory=_cluster_logs(args))
    except ValueError as exc:       # planned anyway: a plan for a cluster made elsewhere
        print(f"fastsd: note: the jobs were not checked against the scheduler: {exc}",
              file=sys.stderr)
        return None
    if args.json:
        print(json.dumps({"cluster": args.cluster, **got}, sort_keys=True))
        return got["walltime_s"]
    answer = got["scheduler_answer"] or "(this kind has no dry-run submission to ask)"
    print(f"--cluster {args.cluster}: each job runs this script (nothing submitted):\n"
          f"{got['job_script'].rstrip()}\nthe scheduler's answer to it: {answer}\n")
    return got["walltime_s"]


def _executor(args):
    if args.serial:
        return "serial"
    if args.cluster:
        from .scan.cluster import jobqueue_client

        return jobqueue_client(args.cluster, args.workers, log_directory=_cluster_logs(args),
                               submit=False)    # by the scan, once its groups fit the walltime
    if args.dask:
        try:
            from distributed import Client
        except ImportError:
            raise ValueError("`--dask` needs Dask's distributed scheduler; fix: "
                             "pip install -e '.[dist]' in the fastsd checkout") from None
        try:
            return Client(args.dask, timeout="10s")
        except (ValueError, OSError, TimeoutError) as exc:
            raise ValueError(f"`--dask` must be the address of a running Dask scheduler, e.g. "
                             f"tcp://host:8786; got {args.dask!r} ({exc}).") from None
    return None


def _cmd_calibrate(args):
    from .mlp import calibration, prices

    model = calibration.calibrate(args.backend, args.dtype, repeats=args.repeats,
                                  seconds=args.seconds, progress=not args.quiet)
    if args.json:
        print(json.dumps(dict(model.to_json(), file=calibration.cache_path(model.backend)),
                         sort_keys=True))
        return
    print(f"{model.describe()}\nstored in {calibration.cache_path(model.backend)}")
    print(f"  {'path':<7}{'inputs':>8}{'L':>6}{'p':>6}{'m':>6}{'B':>5}{'models':>7}  "
          f"{'measured':>11}{'model':>11}")
    for pt in model.points:
        sizes = {k: pt[k] for k in ("L", "input_dim", "width", "batch_size", "models", "inputs")}
        pred = model.step_seconds(pt["path"], **sizes, entries=pt.get("entries"))
        print(f"  {pt['path']:<7}{pt['inputs']:>8}{pt['L']:>6}{pt['input_dim']:>6}"
              f"{pt['width']:>6}{pt['batch_size']:>5}{pt['models']:>7}  "
              f"{pt['seconds'] * 1e3:>8.3f} ms{pred * 1e3:>8.3f} ms")
    print("  (ms per step on one thread; p: input dimension; inputs: clean symbol pairs, "
          "noisy ones, blurred Pentomino images or PSVRT stamps)")
    for d in (64, 256, 1024):
        L = prices.crossover(model, input_dim=2 * d, width=1024, batch_size=128)
        print(f"  path='auto' at d = {d}, m = 1024, B = 128: symbol for L <= {L}, dense above")


def _print_plan(result):
    from ._memory import fmt_bytes
    from ._progress import clock

    print(f"{result['title']}\n[{result['figure']}: dry run, nothing was run or written]")
    workers = result["workers"]
    on = f" on {workers} worker{'s' * (workers != 1)}" if workers else ""
    for part in result["parts"]:
        name = part["label"] if part["label"] == part["predictor"] else \
            f"{part['label']} ({part['predictor']})"
        print(f"  {name}: {part['cells']} cells, {part['done']} "
              f"in {part['store']}; {part['remaining']} to compute in {part['groups']} "
              f"group{'s' * (part['groups'] != 1)}")
        if part["remaining"] == 0:
            continue
        if part["modelled"]:
            wall = f"{clock(part['seconds'])}{on}, " if part["seconds"] is not None else ""
            print(f"    predicted {wall}{part['work_seconds'] / 3600:.2f} core-hours of work")
        else:
            print(f"    time not modelled (predictor {part['predictor']!r})")
        if part["memory_bytes"] is not None:
            print(f"    memory: {fmt_bytes(part['memory_bytes'])} for the largest group")
    models = sorted({p["cost_model"] for p in result["parts"] if p["cost_model"]})
    for m in models:
        print(f"  {m}")
    if result["seconds"] is not None:
        total = f"predicted {clock(result['seconds'])}{on}{_at_load(result)}"
    elif result["modelled_seconds"]:
        total = (f"predicted {clock(result['modelled_seconds'])}{on} for the modelled parts; "
                 "the others not modelled")
    else:
        total = "time not predicted"
    memory = ""
    if result["peak_memory_bytes"] is not None:
        avail = result["available_bytes"]
        memory = (f"; memory {fmt_bytes(result['peak_memory_bytes'])} at most at once"
                  + (f" ({fmt_bytes(avail)} available)" if avail is not None else ""))
    print(f"  total: {result['remaining']} of {result['cells']} cells to compute, {total}{memory}")
    if result["job_lifetimes"]:
        print(f"  {_lifetimes_text(result)}")


def _lifetimes_text(result):
    """What a run on jobs that end at a walltime needs of them (``job_lifetimes``)."""
    from ._progress import clock

    n = result["job_lifetimes"]
    return (f"the jobs' walltime {clock(result['walltime_s'])}: the busiest worker runs through "
            f"{n} job lifetime{'s' * (n != 1)}"
            + (f" (its job replaced at its walltime {'once' if n == 2 else f'{n - 1} times'}; "
               f"each group fits in one)" if n > 1 else " (no job reaches it)"))


def _at_load(result):
    """", <time> at this moment's load (...)" where other processes keep cores busy enough to
    slow the run (by 5% or more), else ""."""
    from ._progress import clock

    quiet, now = result.get("predicted_wall_s"), result.get("predicted_wall_now_s")
    if quiet is None or now is None or now < 1.05 * quiet:
        return ""
    return (f" on a quiet machine, {clock(now)} at this moment's load ({result['busy_cores']:.1f} "
            f"cores busy with other work)")


def _print_total(whole, as_json):
    """The whole run of several figures on one pool: its predicted wall time."""
    from ._progress import clock

    results = whole["figures"]
    if as_json:
        print(json.dumps(dict(whole, figures=[r["figure"] for r in results]), sort_keys=True))
        return
    workers = whole["workers"]
    on = f" on {workers} worker{'s' * (workers != 1)}" if workers else ""
    missing = [r["figure"] for r in results if r["predicted_wall_s"] is None]
    if whole["modelled_wall_s"] is None:
        print(f"{len(results)} figures: wall time not predicted (workers unknown)")
        return
    print(f"{len(results)} figures on one pool: predicted {clock(whole['modelled_wall_s'])}{on}"
          + _at_load(whole)
          + (f" for the modelled ones ({', '.join(missing)} not modelled)" if missing else "")
          + f"; one after another it would be {clock(whole['one_after_another_s'])}")
    if whole["job_lifetimes"]:
        print(_lifetimes_text(whole))


def _cmd_reproduce(args):
    from .reproduce import plan, plan_all, reproduce_all

    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise ValueError(f"`--out` must be a folder; got {args.out!r}, which is a file.")
    if "all" in args.figure and len(args.figure) > 1:
        args._parser.error(f"'all' is every figure: give it alone; got "
                           f"{' '.join(args.figure)}")
    if len(set(args.figure)) < len(args.figure):
        args._parser.error(f"name each figure once; got {' '.join(args.figure)}")
    figures = list(FIGURES) if args.figure == ["all"] else args.figure
    if args.workers is not None and not (args.dry_run or args.cluster):     # usage: exit 2
        args._parser.error(f"--workers plans a run on N workers (with --dry-run) or starts them "
                           f"(with --cluster): give it with either; got --workers "
                           f"{args.workers} without them")
    if args.cluster and args.workers is None:
        args._parser.error(f"--cluster {args.cluster} needs --workers N, the worker processes "
                           f"to start")
    if args.workers is not None and args.workers < 1:
        args._parser.error(f"--workers must be an integer >= 1; got {args.workers}")
    if args.workers is not None and args.serial:
        args._parser.error(f"--workers N plans N workers and --serial one process: give one "
                           f"of them; got --workers {args.workers} --serial")
    if args.dry_run:                # on a cluster: planned for --workers, no job submitted
        walltime = _print_submission(args) if args.cluster else None
        executor = None if args.cluster else _executor(args)
        try:
            if len(figures) == 1:
                results = [plan(figures[0], quick=args.quick, out=args.out,
                                backend=args.backend, executor=executor, workers=args.workers,
                                walltime=walltime)]
            else:
                whole = plan_all(figures, quick=args.quick, out=args.out, backend=args.backend,
                                 executor=executor, workers=args.workers, walltime=walltime)
                results = whole["figures"]
            for result in results:
                if args.json:
                    print(json.dumps(result, sort_keys=True))
                else:
                    _print_plan(result)
            if len(results) > 1:
                _print_total(whole, args.json)
        finally:
            if executor not in (None, "serial"):
                executor.close()
        return
    executor = _executor(args)              # before `reproduce` makes --out: a refusal
    try:                                    # leaves no folder behind
        try:
            results = reproduce_all(figures, quick=args.quick, out=args.out,
                                    backend=args.backend, progress=not args.quiet,
                                    executor=executor)
        except ScanError as exc:            # the figures that finished are drawn: shown first
            _print_results(exc.results, args.json)
            raise
        _print_results(results, args.json)
    finally:
        if executor not in (None, "serial"):
            executor.close()


def _print_results(results, as_json):
    for result in results:
        if as_json:
            print(json.dumps(result, sort_keys=True))
            continue
        print(f"{result['title']}\n{result['heading']}\n{result['table']}")
        print(f"records: {', '.join(result['results'])}\n"
              f"figures: {', '.join(result['figures'])}\n")


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"fastsd: warning: {message}", file=sys.stderr)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C so that worker processes are stopped and results kept."""


def _on_signal(signum, frame):
    """SIGINT and SIGTERM: stop every scan thread first (no cell is written after), then raise."""
    _stop.request()
    raise _Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


#: The signals that stop a command: Ctrl-C, and `kill`'s default.
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


#: Options that size what a command allocates, for its out-of-memory advice.
_SIZE_OPTIONS = ("--d", "--L", "--width", "--batch-size", "--n-test", "--n-walkers", "--n-iters",
                 "--pairs")


def _option_spelling(message, parser):
    """``message`` with the parameters the command has as options spelled as options.

    `name` becomes `--the-name`, and the Python spellings of a setting in
    advice, name='value' and name=<placeholder>, become --the-name value and
    --the-name <placeholder>.
    """
    for action in parser._actions:
        long = [o for o in action.option_strings if o.startswith("--")]
        if long:
            message = message.replace(f"`{action.dest}`", f"`{long[0]}`")
            message = re.sub(rf"(?<![\w.-]){re.escape(action.dest)}=(?:'([^']*)'|(<[^>]*>))",
                             lambda m: f"{long[0]} {m.group(m.lastindex)}", message)
    return message


def main(argv=None):
    """Run the ``fastsd`` command; return its exit status.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success, 1 when fastsd rejects a value, refuses a size that
        would not fit in memory (``SizeTooLargeError``: its message, naming
        the option and the bytes), cannot run the backend or loses every Dask
        worker for ``FASTSD_NO_WORKERS_TIMEOUT`` (finished cells kept), and for a real
        out-of-memory (advice naming the command's size options), 130 on
        Ctrl-C and 143 on SIGTERM (worker processes are stopped, finished
        cells kept). Bad usage exits with 2 through argparse.
    """
    args, unknown = build_parser().parse_known_args(argv)
    if unknown:
        args._parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    handle = threading.current_thread() is threading.main_thread()   # signals need it
    previous = {sig: signal.signal(sig, _on_signal) for sig in _SIGNALS
                if handle and signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            args.func(args)
            sys.stdout.flush()              # a closed pipe shows here, not at exit
    except BrokenPipeError:                 # `fastsd ... | head`: the reader has all it wants
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (ValueError, TypeError, BackendUnavailableError, StoreLockedError, OSError,
            ScanError, NoWorkersError, SizeTooLargeError) as exc:  # a size refused too
        print(f"fastsd: error: {_option_spelling(str(exc), args._parser)}", file=sys.stderr)
        return 1
    except MemoryError:                     # a real out-of-memory
        sizes = [o for o in _SIZE_OPTIONS if o in args._parser._option_string_actions]
        advice = f"; use smaller {', '.join(sizes[:-1])} or {sizes[-1]}" if sizes else ""
        print(f"fastsd: error: out of memory{advice}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        note = (" (finished cells are saved; rerun to resume)"
                if args.func is _cmd_reproduce else "")
        print(f"fastsd: {'terminated' if isinstance(exc, _Terminated) else 'interrupted'}"
              f"{note}", file=sys.stderr)
        return 143 if isinstance(exc, _Terminated) else 130
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
