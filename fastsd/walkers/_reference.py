"""NumPy reference of the walker ensemble (App. C.3) and its counter-based generator.

The generator
-------------
Every random number of walker ``w`` at sample ``c`` (c = t * batch_size + n,
counting from 0 over the whole run) is one 64-bit word

    r(w, c) = mix64(key_w XOR ((c + 1) * COUNTER)),
    key_w   = mix64(seed64 + (w + 1) * GOLDEN),

where mix64 is the splitmix64 finaliser (a bijection of 64-bit words), seed64
is the 64-bit state of the user's seed (``numpy.random.SeedSequence``) and
``w`` the walker's global index (``walker_offset`` + its row). The word depends
on nothing else, so a walker's trajectory is the same whatever the backend,
the thread count or the way the walkers are split into calls. ``decode``
turns the word into the sample's symbols and tie coin:

* bits 0-31 -> u = floor(low32 * L / 2^32), uniform over [L];
* bits 32-61 -> k = floor(mid30 * (L - 1) / 2^30), uniform over L - 1 values,
  giving the other symbol v = k + (k >= u), uniform over [L] minus {u};
* bit 62 -> 1 for a different pair (v as above), 0 for a same pair (v = u);
* bit 63 -> the tie coin: active when rho = 0 and the coin is 1.

The multiply-shift maps are exact up to a relative error below L / 2^30 in any
probability (at most 6e-5 for the largest L allowed, 2^16).

The functions here are written once and serve three targets: NumPy arrays
(this reference), Numba CPU and Numba-CUDA: they are ``_jitcache.jitable``,
plain Python here and compiled wherever a compiled function calls them
(``_cpu`` compiles its scalar entry points with ``njit``). Every constant
is an ``np.uint64`` so that Numba keeps the arithmetic in unsigned 64 bits
(an ``int`` literal would promote uint64 to float64).

The process
-----------
``run`` is the deterministic core: it advances walkers through whole batches
given their pre-drawn symbols and coins. ``simulate`` feeds it from the
generator. Both are vectorised over walkers and over the samples of a batch
(within a batch the state omega is fixed, App. C.3 step 5).
"""
import numpy as np

from .. import _jitcache
from .._memory import need

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
COUNTER = np.uint64(0xD1B54A32D192ED03)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_LOW30 = np.uint64((1 << 30) - 1)
_LOW32 = np.uint64((1 << 32) - 1)
_ONE = np.uint64(1)
_S27, _S30, _S31, _S32 = np.uint64(27), np.uint64(30), np.uint64(31), np.uint64(32)
_S62, _S63 = np.uint64(62), np.uint64(63)

#: Sample categories of the mu statistic, by the signs of
#: s1 = omega1[u] + omega1[v] and s2 = omega2[u] + omega2[v] (App. C.4):
#: both > 0, both < 0, opposite signs (s1 s2 < 0), and the rest (s1 or s2 = 0).
CATEGORIES = ("positive", "negative", "mixed", "zero")


@_jitcache.jitable
def mix64(x):
    """splitmix64 finaliser: a bijection of uint64 words with full avalanche."""
    x = (x ^ (x >> _S30)) * _M1
    x = (x ^ (x >> _S27)) * _M2
    return x ^ (x >> _S31)


@_jitcache.jitable
def walker_key(seed64, w):
    """Key of walker ``w`` (int64, global index) under the uint64 seed state."""
    return mix64(seed64 + np.uint64(w + 1) * GOLDEN)


@_jitcache.jitable
def word(key, c):
    """The random word of sample ``c`` (int64, from 0) of the walker with ``key``."""
    return mix64(key ^ (np.uint64(c + 1) * COUNTER))


@_jitcache.jitable
def decode(r, L):
    """Symbols u, v and tie coin (int64 each) of the random word ``r`` (module docs)."""
    u = np.int64(((r & _LOW32) * np.uint64(L)) >> _S32)
    k = np.int64((((r >> _S32) & _LOW30) * np.uint64(L - 1)) >> _S30)
    different = np.int64((r >> _S62) & _ONE)
    coin = np.int64(r >> _S63)
    v = u + different * (k + (k >= u) - u)
    return u, v, coin


def draw(seed64, walkers, L, start, n):
    """Pre-draw u, v, coin for samples start .. start+n-1 of the given walkers.

    ``walkers`` are global indices; returns three int64 arrays of shape
    (len(walkers), n).
    """
    keys = walker_key(seed64, np.asarray(walkers, dtype=np.int64))[:, None]
    c = np.arange(start, start + n, dtype=np.int64)[None, :]
    return decode(word(keys, c), L)


def category(s1, s2):
    """Index into CATEGORIES of each sample (int64 array like s1)."""
    pos = (s1 > 0) & (s2 > 0)
    neg = (s1 < 0) & (s2 < 0)
    mixed = ((s1 > 0) & (s2 < 0)) | ((s1 < 0) & (s2 > 0))
    return np.where(pos, 0, np.where(neg, 1, np.where(mixed, 2, 3))).astype(np.int64)


def step(omega1, omega2, counts, active, u, v, coin, readout):
    """Advance every walker by one batch, in place (App. C.3 steps 2-5).

    Parameters
    ----------
    omega1, omega2 : ndarray, shape (W, L), int64
        State before the batch; updated in place after it.
    counts, active : ndarray, shape (W, 4), int64
        Samples per category, and those on which the unit was active;
        incremented in place.
    u, v, coin : ndarray, shape (W, N), int64
        The batch's symbols and tie coins (coin 1: active when rho = 0).
    readout : {+1, -1}
        Sign of the unit's readout a.
    """
    W, L = omega1.shape
    rows = np.arange(W)[:, None]
    o1u, o1v, o2u, o2v = omega1[rows, u], omega1[rows, v], omega2[rows, u], omega2[rows, v]
    rho = o1u + o2v
    is_active = (rho > 0) | ((rho == 0) & (coin == 1))
    cell = rows * 4 + category(o1u + o1v, o2u + o2v)
    counts += np.bincount(cell.ravel(), minlength=W * 4).reshape(W, 4)
    active += np.bincount(cell[is_active], minlength=W * 4).reshape(W, 4)
    # +1 when (a > 0 and u = v) or (a < 0 and u != v), -1 otherwise; only when active
    up = is_active & ((u == v) == (readout > 0))
    down = is_active & ~up
    for omega, idx in ((omega1, u), (omega2, v)):
        flat = (rows * L + idx)
        delta = (np.bincount(flat[up], minlength=W * L)
                 - np.bincount(flat[down], minlength=W * L))
        omega += delta.reshape(W, L)


def run(us, vs, coins, L, batch_size, readout):
    """Deterministic core: run walkers from omega = 0 on pre-drawn samples.

    The backend interface of the walkers family (``fastsd.walkers.process``):
    every backend module defines ``run``, ``simulate`` and ``buffers`` with
    these signatures.

    Parameters
    ----------
    us, vs, coins : ndarray, shape (W, n_iters * batch_size), int64
        Symbols in [0, L) and tie coins in {0, 1}, in sample order.
    L, batch_size : int
    readout : {+1, -1}

    Returns
    -------
    omega1, omega2 : ndarray, shape (W, L), int64
    counts, active : ndarray, shape (W, 4), int64
    """
    W, n = us.shape
    omega1, omega2, counts, active = states(W, L)
    for s in range(0, n, batch_size):
        b = slice(s, s + batch_size)
        step(omega1, omega2, counts, active, us[:, b], vs[:, b], coins[:, b], readout)
    return omega1, omega2, counts, active


def simulate(seed64, walker_offset, n_walkers, L, batch_size, n_iters, readout, start=0,
             state=None):
    """Walkers walker_offset .. walker_offset + n_walkers - 1 from the generator (App. C.3).

    ``seed64`` is the uint64 seed state. Runs batches start .. start +
    n_iters - 1 from ``state`` (omega1, omega2, counts, active as returned;
    zero when None, advanced in place otherwise), so that consecutive calls
    give the bits of one; returns as ``run``.
    """
    walkers = np.arange(walker_offset, walker_offset + n_walkers, dtype=np.int64)
    omega1, omega2, counts, active = states(n_walkers, L) if state is None else state
    for t in range(start, start + n_iters):
        u, v, coin = draw(seed64, walkers, L, t * batch_size, batch_size)
        step(omega1, omega2, counts, active, u, v, coin, readout)
    return omega1, omega2, counts, active


def buffers(L, batch_size, n_walkers):
    """This backend's working memory beyond the states, as ``Need``s: a batch's samples and
    the step's temporaries, (n_walkers, batch_size) x 16 int64."""
    W, N = n_walkers, batch_size
    return [need(16 * 8 * W * N, f"the numpy backend's batch arrays ({W} walkers x {N} "
                 f"samples x 16 int64)", ("n_walkers", W), ("batch_size", N))]


def states(W, L):
    """Zero omega1, omega2 (W, L) and counts, active (W, 4), int64: every backend's output."""
    return (np.zeros((W, L), np.int64), np.zeros((W, L), np.int64),
            np.zeros((W, 4), np.int64), np.zeros((W, 4), np.int64))
