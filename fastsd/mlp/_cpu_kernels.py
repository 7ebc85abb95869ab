"""Numba CPU kernels for the centered MLP: the fused parts around the GEMMs.

Both paths keep the displacement from initialisation (dw, da) rather than the
weights themselves, and evaluate the centered output as

    f~(x) = scale * sum_i [a0_i (relu(h0_i + dh_i) - relu(h0_i)) + da_i relu(h0_i + dh_i)],

with h0 = w0 . x and dh = dw . x. The difference of ReLUs is formed exactly
(``_drelu``), so that the lazy regime (gamma ~ 1e-5/sqrt(d), where dh is ~1e-7
of h0) keeps full relative precision in float32 instead of cancelling
f(theta) - f(theta0).

Activations (``fastsd.activations``): the kernels that touch the hidden units
(``centered_output``, ``dense_fused`` and ``symbol_chunk``, with the functions they call) are
templates, compiled per activation by ``kernels(activation)`` (``fastsd._jitcache.instantiate``):
ReLU's unit is the code above; any other sigma's is the hidden unit
sigma(c h) / c with c = sqrt(m) (1 for a homogeneous sigma), computed in float64,
its centred part from ``Activation.delta`` (``_gauss_delta`` by default), so
that it keeps its precision in the lazy regime.

Dense path: GEMMs by BLAS (SciPy's, written in place, in fixed blocks on fastsd's team,
``fastsd._gemm``), then ``dense_fused`` for ReLU, mask, readout reduction, centering, loss and
gradient in one pass over blocks of a batch's rows, also on the team. The noisy task's inputs are
built by ``noise_uniforms`` (Box-Muller's uniforms from the Philox words of its
counter-based noise, fastsd._philox), NumPy's vectorised log, sqrt, cos and sin, and
``noisy_inputs``.

Sparse path (images that are two stamps on an empty canvas, ``SparseImages``), with the
weights stored a pixel a row, (p, 2 m) per model. Blurred stamps: the batch's entries
sorted by pixel (``sparse_columns``), ``sparse_forward`` adds each non-zero pixel's weight
row into the preactivations of its inputs, ``dense_fused`` follows as on the dense path,
and ``sparse_update`` adds the update into those rows only, each part owning a block of
columns. Sharp stamps on a grid's cells, rows cell-major: the batch's stamps sorted by
cell (``stamp_order``), each cell's stamps one BLAS GEMM by the cell's rows forward
(``stamp_forward``, ``stamp_sum`` adding an image's two) and one for the update
(``stamp_update``), called from the kernel (``fastsd._blas``), each part owning cells.

Symbol-basis path (App. G.2 inputs are built from L symbols): every update of
the first-layer weights lies in the span of the symbols, so with
dw1 = C1^T S, dw2 = C2^T S (C1, C2 of shape (L, m)) the preactivations of a
training pair (u, v) are P1[u] + P2[v] + Q1[u] + Q2[v], where P = S w0^T and
Q = S dw^T = K C with K = S S^T. ``symbol_chunk`` runs many SGD steps this way
at O(B m + L min(L, B) m) per step, independent of d; the L min(L, B) m part, the
update of Q, is a BLAS GEMM.

All kernels loop over a leading model axis with ``prange``; each model runs
on one thread, so its arithmetic is the same whatever the number of models or
threads. The symbol path's GEMM calls BLAS from inside that loop; OpenBLAS
splits a GEMM's output among its threads, not its sums, so its bits do not
depend on BLAS's threads either (tests/test_backends.py). (Spreading one model
over threads, phase by phase, cost more in synchronisation than it saved at
these sizes, and two one-thread processes beat one two-thread process here.)
"""

import math
from types import SimpleNamespace

import numba as nb
import numpy as np

from .. import _blas, _jitcache, _numerics, _philox

# No "reassoc": a vectorised reduction may then add in an order that depends on
# the arrays' memory alignment, so results would change from run to run.
# Reductions go through ``_lane_sum`` instead, which fixes the order.
_FASTMATH = {"contract"}
_LANES = 16
_ROWS = 64           # inputs per thread task in centered_output
ROW_BLOCK = 32       # rows of a batch per part of the dense step's fused kernel
UNIT_BLOCK = 128     # weight columns per part of the sparse step, at least
FUSED_UNIT_WORK = 100   # one (row, unit) of dense_fused takes about 100 GEMM multiply-adds' time


@nb.njit(inline="always")
def _drelu(h0, dh, h):
    """relu(h0 + dh) - relu(h0), formed without cancellation."""
    if h0 > 0:
        return dh if h > 0 else -h0
    return h if h > 0 else h * 0


# The loss and its gradient: fastsd._numerics' scalar forms, inlined into the kernels.
_sigmoid = nb.njit(inline="always")(_numerics.scalar_sigmoid)
_bce = nb.njit(inline="always")(_numerics.scalar_bce)


@_jitcache.njit(fastmath=_FASTMATH)
def _lane_sum(x, zero):
    """Sum of x in a fixed order: ``_LANES`` interleaved partial sums, then in turn.

    Partial sum j adds x[j], x[j + 16], x[j + 32], ... in order over the
    first 16 * (n // 16) entries; the 16 partial sums are then added one
    after the other, and the remaining n % 16 entries after them. This vectorises without
    reassociation and gives the same bits for any memory alignment, thread
    count or ensemble. ``zero`` (0 of the accumulation dtype) sets the
    precision of the partial sums.

    The partial sums are 16 named locals on purpose: kept in a scratch array,
    they would be stored and reloaded every round (the compiler cannot rule
    out that the array overlaps x), at twice the cost.
    """
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = zero
    s8 = s9 = s10 = s11 = s12 = s13 = s14 = s15 = zero
    n = x.shape[0]
    full = n - n % _LANES
    for c in range(0, full, _LANES):
        s0 += x[c]
        s1 += x[c + 1]
        s2 += x[c + 2]
        s3 += x[c + 3]
        s4 += x[c + 4]
        s5 += x[c + 5]
        s6 += x[c + 6]
        s7 += x[c + 7]
        s8 += x[c + 8]
        s9 += x[c + 9]
        s10 += x[c + 10]
        s11 += x[c + 11]
        s12 += x[c + 12]
        s13 += x[c + 13]
        s14 += x[c + 14]
        s15 += x[c + 15]
    t = zero + s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7 + s8 + s9 + s10 + s11 + s12 + s13 + s14
    t += s15
    for i in range(full, n):        # the tail, in turn
        t += x[i]
    return t


# The hidden units' part of the kernels, per activation (``kernels``): ``_unit_output`` is
# one unit's term of the centred output, ``_unit_backward`` its gradients; ``c`` is the unit
# scale sqrt(m) (unused by ReLU's).
@nb.njit(inline="always")
def _relu_output(h0, dh, a0, da, c):
    """a0 (relu(h0 + dh) - relu(h0)) + da relu(h0 + dh), in the dtype of h0."""
    h = h0 + dh
    return a0 * _drelu(h0, dh, h) + da * max(h, h * 0)


@nb.njit(inline="always")
def _relu_backward(h, a, ef, c):
    """(ef a relu'(h), ef relu(h)).

    Selects, not branches: the sign of h is a coin flip, and a mispredicted branch
    an entry cost more than the row's arithmetic (adding a zero leaves grad_a's value).
    """
    pos = h > 0
    zero = abs(h * 0)           # +0, as before
    return (ef * a if pos else zero), (ef * h if pos else zero)


def _unit_output_any(h0, dh, a0, da, c):
    """a0 (unit(h0 + dh) - unit(h0)) + da unit(h0 + dh), unit(h) = sigma(c h) / c, in
    float64, the difference from ``_act_delta``."""
    u = c * h0
    du = c * dh
    return (a0 * _act_delta(u, du) + da * _act_fn(u + du)) / c


def _unit_backward_any(h, a, ef, c):
    """(ef a sigma'(c h), ef sigma(c h) / c), in float64."""
    u = c * h
    return ef * a * _act_grad(u), ef * _act_fn(u) / c


# The symbol path's units (``_symbol_step``), given h = h0 + dh and the zero of the dtype;
# ReLU's as that path computed them.
@nb.njit(inline="always")
def _relu_sym_output(h0, dh, h, a0, da, zero, c):
    """a0 (relu(h) - relu(h0)) + da relu(h), in the dtype of h0."""
    r = max(h, zero)
    dr = dh if (h0 > zero) & (h > zero) else r - max(h0, zero)
    return a0 * dr + da * r


@nb.njit(inline="always")
def _relu_sym_backward(h, a, ef, zero, c):
    """(ef a relu'(h), ef relu(h)), ef in the dtype of h."""
    return (ef * a if h > zero else zero), ef * max(h, zero)


def _sym_output_any(h0, dh, h, a0, da, zero, c):
    return _unit_output(h0, dh, a0, da, c)


def _sym_backward_any(h, a, ef, zero, c):
    return _unit_backward(h, a, ef, c)


#: Below this |du| ``_gauss_delta`` integrates sigma' (the rule's error, du^5 times sigma's
#: fifth derivative / 4320, is then below float64's rounding of the plain difference,
#: eps |sigma| / |du|, for sigma and its derivatives of order 1).
DELTA_SPAN = 2.0 ** -8
_GAUSS_NODE = 0.5 / math.sqrt(3.0)


def _gauss_delta(u, du):
    """sigma(u + du) - sigma(u): the two-point Gauss-Legendre rule on sigma' where
    |du| <= ``DELTA_SPAN`` (no cancellation), the plain difference beyond."""
    if abs(du) <= DELTA_SPAN:
        return 0.5 * du * (_act_grad(u + (0.5 - _GAUSS_NODE) * du)
                           + _act_grad(u + (0.5 + _GAUSS_NODE) * du))
    return _act_fn(u + du) - _act_fn(u)


def _output_row(h0, dh, a0, da, scale, c, terms, zero):
    """Centered output of one input; ``terms`` (m,) is scratch, ``zero`` sets the sum's dtype."""
    for i in range(h0.shape[0]):
        terms[i] = _unit_output(h0[i], dh[i], a0[i], da[i], c)
    return _lane_sum(terms, zero) * scale


def centered_output(h0, dh, a0, da, scale, out, c=1.0):
    """Centered outputs for M models: h0, dh (M, n, m); a0, da (M, m); scale (M,) -> out
    (M, n); c the unit scale (``kernels``).

    Threads take blocks of ``_ROWS`` inputs, with one scratch row per block.
    """
    M, n, m = h0.shape
    blocks = (n + _ROWS - 1) // _ROWS
    for j in nb.prange(M * blocks):
        k = j // blocks
        start = (j % blocks) * _ROWS
        terms = np.empty(m, h0.dtype)
        for b in range(start, min(start + _ROWS, n)):
            out[k, b] = _output_row(h0[k, b], dh[k, b], a0[k], da[k], scale[k], c, terms, 0.0)


def _backward_row(h, a0, da, ef, c, grad_h, grad_a):
    """grad_h[i] = ef a_i unit'(h_i); grad_a[i] += ef unit(h_i)."""
    for i in range(h.shape[0]):
        gh, ga = _unit_backward(h[i], a0[i] + da[i], ef, c)
        grad_h[i] = gh
        grad_a[i] += ga


def dense_fused(H, D, offset, a0, da, y, scale, grad_h, grad_a, k, b0, b1, c=1.0):
    """Forward, loss and backward to the preactivations: model k, rows b0 .. b1 - 1 of its batch.

    One part of the dense step's team job (``DenseEngine.run``: the rows of a
    batch in blocks of ``ROW_BLOCK``, fixed by the batch size, so the partial
    sums are the same for any thread count). Releases the GIL.

    Parameters
    ----------
    H : (M, B, n) array, n >= m
        Per model and input, w0 . x in the first m entries.
    D : (M, B, n') array, and offset : int
        dw . x in D[k, b, offset:offset + m] (D may be H, with offset m);
        overwritten with h = w0 . x + dw . x.
    a0, da : (M, m)
    y : (M, B) labels in {0, 1}
    scale : (M,) output scales 1/(gamma sqrt(d))
    grad_h : (M, B, m) out
        d(mean loss)/dh, rows b0 .. b1 - 1 of model k.
    grad_a : (m,) out
        These rows' part of d(mean loss)/d a (in row order).
    k, b0, b1 : int
    c : float, default 1.0
        The unit scale (``kernels``).

    Returns
    -------
    (float, int)
        Sum of BCE over the rows and number of correct predictions.
    """
    B, m = grad_h.shape[1], grad_h.shape[2]
    s = scale[k]
    lsum = 0.0
    csum = 0
    grad_a[:] = 0
    for b in range(b0, b1):
        h0, dh = H[k, b][:m], D[k, b][offset:offset + m]
        f = _output_row(h0, dh, a0[k], da[k], s, c, grad_h[k, b], 0.0)
        for i in range(m):
            dh[i] += h0[i]
        lsum += _bce(f, y[k, b])
        csum += (f > 0) == (y[k, b] > 0.5)
        ef = (_sigmoid(f) - y[k, b]) * s / B
        _backward_row(dh, a0[k], da[k], ef, c, grad_h[k, b], grad_a)
    return lsum, csum


@_jitcache.njit(nogil=True)
def sparse_columns(index, value, p, cols, start, rows, vals):
    """A batch of non-zero pixels (``SparseImages``: index, value (B, K)) sorted by pixel.

    Writes the distinct pixels in increasing order into cols[:n], and for the
    j-th the batch rows and values of its entries into rows[start[j]:start[j + 1]],
    vals[...] (in the order of b and e; vals in its own dtype); zero values are
    dropped. cols (B K,), start (B K + 1,), rows and vals (B K,). Returns n. A
    counting sort over the p pixels.
    """
    B, K = index.shape
    count = np.zeros(p + 1, np.int64)
    for b in range(B):
        for e in range(K):
            if value[b, e] != 0:
                count[index[b, e] + 1] += 1
    n = 0
    for q in range(p):
        if count[q + 1] > 0:
            cols[n] = q
            n += 1
        count[q + 1] += count[q]
    for j in range(n):
        start[j] = count[cols[j]]
    start[n] = count[p]
    for b in range(B):
        for e in range(K):
            if value[b, e] != 0:
                q = index[b, e]
                rows[count[q]] = b
                vals[count[q]] = value[b, e]
                count[q] += 1
    return n


@_jitcache.njit(nogil=True, fastmath=_FASTMATH)
def sparse_forward(WT, cols, start, rows, vals, n, k, H, h, u0, u1):
    """Columns u0 .. u1 - 1 of model k's preactivations from its batch's non-zero pixels.

    H[h, b, i] = sum over the entries (b, x) of pixel q of x WT[k, q, i]: the
    (p, 2 m) weights hold w0 in columns :m and dw in m:, so H[h, b] is
    w0 . x | dw . x (the dense step's X W^T row). Pixel by pixel (``sparse_columns``),
    so that each weight row is read once a batch. One part of the sparse step's
    team job (a block of columns a thread, ``UNIT_BLOCK`` at least); releases the GIL.
    """
    for b in range(H.shape[1]):
        H[h, b, u0:u1] = 0
    for j in range(n):
        w = WT[k, cols[j], u0:u1]
        for e in range(start[j], start[j + 1]):
            hb, x = H[h, rows[e], u0:u1], vals[e]
            for i in range(w.shape[0]):
                hb[i] += x * w[i]


@_jitcache.njit(nogil=True, fastmath=_FASTMATH)
def sparse_update(WT, cols, start, rows, vals, n, grad_h, lr, acc, k, u0, u1):
    """dw -= lr grad_h^T X on model k's units u0 .. u1 - 1, on the batch's non-zero pixels.

    For each pixel q, acc = sum over its entries (b, x) of x grad_h[k, b], then
    WT[k, q, m + i] -= lr acc[i]: each weight row written once a batch. One part
    of the sparse step's team job (a block of units a thread: a part owns its
    columns, so no two parts write one number); ``acc`` (>= u1 - u0,) is the
    part's own. Releases the GIL.
    """
    m = grad_h.shape[2]
    a = acc[:u1 - u0]
    for j in range(n):
        a[:] = 0
        for e in range(start[j], start[j + 1]):
            g, x = grad_h[k, rows[e], u0:u1], vals[e]
            for i in range(a.shape[0]):
                a[i] += x * g[i]
        w = WT[k, cols[j], m + u0:m + u1]
        for i in range(a.shape[0]):
            w[i] -= lr * a[i]


@_jitcache.njit(nogil=True)
def stamp_order(cells, values, C, V, start, rows, pos):
    """A batch of stamps on distinct cells (``SparseImages`` with ``cells``) sorted by cell.

    cells (B, k) int64, the cell of each image's k stamps; values (B, k s) float64,
    stamp j's s pixels in values[b, j s:(j + 1) s]. Writes V (B k, s) the stamps'
    pixels in cell order (a stable counting sort: by cell, then b, then j), in V's
    dtype; start (C + 1,), cell c's stamps in V[start[c]:start[c + 1]]; rows (B k,)
    the image of each sorted stamp; pos (B, k) where each image's stamps went.
    """
    B, k = cells.shape
    s = V.shape[1]
    start[:] = 0
    for b in range(B):
        for j in range(k):
            start[cells[b, j] + 1] += 1
    for c in range(C):
        start[c + 1] += start[c]
    fill = start[:C].copy()
    for b in range(B):
        for j in range(k):
            i = fill[cells[b, j]]
            fill[cells[b, j]] += 1
            pos[b, j] = i
            rows[i] = b
            for e in range(s):
                V[i, e] = values[b, j * s + e]


@_jitcache.njit(nogil=True)
def stamp_forward(gemm, WT, V, start, k, lo, out, c0, c1):
    """Cells c0 .. c1 - 1 of model k's stamp products: out[i] = V[i] . WT[k, cell's rows, lo:].

    The weights are cell-major: cell c's s pixels are rows c s .. (c + 1) s - 1 of
    WT[k], so a cell's stamps take one GEMM (BLAS at address ``gemm``, ``fastsd._blas``)
    of its (n_c, s) pixels by its (s, N) weights, N = out.shape[1] columns from ``lo``.
    A cell's GEMM is the same call however the cells are shared out (one part of a
    team job: a range of cells), so the bits do not depend on the thread count.
    """
    s, N = V.shape[1], out.shape[1]
    for c in range(c0, c1):
        a, b = start[c], start[c + 1]
        if b > a:
            _blas.gemm(gemm, False, out[a:b], V[a:b], WT[k, c * s:(c + 1) * s, lo:lo + N],
                       1.0, 0.0)


@_jitcache.njit(nogil=True, fastmath=_FASTMATH)
def stamp_sum(out, pos, H, h, lo, b0, b1):
    """H[h, b, lo:lo + N] = the sum of image b's stamp products (``stamp_forward``), stamps
    in order, for rows b0 .. b1 - 1 (one part of a team job)."""
    N = out.shape[1]
    for b in range(b0, b1):
        row = H[h, b, lo:lo + N]
        first = out[pos[b, 0]]
        for i in range(N):
            row[i] = first[i]
        for j in range(1, pos.shape[1]):
            o = out[pos[b, j]]
            for i in range(N):
                row[i] += o[i]


@_jitcache.njit(nogil=True)
def stamp_update(gemm, WT, V, start, rows, grad_h, lr, G, k, c0, c1):
    """dw -= lr grad_h^T X on the cells c0 .. c1 - 1 of model k (cell-major weights).

    Cell c's stamps' grad_h rows are gathered into G[start[c]:start[c + 1]] (G (B k, m),
    the model's own), then one GEMM adds -lr (its pixels)^T (their grad_h) into the
    cell's rows of dw, WT[k, c s:(c + 1) s, m:]: each part owns its cells' rows.
    """
    s, m = V.shape[1], grad_h.shape[2]
    for c in range(c0, c1):
        a, b = start[c], start[c + 1]
        if b > a:
            for i in range(a, b):
                G[i] = grad_h[k, rows[i]]
            _blas.gemm(gemm, True, WT[k, c * s:(c + 1) * s, m:], V[a:b], G[a:b], -lr, 1.0)


# The noise's generator: fastsd._philox's plain-Python Philox4x32-10, inlined.
_philox4 = nb.njit(inline="always")(_philox.philox)
_NOISE = np.uint64(_philox.NOISE_STREAM)


@_jitcache.njit
def noise_uniforms(keys, steps, scale, angle, U1, A):
    """Box-Muller's uniforms of M models' noise at one step each (``fastsd._philox.uniforms``).

    The words of philox((j, steps[k], b, NOISE_STREAM), keys[k]) give
    U1[k, b, 2 j + i] = ((w[2 i] >> 8) + 1) scale and A[k, b, 2 j + i] = (w[2 i + 1] >> 8)
    angle, i = 0, 1, with scale = 2^-24, angle = 2 pi 2^-24 in the arrays' dtype (each
    product exact before its one rounding). keys (M, 2) uint64, steps (M,) int64, U1 and
    A (M, B, 2 q), written. One thread: this runs between the BLAS calls of a step, and a
    Numba thread pool there would contend with BLAS's (tens of microseconds of work).
    """
    M, B, Q = U1.shape
    drop = np.uint64(32 - _philox.UNIFORM_BITS)
    one = np.uint64(1)
    for r in range(M * B):
        k = r // B
        b = r - k * B
        t = np.uint64(steps[k])
        row = np.uint64(b)
        k0 = keys[k, 0]
        k1 = keys[k, 1]
        for j in range(Q // 2):
            w0, w1, w2, w3 = _philox4(np.uint64(j), t, row, _NOISE, k0, k1)
            U1[k, b, 2 * j] = ((w0 >> drop) + one) * scale
            A[k, b, 2 * j] = (w1 >> drop) * angle
            U1[k, b, 2 * j + 1] = ((w2 >> drop) + one) * scale
            A[k, b, 2 * j + 1] = (w3 >> drop) * angle


@_jitcache.njit
def noisy_inputs(S, u, v, std, r, c, s, X):
    """One model's noisy inputs X[b] = (S[u[b]]; S[v[b]]) + std z[b] (``SameDifferent``).

    z[b, 2 i] = r[b, i] c[b, i] and z[b, 2 i + 1] = r[b, i] s[b, i] (Box-Muller's
    radius, cos and sin, ``fastsd._philox.polar``); S (L, d), u, v (B,) int, r, c, s
    (B, >= d), X (B, p = 2 d), written; each product and sum rounded as NumPy rounds it
    (no contraction).
    """
    B, p = X.shape
    d = p // 2
    for b in range(B):
        su = u[b]
        sv = v[b]
        for j in range(d):
            X[b, j] = S[su, j]
            X[b, d + j] = S[sv, j]
        for i in range(d):
            X[b, 2 * i] += (r[b, i] * c[b, i]) * std
            X[b, 2 * i + 1] += (r[b, i] * s[b, i]) * std


@_jitcache.njit(fastmath=_FASTMATH)
def _axpy_row(dst, src, alpha):
    """dst += alpha * src, in its own loop so that it vectorises."""
    for i in range(dst.shape[0]):
        dst[i] += alpha * src[i]


@_jitcache.njit
def distinct_pairs(u, v, L, first, count, n_distinct):
    """The distinct (u, v) pairs of each batch, for ``symbol_chunk``.

    Pairs that repeat in a batch have identical gradients, so each distinct
    pair is computed once and weighted by its count.

    Parameters
    ----------
    u, v : (n, B) int32
        Symbol indices of n batches.
    L : int
        Number of symbols.
    first, count : (n, B) int32 out
        For batch t, ``first[t, :n_distinct[t]]`` holds the position in the
        batch of the first occurrence of each distinct pair, in increasing
        order of u * L + v, and ``count[t, :n_distinct[t]]`` its multiplicity.
    n_distinct : (n,) int32 out
    """
    n, B = u.shape
    for t in range(n):
        keys = u[t].astype(np.int64) * L + v[t]
        order = np.argsort(keys, kind="mergesort")
        j = 0
        i = 0
        while j < B:
            b = order[j]
            c = 1
            while j + c < B and keys[order[j + c]] == keys[b]:
                c += 1
            first[t, i] = b
            count[t, i] = c
            i += 1
            j += c
        n_distinct[t] = i


@nb.njit(inline="always")
def _take_slot(slot, rows, D, side, sym, n):
    """Give symbol ``sym`` a zeroed gradient row on ``side`` if it has none; returns the
    number of rows in use."""
    if slot[side, sym] < 0:
        slot[side, sym] = n
        rows[side, n] = sym
        D[side, n, :] = 0
        n += 1
    return n


def _symbol_step(P1, P2, Q1, Q2, C1, C2, K, a0, da, u, v, y, first, count, n_distinct, s, lr,
                 D, rows, slot, Kg, KD, gda, h, g, unit):
    """One SGD step of one model in the symbol basis; returns (loss sum, n correct).

    Each distinct pair of the batch (``distinct_pairs``) is computed once and
    weighted by its count. The gradient rows of the batch's distinct symbols
    are gathered per side in ``D[side, :n]`` (``rows[side, j]`` is the symbol
    of row j, ``slot[side, r]`` the row of symbol r, -1 on entry and exit),
    and the update of Q = K C is one BLAS GEMM per side, K[:, act] D_act
    (``Kg`` and ``KD`` scratch), which is faster than row-by-row updates but at
    the smallest L, where they are even.
    """
    L, m = P1.shape
    B = u.shape[0]
    gda[:] = 0
    zero = h.dtype.type(0)
    one = h.dtype.type(1)
    lsum = 0.0
    csum = 0
    n1 = 0
    n2 = 0
    for j in range(n_distinct):
        b = first[j]
        c = count[j]
        p, q = u[b], v[b]
        p1, p2, q1, q2 = P1[p], P2[q], Q1[p], Q2[q]
        for i in range(m):
            h0 = p1[i] + p2[i]
            dh = q1[i] + q2[i]
            hi = h0 + dh
            h[i] = hi
            g[i] = _sym_output(h0, dh, hi, a0[i], da[i], zero, unit)
        f = _lane_sum(g, zero) * s
        lsum += c * _bce(f, y[b])
        csum += c * ((f > 0) == (y[b] > 0.5))
        ef = h.dtype.type(-lr * c * (_sigmoid(f) - y[b]) * s / B)
        n1 = _take_slot(slot, rows, D, 0, p, n1)
        n2 = _take_slot(slot, rows, D, 1, q, n2)
        d1, d2 = D[0, slot[0, p]], D[1, slot[1, q]]
        for i in range(m):              # backward: one pass for both rows and the readout
            gi, ga = _sym_backward(h[i], a0[i] + da[i], ef, zero, unit)
            d1[i] += gi
            d2[i] += gi
            gda[i] += ga
    for side in range(2):
        n = n1 if side == 0 else n2
        C, Q = (C1, Q1) if side == 0 else (C2, Q2)
        Ds = D[side]
        for j in range(n):
            _axpy_row(C[rows[side, j]], Ds[j], one)
        for j in range(n):
            Kg[j, :] = K[rows[side, j]]
        np.dot(Kg[:n].T, Ds[:n], KD)                # K[:, act] D_act (K is symmetric), BLAS
        for r in range(L):
            _axpy_row(Q[r], KD[r], one)
        for j in range(n):
            slot[side, rows[side, j]] = -1
    for i in range(m):
        da[i] += gda[i]
    return lsum, csum


def symbol_chunk(P1, P2, Q1, Q2, C1, C2, K, a0, da, u, v, y, first, count, n_distinct, batch_of,
                 scale, lr, loss, correct, unit=1.0):
    """Run n SGD steps for M models with the same L, in the symbol basis.

    Parameters
    ----------
    P1, P2 : (M, L, m)
        S w0_1^T and S w0_2^T (fixed).
    Q1, Q2, C1, C2 : (M, L, m), updated in place
        S dw^T and the coefficients of dw in the symbol basis.
    K : (M, L, L)
        Symbol Gram matrices S S^T.
    a0, da : (M, m); da updated in place.
    u, v : (G, n, B) int32 symbol indices; y : (G, n, B) labels: the G
        distinct batch streams of the ensemble.
    first, count : (G, n, B) int32; n_distinct : (G, n) int32
        Their distinct pairs (``distinct_pairs``).
    batch_of : (M,) int64
        The batch stream of each model (models of one seed draw the same
        batches, and share their sorting).
    scale, lr : (M,)
    loss, correct : (M, n) out
        Per-step sum of BCE over the batch and number of correct predictions.
    unit : float, default 1.0
        The unit scale (``kernels``).
    """
    M, L, m = P1.shape
    n = u.shape[1]
    for k in nb.prange(M):
        D = np.empty((2, L, m), P1.dtype)
        rows = np.empty((2, L), np.int32)
        slot = np.full((2, L), -1, np.int32)
        Kg = np.empty((L, L), P1.dtype)
        KD = np.empty((L, m), P1.dtype)
        gda = np.zeros(m, P1.dtype)
        h = np.zeros(m, P1.dtype)
        g = np.zeros(m, P1.dtype)
        r = batch_of[k]
        for t in range(n):
            ls, cs = _symbol_step(P1[k], P2[k], Q1[k], Q2[k], C1[k], C2[k], K[k],
                                  a0[k], da[k], u[r, t], v[r, t], y[r, t], first[r, t],
                                  count[r, t], n_distinct[r, t], scale[k], lr[k],
                                  D, rows, slot, Kg, KD, gda, h, g, unit)
            loss[k, t] = ls
            correct[k, t] = cs


#: The templates ``kernels`` compiles per activation, in order, with their Numba options.
_TEMPLATES = [(_output_row, {"fastmath": _FASTMATH}), (centered_output, {"parallel": True}),
              (_backward_row, {"fastmath": _FASTMATH}), (dense_fused, {"nogil": True}),
              (_symbol_step, {"fastmath": _FASTMATH}), (symbol_chunk, {"parallel": True})]
_INLINE = {"inline": "always"}
_COMPILED = {}


def unit_functions(fn, grad, delta=None, jit=None):
    """A non-ReLU activation's hidden unit, compiled for a target: the CPU kernels' and the
    CUDA kernels' (``fastsd.mlp._cuda.kernels``) one code.

    Parameters
    ----------
    fn, grad : callable
        sigma and sigma' (``Activation.fn``, ``Activation.grad``), plain Python.
    delta : callable, optional
        sigma(u + du) - sigma(u) (``Activation.delta``); None: ``_gauss_delta`` on ``grad``.
    jit : callable, optional
        ``jit(function)`` compiles a plain function as one its compiled callers call:
        ``numba.cuda.jit(device=True)`` for the CUDA kernels; default
        ``numba.njit(inline="always")``.

    Returns
    -------
    dict
        Compiled, by the names the templates call: ``_act_fn``, ``_act_grad`` and
        ``_act_delta`` (sigma, sigma' and the difference), ``_unit_output`` and
        ``_unit_backward`` (``_unit_output_any`` and ``_unit_backward_any`` on them: one
        unit's term of the centred output, and its gradients, in float64).
    """
    compile_ = jit or nb.njit(**_INLINE)
    acts = {"_act_fn": compile_(fn), "_act_grad": compile_(grad)}
    if delta is None:
        acts["_act_delta"] = _jitcache.instantiate([(_gauss_delta, _INLINE)], globals(), acts,
                                                   None, jit)["_gauss_delta"]
    else:
        acts["_act_delta"] = compile_(delta)
    units = _jitcache.instantiate([(_unit_output_any, _INLINE), (_unit_backward_any, _INLINE)],
                                  globals(), acts, None, jit)
    return dict(acts, _unit_output=units["_unit_output_any"],
                _unit_backward=units["_unit_backward_any"])


def _unit_bindings(activation):
    """The names a non-ReLU activation's kernels call: its sigma, sigma' and difference
    (``_act_*``) and the units built on them (``unit_functions``); and the functions the
    compiled code depends on."""
    units = unit_functions(activation.fn, activation.grad, activation.delta)
    sources = [f for f in (activation.fn, activation.grad, activation.delta) if f is not None]
    symbol = _jitcache.instantiate([(_sym_output_any, _INLINE), (_sym_backward_any, _INLINE)],
                                   globals(), units, None)
    return dict(units, _sym_output=symbol["_sym_output_any"],
                _sym_backward=symbol["_sym_backward_any"]), sources


def _build(bindings, variant, unit_scale):
    built = _jitcache.instantiate(_TEMPLATES, globals(), bindings, variant)
    return SimpleNamespace(centered_output=built["centered_output"],
                           dense_fused=built["dense_fused"], symbol_chunk=built["symbol_chunk"],
                           unit_scale=unit_scale)


#: ReLU's kernels (the paper's network), also under the templates' names below.
_RELU = _build({"_unit_output": _relu_output, "_unit_backward": _relu_backward,
                "_sym_output": _relu_sym_output, "_sym_backward": _relu_sym_backward}, "relu",
               lambda m: 1.0)


def kernels(activation):
    """The activation's ``centered_output``, ``dense_fused`` and ``symbol_chunk``, compiled
    once a process (and
    cached on disk where its functions have source files, ``fastsd._jitcache.variant_name``).

    Parameters
    ----------
    activation : fastsd.activations.Activation
        ReLU's (by name) are this module's own (``_relu_output``, ``_relu_backward``).

    Returns
    -------
    types.SimpleNamespace
        ``centered_output``, ``dense_fused`` and ``symbol_chunk`` (as documented here, with
        the unit scale as their last argument) and ``unit_scale(m)``: the c to pass for m
        hidden units (``Activation.unit_scale``; ReLU's kernels do not read it).
    """
    if activation.name == "relu":
        return _RELU
    key = (activation.name, activation.fn, activation.grad, activation.delta)
    if key not in _COMPILED:
        bindings, sources = _unit_bindings(activation)
        _COMPILED[key] = _build(bindings, _jitcache.variant_name(activation.name, *sources),
                                activation.unit_scale)
    return _COMPILED[key]


centered_output = _RELU.centered_output
dense_fused = _RELU.dense_fused
symbol_chunk = _RELU.symbol_chunk
