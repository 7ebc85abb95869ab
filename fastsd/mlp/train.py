"""SGD training of centered ReLU MLPs on same-different tasks (Sec. 2, App. F-G)."""
import inspect
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import __version__
from .._dispatch import cuda_simulator, resolve_backend
from .._json import strict_json
from .._rng import seed_sequence, train_streams
from .._validation import check_choice, check_float, check_int, check_seed
from ..tasks.base import Task
from . import _engines
from .evaluate import output
from .model import INITS, Params, init_params

PATHS = ("auto", "dense", "symbol")
DTYPES = ("float32", "float64")
BATCHES = ("host", "device")


@dataclass(eq=False, repr=False)
class TrainResult:
    """Outcome of one training run.

    Attributes
    ----------
    best_test_accuracy : float
        Maximum test accuracy over the evaluations (App. G.1).
    final_test_accuracy : float
        Test accuracy at the last evaluation (after the last step).
    history : dict of ndarray
        "step", "train_loss", "train_accuracy", "test_accuracy", one entry per
        evaluation. Train loss and accuracy are means over the training
        batches since the previous evaluation, measured before each update.
    initial_params, final_params : Params
        Weights at initialisation and after training, float64.
    config : dict
        gamma, width, steps, batch_size, alpha0, lr, seed, init, backend, path,
        dtype, batches, the task's description and the package version.
    wall_time : float
        Seconds spent training this model (shared evenly in an ensemble).
    diverged : bool
        True when the training loss became NaN or inf; the accuracies are then
        those of a broken model.
    """

    best_test_accuracy: float
    final_test_accuracy: float
    history: dict
    initial_params: Params
    final_params: Params
    config: dict = field(default_factory=dict)
    wall_time: float = 0.0
    diverged: bool = False

    def __repr__(self):
        c = self.config
        shown = ", ".join(f"{k}={c[k]!r}" for k in ("task", "d", "L", "gamma", "width", "steps",
                                                     "seed") if k in c)
        return (f"TrainResult({shown}, best_test_accuracy={self.best_test_accuracy:.4f}, "
                f"diverged={self.diverged})")

    def predict(self, x):
        """Centered outputs f~(x) of the trained model (App. F), in float64.

        Parameters
        ----------
        x : array_like, shape (n, p)
            Input pairs; p must equal the task's input dimension (2d).

        Returns
        -------
        ndarray, shape (n,), float64
            Logits; the predicted label is 1 (same) where the logit is > 0.

        Raises
        ------
        ValueError
            When ``x`` has the wrong shape or contains NaN or inf.
        """
        return output(self.final_params, x, scale=self.config["output_scale"],
                      initial=self.initial_params)

    def to_record(self):
        """Return a JSON-ready dict: the config, the accuracies and the history."""
        rec = dict(self.config)
        rec.update(best_test_accuracy=self.best_test_accuracy,
                   final_test_accuracy=self.final_test_accuracy,
                   wall_time=self.wall_time, diverged=self.diverged,
                   history=strict_json(self.history))
        return rec


def _task_config(task):
    cfg = {"task": type(task).__name__}
    for name in ("d", "L", "sigma2", "root_d"):
        if hasattr(task, name):
            cfg[name] = getattr(task, name)
    if hasattr(task, "seed_entropy"):
        cfg["task_seed_entropy"] = int(task.seed_entropy)
    return cfg


def _test_sources(tasks, seed_seqs):
    """For each model, the first model that draws the same test sets (itself if none).

    Equal test keys and equal seeds give identical test streams, so an
    ensemble of several gammas on one seed samples its test sets once.
    """
    first = {}
    out = []
    for k, (task, ss) in enumerate(zip(tasks, seed_seqs)):
        key = task.test_key()
        if key is None or not isinstance(ss, np.random.SeedSequence):
            out.append(k)
            continue
        ident = (key, ss.entropy, ss.spawn_key, ss.pool_size)
        out.append(first.setdefault(ident, k))
    return out


def step_costs(L, batch_size, width, input_dim, backend="cpu"):
    """Relative cost of one SGD step on the (symbol, dense) paths; see ``_cpu`` and ``_cuda``.

    Parameters
    ----------
    L, batch_size, width, input_dim : int
        Training symbols, batch size B, hidden units m and input dimension p = 2d.
    backend : {"cpu", "cuda"}

    Returns
    -------
    (float, float)
        Operation counts of a step in the symbol basis and on dense inputs.
    """
    L, B, m, p = L, batch_size, width, input_dim
    if backend == "cuda":
        # the GPU does every symbol row: a B x L scatter and an L x L GEMM
        # per step, against two B x p x m GEMMs (h0 is a gather)
        return float(2 * L * (B + L) * m), float(4 * B * p * m)
    return float(2 * L * min(L, B) * m + 4 * B * m), float(3 * B * p * m)


def _choose_path(task, width, batch_size, path, backend="cpu"):
    """Pick "dense" or "symbol" by cost (``step_costs``)."""
    if path == "symbol" and not task.has_symbol_basis:
        raise ValueError(
            f"`path` must be 'dense' or 'auto' for {task!r}: the symbol-basis path needs a "
            f"task whose inputs lie in the span of fixed symbols (sigma2 = 0); got 'symbol'.")
    if path != "auto":
        return path
    if not task.has_symbol_basis:
        return "dense"
    cost_symbol, cost_dense = step_costs(task.L, batch_size, width, task.input_dim, backend)
    return "symbol" if cost_symbol < cost_dense else "dense"


def _recorded_seed(ss):
    """The integer that rebuilds a model's streams: the entropy of its SeedSequence.

    For ``seed=None`` this is the fresh entropy drawn, so that the run can be
    repeated. A Generator passed as seed cannot be recorded (None).
    """
    if isinstance(ss, np.random.Generator) or ss.spawn_key:
        return None
    return int(ss.entropy)


def _broadcast(name, value):
    if isinstance(value, (list, tuple, np.ndarray)):
        if len(value) == 0:
            raise ValueError(f"`{name}` must be a non-empty sequence or a scalar; got an empty one.")
        return list(value)
    return [value]


def train_ensemble(task, gamma, seed, *, width, steps, batch_size=128, alpha0=None,
                   eval_every=1000, n_test=1024, backend="auto", dtype=None, path="auto",
                   init="normal", batches="host", progress=False):
    """Train many centered MLPs in lockstep, one batched computation per step.

    ``task``, ``gamma`` and ``seed`` may each be one value or a sequence;
    sequences are broadcast against each other (lengths must match, or be 1)
    and model k gets (task[k], gamma[k], seed[k]). All tasks must share the
    input dimension. Model k's result equals ``train(task[k], gamma[k],
    seed=seed[k], ...)`` with the same other arguments: each model draws its
    initialisation, batches and test sets from its own seed, and the kernels
    do the same arithmetic for a model whatever the ensemble around it.

    Parameters
    ----------
    task : Task or sequence of Task
    gamma : float or sequence of float
        Richness, > 0 (Eq. 1). The paper's "gamma ~ 0" is 1e-5/sqrt(d).
    seed : int, None or sequence of them
        Per-model seeds (init, batches, noise and test sets derive from it).
        None draws fresh entropy, recorded as ``config["seed"]`` so that the
        run can be repeated.
    width : int
        Hidden units m, >= 1.
    steps : int
        SGD steps, >= 1.
    batch_size : int, default 128
    alpha0 : float, optional
        Base learning rate; default the task's (0.1 for ``SameDifferent``).
        The step size is alpha = gamma^2 d alpha0 for gamma <= 1 and
        gamma sqrt(d) alpha0 for gamma > 1 (App. G.1).
    eval_every : int, default 1000
        Steps between test evaluations; the last step is always evaluated.
    n_test : int, default 1024
        Fresh test pairs per evaluation.
    backend : {"auto", "numpy", "cpu", "cuda"}
        "numpy" is the float64 reference; "cpu" the Numba kernels; "cuda"
        CuPy (cuBLAS) GEMMs batched over the ensemble and Numba-CUDA fused
        kernels (``fastsd.mlp._cuda``). Under ``NUMBA_ENABLE_CUDASIM=1`` the
        "cuda" path runs on Numba's CPU simulator with NumPy arrays (for
        tests; very slow), and needs no CuPy.
    dtype : {"float32", "float64"}, optional
        Default float32 on "cpu" and "cuda", float64 on "numpy" (which has
        only float64). No reduced precision (TF32, bf16) is offered.
    path : {"auto", "dense", "symbol"}
        "symbol" trains in the span of the L symbols at a cost independent of
        d (clean symbol tasks only, "cpu" and "cuda" backends); "auto" picks
        by cost.
    init : {"normal", "truncated"}
        See ``fastsd.mlp.model.init_params``.
    batches : {"host", "device"}, default "host"
        Where the training batches are drawn. "host": from the seed's NumPy
        streams, the same batches on every backend (with "cuda" they are
        uploaded once per evaluation window; for noisy tasks the inputs are
        uploaded in chunks). "device" (backend "cuda" only): drawn on the GPU
        by a counter-based Philox4x32-10 generator keyed from the model's
        seed, so nothing crosses to the device inside the loop; reproducible
        for a seed, independent of the ensemble, but not the same draws as
        the host streams (same distribution: balanced same/different pairs,
        Gaussian noise).
    progress : bool
        Show a progress bar over steps.

    Returns
    -------
    list of TrainResult

    Raises
    ------
    ValueError, TypeError
        For a parameter out of range, with its name and valid range.
    BackendUnavailableError
        When an explicitly requested backend cannot run here.
    """
    tasks, gammas, seeds = (_broadcast(n, v) for n, v in
                            (("task", task), ("gamma", gamma), ("seed", seed)))
    M = max(len(tasks), len(gammas), len(seeds))
    for name, seq in (("task", tasks), ("gamma", gammas), ("seed", seeds)):
        if len(seq) not in (1, M):
            raise ValueError(f"`{name}` must have length 1 or {M} to match the other "
                             f"sequences; got length {len(seq)}.")
    tasks, gammas, seeds = ([s[0]] * M if len(s) == 1 else s for s in (tasks, gammas, seeds))
    for t in tasks:
        if not isinstance(t, Task):
            raise TypeError(f"`task` must be a fastsd task such as SameDifferent; got {t!r}.")
    if len({t.input_dim for t in tasks}) != 1:
        raise ValueError("`task` must share one input dimension across the ensemble; got "
                         f"{sorted({t.input_dim for t in tasks})}.")
    gammas = [check_float("gamma", g, positive=True) for g in gammas]
    seeds = [check_seed("seed", s) for s in seeds]
    width = check_int("width", width, minimum=1)
    steps = check_int("steps", steps, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    eval_every = check_int("eval_every", eval_every, minimum=1)
    n_test = check_int("n_test", n_test, minimum=1)
    check_choice("path", path, PATHS)
    check_choice("init", init, INITS)
    check_choice("batches", batches, BATCHES)
    # under the simulator the "cuda" engines run on NumPy arrays, without CuPy
    backend = resolve_backend(backend, needs_cupy=not cuda_simulator())
    if batches == "device" and backend != "cuda":
        raise ValueError(f"`batches` must be 'host' with backend {backend!r} ('device' needs "
                         f"backend 'cuda'); got 'device'.")
    if dtype is None:
        dtype = "float64" if backend == "numpy" else "float32"
    dtype = np.dtype(dtype).name if isinstance(dtype, (type, np.dtype)) else dtype
    check_choice("dtype", dtype, DTYPES)
    if backend == "numpy":
        if dtype != "float64":
            raise ValueError(f"`dtype` must be 'float64' with backend 'numpy'; got {dtype!r}.")
        if path == "symbol":
            raise ValueError("`path` must be 'dense' or 'auto' with backend 'numpy' (the "
                             "reference is dense); got 'symbol'.")
    alpha0s = [t.default_alpha0 if alpha0 is None else check_float("alpha0", alpha0, positive=True)
               for t in tasks]

    seed_seqs = [s if isinstance(s, np.random.Generator) else seed_sequence(s) for s in seeds]
    start = time.perf_counter()
    streams = [train_streams(s) for s in seed_seqs]
    params0 = [init_params(st["init"], width, t.input_dim, init) for st, t in zip(streams, tasks)]
    scales = [t.output_scale(g) for t, g in zip(tasks, gammas)]
    lrs = [t.learning_rate(g, a0) for t, g, a0 in zip(tasks, gammas, alpha0s)]
    for g, sc, lr in zip(gammas, scales, lrs):
        if not (math.isfinite(sc) and math.isfinite(lr) and lr > 0):
            raise ValueError(f"`gamma` must give a finite output scale and a learning rate > 0 "
                             f"with this alpha0; got gamma={g!r} (scale {sc!r}, learning rate "
                             f"{lr!r}).")
    paths = ["dense" if backend == "numpy" else _choose_path(t, width, batch_size, path, backend)
             for t in tasks]

    groups = {}
    for k, (t, pth) in enumerate(zip(tasks, paths)):
        key = ("symbol", t.L) if pth == "symbol" else ("dense",)
        groups.setdefault(key, []).append(k)
    engines = []
    for key, idx in groups.items():
        args = ([tasks[k] for k in idx], [params0[k] for k in idx], [scales[k] for k in idx],
                [lrs[k] for k in idx], dtype)
        if backend == "cuda":
            from . import _cuda
            cls = _cuda.SymbolEngine if key[0] == "symbol" else _cuda.DenseEngine
            keys = None
            if batches == "device":     # Philox keys (pairs, noise) from the model's streams
                keys = [[_cuda.philox_keys(streams[k][s].integers(2**64, dtype=np.uint64,
                                                                  size=1))[0]
                         for s in ("pairs", "noise")] for k in idx]
            engines.append((idx, cls(*args, device_keys=keys)))
        else:
            cls = (_engines.ReferenceEngine if backend == "numpy" else
                   _engines.SymbolEngine if key[0] == "symbol" else _engines.DenseEngine)
            engines.append((idx, cls(*args)))

    test_source = _test_sources(tasks, seed_seqs)
    hist = {k: [] for k in ("step", "train_loss", "train_accuracy", "test_accuracy")}
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=steps, unit="step", desc=f"training {M} model(s)")
    t = 0
    while t < steps:
        n = min(eval_every, steps - t)
        if batches == "host":
            pairs = [task.draw_pairs(st["pairs"], (n, batch_size))
                     for task, st in zip(tasks, streams)]
        loss = np.empty(M)
        acc = np.empty(M)
        for idx, eng in engines:
            if batches == "device":
                lo, ac = eng.run_device(n, batch_size)
            else:
                lo, ac = eng.run([pairs[k] for k in idx], [streams[k]["noise"] for k in idx])
            loss[idx] = lo.mean(axis=1)
            acc[idx] = ac.mean(axis=1)
        t += n
        tests = [task.sample_test(n_test, st["test"]) if test_source[k] == k else None
                 for k, (task, st) in enumerate(zip(tasks, streams))]
        tests = [tests[test_source[k]] for k in range(M)]
        test_acc = np.empty(M)
        for idx, eng in engines:
            f = eng.outputs([tests[k][0] for k in idx],
                            sources=[test_source[k] for k in idx])
            test_acc[idx] = [np.mean((fk > 0) == (tests[k][1] > 0.5)) for fk, k in zip(f, idx)]
        hist["step"].append(np.full(M, t))
        hist["train_loss"].append(loss)
        hist["train_accuracy"].append(acc)
        hist["test_accuracy"].append(test_acc)
        if bar is not None:
            bar.update(n)
    if bar is not None:
        bar.close()
    wall = (time.perf_counter() - start) / M

    inits, finals = [None] * M, [None] * M
    for idx, eng in engines:
        ini, fin = eng.params()
        for j, k in enumerate(idx):
            inits[k], finals[k] = ini[j], fin[j]
    hist = {k: np.stack(v, axis=1) for k, v in hist.items()}
    results = []
    for k in range(M):
        h = {name: arr[k] for name, arr in hist.items()}
        h["step"] = h["step"].astype(int)
        config = dict(_task_config(tasks[k]), gamma=gammas[k], width=width, steps=steps,
                      batch_size=batch_size, alpha0=alpha0s[k], lr=lrs[k],
                      output_scale=scales[k],
                      seed=_recorded_seed(seed_seqs[k]),
                      init=init, backend=backend, path=paths[k], dtype=dtype, batches=batches,
                      eval_every=eval_every, n_test=n_test, version=__version__)
        results.append(TrainResult(
            best_test_accuracy=float(h["test_accuracy"].max()),
            final_test_accuracy=float(h["test_accuracy"][-1]),
            history=h, initial_params=inits[k], final_params=finals[k],
            config=config, wall_time=wall,
            diverged=not bool(np.all(np.isfinite(h["train_loss"])))))
    return results


def train(task, gamma, *, width, steps, seed=None, **kwargs):
    """Train one centered two-layer ReLU MLP with SGD on binary cross-entropy.

    The model is f~(x) = f(x; theta) - f(x; theta(0)) with
    f(x) = (1/(gamma sqrt(d))) sum_i a_i relu(w_i . x) (Eq. 1, App. F), trained
    with plain SGD at alpha = gamma^2 d alpha0 (gamma <= 1) or
    gamma sqrt(d) alpha0 (gamma > 1) (App. G.1). Test accuracy is measured
    every ``eval_every`` steps on fresh symbols; the reported accuracy is the
    best over the history, as in the paper.

    Parameters
    ----------
    task : Task
        For example ``SameDifferent(d, L)``.
    gamma : float
        Richness, > 0.
    width, steps, seed
        Hidden units m >= 1, SGD steps >= 1, and the model's seed.
    **kwargs
        batch_size, alpha0, eval_every, n_test, backend, dtype, path, init,
        batches, progress: see ``train_ensemble``.

    Returns
    -------
    TrainResult

    Raises
    ------
    ValueError, TypeError, BackendUnavailableError
        As ``train_ensemble``.

    Examples
    --------
    >>> from fastsd import SameDifferent, train
    >>> r = train(SameDifferent(d=32, L=8, seed=0), gamma=1.0, width=64, steps=200,
    ...           eval_every=100, seed=1)
    >>> 0.5 <= r.best_test_accuracy <= 1.0
    True
    """
    unknown = sorted(set(kwargs) - _ENSEMBLE_OPTIONS)
    if unknown:
        raise TypeError(f"train() got an unexpected keyword argument {unknown[0]!r}; valid: "
                        f"{', '.join(sorted(_ENSEMBLE_OPTIONS))}.")
    for name, value in (("gamma", gamma), ("seed", seed), ("task", task)):
        if isinstance(value, (list, tuple, np.ndarray)):
            raise TypeError(f"`{name}` must be a single value in train (use train_ensemble "
                            f"for many); got {value!r}.")
    return train_ensemble(task, gamma, seed, width=width, steps=steps, **kwargs)[0]


#: The keyword options ``train`` passes on to ``train_ensemble``.
_ENSEMBLE_OPTIONS = {name for name, p in inspect.signature(train_ensemble).parameters.items()
                     if p.kind is inspect.Parameter.KEYWORD_ONLY} - {"width", "steps"}
