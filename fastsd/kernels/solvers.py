"""Solvers of the lazy limit: how the P x P pair kernel is held, applied and solved.

A solver wraps a ``fastsd.kernels.pairs.PairKernel`` and is the training-kernel
operator the dynamics (``fastsd.kernels.dynamics``) and the backends'
``kernel_sgd`` work with. ``choose_solver`` picks one by name from ``SOLVERS``
or, for "auto", by the rule below.

The interface (``Solver``)
--------------------------
Class attributes and methods, used before anything is allocated:

``name`` : str
    The ``solver=`` value it answers to (set by ``register_solver``).
``auto_rank`` : int
    Its place in solver="auto"'s order of preference, lower first (set by
    ``register_solver``).
``memory_bytes(P)``
    Bytes it stores for P training pairs, beyond O(P) vectors (recorded as
    ``solver_info["kernel_bytes"]``).
``refusal(size)``
    Why it cannot take the problem ``size`` (a ``SolveSize``) when asked for
    by name, as a whole error message, or None when it can.
``auto_refusal(size)``
    Why solver="auto" passes it over, as a phrase ("the dense kernel needs
    ..."), or None when "auto" may take it.
``auto_prefers(size)``
    Whether "auto" should try it before the solvers of lower ``auto_rank``
    for this problem (measured faster there); False by default.

An instance, ``cls(kernel, size, progress=False)`` (``size`` the ``SolveSize``
it was chosen for, or None: no memory limit and the solver's default accuracy;
``progress``: show bars on stderr for its builds and iterative solves), builds
what it stores and provides:

``op.kernel``, ``op.xp``
    The ``PairKernel`` it was built on (its backend module, the symbol Gram G,
    the pairs u, v and norms n2: what a structured solver reads) and the
    backend's array module.
``op @ V``
    K @ V for V of shape (P,) or (P, r) (the flows' products, power iteration).
``op.rows(idx)``
    K[idx], shape (len(idx), P) (kernel SGD's batch rows).
``op.diagonal``
    The kernel's diagonal, |x_p|^2 (P,), a backend array (ridge scale, preconditioner).
``op.matrix``
    The stored P x P kernel, or None; a backend may run faster on it (``kernel_sgd``).
``op.logits(x, c)``
    Logits sum_q c_q k(x_i, x_q) at test pairs x (n, 2d), a NumPy array
    (n,); by default ``fastsd.kernels.pairs.Logits`` (matrix-free, n P
    kernel entries).
``op.solve(w, b, lam, tol=, maxiter=)``
    z with (W^1/2 K W^1/2 + lam I) z = b, W = diag(w), and a dict of what the
    record should say about the solve (at least "jitter": the lam used).
``op.record()``
    The solver's part of ``solver_info`` before any solve ("kernel_bytes").
``op.counts()``
    What it counted while in use (a structured solver's products), added to
    ``solver_info`` at the end; {} by default.
``op.threads()``
    A context manager for the BLAS threading its products want, entered by
    the dynamics and the regression solve: one thread by default (memory-bound
    matrix-vector products, ``fastsd._threads.compute``).

The auto rule: the solvers that prefer the problem (``auto_prefers``) first,
then by ``auto_rank``; the first whose ``auto_refusal`` is None is taken; when
all refuse, ``SolveTooLargeError`` with every reason. With "dense" (rank 0:
stored, Cholesky), "kron" (rank 1: all pairs as a sum of Kronecker products,
``fastsd.kernels.kron``) and "cg" (rank 2: matrix-free, Jacobi-preconditioned
conjugate gradients) that is: "kron" for all pairs where it was measured
faster than "dense" (``KronSolver.auto_prefers``: the flow from L = 48, the
regression from L = 64 at d >= 32, never kernel SGD) and has room for 64
terms; else "dense" when 8 P^2 bytes fit in ``max_bytes``; else "kron" for all
pairs; else "cg" up to ``CG_MAX_PAIRS`` pairs.

Adding a solver (as ``fastsd.kernels.kron`` does): one module defining a
``Solver`` subclass decorated with ``@register_solver(name, auto_rank=...)``,
and one line importing that module in ``fastsd/kernels/__init__.py``
(``from . import kron``, which registers it before any call can name it), and
its name in ``fastsd.params.LAZY_LIMIT["solver"]``. ``lazy_limit`` and the
dynamics use only the interface above; a solver that needs a new backend
primitive adds its name to the kernels family's interface
(``fastsd._dispatch.FAMILIES``) and to each backend module.

Regularisation
--------------
Regression solves (W^1/2 K W^1/2 + lam I) z = W^1/2 y. "dense": should the
Cholesky factorisation fail (duplicate pairs with ridge = 0, a numerically
singular Gram), lam is raised tenfold from 1e-12 of the mean diagonal until it
succeeds. "cg" uses lam >= 1e-12 of the mean diagonal of W^1/2 K W^1/2. The
lam used is the "jitter" of the record.
"""
from dataclasses import dataclass, replace

import numpy as np

from .. import _progress, _threads
from .._memory import fmt_bytes
from ..exceptions import SizeTooLargeError
from .pairs import Logits

#: Above this many training pairs the matrix-free solver (O(P^2) kernel
#: evaluations per product) is refused by solver="auto" as too slow.
CG_MAX_PAIRS = 1 << 17


class SolveTooLargeError(SizeTooLargeError):
    """A requested exact solve would not fit in memory (or time); raised before allocating."""


@dataclass(frozen=True)
class SolveSize:
    """What a solver is asked to handle, known before anything is allocated.

    Attributes
    ----------
    P : int
        Training pairs.
    L : int
        Symbols.
    all_pairs : bool
        Whether the pairs are all L^2 ordered pairs (pairs="all").
    max_bytes : int
        Memory allowed for what the solver stores.
    kernel_tol : float, optional
        Relative Frobenius error allowed to an approximate kernel store
        (``lazy_limit``'s ``kernel_tol``); None: the solver's default. Exact
        solvers ignore it.
    method : {"regression", "logistic_flow", "logistic_sgd"}, optional
        What the kernel is used for (``lazy_limit``'s ``method``): what
        ``auto_prefers`` weighs (products, solves, or batch rows).
    d : int, optional
        The symbols' dimension; None: unknown.
    dtype : {"float64", "float32"}
        The arithmetic of the kernel products (``lazy_limit``'s ``dtype``); a
        solver takes the dtypes in its ``dtypes``.
    """

    P: int
    L: int
    all_pairs: bool
    max_bytes: int
    kernel_tol: float = None
    method: str = "regression"
    d: int = None
    dtype: str = "float64"


#: Solver name -> class, filled by ``register_solver``.
SOLVERS = {}


def register_solver(name, *, auto_rank):
    """Class decorator: make a ``Solver`` subclass available as ``solver=name``.

    Parameters
    ----------
    name : str
        A new name (not "auto"), set as the class's ``name``.
    auto_rank : int
        Its place in solver="auto"'s order of preference (lower first).

    Raises
    ------
    ValueError
        For a name already taken.
    """
    if name in SOLVERS or name == "auto":
        raise ValueError(f"`name` must be a new solver name; {name!r} is taken.")

    def register(cls):
        cls.name, cls.auto_rank = name, auto_rank
        SOLVERS[name] = cls
        return cls
    return register


def choose_solver(name, size):
    """The solver class for ``solver=name`` on a problem of ``size``.

    Parameters
    ----------
    name : str
        "auto" or a name in ``SOLVERS`` (validated by the caller).
    size : SolveSize

    Returns
    -------
    type
        A ``Solver`` subclass.

    Raises
    ------
    SolveTooLargeError
        When the named solver refuses ``size``, or ("auto") every solver does.
    """
    if name != "auto":
        cls = SOLVERS[name]
        if size.dtype not in cls.dtypes:
            takers = [c.name for c in SOLVERS.values() if size.dtype in c.dtypes]
            raise ValueError(f"`dtype` = {size.dtype!r} needs solver="
                             f"{' or '.join(repr(t) for t in takers)} (its kernel products in "
                             f"{size.dtype}); got solver={name!r}.")
        why = cls.refusal(size)
        if why is not None:
            raise SolveTooLargeError(why)
        return cls
    ranked = sorted(SOLVERS.values(), key=lambda c: (not c.auto_prefers(size), c.auto_rank))
    # other products than float64: only the solvers offering them serve, each as if named
    # ("auto"'s speed preferences weigh solvers against one another, and there is no other)
    special = size.dtype != "float64"
    reasons = []
    for cls in ranked:
        if special and size.dtype not in cls.dtypes:
            continue
        why = cls.refusal(size) if special else cls.auto_refusal(size)
        if why is None:
            return cls
        reasons.append(why)
    if special:
        takers = [c for c in ranked if size.dtype in c.dtypes]
        roomy = replace(size, max_bytes=2**62)
        if all(c.refusal(roomy) is not None for c in takers):   # a clash, not a size
            takers = [c.name for c in takers]
            raise ValueError(
                f"`dtype` = {size.dtype!r} runs only on solver "
                f"{' or '.join(repr(t) for t in takers)}, which cannot take this problem: "
                f"{' '.join(reasons)} Use dtype='float64' (solver='auto' then takes another).")
        raise SolveTooLargeError(" ".join(reasons))
    insist = " or ".join(f"solver={c.name!r}" for c in ranked if c.refusal(size) is None)
    raise SolveTooLargeError(
        f"P = {size.P} training pairs is too many for an exact solve: {' and '.join(reasons)}; "
        f"use pairs=<n> to sample n pairs" + (f", or {insist} to insist." if insist else "."))


class Solver:
    """Base of the solvers: the interface in the module notes, and its defaults.

    Parameters
    ----------
    kernel : PairKernel
        The training pairs' kernel on a backend.
    size : SolveSize, optional
        What it was chosen for (memory allowed, accuracy asked).
    progress : bool, default False
        Show progress bars (stderr) over its builds and iterative solves.
    """

    name = None
    auto_rank = 0
    #: The product arithmetics it offers (``SolveSize.dtype``).
    dtypes = ("float64",)

    @classmethod
    def memory_bytes(cls, P):
        """Bytes stored for P pairs beyond O(P) vectors (0: matrix-free)."""
        return 0

    @classmethod
    def refusal(cls, size):
        """Why this solver cannot take ``size`` when asked by name, or None."""
        return None

    @classmethod
    def auto_refusal(cls, size):
        """Why solver="auto" passes this solver over for ``size`` (a phrase), or None."""
        return cls.refusal(size)

    @classmethod
    def auto_prefers(cls, size):
        """Whether solver="auto" tries this solver before those of lower rank for ``size``."""
        return False

    def __init__(self, kernel, size=None, progress=False):
        self.kernel = kernel
        self.progress = progress
        self.xp = kernel.xp
        self.diagonal = kernel.diagonal
        self.matrix = None

    def __matmul__(self, V):
        raise NotImplementedError

    def rows(self, idx):
        """Kernel rows K[idx], shape (len(idx), P)."""
        raise NotImplementedError

    def solve(self, w, b, lam, *, tol, maxiter):
        """z with (W^1/2 K W^1/2 + lam I) z = b, and the record's entries about the solve."""
        raise NotImplementedError

    def logits(self, x, c):
        """Logits at the test pairs ``x`` (n, 2d) of the coefficients ``c`` (P,), NumPy (n,)."""
        return Logits(self.kernel, x).logits(c)

    def record(self):
        """The solver's entries of ``solver_info`` before a solve."""
        return {"kernel_bytes": self.memory_bytes(len(self.kernel))}

    def counts(self):
        """What the solver counted while in use, for ``solver_info`` (none by default)."""
        return {}

    def threads(self):
        """The BLAS threading of its products: one thread (``fastsd._threads.compute``)."""
        return _threads.compute()


@register_solver("dense", auto_rank=0)
class DenseSolver(Solver):
    """The stored P x P kernel (8 P^2 bytes) and a Cholesky solve."""

    @classmethod
    def memory_bytes(cls, P):
        """8 P^2: the float64 kernel."""
        return 8 * P * P

    @classmethod
    def refusal(cls, size):
        """The kernel must fit in ``max_bytes``."""
        if cls.memory_bytes(size.P) <= size.max_bytes:
            return None
        return (f"an exact dense solve over P = {size.P} training pairs needs "
                f"{fmt_bytes(cls.memory_bytes(size.P))} for the P x P float64 kernel, more than "
                f"`max_bytes` = {fmt_bytes(size.max_bytes)}; use solver='cg' (matrix-free), "
                f"pairs=<n> to sample n pairs, or raise `max_bytes`.")

    @classmethod
    def auto_refusal(cls, size):
        """As ``refusal``, as a phrase."""
        if cls.refusal(size) is None:
            return None
        return (f"the dense kernel needs {fmt_bytes(cls.memory_bytes(size.P))} "
                f"(`max_bytes` = {fmt_bytes(size.max_bytes)})")

    def __init__(self, kernel, size=None, progress=False):
        super().__init__(kernel, size, progress)
        self.matrix = kernel.matrix()

    def __matmul__(self, V):
        return self.matrix @ V

    def rows(self, idx):
        """Rows of the stored kernel."""
        return self.matrix[idx]

    def solve(self, w, b, lam, *, tol, maxiter):
        """Cholesky, lam raised tenfold from 1e-12 of the mean diagonal until it factorises."""
        sw = self.xp.sqrt(w)
        z, lam = _cholesky_solve(self.kernel.backend, sw[:, None] * self.matrix * sw[None, :],
                                 b, lam)
        return z, {"jitter": lam}


@register_solver("cg", auto_rank=2)
class CGSolver(Solver):
    """Matrix-free: products by the backend's ``pair_kernel_matvec``, Jacobi-preconditioned CG."""

    @classmethod
    def auto_refusal(cls, size):
        """More than ``CG_MAX_PAIRS`` pairs is too slow (P^2 kernel evaluations a product)."""
        if size.P <= CG_MAX_PAIRS:
            return None
        return f"a matrix-free product costs P^2 = {size.P * size.P:.2e} kernel evaluations"

    def __matmul__(self, V):
        return self.kernel.matvec(V)

    def rows(self, idx):
        """Rows computed afresh from the Gram."""
        return self.kernel.rows(idx)

    def solve(self, w, b, lam, *, tol, maxiter):
        """CG to relative residual ``tol`` or ``maxiter`` iterations, lam >= 1e-12 of the mean."""
        xp = self.xp
        sw = xp.sqrt(w)
        lam = lam if lam > 0 else 1e-12 * float(xp.sum(w * self.diagonal)) / len(w)
        with self.threads(), _progress.bar(self.progress, total=maxiter, unit="it",
                                           desc=f"{self.name} regression (CG)") as bar:
            z, it, res = _cg(lambda q: sw * (self @ (sw * q)) + lam * q, b,
                             w * self.diagonal + lam, tol, maxiter, xp, bar.update)
        return z, {"jitter": lam, "cg_iterations": it, "cg_relative_residual": res}


def _cholesky_solve(backend, A, b, lam0):
    """Solve (A + lam I) z = b by Cholesky, raising lam tenfold from lam0 on failure."""
    xp = backend.xp
    mean_diag = float(xp.mean(xp.diag(A)))
    lam = lam0
    floor = 1e-12 * mean_diag
    eye = xp.eye(A.shape[0])
    while True:
        try:
            return backend.cho_solve(A + lam * eye, b), lam
        except np.linalg.LinAlgError:
            lam = max(10.0 * lam, floor)
            if lam > mean_diag:
                raise


def _cg(apply, b, diag, tol, maxiter, xp, step=lambda n: None):
    """Jacobi-preconditioned conjugate gradients; returns z, iterations, relative residual.

    ``step(1)`` is called after each iteration (a progress bar's ``update``).
    """
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
        step(1)
    return z, it, res
