"""Measuring the MLP's paths on this machine: calibrated prices, and the machine probe.

Calibration
    ``calibrate`` (the ``fastsd calibrate`` command) times the real engines
    of the backend (``train_ensemble``'s own, on one thread, batches drawn as
    in training) at the backend's calibration shapes (``fastsd.mlp.prices.TABLES``),
    taking turns, a tenth of a second a run, three runs each (about 10 s in
    all, plus the kernels' compile on the first run after an edit of fastsd),
    keeps the fastest run of each and fits the prices by non-negative least
    squares on relative error (``fit_path``). It runs only when asked: nothing
    calibrates on its own, so no test and no training run is slowed by it.
Cache
    The fit is stored in ``<cache root>/costs/<backend>.json``, the cache root
    of ``fastsd._jitcache`` (``~/.cache/fastsd`` or ``$XDG_CACHE_HOME/fastsd``),
    with the machine it was measured on (``machine_key``: CPU model, cores,
    fastsd version, a hash of the sources the engines run, NumPy, SciPy and
    Numba versions). A stored fit whose machine differs from this one (another
    machine sharing the home folder, an edited engine, an upgraded library) is
    ignored (``cached``).
Probe
    ``probe`` times the "cpu" engine at the shipped probe shapes, a few short
    runs: this machine's GEMM and scalar rates against the shipped prices'
    machine, which ``fastsd.mlp.costs`` scales the shipped prices by where no
    calibration is stored (cached by ``fastsd._probe``).
"""
import datetime
import functools
import json
import math
import os
import time

import numpy as np

from .. import _jitcache, _probe, _progress
from .._dispatch import FAMILIES
from .._pricing import fit_prices, predict
from .._validation import check_batch_size, check_choice, check_float, check_int
from .prices import (DTYPES, INPUTS, PATHS, TABLES, CostModel, backend_module,
                     check_path_inputs, fallback)

#: Version of the calibration cache file's layout.
FORMAT = 2
#: The package files whose code the calibration and the probe time
#: (``_jitcache.source_hash``'s parts).
SOURCES = ("mlp/", "tasks/", "_numerics.py", "_philox.py", "_rng.py")
#: The noise variance of the calibration's noisy shapes.
_NOISE_SIGMA2 = 0.1
#: The engine steps the machine probe times (``probe``): (path, L, d, width, batch size,
#: steps a run), one model, float32: dense steps, where the GEMMs weigh most, and symbol
#: steps, where scalar code does (``prices_cpu.json``'s "probe").
PROBE_SHAPES = tuple(tuple(s) for s in TABLES["cpu"]["probe"])
#: The factors ``probe`` measures.
PROBE_KINDS = ("gemm", "scalar")


@functools.lru_cache(maxsize=None)
def machine_key(backend="cpu"):
    """What a calibration of ``backend`` depends on: CPU, cores, fastsd and its engines' sources,
    NumPy, SciPy, Numba. A stored calibration is used only where all are equal."""
    return _probe.machine_key(SOURCES, backend=backend)


def cache_path(backend="cpu", environ=None):
    """The file of ``backend``'s calibration: ``<cache root>/costs/<backend>.json``."""
    return os.path.join(_jitcache.cache_root(environ), "costs", f"{backend}.json")


def _read(path):
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def write(model, environ=None):
    """Store a calibrated ``model`` in ``cache_path``, beside the other dtype's of this machine.

    Returns
    -------
    str
        The file written.
    """
    path = cache_path(model.backend, environ)
    data = _read(path)
    if data is None or data.get("machine") != model.machine:
        data = {"format": FORMAT, "machine": model.machine, "models": {}}
    data["models"][model.dtype] = model.to_json()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
    os.replace(tmp, path)
    _MEMO.clear()
    return path


#: Parsed cache files by (path, mtime, size).
_MEMO = {}


def cached(backend="cpu", dtype="float32", environ=None):
    """This machine's stored calibration of ``backend`` and ``dtype``, or None.

    None where nothing is stored, the file is unreadable, or it was measured
    on another machine (``machine_key`` differs: CPU, cores, sources, ...).
    """
    path = cache_path(backend, environ)
    try:
        st = os.stat(path)
    except OSError:
        return None
    memo = (path, st.st_mtime_ns, st.st_size)
    if memo not in _MEMO:
        _MEMO[memo] = _read(path)
    data = _MEMO[memo]
    if data is None or data.get("machine") != machine_key(backend):
        return None
    entry = data.get("models", {}).get(dtype)
    try:
        return None if entry is None else CostModel.from_json(entry)
    except (KeyError, TypeError, ValueError):
        return None


def probe(repeats=5):
    """This machine's time over the shipped prices' machine, for GEMM and other work, now.

    Times the "cpu" engine at ``PROBE_SHAPES`` (one thread, its CPU time, ``fastsd._probe.clock``;
    the shapes take turns, ``repeats`` rounds, the fastest run of each kept) and fits the
    two factors to them: measured = f_gemm x (the shipped float32 prices' GEMM units) +
    f_scalar x (their other units), by non-negative least squares on relative error.

    Returns
    -------
    dict of str to float
        {"gemm", "scalar"} (``PROBE_KINDS``): > 1 where this machine is slower; at least
        ``fastsd._probe.LIMITS[0]``.
    """
    from scipy.optimize import nnls

    from .._threads import thread_limit

    module = backend_module("cpu")
    reference = fallback("cpu", "float32")
    gemm_units = TABLES["cpu"]["gemm_units"]
    parts, runs = [], []
    with thread_limit(1):
        for path, L, d, m, B, steps in PROBE_SHAPES:
            prices = reference.prices[path]
            features = module.step_features(path, L, B, m, 2 * d)
            gemm = {u: v for u, v in prices.items() if u in gemm_units}
            rest = {u: v for u, v in prices.items() if u not in gemm_units}
            parts.append([predict(gemm, features), predict(rest, features)])
            run = step_timer(path, L=L, d=d, width=m, batch_size=B, clock=_probe.clock)
            run(1)                  # load the kernels, warm the caches
            runs.append((run, steps))
        seconds = [math.inf] * len(runs)
        for _ in range(check_int("repeats", repeats, 1)):
            for i, (run, steps) in enumerate(runs):
                seconds[i] = min(seconds[i], run(steps) / steps)
    f, _ = nnls(np.array(parts) / np.array(seconds)[:, None], np.ones(len(seconds)))
    low = _probe.LIMITS[0]
    return {"gemm": float(max(f[0], low)), "scalar": float(max(f[1], low))}


def _calibration_task(path, L, d, inputs):
    """The task of a calibration shape: ``SameDifferent(d, L)`` (noisy, sigma2 = 0.1, for
    "noise"); for "stamps" ``PSVRT`` with L training patterns of 5 x 5 cells (3 x 3 for
    d < 64, so that the sparse path's pixels vary: 18 or 50 an image) on a grid of about
    sqrt(2 d) pixels a side; for "images" ``Pentomino`` (blur 0.5, random, as Fig. 3's) with
    L <= 16 training pieces and about sqrt(2 d) / 7 cells a side (2 at least); its input
    dimension is the task's. Checked as ``step_seconds`` checks them (the symbol path trains
    "symbols" only, the sparse path "images" or "stamps" only)."""
    from ..tasks import PSVRT, Pentomino, SameDifferent

    check_choice("path", path, PATHS)
    check_choice("inputs", inputs, INPUTS)
    check_path_inputs(path, inputs)
    L, d = check_int("L", L, 2), check_int("d", d, 1)
    if inputs == "stamps":
        patch = 3 if d < 64 else 5
        return PSVRT(patch=patch, n_patches=max(2, round(math.sqrt(2 * d) / patch)),
                     n_train_patterns=L, seed=0)
    if inputs == "images":
        return Pentomino(width=max(2, round(math.sqrt(2 * d) / 7)), n_train_shapes=min(L, 16),
                         blur=0.5, seed=0)
    return SameDifferent(d, L, sigma2=_NOISE_SIGMA2 if inputs == "noise" else 0.0, seed=0)


def step_timer(path, *, L, d, width, batch_size, models=1, inputs="symbols", dtype="float32",
               backend="cpu", clock=time.perf_counter, activation=None):
    """A function ``run(n)`` that trains n steps of ``train_ensemble``'s engine on ``path``
    and returns the seconds they took by ``clock`` (wall time by default; the probe takes
    the thread's CPU time, ``fastsd._probe.clock``).

    ``models`` models of one seed (as a scan's group: the same batches, the
    same initialisation) train on the shape's task (``_calibration_task``:
    the symbol task, clean or noisy, Pentomino or PSVRT images); each call draws its
    batches and runs the engine, as one evaluation window of training does.
    It runs on the threads it is called under (``measure`` limits them to one).
    ``activation`` (a ``fastsd.activations.Activation``; None: ReLU) is the hidden units'.
    """
    from .._rng import seed_sequence, train_streams
    from .model import init_params
    from .engines import build_engines

    check_choice("dtype", dtype, DTYPES)
    task = _calibration_task(path, L, d, inputs)
    batch_size = check_batch_size("batch_size", batch_size)
    streams = [train_streams(seed_sequence(0)) for _ in range(check_int("models", models, 1))]
    params0 = init_params(streams[0]["init"], check_int("width", width, 1), task.input_dim,
                          "normal")
    (_, engine), = build_engines(backend_module(backend), [task] * models, [path] * models,
                                 [params0] * models, [task.output_scale(1.0)] * models,
                                 [task.learning_rate(1.0, task.default_alpha0)] * models, dtype,
                                 activation=activation)
    noise = [task.training_noise(st["noise"]) for st in streams]

    def run(n):
        start = clock()
        pairs = [task.draw_pairs(st["pairs"], (n, batch_size)) for st in streams]
        engine.run(pairs, noise)
        return clock() - start
    return run


def _steps(seconds, path, *, L, d, width, batch_size, models, inputs, dtype, backend):
    """Steps that take about ``seconds`` by the fallback prices (2 to 100,000)."""
    task = _calibration_task(path, L, d, inputs)
    guess = fallback(backend, dtype).step_seconds(
        path, L=L, input_dim=task.input_dim, width=width, batch_size=batch_size, models=models,
        inputs=inputs, entries=_entries(task))
    return int(min(100_000, max(2, round(seconds / max(guess, 1e-9)))))


def _entries(task):
    """The sparse path's size of a task: its mean non-zero pixels an image (None without)."""
    return task.sparse_entries() if task.has_sparse_inputs else None


def measure(path, *, L, d, width, batch_size, models=1, inputs="symbols", dtype="float32",
            backend="cpu", steps=None, repeats=3, seconds=0.1):
    """Best seconds per step of ``train_ensemble``'s engine on ``path``, on one thread.

    One untimed step first loads (or compiles) the kernels; then ``repeats``
    runs of ``steps`` steps are timed (``step_timer``) and the fastest kept.

    Parameters
    ----------
    path : {"dense", "symbol", "sparse"}
    L, d, width, batch_size, models : int
    inputs : {"symbols", "noise", "images", "stamps"}, default "symbols"
        The task (``step_timer``): clean or noisy (sigma2 = 0.1) symbol pairs,
        blurred Pentomino images or PSVRT stamps.
    dtype : {"float32", "float64"}
    backend : {"cpu", "cuda"}
    steps : int, optional
        Steps per timed run; default enough for about ``seconds`` (from the
        fallback prices).
    repeats : int, default 3
    seconds : float, default 0.1

    Returns
    -------
    float
        Seconds per step.
    """
    from .._threads import thread_limit

    repeats = check_int("repeats", repeats, 1)
    seconds = check_float("seconds", seconds, positive=True)
    run = step_timer(path, L=L, d=d, width=width, batch_size=batch_size, models=models,
                     inputs=inputs, dtype=dtype, backend=backend)
    if steps is None:
        steps = _steps(seconds, path, L=L, d=d, width=width, batch_size=batch_size,
                       models=models, inputs=inputs, dtype=dtype, backend=backend)
    steps = check_int("steps", steps, 1)
    with thread_limit(1):
        run(1)
        return min(run(steps) for _ in range(repeats)) / steps


def fit_path(backend, path, points):
    """Prices of ``path``'s units fitted to measured ``points`` (non-negative least squares
    on relative error).

    Parameters
    ----------
    backend : {"cpu", "cuda"}
    path : {"dense", "symbol", "sparse"}
    points : sequence of dict
        Each with L, input_dim, width, batch_size, models, inputs and seconds
        (per step), as ``calibrate`` records them.

    Returns
    -------
    dict of str to float
    """
    module = backend_module(backend)
    rows = [module.step_features(path, pt["L"], pt["batch_size"], pt["width"], pt["input_dim"],
                                 pt["models"], pt["inputs"], pt.get("entries"))
            for pt in points]
    return fit_prices(rows, [pt["seconds"] for pt in points])


def calibrate(backend="cpu", dtype="float32", *, shapes=None, repeats=3, seconds=0.1, save=True,
              progress=False, environ=None):
    """Measure this machine's prices for ``backend`` and ``dtype``, and (by default) store them.

    Parameters
    ----------
    backend : {"auto", "cpu", "cuda"}
        A backend with two paths and calibration shapes (today "cpu").
    dtype : {"float32", "float64"}
    shapes : sequence of tuple, optional
        (path, L, d, width, batch_size, models, inputs) to time; default the
        backend's ("calibration" in ``fastsd.mlp.prices.TABLES``). Every path needs
        at least one.
    repeats, seconds
        As ``measure``: timed runs per shape and the length of each.
    save : bool, default True
        Store the model in ``cache_path`` for later runs on this machine.
    progress : bool, default False
        A progress bar over shapes on stderr.
    environ : mapping, optional
        As ``load``.

    Returns
    -------
    CostModel
        ``source == "calibrated"``, with the measurements in ``points``.

    Raises
    ------
    ValueError
        For a backend without a calibration, or shapes that miss a path.
    BackendUnavailableError
        When the backend cannot run here.
    """
    from ..params import CALIBRATE
    from .._threads import thread_limit

    c = CALIBRATE.check(dict(dtype=dtype, repeats=repeats, seconds=seconds))
    dtype, repeats, seconds = c["dtype"], c["repeats"], c["seconds"]
    backend = FAMILIES["mlp"].resolve(backend)
    module = backend_module(backend)
    if shapes is None:
        if "calibration" not in TABLES[backend]:
            raise ValueError(f"`backend` must have calibration shapes to calibrate; got "
                             f"{backend!r}, whose cost model is its nominal shipped prices.")
        shapes = TABLES[backend]["calibration"]
    shapes = [tuple(s) for s in shapes]
    priced = [p for p in module.ENGINES if p in PATHS]
    missing = [p for p in priced if p not in {s[0] for s in shapes}]
    if missing:
        raise ValueError(f"`shapes` must time every path of backend {backend!r}; got none on "
                         f"{missing[0]!r}.")
    points, runs = [], []
    for path, L, d, width, batch_size, models, inputs in shapes:
        sizes = dict(L=L, d=d, width=width, batch_size=batch_size, models=models,
                     inputs=inputs)
        runs.append(step_timer(path, **sizes, dtype=dtype, backend=backend))
        task = _calibration_task(path, L, d, inputs)
        points.append(dict(path=path, **sizes, input_dim=task.input_dim, entries=_entries(task),
                           steps=_steps(seconds, path, **sizes, dtype=dtype, backend=backend),
                           seconds=float("inf")))
    # The shapes take turns, so that a burst of load from other processes slows one run of
    # many shapes rather than every run of one; the fastest run of each is kept.
    with thread_limit(1), _progress.bar(progress, total=len(shapes) * (repeats + 1),
                                        desc=f"calibrating {backend} {dtype}") as bar:
        for run in runs:
            run(1)                  # load (or compile) the kernels
            bar.update(1)
        for _ in range(repeats):
            for run, pt in zip(runs, points):
                pt["seconds"] = min(pt["seconds"], run(pt["steps"]) / pt["steps"])
                bar.update(1)
    prices = {path: fit_path(backend, path, [pt for pt in points if pt["path"] == path])
              for path in priced}
    model = CostModel(backend=backend, dtype=dtype, prices=prices, source="calibrated",
                      machine=machine_key(backend),
                      measured_at=datetime.datetime.now(datetime.timezone.utc).strftime(
                          "%Y-%m-%dT%H:%M:%SZ"),
                      points=tuple(points))
    if save:
        write(model, environ)
    return model
