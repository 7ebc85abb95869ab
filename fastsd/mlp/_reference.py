"""Float64 NumPy reference of the centered MLP and its SGD step: the truth.

Written for clarity, not speed. The centered output (App. F) is
f~(x) = f(x; theta) - f(x; theta0) with
f(x; theta) = scale * sum_i a_i relu(w_i . x), scale = 1/(gamma sqrt(d)).
"""
import numpy as np

from .._numerics import bce, sigmoid


def relu(h):
    """max(h, 0)."""
    return np.maximum(h, 0.0)


def relu_grad(h):
    """Derivative of ReLU with relu'(0) = 0."""
    return (h > 0).astype(h.dtype)


def raw_output(w, a, x, scale):
    """Uncentered f(x) = scale * sum_i a_i relu(w_i . x); x (n, p) -> (n,)."""
    return scale * relu(x @ w.T) @ a


def centered_output(w0, a0, w, a, x, scale):
    """Centered f~(x) = f(x; w, a) - f(x; w0, a0); x (n, p) -> (n,)."""
    return raw_output(w, a, x, scale) - raw_output(w0, a0, x, scale)


def loss_and_grads(w0, a0, w, a, x, y, scale):
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
    f = centered_output(w0, a0, w, a, x, scale)
    err = sigmoid(f) - y                      # dBCE/df
    h = x @ w.T
    grad_a = scale * relu(h).T @ err / n
    grad_h = scale * err[:, None] * a[None, :] * relu_grad(h)
    grad_w = grad_h.T @ x / n
    return float(np.mean(bce(f, y))), grad_w, grad_a, f


def sgd_step(w0, a0, w, a, x, y, scale, lr):
    """One plain SGD step; returns (w, a, loss, f) with new arrays."""
    loss, gw, ga, f = loss_and_grads(w0, a0, w, a, x, y, scale)
    return w - lr * gw, a - lr * ga, loss, f
