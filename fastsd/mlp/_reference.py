"""Float64 NumPy reference of the centered MLP and its SGD step: the truth.

Written for clarity, not speed. The centered output (App. F) is
f~(x) = f(x; theta) - f(x; theta0) with
f(x; theta) = scale * sum_i a_i relu(w_i . x), scale = 1/(gamma sqrt(d)), and for another
activation sigma the hidden unit sigma(sqrt(m) w_i . x) / sqrt(m) (``Activation.unit``).

Backend "numpy" of the mlp family: ``ReferenceEngine`` runs these functions
one model and one step at a time (``ENGINES``, see ``_cpu`` for the interface).
"""
import numpy as np

from .._numerics import bce, sigmoid
from ..activations import ACTIVATIONS
from .model import Params

RELU = ACTIVATIONS["relu"]


def raw_output(w, a, x, scale, act=RELU):
    """Uncentered f(x) = scale * sum_i a_i unit_i(x) (relu(w_i . x) for ReLU); x (n, p) ->
    (n,); ``act`` a ``fastsd.activations.Activation``."""
    return scale * act.unit(x @ w.T) @ a


def centered_output(w0, a0, w, a, x, scale, act=RELU):
    """Centered f~(x) = f(x; w, a) - f(x; w0, a0); x (n, p) -> (n,)."""
    return raw_output(w, a, x, scale, act) - raw_output(w0, a0, x, scale, act)


def loss_and_grads(w0, a0, w, a, x, y, scale, act=RELU):
    """Mean BCE over the batch and its gradients with respect to w and a.

    Returns
    -------
    loss : float
    grad_w : ndarray, shape (m, p)
    grad_a : ndarray, shape (m,)
    f : ndarray, shape (n,)
        The centered outputs, for accuracy bookkeeping.
    """
    n = x.shape[0]
    f = centered_output(w0, a0, w, a, x, scale, act)
    err = sigmoid(f) - y                      # dBCE/df
    h = x @ w.T
    grad_a = scale * act.unit(h).T @ err / n
    grad_h = scale * err[:, None] * a[None, :] * act.unit_derivative(h)
    grad_w = grad_h.T @ x / n
    return float(np.mean(bce(f, y))), grad_w, grad_a, f


def sgd_step(w0, a0, w, a, x, y, scale, lr, act=RELU):
    """One plain SGD step; returns (w, a, loss, f) with new arrays."""
    loss, gw, ga, f = loss_and_grads(w0, a0, w, a, x, y, scale, act)
    return w - lr * gw, a - lr * ga, loss, f


class ReferenceEngine:
    """Float64 NumPy reference, one model at a time, dense inputs (see ``_cpu`` for the
    engine interface); any activation."""

    any_activation = True

    def __init__(self, tasks, params0, scales, lrs, dtype, activation=RELU):
        self.tasks, self.act = tasks, activation
        self.p0 = params0
        self.w = [p.w.copy() for p in params0]
        self.a = [p.a.copy() for p in params0]
        self.scales, self.lrs = scales, lrs

    def run(self, pairs, noise_rngs):
        n = pairs[0][0].shape[0]
        loss = np.empty((len(self.tasks), n))
        acc = np.empty_like(loss)
        for k, (task, (u, v, y), rng) in enumerate(zip(self.tasks, pairs, noise_rngs)):
            for t in range(n):
                x = task.training_inputs(u[t], v[t], rng)
                self.w[k], self.a[k], loss[k, t], f = sgd_step(
                    self.p0[k].w, self.p0[k].a, self.w[k], self.a[k], x, y[t],
                    self.scales[k], self.lrs[k], self.act)
                acc[k, t] = np.mean((f > 0) == (y[t] > 0.5))
        return loss, acc

    def outputs(self, X, sources=None):
        """Centered outputs at X (M, n, p) -> (M, n); ``sources`` is unused here."""
        return np.stack([centered_output(p.w, p.a, w, a, x, s, self.act) for p, w, a, x, s
                         in zip(self.p0, self.w, self.a, X, self.scales)])

    def params(self):
        return list(self.p0), [Params(w=w, a=a) for w, a in zip(self.w, self.a)]


#: The reference trains on dense inputs only.
ENGINES = {"dense": ReferenceEngine}
