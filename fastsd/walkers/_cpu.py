"""Numba kernels of the walker ensemble: CPU ``prange`` over walkers, and the CUDA loop.

Each walker runs on one thread, start to end, so its arithmetic does not
depend on the thread count or on the other walkers. The generator functions
are those of ``_reference``, compiled here, so every backend draws the same
words. Within a batch the state is fixed (App. C.3 step 5), which allows two
exact ways of deciding a batch:

* ``batch_direct``: sample by sample, as the paper states the process;
* ``batch_pairs``: pair by pair from the batch's histogram of (u, v, coin),
  O(L^2) per batch instead of O(batch_size), used on the CPU when
  L^2 <= batch_size (``use_pairs``).

``walk`` (sample by sample, generator inline, no allocation) is the loop that
the CUDA kernels run (``_cuda`` calls these ``njit`` functions from device
code); ``walk_buffered`` is the CPU loop: it draws a batch's samples into
buffers first (a loop the compiler vectorises) and then decides the batch.

Entry points: ``simulate`` draws from the counter-based generator; ``run`` is
the deterministic core fed with pre-drawn symbols and coins (compared exactly
with ``_reference.run`` and a transcription of App. C.3 in the tests).

The cached kernels are keyed on this module's sources and those it imports
(``fastsd._jitcache``), so an edit of the generator in ``_reference.py`` recompiles them.
"""
import numba as nb
import numpy as np

from .. import _jitcache
from .._memory import need
from . import _reference as ref

# The generator's scalar entry points, compiled (they call the reference's
# jitable mix64); the CUDA simulator's Python walker loop calls them
# too, where NumPy's scalar uint64 arithmetic would warn on every overflow.
walker_key = nb.njit(ref.walker_key)
word = nb.njit(ref.word)
decode = nb.njit(ref.decode)


@_jitcache.jitable
def decide(o1u, o2u, o1v, o2v, same, tot, n1, plus, acc):
    """Decide ``tot`` samples of one pair (u, v), ``n1`` of them with tie coin 1.

    With rho = omega1[u] + omega2[v], the samples are active if rho > 0, and
    those with coin 1 if rho = 0 (App. C.3 step 3). Returns the update of
    b1[u] and b2[v] (step 4) and ``acc``, the 8 tallies (samples per category
    of CATEGORIES, then active samples per category), with these added.
    """
    rho = o1u + o2v
    act = tot * np.int64(rho > 0) + n1 * np.int64(rho == 0)
    s1, s2 = o1u + o1v, o2u + o2v
    p1, p2, m1, m2 = np.int64(s1 > 0), np.int64(s2 > 0), np.int64(s1 < 0), np.int64(s2 < 0)
    pos, neg, mix = p1 * p2, m1 * m2, p1 * m2 + m1 * p2
    zero = 1 - pos - neg - mix
    acc = (acc[0] + pos * tot, acc[1] + neg * tot, acc[2] + mix * tot, acc[3] + zero * tot,
           acc[4] + pos * act, acc[5] + neg * act, acc[6] + mix * act, acc[7] + zero * act)
    return act * plus * (2 * same - 1), acc


@_jitcache.jitable
def batch_direct(key, c0, n, us, vs, coins, drawn, L, plus, omega1, omega2, b1, b2, counts,
                 active):
    """One batch, sample by sample (App. C.3 steps 2-4): samples c0 .. c0+n-1.

    The samples come from the generator under ``key`` or, when ``drawn``,
    from us[c0 + i], vs[c0 + i], coins[c0 + i]. The updates go to b1, b2; the
    category tallies are added to counts and active (length 4, CATEGORIES).
    """
    acc = (0, 0, 0, 0, 0, 0, 0, 0)
    for i in range(n):
        c = c0 + i
        if drawn:
            u, v, coin = us[c], vs[c], coins[c]
        else:
            # np.uint64(): a no-op when compiled; under the CUDA simulator this loop
            # runs as Python, where compiled helpers return uint64 as Python ints
            u, v, coin = decode(np.uint64(word(np.uint64(key), c)), L)
        delta, acc = decide(omega1[u], omega2[u], omega1[v], omega2[v], np.int64(u == v), 1,
                            coin, plus, acc)
        b1[u] += delta
        b2[v] += delta
    _tally(counts, active, acc)


@_jitcache.jitable
def batch_pairs(hist, L, plus, omega1, omega2, b1, b2, counts, active):
    """One batch from its histogram, which it clears: same result as ``batch_direct``.

    Within a batch the state is fixed (App. C.3 step 5), so every sample of a
    pair (u, v) sees the same rho, s1 and s2: the batch is decided pair by
    pair from hist[(u L + v) 2 + coin], the number of its samples with that
    pair and tie coin. Costs O(L^2) per batch instead of O(batch_size).
    """
    acc = (0, 0, 0, 0, 0, 0, 0, 0)
    for u in range(L):
        for v in range(L):
            h = (u * L + v) * 2
            n0, n1 = hist[h], hist[h + 1]
            hist[h] = 0
            hist[h + 1] = 0
            delta, acc = decide(omega1[u], omega2[u], omega1[v], omega2[v], np.int64(u == v),
                                n0 + n1, n1, plus, acc)
            b1[u] += delta
            b2[v] += delta
    _tally(counts, active, acc)


@_jitcache.jitable
def _tally(counts, active, acc):
    # constant indices: a tuple indexed by a variable may not lower on every target
    counts[0] += acc[0]
    counts[1] += acc[1]
    counts[2] += acc[2]
    counts[3] += acc[3]
    active[0] += acc[4]
    active[1] += acc[5]
    active[2] += acc[6]
    active[3] += acc[7]


@_jitcache.jitable
def apply(L, omega1, omega2, b1, b2):
    """End of a batch (App. C.3 step 5): omega += b, b = 0."""
    for k in range(L):
        omega1[k] += b1[k]
        omega2[k] += b2[k]
        b1[k] = 0
        b2[k] = 0


@_jitcache.jitable
def walk(key, L, batch_size, start, n_iters, plus, omega1, omega2, b1, b2, counts, active,
         us, vs, coins, drawn):
    """Run one walker's batches start .. start + n_iters - 1 sample by sample, in place,
    allocating nothing (the CUDA loop).

    key : uint64, the walker's key (unused when ``drawn``).
    plus : int64, +1 for a > 0 and -1 for a < 0.
    omega1, omega2, b1, b2 : int64 arrays of length L (b1, b2 zero on entry).
    counts, active : int64 arrays of length 4 (CATEGORIES), incremented.
    us, vs, coins : int64 arrays of length (start + n_iters) * batch_size, read
    when ``drawn`` is True (the deterministic core), else ignored.
    """
    for t in range(start, start + n_iters):
        batch_direct(key, t * batch_size, batch_size, us, vs, coins, drawn, L, plus, omega1,
                     omega2, b1, b2, counts, active)
        apply(L, omega1, omega2, b1, b2)


@nb.njit
def fill(key, c0, L, ub, vb, cb):
    """Draw samples c0 .. c0+n-1 into ub, vb, cb (a loop the compiler vectorises)."""
    for i in range(ub.shape[0]):
        ub[i], vb[i], cb[i] = decode(word(key, c0 + i), L)


@nb.njit
def walk_buffered(key, L, batch_size, start, n_iters, plus, pairs, omega1, omega2, counts,
                  active, us, vs, coins, drawn):
    """Run one walker's batches start .. start + n_iters - 1 a batch at a time (the CPU
    loop); same result as ``walk``.

    Each batch's samples are drawn together into buffers (or sliced from the
    pre-drawn arrays when ``drawn``), then decided sample by sample, or pair by
    pair from their histogram when ``pairs``.
    """
    b1 = np.zeros(L, np.int64)
    b2 = np.zeros(L, np.int64)
    hist = np.zeros(2 * L * L if pairs else 0, np.int64)
    n_buf = 0 if drawn else batch_size
    ub, vb, cb = np.empty(n_buf, np.int64), np.empty(n_buf, np.int64), np.empty(n_buf, np.int64)
    for t in range(start, start + n_iters):
        c0 = t * batch_size
        if drawn:
            bu, bv, bc = us[c0:c0 + batch_size], vs[c0:c0 + batch_size], coins[c0:c0 + batch_size]
        else:
            fill(key, c0, L, ub, vb, cb)
            bu, bv, bc = ub, vb, cb
        if pairs:
            for i in range(batch_size):
                hist[(bu[i] * L + bv[i]) * 2 + bc[i]] += 1
            batch_pairs(hist, L, plus, omega1, omega2, b1, b2, counts, active)
        else:
            batch_direct(key, 0, batch_size, bu, bv, bc, True, L, plus, omega1, omega2, b1, b2,
                         counts, active)
        apply(L, omega1, omega2, b1, b2)


@_jitcache.njit(parallel=True)
def simulate_into(seed64, walker_offset, L, batch_size, start, n_iters, plus, pairs, omega1,
                  omega2, counts, active):
    """Run walkers walker_offset .. walker_offset + W - 1 from the generator, in place."""
    none = np.zeros(0, np.int64)
    for w in nb.prange(omega1.shape[0]):
        walk_buffered(walker_key(seed64, walker_offset + w), L, batch_size, start, n_iters,
                      plus, pairs, omega1[w], omega2[w], counts[w], active[w], none, none, none,
                      False)


@_jitcache.njit
def run_into(us, vs, coins, L, batch_size, plus, pairs, omega1, omega2, counts, active):
    """Deterministic core: run walkers on pre-drawn (W, n) symbols and coins, in place.

    Serial over walkers (it serves the tests, where compile time counts); each
    walker runs ``walk_buffered`` as in ``simulate_into``.
    """
    W, n = us.shape
    for w in range(W):
        walk_buffered(np.uint64(0), L, batch_size, 0, n // batch_size, plus, pairs, omega1[w],
                      omega2[w], counts[w], active[w], us[w], vs[w], coins[w], True)


def use_pairs(L, batch_size):
    """Whether the pair-histogram path is the cheaper one: O(L^2) vs O(batch_size) per batch."""
    return L * L <= batch_size


def simulate(seed64, walker_offset, n_walkers, L, batch_size, n_iters, readout, start=0,
             state=None):
    """Walkers walker_offset .. walker_offset + n_walkers - 1 from the generator; see
    ``_reference.simulate``."""
    out = ref.states(n_walkers, L) if state is None else state
    simulate_into(seed64, walker_offset, L, batch_size, start, n_iters, readout,
                  use_pairs(L, batch_size), *out)
    return out


def run(us, vs, coins, L, batch_size, readout):
    """Deterministic core on pre-drawn (W, n) int64 symbols and coins; see ``_reference.run``."""
    out = ref.states(us.shape[0], L)
    run_into(us, vs, coins, L, batch_size, readout, use_pairs(L, batch_size), *out)
    return out


def buffers(L, batch_size, n_walkers):
    """Per thread: a batch's samples and the pair histogram, int64, as ``Need``s."""
    threads = nb.get_num_threads()
    return [need(8 * threads * (3 * batch_size + 2 * L * L), f"the per-thread buffers "
                 f"({threads} threads x (3 x {batch_size} samples + 2 x {L}^2 pairs) int64)",
                 ("batch_size", batch_size), ("L", L * L, L))]
