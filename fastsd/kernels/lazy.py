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

Cost independent of d
---------------------
Training pairs are x = (z_u; z_v), so x.x' = G[u, u'] + G[v, v'] and
|x|^2 = G[u, u] + G[v, v] with G = S S^T the L x L symbol Gram matrix. The
only O(d) work is G (one L x L x d GEMM) and the dot products of the test
items with the L symbols (n_test x L x d); no n x n x d array is ever built.
Symbols are the task's own (``task.symbols``), test pairs come from
``task.sample_test``, so a lazy result and a trained network on the same task
see the same training symbols.

Solvers and memory
------------------
"dense" stores the P x P kernel (8 P^2 bytes) and uses a Cholesky solve;
"cg" is matrix-free (O(P) memory, O(P^2) kernel evaluations per product,
Jacobi-preconditioned conjugate gradients). A dense request that would not
fit in ``max_bytes`` raises ``SolveTooLargeError`` with the size before
allocating anything. Beyond what either can do, pass ``pairs=n`` to train on a
sample of n pairs (half same, half different, without replacement); the
sampling is stated in the result.

Regularisation
--------------
Regression solves (W^1/2 K W^1/2 + lam I) z = W^1/2 y, c = W^1/2 z, with
lam = ``ridge`` times the mean diagonal of W^1/2 K W^1/2. Should the
Cholesky factorisation fail (duplicate pairs with ridge = 0, a numerically
singular Gram), lam is raised tenfold from 1e-12 of that mean until it
succeeds; the matrix-free CG uses lam >= 1e-12 of that mean. The lam used
is recorded in ``solver_info["jitter"]``. Duplicate pairs and numerically
equal symbols thus give finite results.
"""
import contextlib
import json
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import __version__, _numerics, _progress
from .._json import strict_json
from .._memory import Need, check_fits, default_max_bytes, fmt_bytes
from .._rng import recorded_seed, seed_sequence, train_streams
from .._validation import (check_array, check_batch_size, check_choice, check_float, check_int,
                           check_seed)
from ..exceptions import SizeTooLargeError
from ..tasks.base import Task
from .backend import KERNELS

METHODS = ("regression", "logistic_flow", "logistic_sgd")
SOLVERS = ("auto", "dense", "cg")
#: Above this many training pairs the matrix-free solver (O(P^2) kernel
#: evaluations per product) is refused by solver="auto" as too slow.
CG_MAX_PAIRS = 1 << 17
_PAIR_TAG = 3001


class SolveTooLargeError(SizeTooLargeError):
    """A requested exact solve would not fit in memory (or time); raised before allocating."""


def _one_blas_thread():
    """Limit BLAS to one thread where threadpoolctl is installed.

    The iterative solvers make thousands of memory-bound matrix-vector
    products; OpenBLAS's two-thread gemv measured 10x slower than one thread
    on a loaded 2-core machine.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


@dataclass(eq=False)
class LazyResult:
    """Outcome of ``lazy_limit``.

    Attributes
    ----------
    method : str
        "regression", "logistic_flow" or "logistic_sgd".
    test_accuracy : float
        Accuracy on fresh-symbol test pairs: of the solution (regression) or
        of the final state (flows).
    test_accuracy_se : float
        Its standard error over the test pairs, sqrt(a (1 - a) / n_test).
    best_test_accuracy : float
        The best accuracy over the evaluations (App. G.1's measure; each
        evaluation on its own fresh test set); equals ``test_accuracy`` for
        regression.
    n_test : int
        Test pairs per evaluation.
    n_train_pairs, n_same, n_diff : int
        Training pairs used (with multiplicity), and how many are same and different.
    pair_selection : str
        How the pairs were chosen ("all ordered pairs", "sampled ...", "given").
    solver : str
        "dense" or "cg" (or "dense"/"rows" for the kernel store of the flows).
    solver_info : dict
        Ridge and jitter used, CG iterations and relative residual, step size
        of the flow, bytes of the kernel matrix.
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
    predictions: np.ndarray = None
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


# -- kernel operators ---------------------------------------------------------
def _matvec(ops, T1, r1, T2, r2, rn2, c1, c2, cn2, V):
    """K @ V for V of shape (k,) or (k, r), without storing K (the backend ``ops``)."""
    V2 = V.reshape(len(c1), -1)
    out = ops.pair_ntk_matvec(T1, r1, T2, r2, rn2, c1, c2, cn2, V2)
    return out.reshape((len(r1),) + V.shape[1:])


class _TrainKernel:
    """The P x P training kernel, stored ("dense") or applied on the fly ("cg").

    ``ops`` is a backend module of the kernels family; ``matrix`` is the stored
    kernel or None, and ``rows`` gives kernel rows (what ``ops.kernel_sgd`` reads).
    """

    def __init__(self, ops, G, u, v, dense):
        self.ops, self.G, self.u, self.v = ops, G, u, v
        self.n2 = G[u, u] + G[v, v]
        self.matrix = ops.pair_ntk(G, u, G, v, self.n2, u, v, self.n2) if dense else None

    def __matmul__(self, V):
        if self.matrix is not None:
            return self.matrix @ V
        return _matvec(self.ops, self.G, self.u, self.G, self.v, self.n2, self.u, self.v,
                       self.n2, V)

    def rows(self, idx):
        if self.matrix is not None:
            return self.matrix[idx]
        return self.ops.pair_ntk(self.G, self.u[idx], self.G, self.v[idx], self.n2[idx],
                                 self.u, self.v, self.n2)


class _Tester:
    """Logits at test pairs x = (t1; t2): K_test @ c from the test items' symbol dot products."""

    def __init__(self, ops, task, S, train, x):
        xp = ops.xp
        d = task.d
        x = xp.asarray(x, xp.float64)
        t1, t2 = x[:, :d], x[:, d:]
        self.T1, self.T2 = t1 @ S.T, t2 @ S.T
        self.n2 = xp.sum(t1 * t1, axis=1) + xp.sum(t2 * t2, axis=1)
        self.r = xp.arange(x.shape[0])
        self.ops, self.train = ops, train

    def logits(self, c):
        tr = self.train
        return self.ops.to_host(_matvec(self.ops, self.T1, self.r, self.T2, self.r, self.n2,
                                        tr.u, tr.v, tr.n2, c))


# -- training pairs -----------------------------------------------------------
def _count_pairs(L, pairs):
    """Validate ``pairs`` (see ``lazy_limit``) and return how many training pairs it gives."""
    if isinstance(pairs, str):
        check_choice("pairs", pairs, ("all",))
        return L * L
    if isinstance(pairs, (int, np.integer)) and not isinstance(pairs, (bool, np.bool_)):
        return check_int("pairs", pairs, minimum=2, maximum=L * L)
    arr = np.asarray(pairs)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"`pairs` must be 'all', an integer number of pairs, or an integer "
                         f"array of shape (P, 2); got {pairs!r:.80}.")
    if arr.min() < 0 or arr.max() >= L:
        raise ValueError(f"`pairs` must hold symbol indices in [0, {L - 1}]; got values in "
                         f"[{arr.min()}, {arr.max()}].")
    return arr.shape[0]


def _choose_pairs(L, pairs, seed):
    """Return u, v (int64), and a description of how they were chosen (``pairs`` validated)."""
    if isinstance(pairs, str):
        u, v = np.divmod(np.arange(L * L, dtype=np.int64), L)
        return u, v, "all ordered pairs"
    if isinstance(pairs, (int, np.integer)):
        n = int(pairs)
        ss = seed_sequence(seed)
        rng = np.random.default_rng(np.random.SeedSequence(
            ss.entropy, spawn_key=ss.spawn_key + (_PAIR_TAG,)))
        n_same = min(n // 2, L)
        n_diff = n - n_same
        same = rng.choice(L, size=n_same, replace=False)
        # different pair k in 0..L(L-1)-1 -> (u, v), v != u
        k = rng.choice(L * (L - 1), size=n_diff, replace=False)
        du, off = np.divmod(k, L - 1)
        dv = np.where(off >= du, off + 1, off)
        u = np.concatenate([same, du]).astype(np.int64)
        v = np.concatenate([same, dv]).astype(np.int64)
        return u, v, (f"sampled: {n_same} distinct same pairs and {n_diff} distinct ordered "
                      f"different pairs, uniformly without replacement (seed {ss.entropy}, "
                      f"spawn key {ss.spawn_key + (_PAIR_TAG,)})")
    arr = np.asarray(pairs)
    return arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), "given"


def _class_weights(same):
    """Half the weight on same pairs, half on different, uniform within each class."""
    n_same = int(same.sum())
    n_diff = len(same) - n_same
    w_same = 0.5 / n_same if n_diff else 1.0 / n_same if n_same else 0.0
    w_diff = (0.5 if n_same else 1.0) / n_diff if n_diff else 0.0
    return np.where(same, w_same, w_diff)


# -- solvers ------------------------------------------------------------------
def _cholesky_solve(A, b, lam0, ops):
    """Solve (A + lam I) z = b by Cholesky, raising lam tenfold from lam0 on failure."""
    xp = ops.xp
    mean_diag = float(xp.mean(xp.diag(A)))
    lam = lam0
    floor = 1e-12 * mean_diag
    eye = xp.eye(A.shape[0])
    while True:
        try:
            return ops.cho_solve(A + lam * eye, b), lam
        except np.linalg.LinAlgError:
            lam = max(10.0 * lam, floor)
            if lam > mean_diag:
                raise


def _cg(apply, b, diag, tol, maxiter, xp):
    """Jacobi-preconditioned conjugate gradients; returns z, iterations, relative residual."""
    z = xp.zeros_like(b)
    r = b.copy()
    bnorm = float(xp.linalg.norm(b)) or 1.0
    s = r / diag
    p = s.copy()
    rs = float(r @ s)
    it = 0
    res = float(xp.linalg.norm(r)) / bnorm
    while it < maxiter and res > tol:
        Ap = apply(p)
        alpha = rs / float(p @ Ap)
        z += alpha * p
        r -= alpha * Ap
        s = r / diag
        rs_new = float(r @ s)
        p = s + (rs_new / rs) * p
        rs = rs_new
        it += 1
        res = float(xp.linalg.norm(r)) / bnorm
    return z, it, res


def _lambda_max(Kop, sw, xp, iters=30):
    """Largest eigenvalue of W^1/2 K W^1/2 by power iteration (times 1.05 for safety)."""
    rng = np.random.default_rng(0)
    q = xp.asarray(rng.random(len(sw)) + 0.5)
    lam = 0.0
    for _ in range(iters):
        q = sw * (Kop @ (sw * q))
        lam = float(xp.linalg.norm(q))
        q = q / lam
    return 1.05 * lam


# -- public -------------------------------------------------------------------
def lazy_limit(task, method="logistic_flow", *, pairs="all", seed=None, n_test=1024, test_x=None,
               ridge=1e-8, solver="auto", max_bytes=None, tol=1e-6, maxiter=None, steps=25000,
               alpha0=None, eval_every=1000, batch_size=128, backend="auto", progress=False):
    """Test accuracy of the gamma -> 0, infinite-width network on a same-different task.

    See the module notes for the limiting kernel (ntk, App. D), the
    function-space dynamics with its time scale (one SGD step = alpha0 units
    of kernel time, App. F, G.1) and the d-independent pair structure.

    Parameters
    ----------
    task : SameDifferent
        A clean symbol task (sigma2 = 0); its L symbols are the training symbols.
    method : {"logistic_flow", "regression", "logistic_sgd"}, default "logistic_flow"
        The default is the trained network's limit, as in ``fastsd ntk`` and
        the "lazy_limit" scan predictor. "regression": weighted kernel
        ridge(less) regression of the labels +-1 over the training
        distribution (half same, half different), the t -> infinity limit of squared-loss gradient flow. "logistic_flow":
        gradient flow of the BCE over the training distribution for ``steps``
        SGD steps' worth of time (RK4). "logistic_sgd": the limit network's
        SGD on the batches ``fastsd.train(task, gamma, seed=seed, steps=...,
        batch_size=..., eval_every=..., n_test=...)`` draws, with its test sets
        (needs pairs="all").
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
    solver : {"auto", "dense", "cg"}
        "dense" stores the P x P kernel (8 P^2 bytes); "cg" is matrix-free.
        "auto" takes "dense" when it fits in ``max_bytes``, else "cg" up to
        ``CG_MAX_PAIRS`` pairs. The flows use the same choice for their kernel store.
    max_bytes : int, optional
        Memory allowed for the kernel matrix; default half the available memory.
    tol, maxiter
        CG relative residual and iteration cap (default 10 P, at most 5000).
    steps : int, default 25000
        SGD steps of the flows (the paper's symbol runs use 25,000 or 50,000).
    alpha0 : float, optional
        Base learning rate, default the task's (0.1).
    eval_every, batch_size : int
        Steps between test evaluations; SGD batch size (logistic_sgd), even
        and >= 2 as in ``fastsd.train`` (half same, half different pairs).
    backend : {"auto", "numpy", "cpu", "cuda"}
        "numpy": the float64 reference; "cpu": Numba kernels; "cuda": the
        reference on CuPy arrays (needs CuPy and a GPU).
    progress : bool, default False
        A tqdm bar on stderr over the flows' time in SGD steps, advanced at
        each evaluation (the regression is one solve and shows none). Off by
        default, and so in the scan's "lazy_limit" cells.

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
    if not isinstance(task, Task) or not hasattr(task, "symbols"):
        raise TypeError(f"`task` must be a fastsd symbol task such as SameDifferent; "
                        f"got {task!r:.80}.")
    if task.sigma2 != 0.0:
        raise ValueError(f"`task` must be noise-free (sigma2 = 0) for the lazy limit, whose "
                         f"training inputs are the fixed symbols; got sigma2={task.sigma2!r}.")
    check_choice("method", method, METHODS)
    check_choice("solver", solver, SOLVERS)
    check_seed("seed", seed)
    if isinstance(seed, np.random.Generator):
        raise TypeError("`seed` must be an integer >= 0, a SeedSequence or None, so that the "
                        "result can be rebuilt; got a Generator.")
    seed = seed_sequence(seed)      # None: fresh entropy, recorded in config["seed"]
    n_test = check_int("n_test", n_test, minimum=2)
    ridge = check_float("ridge", ridge, nonnegative=True)
    tol = check_float("tol", tol, positive=True)
    steps = check_int("steps", steps, minimum=1)
    eval_every = check_int("eval_every", eval_every, minimum=1)
    batch_size = check_batch_size("batch_size", batch_size)
    alpha0 = task.default_alpha0 if alpha0 is None else check_float("alpha0", alpha0,
                                                                     positive=True)
    max_bytes = default_max_bytes() if max_bytes is None else check_int(
        "max_bytes", max_bytes, minimum=1)
    if test_x is not None:
        test_x = check_array("test_x", test_x, shape=(None, task.input_dim))
    if method == "logistic_sgd" and not (isinstance(pairs, str) and pairs == "all"):
        raise ValueError(f"`pairs` must be 'all' with method 'logistic_sgd' (the network "
                         f"samples from all pairs); got {pairs!r:.80}.")
    backend, ops = KERNELS.load(backend)
    xp = ops.xp

    L = task.L
    P = _count_pairs(L, pairs)
    maxiter = min(10 * P, 5000) if maxiter is None else check_int("maxiter", maxiter, minimum=1)
    dense_bytes = 8 * P * P
    if solver == "dense" and dense_bytes > max_bytes:
        raise SolveTooLargeError(
            f"an exact dense solve over P = {P} training pairs needs {fmt_bytes(dense_bytes)} "
            f"for the P x P float64 kernel, more than `max_bytes` = {fmt_bytes(max_bytes)}; use "
            f"solver='cg' (matrix-free), pairs=<n> to sample n pairs, or raise `max_bytes`.")
    if solver == "auto":
        solver = "dense" if dense_bytes <= max_bytes else "cg"
        if solver == "cg" and P > CG_MAX_PAIRS:
            raise SolveTooLargeError(
                f"P = {P} training pairs is too many for an exact solve: the dense kernel "
                f"needs {fmt_bytes(dense_bytes)} (`max_bytes` = {fmt_bytes(max_bytes)}) and a "
                f"matrix-free product costs P^2 = {P * P:.2e} kernel evaluations; use "
                f"pairs=<n> to sample n pairs, or solver='cg' to insist.")
    check_fits(_needs(task, method, pairs, P, n_test, test_x, min(eval_every, steps),
                      batch_size))
    u, v, selection = _choose_pairs(L, pairs, seed)

    S = xp.asarray(task.symbols, xp.float64)
    G = S @ S.T
    same = u == v
    w = _class_weights(same)
    y01 = same.astype(np.float64)
    u_d, v_d = xp.asarray(u), xp.asarray(v)
    Kop = _TrainKernel(ops, G, u_d, v_d, dense=solver == "dense")
    w_d, y_d = xp.asarray(w), xp.asarray(y01)
    info = {"kernel_bytes": dense_bytes if solver == "dense" else 0}
    history = {}

    if method == "regression":
        sw = xp.sqrt(w_d)
        b = sw * (2.0 * y_d - 1.0)
        lam = ridge * float(xp.sum(w_d * Kop.n2)) / P
        info["ridge"] = ridge
        if solver == "dense":
            z, lam = _cholesky_solve(sw[:, None] * Kop.matrix * sw[None, :], b, lam, ops)
            info["jitter"] = lam
        else:
            lam = lam if lam > 0 else 1e-12 * float(xp.sum(w_d * Kop.n2)) / P
            with _one_blas_thread():
                z, it, res = _cg(lambda q: sw * (Kop @ (sw * q)) + lam * q, b,
                                 w_d * Kop.n2 + lam, tol, maxiter, xp)
            info.update(jitter=lam, cg_iterations=it, cg_relative_residual=res)
        c = sw * z
        xt, yt = task.sample_test(n_test, seed)
        acc = float(np.mean((_Tester(ops, task, S, Kop, xt).logits(c) > 0) == (yt > 0.5)))
        best = acc
    else:
        with _one_blas_thread():
            c, history = _dynamics(method, ops, task, S, Kop, w_d, y_d, seed, steps,
                                   eval_every, batch_size, alpha0, n_test, info, progress)
        acc, best = history["test_accuracy"][-1], max(history["test_accuracy"])
    preds = None
    if test_x is not None:
        preds = _Tester(ops, task, S, Kop, test_x).logits(c)
    config = {"task": type(task).__name__, "d": task.d, "L": L, "sigma2": task.sigma2,
              "task_seed_entropy": int(task.seed_entropy), "seed": recorded_seed(seed),
              "backend": backend, "ridge": ridge, "tol": tol, "steps": steps,
              "alpha0": alpha0, "eval_every": eval_every, "batch_size": batch_size,
              "version": __version__}
    if method == "regression":
        for k in ("steps", "alpha0", "eval_every", "batch_size"):
            config.pop(k)
    return LazyResult(
        method=method, test_accuracy=acc,
        test_accuracy_se=math.sqrt(acc * (1.0 - acc) / n_test), best_test_accuracy=best,
        n_test=n_test, n_train_pairs=P, n_same=int(same.sum()), n_diff=int(P - same.sum()),
        pair_selection=selection, solver=solver, solver_info=info, history=history,
        predictions=preds, config=config, wall_time=time.perf_counter() - start)


def _needs(task, method, pairs, P, n_test, test_x, chunk, batch_size):
    """The allocations of ``lazy_limit`` that scale with its sizes, but the P x P kernel
    (checked against ``max_bytes``)."""
    L, p = task.L, task.input_dim
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
    if method == "logistic_sgd":       # pair indices, labels and offsets of an evaluation's steps
        needs.append(Need(48 * chunk * batch_size, f"the SGD batches ({chunk} steps x "
                          f"{batch_size} pairs)", "batch_size", batch_size))
    return needs


def _dynamics(method, ops, task, S, Kop, w_d, y_d, seed, steps, eval_every, batch_size, alpha0,
              n_test, info, progress):
    """Run logistic_flow (RK4) or logistic_sgd; return c and the history."""

    xp = ops.xp
    streams = train_streams(seed)
    c = xp.zeros(len(w_d))
    hist = {"step": [], "test_accuracy": [], "train_loss": []}
    if method == "logistic_flow":
        # the Jacobian of the flow has eigenvalues in [-alpha0 lambda_max / 4, 0]
        # (sigmoid' <= 1/4); RK4 steps h = 1/(2 mu) keep h |eigenvalue| <= 1/2
        lam_max = _lambda_max(Kop, xp.sqrt(w_d), xp)
        mu = 2.0 * alpha0 * lam_max / 4.0
        info.update(rk4_substeps_per_eval=max(1, math.ceil(eval_every * mu)),
                    lambda_max=lam_max)

        def rhs(cc):
            return -alpha0 * w_d * (_numerics.sigmoid(Kop @ cc, xp) - y_d)
    # a context manager, so that the bar is closed before an interrupt is reported
    with _progress.bar(progress, total=steps, unit="step",
                       desc=f"lazy limit, {method.replace('_', ' ')}") as bar:
        t = 0
        while t < steps:
            n = min(eval_every, steps - t)
            if method == "logistic_flow":
                n_sub = max(1, math.ceil(n * mu))
                h = n / n_sub
                for _ in range(n_sub):
                    k1 = rhs(c)
                    k2 = rhs(c + 0.5 * h * k1)
                    k3 = rhs(c + 0.5 * h * k2)
                    k4 = rhs(c + h * k3)
                    c = c + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
                loss = float(xp.sum(w_d * _numerics.bce(Kop @ c, y_d, xp)))
            else:
                bu, bv, by = task.draw_pairs(streams["pairs"], (n, batch_size))
                c, loss = ops.kernel_sgd(Kop, c, bu.astype(np.int64) * task.L + bv, by,
                                         alpha0 / batch_size)
            t += n
            xt, yt = task.sample_test(n_test, streams["test"])
            f = _Tester(ops, task, S, Kop, xt).logits(c)
            hist["step"].append(t)
            hist["test_accuracy"].append(float(np.mean((f > 0) == (yt > 0.5))))
            hist["train_loss"].append(loss)
            bar.update(n)
    return c, hist


def lazy_cell(d, L, *, task_seed=0, seed=0, method="logistic_flow", **kwargs):
    """One cell of the Fig. 1e lazy heatmap as a strict-JSON record.

    Builds ``SameDifferent(d, L, seed=task_seed)`` and returns
    ``lazy_limit(task, method, seed=seed, **kwargs).to_record()``.

    Parameters
    ----------
    d, L : int
        Symbol dimension (>= 1) and number of training symbols (>= 2).
    task_seed, seed : int
        Seeds of the symbols and of the solve (pair sample, test sets).
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
    from ..tasks import SameDifferent
    task = SameDifferent(d=d, L=L, seed=task_seed)
    rec = lazy_limit(task, method, seed=seed, **kwargs).to_record()
    rec["task_seed"] = int(task_seed)
    return rec
