"""Evaluate any two-layer network given as ``Params`` (ReLU, or another activation):
trained, initial or hand-built."""

import numpy as np

from .._stats import accuracy_se
from .._validation import check_array, check_float, check_int, check_seed
from ..activations import get_activation
from . import _reference
from .model import Params


def _check_params(name, params):
    if not isinstance(params, Params):
        raise TypeError(f"`{name}` must be a fastsd Params; got {type(params).__name__}.")
    w = check_array(f"{name}.w", params.w, ndim=2)
    a = check_array(f"{name}.a", params.a, shape=(w.shape[0],))
    return w, a


def output(params, x, *, scale=1.0, initial=None, activation="relu"):
    """Network output f(x) = scale * sum_i a_i relu(w_i . x) (Eq. 1), centered on request.

    With another activation sigma the hidden unit is sigma(sqrt(m) w_i . x) / sqrt(m)
    (``fastsd.activations.Activation.unit``).

    Parameters
    ----------
    params : Params
        Weights w (m, p) and readouts a (m,).
    x : array_like, shape (n, p)
        Input pairs.
    scale : float, default 1.0
        Output scale, e.g. 1/(gamma sqrt(d)) for trained models (Eq. 1); Eq. 2's
        hand-crafted network has none.
    initial : Params, optional
        When given, the centered output f(x; params) - f(x; initial) (App. F).
    activation : str or fastsd.activations.Activation, default "relu"
        The hidden units' activation (``fastsd.activations.ACTIVATIONS``).

    Returns
    -------
    ndarray, shape (n,), float64
        Logits; the predicted label is 1 (same) where the logit is > 0.

    Raises
    ------
    TypeError
        When ``params`` or ``initial`` is not a Params.
    ValueError
        For wrong shapes or NaN/inf in the weights or in ``x``; naming ``activation`` for
        one that is not an activation.
    """
    w, a = _check_params("params", params)
    x = check_array("x", x, shape=(None, w.shape[1]))
    scale = check_float("scale", scale, positive=True)
    act = get_activation(activation)
    if initial is None:
        return _reference.raw_output(w, a, x, scale, act)
    w0, a0 = _check_params("initial", initial)
    if w0.shape != w.shape:
        raise ValueError(f"`initial` must have the shape of `params` {w.shape}; got {w0.shape}.")
    return _reference.centered_output(w0, a0, w, a, x, scale, act)


def accuracy(params, task, *, n_test=10000, seed=None, scale=1.0, initial=None,
             activation="relu"):
    """Monte Carlo test accuracy on fresh symbols, overall and per label, with standard errors.

    Parameters
    ----------
    params, scale, initial, activation
        As in ``output``.
    task : Task
        Supplies ``sample_test`` (fresh symbols for every pair).
    n_test : int, default 10000
        Test pairs, >= 2; half same, half different.
    seed : int, SeedSequence, Generator or None

    Returns
    -------
    dict
        "accuracy", "same_accuracy", "different_accuracy" and their standard
        errors "*_se" (``fastsd._stats.accuracy_se``: about sqrt(p (1 - p) / n),
        never 0), and "n_test".

    Raises
    ------
    TypeError, ValueError
        For bad parameters, as in ``output``.
    """
    n_test = check_int("n_test", n_test, minimum=2)
    check_seed("seed", seed)
    x, y = task.sample_test(n_test, seed)
    correct = (output(params, x, scale=scale, initial=initial, activation=activation) > 0) \
        == (y > 0.5)
    out = {"n_test": n_test}
    for name, mask in (("accuracy", np.ones_like(y, bool)), ("same_accuracy", y > 0.5),
                       ("different_accuracy", y < 0.5)):
        p = float(correct[mask].mean())
        out[name] = p
        out[name + "_se"] = accuracy_se(p, int(mask.sum()))
    return out
