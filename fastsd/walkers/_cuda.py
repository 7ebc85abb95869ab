"""Numba-CUDA kernels of the walker ensemble: one thread per walker.

Each thread runs ``_cpu.walk`` (an ``njit`` function, which Numba-CUDA
compiles for the device when a kernel calls it), so a walker does exactly the
arithmetic it does on the CPU and draws the same words from the counter-based
generator: trajectories are identical across backends. The state and the
batch accumulators live in global memory as (L, W) and (4, W) arrays, walker
w in column w, so that a warp's loads of omega[u, w] share cache lines.

Imported only when backend "cuda" is used. Under ``NUMBA_ENABLE_CUDASIM=1``
the kernels run on Numba's CPU simulator (tests without a GPU).
"""
import numpy as np
from numba import cuda

from .. import _dispatch
from . import _cpu, _reference

_dispatch.quiet_low_occupancy()

THREADS_PER_BLOCK = 128
# ``_cpu.walk`` and the functions it calls are ``_jitcache.jitable``: Numba-CUDA
# compiles them for the device; the simulator runs them as Python, which it
# needs, since it cannot pass its arrays to compiled code.
_walk = _cpu.walk


@cuda.jit
def _simulate_kernel(seed64, walker_offset, L, batch_size, start, n_iters, plus, none, omega1,
                     omega2, b1, b2, counts, active):
    w = cuda.grid(1)
    if w < omega1.shape[1]:
        _walk(_cpu.walker_key(seed64, walker_offset + w), L, batch_size, start, n_iters, plus,
              omega1[:, w], omega2[:, w], b1[:, w], b2[:, w], counts[:, w], active[:, w], none,
              none, none, False)


@cuda.jit
def _run_kernel(us, vs, coins, L, batch_size, plus, omega1, omega2, b1, b2, counts, active):
    w = cuda.grid(1)
    if w < omega1.shape[1]:
        _walk(np.uint64(0), L, batch_size, 0, us.shape[1] // batch_size, plus, omega1[:, w],
              omega2[:, w], b1[:, w], b2[:, w], counts[:, w], active[:, w], us[w], vs[w],
              coins[w], True)


def _launch(kernel, W, L, *args, state=None):
    """Launch ``kernel`` over W walkers from ``state`` (host omega1, omega2, counts, active;
    zero when None); return omega1, omega2, counts, active on the host."""
    o1, o2, counts, active = _reference.states(W, L) if state is None else state
    zero = np.zeros((L, W), np.int64)
    state = [cuda.to_device(np.ascontiguousarray(a)) for a in (o1.T, o2.T, zero, zero,
                                                                counts.T, active.T)]
    blocks = (W + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
    kernel[blocks, THREADS_PER_BLOCK](*args, *state)
    cuda.synchronize()
    o1, o2, _, _, counts, active = (np.ascontiguousarray(s.copy_to_host().T) for s in state)
    return o1, o2, counts, active


def simulate(seed64, walker_offset, n_walkers, L, batch_size, n_iters, readout, start=0,
             state=None):
    """Walkers walker_offset .. walker_offset + n_walkers - 1 from the generator; see
    ``_reference.simulate`` (``state`` is not advanced in place: the result is a copy)."""
    none = cuda.to_device(np.zeros(0, np.int64))
    return _launch(_simulate_kernel, n_walkers, L, np.uint64(seed64), np.int64(walker_offset),
                   np.int64(L), np.int64(batch_size), np.int64(start), np.int64(n_iters),
                   np.int64(readout), none, state=state)


def run(us, vs, coins, L, batch_size, readout):
    """Deterministic core on pre-drawn (W, n) int64 symbols and coins; see ``_reference.run``."""
    return _launch(_run_kernel, us.shape[0], L, cuda.to_device(us), cuda.to_device(vs),
                   cuda.to_device(coins), np.int64(L), np.int64(batch_size), np.int64(readout))


def buffers(L, batch_size, n_walkers):
    """Host memory beyond the states: none (the six (L, W) device arrays are on the GPU,
    whose memory is not checked here)."""
    return []
