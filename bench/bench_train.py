#!/usr/bin/env python
"""Benchmark: SGD model-steps per second of the centered two-layer ReLU MLP.

Measures, in one run and interleaved so that every method sees the same
machine state, the training throughput of

* fastsd's float64 NumPy reference (``backend="numpy"``),
* fastsd's Numba dense path (``backend="cpu", path="dense"``, float32),
* fastsd's Numba symbol-basis path (``backend="cpu", path="symbol"``, float32),
* a 16-model fastsd ensemble (``train_ensemble``), on the auto path and on the
  dense path (model-steps/s = 16 * steps / time),
* PyTorch on the CPU (eager, and ``torch.compile`` unless ``--no-compile``),
* JAX ``jit`` on the CPU (one jitted step per Python iteration, as the
  published code does; and an extra ``lax.scan`` variant for reference),

all implementing the same model: f~(x) = f(x; theta) - f(x; theta0),
f(x) = (1/(gamma sqrt(d))) sum_i a_i relu(w_i . x), x = (s_u; s_v) in R^{2d},
binary cross-entropy with the logistic link, plain SGD at
lr = gamma^2 d alpha0 (gamma = 1, alpha0 = 0.1), batch 128 of pairs drawn from
L symbols (half same, half different), float32 except the NumPy reference.
The peers draw the symbol indices and gather the inputs inside their step, as
fastsd does.

Run from the repository root::

    python bench/bench_train.py              # full run, ~10 minutes on 2 cores
    python bench/bench_train.py --threads 1  # every library on one pinned CPU
    python bench/bench_train.py --quick      # smoke run, shorter measurements

It prints a table and appends JSON lines to ``bench/out/bench_train.jsonl``.
This is a benchmark, not a test: it asserts nothing about speed.
"""
import argparse
import datetime
import gc
import json
import math
import os
import platform
import subprocess
import sys
import time
import uuid

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def _early_threads(argv):
    """Value of --threads in argv (it must act before numpy/numba/torch/jax load)."""
    for i, a in enumerate(argv):
        text = (argv[i + 1] if a == "--threads" and i + 1 < len(argv)
                else a.split("=", 1)[1] if a.startswith("--threads=") else None)
        if text is not None:        # a bad value is left to argparse (``positive``) to refuse
            return int(text) if text.isdigit() and int(text) >= 1 else None
    return None


def positive(kind):
    """An argparse type: ``kind`` (int or float) of a value > 0."""
    def parse(text):
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0; got {text}")
        return value
    parse.__name__ = f"positive {kind.__name__}"
    return parse


def pick(ap, methods, only):
    """The methods named in ``only`` (comma-separated; None: all); an argparse error for a
    name that is not among them (unknown, or its library is not installed)."""
    if not only:
        return methods
    keep = only.split(",")
    missing = sorted(set(keep) - {mt[0] for mt in methods})
    if missing:
        ap.error(f"--only: {missing} not available here; available: {[mt[0] for mt in methods]}")
    return [mt for mt in methods if mt[0] in keep]


# Read by this script and by the bench scripts that import it first (bench_images.py).
THREADS = (_early_threads(sys.argv[1:])
           if os.path.basename(sys.argv[0]).startswith("bench_") else None)
if THREADS is not None:
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                 "NUMBA_NUM_THREADS"):
        os.environ[_var] = str(THREADS)
    if THREADS == 1:
        # XLA keeps helper threads even with the flags below, so pin the whole
        # process (and every thread created from here on) to one CPU.
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false"
                                   " intra_op_parallelism_threads=1").strip()

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "out")
GAMMA = 1.0
ALPHA0 = 0.1
BATCH = 128
ENSEMBLE = 16
N_TEST = 128
SETTINGS = [  # (d, m, L)
    (256, 1024, 16),
    (64, 1024, 16),
]

# Reference rows for the ratio columns.
REF_NUMPY = "fastsd-numpy-f64"
REF_JAX = "jax-jit"
REF_TORCH = "torch-eager"


def setting_name(d, m, L):
    return f"d={d},m={m},B={BATCH},L={L}"


# ---------------------------------------------------------------- fastsd ---
def fastsd_runner(d, m, L, *, backend, path=None, ensemble=1, sigma2=0.0):
    """Return run(N) -> (seconds, model-steps) for one fastsd configuration.

    ``sigma2 > 0`` makes the task noisy, so the dense path cannot look up the
    centering preactivations from the symbols and does the peers' three GEMMs.
    """
    import fastsd
    task = fastsd.SameDifferent(d=d, L=L, sigma2=sigma2, seed=0)
    kw = dict(width=m, batch_size=BATCH, alpha0=ALPHA0, n_test=N_TEST, backend=backend)
    if path is not None:
        kw["path"] = path

    if ensemble == 1:
        def call(n):
            return [fastsd.train(task, GAMMA, steps=n, eval_every=n, seed=1, **kw)]
    else:
        def call(n):
            return fastsd.train_ensemble(task, [GAMMA] * ensemble, list(range(ensemble)),
                                         steps=n, eval_every=n, **kw)

    info = {}

    def run(n):
        t = time.perf_counter()
        res = call(n)
        el = time.perf_counter() - t
        info["path"] = sorted({r.config["path"] for r in res})
        info["dtype"] = res[0].config["dtype"]
        info["final_train_loss"] = float(np.mean([r.history["train_loss"][-1] for r in res]))
        return el, n * ensemble

    run(2)  # warm-up: Numba JIT (or cache load), first-touch allocations
    return run, info


# ----------------------------------------------------------------- torch ---
def torch_runner(d, m, L, *, compiled, sigma2=0.0, batch=BATCH):
    """Return run(N) -> (seconds, model-steps) for one PyTorch model (eager or compiled).

    ``sigma2 > 0``: the symbols of each pair carry fresh noise N(0, sigma2 I / d)
    every step, as fastsd's noisy task.
    """
    import torch
    torch.set_num_threads(THREADS or 2)
    BATCH = batch                       # this runner's batch size
    noise = math.sqrt(sigma2 / d)
    g = torch.Generator().manual_seed(0)
    p = 2 * d
    S = torch.randn(L, d, generator=g) / math.sqrt(d)
    W0 = torch.randn(m, p, generator=g) / math.sqrt(m)
    a0 = torch.randn(m, generator=g) / math.sqrt(m)
    W = W0.clone().requires_grad_(True)
    a = a0.clone().requires_grad_(True)
    scale = 1.0 / (GAMMA * math.sqrt(d))
    lr = GAMMA ** 2 * d * ALPHA0
    y = torch.zeros(BATCH)
    y[: BATCH // 2] = 1.0
    same = y > 0.5
    rng = torch.Generator().manual_seed(1)
    opt = torch.optim.SGD([W, a], lr=lr)

    def loss_fn(W, a, X, y):
        f = (torch.relu(X @ W.T) @ a - torch.relu(X @ W0.T) @ a0) * scale
        return torch.nn.functional.binary_cross_entropy_with_logits(f, y)

    fwd = torch.compile(loss_fn) if compiled else loss_fn

    def step():
        u = torch.randint(0, L, (BATCH,), generator=rng)
        off = torch.randint(1, L, (BATCH,), generator=rng)
        v = torch.where(same, u, (u + off) % L)
        X = torch.cat([S[u], S[v]], dim=1)
        if noise:
            X = X + noise * torch.randn(BATCH, p, generator=rng)
        opt.zero_grad(set_to_none=True)
        loss = fwd(W, a, X, y)
        loss.backward()
        opt.step()
        return loss

    info = {"threads": torch.get_num_threads()}

    def run(n):
        t = time.perf_counter()
        for _ in range(n):
            loss = step()
        loss = float(loss.detach())
        el = time.perf_counter() - t
        info["final_train_loss"] = loss
        return el, n

    t = time.perf_counter()
    for _ in range(3):
        step()
    info["warmup_s"] = time.perf_counter() - t
    return run, info


# ------------------------------------------------------------------- jax ---
def jax_runner(d, m, L, *, scan_chunk=None, sigma2=0.0, batch=BATCH, ensemble=None):
    """Return run(N) -> (seconds, model-steps) for one JAX model (a jitted step per Python
    iteration, or ``scan_chunk`` steps per call); ``sigma2`` as ``torch_runner``.

    ``ensemble=E``: E independent models (own initialisation and batches) in one jitted
    step under ``jax.vmap``, the JAX way to train an ensemble.
    """
    import jax
    import jax.numpy as jnp
    BATCH = batch                       # this runner's batch size
    E = ensemble or 1
    noise = math.sqrt(sigma2 / d)
    key = jax.random.PRNGKey(0)
    k1, k2, k3, key = jax.random.split(key, 4)
    p = 2 * d
    S = jax.random.normal(k1, (L, d), jnp.float32) / math.sqrt(d)
    W0 = jax.random.normal(k2, (E, m, p), jnp.float32) / math.sqrt(m)
    a0 = jax.random.normal(k3, (E, m), jnp.float32) / math.sqrt(m)
    keys = jax.random.split(key, E)
    scale = 1.0 / (GAMMA * math.sqrt(d))
    lr = GAMMA ** 2 * d * ALPHA0
    y = jnp.zeros(BATCH, jnp.float32).at[: BATCH // 2].set(1.0)
    same = y > 0.5

    def loss_fn(W, a, X, W0, a0):
        f = (jax.nn.relu(X @ W.T) @ a - jax.nn.relu(X @ W0.T) @ a0) * scale
        # BCE with logits: softplus((1 - 2y) f)
        return jnp.mean(jax.nn.softplus((1.0 - 2.0 * y) * f))

    def model_step(W, a, key, W0, a0):
        key, ku, ko, kn = jax.random.split(key, 4)
        u = jax.random.randint(ku, (BATCH,), 0, L)
        off = jax.random.randint(ko, (BATCH,), 1, L)
        v = jnp.where(same, u, (u + off) % L)
        X = jnp.concatenate([S[u], S[v]], axis=1)
        if noise:
            X = X + noise * jax.random.normal(kn, (BATCH, p), jnp.float32)
        loss, (gW, ga) = jax.value_and_grad(loss_fn, argnums=(0, 1))(W, a, X, W0, a0)
        return W - lr * gW, a - lr * ga, key, loss

    if ensemble:
        vstep = jax.vmap(model_step)

        def step(W, a, key):
            W, a, key, loss = vstep(W, a, key, W0, a0)
            return W, a, key, jnp.mean(loss)
        state = {"W": W0 + 0.0, "a": a0 + 0.0, "key": keys}
    else:
        def step(W, a, key):
            return model_step(W, a, key, W0[0], a0[0])
        state = {"W": W0[0] + 0.0, "a": a0[0] + 0.0, "key": keys[0]}
    info = {"devices": [str(dv) for dv in jax.devices()]}

    if scan_chunk is None:
        jstep = jax.jit(step, donate_argnums=(0, 1))

        def advance(W, a, key, n):
            for _ in range(n):
                W, a, key, loss = jstep(W, a, key)
            return W, a, key, loss, n
    else:
        def body(carry, _):
            W, a, key = carry
            W, a, key, loss = step(W, a, key)
            return (W, a, key), loss

        @jax.jit
        def chunk(W, a, key):
            (W, a, key), losses = jax.lax.scan(body, (W, a, key), None, length=scan_chunk)
            return W, a, key, losses[-1]

        def advance(W, a, key, n):
            k = max(1, math.ceil(n / scan_chunk))
            for _ in range(k):
                W, a, key, loss = chunk(W, a, key)
            return W, a, key, loss, k * scan_chunk

    def run(n):
        t = time.perf_counter()
        W, a, key, loss, done = advance(state["W"], state["a"], state["key"], n)
        loss = float(jax.block_until_ready(loss))
        el = time.perf_counter() - t
        state.update(W=W, a=a, key=key)
        info["final_train_loss"] = loss
        return el, done * E

    t = time.perf_counter()
    run(2)
    info["warmup_s"] = time.perf_counter() - t
    return run, info


# ------------------------------------------------------------ machinery ---
def _source_hash(pkg_dir):
    """SHA-1 over fastsd's .py files, to tie a result to the code (the tree may be dirty)."""
    import hashlib
    h = hashlib.sha1()
    for dirpath, dirnames, filenames in os.walk(pkg_dir):
        dirnames[:] = sorted(x for x in dirnames if x != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith(".py"):
                path = os.path.join(dirpath, fn)
                h.update(os.path.relpath(path, pkg_dir).encode())
                with open(path, "rb") as fh:
                    h.update(fh.read())
    return h.hexdigest()[:12]


def machine_info():
    info = {
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": None,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "env": {k: os.environ.get(k) for k in (
            "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
            "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER", "JAX_PLATFORMS", "XLA_FLAGS")
            if os.environ.get(k) is not None},
    }
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    vers = {"numpy": np.__version__}
    for mod in ("numba", "scipy", "torch", "jax", "jaxlib", "fastsd"):
        try:
            vers[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - optional packages
            vers[mod] = None
    info["versions"] = vers
    try:
        import numba
        info["numba_threads"] = numba.config.NUMBA_NUM_THREADS
    except Exception:  # noqa: BLE001
        pass
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        info["numpy_blas"] = {k: blas.get(k) for k in ("name", "version", "openblas configuration")}
    except Exception:  # noqa: BLE001
        pass
    try:
        root = os.path.dirname(HERE)
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "fastsd"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        info["git_commit"] = head or None
        info["fastsd_dirty"] = bool(dirty)
        info["fastsd_source_sha1"] = _source_hash(os.path.join(root, "fastsd"))
    except Exception:  # noqa: BLE001
        pass
    return info


def build_methods(args):
    """List of (name, kind, factory(d, m, L) -> (run, info), model count)."""
    methods = [
        (REF_NUMPY, "fastsd", lambda d, m, L: fastsd_runner(d, m, L, backend="numpy"), 1),
        ("fastsd-dense-f32", "fastsd",
         lambda d, m, L: fastsd_runner(d, m, L, backend="cpu", path="dense"), 1),
        ("fastsd-dense-noisy-f32", "fastsd",
         lambda d, m, L: fastsd_runner(d, m, L, backend="cpu", path="dense", sigma2=0.1), 1),
        ("fastsd-symbol-f32", "fastsd",
         lambda d, m, L: fastsd_runner(d, m, L, backend="cpu", path="symbol"), 1),
        (f"fastsd-ens{ENSEMBLE}-auto", "fastsd",
         lambda d, m, L: fastsd_runner(d, m, L, backend="cpu", ensemble=ENSEMBLE), ENSEMBLE),
        (f"fastsd-ens{ENSEMBLE}-dense", "fastsd",
         lambda d, m, L: fastsd_runner(d, m, L, backend="cpu", path="dense",
                                       ensemble=ENSEMBLE), ENSEMBLE),
    ]
    notes = []
    try:
        import torch  # noqa: F401
        methods.append((REF_TORCH, "torch",
                        lambda d, m, L: torch_runner(d, m, L, compiled=False), 1))
        methods.append(("torch-eager-noisy", "torch",
                        lambda d, m, L: torch_runner(d, m, L, compiled=False, sigma2=0.1), 1))
        if args.no_compile:
            notes.append("torch.compile skipped (--no-compile)")
        else:
            methods.append(("torch-compile", "torch",
                            lambda d, m, L: torch_runner(d, m, L, compiled=True), 1))
    except ImportError as exc:
        notes.append(f"PyTorch not importable ({exc}); skipping torch rows")
    try:
        import jax  # noqa: F401
        methods.append((REF_JAX, "jax", lambda d, m, L: jax_runner(d, m, L), 1))
        methods.append(("jax-jit-noisy", "jax", lambda d, m, L: jax_runner(d, m, L, sigma2=0.1),
                        1))
        methods.append((f"jax-vmap{ENSEMBLE}", "jax",
                        lambda d, m, L: jax_runner(d, m, L, ensemble=ENSEMBLE), ENSEMBLE))
        methods.append(("jax-scan", "jax",
                        lambda d, m, L: jax_runner(d, m, L, scan_chunk=args.scan_chunk), 1))
    except ImportError as exc:
        notes.append(f"JAX not importable ({exc}); skipping jax rows")
    return methods, notes


def _cpu_times():
    """(busy, total) jiffies over the CPUs this process may run on, from /proc/stat."""
    try:
        cpus = os.sched_getaffinity(0)
    except AttributeError:
        cpus = None
    busy = total = 0
    try:
        with open("/proc/stat") as fh:
            for line in fh:
                if not line.startswith("cpu") or line.startswith("cpu "):
                    continue
                name, *vals = line.split()
                if cpus is not None and int(name[3:]) not in cpus:
                    continue
                vals = [int(x) for x in vals]
                idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
                busy += sum(vals) - idle
                total += sum(vals)
    except (OSError, ValueError):
        return None
    return (busy, total) if total else None


def background_busy(window):
    """Fraction of this process's CPUs busy during ``window`` s while it sleeps.

    On a shared machine this is the load from other processes (plus the tail
    of this process's spinning thread pools); None where /proc/stat is absent.
    """
    a = _cpu_times()
    time.sleep(window)
    b = _cpu_times()
    if a is None or b is None or b[1] == a[1]:
        return None
    return (b[0] - a[0]) / (b[1] - a[1])


def settle(pause, quiet_wait, threshold):
    """Sleep at least ``pause`` s, then up to ``quiet_wait`` s more until other
    processes use less than ``threshold`` of the CPUs; return the last reading."""
    busy = background_busy(pause)
    deadline = time.perf_counter() + quiet_wait
    while busy is not None and busy > threshold and time.perf_counter() < deadline:
        busy = background_busy(0.25)
    return busy


def calibrate(run, target_s, max_steps, settle_fn):
    """Pick N so that the steps of run(N) take about target_s seconds.

    Fits time = overhead + N * per_step from two call lengths, so that a fixed
    per-call cost (initialisation, test evaluation, result conversion) does
    not shrink N; N is also at least what keeps that cost under a tenth of
    the timed call (a 16-model ensemble's set-up is ~0.4 s), so that the rate
    measures training, as a long run sees it. Each length is timed twice and the
    faster kept: one slow call (a burst of load) had made the per-step time 50x
    too long, N 3 steps, and the call's set-up the whole measurement. Returns (N,
    per_step_s, overhead_s, steps_done_per_N).
    """
    settle_fn()
    e1, d1 = min(run(1), run(1))
    n2 = 2
    while True:
        settle_fn()
        e2, d2 = min(run(n2), run(n2))
        dt = e2 - e1
        if (d2 > d1 and dt >= 0.3 * target_s) or n2 >= max_steps:
            break
        per = max(dt, 1e-6) / max(d2 - d1, 1)
        n2 = min(max_steps, 8 * n2, max(2 * n2, int(0.5 * target_s / per)))
    per = max(dt, 1e-7) / max(d2 - d1, 1)
    overhead = max(0.0, e1 - per * d1)
    ratio = d2 / n2   # model-steps per requested step (ensembles, scan rounding)
    n = max(int(round(target_s / (per * ratio))), math.ceil(9 * overhead / (per * ratio)))
    return max(1, min(max_steps, n)), per, overhead, ratio


MAX_STEPS = 100000


def prepare(settings, methods, target, settle_fn, name_of):
    """Build and calibrate every (method, setting): warm-up (compile), then N.

    ``methods``: (name, kind, factory(*setting) -> (run, info), model count); a method
    that fails to build is skipped with a note. Returns {(name, setting): record}.
    """
    runners = {}
    for setting in settings:
        for name, kind, factory, count in methods:
            t0 = time.perf_counter()
            try:
                run, info = factory(*setting)
                n, per_step, overhead, _ = calibrate(run, target, MAX_STEPS, settle_fn)
            except Exception as exc:  # noqa: BLE001 - a peer may fail to build or compile
                print(f"note: {name} at {name_of(*setting)} failed to prepare: "
                      f"{type(exc).__name__}: {exc}; skipped")
                continue
            info["calibration"] = dict(per_model_step_s=per_step, call_overhead_s=overhead)
            runners[(name, setting)] = dict(run=run, info=info, n=n, meas=[], kind=kind,
                                            count=count, prep_s=time.perf_counter() - t0)
            print(f"  prepared {name:20s} {name_of(*setting)}: N={n}, "
                  f"~{per_step * 1e3:.3f} ms/model-step + {overhead * 1e3:.0f} ms/call "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
    return runners


def interleave(runners, settings, methods, repeats, target, settle_fn):
    """Timed, interleaved repeats of every prepared runner, appended to its ``meas``.

    A measurement much shorter than the target (N calibrated while the machine was
    busy) raises N for later repeats; callers keep the best rate.
    """
    for r in range(repeats):
        for setting in settings:
            for name, *_ in methods:
                rec = runners.get((name, setting))
                if rec is None:
                    continue
                gc.collect()
                busy = settle_fn()
                n = rec["n"]
                cpu = time.process_time()
                el, done = rec["run"](n)
                cpu = time.process_time() - cpu
                rec["meas"].append(dict(steps=n, model_steps=done, s=el, cpu_s=cpu, busy=busy,
                                        rate=done / el))
                if el < 0.5 * target:
                    rec["n"] = min(MAX_STEPS, max(n + 1, int(round(n * target / el))))
        print(f"  repeat {r + 1}/{repeats} done", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="short smoke run: ~0.3 s per measurement, 2 repeats")
    ap.add_argument("--repeats", type=positive(int), default=None,
                    help="timed repeats (default 4)")
    ap.add_argument("--target", type=positive(float), default=None,
                    help="seconds per measurement (default 1.5)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (~30 s/setting)")
    ap.add_argument("--scan-chunk", type=int, default=64, help="steps per lax.scan call")
    ap.add_argument("--threads", type=positive(int), default=None,
                    help="threads for every library (BLAS, Numba, torch, XLA); default: each "
                         "library's own (all cores), torch 2. --threads 1 also pins the process "
                         "to one CPU; with the per-CPU-second column it gives a comparison that "
                         "survives a busy shared machine")
    ap.add_argument("--only", default=None, help="comma-separated method names to run")
    ap.add_argument("--settings", default=None,
                    help="comma-separated d values among %s" % [s[0] for s in SETTINGS])
    ap.add_argument("--out", default=os.path.join(OUT_DIR, "bench_train.jsonl"))
    ap.add_argument("--pause", type=float, default=0.2,
                    help="idle seconds before each measurement, so spinning thread pools "
                         "of the previous method settle")
    ap.add_argument("--quiet-wait", type=float, default=5.0,
                    help="on a shared machine, wait up to this many seconds before each "
                         "measurement for other processes to go quiet (0: don't wait)")
    ap.add_argument("--quiet-threshold", type=float, default=0.10,
                    help="CPU fraction used by others below which the machine counts as quiet")
    args = ap.parse_args(argv)
    repeats = args.repeats or (2 if args.quick else 4)
    target = args.target or (0.3 if args.quick else 1.5)
    settings = SETTINGS
    if args.settings:
        ds = {int(x) for x in args.settings.split(",")}
        settings = [s for s in SETTINGS if s[0] in ds]

    methods, notes = build_methods(args)
    methods = pick(ap, methods, args.only)
    for note in notes:
        print("note:", note)
    machine = machine_info()
    machine["loadavg_start"] = os.getloadavg()
    machine["threads_option"] = THREADS
    print(f"machine: {machine['cpu_count']} CPUs ({machine['cpu_model']}), "
          f"load {machine['loadavg_start'][0]:.2f}; versions {machine['versions']}; fastsd "
          f"commit {str(machine.get('git_commit'))[:10]}"
          f"{' + local changes' if machine.get('fastsd_dirty') else ''} "
          f"(source sha1 {machine.get('fastsd_source_sha1')})")

    def settle_fn():
        return settle(args.pause, args.quiet_wait, args.quiet_threshold)

    runners = prepare(settings, methods, target, settle_fn, setting_name)
    interleave(runners, settings, methods, repeats, target, settle_fn)
    machine["loadavg_end"] = os.getloadavg()

    # Results.
    rows = []
    for d, m, L in settings:
        best = {}
        for name, *_ in methods:
            rec = runners.get((name, (d, m, L)))
            if rec is not None and rec["meas"]:
                best[name] = max(rec["meas"], key=lambda x: x["rate"])
        for name, *_ in methods:
            if name not in best:
                continue
            rec = runners[(name, (d, m, L))]
            b = best[name]
            rate = b["rate"]
            rates = [x["rate"] for x in rec["meas"]]

            def ratio(ref):
                return rate / best[ref]["rate"] if ref in best else None

            rows.append(dict(
                method=name, kind=rec["kind"], d=d, m=m, batch=BATCH, L=L, gamma=GAMMA,
                alpha0=ALPHA0, n_models=rec["count"], steps_per_call=b["steps"],
                model_steps_per_call=b["model_steps"], best_s=b["s"],
                background_busy_at_best=b["busy"], measurements=rec["meas"],
                model_steps_per_s=rate, median_model_steps_per_s=float(np.median(rates)),
                model_steps_per_cpu_s=max(x["model_steps"] / max(x["cpu_s"], 1e-9)
                                          for x in rec["meas"]),
                threads=THREADS,
                vs_numpy=ratio(REF_NUMPY), vs_jax=ratio(REF_JAX), vs_torch=ratio(REF_TORCH),
                info=rec["info"], prep_s=rec["prep_s"]))

    hdr = (f"{'method':20s} {'setting':22s} {'N':>6s} {'best s':>7s} {'spread':>6s} "
           f"{'bg':>4s} {'model-steps/s':>13s} {'vs numpy':>9s} {'vs jax':>8s} {'vs torch':>8s} "
           f"{'per cpu-s':>10s}")
    print()
    print(hdr)
    print("-" * len(hdr))

    def fmt(x):
        return "-" if x is None else f"{x:.2f}x"

    last = None
    for row in rows:
        st = setting_name(row["d"], row["m"], row["L"])
        if last is not None and st != last:
            print()
        last = st
        spread = row["model_steps_per_s"] / row["median_model_steps_per_s"] - 1
        bg = row["background_busy_at_best"]
        bg = "  ?" if bg is None else f"{100 * bg:3.0f}%"
        steps = row["model_steps_per_call"] // row["n_models"]  # jax-scan rounds N up
        print(f"{row['method']:20s} {st:22s} {steps:6d} {row['best_s']:7.3f} "
              f"{spread * 100:5.1f}% {bg:>4s} {row['model_steps_per_s']:13.1f} "
              f"{fmt(row['vs_numpy']):>9s} "
              f"{fmt(row['vs_jax']):>8s} {fmt(row['vs_torch']):>8s} "
              f"{row['model_steps_per_cpu_s']:10.1f}")
    print(f"\n(N: steps per timed call, x{ENSEMBLE} models for ensembles; best of {repeats}; "
          f"spread: best/median rate - 1; bg: CPU share used by other processes just before the "
          f"best measurement; ratios are model-steps/s over {REF_NUMPY}, "
          f"{REF_JAX}, {REF_TORCH} in the same setting; per cpu-s: model-steps per second of "
          f"this process's CPU time, best measurement)")

    # Targets (informational, never asserted).
    by = {(r["method"], r["d"]): r for r in rows}
    print("\ntargets (d=256, L=16):")
    for name, want in (("fastsd-dense-f32", 1.0), ("fastsd-symbol-f32", 20.0)):
        row = by.get((name, 256))
        if row is None or row["vs_jax"] is None:
            print(f"  {name}: >= {want}x {REF_JAX}: not measured")
        else:
            status = "met" if row["vs_jax"] >= want else "NOT met"
            print(f"  {name}: >= {want}x {REF_JAX}: {row['vs_jax']:.2f}x ({status})")

    write_rows(args.out, "bench_train", rows, repeats=repeats, target_s=target, notes=notes,
               machine=machine)
    return 0


def write_rows(path, bench, rows, **common):
    """Append one JSON line a row to ``path``, each with a fresh run id, the time and
    ``common``; prints where they went."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    run_id = uuid.uuid4().hex[:12]
    stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    with open(path, "a") as fh:
        for row in rows:
            fh.write(json.dumps(dict(bench=bench, run_id=run_id, time=stamp, **common, **row),
                                default=str) + "\n")
    print(f"\nwrote {len(rows)} JSON lines to {os.path.relpath(path)} (run_id {run_id})")


if __name__ == "__main__":
    sys.exit(main())
