"""SGD training of centered ReLU MLPs on same-different tasks (Sec. 2, App. F-G)."""
import collections.abc
import inspect
import time
import warnings
from dataclasses import dataclass, field
from typing import List, Literal, Optional, Sequence, Union, Unpack

import numpy as np

from .. import __version__, _progress, _threads
from .._calls import Spans
from .._dispatch import FAMILIES, check_dtype, traits
from .._json import strict_json
from .._rng import recorded_seed, seed_sequence, train_streams
from .._memory import Need, check_fits, need
from .._validation import check_choice, check_float, check_seed
from .._types import (BackendName, DtypeLike, GammaLike, PathName, SeedLike, TrainOptions,
                      TrainingSettings)
from ..activations import Activation, get_activation
from ..conventions import is_lazy
from ..params import TRAINING, Bound
from ..schedules import Evaluations
from ..tasks.base import BatchStream, Task, task_identity
from ..tasks.symbols import SameDifferent
from . import costs, prices
from .engines import build_engines
from .evaluate import output
from .model import Params, init_params

PATHS = ("auto", "dense", "symbol", "sparse")
#: The mlp's backends: ``_reference``, ``_cpu`` and ``_cuda`` each define ``ENGINES`` (and,
#: with two paths, the form of their cost model: ``step_features``, ``fastsd.mlp.prices``).
#: Under the simulator the "cuda" engines hold NumPy arrays, so only a real GPU needs CuPy.
FAMILY = FAMILIES["mlp"]
DTYPES = ("float32", "float64")
BATCHES = ("host", "device")
#: ``train_ensemble``'s keywords of where and how it runs (the others: ``TRAINING``).
_HOW = ("backend", "dtype", "path", "batches", "progress")


def _setting(key, doc):
    """A read-only property of ``TrainResult`` that reads ``config[key]``."""
    def get(self):
        try:
            return self.config[key]
        except KeyError:
            raise AttributeError(f"this TrainResult has no setting {key!r} (its task "
                                 f"{self.config.get('task')!r} does not have one)") from None
    return property(get, doc=doc)


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
    sigma : fastsd.activations.Activation or None
        The activation that trained it (``predict`` computes with it: a user's may be in no
        registry); None where the result was made otherwise, then ``predict`` takes the
        activation its config names.

    Notes
    -----
    The settings are also read-only attributes over ``config``: ``gamma``,
    ``d``, ``L``, ``sigma2``, ``width``, ``steps``, ``seed``, ``batch_size``,
    ``alpha0``, ``lr``, ``eval_every``, ``eval_at``, ``n_test``, ``init``, ``backend``,
    ``path``, ``dtype``, ``batches`` (``d``, ``L`` and ``sigma2`` where the
    task has them; an AttributeError otherwise).
    """

    best_test_accuracy: float
    final_test_accuracy: float
    history: dict
    initial_params: Params
    final_params: Params
    config: dict = field(default_factory=dict)
    wall_time: float = 0.0
    diverged: bool = False
    sigma: Optional[Activation] = None

    gamma = _setting("gamma", "Richness gamma of the run (a number; \"lazy\" is stored resolved).")
    d = _setting("d", "Symbol dimension d of the task (symbol tasks).")
    L = _setting("L", "Number of training symbols or items L of the task.")
    sigma2 = _setting("sigma2", "Input noise variance of the task (symbol tasks).")
    width = _setting("width", "Hidden units m.")
    steps = _setting("steps", "SGD steps trained.")
    seed = _setting("seed", "The integer that repeats the run (None for a Generator seed).")
    batch_size = _setting("batch_size", "Pairs per SGD step.")
    alpha0 = _setting("alpha0", "Base learning rate alpha0.")
    lr = _setting("lr", "SGD step size alpha derived from gamma and alpha0 (App. G.1).")
    eval_every = _setting("eval_every", "Steps between test evaluations.")
    eval_at = _setting("eval_at", "Extra evaluation steps: None, \"log\" or \"1,3,10\" "
                       "(``fastsd.schedules``).")
    n_test = _setting("n_test", "Fresh test pairs per evaluation.")
    init = _setting("init", "Initialisation, \"normal\" or \"truncated\".")
    backend = _setting("backend", "Backend the run used: \"numpy\", \"cpu\" or \"cuda\".")
    path = _setting("path", "Training path used: \"dense\", \"symbol\" or \"sparse\".")
    dtype = _setting("dtype", "Floating-point type of the training arithmetic.")
    batches = _setting("batches", "Where the batches were drawn: \"host\" or \"device\".")

    @property
    def activation(self):
        """The hidden units' activation, by name ("relu" where the config names none)."""
        return self.config.get("activation", "relu")

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
        # the Activation that trained it (one of the user's may be in no registry), else
        # the name its config records
        act = self.sigma or self.activation
        return output(self.final_params, x, scale=self.config["output_scale"],
                      initial=self.initial_params, activation=act)

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
        cfg.update(task_identity(task))
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


def step_costs(L, batch_size, width, input_dim, backend="cpu", dtype="float32"):
    """Predicted cost of one SGD step of one model on the (symbol, dense) paths of a backend.

    Parameters
    ----------
    L, batch_size, width, input_dim : int
        Training symbols, batch size B, hidden units m and input dimension p = 2d.
    backend : {"cpu", "cuda"}
        A backend with both paths.
    dtype : {"float32", "float64"}

    Returns
    -------
    (float, float)
        Seconds per step, one thread, in the symbol basis and on dense inputs,
        from the model that predicts times here (``fastsd.mlp.costs.time_model``:
        this machine's calibration, else the shipped prices scaled by its probe;
        ``path="auto"`` chooses by the shipped prices, ``fastsd.mlp.prices.path_model``).
    """
    model = costs.time_model(backend, dtype)
    sizes = dict(L=L, input_dim=input_dim, width=width, batch_size=batch_size)
    return model.step_seconds("symbol", **sizes), model.step_seconds("dense", **sizes)


def _choose_path(task, width, batch_size, path, backend, module, dtype, activation):
    """Pick one of the backend's paths (``module.ENGINES``): as asked, or the faster one by
    the backend's shipped prices (``fastsd.mlp.prices.path_model``: never a measured time),
    for this model alone (symbol tasks) or in a seed's group (image tasks, ``choose_images``);
    of those that train ``activation`` (ReLU: all; any other: an engine's ``any_activation``)."""
    applies = {"symbol": task.has_symbol_basis, "sparse": task.has_sparse_inputs}
    if not applies.get(path, True):
        valid = [repr(p) for p in [*module.ENGINES, "auto"] if applies.get(p, True)]
        why = {"symbol": "the symbol-basis path needs a task whose inputs lie in the span of "
                         "fixed symbols (sigma2 = 0)",
               "sparse": "the sparse path needs a task whose training inputs are mostly zeros "
                         "(PSVRT, Pentomino)"}[path]
        raise ValueError(f"`path` must be {', '.join(valid[:-1])} or {valid[-1]} for {task!r} "
                         f"with backend {backend!r}: {why}; got {path!r}.")
    if path != "auto" and path not in module.ENGINES:
        allowed = " or ".join(repr(p) for p in [*module.ENGINES, "auto"])
        raise ValueError(f"`path` must be {allowed} with backend {backend!r}; got {path!r}.")
    chosen = path if path != "auto" else _fastest_path(task, width, batch_size, backend, module,
                                                       dtype)
    takes = [p for p, engine in module.ENGINES.items() if applies.get(p, True) and (
        activation.name == "relu" or getattr(engine, "any_activation", False))]
    if chosen in takes:
        return chosen
    if path == "auto" and takes:
        return "dense" if "dense" in takes else takes[0]
    where = ("no path of this backend trains it: backend 'cpu' or 'numpy' does" if not takes
             else f"path {takes[0]!r} trains it" if len(takes) == 1
             else f"paths {', '.join(map(repr, takes))} train it")
    raise ValueError(f"`activation` must be 'relu' on path {chosen!r} of backend {backend!r} "
                     f"({where}); got {activation.name!r}.")


def _fastest_path(task, width, batch_size, backend, module, dtype):
    """``_choose_path``'s pick by the shipped prices, for ``path="auto"``."""
    if len(module.ENGINES) == 1:
        return "dense"
    if task.has_sparse_inputs and "sparse" in module.ENGINES:
        return prices.path_model(backend, dtype).choose_images(
            input_dim=task.input_dim, width=width, batch_size=batch_size,
            entries=task.sparse_entries(), inputs=prices.image_inputs(task))
    if not task.has_symbol_basis:
        return "dense"
    return prices.path_model(backend, dtype).choose(L=task.L, input_dim=task.input_dim,
                                                   width=width, batch_size=batch_size)


def _is_many(value):
    """True for a sequence or other iterable of values (list, range, array, generator, ...).

    A string, a task, a SeedSequence, a Generator and a 0-d array are one value.
    """
    if isinstance(value, (str, bytes, Task, np.random.SeedSequence, np.random.Generator)):
        return False
    if isinstance(value, np.ndarray):
        return value.ndim > 0
    return isinstance(value, collections.abc.Iterable)


def _broadcast(name, value):
    if isinstance(value, (collections.abc.Set, collections.abc.Mapping)):
        raise TypeError(f"`{name}` must be one value or an ordered sequence of values, one per "
                        f"model (a list, tuple, range or 1-d array); got a "
                        f"{type(value).__name__}, whose order does not say which model takes "
                        f"which value: {value!r:.60}.")
    if isinstance(value, np.ndarray) and value.ndim > 1:
        raise ValueError(f"`{name}` must be one value or a 1-d sequence of values (one per "
                         f"model); got an array of shape {value.shape}.")
    if _is_many(value):
        value = list(value)
        if len(value) == 0:
            raise ValueError(f"`{name}` must be a non-empty sequence or a scalar; got an empty one.")
        return value
    return [value]


#: Bytes of Python state per model besides its arrays (seed, generators, result), measured.
_MODEL_BYTES = 8 << 10


def _models_need(M, sizer):
    """The per-model state of M models, ``sizer`` the argument that sets M."""
    return Need(M * _MODEL_BYTES, f"the per-model state ({M} models x 8 KiB: seeds, generators, "
                f"results)", sizer, f"{M} values", "train fewer models per call")


def _memory_needs(tasks, paths, test_sources, M, width, batch_size, n_test, itemsize, sizer):
    """The allocations of ``train_ensemble`` that scale with its sizes, as ``Need``s.

    ``sizer`` names the argument that sets the number of models M.
    Each need blames the largest of the sizes it is a product of.
    """
    p, m, B, T = tasks[0].input_dim, width, batch_size, n_test
    sizes = {"models": (sizer, M, f"{M} values", "train fewer models per call"),
             "width": ("width", m), "n_test": ("n_test", T), "batch_size": ("batch_size", B),
             "inputs": (("d", p, tasks[0].d) if isinstance(tasks[0], SameDifferent) else
                        ("task", p, repr(tasks[0]), f"use a task with fewer inputs than {p}"))}

    def part(nbytes, what, *factors):
        return need(nbytes, what, *(sizes[f] for f in factors))

    many = "model" if M == 1 else "models"
    n_sets = len(set(test_sources))
    needs = [
        # initial float64, the engine's w0 and displacement, the results' initial and final
        part(M * m * p * (8 + 2 * itemsize + 16), f"the hidden weights ({M} {many} x {m} units "
             f"x {p} inputs, in float64 and {8 * itemsize}-bit copies)", "width", "models",
             "inputs"),
        # a block of steps' pair indices and labels (and their draws' temporaries)
        part(M * BatchStream.BLOCK * B * 48, f"the training batches ({M} {many} x "
             f"{BatchStream.BLOCK} steps x {B} pairs)", "batch_size", "models"),
        part(M * B * (p * (itemsize + 16) + 3 * m * itemsize), f"one step's inputs and "
             f"activations ({M} {many} x {B} pairs x ({p} inputs + 3 x {m} units))",
             "batch_size", "models", "inputs", "width"),
        # a test set per distinct source (pairs and their fresh items), held together
        part(n_sets * T * p * (24 + itemsize), f"the test sets ({n_sets} x {T} pairs x {p} "
             f"inputs)", "n_test", "inputs", "models"),
        part(M * T * m * 2 * itemsize, f"the test activations ({M} {many} x {T} pairs x {m} "
             f"units)", "n_test", "width", "models"),
        _models_need(M, sizer)]
    for task, path in zip(tasks, paths):
        if path == "symbol":       # symbols, Gram matrix and six L x m coordinate arrays
            L, d = task.L, task.d
            needs.append(Need(M * L * (d + L + 6 * m) * itemsize, f"the symbol-basis state "
                              f"({M} {many} x {L} symbols x ({d} + {L} + 6 x {m}))", "L", L,
                              "use a task with a smaller `L`, or path='dense'"))
            break
    return needs


@_threads.computing        # BLAS on one thread; fastsd's team runs the GEMMs in fixed blocks
@TRAINING.keywords
def train_ensemble(task: Union[Task, Sequence[Task]],
                   gamma: Union[GammaLike, Sequence[GammaLike]],
                   seed: Union[SeedLike, Sequence[SeedLike]], *, backend: BackendName = "auto",
                   dtype: DtypeLike = None, path: PathName = "auto",
                   batches: Literal["host", "device"] = "host", progress: bool = False,
                   config: Optional[Bound] = None,
                   **training: Unpack[TrainingSettings]) -> List[TrainResult]:
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
    gamma : float, "lazy" or a sequence of them
        Richness, > 0 (Eq. 1). "lazy" is the paper's "gamma ~ 0" for the
        model's task (``task.lazy_gamma()``): 1e-5/sqrt(d) on
        ``SameDifferent``, 1e-5 on the image tasks, which have no sqrt(d)
        factor; as ``gamma="lazy"`` in ``fastsd train`` and ``fastsd.scan.Grid``.
        The results record the number.
    seed : int, None or a sequence of them
        Per-model seeds (init, batches, noise and test sets derive from it).
        A sequence may be any iterable: a list, ``range(3)``, a NumPy array.
        None draws fresh entropy, recorded as ``config["seed"]`` so that the
        run can be repeated.
    {settings}
    backend : {"auto", "numpy", "cpu", "cuda"}
        "numpy" is the float64 reference; "cpu" the Numba kernels; "cuda"
        CuPy (cuBLAS) GEMMs batched over the ensemble and Numba-CUDA fused
        kernels (``fastsd.mlp._cuda``). Under ``NUMBA_ENABLE_CUDASIM=1`` the
        "cuda" path runs on Numba's CPU simulator with NumPy arrays (for
        tests; very slow), and needs no CuPy.
    dtype : {"float32", "float64"}, optional
        Default float32 on "cpu" and "cuda", float64 on "numpy" (which has
        only float64). No reduced precision (TF32, bf16) is offered.
    path : {"auto", "dense", "symbol", "sparse"}
        "symbol" trains in the span of the L symbols at a cost independent of
        d (clean symbol tasks only, "cpu" and "cuda" backends); "sparse"
        forms the forward pass and the update over the non-zero pixels of each
        batch only (PSVRT and Pentomino, ``task.has_sparse_inputs``; "cpu"
        and "cuda" backends; the dense path's numbers up to rounding); "auto" picks,
        per model whatever the ensemble around it, the path the backend's shipped
        prices predict to be faster (``fastsd.mlp.prices.path_model``; never this
        machine's probe or calibration, so that a call's numbers do not depend on a
        measured time): for a model alone on symbol tasks, for a model in a seed's
        group of 6 gammas on image tasks (``prices.GROUP_MODELS``).
    batches : {"host", "device"}, default "host"
        Where the training batches are drawn. "host": from the seed's NumPy
        streams, the same batches on every backend (with "cuda" they are
        uploaded a few steps at a time; for noisy tasks the inputs are
        uploaded in chunks). They are drawn a block of steps at a time
        (``fastsd.tasks.base.BatchStream``), so that they do not depend on
        ``eval_every`` or ``steps``. "device" (backend "cuda" only): the pairs
        drawn on the GPU by a counter-based Philox4x32-10 generator keyed from
        the model's seed, so nothing crosses to the device inside the loop;
        reproducible for a seed, independent of the ensemble, but not the same
        pairs as the host streams (the same distribution); symbol tasks
        (``SameDifferent``) only. The noisy task's
        training noise is counter-based on every backend
        (``SameDifferent.training_noise``, ``fastsd._philox``): the same
        numbers, up to rounding, with either setting.
    progress : bool
        Show a progress bar over steps.
    config : fastsd.params.Bound, optional
        The training settings above bound once (``fastsd.params.TRAINING.bind``, or a
        ``fastsd.scan.Cell``'s ``training``), in place of their keywords: taken as they
        are, not checked again (a copy, as a pickled one, is checked again).

    Returns
    -------
    list of TrainResult

    Raises
    ------
    ValueError, TypeError
        For a parameter out of range, with its name and valid range (an odd
        ``batch_size``, ``n_test`` < 2, a string ``gamma`` other than "lazy", a
        ``gamma`` whose output scale or learning rate is no normal number of the
        dtype: ``Task.gamma_range``), or a set or dict where one value per model
        is meant (no order says which model takes which).
    SizeTooLargeError
        (a MemoryError and ValueError) before allocating anything, when the
        weights, batches or test sets of the ensemble would not fit in the
        memory available; the message names the parameter, the bytes needed
        and the bytes available.
    BackendUnavailableError
        When an explicitly requested backend cannot run here.
    """
    plan = _plan(task, gamma, seed, training, config=config, backend=backend, dtype=dtype,
                 path=path,
                 batches=batches, caller="train_ensemble")
    check_fits(plan.needs)
    tasks, gammas, seed_seqs, M = plan.tasks, plan.gammas, plan.seed_seqs, len(plan.tasks)
    settings = plan.training
    width, steps, batch_size, n_test, init = (
        settings[k] for k in ("width", "steps", "batch_size", "n_test", "init"))
    backend, module, dtype, paths = plan.backend, plan.module, plan.dtype, plan.paths
    alpha0s, scales, lrs, test_source = plan.alpha0s, plan.scales, plan.lrs, plan.test_source
    start = time.perf_counter()
    streams = [train_streams(s) for s in seed_seqs]
    params0 = [init_params(st["init"], width, t.input_dim, init) for st, t in zip(streams, tasks)]
    noise = [t.training_noise(st["noise"]) for t, st in zip(tasks, streams)]
    engines = build_engines(module, tasks, paths, params0, scales, lrs, dtype,
                            (streams, noise) if batches == "device" else None, plan.activation)
    hist = _train(engines, tasks, streams, noise, test_source, plan.evals, batch_size, n_test,
                  batches, progress)
    wall = (time.perf_counter() - start) / M

    params = {}             # model k: (initial, final)
    for idx, eng in engines:
        ini, fin = eng.params()
        for j, k in enumerate(idx):
            params[k] = ini[j], fin[j]
    results = []
    for k in range(M):
        h = {name: arr[k] for name, arr in hist.items()}
        h["step"] = h["step"].astype(int)
        recorded = dict(_task_config(tasks[k]), gamma=gammas[k],
                        **_recorded(settings, alpha0s[k]), lr=lrs[k], output_scale=scales[k],
                        seed=recorded_seed(seed_seqs[k]), backend=backend, path=paths[k],
                        dtype=dtype, batches=batches, version=__version__)
        results.append(TrainResult(
            best_test_accuracy=float(h["test_accuracy"].max()),
            final_test_accuracy=float(h["test_accuracy"][-1]),
            history=h, initial_params=params[k][0], final_params=params[k][1],
            config=recorded, wall_time=wall,
            diverged=not bool(np.all(np.isfinite(h["train_loss"]))), sigma=plan.activation))
    diverged = [r for r in results if r.diverged]
    if diverged:
        r = diverged[0]
        warnings.warn(f"training diverged in {len(diverged)} of {M} model(s): the loss became "
                      f"NaN or inf (first: gamma={r.config['gamma']:g}, alpha0="
                      f"{r.config['alpha0']:g}, learning rate {r.config['lr']:g}); lower alpha0 "
                      f"or gamma. Its accuracies are not a trained network's "
                      f"(result.diverged is True).", RuntimeWarning, stacklevel=3)
    return results


def _recorded(settings, alpha0):
    """The training settings as a result records them: alpha0 resolved, the activation by
    name and only off "relu" (so a ReLU network's record is what it was before the setting)."""
    out = dict(settings, alpha0=alpha0)
    act = out.pop("activation")
    if act != "relu":
        out["activation"] = getattr(act, "name", act)
    return out


@dataclass(frozen=True)
class Plan:
    """``train_ensemble``'s arguments checked and resolved, before anything is allocated.

    Attributes
    ----------
    tasks, gammas, seed_seqs : list
        Model k's task, gamma (a number) and seed sequence (or Generator).
    training : dict
        The settings ``fastsd.params.TRAINING`` declares, checked, with defaults.
    evals : fastsd.schedules.Evaluations
        The steps after which the models are evaluated.
    backend : str
    module : module
        The backend's engines (``FAMILY.load``).
    dtype : str
    paths, alpha0s, scales, lrs : list
        Model k's training path, base learning rate, output scale and step size.
    test_source : list
        ``_test_sources``: the model whose test sets model k shares.
    needs : list of fastsd._memory.Need
        What training allocates.
    activation : fastsd.activations.Activation
        The hidden units' (``training["activation"]`` resolved).
    """

    tasks: list
    gammas: list
    seed_seqs: list
    training: dict
    evals: Evaluations
    backend: str
    module: object
    dtype: str
    paths: list
    alpha0s: list
    scales: list
    lrs: list
    test_source: list
    needs: list
    activation: Activation


def _plan(task, gamma, seed, training, *, backend, dtype, path, batches, caller, config=None):
    """The ``Plan`` of ``caller``'s arguments (``training``: its TRAINING keywords, or
    ``config``: them bound)."""
    tasks, gammas, seeds, sizer = _models(task, gamma, seed)
    M = len(tasks)
    training = _bound(training, config, caller)
    width, batch_size, n_test, alpha0 = (
        training[k] for k in ("width", "batch_size", "n_test", "alpha0"))
    evals = training.evaluations
    check_choice("path", path, PATHS)
    check_choice("batches", batches, BATCHES)
    backend, module = FAMILY.load(backend)
    kind = traits(backend)
    if batches == "device" and not kind.device_batches:
        raise ValueError(f"`batches` must be 'host' with backend {backend!r} ('device' needs "
                         f"backend 'cuda'); got 'device'.")
    if batches == "device" and not all(isinstance(t, SameDifferent) for t in tasks):
        other = next(t for t in tasks if not isinstance(t, SameDifferent))
        raise ValueError(f"`batches` must be 'host' for {type(other).__name__} ('device' draws "
                         f"the pairs of symbol tasks, SameDifferent, on the GPU; images are "
                         f"built on the host); got 'device'.")
    if dtype is None:
        dtype = kind.default_dtype
    dtype = np.dtype(dtype).name if isinstance(dtype, (type, np.dtype)) else dtype
    check_choice("dtype", dtype, DTYPES)
    check_dtype(backend, dtype)
    alpha0s = [t.default_alpha0 if alpha0 is None else alpha0 for t in tasks]

    seed_seqs = [s if isinstance(s, np.random.Generator) else seed_sequence(s) for s in seeds]
    scales = [t.output_scale(g) for t, g in zip(tasks, gammas)]
    lrs = [t.learning_rate(g, a0) for t, g, a0 in zip(tasks, gammas, alpha0s)]
    _check_representable(tasks, gammas, alpha0s, scales, lrs, dtype)
    activation = get_activation(training["activation"])
    paths = [_choose_path(t, width, batch_size, path, backend, module, dtype, activation)
             for t in tasks]
    test_source = _test_sources(tasks, seed_seqs)
    needs = _memory_needs(tasks, paths, test_source, M, width, batch_size, n_test,
                          np.dtype(dtype).itemsize, sizer)
    return Plan(tasks=tasks, gammas=gammas, seed_seqs=seed_seqs, training=training, evals=evals,
                backend=backend, module=module, dtype=dtype, paths=paths, alpha0s=alpha0s,
                scales=scales, lrs=lrs, test_source=test_source, needs=needs,
                activation=activation)


def _bound(training, config, caller):
    """``caller``'s TRAINING settings, bound once: its keywords ``training`` checked, or
    ``config`` (``TRAINING.bind``'s) as it is."""
    if config is None:
        return TRAINING.bind(training, caller, others=(*_HOW, "config"))
    if training:
        raise TypeError(f"{caller}() takes the training settings as keywords or as `config`, "
                        f"not both; got `config` and {sorted(training)[0]!r}.")
    if not isinstance(config, Bound):
        raise TypeError(f"`config` must be the training settings bound by "
                        f"fastsd.params.TRAINING.bind(...); got {config!r:.80}.")
    # as it is where TRAINING bound it; checked again where it did not (a pickled copy)
    return TRAINING.bind(config, caller, others=(*_HOW, "config"))


def _check_representable(tasks, gammas, alpha0s, scales, lrs, dtype):
    """Refuse a gamma whose output scale or learning rate is no normal number of ``dtype``.

    The engines hold both in the training dtype: in float32 a learning rate above 3.4e38
    (gamma above about 1e38 at alpha0 = 0.1) became inf and every weight NaN, reported as
    a diverged run; a scale below float32's smallest normal number loses its digits.

    Raises
    ------
    ValueError
        Naming `gamma`, the range that holds for the task, alpha0 and dtype, and the value.
    """
    info = np.finfo(dtype)
    tiny, big = float(info.tiny), float(info.max)
    for t, g, a0, sc, lr in zip(tasks, gammas, alpha0s, scales, lrs):
        if not (tiny <= sc <= big and tiny <= lr <= big):
            lo, hi = t.gamma_range(a0, dtype)
            normal = (f"normal {dtype} numbers ({tiny:.3g} to {big:.3g}); got gamma={g!r} "
                      f"(scale {sc:.3g}, learning rate {lr:.3g}).")
            if lo > hi:
                raise ValueError(
                    f"`alpha0` must be smaller: with alpha0={a0:g} no gamma gives an output "
                    f"scale 1/(gamma sqrt(D)) (D = {t.scale_dim}) and a learning rate that are "
                    f"both {normal}")
            wider = ""
            if dtype == "float32":
                lo64, hi64 = t.gamma_range(a0, "float64")
                wider = f" (in float64: [{lo64:.3g}, {hi64:.3g}])"
            raise ValueError(
                f"`gamma` must lie in [{lo:.3g}, {hi:.3g}] for this task with alpha0={a0:g} "
                f"in {dtype}{wider}, so that the output scale 1/(gamma sqrt(D)) "
                f"(D = {t.scale_dim}) and the learning rate are {normal}")


@TRAINING.keywords
def memory_needs(task: Union[Task, Sequence[Task]], gamma: Union[GammaLike, Sequence[GammaLike]],
                 seed: Union[SeedLike, Sequence[SeedLike]], *, backend: BackendName = "auto",
                 dtype: DtypeLike = None, path: PathName = "auto",
                 batches: Literal["host", "device"] = "host",
                 **training: Unpack[TrainingSettings]) -> List[Need]:
    """What ``train_ensemble`` with these arguments would allocate, checked but not allocated.

    Parameters
    ----------
    task, gamma, seed, backend, dtype, path, batches
        As ``train_ensemble``.
    {settings}

    Returns
    -------
    list of fastsd._memory.Need
        The allocations that scale with the sizes (their ``nbytes`` summed is
        what ``train_ensemble`` checks against the memory available).

    Raises
    ------
    ValueError, TypeError, BackendUnavailableError
        As ``train_ensemble``.
    """
    return _plan(task, gamma, seed, training, backend=backend, dtype=dtype, path=path,
                 batches=batches, caller="memory_needs").needs


def _models(task, gamma, seed):
    """The ensemble's tasks, gammas and seeds, checked and broadcast to one length M, and
    the argument that sets M (for the memory check's message)."""
    for name, value in (("task", task), ("gamma", gamma), ("seed", seed)):
        if _is_many(value) and isinstance(value, collections.abc.Sized):   # before listing it
            check_fits([_models_need(len(value), name)])
    tasks, gammas, seeds = (_broadcast(n, v) for n, v in
                            (("task", task), ("gamma", gamma), ("seed", seed)))
    M = max(len(tasks), len(gammas), len(seeds))
    sizer = next(n for n, seq in (("seed", seeds), ("gamma", gammas), ("task", tasks))
                 if len(seq) == M)
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
    gammas = [t.lazy_gamma() if is_lazy(g) else check_float("gamma", g, positive=True)
              for t, g in zip(tasks, gammas)]
    seeds = [check_seed("seed", s) for s in seeds]
    return tasks, gammas, seeds, sizer


def _train(engines, tasks, streams, noise, test_source, evals, batch_size, n_test, batches,
           progress):
    """The SGD loop: the steps up to each of ``evals`` (``fastsd.schedules.Evaluations``),
    each followed by a test evaluation on the test sets of ``evals.test_stream``.

    Returns the history, {name: (M, n_evaluations) array}.
    """
    steps = evals.steps
    M = len(tasks)
    hist = {k: [] for k in ("step", "train_loss", "train_accuracy", "test_accuracy")}
    # spans of steps to the engines (fastsd._calls) within blocks of batches, so that what a
    # call allocates does not grow with eval_every either
    state = {"spans": Spans(cap=BatchStream.BLOCK)}
    if batches == "host":
        state["batches"] = [BatchStream(task, st["pairs"], batch_size)
                            for task, st in zip(tasks, streams)]
    # a context manager, so that the bar is closed before an interrupt is reported
    with _progress.bar(progress, total=steps, unit="step",
                       desc=f"training {M} model(s)") as bar:
        t = 0
        for at in evals:
            n = at - t
            loss, acc = _run_steps(engines, tasks, noise, t, n, batch_size, batches, state, bar)
            t = at
            stream = evals.test_stream(t)
            tests = [task.sample_test(n_test, st[stream]) if test_source[k] == k else None
                     for k, (task, st) in enumerate(zip(tasks, streams))]
            tests = [tests[test_source[k]] for k in range(M)]
            test_acc = np.empty(M)
            for idx, eng in engines:
                f = eng.outputs([tests[k][0] for k in idx],
                                sources=[test_source[k] for k in idx])
                test_acc[idx] = [np.mean((fk > 0) == (tests[k][1] > 0.5))
                                 for fk, k in zip(f, idx)]
            hist["step"].append(np.full(M, t))
            hist["train_loss"].append(loss.mean(axis=1))
            hist["train_accuracy"].append(acc.mean(axis=1))
            hist["test_accuracy"].append(test_acc)
    return {k: np.stack(v, axis=1) for k, v in hist.items()}


def _run_steps(engines, tasks, noise, t, n, batch_size, batches, state, bar):
    """Steps t .. t + n - 1 of every engine, in spans of bounded time (``fastsd._calls``).

    ``state`` carries the spans and, for host batches, each model's
    ``BatchStream`` from one window to the next. Returns the per-step
    training loss and accuracy, (M, n) each.
    """
    M = len(tasks)
    loss = np.empty((M, n))
    acc = np.empty((M, n))
    block = BatchStream.BLOCK
    edges = [t, *range((t // block + 1) * block, t + n, block), t + n]
    # spans end at the blocks' edges: each takes a view of one block of batches, no copy
    for s, e in (span for a, b in zip(edges, edges[1:]) for span in state["spans"].over(a, b)):
        if batches == "host":
            pairs = [b.take(e - s) for b in state["batches"]]
        for idx, eng in engines:
            if batches == "device":
                lo, ac = eng.run_device(e - s, batch_size)
            else:
                lo, ac = eng.run([pairs[k] for k in idx], [noise[k] for k in idx])
            loss[idx, s - t:e - t] = lo
            acc[idx, s - t:e - t] = ac
        bar.update(e - s)
    return loss, acc


def train(task: Task, gamma: GammaLike, *, width: int, steps: int, seed: SeedLike = None,
          **kwargs: Unpack[TrainOptions]) -> TrainResult:
    """Train one centered two-layer ReLU MLP with SGD on binary cross-entropy.

    The model is f~(x) = f(x; theta) - f(x; theta(0)) with
    f(x) = (1/(gamma sqrt(d))) sum_i a_i relu(w_i . x) (Eq. 1, App. F), trained
    with plain SGD at alpha = gamma^2 d alpha0 (gamma <= 1) or
    gamma sqrt(d) alpha0 (gamma > 1) (App. G.1). Test accuracy is measured
    every ``eval_every`` steps on fresh symbols (and at the steps of ``eval_at``);
    the reported accuracy is the best over the history, as in the paper.

    Parameters
    ----------
    task : Task
        For example ``SameDifferent(d, L)``.
    gamma : float or "lazy"
        Richness, > 0; "lazy" is the paper's gamma ~ 0 for the task
        (``task.lazy_gamma()``, see ``train_ensemble``).
    width, steps, seed
        Hidden units m >= 1, SGD steps >= 1, and the model's seed.
    **kwargs
        batch_size, alpha0, eval_every, eval_at, n_test, backend, dtype, path,
        init, batches, progress: see ``train_ensemble``.

    Returns
    -------
    TrainResult

    Raises
    ------
    ValueError, TypeError, SizeTooLargeError, BackendUnavailableError
        As ``train_ensemble``; TypeError also for a sequence of gammas,
        seeds or tasks (``train_ensemble`` takes those).

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
        if _is_many(value):
            raise TypeError(f"`{name}` must be a single value in train (use train_ensemble "
                            f"for many); got {value!r}.")
    return train_ensemble(task, gamma, seed, width=width, steps=steps, **kwargs)[0]


#: The keyword options ``train`` passes on to ``train_ensemble``.
_ENSEMBLE_OPTIONS = {name for name, p in inspect.signature(train_ensemble).parameters.items()
                     if p.kind is inspect.Parameter.KEYWORD_ONLY} - {"width", "steps"}
