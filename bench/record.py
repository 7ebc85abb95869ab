#!/usr/bin/env python
"""Run a benchmark or figure command and publish its result as ``bench/results/NAME.json``.

Usage, from anywhere in the checkout::

    python bench/record.py NAME [--title "..."] -- CMD ARGS...
    python bench/record.py fig1c-quick -- fastsd reproduce fig1c --quick --out /tmp/fig1c
    python bench/record.py first-run-compile -- \\
        'NUMBA_CACHE_DIR=$(mktemp -d) fastsd reproduce fig1c --quick --out $(mktemp -d)'

``CMD`` runs in the repository root (the folder above ``bench/``) with its
output streamed to the terminal as it comes (``PYTHONUNBUFFERED=1`` is set so
that Python children do not hold it back). Several arguments run as they are,
without a shell; a single argument with shell syntax in it (``$``, ``|``,
``;``, ``=``, ...) runs under ``bash -c``. Just before it, the machine is
described: CPU model and count, float32 and float64 GEMM speed (NumPy's
``matmul`` of two 2048 x 2048 matrices, best of 5, default threads, in a
child process), NumPy's BLAS (``threadpoolctl``), Python, NumPy and Numba
versions, the threading environment variables that are set, and the load
average.

If ``CMD`` succeeds, ``bench/results/NAME.json`` is written (replacing an
older one) with the keys ``name``, ``title``, ``command`` (as typed, relative
to the repository root), ``date`` (UTC start, ISO 8601), ``wall_s``,
``exit_code``, ``commit`` (``git rev-parse HEAD``), ``dirty`` (tracked files
differ from it) and ``dirty_paths`` (which), ``machine``, ``load_before``
and ``output``: stdout and stderr together, without ANSI codes or progress
bars (of a line rewritten by carriage returns only its last state is kept,
and lines that are progress bars are dropped). If it fails, nothing is
written and this exits with its exit code.

Records in ``bench/results/`` are tracked in git and feed the documentation's
results page; ``bench/out/`` (the scripts' own JSON lines) is not.
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import re
import shlex
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
#: Environment variables that set thread counts or the BLAS kernel, recorded where set.
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS",
               "OPENBLAS_CORETYPE")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
#: A progress bar's line: tqdm's "45%|####  |" or, without a total, "123it [00:01, ...]".
_BAR = re.compile(r"\d+%\||\d+it \[\d")
_SHELL = set("$|;&<>()`*?[]{}~=!#\"'\\\n")

#: Run in a child process, so that this one holds no BLAS threads while CMD runs.
_PROBE = r"""
import importlib.metadata, json, time
import numpy as np
from threadpoolctl import threadpool_info

def gflops(dtype, n=2048, repeats=5):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(dtype) for _ in range(2))
    a @ b
    best = min(_timed(a, b) for _ in range(repeats))
    return round(2 * n ** 3 / best / 1e9, 1)

def _timed(a, b):
    start = time.perf_counter()
    a @ b
    return time.perf_counter() - start

blas = [{k: lib.get(k) for k in ("internal_api", "version", "architecture", "corename",
                                 "threading_layer", "num_threads") if lib.get(k) is not None}
        for lib in threadpool_info() if lib.get("user_api") == "blas"]
try:
    numba = importlib.metadata.version("numba")
except importlib.metadata.PackageNotFoundError:
    numba = None
print(json.dumps({"gemm_gflops_f32": gflops(np.float32), "gemm_gflops_f64": gflops(np.float64),
                  "blas": blas, "numpy": np.__version__, "numba": numba}))
"""


def cpu_model():
    """The CPU's model name, from ``/proc/cpuinfo``, else ``lscpu``, else ``platform``."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine():
    """The ``machine`` record: CPU, GEMM speed, BLAS, versions, threading variables."""
    probe = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                           cwd=ROOT)
    info = json.loads(probe.stdout) if probe.returncode == 0 else {
        "gemm_gflops_f32": None, "gemm_gflops_f64": None, "blas": [], "numpy": None,
        "numba": None, "probe_error": probe.stderr.strip().splitlines()[-1:]}
    return {"cpu": cpu_model(), "logical_cpus": os.cpu_count(),
            "gemm_gflops_f32": info.pop("gemm_gflops_f32"),
            "gemm_gflops_f64": info.pop("gemm_gflops_f64"), **info,
            "python": platform.python_version(),
            "env": {k: os.environ[k] for k in THREAD_VARS if k in os.environ}}


def git(*args):
    """Output of ``git ARGS`` in the repository root, or None where git fails."""
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT)
    except OSError:
        return None
    return out.stdout if out.returncode == 0 else None


def clean(text):
    """``text`` without ANSI codes and progress bars: of each line rewritten by carriage
    returns its last state, and no line that is a progress bar."""
    lines = []
    for line in _ANSI.sub("", text).replace("\r\n", "\n").split("\n"):
        line = line.rstrip("\r").rsplit("\r", 1)[-1].rstrip()
        if not _BAR.search(line):
            lines.append(line)
    return "\n".join(lines).strip("\n") + "\n"


def run(cmd):
    """Run ``cmd`` in the repository root, echoing its output; (exit code, output, seconds)."""
    shell = len(cmd) == 1 and bool(_SHELL & set(cmd[0]) or " " in cmd[0])
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(cmd[0] if shell else cmd, shell=shell, cwd=ROOT, env=env,
                                executable="/bin/bash" if shell else None,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as exc:
        print(f"record.py: cannot run {cmd[0]!r}: {exc}", file=sys.stderr)
        return 127, "", 0.0
    chunks = []
    while True:
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        chunks.append(chunk)
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
    code = proc.wait()
    return code, b"".join(chunks).decode("utf-8", "replace"), time.perf_counter() - start


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Run CMD from the repository root and write bench/results/NAME.json "
                    "(machine, date, command, wall time, output).",
        usage="%(prog)s NAME [--title TITLE] -- CMD [ARGS ...]")
    ap.add_argument("name", help="the record's name: bench/results/NAME.json")
    ap.add_argument("--title", help="one line saying what it measures (default NAME)")
    ap.add_argument("cmd", nargs="*", metavar="-- CMD [ARGS ...]",
                    help="the command, after '--': several arguments run without a shell, one "
                         "argument with shell syntax under bash -c")
    argv = sys.argv[1:] if argv is None else list(argv)
    split = argv.index("--") if "--" in argv else len(argv)
    args, cmd = ap.parse_args(argv[:split]), argv[split + 1:]
    if args.cmd or not cmd:
        ap.error("give the command after '--'")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", args.name):
        ap.error(f"NAME must be letters, digits, '.', '_' or '-'; got {args.name!r}")
    inside = str(ROOT) + os.sep         # paths into the checkout are written relative to it
    command = cmd[0] if len(cmd) == 1 else shlex.join(
        os.path.relpath(a, ROOT) if a.startswith(inside) else a for a in cmd)

    load = list(os.getloadavg())
    described = machine()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    commit = git("rev-parse", "HEAD")
    dirty = [line[3:] for line in (git("status", "--porcelain", "--untracked-files=no")
                                   or "").splitlines()]
    code, output, wall = run(cmd)
    if code != 0:
        print(f"record.py: {command!r} exited with {code}; bench/results/{args.name}.json "
              "not written", file=sys.stderr)
        return code
    record = {"name": args.name, "title": args.title or args.name, "command": command,
              "date": date, "wall_s": round(wall, 2), "exit_code": code,
              "commit": commit.strip() if commit else None, "dirty": bool(dirty),
              "dirty_paths": dirty, "machine": described,
              "load_before": [round(x, 2) for x in load], "output": clean(output)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{args.name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    print(f"record.py: {wall:.1f} s; wrote {path.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
