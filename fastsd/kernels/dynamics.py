"""The lazy limit's function-space dynamics on a training kernel: regression, flow, SGD.

With f~(x) = sum_q c_q ntk(x, x_q) over the P training pairs, the state is c
(P,). Each function takes a solver ``op`` (``fastsd.kernels.solvers``: K @ V,
rows, diagonal, the regression solve) and returns c:

- ``regression``: weighted kernel ridge(less) regression on labels +-1,
  c = W^1/2 (W^1/2 K W^1/2 + lam I)^-1 W^1/2 y, lam = ridge times the mean
  diagonal of W^1/2 K W^1/2;
- ``logistic_flow``: the gradient flow of the weighted BCE,
  dc/dt = -alpha0 W (sigmoid(K c) - y), t in SGD steps, by RK4 at steps
  h |eigenvalue| <= 1/2 of its Jacobian where the step starts;
- ``logistic_sgd``: kernel SGD, c[b] -= (alpha0 / |B|) (sigmoid(f~(x_b)) - y_b)
  over the batches it is given.

The flows evaluate on a test set every ``eval_every`` steps through the
caller's ``evaluate(c)`` and return the history.
"""

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


#: Power iterations of ``lambda_max``.
LAMBDA_ITERS = 30


def lambda_max(op, sw, iters=LAMBDA_ITERS):
    """Largest eigenvalue of W^1/2 K W^1/2 by power iteration (times 1.05 for safety).

    Parameters
    ----------
    op : Solver
    sw : array (P,)
        W^1/2.
    iters : int, default ``LAMBDA_ITERS``

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

    The Jacobian of dc/dt = -alpha0 W (sigmoid(K c) - y) is -alpha0 W S K,
    S = diag sigmoid'(K c); its eigenvalues are those of -alpha0 S^1/2
    (W^1/2 K W^1/2) S^1/2, at most alpha0 lambda_max max(S) in magnitude. Each
    RK4 step takes h = 1 / (2 alpha0 lambda_max max(S)) at the logits it starts
    from (h |eigenvalue| <= 1/2; RK4 is stable to 2.78), cut at the next
    evaluation: steps lengthen as the training logits leave 0 and the loss
    saturates (sigmoid' <= 1/4 bounds the first ones).

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
        "rk4_steps" (RK4 steps taken), "flow_products" (products K @ v made,
        the power iteration's included) and "lambda_max" (of W^1/2 K W^1/2).
    """
    xp = op.xp
    count = {"rk4_steps": 0, "flow_products": LAMBDA_ITERS}
    with op.threads():
        lam_max = lambda_max(op, xp.sqrt(w))

        def stage(cc):
            """The flow's velocity at cc, and the logits K cc."""
            f = op @ cc
            count["flow_products"] += 1
            return -alpha0 * w * (_numerics.sigmoid(f, xp) - y), f

        c0 = xp.zeros(len(w))
        at = [stage(c0)]                      # the velocity and logits where the next step starts

        def advance(c, n):
            k1, f = at[0]
            left = float(n)
            while left > 0:
                s = _numerics.sigmoid(f, xp)
                stiff = alpha0 * lam_max * float(xp.max(s * (1.0 - s)))
                h = left if 2.0 * stiff * left <= 1.0 else 0.5 / stiff
                k2 = stage(c + 0.5 * h * k1)[0]
                k3 = stage(c + 0.5 * h * k2)[0]
                k4 = stage(c + h * k3)[0]
                c = c + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
                k1, f = stage(c)              # the next step's first stage: the logits at c
                count["rk4_steps"] += 1
                left = 0.0 if h == left else left - h
            at[0] = k1, f
            return c, float(xp.sum(w * _numerics.bce(f, y, xp)))

        c, hist = _evolve("logistic_flow", advance, c0, evaluate, steps, eval_every, progress)
    return c, hist, dict(count, lambda_max=lam_max)


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

    def advance(c, n):          # a block of batches at a time: memory does not grow with n
        total = 0.0
        for s in range(0, n, BatchStream.BLOCK):
            k = min(BatchStream.BLOCK, n - s)
            idx, y = draw(k)
            c, loss = kernel_sgd(op, c, idx, y, lr)
            total += loss * k
        return c, total / n

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
