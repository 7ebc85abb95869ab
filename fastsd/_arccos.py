"""ReLU's arc-cosine kernels from Gram entries (Cho & Saul 2009; App. D), array-module generic.

With w ~ N(0, I), rho = x.y / (|x||y|) and t = arccos(rho):
k0 = E[relu'(w.x) relu'(w.y)] = (pi - t) / (2 pi), k1 = E[relu(w.x) relu(w.y)]
= |x||y| (sin t + (pi - t) rho) / (2 pi), ntk = (x.y) k0 + k1. The floor under the kernels
family (``fastsd.kernels._reference``, which also refines near-collinear pairs from their
vectors) and ReLU's ``fastsd.activations.Activation``.
"""
import math

import numpy as np

TWO_PI = 2.0 * math.pi


def trig(rho, xp):
    """(rho, pi - t, sin t) from cosines that may round past +-1."""
    rho = xp.clip(rho, -1.0, 1.0)
    return rho, xp.arccos(-rho), xp.sqrt((1.0 - rho) * (1.0 + rho))


def kernels_from_gram(dot, nx2, ny2, xp=np):
    """k0, k1 and ntk from dot products and squared norms (broadcasting).

    Parameters
    ----------
    dot : array, float64
        x.y entries.
    nx2, ny2 : array, float64
        |x|^2 and |y|^2, broadcastable against ``dot``.

    Returns
    -------
    k0, k1, ntk : arrays shaped like ``dot``
    """
    nn = xp.sqrt(nx2 * ny2)     # rho is exactly 1 for a pair with itself
    pos = nn > 0
    rho = xp.where(pos, dot / xp.where(pos, nn, 1.0), 0.0)
    rho, pit, sint = trig(rho, xp)
    return combine(pos, nn, rho, pit, sint, xp)


def combine(pos, nn, rho, pit, sint, xp):
    """k0, k1 and ntk from the pairs' |x||y| (``nn``, > 0 where ``pos``) and their
    (rho, pi - t, sin t)."""
    k0 = xp.where(pos, pit / TWO_PI, 0.0)
    k1 = nn * (sint + pit * rho) / TWO_PI
    ntk = nn * (2.0 * rho * pit + sint) / TWO_PI
    return k0, k1, ntk
