"""GPU engines for the centered MLP: CuPy (cuBLAS) GEMMs and Numba-CUDA fused kernels.

The arithmetic is that of ``_cpu``: each model keeps its initialisation
(w0, a0) and its displacement (dw, da), the centered output is formed as

    f~(x) = scale * sum_i [a0_i (relu(h0_i + dh_i) - relu(h0_i)) + da_i relu(h0_i + dh_i)]

with the difference of ReLUs taken exactly, relu'(0) = 0, and each row's sum
reduced in a fixed order (``THREADS`` strided partial sums in float64, then
a fixed tree), so that a model's numbers do not depend on the ensemble
around it.

Activations (``fastsd.activations``): ``kernels(threads, dtype, activation)`` compiles
the kernels once a process per activation. ReLU's are the code above. Any other sigma's
hidden unit is the CPU kernels' (``_cpu_kernels.unit_functions``, the same plain-Python
code compiled as device functions): unit(h) = sigma(c h) / c with c = sqrt(m) (1 for a
homogeneous sigma, ``Activation.unit_scale``, passed to the kernels), computed in float64,
its centred part sigma(u + du) - sigma(u) from ``Activation.delta`` or the two-point
Gauss-Legendre rule on sigma' for |du| <= ``_cpu_kernels.DELTA_SPAN``, so that the lazy
regime keeps its precision. sigma's NumPy calls compile as scalar ``math`` where the CUDA
target's NumPy lacks them (``device_form``).

One SGD step of M models, dense path (inputs x in R^p, p = 2d):

1. ``gather_inputs``: X[k, b] = (S_k[u]; S_k[v]) + noise, the noisy task's
   counter-based noise (``fastsd._philox``) drawn on the device by ``philox``
   with host or device batches alike; image tasks' inputs are built on the
   host and uploaded once per chunk of steps;
2. h0 = X w0^T: one strided-batched cuBLAS GEMM over the M models (for clean
   tasks ``gather_sum`` of P = S w0^T instead, as on the CPU);
3. dh = X dw^T: one batched GEMM;
4. ``forward_backward``: the hidden units, mask, readout reduction, centering, loss and
   its gradient, one block per (model, example) row; writes
   G = -lr dLoss/dh and h = h0 + dh;
5. ``readout_update``: da -= lr * unit(h)^T dLoss/df, and the batch's loss
   and correct count into the window's (M, n) buffers;
6. dw^T += X^T G: one batched GEMM (into scratch, then one add).

Symbol-basis path (clean tasks; see ``_cpu``): dw = C^T S, Q = S dw^T; a step
gathers h0 = P[u] + P[v] and dh = Q[u] + Q[v] (``gather_sum``), runs steps 4-5,
scatters G onto the symbols (``scatter_rows``, a fixed-order sum over the
batch, no atomics), then C += D and Q += K D with K = S S^T (batched GEMM).

Sparse path (PSVRT, Pentomino): the host draws the batches' non-zero pixels and sorts them
by pixel, ``sparse_rows`` forms h0 and dh from each row's pixels and ``sparse_update`` adds
the update into the rows of the batch's pixels, one block per pixel (``SparseEngine``).

Nothing comes back to the host inside a window of steps: the losses and
accuracies stay on the device until ``run`` returns at an evaluation.

The array module is CuPy on a GPU. Under Numba's simulator
(``NUMBA_ENABLE_CUDASIM=1``) it is NumPy, and the same kernels run on the
CPU, so that the whole training loop is tested without a GPU; the simulator
runs each thread in Python, hence its block size ``SIM_THREADS`` is tiny.

Random batches: by default they come from the model's host streams (the
same batches as every other backend), uploaded once per evaluation window;
with ``batches="device"`` they are drawn on the GPU by a counter-based
Philox4x32-10 generator keyed from the model's seed, so a model's draws do
not depend on the launch shape or the ensemble.
"""
import functools
import math
import types

import numpy as np
from numba import cuda

from .. import _dispatch, _numerics, _philox
from .._dispatch import cuda_simulator
from .._philox import NormalStream
from ..activations import ACTIVATIONS
from .model import Params

_dispatch.quiet_low_occupancy()

#: Threads per block on a GPU (one block per row of m hidden units).
GPU_THREADS = 128
#: Threads per block under the simulator, which runs every thread in Python.
SIM_THREADS = 2

_TWO_M24 = 2.0 ** -_philox.UNIFORM_BITS
_DROP = np.uint64(32 - _philox.UNIFORM_BITS)
PAIRS_STREAM, NOISE_STREAM = _philox.PAIRS_STREAM, _philox.NOISE_STREAM


def array_module():
    """CuPy on a GPU; NumPy under Numba's CUDA simulator."""
    if cuda_simulator():
        return np
    import cupy
    return cupy


def _device_view(xp):
    """Map an array of ``xp`` to what a Numba-CUDA kernel takes, without copying."""
    if xp is np:
        return lambda a: a
    return cuda.as_cuda_array


def kernels(threads, dtype, activation=None):
    """The kernels for ``threads`` threads per block, float ``dtype`` and ``activation``,
    compiled once a process.

    Parameters
    ----------
    threads : int
        A power of two; the block size of the row kernels.
    dtype : {"float32", "float64"}
        The storage type of activations and weights (sums are float64).
    activation : fastsd.activations.Activation, optional
        The hidden units' sigma; None or ReLU's (by name): ReLU's own code, the difference
        of ReLUs exact. Another's units are ``_cpu_kernels.unit_functions``, compiled as
        device functions.

    Returns
    -------
    types.SimpleNamespace
        The kernels, the device function ``philox`` and the hidden unit's device functions
        ``unit_output(h0, dh, a0, da, c)`` (one unit's term of the centred output) and
        ``unit_backward(h, a, ef, c)`` (ef a unit'(h) and ef unit(h)). The kernels that touch
        the hidden units (``centered_rows``, ``forward_backward``, ``readout_update``) take
        the unit scale c as their last argument (``Activation.unit_scale``; ReLU's do not
        read it).

    Raises
    ------
    ValueError
        Naming ``threads``, for one that is not a power of two.
    """
    if activation is None or activation.name == "relu":
        return _kernels(threads, dtype, None)
    return _kernels(threads, dtype, (activation.fn, activation.grad, activation.delta))


#: The NumPy functions of a scalar that the CUDA target compiles as ``math``'s: its ufuncs
#: lack them (numba-cuda 0.30 types np.exp of a float64 and then fails to lower it; Numba's
#: own CUDA target does not type it), where np.tanh, np.log and np.maximum compile as they are.
SCALAR_NUMPY = {"exp": math.exp, "exp2": math.exp2, "expm1": math.expm1, "log1p": math.log1p,
                "sqrt": math.sqrt, "abs": math.fabs, "absolute": math.fabs, "fabs": math.fabs,
                "power": math.pow}


def _scalar_numpy():
    """NumPy for an activation's device code: the module, ``SCALAR_NUMPY`` in place."""
    scalar = types.ModuleType(np.__name__)
    scalar.__dict__.update(vars(np))
    scalar.__dict__.update(SCALAR_NUMPY)
    return scalar


_SCALAR_NUMPY = _scalar_numpy()


def device_form(fn):
    """``fn`` (an activation's sigma, sigma' or difference, written in NumPy) as the CUDA
    kernels compile it: the same code, the NumPy module among its globals replaced by one
    with ``SCALAR_NUMPY``'s functions (on the simulator too, which so runs the device's code).

    Parameters
    ----------
    fn : callable or None
        A plain Python function of float64 scalars.

    Returns
    -------
    callable or None
        A new function (``fn`` itself where it names no NumPy module; None for None).
    """
    if fn is None or not any(v is np for v in fn.__globals__.values()):
        return fn
    scope = {k: _SCALAR_NUMPY if v is np else v for k, v in fn.__globals__.items()}
    out = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    out.__qualname__, out.__doc__, out.__module__ = fn.__qualname__, fn.__doc__, fn.__module__
    return out


def _relu_units(ZERO):
    """ReLU's hidden unit: the kernels' code before other activations (the same bits)."""

    @cuda.jit(device=True)
    def unit_output(h0, dh, a0, da, c):
        """a0 (relu(h0 + dh) - relu(h0)) + da relu(h0 + dh), the difference exact."""
        h = h0 + dh
        r = max(h, ZERO)
        if h0 > ZERO:
            dr = dh if h > ZERO else -h0
        else:
            dr = r
        return a0 * dr + da * r

    @cuda.jit(device=True)
    def unit_backward(h, a, ef, c):
        """(ef a relu'(h), ef relu(h)), relu'(0) = 0."""
        if h > ZERO:
            return ef * a, ef * h
        return 0.0, 0.0

    @cuda.jit(device=True)
    def readout_add(acc, h, ef, c):
        """acc + ef relu(h): the product and the sum one fused multiply-add, as before."""
        if h > ZERO:
            acc += ef * h
        return acc

    return unit_output, unit_backward, readout_add


@functools.cache
def _kernels(threads, dtype, functions):
    """``kernels``, for ReLU (``functions`` None) or the activation's (fn, grad, delta)."""
    from . import _cpu_kernels

    from numba import float64

    uint64 = np.uint64

    if threads < 1 or threads & (threads - 1):
        raise ValueError(f"`threads` must be a power of two; got {threads}.")
    DT = np.dtype(dtype).type
    ZERO = DT(0)
    TWO_M24 = _TWO_M24
    DROP = _DROP
    TWO_PI = 2.0 * math.pi
    T = threads

    philox = cuda.jit(device=True)(_philox.philox)
    sigmoid = cuda.jit(device=True)(_numerics.scalar_sigmoid)
    bce = cuda.jit(device=True)(_numerics.scalar_bce)
    if functions is None:
        unit_output, unit_backward, readout_add = _relu_units(ZERO)
    else:
        units = _cpu_kernels.unit_functions(*map(device_form, functions),
                                            jit=cuda.jit(device=True))
        unit_output, unit_backward = units["_unit_output"], units["_unit_backward"]

        @cuda.jit(device=True)
        def readout_add(acc, h, ef, c):
            """acc + ef unit(h)."""
            return acc + unit_backward(h, ZERO, ef, c)[1]

    @cuda.jit(device=True)
    def row_output(h0, dh, a0, da, c, lane, shared):
        """Sum over i of a0 (unit(h0 + dh) - unit(h0)) + da unit(h0 + dh), in a fixed order."""
        acc = 0.0
        for i in range(lane, h0.shape[0], T):
            acc += unit_output(h0[i], dh[i], a0[i], da[i], c)
        shared[lane] = acc
        cuda.syncthreads()
        w = T // 2
        while w > 0:
            if lane < w:
                shared[lane] += shared[lane + w]
            cuda.syncthreads()
            w //= 2
        total = shared[0]
        cuda.syncthreads()
        return total

    @cuda.jit
    def centered_rows(h0, dh, a0, da, scale, out, c):
        """out[k, b] = scale[k] * row_output(h0[k, b], dh[k, b], ...): one block per row."""
        B = h0.shape[1]
        k = cuda.blockIdx.x // B
        b = cuda.blockIdx.x % B
        lane = cuda.threadIdx.x
        shared = cuda.shared.array(T, float64)
        f = row_output(h0[k, b], dh[k, b], a0[k], da[k], c, lane, shared) * scale[k]
        if lane == 0:
            out[k, b] = f

    @cuda.jit
    def forward_backward(h0, dh, a0, da, Y, t, scale, lr, grad, ef, row_loss, row_correct, c):
        """Forward, loss and backward to the preactivations; one block per (model, row).

        h0, dh (M, B, m): dh becomes h = h0 + dh. Y (M, n, B): labels, step t.
        grad (M, B, m) out: -lr dLoss/dh. ef (M, B) out: dLoss/df~ * scale.
        row_loss, row_correct (M, B) out: BCE and correctness per row. c: the unit scale.
        """
        B, m = h0.shape[1], h0.shape[2]
        k = cuda.blockIdx.x // B
        b = cuda.blockIdx.x % B
        lane = cuda.threadIdx.x
        shared = cuda.shared.array(T, float64)
        s = scale[k]
        f = row_output(h0[k, b], dh[k, b], a0[k], da[k], c, lane, shared) * s
        y = Y[k, t, b]
        e = (sigmoid(f) - y) * s / B
        if lane == 0:
            row_loss[k, b] = bce(f, y)
            row_correct[k, b] = 1.0 if (f > 0) == (y > 0.5) else 0.0
            ef[k, b] = e
        g = -lr[k] * e
        for i in range(lane, m, T):
            h = h0[k, b, i] + dh[k, b, i]
            dh[k, b, i] = h
            grad[k, b, i] = unit_backward(h, a0[k, i] + da[k, i], g, c)[0]

    @cuda.jit
    def readout_update(h, ef, lr, da, row_loss, row_correct, loss, correct, t, c):
        """da[k, i] -= lr[k] sum_b ef[k, b] unit(h[k, b, i]); loss[k, t], correct[k, t] = batch
        sums; c the unit scale.

        Grid (ceil(m / T), M); each thread sums over the batch in order.
        """
        B, m = h.shape[1], h.shape[2]
        k = cuda.blockIdx.y
        i = cuda.blockIdx.x * T + cuda.threadIdx.x
        if i < m:
            acc = 0.0
            for b in range(B):
                acc = readout_add(acc, h[k, b, i], ef[k, b], c)
            da[k, i] -= lr[k] * acc
        if i == 0:
            ls = 0.0
            cs = 0.0
            for b in range(B):
                ls += row_loss[k, b]
                cs += row_correct[k, b]
            loss[k, t] = ls
            correct[k, t] = cs

    @cuda.jit
    def gather_sum(A, U, V, t, out):
        """out[k, b, i] = A[k, U[k, t, b], i] + A[k, V[k, t, b], m + i]; one block per row."""
        B, m = out.shape[1], out.shape[2]
        k = cuda.blockIdx.x // B
        b = cuda.blockIdx.x % B
        p = U[k, t, b]
        q = V[k, t, b]
        for i in range(cuda.threadIdx.x, m, T):
            out[k, b, i] = A[k, p, i] + A[k, q, m + i]

    @cuda.jit
    def gather_inputs(S, U, V, t, step, std, keys, X):
        """X[k, b] = (S_k[U]; S_k[V]) + std[k] * z, z ~ N(0, 1) from Philox; one block per row.

        The normals of (model k, global step, row b, coordinates 4j..4j+3) are
        the Box-Muller transforms of Philox(j, step, b, NOISE_STREAM) under
        model k's key (keys[k, 0], keys[k, 1]).
        """
        B, p = X.shape[1], X.shape[2]
        d = p // 2
        k = cuda.blockIdx.x // B
        b = cuda.blockIdx.x % B
        u = U[k, t, b]
        v = V[k, t, b]
        sd = std[k]
        for j4 in range(cuda.threadIdx.x, (p + 3) // 4, T):
            z0 = z1 = z2 = z3 = 0.0
            if sd > 0:
                w0, w1, w2, w3 = philox(uint64(j4), uint64(step), uint64(b),
                                        uint64(NOISE_STREAM), keys[k, 0], keys[k, 1])
                # fastsd._philox.box_muller, in float64
                r = math.sqrt(-2.0 * math.log(((w0 >> DROP) + uint64(1)) * TWO_M24))
                z0 = r * math.cos((w1 >> DROP) * (TWO_M24 * TWO_PI))
                z1 = r * math.sin((w1 >> DROP) * (TWO_M24 * TWO_PI))
                r = math.sqrt(-2.0 * math.log(((w2 >> DROP) + uint64(1)) * TWO_M24))
                z2 = r * math.cos((w3 >> DROP) * (TWO_M24 * TWO_PI))
                z3 = r * math.sin((w3 >> DROP) * (TWO_M24 * TWO_PI))
            for c in range(4):
                j = 4 * j4 + c
                if j < p:
                    z = z0 if c == 0 else z1 if c == 1 else z2 if c == 2 else z3
                    x = S[k, u, j] if j < d else S[k, v, j - d]
                    X[k, b, j] = x + sd * z

    @cuda.jit
    def draw_pairs(Ls, step0, keys, U, V, Y):
        """Balanced pairs for n steps, one thread per (model, row), as ``SameDifferent.draw_pairs``.

        Rows b < B // 2 are same, the others different (for odd B the last
        row is a fair coin); u is uniform over L and a different pair's v is
        u + offset mod L, offset uniform over 1..L-1. The words come from
        Philox(0, step0 + t, b, PAIRS_STREAM) under model k's key.
        """
        M, n, B = U.shape
        g = cuda.grid(1)
        if g >= M * B:
            return
        k = g // B
        b = g % B
        L = uint64(Ls[k])
        for t in range(n):
            w0, w1, w2, _ = philox(uint64(0), uint64(step0 + t), uint64(b),
                                   uint64(PAIRS_STREAM), keys[k, 0], keys[k, 1])
            u = (w0 * L) >> uint64(32)
            same = b < B // 2 or (B % 2 == 1 and b == B - 1 and w2 < uint64(0x80000000))
            off = uint64(1) + ((w1 * (L - uint64(1))) >> uint64(32))
            U[k, t, b] = u
            V[k, t, b] = u if same else (u + off) % L
            Y[k, t, b] = 1.0 if same else 0.0

    @cuda.jit
    def scatter_rows(G, U, V, t, D):
        """D[k, l, i] = sum_{b: U=l} G[k, b, i]; D[k, l, m + i] = sum_{b: V=l} G[k, b, i].

        One block per (model, symbol); the batch is summed in order (no atomics).
        """
        B, m = G.shape[1], G.shape[2]
        L = D.shape[1]
        k = cuda.blockIdx.x // L
        sym = cuda.blockIdx.x % L
        for i in range(cuda.threadIdx.x, m, T):
            a1 = ZERO
            a2 = ZERO
            for b in range(B):
                if U[k, t, b] == sym:
                    a1 += G[k, b, i]
                if V[k, t, b] == sym:
                    a2 += G[k, b, i]
            D[k, sym, i] = a1
            D[k, sym, m + i] = a2

    @cuda.jit
    def sparse_rows(w0T, dwT, index, value, t, h0, dh):
        """h0[k, b] = sum_e value[k, t, b, e] w0T[k, index[k, t, b, e]], dh the same with dwT:
        the preactivations from a row's non-zero pixels, in their order; one block per row."""
        B, m = h0.shape[1], h0.shape[2]
        K = index.shape[3]
        k = cuda.blockIdx.x // B
        b = cuda.blockIdx.x % B
        for i in range(cuda.threadIdx.x, m, T):
            a0 = ZERO
            a1 = ZERO
            for e in range(K):
                x = value[k, t, b, e]
                if x != 0:
                    q = index[k, t, b, e]
                    a0 += x * w0T[k, q, i]
                    a1 += x * dwT[k, q, i]
            h0[k, b, i] = a0
            dh[k, b, i] = a1

    @cuda.jit
    def sparse_update(G, cols, start, rows, vals, count, t, dwT):
        """dwT[k, cols[j]] += sum of vals[e] G[k, rows[e]] over pixel j's entries (the batch
        sorted by pixel, ``_cpu_kernels.sparse_columns``), in their order, no atomics; one
        block per (model, pixel slot j), slots past the batch's count idle."""
        m = G.shape[2]
        J = cols.shape[2]
        k = cuda.blockIdx.x // J
        j = cuda.blockIdx.x % J
        if j >= count[k, t]:
            return
        q = cols[k, t, j]
        for i in range(cuda.threadIdx.x, m, T):
            acc = ZERO
            for e in range(start[k, t, j], start[k, t, j + 1]):
                acc += vals[k, t, e] * G[k, rows[k, t, e], i]
            dwT[k, q, i] += acc

    return types.SimpleNamespace(
        threads=T, philox=philox, unit_output=unit_output, unit_backward=unit_backward,
        centered_rows=centered_rows, forward_backward=forward_backward,
        readout_update=readout_update, gather_sum=gather_sum, gather_inputs=gather_inputs,
        draw_pairs=draw_pairs, scatter_rows=scatter_rows, sparse_rows=sparse_rows,
        sparse_update=sparse_update)


def _stack(arrays, dtype):
    return np.ascontiguousarray(np.stack(arrays), dtype=dtype)


class _CudaEngine:
    """State of M models on the device: w0, a0, the displacement, labels and scratch.

    Parameters
    ----------
    tasks, params0, scales, lrs, dtype
        As the CPU engines.
    device_keys : (M, 2, 2) uint64 array, optional
        Philox keys (pairs, noise) per model, for ``run_device``.
    activation : fastsd.activations.Activation, default ReLU
        The hidden units' sigma (``kernels``); the unit scale c = ``activation.unit_scale(m)``.

    Kernels run with ``GPU_THREADS`` threads per block, ``SIM_THREADS`` under
    the simulator.
    """

    #: Host-built input chunks are kept below this many bytes.
    CHUNK_BYTES = 1 << 26
    #: Whether the engine trains any activation (else ReLU only: ``build_engines``).
    any_activation = True

    def __init__(self, tasks, params0, scales, lrs, dtype, device_keys=None,
                 activation=ACTIVATIONS["relu"]):
        xp = self.xp = array_module()
        self._view = _device_view(xp)
        threads = SIM_THREADS if cuda_simulator() else GPU_THREADS
        self.k = kernels(threads, np.dtype(dtype).name, activation)
        # a float64 scalar: the simulator's arithmetic in float64, as the GPU's
        self.unit_scale = np.float64(activation.unit_scale(params0[0].a.shape[0]))
        self.T = threads
        self.dtype = np.dtype(dtype)
        self.tasks = tasks
        M = len(tasks)
        self.M, self.d = M, tasks[0].input_dim // 2
        self.w0T = xp.asarray(_stack([p.w.T for p in params0], dtype))      # (M, p, m)
        self.a0 = xp.asarray(_stack([p.a for p in params0], dtype))         # (M, m)
        self.da = xp.zeros_like(self.a0)
        self.scales = xp.asarray(np.asarray(scales, dtype=np.float64))
        self.lrs = xp.asarray(np.asarray(lrs, dtype=np.float64))
        self.Ls = np.array([t.L for t in tasks], dtype=np.int64)
        Lmax = int(self.Ls.max())
        S = np.zeros((M, Lmax, self.d))
        for k, t in enumerate(tasks):
            if hasattr(t, "symbols"):       # image tasks: inputs built on the host
                S[k, :t.L] = t.symbols
        self.S = xp.asarray(S.astype(dtype))
        self.std = xp.asarray(np.array([getattr(t, "noise_std", 0.0) for t in tasks]))
        self.clean = all(t.has_symbol_basis for t in tasks)
        keys = (np.zeros((M, 2, 2), np.uint64) if device_keys is None
                else np.asarray(device_keys, np.uint64))
        self.pair_keys = xp.asarray(np.ascontiguousarray(keys[:, 0]))
        self.noise_keys = xp.asarray(np.ascontiguousarray(keys[:, 1]))
        self.no_noise = xp.zeros(M)
        self.step = 0                       # global step count, the Philox counter
        self._scratch = {}
        self._views = {}

    # -- helpers ------------------------------------------------------------------
    def _buf(self, name, shape, dtype=None):
        """A persistent device buffer, reallocated only when its shape changes."""
        a = self._scratch.get(name)
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        if a is None or a.shape != tuple(shape) or a.dtype != dtype:
            a = self._scratch[name] = self.xp.zeros(shape, dtype)
        return a

    def _launch(self, kernel, grid, block, *args):
        kernel[grid, block](*(self._as_kernel_arg(a) for a in args))

    def _as_kernel_arg(self, a):
        """A kernel's view of a device array, cached: making one costs more than a launch.

        The cache holds the arrays alive; ``_window`` empties it when it returns.
        """
        if self.xp is np or not isinstance(a, self.xp.ndarray):
            return a
        key = (a.data.ptr, a.shape, a.strides, a.dtype.str)
        view = self._views.get(key)
        if view is None:
            view = self._views[key] = self._view(a)
        return view

    def _rows(self, kernel, rows, *args):
        self._launch(kernel, rows, self.T, *args)

    # -- training -----------------------------------------------------------------
    def run(self, pairs, noise_rngs):
        """n SGD steps on batches drawn on the host; returns (loss, accuracy), (M, n) each."""
        xp = self.xp
        u, v, U, V, Y = self._upload(pairs)
        M, n, B = u.shape
        if self.clean:
            return self._window(U, V, Y, None)
        streams = [r for r in noise_rngs if isinstance(r, NormalStream)]
        if all(isinstance(r, NormalStream) or t.has_symbol_basis
               for t, r in zip(self.tasks, noise_rngs)) and len({r.step for r in streams}) == 1:
            # counter-based noise (the noisy symbol task): drawn on the device, the numbers
            # of the host streams (gather_inputs at their step, under their keys)
            self.noise_keys = xp.asarray(np.array(
                [r.key if isinstance(r, NormalStream) else np.zeros(2, np.uint64)
                 for r in noise_rngs], dtype=np.uint64))
            self.step = streams[0].step
            out = self._window(U, V, Y, "device")
            for r in streams:
                r.advance(n)
            return out
        # image tasks: inputs built on the host from the noise streams, as on the CPU,
        # uploaded a chunk of steps at a time
        c = max(1, min(n, self.CHUNK_BYTES // (M * B * 2 * self.d * self.dtype.itemsize)))
        loss = xp.empty((M, n))
        correct = xp.empty((M, n))
        for t0 in range(0, n, c):
            t1 = min(n, t0 + c)
            # step by step, as the CPU draws them (one batch of indices per call)
            Xc = np.stack([np.stack([task.training_inputs(u[k, t], v[k, t], rng)
                                     for k, (task, rng) in enumerate(zip(self.tasks, noise_rngs))])
                           for t in range(t0, t1)])
            Xc = xp.asarray(np.ascontiguousarray(Xc, dtype=self.dtype))
            self._window(U[:, t0:t1].copy(), V[:, t0:t1].copy(), Y[:, t0:t1].copy(), Xc,
                         loss[:, t0:t1], correct[:, t0:t1])
        return self._results(loss, correct, B)

    def _upload(self, pairs):
        """The host batches (index arrays u, v on the host) and U, V, Y on the device."""
        u = np.stack([p[0] for p in pairs]).astype(np.int32)
        v = np.stack([p[1] for p in pairs]).astype(np.int32)
        y = np.stack([p[2] for p in pairs]).astype(np.float64)
        return u, v, self.xp.asarray(u), self.xp.asarray(v), self.xp.asarray(y)

    def run_device(self, n, batch_size):
        """n SGD steps on batches drawn on the device; returns (loss, accuracy), (M, n) each."""
        xp = self.xp
        M, B = self.M, batch_size
        U = self._buf("U", (M, n, B), np.int32)
        V = self._buf("V", (M, n, B), np.int32)
        Y = self._buf("Y", (M, n, B), np.float64)
        Ls = self._buf("Ls", (M,), np.int64)
        Ls[...] = xp.asarray(self.Ls)
        grid = (M * B + self.T - 1) // self.T
        self._launch(self.k.draw_pairs, grid, self.T, Ls, self.step, self.pair_keys, U, V, Y)
        return self._window(U, V, Y, "device")

    def _window(self, U, V, Y, inputs, loss=None, correct=None):
        xp = self.xp
        M, n, B = U.shape
        out = loss is None
        if out:
            loss = xp.empty((M, n))
            correct = xp.empty((M, n))
        lsum = self._buf("lsum", (M, n), np.float64)
        csum = self._buf("csum", (M, n), np.float64)
        for t in range(n):
            self._step(U, V, Y, t, inputs)
            self.step += 1
        self._views.clear()
        loss[...] = lsum
        correct[...] = csum
        return self._results(loss, correct, B) if out else None

    def _results(self, loss, correct, B):
        xp = self.xp
        if xp is np:
            return loss / B, correct / B
        return xp.asnumpy(loss) / B, xp.asnumpy(correct) / B

    def _forward_backward(self, h0, dh, Y, t):
        """Steps 4-5 of the module docs; returns the gradient G = -lr dLoss/dh."""
        M, B, m = h0.shape
        n = Y.shape[1]
        G = self._buf("G", (M, B, m))
        ef = self._buf("ef", (M, B), np.float64)
        rl = self._buf("row_loss", (M, B), np.float64)
        rc = self._buf("row_correct", (M, B), np.float64)
        self._rows(self.k.forward_backward, M * B, h0, dh, self.a0, self.da, Y, t, self.scales,
                   self.lrs, G, ef, rl, rc, self.unit_scale)
        lsum = self._buf("lsum", (M, n), np.float64)
        csum = self._buf("csum", (M, n), np.float64)
        self._launch(self.k.readout_update, ((m + self.T - 1) // self.T, M), self.T, dh, ef,
                     self.lrs, self.da, rl, rc, lsum, csum, t, self.unit_scale)
        return G

    # -- evaluation -----------------------------------------------------------------
    def outputs(self, X, sources=None):
        """Centered outputs f~ at X (M, n, p) -> (M, n) float64 on the host.

        ``sources`` (which models share inputs) is not used: one batched GEMM
        over the ensemble is cheaper on a GPU than sorting out repeats.
        """
        xp = self.xp
        X = xp.asarray(np.ascontiguousarray(X, dtype=self.dtype))
        M, n, _ = X.shape
        h0 = xp.matmul(X, self.w0T)
        dh = xp.matmul(X, self._dwT())
        out = xp.empty((M, n))
        self._rows(self.k.centered_rows, M * n, h0, dh, self.a0, self.da, self.scales, out,
                   self.unit_scale)
        self._views.clear()
        return out if xp is np else xp.asnumpy(out)

    def params(self):
        """(initial, final) lists of float64 ``Params``, copied to the host."""
        xp = self.xp
        host = (lambda a: a) if xp is np else xp.asnumpy
        w0 = host(self.w0T).transpose(0, 2, 1).astype(np.float64)
        a0 = host(self.a0).astype(np.float64)
        dw = host(self._dwT()).transpose(0, 2, 1).astype(np.float64)
        da = host(self.da).astype(np.float64)
        init = [Params(w=np.ascontiguousarray(w), a=a.copy()) for w, a in zip(w0, a0)]
        final = [Params(w=w + d, a=a + e) for w, d, a, e in zip(w0, dw, a0, da)]
        return init, final


class DenseEngine(_CudaEngine):
    """Dense path: batched cuBLAS GEMMs for the preactivations and the weight gradient."""

    def __init__(self, tasks, params0, scales, lrs, dtype, device_keys=None,
                 activation=ACTIVATIONS["relu"]):
        super().__init__(tasks, params0, scales, lrs, dtype, device_keys, activation)
        xp = self.xp
        self.dwT = xp.zeros_like(self.w0T)
        d = self.d
        # P = S w0^T for clean tasks: h0 of a training pair is a gather, not a GEMM
        self.P0 = (xp.concatenate([xp.matmul(self.S, self.w0T[:, :d]),
                                   xp.matmul(self.S, self.w0T[:, d:])], axis=2)
                   if self.clean else None)

    def _dwT(self):
        return self.dwT

    def _step(self, U, V, Y, t, inputs):
        xp = self.xp
        M, _, B = U.shape
        p, m = self.w0T.shape[1:]
        h0 = self._buf("h0", (M, B, m))
        dh = self._buf("dh", (M, B, m))
        if inputs is None or isinstance(inputs, str):
            X = self._buf("X", (M, B, p))
            std = self.std if inputs == "device" else self.no_noise
            self._rows(self.k.gather_inputs, M * B, self.S, U, V, t, self.step, std,
                       self.noise_keys, X)
        else:
            X = inputs[t]
        if self.clean:
            self._rows(self.k.gather_sum, M * B, self.P0, U, V, t, h0)
        else:
            xp.matmul(X, self.w0T, out=h0)
        xp.matmul(X, self.dwT, out=dh)
        G = self._forward_backward(h0, dh, Y, t)
        tmp = self._buf("dwT_step", self.dwT.shape)
        xp.matmul(X.transpose(0, 2, 1), G, out=tmp)
        self.dwT += tmp


class SymbolEngine(_CudaEngine):
    """Symbol-basis path (clean tasks, one L): gathers and scatter-adds over the L symbols."""

    def __init__(self, tasks, params0, scales, lrs, dtype, device_keys=None,
                 activation=ACTIVATIONS["relu"]):
        super().__init__(tasks, params0, scales, lrs, dtype, device_keys, activation)
        xp = self.xp
        d = self.d
        self.K = xp.matmul(self.S, self.S.transpose(0, 2, 1))                # (M, L, L)
        self.P = xp.concatenate([xp.matmul(self.S, self.w0T[:, :d]),
                                 xp.matmul(self.S, self.w0T[:, d:])], axis=2)  # (M, L, 2m)
        self.Q = xp.zeros_like(self.P)
        self.C = xp.zeros_like(self.P)

    def _dwT(self):
        xp = self.xp
        m = self.a0.shape[1]
        St = self.S.transpose(0, 2, 1)
        return xp.concatenate([xp.matmul(St, self.C[..., :m]), xp.matmul(St, self.C[..., m:])],
                              axis=1)

    def _step(self, U, V, Y, t, inputs):
        xp = self.xp
        M, _, B = U.shape
        L, m = self.P.shape[1], self.a0.shape[1]
        h0 = self._buf("h0", (M, B, m))
        dh = self._buf("dh", (M, B, m))
        self._rows(self.k.gather_sum, M * B, self.P, U, V, t, h0)
        self._rows(self.k.gather_sum, M * B, self.Q, U, V, t, dh)
        G = self._forward_backward(h0, dh, Y, t)
        D = self._buf("D", self.C.shape)
        self._rows(self.k.scatter_rows, M * L, G, U, V, t, D)
        self.C += D
        tmp = self._buf("Q_step", self.Q.shape)
        xp.matmul(self.K, D, out=tmp)
        self.Q += tmp


class SparseEngine(_CudaEngine):
    """Sparse path (images that are mostly zeros, ``task.has_sparse_inputs``): as ``_cpu``'s.

    The host draws each step's ``SparseImages`` (once per seed: ``_cpu.shared_inputs``) and
    sorts them by pixel (``_cpu_kernels.sparse_columns``), and uploads both forms a chunk of
    steps at a time (a few percent of the dense images' bytes). ``sparse_rows`` forms h0 and
    dh from each row's pixels, ``forward_backward`` and ``readout_update`` run as on the dense
    path, and ``sparse_update`` adds the update into the rows of the batch's pixels.
    """

    def __init__(self, tasks, params0, scales, lrs, dtype, device_keys=None,
                 activation=ACTIVATIONS["relu"]):
        super().__init__(tasks, params0, scales, lrs, dtype, device_keys, activation)
        self.dwT = self.xp.zeros_like(self.w0T)

    def _dwT(self):
        return self.dwT

    def run(self, pairs, noise_rngs):
        from . import _cpu

        xp = self.xp
        u, v, U, V, Y = self._upload(pairs)
        M, n, B = u.shape
        leader = _cpu.shared_inputs(self.tasks, pairs, noise_rngs)
        leaders = sorted(set(leader))

        def draw(t):
            return {j: self.tasks[j].training_inputs_sparse(u[j, t], v[j, t], noise_rngs[j])
                    for j in leaders}

        first = draw(0)
        # about 48 bytes an entry in the two forms; a chunk's batches kept below CHUNK_BYTES
        c = max(1, min(n, self.CHUNK_BYTES // (48 * M * max(b.index.size for b in
                                                              first.values()))))
        loss, correct = xp.empty((M, n)), xp.empty((M, n))
        for t0 in range(0, n, c):
            steps = [first if t == 0 else draw(t) for t in range(t0, min(n, t0 + c))]
            chunk = self._pack(steps, leader)
            t1 = t0 + len(steps)
            self._window(U[:, t0:t1].copy(), V[:, t0:t1].copy(), Y[:, t0:t1].copy(), chunk,
                         loss[:, t0:t1], correct[:, t0:t1])
        for k, j in enumerate(leader):      # a follower's generator is where its leader's is
            if j != k:
                noise_rngs[k].bit_generator.state = noise_rngs[j].bit_generator.state
        return self._results(loss, correct, B)

    def _pack(self, steps, leader):
        """A chunk of steps' ``SparseImages`` ({leader: batch} each) on the device, row-major
        (index, value: (M, c, B, K)) and sorted by pixel (cols, start, rows, vals, count)."""
        from . import _cpu_kernels

        M, c, p = len(leader), len(steps), self.w0T.shape[1]
        B, K = next(iter(steps[0].values())).index.shape[0], max(
            b.index.shape[1] for step in steps for b in step.values())
        index = np.zeros((M, c, B, K), np.int64)
        value = np.zeros((M, c, B, K), self.dtype)
        cols, rows = np.zeros((M, c, B * K), np.int64), np.zeros((M, c, B * K), np.int64)
        start, vals = np.zeros((M, c, B * K + 1), np.int64), np.zeros((M, c, B * K), self.dtype)
        count = np.zeros((M, c), np.int64)
        for s, step in enumerate(steps):
            for k, j in enumerate(leader):
                b = step[j]
                index[k, s, :, :b.index.shape[1]] = b.index
                value[k, s, :, :b.index.shape[1]] = b.value
                count[k, s] = _cpu_kernels.sparse_columns(b.index, b.value, p, cols[k, s],
                                                          start[k, s], rows[k, s], vals[k, s])
        return tuple(self.xp.asarray(a) for a in (index, value, cols, start, rows, vals, count))

    def _step(self, U, V, Y, t, inputs):
        index, value, cols, start, rows, vals, count = inputs
        M, _, B = U.shape
        m = self.w0T.shape[2]
        h0 = self._buf("h0", (M, B, m))
        dh = self._buf("dh", (M, B, m))
        self._rows(self.k.sparse_rows, M * B, self.w0T, self.dwT, index, value, t, h0, dh)
        G = self._forward_backward(h0, dh, Y, t)
        self._rows(self.k.sparse_update, M * cols.shape[2], G, cols, start, rows, vals, count,
                   t, self.dwT)


ENGINES = {"dense": DenseEngine, "symbol": SymbolEngine, "sparse": SparseEngine}


def step_features(path, L, batch_size, width, input_dim, models=1, inputs="symbols",
                  entries=None):
    """What one SGD step of ``models`` models does on ``path``, in this backend's units.

    As ``_cpu.step_features``, for the GPU, which does every symbol row: a
    B x L scatter and an L x L GEMM per step ("flop": 2 L (B + L) m), against
    two B x p x m GEMMs (h0 is a gather; three GEMMs when the inputs change
    every step, the noise drawn on the device, images built on the host and
    uploaded: "draw"), and a fixed cost of its kernel launches per step ("step"); the
    sparse path's are those of B x entries pixels in place of B x p.
    """
    M, B, m, p = models, batch_size, width, input_dim
    if path == "sparse":            # rows and update over the pixels; drawn once a seed
        return {"step": 1.0, "flop": M * 6 * B * entries * m, "draw": B * entries}
    if path == "dense":
        return {"step": 1.0, "flop": M * (4 if inputs == "symbols" else 6) * B * p * m,
                "draw": M * B * p if inputs in ("images", "stamps") else 0.0}
    return {"step": 1.0, "flop": M * 2 * L * (B + L) * m}


def eval_features(input_dim, width, n_test, models=1, sources=1):
    """One test evaluation in the dense path's units: the GEMMs of h0 and dh."""
    return {"step": 1.0, "flop": 2 * (models + sources) * n_test * input_dim * width,
            "draw": sources * n_test * input_dim}
