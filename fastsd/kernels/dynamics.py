"""The lazy limit's function-space dynamics on a training kernel: regression, flow, SGD.

With f~(x) = sum_q c_q ntk(x, x_q) over the P training pairs, the state is c
(P,). Each function takes a solver ``op`` (``fastsd.kernels.solvers``: K @ V,
rows, diagonal, the regression solve) and returns c:

- ``regression``: weighted kernel ridge(less) regression on labels +-1,
  c = W^1/2 (W^1/2 K W^1/2 + lam I)^-1 W^1/2 y, lam = ridge times the mean
  diagonal of W^1/2 K W^1/2;
- ``logistic_flow``: the gradient flow of the weighted BCE,
  dc/dt = -alpha0 W (sigmoid(K c) - y), t in SGD steps, by exponential RK4
  steps that integrate the kernel's stiff leading mode exactly;
- ``logistic_sgd``: kernel SGD, c[b] -= (alpha0 / |B|) (sigmoid(f~(x_b)) - y_b)
  over the batches it is given;
- ``mean_difference``: the flow's direction at t = 0, c = W (2 y - 1).

The flows evaluate on a test set after each step of ``evals``
(``fastsd.schedules.Evaluations``) through the caller's ``evaluate(c, step)``
and return the history.
"""

import math

import numpy as np

from .. import _numerics, _progress
from ..tasks.base import BatchStream


def regression(op, w, y, *, ridge, tol, maxiter):
    """Weighted kernel ridge(less) regression of the labels 2 y - 1.

    Parameters
    ----------
    op : Solver
    w, y : arrays (P,) of the backend
        Class weights (sum 1) and labels in {0, 1}.
    ridge : float
        Ridge relative to the mean diagonal of W^1/2 K W^1/2, >= 0.
    tol, maxiter
        Passed to ``op.solve`` (iterative solvers).

    Returns
    -------
    c : array (P,)
    info : dict
        "ridge" and the solver's record of the solve ("jitter", ...).
    """
    xp = op.xp
    sw = xp.sqrt(w)
    b = sw * (2.0 * y - 1.0)
    lam = ridge * float(xp.sum(w * op.diagonal)) / len(w)
    z, solved = op.solve(w, b, lam, tol=tol, maxiter=maxiter)
    return sw * z, {"ridge": ridge, **solved}


def mean_difference(w, y):
    """The kernel mean-difference classifier: c = W (2 y - 1), the flow's direction at t = 0.

    From c = 0, dc/dt = -alpha0 W (sigmoid(0) - y) = (alpha0 / 2) W (2 y - 1): the flow
    starts along g(x) = sum_q c_q K(x, x_q) = (mean of K(x, .) over the same pairs - mean
    over the different pairs) / 2 (each class carries weight 1/2). g is O(1/d): the
    kernel's common part cancels in it, while the flow's second order in t does not, but
    is nearly the same for every input, so the flow's first logits are a g + b (their
    correlation with g is 1 - 1e-4 or closer, tests) and b moves the threshold. The
    classifier's accuracy: ``fastsd.theory.mean_difference_accuracy``.

    Parameters
    ----------
    w, y : arrays (P,) of the backend
        Class weights and labels in {0, 1}.

    Returns
    -------
    c : array (P,)
    """
    return w * (2.0 * y - 1.0)


#: Power iterations for each of the two leading eigenvalues (``top_modes``).
POWER_ITERS = 30
#: The flow's step: h = STEP / (alpha0 lambda_2 max sigma'), a fifth of RK4's stability limit
#: on the kernel's remainder (module notes of ``logistic_flow``).
STEP = 0.5
#: Largest change of any training logit a step may make (at the last step's rate), so that
#: S = diag sigmoid' frozen over a step stays close (it bounds the first, fast steps).
DRIFT = 0.05
#: |z| below which the phi functions are summed as series (no cancellation).
_SERIES = 0.5


def top_modes(op, sw, iters=POWER_ITERS):
    """The leading eigenpair of A = W^1/2 K W^1/2 and a bound on the next eigenvalue.

    Power iteration for (lambda_1, q), then on A - lambda_1 q q^T for lambda_2
    (times 1.05: power iteration approaches from below).

    Parameters
    ----------
    op : Solver
    sw : array (P,)
        W^1/2.
    iters : int, default ``POWER_ITERS``
        Iterations for each eigenvalue (2 ``iters`` products).

    Returns
    -------
    lambda_1 : float
    q : array (P,)
        Unit eigenvector of lambda_1.
    lambda_2 : float
    """
    xp = op.xp
    rng = np.random.default_rng(0)
    start = xp.asarray(rng.random(len(sw)) + 0.5)

    def power(project):
        v, lam = start / float(xp.linalg.norm(start)), 0.0
        for _ in range(iters):
            v = project(sw * (op @ (sw * project(v))))
            lam = float(xp.linalg.norm(v))
            if lam == 0.0:
                break
            v = v / lam
        return lam, v

    lam1, q = power(lambda v: v)
    lam2, _ = power(lambda v: v - q * float(q @ v))
    return lam1, q, 1.05 * lam2


def phi(z):
    """phi_0..phi_4 of the exponential integrators at a real z.

    phi_0(z) = e^z, phi_{k+1}(z) = (phi_k(z) - 1/k!) / z, phi_k(0) = 1/k!.

    Parameters
    ----------
    z : float

    Returns
    -------
    tuple of 5 floats
    """
    if abs(z) < _SERIES:        # sum_j z^j / (j + k)!: 20 terms reach float64 rounding here
        return tuple(math.fsum(z ** j / math.factorial(j + k) for j in range(20))
                     for k in range(5))
    out = [math.exp(z), math.expm1(z) / z]
    for k in range(1, 4):
        out.append((out[k] - 1.0 / math.factorial(k)) / z)
    return tuple(out)


def logistic_flow(op, w, y, evaluate, *, alpha0, evals, progress=False):
    """Gradient flow of the weighted BCE in function space, from c = 0.

    dc/dt = -alpha0 W (sigmoid(K c) - y), with Jacobian -alpha0 W S K,
    S = diag sigmoid'(K c). Its stiffness comes from one mode: the all-pairs
    kernel's entries share a large common part, so A = W^1/2 K W^1/2 has an
    isolated leading eigenvalue (lambda_2 / lambda_1 well below 1, smaller at
    larger d). Writing K = K_1 + K_rest with
    K_1 = lambda_1 W^-1/2 q q^T W^-1/2 (``top_modes``), each step is an
    exponential Runge-Kutta step (ETDRK4, Cox & Matthews 2002) of
    dc/dt = J_1 c + N(c): the rank-one linear part J_1 = -alpha0 W S_n K_1
    (S_n at the step's start) is integrated exactly through the scalar
    ``phi`` functions (O(P) work), the rest, N(c) = dc/dt - J_1 c,
    explicitly (ETDRK4 is classical RK4 when J_1 = 0). A step is at most
    h = ``STEP`` / (alpha0 lambda_2 max S_n), a fifth of RK4's stability
    limit on the remainder, and at most ``DRIFT`` / (the fastest training
    logit's rate over the last step), so that S_n frozen over a step stays
    close; steps are cut at the evaluations. Four kernel products a step
    (the last gives the next step's logits and the loss).

    Accuracy: the tests hold the test logits at every evaluation to 1e-6
    relative of SciPy's DOP853 at rtol 1e-12 (tests/test_kernels_lazy.py).

    Parameters
    ----------
    op : Solver
    w, y : arrays (P,) of the backend
        Class weights and labels in {0, 1}.
    evaluate : callable
        ``evaluate(c, step)`` -> test accuracy, called at each step of ``evals``.
    alpha0 : float
        Learning rate: one SGD step is alpha0 units of kernel time.
    evals : fastsd.schedules.Evaluations
        The SGD steps of the evaluations; the last, ``evals.steps``, is the flow's
        end. The flow's steps end at each (no evaluation is interpolated).
    progress : bool, default False
        A tqdm bar over the steps.

    Returns
    -------
    c : array (P,)
    history : dict of list
        "step", "test_accuracy", "train_loss" (the weighted BCE) at each evaluation.
    info : dict
        "flow_steps" (steps taken), "flow_products" (products K @ v made,
        the power iterations' included), "lambda_max" and "lambda_2" (of
        W^1/2 K W^1/2).
    """
    xp = op.xp
    count = {"flow_steps": 0, "flow_products": 2 * POWER_ITERS}
    with op.threads():
        sw = xp.sqrt(w)
        lam1, q, lam2 = top_modes(op, sw)
        r = q / sw                                  # K_1 c = lam1 r (r . c)

        def logits(cc):
            count["flow_products"] += 1
            return op @ cc

        def advance(c, n):
            f = at[0]
            left = float(n)
            while left > 0:
                s = _numerics.sigmoid(f, xp)
                ds = s * (1.0 - s)
                stiff = alpha0 * lam2 * float(xp.max(ds))
                h = min(left, STEP / stiff, DRIFT * at[1])
                p = (-alpha0 * lam1) * (w * ds) * r       # J_1 = p r^T
                mu = float(r @ p)                         # its one eigenvalue, <= 0

                def nonlinear(ff, cc):                    # N(c) = dc/dt - J_1 c, with ff = K cc
                    return -alpha0 * w * (_numerics.sigmoid(ff, xp) - y) - p * float(r @ cc)

                def apply(phis, k, t, v):                 # phi_k(t J_1) v, phis at t mu
                    return v / math.factorial(k) + (t * phis[k + 1] * float(r @ v)) * p

                half, full = phi(0.5 * h * mu), phi(h * mu)
                nu = nonlinear(f, c)
                eu = apply(half, 0, 0.5 * h, c)
                a = eu + 0.5 * h * apply(half, 1, 0.5 * h, nu)
                na = nonlinear(logits(a), a)
                b = eu + 0.5 * h * apply(half, 1, 0.5 * h, na)
                nb = nonlinear(logits(b), b)
                cc = apply(half, 0, 0.5 * h, a) + 0.5 * h * apply(half, 1, 0.5 * h, 2.0 * nb - nu)
                nc = nonlinear(logits(cc), cc)
                nab = na + nb
                c = (apply(full, 0, h, c)
                     + h * (apply(full, 1, h, nu) + apply(full, 2, h, 2.0 * nab - 3.0 * nu - nc)
                            + 4.0 * apply(full, 3, h, nu - nab + nc)))
                f_new = logits(c)                         # the next step's start and the loss
                at[1] = h / max(float(xp.max(xp.abs(f_new - f))), 1e-300)
                f = f_new
                count["flow_steps"] += 1
                left = 0.0 if h == left else left - h
            at[0] = f
            return c, float(xp.sum(w * _numerics.bce(f, y, xp)))

        c0 = xp.zeros(len(w))
        # the logits where the next step starts, and a step's length per unit of logit change
        # (first: as for RK4 on the whole kernel, where the logits move fastest)
        at = [logits(c0), 2.0 / (alpha0 * lam1 * DRIFT)]
        c, hist = _evolve("logistic_flow", advance, c0, evaluate, evals, progress)
    return c, hist, dict(count, lambda_max=lam1, lambda_2=lam2)


def logistic_sgd(op, draw, evaluate, *, lr, evals, progress=False):
    """Kernel SGD in function space from c = 0 (the backend's ``kernel_sgd``).

    Parameters
    ----------
    op : Solver
    draw : callable
        ``draw(n)`` -> (idx, y): the next n steps' batches, training pair
        indices (n, batch) int64 and labels (n, batch), host arrays.
    evaluate : callable
        ``evaluate(c, step)`` -> test accuracy, called at each step of ``evals``.
    lr : float
        Step size of c, alpha0 / batch size.
    evals : fastsd.schedules.Evaluations
        The SGD steps of the evaluations; the last, ``evals.steps``, is the run's end.
    progress : bool, default False

    Returns
    -------
    c : array (P,)
    history : dict of list
        "step", "test_accuracy", "train_loss" (the mean batch BCE) at each evaluation.
    """
    kernel_sgd = op.kernel.backend.kernel_sgd

    def advance(c, n):          # a block of batches at a time: memory does not grow with n
        total = 0.0
        for s in range(0, n, BatchStream.BLOCK):
            k = min(BatchStream.BLOCK, n - s)
            idx, y = draw(k)
            c, loss = kernel_sgd(op, c, idx, y, lr)
            total += loss * k
        return c, total / n

    with op.threads():
        return _evolve("logistic_sgd", advance, op.xp.zeros(len(op.diagonal)), evaluate, evals,
                       progress)


def _evolve(method, advance, c, evaluate, evals, progress):
    """Advance c by ``advance(c, n)`` -> (c, loss) up to each step of ``evals``, evaluating
    there; return c and the history."""
    hist = {"step": [], "test_accuracy": [], "train_loss": []}
    # a context manager, so that the bar is closed before an interrupt is reported
    with _progress.bar(progress, total=evals.steps, unit="step",
                       desc=f"lazy limit, {method.replace('_', ' ')}") as bar:
        t = 0
        for at in evals:
            c, loss = advance(c, at - t)
            bar.update(at - t)
            t = at
            hist["step"].append(t)
            hist["test_accuracy"].append(evaluate(c, t))
            hist["train_loss"].append(loss)
    return c, hist
