"""The logistic link and binary cross-entropy, written once for every backend.

The paper's loss is BCE on the logit f with label y in {0, 1} (Sec. 2,
App. G.1); its gradient in f is sigmoid(f) - y. Both are computed so that no
input overflows: sigmoid branches on the sign of f, and
BCE(f, y) = softplus(t) = max(t, 0) + log1p(exp(-|t|)) with t = (1 - 2y) f,
which is finite for every finite f and the exact limit (0 or +inf) at +-inf.

* ``sigmoid`` and ``bce`` are the array forms, over NumPy or CuPy (``xp``),
  in float64: the MLP's NumPy reference and the lazy limit use them.
* ``scalar_sigmoid`` and ``scalar_bce`` are the same formulas on one float,
  plain Python that each compiled backend compiles where it runs:
  ``numba.njit`` in the CPU kernels (``fastsd.mlp._cpu_kernels``, inlined), and
  ``numba.cuda.jit(device=True)`` in the CUDA kernels (``fastsd.mlp._cuda``).
"""
import math

import numpy as np


def sigmoid(f, xp=np):
    """Logistic function 1 / (1 + exp(-f)), elementwise, float64, for every f including +-inf.

    Parameters
    ----------
    f : array_like
        Logits (any shape).
    xp : module, default numpy
        The array module of ``f`` (numpy or cupy).

    Returns
    -------
    array of float64, shaped like ``f``
    """
    f = xp.asarray(f, dtype=xp.float64)
    e = xp.exp(-xp.abs(f))          # exp(f) where f < 0: never overflows
    return xp.where(f >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def bce(f, y, xp=np):
    """Binary cross-entropy of logits ``f`` against labels ``y`` in {0, 1}, elementwise, float64.

    Parameters
    ----------
    f, y : array_like
        Logits and labels, broadcastable.
    xp : module, default numpy

    Returns
    -------
    array of float64
        softplus((1 - 2y) f): finite for finite f, 0 or +inf at f = +-inf.
    """
    t = (1.0 - 2.0 * xp.asarray(y, dtype=xp.float64)) * xp.asarray(f, dtype=xp.float64)
    return xp.maximum(t, 0.0) + xp.log1p(xp.exp(-xp.abs(t)))


def scalar_sigmoid(f):
    """``sigmoid`` of one float, for compiled kernels (njit or CUDA device code)."""
    if f >= 0:
        return 1.0 / (1.0 + math.exp(-f))
    ef = math.exp(f)
    return ef / (1.0 + ef)


def scalar_bce(f, y):
    """``bce`` of one logit and label, for compiled kernels (njit or CUDA device code)."""
    t = (1.0 - 2.0 * y) * f
    return max(t, 0.0) + math.log1p(math.exp(-abs(t)))
