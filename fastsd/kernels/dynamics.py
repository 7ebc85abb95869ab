"""The lazy limit's function-space dynamics on a training kernel: regression, flow, SGD.

With f~(x) = sum_q c_q ntk(x, x_q) over the P training pairs, the state is c
(P,). Each function takes a solver ``op`` (``fastsd.kernels.solvers``: K @ V,
rows, diagonal, the regression solve) and returns c:

- ``regression``: weighted kernel ridge(less) regression on labels +-1,
  c = W^1/2 (W^1/2 K W^1/2 + lam I)^-1 W^1/2 y, lam = ridge times the mean
  diagonal of W^1/2 K W^1/2;
- ``logistic_flow``: the gradient flow of the weighted BCE,
  dc/dt = -alpha0 W (sigmoid(K c) - y), t in SGD steps, by RK4 at steps
  h |eigenvalue| <= 1/2 of its Jacobian;
- ``logistic_sgd``: kernel SGD, c[b] -= (alpha0 / |B|) (sigmoid(f~(x_b)) - y_b)
  over the batches it is given.

The flows evaluate on a test set every ``eval_every`` steps through the
caller's ``evaluate(c)`` and return the history.
"""
import math

import numpy as np

from .. import _numerics, _progress


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


def lambda_max(op, sw, iters=30):
    """Largest eigenvalue of W^1/2 K W^1/2 by power iteration (times 1.05 for safety).

    Parameters
    ----------
    op : Solver
    sw : array (P,)
        W^1/2.
    iters : int, default 30

    Returns
    -------
    float
    """
    xp = op.xp
    rng = np.random.default_rng(0)
    q = xp.asarray(rng.random(len(sw)) + 0.5)
    lam = 0.0
    for _ in range(iters):
        q = sw * (op @ (sw * q))
        lam = float(xp.linalg.norm(q))
        q = q / lam
    return 1.05 * lam


def logistic_flow(op, w, y, evaluate, *, alpha0, steps, eval_every, progress=False):
    """Gradient flow of the weighted BCE in function space, by RK4, from c = 0.

    Parameters
    ----------
    op : Solver
    w, y : arrays (P,) of the backend
        Class weights and labels in {0, 1}.
    evaluate : callable
        ``evaluate(c)`` -> test accuracy, called after every ``eval_every`` steps.
    alpha0 : float
        Learning rate: one SGD step is alpha0 units of kernel time.
    steps, eval_every : int
    progress : bool, default False
        A tqdm bar over the steps.

    Returns
    -------
    c : array (P,)
    history : dict of list
        "step", "test_accuracy", "train_loss" (the weighted BCE) at each evaluation.
    info : dict
        "rk4_substeps_per_eval" and "lambda_max" (of W^1/2 K W^1/2).
    """
    xp = op.xp
    with op.threads():
        # the Jacobian of the flow has eigenvalues in [-alpha0 lambda_max / 4, 0]
        # (sigmoid' <= 1/4); RK4 steps h = 1/(2 mu) keep h |eigenvalue| <= 1/2
        lam_max = lambda_max(op, xp.sqrt(w))
        mu = 2.0 * alpha0 * lam_max / 4.0

        def rhs(cc):
            return -alpha0 * w * (_numerics.sigmoid(op @ cc, xp) - y)

        def advance(c, n):
            n_sub = max(1, math.ceil(n * mu))
            h = n / n_sub
            for _ in range(n_sub):
                k1 = rhs(c)
                k2 = rhs(c + 0.5 * h * k1)
                k3 = rhs(c + 0.5 * h * k2)
                k4 = rhs(c + h * k3)
                c = c + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            return c, float(xp.sum(w * _numerics.bce(op @ c, y, xp)))

        c, hist = _evolve("logistic_flow", advance, xp.zeros(len(w)), evaluate, steps,
                          eval_every, progress)
    return c, hist, {"rk4_substeps_per_eval": max(1, math.ceil(eval_every * mu)),
                     "lambda_max": lam_max}


def logistic_sgd(op, draw, evaluate, *, lr, steps, eval_every, progress=False):
    """Kernel SGD in function space from c = 0 (the backend's ``kernel_sgd``).

    Parameters
    ----------
    op : Solver
    draw : callable
        ``draw(n)`` -> (idx, y): the next n steps' batches, training pair
        indices (n, batch) int64 and labels (n, batch), host arrays.
    evaluate : callable
        ``evaluate(c)`` -> test accuracy, called after every ``eval_every`` steps.
    lr : float
        Step size of c, alpha0 / batch size.
    steps, eval_every : int
    progress : bool, default False

    Returns
    -------
    c : array (P,)
    history : dict of list
        "step", "test_accuracy", "train_loss" (the mean batch BCE) at each evaluation.
    """
    kernel_sgd = op.kernel.backend.kernel_sgd

    def advance(c, n):
        idx, y = draw(n)
        return kernel_sgd(op, c, idx, y, lr)

    with op.threads():
        return _evolve("logistic_sgd", advance, op.xp.zeros(len(op.diagonal)), evaluate, steps,
                       eval_every, progress)


def _evolve(method, advance, c, evaluate, steps, eval_every, progress):
    """Advance c by ``advance(c, n)`` -> (c, loss) in chunks of ``eval_every`` steps,
    evaluating after each; return c and the history."""
    hist = {"step": [], "test_accuracy": [], "train_loss": []}
    # a context manager, so that the bar is closed before an interrupt is reported
    with _progress.bar(progress, total=steps, unit="step",
                       desc=f"lazy limit, {method.replace('_', ' ')}") as bar:
        t = 0
        while t < steps:
            n = min(eval_every, steps - t)
            c, loss = advance(c, n)
            t += n
            hist["step"].append(t)
            hist["test_accuracy"].append(evaluate(c))
            hist["train_loss"].append(loss)
            bar.update(n)
    return c, hist
