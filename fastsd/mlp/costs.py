"""Seconds per SGD step of the MLP's training paths, measured on this machine.

``path="auto"`` (``fastsd.train``, the scans) picks the training path that
this model says is faster, and ``fastsd reproduce --dry-run`` and the scan's
progress bar predict wall time with it.

Model
    Each two-path backend module of the mlp family states what a step does
    in counted units (``step_features``: for the CPU's dense path the GEMM
    multiply-adds, the B x m fused units, the gathered inputs, the noise drawn
    in the engine and the inputs a task builds on the host (images), the
    weights' read-modify-write, a fixed cost per model and per step; for its
    symbol path the distinct pairs of a batch times m, the L x (distinct
    symbols) x m rows of Q = K C updated and the L x L entries of K visited).
    A ``CostModel`` prices each unit in seconds: the predicted time of a step
    is the sum of counts times prices. The prices are non-negative and every
    count grows with every size, so the predicted time grows with L, d, m,
    the batch size and the number of models. The prices are for one thread,
    as a scan's workers run (one per core), on a quiet machine: other
    processes on the cores slow both paths alike, so the choice holds, but
    the predicted times are then too short. An evaluation is priced with the
    dense path's prices.
Calibration
    ``calibrate`` (the ``fastsd calibrate`` command) times the real engines
    of the backend (``train_ensemble``'s own, on one thread, batches drawn as
    in training) at the backend's ``CALIBRATION`` shapes, taking turns, a
    tenth of a second a run, three runs each (about 10 s in all, plus the
    kernels' compile on the first run after an edit of fastsd), keeps the
    fastest run of each and fits the prices by non-negative least squares on
    relative error. It runs only when asked: nothing calibrates on its own,
    so no test and no training run is slowed by it.
Cache
    The fit is stored in ``<cache root>/costs/<backend>.json``, the cache root
    of ``fastsd._jitcache`` (``~/.cache/fastsd`` or ``$XDG_CACHE_HOME/fastsd``),
    with the machine it was measured on: CPU model, cores, fastsd version, a
    hash of the sources the engines run, NumPy, SciPy and Numba versions. A
    stored fit whose machine differs from this one (another machine sharing
    the home folder, an edited engine, an upgraded library) is ignored.
Fallback
    Without a valid calibration, the backend module's ``FALLBACK_PRICES`` are
    used (for "cpu" a fit measured on the 2-core development machine), scaled
    to this machine by ``fastsd._probe`` (``probed``: its GEMM and scalar rates
    against the development machine's, timed once in under a second and
    cached). Setting the environment variable ``FASTSD_COSTS=fallback`` uses
    them as fitted, unscaled, even where a calibration is stored (the tests
    do, so that "auto" picks the same path on every machine).

The path of a model is chosen as if it trained alone (``CostModel.choose``),
so the path, and hence the numbers, of a model in an ensemble are those of
its run on its own; and it is chosen by the shipped prices as fitted
(``path_model``), never by this machine's probe or calibration, which predict
times only: the paths agree only to float32 rounding, so a choice that followed
a measured time would give other numbers for the same call after the probe
was redone (a busier moment, another checkout's cache, a cleared cache).
"""
import datetime
import functools
import json
import math
import os
import time
from dataclasses import dataclass, field

import numpy as np

from .. import __version__, _jitcache, _probe, _progress
from .._pricing import fit as fit_prices
from .._pricing import predict
from .._dispatch import FAMILIES
from .._validation import check_batch_size, check_choice, check_float, check_int

#: The paths the cost model prices, and `path="auto"` chooses between: "dense" or "symbol" for
#: clean symbol tasks, "dense" or "sparse" for the image tasks whose inputs are mostly zeros.
PATHS = ("dense", "symbol", "sparse")
DTYPES = ("float32", "float64")
#: The environment variable that can force the shipped prices: "fallback", or "auto" (the
#: default: this machine's calibration where one is stored).
ENV = "FASTSD_COSTS"
#: Version of the cache file's layout.
FORMAT = 2
#: The package files whose code the calibration times (``_jitcache.source_hash``'s parts).
SOURCES = ("mlp/", "tasks/", "_numerics.py", "_philox.py", "_rng.py")
#: What a model's training inputs are: clean symbol pairs (looked up), noisy symbol pairs
#: (counter-based noise drawn by the engine), or images built by the task on the host:
#: "stamps" where they are sharp stamps on a grid's cells (``GridTask.stamp_pixels``: PSVRT,
#: Pentomino without blur; the sparse path multiplies them by cell GEMMs), "images" otherwise
#: (blurred stamps, multiplied pixel row by pixel row; and every dense image task).
INPUTS = ("symbols", "noise", "images", "stamps")
#: The ensemble size at which "auto" compares an image task's paths (``choose_images``):
#: one seed's group of gammas, as Fig. 3's scans train them.
GROUP_MODELS = 6
#: The noise variance of the calibration's noisy shapes.
_NOISE_SIGMA2 = 0.1


def _check_path_inputs(path, inputs):
    """The symbol path trains clean symbol pairs only, the sparse path images only."""
    if inputs != "symbols" and path == "symbol":
        raise ValueError(f"`inputs` must be 'symbols' on the symbol path (it trains clean "
                         f"symbol tasks only); got {inputs!r}.")
    if inputs not in ("images", "stamps") and path == "sparse":
        raise ValueError(f"`inputs` must be 'images' or 'stamps' on the sparse path (it trains "
                         f"image tasks whose inputs are mostly zeros); got {inputs!r}.")


def image_inputs(task):
    """The ``inputs`` of an image task whose inputs are mostly zeros (``has_sparse_inputs``):
    "stamps" where its training images are sharp stamps on a grid (``stamp_pixels``), else
    "images"."""
    return "stamps" if task.stamp_pixels() is not None else "images"


def _module(backend):
    module = FAMILIES["mlp"].module(backend)
    if not hasattr(module, "step_features"):
        raise ValueError(f"`backend` must have two training paths to have a cost model (cpu or "
                         f"cuda); got {backend!r}, which has one (dense).")
    return module


@dataclass(frozen=True)
class CostModel:
    """Prices in seconds of one backend's work units, and the predictions they give.

    Attributes
    ----------
    backend : {"cpu", "cuda"}
    dtype : {"float32", "float64"}
    prices : dict
        {path: {unit: seconds per unit}}, the units of the backend module's
        ``step_features`` (and of ``eval_features``, priced as "dense").
    source : {"calibrated", "probed", "fallback"}
        Measured on this machine (``calibrate``), the backend's shipped
        ``FALLBACK_PRICES`` scaled to this machine (``probed``), or those as fitted.
    machine : dict, optional
        Where the prices were measured (``machine_key``); for the fallback,
        the backend's ``FALLBACK_MACHINE``.
    measured_at : str, optional
        When (UTC, ISO 8601).
    points : tuple of dict
        The calibration's measurements: each shape and its best seconds per step.
    """

    backend: str
    dtype: str
    prices: dict
    source: str
    machine: dict = None
    measured_at: str = None
    points: tuple = field(default=(), repr=False)

    def step_seconds(self, path, *, L, input_dim, width, batch_size, models=1,
                     inputs="symbols", entries=None):
        """Predicted seconds of one SGD step of ``models`` models on ``path``, one thread.

        Parameters
        ----------
        path : {"dense", "symbol", "sparse"}
        L : int
            Training symbols (>= 2; unused by the dense path).
        input_dim : int
            Input dimension p (2d for the symbol task).
        width, batch_size, models : int
            Hidden units m, batch size B and models trained in lockstep, >= 1.
        inputs : {"symbols", "noise", "images", "stamps"}, default "symbols"
            The models' training inputs (``INPUTS``); the symbol path trains
            on "symbols" only, the sparse path on "images" or "stamps" only.
        entries : float, optional
            The pixels an image that the sparse path multiplies
            (``task.sparse_entries()``), > 0: its size (it needs it); on the dense
            path, blurred images' rendering is priced by it where it is given.

        Raises
        ------
        ValueError, TypeError
            For a path this backend lacks, a size out of range, inputs other
            than "symbols" on the symbol path or "images" / "stamps" on the
            sparse path, or the sparse path without ``entries``.
        """
        check_choice("path", path, tuple(self.prices))
        check_choice("inputs", inputs, INPUTS)
        _check_path_inputs(path, inputs)
        L = check_int("L", L, 2)
        sizes = [check_int(n, v, 1) for n, v in (("input_dim", input_dim), ("width", width),
                                                 ("batch_size", batch_size), ("models", models))]
        p, m, B, M = sizes
        if path == "sparse" or entries is not None:
            entries = check_float("entries", entries, positive=True)
        features = _module(self.backend).step_features(path, L, B, m, p, M, inputs, entries)
        return predict(self.prices[path], features)

    def eval_seconds(self, *, input_dim, width, n_test, models=1, sources=1):
        """Predicted seconds of one test evaluation: ``sources`` test sets of ``n_test`` pairs
        (one per seed), ``models`` models; priced with the dense path's prices."""
        p, m, n, M, S = (check_int(k, v, 1) for k, v in (
            ("input_dim", input_dim), ("width", width), ("n_test", n_test), ("models", models),
            ("sources", sources)))
        return predict(self.prices["dense"], _module(self.backend).eval_features(p, m, n, M, S))

    def train_seconds(self, path, *, L, input_dim, width, batch_size, steps, eval_every,
                      n_test, models=1, sources=1, inputs="symbols", extra_evals=0,
                      entries=None):
        """Predicted seconds of ``train_ensemble``'s loop: its steps and its evaluations.

        ``extra_evals`` adds evaluations' worth of work after training (a scan
        cell's activation change is one). Other parameters as ``step_seconds``
        and ``eval_seconds``.
        """
        steps = check_int("steps", steps, 1)
        eval_every = check_int("eval_every", eval_every, 1)
        evals = -(-steps // eval_every) + check_int("extra_evals", extra_evals, 0)
        step = self.step_seconds(path, L=L, input_dim=input_dim, width=width,
                                 batch_size=batch_size, models=models, inputs=inputs,
                                 entries=entries)
        return steps * step + evals * self.eval_seconds(input_dim=input_dim, width=width,
                                                        n_test=n_test, models=models,
                                                        sources=sources)

    def choose(self, *, L, input_dim, width, batch_size):
        """The faster path of one clean symbol-task model trained alone: "symbol" or "dense".

        A model's path does not depend on the ensemble around it (nor on the
        threads), so neither do its numbers. Ties go to "dense".
        """
        if "symbol" not in self.prices:
            return "dense"
        sizes = dict(L=L, input_dim=input_dim, width=width, batch_size=batch_size)
        symbol, dense = (self.step_seconds(p, **sizes) for p in ("symbol", "dense"))
        return "symbol" if symbol < dense else "dense"

    def choose_images(self, *, input_dim, width, batch_size, entries, inputs="images"):
        """The faster path of an image-task model trained in a seed's group: "sparse" or
        "dense".

        The paths' costs a model are compared in an ensemble of ``GROUP_MODELS`` models
        of one seed (a scan's group of gammas), whatever ensemble the model is in, so that
        its path, and its numbers, do not depend on the models around it. The sparse
        path's cost a model falls in such a group (the inputs and h0 are formed once),
        the dense path's does not: near their crossover a model alone may take the
        sparse path when the dense one would have been faster alone (Pentomino at width
        2: 1.00 against 1.13 ms a step alone, measured, but 0.70 against 1.12 in a group;
        priced 1.06 against 1.07 alone, 0.67 against 1.06 in a group).

        ``entries`` is the task's pixels an image that the sparse path multiplies
        (``task.sparse_entries()``), ``inputs`` "images" or "stamps"
        (``image_inputs(task)``). Ties, and prices without the sparse path, go to
        "dense".
        """
        if "sparse" not in self.prices:
            return "dense"
        sizes = dict(L=2, input_dim=input_dim, width=width, batch_size=batch_size,
                     inputs=inputs, entries=entries, models=GROUP_MODELS)
        sparse = self.step_seconds("sparse", **sizes)
        return "sparse" if sparse < self.step_seconds("dense", **sizes) else "dense"

    def describe(self):
        """One line: what the prices are and where they come from."""
        m = self.machine or {}
        where = f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores"
        if self.source == "calibrated":
            return (f"{self.backend} {self.dtype} cost model calibrated on this machine ({where}) "
                    f"at {self.measured_at}")
        if self.source == "probed":
            f = m.get("probe", {})
            return (f"{self.backend} {self.dtype} cost model: the shipped prices ({where}) "
                    f"scaled to this machine by its probe (GEMM x{f.get('gemm', 1):.2f}, "
                    f"other x{f.get('scalar', 1):.2f}); `fastsd calibrate` measures it")
        return (f"{self.backend} {self.dtype} cost model: the shipped fallback prices "
                f"({where}); `fastsd calibrate` measures this machine")

    def to_json(self):
        """A JSON-ready dict of the model (``from_json`` reads it back)."""
        return {"backend": self.backend, "dtype": self.dtype, "prices": self.prices,
                "source": self.source, "machine": self.machine, "measured_at": self.measured_at,
                "points": list(self.points)}

    @classmethod
    def from_json(cls, data):
        """The model of a dict written by ``to_json``.

        Raises
        ------
        ValueError
            When a price is negative or not finite.
        """
        prices = {path: {str(u): float(v) for u, v in units.items()}
                  for path, units in data["prices"].items()}
        for path, units in prices.items():
            check_choice("path", path, PATHS)
            for unit, value in units.items():
                if not (np.isfinite(value) and value >= 0):
                    raise ValueError(f"`prices` must be finite and >= 0; got {value!r} for "
                                     f"{path} {unit!r}.")
        return cls(backend=data["backend"], dtype=data["dtype"], prices=prices,
                   source=data["source"], machine=data.get("machine"),
                   measured_at=data.get("measured_at"), points=tuple(data.get("points", ())))


def crossover(model, *, input_dim, width, batch_size, max_L=1 << 20):
    """The largest L for which ``model.choose`` picks the symbol path (1 where it never does).

    The symbol path's time grows with L and the dense path's does not depend
    on it, so "auto" picks the symbol path for every L up to this one.
    """
    sizes = dict(input_dim=input_dim, width=width, batch_size=batch_size)
    if model.choose(L=2, **sizes) != "symbol":
        return 1
    lo, hi = 2, check_int("max_L", max_L, 2)
    if model.choose(L=hi, **sizes) == "symbol":
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if model.choose(L=mid, **sizes) == "symbol" else (lo, mid)
    return lo


# -- this machine ----------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def machine_key(backend="cpu"):
    """What a calibration of ``backend`` depends on: CPU, cores, fastsd and its engines' sources,
    NumPy, SciPy, Numba. A stored calibration is used only where all are equal."""
    import numba
    import scipy

    from .._threads import cpu_count, cpu_model

    return {"backend": backend, "cpu": cpu_model(), "cores": cpu_count(),
            "fastsd": __version__, "sources": _jitcache.source_hash(parts=SOURCES),
            "numpy": np.__version__, "scipy": scipy.__version__, "numba": numba.__version__}


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


def fallback(backend="cpu", dtype="float32"):
    """The backend's shipped prices (``FALLBACK_PRICES``) as a ``CostModel``, as fitted."""
    check_choice("dtype", dtype, DTYPES)
    module = _module(backend)
    return CostModel(backend=backend, dtype=dtype, prices=module.FALLBACK_PRICES[dtype],
                     source="fallback", machine=module.FALLBACK_MACHINE)


#: The engine steps the machine probe times (``probe``): (path, L, d, width, batch size,
#: steps a run), one model, float32: dense steps, where the GEMMs weigh most, and symbol
#: steps, where scalar code does.
PROBES = (("dense", 16, 256, 1024, 128, 6), ("dense", 16, 64, 1024, 128, 12),
          ("symbol", 16, 256, 1024, 128, 120), ("symbol", 256, 256, 1024, 128, 12))


def probe(repeats=5):
    """This machine's time over the shipped prices' machine, for GEMM and other work, now.

    Times the "cpu" engine at ``PROBES`` (one thread, its CPU time; the probes take turns,
    ``repeats`` rounds, the fastest run of each kept) and fits the two factors of
    ``fastsd._probe`` to them: measured = f_gemm x (the shipped float32 prices'
    GEMM units) + f_scalar x (their other units), by non-negative least squares
    on relative error; the float64 GEMM factor, "gemm64"
    (``fastsd._probe.float64_gemm_seconds``), and the kernel entries' factor,
    "entries" (``fastsd._probe.kernel_entry_seconds``). About 1 s once the kernels
    are loaded.

    Returns
    -------
    dict of str to float
        {"gemm", "scalar", "gemm64", "entries"}: > 1 where this machine is slower; at
        least 0.05.
    """
    from scipy.optimize import nnls

    from .._threads import thread_limit

    module = _module("cpu")
    reference = fallback("cpu", "float32")
    parts, runs = [], []
    with thread_limit(1):
        for path, L, d, m, B, steps in PROBES:
            prices = reference.prices[path]
            features = module.step_features(path, L, B, m, 2 * d)
            gemm = {u: v for u, v in prices.items() if u in module.GEMM_UNITS}
            rest = {u: v for u, v in prices.items() if u not in module.GEMM_UNITS}
            parts.append([predict(gemm, features), predict(rest, features)])
            run = step_timer(path, L=L, d=d, width=m, batch_size=B, clock=_probe.clock)
            run(1)                  # load the kernels, warm the caches
            runs.append((run, steps))
        seconds = [math.inf] * len(runs)
        gemm64 = entries = math.inf
        for _ in range(check_int("repeats", repeats, 1)):
            for i, (run, steps) in enumerate(runs):
                seconds[i] = min(seconds[i], run(steps) / steps)
            gemm64 = min(gemm64, _probe.float64_gemm_seconds(repeats=1))
            entries = min(entries, _probe.kernel_entry_seconds(repeats=1))
    f, _ = nnls(np.array(parts) / np.array(seconds)[:, None], np.ones(len(seconds)))
    return {"gemm": float(max(f[0], 0.05)), "scalar": float(max(f[1], 0.05)),
            "gemm64": float(max(gemm64 / _probe.REFERENCE_FLOAT64_GEMM, 0.05)),
            "entries": float(max(entries / _probe.REFERENCE_KERNEL_ENTRY, 0.05))}


def machine_factors(environ=None):
    """This machine's factors against the shipped prices' machine (``fastsd._probe``):
    cached per machine, else measured by ``probe``; 1 under ``FASTSD_COSTS=fallback``."""
    return _probe.factors(probe, machine_key("cpu"), environ)


def probed(backend="cpu", dtype="float32", environ=None):
    """The shipped prices scaled to this machine by ``fastsd._probe`` (source "probed").

    A backend module that names its GEMM units (``GEMM_UNITS``, the host's BLAS) has
    those scaled by ``fastsd._probe``'s "gemm" factor and the others by its "scalar"
    factor; one that names none (the GPU's nominal prices) keeps its prices.
    """
    model = fallback(backend, dtype)
    units = getattr(_module(backend), "GEMM_UNITS", None)
    if units is None:
        return model
    factors = machine_factors(environ)
    kinds = dict.fromkeys(units, "gemm")
    prices = {path: _probe.scale(p, factors, kinds) for path, p in model.prices.items()}
    return CostModel(backend=backend, dtype=dtype, prices=prices, source="probed",
                     machine=dict(model.machine, probe={k: round(v, 3)
                                                        for k, v in factors.items()}))


def path_model(backend="cpu", dtype="float32"):
    """The prices ``path="auto"`` chooses by: the backend's shipped prices, as fitted.

    Never this machine's probe or calibration (``load``, which predicts times): the path a
    run takes, and hence its numbers, is then a function of the problem, the backend, the
    dtype and fastsd's version alone, the same after the probe is redone or on another
    machine.
    """
    return fallback(backend, dtype)


def load(backend="cpu", dtype="float32", environ=None):
    """The cost model that predicts times: this machine's calibration, else the fallback
    scaled by the probe (``path="auto"`` chooses by ``path_model`` instead).

    Parameters
    ----------
    backend : {"cpu", "cuda"}
    dtype : {"float32", "float64"}
    environ : mapping, optional
        Environment variables (default ``os.environ``): ``FASTSD_COSTS``
        ("auto" or "fallback") and those of the cache root.

    Raises
    ------
    ValueError
        For a backend with one path, an unknown dtype or a bad ``FASTSD_COSTS``.
    """
    environ = os.environ if environ is None else environ
    check_choice("dtype", dtype, DTYPES)
    _module(backend)
    mode = environ.get(ENV) or "auto"
    check_choice(ENV, mode, ("auto", "fallback"))
    if mode == "fallback":
        return fallback(backend, dtype)
    model = cached(backend, dtype, environ)
    return model if model is not None else probed(backend, dtype, environ)


# -- calibration -------------------------------------------------------------------------

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
    _check_path_inputs(path, inputs)
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
               backend="cpu", clock=time.perf_counter):
    """A function ``run(n)`` that trains n steps of ``train_ensemble``'s engine on ``path``
    and returns the seconds they took by ``clock`` (wall time by default; the probe takes
    the thread's CPU time, ``fastsd._probe.clock``).

    ``models`` models of one seed (as a scan's group: the same batches, the
    same initialisation) train on the shape's task (``_calibration_task``:
    the symbol task, clean or noisy, Pentomino or PSVRT images); each call draws its
    batches and runs the engine, as one evaluation window of training does.
    It runs on the threads it is called under (``measure`` limits them to one).
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
    (_, engine), = build_engines(_module(backend), [task] * models, [path] * models,
                                 [params0] * models, [task.output_scale(1.0)] * models,
                                 [task.learning_rate(1.0, task.default_alpha0)] * models, dtype)
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


def fit(backend, path, points):
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
    module = _module(backend)
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
        A backend with two paths and a ``CALIBRATION`` (today "cpu").
    dtype : {"float32", "float64"}
    shapes : sequence of tuple, optional
        (path, L, d, width, batch_size, models, inputs) to time; default the
        backend's ``CALIBRATION``. Every path needs at least one.
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
    module = _module(backend)
    if shapes is None:
        if not hasattr(module, "CALIBRATION"):
            raise ValueError(f"`backend` must have calibration shapes to calibrate; got "
                             f"{backend!r}, whose cost model is its nominal FALLBACK_PRICES.")
        shapes = module.CALIBRATION
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
    prices = {path: fit(backend, path, [pt for pt in points if pt["path"] == path])
              for path in priced}
    model = CostModel(backend=backend, dtype=dtype, prices=prices, source="calibrated",
                      machine=machine_key(backend),
                      measured_at=datetime.datetime.now(datetime.timezone.utc).strftime(
                          "%Y-%m-%dT%H:%M:%SZ"),
                      points=tuple(points))
    if save:
        write(model, environ)
    return model
