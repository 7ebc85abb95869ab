"""Monte Carlo tangent kernel of a finite centered two-layer network (ReLU or another sigma)."""
import math

import numpy as np

from .. import _threads
from .._rng import seed_sequence
from ..activations import get_activation
from .._memory import check_fits, need
from .._validation import check_array, check_int, check_seed
from .arccos import kernel_need
from ..mlp.model import init_params

_CHUNK = 4096


@_threads.computing
def empirical_ntk(X, Y, width, seed=None, activation="relu"):
    """Tangent kernel at initialisation of one finite network of the given width.

    The network is f(x) = sum_i a_i s(w_i.x) with w_i ~ N(0, I/m) and a_i ~ N(0, 1/m)
    (``fastsd.mlp.init_params``, init "normal") and the hidden unit
    s(h) = sigma(sqrt(m) h) / sqrt(m) of the activation sigma (``Activation.unit``: its
    pre-activation sqrt(m) w_i.x is the limit's u ~ N(0, |x|^2) at every width; for a
    positively homogeneous sigma, ReLU's family, s = sigma); centering (App. F) subtracts a
    constant in the weights, so the tangent kernel is the same. The kernel is

        Theta_m(x, y) = sum_i [s(w_i.x) s(w_i.y) + a_i^2 s'(w_i.x) s'(w_i.y) x.y],

    s'(h) = sigma'(sqrt(m) h) (for ReLU, relu'(0) = 0). With u_i = sqrt(m) w_i.x and
    b_i = sqrt(m) a_i it is the mean over the m independent units of
    sigma(u_i) sigma(v_i) + b_i^2 sigma'(u_i) sigma'(v_i) x.y, so it tends to the limit's
    (x.y) k0 + k1 (``Activation.ntk``; ``ntk(X, Y)`` for ReLU) with a standard deviation
    falling like 1/sqrt(m). The paper's scaled network (1/(gamma sqrt(d)), Eq. 1) has
    Theta_m / (gamma^2 d).

    Parameters
    ----------
    X : array_like, shape (n, p)
    Y : array_like, shape (k, p)
    width : int
        Hidden units m, >= 1. Units are drawn in chunks, so memory is
        O((n + k) min(m, 4096) + p min(m, 4096)); the weights are the same for every
        ``activation`` at a given seed.
    seed : int, SeedSequence, Generator or None
        Seed of the weights.
    activation : str or Activation, default "relu"
        sigma: a name in ``fastsd.activations.ACTIVATIONS`` or an ``Activation``. ReLU's
        kernel is computed as it always was (bit for bit).

    Returns
    -------
    ndarray, shape (n, k), float64

    Raises
    ------
    ValueError, TypeError
        For wrong shapes, NaN/inf, a width < 1, a bad seed, or (ValueError naming
        ``activation``) an activation that is neither a built-in's name nor an
        ``Activation``.
    SizeTooLargeError
        Before computing, when the n x k kernel (and its products) would not
        fit in the memory available.

    Examples
    --------
    >>> import numpy as np
    >>> from fastsd.activations import ACTIVATIONS
    >>> from fastsd.kernels import ntk
    >>> x = np.eye(3)[:2]
    >>> e = empirical_ntk(x, x, width=20000, seed=0)
    >>> bool(np.allclose(e, ntk(x, x), atol=0.05))
    True
    >>> e = empirical_ntk(x, x, width=20000, seed=0, activation="tanh")
    >>> bool(np.allclose(e, ACTIVATIONS["tanh"].ntk(x, x), atol=0.05))
    True
    """
    X = check_array("X", X, ndim=2)
    Y = check_array("Y", Y, shape=(None, X.shape[1]))
    width = check_int("width", width, minimum=1)
    check_seed("seed", seed)
    act = get_activation(activation)
    relu = act.name == "relu"       # the ReLU path of old, bit for bit
    m = min(_CHUNK, width)      # a chunk's weights, and its activations at X and Y (x 4;
    per = 4 if relu else 7      # another sigma: pre-activations, scaled, units, derivatives)
    check_fits([kernel_need(X, Y, 24, "the kernel, the dot products and a product"),
                need(8 * m * (X.shape[1] + per * (X.shape[0] + Y.shape[0])), f"a chunk of "
                     f"{m} units' weights and activations", ("X", X.shape[0], f"{X.shape[0]} rows"),
                     ("Y", Y.shape[0], f"{Y.shape[0]} rows"))])
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(
        seed_sequence(seed))
    dots = X @ Y.T
    out = np.zeros((X.shape[0], Y.shape[0]))
    done = 0
    while done < width:
        m = min(_CHUNK, width - done)
        params = init_params(rng, m, X.shape[1])
        # rescale from N(0, 1/m_chunk) to the full network's N(0, 1/width)
        w = params.w * np.sqrt(m / width)
        a = params.a * np.sqrt(m / width)
        hx, hy = X @ w.T, Y @ w.T
        if relu:
            out += np.maximum(hx, 0.0) @ np.maximum(hy, 0.0).T
            out += dots * (((hx > 0) * (a * a)) @ (hy > 0).T)
        else:
            (sx, dx), (sy, dy) = _units(act, hx, width), _units(act, hy, width)
            out += sx @ sy.T
            out += dots * ((dx * (a * a)) @ dy.T)
        done += m
    return out


def _units(act, h, width):
    """(s(h), s'(h)) of a chunk's pre-activations h = w.x, s the hidden unit of the whole
    width-``width`` network (``Activation.unit`` would take the chunk's size for m)."""
    if act.homogeneous:
        return act(h), act.derivative(h)
    c = math.sqrt(width)
    u = c * h
    return act(u) / c, act.derivative(u)
