"""The counter-based normal stream of the noisy task's training noise (Philox4x32-10).

The training noise of ``SameDifferent(sigma2 > 0)`` is drawn from a counter:
normal number j of row b of step t of a model is a pure function of
(model key, t, b, j), so that it does not depend on how the steps are split
into calls, on the ensemble, on the thread count or on the backend, and a
backend can draw it where it runs (in a Numba kernel, on the GPU) while the
NumPy reference reproduces it.

* ``philox``: Philox4x32-10 (Salmon et al., SC'11; Random123), 32-bit words held
  in uint64; plain Python on integers that runs elementwise on NumPy uint64
  arrays (the reference) and is compiled as is by ``numba.njit`` (the CPU
  kernels) and ``numba.cuda.jit(device=True)`` (the CUDA kernels).
* ``box_muller``: four words to four N(0, 1) numbers, on arrays (``uniforms`` then
  ``polar``).
* ``NormalStream``: one model's stream, its key drawn from the model's
  ``"noise"`` Generator, with a step counter; it stands in for that Generator
  in ``SameDifferent.training_inputs``.

Layout: the four words of ``philox((j4, t, b, NOISE_STREAM), key)`` give the
normals of coordinates 4 j4 .. 4 j4 + 3 of row b at step t, by Box-Muller on
24-bit uniforms, u1 = (w0 >> 8 + 1) 2^-24 in (0, 1] and the angle
2 pi (w1 >> 8) 2^-24, both exact in float32 and float64, so that a float32
backend and the float64 reference differ only by the rounding of log, sqrt,
cos and sin. |z| <= sqrt(48 ln 2) = 5.77 (a tail of probability 8e-9 is cut).
"""
import math

import numpy as np

_U64 = np.uint64
M32 = _U64(0xFFFFFFFF)
MA, MB = _U64(0xD2511F53), _U64(0xCD9E8D57)
WA, WB = _U64(0x9E3779B9), _U64(0xBB67AE85)
SHIFT32 = _U64(32)
#: Counter word 3: the pairs and the noise of one key never share a counter.
PAIRS_STREAM, NOISE_STREAM = 0, 1
#: The uniforms' resolution: 24 bits, exact in float32.
UNIFORM_BITS = 24


def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of counter (c0, c1, c2, c3) under key (k0, k1).

    Parameters
    ----------
    c0, c1, c2, c3, k0, k1 : numpy.uint64 or ndarray of uint64
        32-bit words held in uint64 (broadcast together).

    Returns
    -------
    tuple of four uint64 (or arrays), each < 2**32
    """
    for _ in range(10):
        p0 = MA * c0
        p1 = MB * c2
        n0 = (p1 >> SHIFT32) ^ c1 ^ k0
        n2 = (p0 >> SHIFT32) ^ c3 ^ k1
        c0, c1, c2, c3 = n0, p1 & M32, n2, p0 & M32
        k0 = (k0 + WA) & M32
        k1 = (k1 + WB) & M32
    return c0, c1, c2, c3


def keys(seeds):
    """Split 64-bit integers into Philox keys: (n, 2) uint64 of 32-bit words (low, high)."""
    s = np.asarray(seeds, dtype=np.uint64)
    return np.stack([s & M32, s >> SHIFT32], axis=-1)


def words(key, steps, rows, p):
    """The noise words of ``rows`` rows at the given ``steps``: (n, rows, 4 ceil(p / 4)) uint64.

    Parameters
    ----------
    key : (2,) uint64
    steps : (n,) integer array
        Global step numbers (the counter's word 1).
    rows, p : int
        Rows per step (the batch) and coordinates per row.
    """
    t = np.asarray(steps, dtype=np.uint64)[:, None, None]
    b = np.arange(rows, dtype=np.uint64)[None, :, None]
    j4 = np.arange(-(-p // 4), dtype=np.uint64)[None, None, :]
    out = philox(j4, t, b, _U64(NOISE_STREAM), _U64(key[0]), _U64(key[1]))
    return np.stack(np.broadcast_arrays(*out), axis=-1).reshape(len(t), rows, -1)


def uniforms(w, dtype):
    """Box-Muller's uniforms from Philox words ``w`` (..., 4 q): (u1, angle), (..., 2 q) each.

    Word pair i = (w[2 i], w[2 i + 1]) gives u1 = ((w[2 i] >> 8) + 1) 2^-24 in
    (0, 1] and the angle 2 pi (w[2 i + 1] >> 8) 2^-24, each one rounding in
    ``dtype`` (the CPU kernel ``noise_uniforms`` computes the same numbers).
    """
    dtype = np.dtype(dtype)
    g = w.reshape(*w.shape[:-1], -1, 2)                # (..., 2 q, word)
    drop = np.asarray(32 - UNIFORM_BITS, dtype=w.dtype)
    scale = dtype.type(2.0 ** -UNIFORM_BITS)
    u1 = ((g[..., 0] >> drop) + 1).astype(dtype) * scale
    a = (g[..., 1] >> drop).astype(dtype) * (scale * dtype.type(2.0 * math.pi))
    return u1, a


def polar(u1, a):
    """Box-Muller's radius and direction: r = sqrt(-2 ln u1), cos a, sin a (NumPy's vectorised
    log, sqrt, cos, sin in the arrays' dtype); ``u1`` is overwritten by r and ``a`` by sin a."""
    np.log(u1, out=u1)
    u1 *= u1.dtype.type(-2.0)
    np.sqrt(u1, out=u1)
    c = np.cos(a)
    np.sin(a, out=a)
    return u1, c, a


def box_muller(w, dtype):
    """N(0, 1) numbers from Philox words ``w`` (..., 4 q) in ``dtype``, shape (..., 4 q).

    Word pair i gives z[2 i] = r cos(a), z[2 i + 1] = r sin(a) (``uniforms``, ``polar``).

    Parameters
    ----------
    w : ndarray of uint32 or uint64
        Words < 2**32, last axis a multiple of 4.
    dtype : numpy dtype
        float32 or float64: the precision the transforms run in.
    """
    r, c, s = polar(*uniforms(w, dtype))
    return np.stack([r * c, r * s], axis=-1).reshape(w.shape)


class NormalStream:
    """One model's training-noise stream: N(0, 1) numbers addressed by (step, row, coordinate).

    Parameters
    ----------
    rng : numpy.random.Generator
        The model's noise stream; one 64-bit draw from it is the Philox key.

    Attributes
    ----------
    key : (2,) ndarray of uint64
        The Philox key (low, high 32-bit words).
    step : int
        The next step's counter; ``standard_normal`` and ``advance`` move it.
    """

    def __init__(self, rng):
        self.key = keys(rng.integers(2**64, dtype=np.uint64))
        self.step = 0

    def advance(self, n):
        """Count n steps as drawn (a backend that drew them itself)."""
        self.step += n

    def standard_normal(self, size, dtype=np.float64):
        """The normals of the next steps: ``size`` = (..., rows, p), the leading axes steps.

        Parameters
        ----------
        size : tuple of int
            At least (rows, p): one step of ``rows`` rows of ``p`` numbers;
            leading axes are further steps, in C order.
        dtype : {numpy.float64, numpy.float32}

        Returns
        -------
        ndarray of shape ``size``
        """
        *lead, rows, p = size
        n = math.prod(lead)
        z = box_muller(words(self.key, np.arange(self.step, self.step + n), rows, p), dtype)
        self.step += n
        return z[..., :p].reshape(size)
