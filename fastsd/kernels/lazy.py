"""The exact lazy limit (gamma -> 0, then width -> infinity) on the same-different task.

Limiting kernel and time scale (App. D, App. F, Eq. 1; fastsd's conventions)
---------------------------------------------------------------------------
The centered network f~(x) = f(x; theta) - f(x; theta(0)) with
f(x) = (1/(gamma sqrt(d))) sum_i a_i relu(w_i.x), w_i ~ N(0, I/m),
a_i ~ N(0, 1/m), both layers trained, has tangent kernel at initialisation

    Theta(x, x') = (1/(gamma^2 d)) sum_i [relu(w_i.x) relu(w_i.x') + a_i^2 relu'(w_i.x) relu'(w_i.x') x.x']
                 -> ntk(x, x') / (gamma^2 d)      (m -> infinity),

with ``ntk`` the two-layer ReLU NTK of ``fastsd.kernels.ntk`` (w ~ N(0, I)).
An SGD step at alpha = gamma^2 d alpha0 (App. G.1, gamma <= 1) on the mean
BCE of a batch B moves the output by

    f~_{t+1}(x) = f~_t(x) - (alpha0 / |B|) sum_{b in B} (sigmoid(f~_t(x_b)) - y_b) ntk(x, x_b)

plus terms that vanish with gamma (the relative weight change per step is
O(gamma), App. F). So the gamma -> 0 network is kernel SGD in function space
with kernel alpha0 ntk, independent of gamma and d, started from f~ = 0; one
SGD step is alpha0 units of kernel time. Averaging the batch over the training
distribution gives the function-space gradient flow ("logistic_flow"):

    df~(x)/dt = -alpha0 E_{(x', y') ~ D}[(sigmoid(f~(x')) - y') ntk(x, x')],   t in SGD steps,

where D puts mass 1/2 on same pairs (u, u), u uniform over the L symbols,
and 1/2 on ordered different pairs (u, v), u != v uniform: weight 1/(2L) per
same pair and 1/(2L(L-1)) per different pair. With f~(x) = sum_q c_q ntk(x, x_q)
over the P = L^2 training pairs the state is c, dc/dt = -alpha0 W (sigmoid(K c) - y).
"logistic_sgd" runs the discrete kernel SGD itself on the very batches and
test sets that ``fastsd.train`` draws from the same seed, so it is the
infinite-width twin of a trained network; "regression" is weighted kernel
ridge(less) regression on labels +-1.

Readout only (kernel="nngp")
----------------------------
With the hidden layer frozen at its initialisation and only the readout a
trained (random features; the published code's lazy sweep trains this way),
the centered network f~(x) = (1/(gamma sqrt(d))) sum_i (a_i - a_i(0)) relu(w_i.x)
is linear in a. The same SGD step moves it by the readout half of Theta
alone, (1/(gamma^2 d)) sum_i relu(w_i.x) relu(w_i.x') -> k1(x, x') / (gamma^2 d),
with k1 = ``fastsd.kernels.nngp`` (the ReLU NNGP kernel, k1(x, x) = |x|^2 / 2):
every formula above holds with ntk replaced by k1, and since the model is
linear in a this holds at any gamma, not only gamma -> 0. kernel="ntk" (the
default) is the limit of ``fastsd.train``'s networks, both layers trained;
kernel="nngp" that of a readout-only network (``fastsd.train`` does not train
that way; tests/test_kernels_lazy.py trains one in NumPy and checks the gap
to the limit shrinks like 1/sqrt(width)).

How it is computed
------------------
``lazy_limit`` is three steps, as ``fastsd.train_ensemble`` is: its arguments checked into a
frozen ``LazyConfig``, planned (``LazyPlan``: the backend, the pairs' count, the solver for the
sizes, the memory checked; nothing allocated) and solved (the pairs drawn, the kernel built,
the method run and read, the record written). The work is done by

- ``fastsd.kernels.pairs``: the training pairs (all, a balanced sample, or
  given), their class weights, and the pair kernel from the L x L symbol Gram
  G = S S^T (x.x' = G[u, u'] + G[v, v'], so nothing costs O(d) but G and the
  test items' dot products with the symbols); symbols are the task's own
  (``task.symbols``), test pairs come from ``task.sample_test``, so a lazy
  result and a trained network on the same task see the same symbols;
- ``fastsd.kernels.solvers``: how the P x P kernel is held and the regression
  solved ("dense": stored, 8 P^2 bytes, Cholesky; "cg": matrix-free, O(P)
  memory, Jacobi-preconditioned CG), "auto"'s choice, and the jitter that
  keeps duplicate pairs and numerically equal symbols finite. A request that
  would not fit in ``max_bytes`` raises ``SolveTooLargeError`` with the size
  before allocating anything; beyond what any solver can do, pass ``pairs=n``
  to train on a sample of n pairs (stated in the result);
- ``fastsd.kernels.dynamics``: regression, the flow (exponential RK4) and kernel SGD;
- ``fastsd.kernels.backend``: the backend modules ("numpy", "cpu", "cuda")
  that compute the pair kernel.
"""
import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Union

import numpy as np

from .. import __version__, _threads
from .._types import ActivationLike, ArrayLike, BackendName, ScheduleLike, SeedLike
from .._json import strict_json
from .._memory import Need, check_fits, default_max_bytes
from .._rng import recorded_seed, seed_sequence, train_streams
from .._stats import accuracy_se
from .._validation import (check_array, check_batch_size, check_choice, check_float, check_int,
                           check_seed)
from ..activations import Activation, get_activation
from ..params import LAZY_LIMIT
from ..schedules import Evaluations
from ..tasks.base import BatchStream, Task, task_identity
from . import dynamics
from .backend import KERNELS
from .pairs import PairKernel, accuracy, choose_pairs, class_weights, count_pairs
from .solvers import CG_MAX_PAIRS, SOLVERS, SolveSize, SolveTooLargeError, choose_solver

#: CG_MAX_PAIRS and SolveTooLargeError are the solvers', re-exported with the entry point.
__all__ = ["CG_MAX_PAIRS", "LazyConfig", "LazyPlan", "LazyResult", "SolveTooLargeError",
           "lazy_cell", "lazy_limit"]

METHODS = LAZY_LIMIT["method"].choices
Method = Literal["logistic_flow", "regression", "logistic_sgd", "mean_difference"]


@dataclass(eq=False)
class LazyResult:
    """Outcome of ``lazy_limit``.

    Attributes
    ----------
    method : str
        "regression", "logistic_flow", "logistic_sgd" or "mean_difference".
    test_accuracy : float
        Accuracy on fresh-symbol test pairs: of the solution (regression), of
        the classifier (mean_difference) or of the final state (flows).
    test_accuracy_se : float
        Its standard error over the test pairs (``fastsd._stats.accuracy_se``: about
        sqrt(a (1 - a) / n_test), never 0).
    best_test_accuracy : float
        The best accuracy over the evaluations (App. G.1's measure; each
        evaluation on its own fresh test set); equals ``test_accuracy`` for
        regression and mean_difference.
    n_test : int
        Test pairs per evaluation.
    n_train_pairs, n_same, n_diff : int
        Training pairs used (with multiplicity), and how many are same and different.
    pair_selection : str
        How the pairs were chosen ("all ordered pairs", "sampled ...", "given").
    solver : str
        The solver's name, "dense", "kron" or "cg" (the flows use its kernel store too).
    solver_info : dict
        Ridge and jitter used, CG iterations and relative residual, step size
        of the flow, bytes of the kernel matrix; for "kron" also its terms,
        error target and probed error bound, the products made and the test
        pairs evaluated by cross approximation (``fastsd.kernels.kron``).
    history : dict of list
        "step", "test_accuracy", "train_loss" (the weighted population BCE for
        the flow, the batch mean for SGD) at every evaluation; empty for regression.
    predictions : ndarray or None
        Logits f~ at the ``test_x`` pairs, shape (k,), when requested.
    config : dict
        Task, method, backend and solver parameters, version.
    wall_time : float
        Seconds.
    """

    method: str
    test_accuracy: float
    test_accuracy_se: float
    best_test_accuracy: float
    n_test: int
    n_train_pairs: int
    n_same: int
    n_diff: int
    pair_selection: str
    solver: str
    solver_info: dict = field(default_factory=dict)
    history: dict = field(default_factory=dict)
    predictions: Optional[np.ndarray] = None
    config: dict = field(default_factory=dict)
    wall_time: float = 0.0

    def to_record(self):
        """Return a strict-JSON-ready dict (no NaN/inf; predictions omitted, their count kept)."""
        rec = dict(self.config)
        rec.update(method=self.method, test_accuracy=self.test_accuracy,
                   test_accuracy_se=self.test_accuracy_se,
                   best_test_accuracy=self.best_test_accuracy, n_test=self.n_test,
                   n_train_pairs=self.n_train_pairs, n_same=self.n_same, n_diff=self.n_diff,
                   pair_selection=self.pair_selection, solver=self.solver,
                   solver_info=self.solver_info, history=self.history,
                   n_predictions=None if self.predictions is None else len(self.predictions),
                   wall_time=self.wall_time)
        rec = strict_json(rec)
        json.dumps(rec, allow_nan=False)
        return rec


#: The methods read once, with no time axis (no steps, evaluations or learning rate).
ONE_READING = ("regression", "mean_difference")


def check_schedule(method, eval_at):
    """Refuse an evaluation schedule for a method read once (``ONE_READING``), which would
    ignore it.

    Raises
    ------
    ValueError
        Naming ``eval_at``, the methods that take it and the method given.
    """
    if eval_at is not None and method in ONE_READING:
        raise ValueError(f"`eval_at` must be None with method {method!r}, which is read once "
                         f"(no time axis); the flows 'logistic_flow' and 'logistic_sgd' take "
                         f"a schedule; got eval_at={eval_at!r}.")


@_threads.computing
def lazy_limit(task: Task, method: Method = "logistic_flow", *,
               kernel: Literal["ntk", "nngp"] = "ntk", pairs: Union[int, str, ArrayLike] = "all",
               seed: SeedLike = None, n_test: int = 1024, test_x: Optional[ArrayLike] = None,
               ridge: float = 1e-8, solver: Literal["auto", "dense", "cg", "kron"] = "auto",
               max_bytes: Optional[int] = None, tol: float = 1e-6, maxiter: Optional[int] = None,
               kernel_tol: Optional[float] = None, dtype: Literal["float64", "float32"] = "float64",
               steps: int = 25000, alpha0: Optional[float] = None, eval_every: int = 1000,
               eval_at: ScheduleLike = None, batch_size: int = 128,
               backend: BackendName = "auto", progress: bool = False,
               activation: ActivationLike = "relu") -> "LazyResult":
    """Test accuracy of the gamma -> 0, infinite-width network on a same-different task.

    See ``help(fastsd.kernels.lazy)`` and the lazy-limit how-to (docs/howto/lazy-limit.md)
    for the limiting kernel (ntk, App. D), the
    function-space dynamics with its time scale (one SGD step = alpha0 units
    of kernel time, App. F, G.1) and the d-independent pair structure.

    Parameters
    ----------
    task : SameDifferent
        A clean symbol task (sigma2 = 0); its L symbols are the training symbols.
    method : {"logistic_flow", "regression", "logistic_sgd", "mean_difference"}, \
default "logistic_flow"
        The default is the trained network's limit, as in ``fastsd ntk`` and
        the "lazy_limit" scan predictor. "regression": weighted kernel
        ridge(less) regression of the labels +-1 over the training
        distribution (half same, half different), the t -> infinity limit
        of squared-loss gradient flow. "logistic_flow": gradient flow of the
        BCE over the training distribution for ``steps`` SGD steps' worth of
        time (exponential RK4, ``dynamics.logistic_flow``: the tests hold its
        test logits to 1e-6 relative of an accurate ODE solver).
        "logistic_sgd": the limit network's SGD on the batches
        ``fastsd.train(task, gamma, seed=seed, steps=...,
        batch_size=..., eval_every=..., n_test=...)`` draws, with its test sets
        (needs pairs="all"). "mean_difference": the kernel mean-difference
        classifier, sign of (mean of K(x, .) over the same training pairs -
        mean over the different ones), the flow's direction at t = 0 (its
        first logits are this classifier's up to an offset common to all
        inputs: ``dynamics.mean_difference``; its accuracy's theory:
        ``fastsd.theory.mean_difference_accuracy``); no solve, the
        matrix-free solver "cg" under "auto".
    kernel : {"ntk", "nngp"}, default "ntk"
        "ntk": the limit of networks with both layers trained (``fastsd.train``);
        "nngp": the limit of networks with only the readout trained, the
        hidden layer frozen at initialisation (kernel k1; ``help(fastsd.kernels.lazy)``).
    pairs : "all", int or int array of shape (P, 2)
        "all": the L^2 ordered pairs (L same, L(L-1) different), weighted as
        the training distribution. n: a sample of n pairs, min(n // 2, L)
        distinct same pairs and the rest distinct different pairs, each class
        carrying weight 1/2. An array: these (u, v) pairs (repeats allowed),
        weighted half same, half different.
    seed : int, SeedSequence or None
        None draws fresh entropy, recorded in ``config["seed"]``. Seeds the pair sample, the test sets and (logistic_sgd) the batches.
        Test sets come from ``task.sample_test(n_test, seed)`` (regression) or
        the "test" stream of ``train``'s streams (flows).
    n_test : int, default 1024
        Fresh test pairs per evaluation, >= 2 (the 1024 of App. G.1, as
        ``fastsd.train``, ``fastsd ntk`` and the scans).
    test_x : array_like, shape (k, 2d), optional
        Pairs at which to return the logits (``predictions``).
    ridge : float, default 1e-8
        Regression ridge relative to the mean diagonal of W^1/2 K W^1/2, >= 0.
    solver : {"auto", "dense", "cg", "kron"}
        "dense" stores the P x P kernel (8 P^2 bytes); "kron" (pairs="all"
        only) stores it as a short sum of Kronecker products of L x L factors
        plus its exact diagonal, built from the symbol Gram to ``kernel_tol``
        (``fastsd.kernels.kron``: 16 L^2 bytes a term, products by GEMM);
        "cg" is matrix-free. "auto" takes "kron" for all pairs where it was
        measured faster (the flow from L = 48, the regression from L = 64 at
        d >= 32), else "dense" when it fits in ``max_bytes``, else "kron"
        for all pairs, else "cg" up to ``CG_MAX_PAIRS`` pairs
        (``fastsd.kernels.solvers``). The flows use the same choice for their kernel
        store; "kron" and "cg" solve the regression by CG.
    max_bytes : int, optional
        Memory allowed for the kernel matrix; default half the available memory.
    tol, maxiter
        CG relative residual and iteration cap (default 10 P, at most 5000).
    kernel_tol : float, optional
        solver="kron": the relative Frobenius error ||K~ - K||_F / ||K||_F
        allowed to the structured kernel, in [1e-13, 0.1]; default 1e-10 (the
        tests hold the test logits to 1e-6 relative of solver="dense"). The
        achieved error (a probed bound) is recorded in ``solver_info``.
        Ignored by the exact solvers.
    dtype : {"float64", "float32"}, default "float64"
        The arithmetic of solver "kron"'s Kronecker products (the word of
        ``fastsd.train``): "float32" stores the factors in half the memory and
        runs the products' GEMMs in float32, at float32's rounding error per
        product (measured on 4 random vectors when the factors are built and
        recorded as ``solver_info["kron_product_error"]``); the flow,
        the diagonal, the test logits and the solves stay float64. Needs
        solver "kron" or "auto" (which then takes "kron"; a ValueError where
        "kron" cannot take the problem, e.g. sampled pairs). At small L
        "auto"'s float64 solve is faster; ``bench/bench_kron.py --dtypes``
        measures the gain at large L (see the docs' results page).
    steps : int, default 25000
        SGD steps of the flows (the paper's symbol runs use 25,000 or 50,000).
    alpha0 : float, optional
        Base learning rate, default the task's (0.1).
    eval_every, batch_size : int
        Steps between test evaluations; SGD batch size (logistic_sgd), even
        and >= 2 as in ``fastsd.train`` (half same, half different pairs).
    eval_at : None, "log", str or sequence of int
        Extra evaluation steps of the flows besides every ``eval_every``
        (``fastsd.schedules``, as ``fastsd.train``): "log" reads the accuracy at
        1, 2, 3, 5, 10, ... steps. The flow's steps end at each evaluation (a few
        more kernel products: ``solver_info["flow_products"]``); their test sets
        come from a stream of their own, so the other evaluations' are unchanged.
    backend : {"auto", "numpy", "cpu", "cuda"}
        "numpy": the float64 reference; "cpu": Numba kernels; "cuda": the
        reference on CuPy arrays (needs CuPy and a GPU).
    progress : bool, default False
        tqdm bars on stderr: over the flows' time in SGD steps, advanced at
        each evaluation; over the terms of solver "kron"'s factors while
        they are built; over the CG iterations of the "kron" and "cg"
        regression solves (the dense Cholesky solve shows none). Off by
        default, and so in the scan's "lazy_limit" cells.
    activation : str or fastsd.activations.Activation, default "relu"
        The network's activation sigma (``fastsd.activations``): ReLU's arc-cosine kernels
        (every solver and backend), any other's closed forms or Mehler's series
        (``fastsd.kernels.activation``: dtype float64, backends "numpy" and "cpu", refused
        naming ``activation`` elsewhere; "auto" takes solver "dense", else "cg", and "kron"
        when named). An odd sigma (tanh,
        erf) gives an odd kernel, k(x, -y) = -k(x, y), and so chance accuracy on a
        test set closed under negation. Recorded only off "relu".

    Returns
    -------
    LazyResult

    Raises
    ------
    TypeError
        When ``task`` is not a fastsd task with symbols.
    ValueError
        For a noisy task (sigma2 > 0), bad parameters (named, with the valid
        range), or ``pairs`` outside [0, L).
    SolveTooLargeError
        (a ``SizeTooLargeError``: a MemoryError and ValueError) before
        allocating, when solver="dense" needs more than ``max_bytes`` or no
        solver can handle P pairs; the message gives the size.
    SizeTooLargeError
        Before allocating, when the test sets (``n_test`` or ``test_x``
        pairs against the L symbols) or the SGD batches would not fit in the
        memory available; the message names the parameter and the bytes.
    BackendUnavailableError
        When an explicitly requested backend cannot run here.

    Examples
    --------
    >>> from fastsd import SameDifferent
    >>> r = lazy_limit(SameDifferent(d=4, L=16, seed=0), "regression", n_test=2000, seed=1)
    >>> r.n_train_pairs, r.test_accuracy > 0.6
    (256, True)
    """
    start = time.perf_counter()
    config = _check(task, method, kernel=kernel, pairs=pairs, seed=seed, n_test=n_test,
                    test_x=test_x, ridge=ridge, solver=solver, max_bytes=max_bytes, tol=tol,
                    maxiter=maxiter, kernel_tol=kernel_tol, dtype=dtype, steps=steps,
                    alpha0=alpha0, eval_every=eval_every, eval_at=eval_at,
                    batch_size=batch_size, backend=backend, activation=activation)
    return _solve(_plan(config), progress, start)


@dataclass(frozen=True)
class LazyConfig:
    """``lazy_limit``'s arguments, checked and resolved: each field is the parameter of its
    name (``kernel`` the kernel's kind), with defaults filled in (``alpha0``, ``max_bytes``),
    ``seed`` a SeedSequence (fresh entropy for None) and ``evals`` the evaluation steps
    (``fastsd.schedules.Evaluations``). Nothing is allocated or chosen yet."""

    task: Task
    method: str
    kernel: str
    pairs: object
    seed: np.random.SeedSequence
    n_test: int
    test_x: object
    ridge: float
    solver: str
    max_bytes: int
    tol: float
    maxiter: object
    kernel_tol: object
    dtype: str
    steps: int
    alpha0: float
    eval_every: int
    eval_at: object
    evals: Evaluations
    batch_size: int
    backend: str
    activation: Activation


def _check(task, method, *, kernel, pairs, seed, n_test, test_x, ridge, solver, max_bytes, tol,
           maxiter, kernel_tol, dtype, steps, alpha0, eval_every, eval_at, batch_size, backend,
           activation):
    """``lazy_limit``'s arguments as a ``LazyConfig``; raises as ``lazy_limit`` does."""
    if not isinstance(task, Task) or not hasattr(task, "symbols"):
        raise TypeError(f"`task` must be a fastsd symbol task such as SameDifferent; "
                        f"got {task!r:.80}.")
    if task.sigma2 != 0.0:
        raise ValueError(f"`task` must be noise-free (sigma2 = 0) for the lazy limit, whose "
                         f"training inputs are the fixed symbols; got sigma2={task.sigma2!r}.")
    method = LAZY_LIMIT["method"].check(method)
    kernel_kind = LAZY_LIMIT["kernel"].check(kernel)
    check_choice("solver", solver, ("auto",) + tuple(SOLVERS))     # the registered solvers
    check_seed("seed", seed)
    if isinstance(seed, np.random.Generator):
        raise TypeError("`seed` must be an integer >= 0, a SeedSequence or None, so that the "
                        "result can be rebuilt; got a Generator.")
    seed = seed_sequence(seed)      # None: fresh entropy, recorded in config["seed"]
    c = LAZY_LIMIT.check(dict(n_test=n_test, ridge=ridge, steps=steps, eval_every=eval_every,
                              eval_at=eval_at, alpha0=alpha0))
    n_test, ridge, steps, eval_every, eval_at, alpha0 = c.values()
    check_schedule(method, eval_at)
    evals = Evaluations(steps, eval_every, eval_at)
    tol = check_float("tol", tol, positive=True)
    if kernel_tol is not None:
        kernel_tol = check_float("kernel_tol", kernel_tol, positive=True)
        if not 1e-13 <= kernel_tol <= 0.1:
            raise ValueError(f"`kernel_tol` must be a relative error in [1e-13, 0.1]; got "
                             f"{kernel_tol!r}.")
    batch_size = check_batch_size("batch_size", batch_size)
    dtype = LAZY_LIMIT["dtype"].check(dtype)
    alpha0 = task.default_alpha0 if alpha0 is None else alpha0
    max_bytes = default_max_bytes() if max_bytes is None else check_int(
        "max_bytes", max_bytes, minimum=1)
    if test_x is not None:
        test_x = check_array("test_x", test_x, shape=(None, task.input_dim))
    if method == "logistic_sgd" and not (isinstance(pairs, str) and pairs == "all"):
        raise ValueError(f"`pairs` must be 'all' with method 'logistic_sgd' (the network "
                         f"samples from all pairs); got {pairs!r:.80}.")
    if solver == "kron" and not (isinstance(pairs, str) and pairs == "all"):
        raise ValueError(f"`pairs` must be 'all' with solver='kron' (the kernel of all L^2 "
                         f"ordered pairs is a sum of Kronecker products); got {pairs!r:.80}; "
                         f"use solver='dense' or 'cg' for a sample or given pairs.")
    activation = get_activation(LAZY_LIMIT["activation"].check(activation))
    if activation.name != "relu" and dtype != "float64":
        raise ValueError(f"`activation` must be 'relu' with dtype={dtype!r} (the float32 "
                         f"products are measured on the arc-cosine kernels; another "
                         f"activation's run in float64); got {activation.name!r}.")
    return LazyConfig(task, method, kernel_kind, pairs, seed, n_test, test_x, ridge, solver,
                      max_bytes, tol, maxiter, kernel_tol, dtype, steps, alpha0, eval_every,
                      eval_at, evals, batch_size, backend, activation)


@dataclass(frozen=True)
class LazyPlan:
    """A ``LazyConfig`` planned: the backend loaded (``ops``), the number of training pairs
    ``P``, the CG iteration cap, the solver chosen for the sizes (``solver_cls``, ``size``),
    the memory checked; nothing allocated."""

    config: LazyConfig
    backend: str
    ops: object
    P: int
    maxiter: int
    size: SolveSize
    solver_cls: type


def _plan(config):
    """The ``LazyPlan`` of ``config``; raises as ``lazy_limit`` does before allocating."""
    c = config
    backend, ops = KERNELS.load(c.backend)
    relu = c.activation.name == "relu"
    if not relu and ops.xp is not np:
        raise ValueError(f"`activation` must be 'relu' with backend {backend!r} (another "
                         f"activation's kernels are computed on the host: backend 'numpy' or "
                         f"'cpu'); got {c.activation.name!r}.")
    L = c.task.L
    P = count_pairs(L, c.pairs)
    maxiter = min(10 * P, 5000) if c.maxiter is None else check_int("maxiter", c.maxiter,
                                                                     minimum=1)
    size = SolveSize(P=P, L=L, all_pairs=isinstance(c.pairs, str), max_bytes=c.max_bytes,
                     kernel_tol=c.kernel_tol, method=c.method, d=c.task.symbols.shape[1],
                     dtype=c.dtype)
    solver = c.solver
    if c.method == "mean_difference" and solver == "auto" and c.dtype == "float64" \
            and P <= CG_MAX_PAIRS:
        solver = "cg"       # matrix-free: the test logits are its only products
    if relu or solver != "auto":
        solver_cls = choose_solver(solver, size)
    else:   # "auto"'s prices are the arc-cosine kernels': the stored kernel, else CG
        try:
            solver_cls = choose_solver("dense", size)
        except SolveTooLargeError:
            solver_cls = choose_solver("cg", size)
    check_fits(memory_needs(L, c.task.input_dim, c.method, c.pairs, P, c.n_test, c.test_x,
                            min(BatchStream.BLOCK, c.steps), c.batch_size))
    return LazyPlan(config, backend, ops, P, maxiter, size, solver_cls)


def _solve(plan, progress, start):
    """Run ``plan``: the pairs drawn, the kernel operator built, the method solved and
    read; its ``LazyResult`` (``start``: ``time.perf_counter()`` when the call began)."""
    c, ops, P = plan.config, plan.ops, plan.P
    task, method, seed, n_test, evals, L = c.task, c.method, c.seed, c.n_test, c.evals, c.task.L
    u, v, selection = choose_pairs(L, c.pairs, seed)

    pair_kernel = PairKernel(ops, ops.xp.asarray(task.symbols, ops.xp.float64), u, v, c.kernel,
                             c.activation)
    op = plan.solver_cls(pair_kernel, plan.size, progress=progress)
    same = u == v
    w, y = ops.xp.asarray(class_weights(same)), ops.xp.asarray(same.astype(np.float64))
    info = op.record()
    history = {}
    if method in ONE_READING:
        if method == "regression":
            coef, solved = dynamics.regression(op, w, y, ridge=c.ridge, tol=c.tol,
                                               maxiter=plan.maxiter)
            info.update(solved)
        else:
            coef = dynamics.mean_difference(w, y)
        acc = best = accuracy(op, coef, *task.sample_test(n_test, seed))
    else:
        streams = train_streams(seed)

        def evaluate(coef, t):
            return accuracy(op, coef, *task.sample_test(n_test, streams[evals.test_stream(t)]))

        flow = dict(evals=evals, progress=progress)
        if method == "logistic_flow":
            coef, history, flown = dynamics.logistic_flow(op, w, y, evaluate, alpha0=c.alpha0,
                                                          **flow)
            info.update(flown)
        else:
            batches = BatchStream(task, streams["pairs"], c.batch_size)

            def draw(n):
                bu, bv, by = batches.take(n)
                return bu.astype(np.int64) * L + bv, by

            coef, history = dynamics.logistic_sgd(op, draw, evaluate,
                                                  lr=c.alpha0 / c.batch_size, **flow)
        acc, best = history["test_accuracy"][-1], max(history["test_accuracy"])
    preds = None if c.test_x is None else op.logits(c.test_x, coef)
    info.update(op.counts())
    config = {"task": type(task).__name__, "d": task.d, "L": L, "sigma2": task.sigma2,
              **task_identity(task), "seed": recorded_seed(seed),
              "kernel": c.kernel, "backend": plan.backend, "ridge": c.ridge, "tol": c.tol,
              "dtype": c.dtype,
              "steps": c.steps,
              "alpha0": c.alpha0, "eval_every": c.eval_every, "eval_at": c.eval_at,
              "batch_size": c.batch_size, "version": __version__}
    if method in ONE_READING:
        for k in ("steps", "alpha0", "eval_every", "eval_at", "batch_size"):
            config.pop(k)
    if c.activation.name != "relu":         # a ReLU limit's record is what it was
        config["activation"] = c.activation.name
    return LazyResult(
        method=method, test_accuracy=acc,
        test_accuracy_se=accuracy_se(acc, n_test), best_test_accuracy=best,
        n_test=n_test, n_train_pairs=P, n_same=int(same.sum()), n_diff=int(P - same.sum()),
        pair_selection=selection, solver=plan.solver_cls.name, solver_info=info,
        history=history, predictions=preds, config=config,
        wall_time=time.perf_counter() - start)


def memory_needs(L, p, method, pairs, P, n_test, test_x, chunk, batch_size):
    """The allocations of ``lazy_limit`` that scale with its sizes, but the P x P kernel.

    ``lazy_limit`` checks them against the memory available (``fastsd._memory``);
    the kernel or its factorisation is the solver's to check against ``max_bytes``.

    Parameters
    ----------
    L : int
        Training symbols.
    p : int
        Inputs of a pair (2 d).
    method : str
        As ``lazy_limit`` ("logistic_sgd" holds its batches).
    pairs : str or int
        ``lazy_limit``'s pair selection ("all" or a number of sampled pairs).
    P : int
        Training pairs.
    n_test : int
        Test pairs an evaluation.
    test_x : array (n, p) or None
        Extra inputs whose logits are returned.
    chunk, batch_size : int
        SGD steps a block and pairs a step ("logistic_sgd").

    Returns
    -------
    list of fastsd._memory.Need
        Bytes, what they hold and the setting that sizes them.
    """
    # pair indices, weights, labels, norms and the solver's vectors, float64 or int64
    sizer = ("L", L) if isinstance(pairs, str) else ("pairs", P)
    needs = [Need(8 * 16 * P, f"the training pairs and their solver vectors ({P} pairs)",
                  *sizer),
             Need(16 * L * L, f"the symbol Gram matrix ({L} x {L})", "L", L)]
    # a test set: pairs (n, 2d) and fresh symbols, float64, and their dot products with the
    # L symbols (n, L) twice
    test = 8 * n_test * (3 * p + 2 * L)
    needs.append(Need(test, f"the test sets ({n_test} pairs x {p} inputs and x {L} symbols)",
                      "n_test", n_test))
    if test_x is not None:
        needs.append(Need(16 * len(test_x) * L, f"the logits at `test_x` ({len(test_x)} pairs "
                          f"x {L} symbols)", "test_x", f"{len(test_x)} pairs"))
    if method == "logistic_sgd":       # pair indices, labels and offsets of a block of steps
        needs.append(Need(48 * chunk * batch_size, f"the SGD batches ({chunk} steps x "
                          f"{batch_size} pairs)", "batch_size", batch_size))
    return needs


def lazy_cell(d: int, L: int, *, task_seed: Optional[int] = None, seed: int = 0,
              method: Method = "logistic_flow", **kwargs: Any) -> dict:
    """One cell of the Fig. 1e lazy heatmap as a strict-JSON record.

    Builds ``SameDifferent(d, L, seed=task_seed)`` and returns
    ``lazy_limit(task, method, seed=seed, **kwargs).to_record()``.

    Parameters
    ----------
    d, L : int
        Symbol dimension (>= 1) and number of training symbols (>= 2).
    task_seed : int, optional
        Seed of the symbols; None (the default) derives it from (seed, L, d)
        as every scan cell does (``fastsd.conventions.resolve_task_seed``),
        so the cell sees the symbols of the "mlp" cell with the same seed.
    seed : int, default 0
        Seed of the solve (pair sample, test sets, batches).
    method : str, default "logistic_flow"
        See ``lazy_limit``.
    **kwargs
        Passed to ``lazy_limit`` (pairs, n_test, solver, steps, backend, ...).

    Returns
    -------
    dict

    Examples
    --------
    >>> rec = lazy_cell(4, 8, method="regression", n_test=500)
    >>> rec["method"], rec["n_train_pairs"]
    ('regression', 64)
    """
    from ..conventions import resolve_task_seed
    from ..tasks import SameDifferent
    task_seed = resolve_task_seed(task_seed, seed, L, d)
    task = SameDifferent(d=d, L=L, seed=task_seed)
    rec = lazy_limit(task, method, seed=seed, **kwargs).to_record()
    rec["task_seed"] = int(task_seed)
    return rec
