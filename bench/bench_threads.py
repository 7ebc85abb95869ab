#!/usr/bin/env python
"""Benchmark: fastsd's default threading against explicit thread counts, idle and under load.

For each background load (0, 1, 2 CPU-bound processes started here: Python busy
loops, one core each) and each case (an entry point that computes), the case runs
in fresh child processes under three settings that take turns:

* ``default``: no thread variable set (what a user gets);
* ``1`` and ``2`` (``--threads``): ``NUMBA_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``,
  ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` set to that count, as a user
  pins them.

A child compiles (or loads) its kernels in a first short run (a tenth of the
steps, or a small call), then times the case ``--repeats`` times, in seconds per
unit (an SGD step, or a whole call). The settings' children take turns, in a
rotating order, ``--rounds`` times, and the fastest run of each setting is kept.
The table gives each setting's time, the default over the best explicit setting
(target: at most 1.3), and the process CPU time of the default over its wall
time (spinning threads show as CPU).

``--against DIR`` times another checkout of fastsd (``git worktree add
/tmp/before <rev>``) in the same run, its children taking turns with this
checkout's, and adds its default's time and the default's speed-up.

Run from the repository root::

    python bench/bench_threads.py                         # every case, ~40 min on 2 cores
    python bench/bench_threads.py --cases dense-d64,walkers --loads 0,1
    python bench/bench_threads.py --against /tmp/before   # before and after, in one run

It prints the table and appends one JSON line per (case, load) to
``bench/out/bench_threads.jsonl``. A benchmark, not a test: it asserts nothing.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                    "MKL_NUM_THREADS")

_TRAIN = """
import fastsd
task = {task}
UNIT, SCALE = "step", {steps}
def run(n):
    fastsd.{call}(task, {gammas}, width={width}, steps=n, eval_every=n, n_test=256{extra})
    return n
"""


def _train(task, steps, *, path=None, width=1024, ensemble=None):
    """A training case's child source: ``train`` (or ``train_ensemble`` of the gammas
    ``ensemble``, seed 1) of ``task`` for ``steps`` steps a timed run."""
    gammas = "1.0, seed=1" if ensemble is None else f"{ensemble!r}, 1"
    return _TRAIN.format(task=task, steps=steps, width=width, gammas=gammas,
                         call="train" if ensemble is None else "train_ensemble",
                         extra="" if path is None else f", path={path!r}")


#: name -> (description, Python source run in the child: defines ``run(scale)``, which
#: does the work and returns its number of units, ``UNIT`` and ``SCALE``).
CASES = {
    "dense-d64": ("train, dense path, d = 64, L = 8, m = 1024",
                  _train("fastsd.SameDifferent(d=64, L=8, seed=0)", 300, path="dense")),
    "dense-d256": ("train, dense path, d = 256, L = 16, m = 1024",
                   _train("fastsd.SameDifferent(d=256, L=16, seed=0)", 150, path="dense")),
    "symbol-d256": ("train, symbol path, d = 256, L = 16, m = 1024",
                    _train("fastsd.SameDifferent(d=256, L=16, seed=0)", 2000, path="symbol")),
    "symbol-d64": ("train, symbol path, d = 64, L = 64, m = 1024",
                   _train("fastsd.SameDifferent(d=64, L=64, seed=0)", 1000, path="symbol")),
    "ensemble6": ("train_ensemble, 6 gammas of one seed, dense, d = 256, L = 16, m = 1024",
                  _train("fastsd.SameDifferent(d=256, L=16, seed=0)", 40, path="dense",
                         ensemble=[1e-3, 1e-2, 0.1, 0.3, 1.0, 3.0])),
    "noisy-d64": ("train, noisy task (sigma2 = 0.5), dense, d = 64, L = 8, m = 1024",
                  _train("fastsd.SameDifferent(d=64, L=8, sigma2=0.5, seed=0)", 200)),
    "psvrt": ("train, PSVRT 5 x 5 patches on a 5 x 5 grid, m = 512",
              _train("fastsd.tasks.PSVRT(patch=5, n_patches=5, n_train_patterns=16, seed=0)",
                     200, width=512)),
    "lazy-L256": ("lazy_limit, logistic flow, d = 256, L = 256 (kron), 5000 steps", """
import fastsd
UNIT, SCALE = "call", 1
def run(n):
    L = 256 if n else 48
    fastsd.kernels.lazy_limit(fastsd.SameDifferent(d=256, L=L, seed=0), seed=1, steps=5000)
    return 1
"""),
    "walkers": ("walkers.simulate, L = 16, batch 512, 100 iterations, 2000 walkers", """
import fastsd
UNIT, SCALE = "call", 1
def run(n):
    fastsd.walkers.simulate(16, 512, 100, readout=-1, n_walkers=2000 if n else 10, seed=1,
                            backend="cpu")
    return 1
"""),
    "fig1c-quick": ("fastsd reproduce fig1c --quick (a fresh results folder)", """
import tempfile, fastsd.reproduce
UNIT, SCALE = "call", 1
def run(n):
    if n:                   # no warm-up: the workers load the kernels, as a user's run does
        with tempfile.TemporaryDirectory() as out:
            fastsd.reproduce.reproduce("fig1c", quick=True, out=out, progress=False)
    return 1
"""),
}

_CHILD = r"""
import json, os, resource, sys, time
exec(sys.argv[1])
run(SCALE // 10)                 # compile or load the kernels, warm the caches
best = cpu = None
for _ in range(int(sys.argv[2])):
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    units = run(SCALE)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    used = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if best is None or wall / units < best:
        best, cpu = wall / units, used / wall
print(json.dumps({"seconds": best, "cpu_per_wall": cpu, "unit": UNIT}))
"""


def child_env(source, setting):
    env = dict(os.environ)
    for name in THREAD_VARIABLES:
        env.pop(name, None)
    if setting != "default":
        env.update({name: setting for name in THREAD_VARIABLES})
    env["PYTHONPATH"] = source + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                  else "")
    return env


def measure(source, case, setting, repeats):
    """Seconds per unit of ``case`` in a child importing fastsd from ``source``."""
    out = subprocess.run([sys.executable, "-c", _CHILD, CASES[case][1], str(repeats)],
                         env=child_env(source, setting), capture_output=True, text=True,
                         cwd=tempfile.gettempdir())
    if out.returncode:
        raise RuntimeError(f"{case} ({setting}, {source}) failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


class Load:
    """``n`` CPU-bound background processes (busy loops) while the block runs."""

    def __init__(self, n):
        self.n, self.procs = n, []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                      for _ in range(self.n)]
        time.sleep(0.5 if self.n else 0)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def positive(kind, least=0):
    def parse(text):
        try:
            values = [kind(x) for x in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated {kind.__name__}s; "
                                             f"got {text!r}") from None
        if not values or min(values) < least:
            raise argparse.ArgumentTypeError(f"expected values >= {least}; got {text!r}")
        return values
    return parse


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES),
                    help=f"comma-separated cases (default: all of {', '.join(CASES)})")
    ap.add_argument("--loads", type=positive(int), default=[0, 1, 2],
                    help="background CPU-bound processes, comma-separated (default 0,1,2)")
    ap.add_argument("--threads", type=positive(int, least=1), default=[1, 2],
                    help="explicit thread counts to compare with (default 1,2)")
    ap.add_argument("--repeats", type=int, default=2,
                    help="timed runs per child (default 2)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="children per setting, taking turns with the others (default 2)")
    ap.add_argument("--against", metavar="DIR",
                    help="another fastsd checkout, timed (default setting) in the same run")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "bench_threads.jsonl"),
                    help="JSON lines appended here (default bench/out/bench_threads.jsonl)")
    args = ap.parse_args(argv)
    cases = args.cases.split(",")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"--cases: unknown {', '.join(unknown)}; choose from {', '.join(CASES)}")
    for name in ("repeats", "rounds"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be >= 1; got {getattr(args, name)}")
    if args.against and not os.path.isfile(os.path.join(args.against, "fastsd", "__init__.py")):
        ap.error(f"--against must be a checkout of fastsd (a folder holding fastsd/__init__.py);"
                 f" got {args.against!r}")
    if not args.out:
        ap.error("--out must name a file")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    settings = ["default"] + [str(t) for t in args.threads]
    run_id = uuid.uuid4().hex[:8]
    machine = {"cpu": cpu_model(), "cores": os.cpu_count(), "python": sys.version.split()[0],
               "date": datetime.date.today().isoformat()}
    print(f"CPU: {machine['cpu']}, {machine['cores']} cores; best of {args.rounds} x "
          f"{args.repeats} runs; background: Python busy loops")
    head = (f"{'case':12} {'load':>4} " + " ".join(f"{s:>9}" for s in settings)
            + f" {'unit':>5} {'dflt/best':>9} {'cpu/wall':>8}")
    if args.against:
        head += f" {'before':>9} {'speed-up':>8}"
    print(head)
    worst = 0.0
    for case in cases:
        for load in args.loads:
            with Load(load):
                times, cpu = {}, {}
                runs = [(ROOT, s) for s in settings]
                if args.against:
                    runs.append((args.against, "before"))
                for r in range(args.rounds):
                    for source, s in runs[r % len(runs):] + runs[:r % len(runs)]:
                        got = measure(source, case, "default" if s == "before" else s,
                                      args.repeats)
                        unit = got["unit"]
                        if got["seconds"] < times.get(s, float("inf")):
                            times[s], cpu[s] = got["seconds"], got["cpu_per_wall"]
            before = times.pop("before", None)
            cpu = cpu["default"]
            explicit = min(times[s] for s in settings[1:])
            ratio = times["default"] / explicit
            worst = max(worst, ratio)
            scale = 1e3 if unit == "step" else 1.0
            line = (f"{case:12} {load:>4} " + " ".join(f"{times[s] * scale:9.3f}" for s in settings)
                    + f" {'ms' if unit == 'step' else 's':>5} {ratio:9.2f} {cpu:8.2f}")
            if before is not None:
                line += f" {before * scale:9.3f} {before / times['default']:8.2f}"
            print(line, flush=True)
            with open(args.out, "a") as f:
                f.write(json.dumps({"run_id": run_id, "case": case, "load": load,
                                    "seconds": times, "unit": unit, "default_over_best": ratio,
                                    "default_cpu_per_wall": cpu, "before": before,
                                    "against": args.against, "repeats": args.repeats,
                                    "rounds": args.rounds,
                                    "machine": machine}) + "\n")
    print(f"worst default / best explicit: {worst:.2f} (target <= 1.3)")


if __name__ == "__main__":
    main()
