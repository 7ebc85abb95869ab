"""Numba CPU kernels of the walker ensemble: ``prange`` over walkers.

Each walker runs on one thread, start to end, with ``walk``: the per-walker
loop shared with the CUDA kernels (``_cuda`` calls these ``njit`` functions
from device code). The generator functions are those of ``_reference``,
compiled here, so that the three backends draw the same words.

Two entry points per backend: ``simulate`` draws from the counter-based
generator, ``run`` is the deterministic core fed with pre-drawn symbols and
coins (compared exactly with ``_reference.run`` in the tests).

Note: Numba's cache is keyed on this file; after editing the generator in
``_reference.py``, clear ``fastsd/walkers/__pycache__`` (the tests compare
against the reference and would flag a stale cache).
"""
import types

import numba as nb
import numpy as np

from . import _reference as ref

# The reference's generator functions, compiled. Each is rebuilt over a copy of
# the reference's globals in which the functions it calls are the compiled
# ones, so that Numba sees dispatchers rather than Python functions.
_COMPILED = dict(vars(ref))


def _compile(f):
    fn = types.FunctionType(f.__code__, _COMPILED, f.__name__, f.__defaults__)
    _COMPILED[f.__name__] = nb.njit(fn)
    return _COMPILED[f.__name__]


mix64 = _compile(ref.mix64)
walker_key = _compile(ref.walker_key)
word = _compile(ref.word)
decode = _compile(ref.decode)


@nb.njit
def walk(key, L, batch_size, n_iters, plus, omega1, omega2, b1, b2, counts, active,
         us, vs, coins, drawn):
    """Run one walker from its current state, in place (App. C.3).

    key : uint64, the walker's key (unused when ``drawn``).
    plus : int64, +1 for a > 0 and -1 for a < 0.
    omega1, omega2, b1, b2 : int64 arrays of length L (b1, b2 zero on entry).
    counts, active : int64 arrays of length 4 (CATEGORIES), incremented.
    us, vs, coins : int64 arrays of length n_iters * batch_size, read when
    ``drawn`` is True (the deterministic core), else ignored.
    """
    n_pos = n_neg = n_mix = n_zero = 0
    a_pos = a_neg = a_mix = a_zero = 0
    c = 0
    for _t in range(n_iters):
        for _n in range(batch_size):
            if drawn:
                u, v, coin = us[c], vs[c], coins[c]
            else:
                # np.uint64(): a no-op when compiled; under the CUDA simulator this loop
                # runs as Python, where compiled helpers return uint64 as Python ints
                u, v, coin = decode(np.uint64(word(np.uint64(key), c)), L)
            c += 1
            o1u, o2v = omega1[u], omega2[v]
            rho = o1u + o2v
            act = np.int64((rho > 0) | ((rho == 0) & (coin == 1)))
            s1 = o1u + omega1[v]
            s2 = omega2[u] + o2v
            p1, p2, m1, m2 = np.int64(s1 > 0), np.int64(s2 > 0), np.int64(s1 < 0), np.int64(s2 < 0)
            pos, neg, mix = p1 * p2, m1 * m2, p1 * m2 + m1 * p2
            zero = 1 - pos - neg - mix
            n_pos += pos
            n_neg += neg
            n_mix += mix
            n_zero += zero
            a_pos += pos * act
            a_neg += neg * act
            a_mix += mix * act
            a_zero += zero * act
            delta = act * plus * (2 * (u == v) - 1)
            b1[u] += delta
            b2[v] += delta
        for k in range(L):
            omega1[k] += b1[k]
            omega2[k] += b2[k]
            b1[k] = 0
            b2[k] = 0
    counts[0] += n_pos
    counts[1] += n_neg
    counts[2] += n_mix
    counts[3] += n_zero
    active[0] += a_pos
    active[1] += a_neg
    active[2] += a_mix
    active[3] += a_zero


@nb.njit(parallel=True, cache=True)
def simulate(seed64, walker_offset, L, batch_size, n_iters, plus, omega1, omega2, counts,
             active):
    """Run walkers walker_offset .. walker_offset + W - 1 from the generator, in place."""
    W = omega1.shape[0]
    none = np.zeros(0, np.int64)
    for w in nb.prange(W):
        b1 = np.zeros(L, np.int64)
        b2 = np.zeros(L, np.int64)
        walk(walker_key(seed64, walker_offset + w), L, batch_size, n_iters, plus,
             omega1[w], omega2[w], b1, b2, counts[w], active[w], none, none, none, False)


@nb.njit(parallel=True, cache=True)
def run(us, vs, coins, L, batch_size, plus, omega1, omega2, counts, active):
    """Deterministic core: run walkers on pre-drawn (W, n) symbols and coins, in place."""
    W, n = us.shape
    for w in nb.prange(W):
        b1 = np.zeros(L, np.int64)
        b2 = np.zeros(L, np.int64)
        walk(np.uint64(0), L, batch_size, n // batch_size, plus, omega1[w], omega2[w], b1, b2,
             counts[w], active[w], us[w], vs[w], coins[w], True)
