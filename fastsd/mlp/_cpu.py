"""Backend "cpu" of the mlp family: the Numba/BLAS training engines and their path costs.

The mlp family's interface (``fastsd.mlp.training.FAMILY``): every backend module
(``_reference``, ``_cpu``, ``_cuda``) defines ``ENGINES``, its paths ("dense",
and "symbol" where it has one) mapped to engine classes built as
``Engine(tasks, params0, scales, lrs, dtype)`` (and ``activation=``, a
``fastsd.activations.Activation``, where the class's ``any_activation`` is true), and,
where it has two paths, the form of its cost model, which ``fastsd.mlp.costs`` prices in seconds and
``path="auto"`` compares: ``step_features`` and ``eval_features`` (what a
step and an evaluation do, in counted units). Its shipped prices, calibration
shapes and probe shapes are data, ``prices_<backend>.json`` beside this module
(``fastsd.mlp.prices``). Each engine
trains a group of models in lockstep and exposes the same three operations,
so that ``train`` and ``train_ensemble`` need not know the path:

``run(pairs, noise_rngs)``
    advance every model by n SGD steps; returns per-step mean loss and
    accuracy, shape (M, n) each.
``outputs(X, sources=None)``
    centered outputs f~ at inputs X (M, n, p), or a sequence of M (n, p)
    arrays, -> (M, n), float64; models
    with equal ``sources`` entries have identical inputs (a hint for sharing).
``params()``
    (initial, final) lists of ``Params`` in float64.
"""
import hashlib
import math

import numpy as np

from .. import _blas, _philox, _threads
from .._gemm import Gemm, Gemms, gemm_into as _gemm_into
from .._philox import NormalStream
from ..activations import ACTIVATIONS
from . import _cpu_kernels as kern
from .model import Params


def _first_equal(arrays):
    """For each array, the index of the first array with the same bytes."""
    digests = [hashlib.blake2b(a.tobytes(), digest_size=16).digest() for a in arrays]
    return [digests.index(h) for h in digests]


def _per_model(X, dtype):
    """Model k's inputs ``X[k]`` in ``dtype``: an (M, n, p) array, or a sequence of M (n, p)
    arrays in which a repeated array (models sharing inputs) is converted once."""
    if isinstance(X, np.ndarray):
        return np.asarray(X, dtype=dtype)
    converted = {}
    return [converted.setdefault(id(x), np.asarray(x, dtype=dtype)) for x in X]


def _stack(arrays, dtype):
    return np.ascontiguousarray(np.stack(arrays), dtype=dtype)


class _DisplacementEngine:
    """Shared state of the Numba engines: w0, a0 and the displacements dw, da, and the
    activation's kernels (``_cpu_kernels.kernels``)."""

    #: Whether the engine trains any activation (else ReLU only: ``build_engines``).
    any_activation = True

    def __init__(self, params0, scales, lrs, dtype, activation=ACTIVATIONS["relu"]):
        self.dtype = np.dtype(dtype)
        self.kern = kern.kernels(activation)
        self.unit_scale = self.kern.unit_scale(params0[0].a.shape[0])
        self.w0T = _stack([p.w.T for p in params0], dtype)        # (M, p, m)
        self.a0 = _stack([p.a for p in params0], dtype)           # (M, m)
        self.da = np.zeros_like(self.a0)
        self.scales = np.asarray(scales, dtype=np.float64)
        self.lrs = np.asarray(lrs, dtype=np.float64)
        # Models with the same seed start from the same w0.
        self.w0_source = _first_equal(self.w0T)

    def _dwT(self):
        raise NotImplementedError

    def _displacement_preactivations(self, X, sources):
        """X dw^T per model."""
        dwT = self._dwT()
        dh = np.empty((len(X), X[0].shape[0], dwT.shape[2]), dtype=self.dtype)
        for k in range(len(X)):
            _gemm_into(dh[k], X[k], dwT[k])
        return dh

    def _initial_preactivations(self, X, sources):
        """X w0^T per model, computed once per distinct (inputs, w0) pair."""
        h0 = np.empty((len(X), X[0].shape[0], self.w0T.shape[2]), dtype=self.dtype)
        done = {}
        for k in range(len(X)):
            key = k if sources is None else (sources[k], self.w0_source[k])
            if key in done:
                h0[k] = h0[done[key]]
            else:
                done[key] = k
                _gemm_into(h0[k], X[k], self.w0T[k])
        return h0

    def outputs(self, X, sources=None):
        """Centered outputs at X (M, n, p), or a sequence of M (n, p) arrays -> (M, n).

        ``sources[k]`` names model k's input set: models with equal sources
        have identical ``X[k]``, and those that also share w0 share X w0^T.
        """
        X = _per_model(X, self.dtype)
        with np.errstate(invalid="ignore", over="ignore"):   # divergence is reported
            h0 = self._initial_preactivations(X, sources)    # through TrainResult.diverged
            dh = self._displacement_preactivations(X, sources)
        out = np.empty((len(X), X[0].shape[0]))
        self.kern.centered_output(h0, dh, self.a0, self.da, self.scales, out, self.unit_scale)
        return out

    def params(self):
        w0 = self.w0T.transpose(0, 2, 1).astype(np.float64)
        a0 = self.a0.astype(np.float64)
        dw = self._dwT().transpose(0, 2, 1).astype(np.float64)
        init = [Params(w=np.ascontiguousarray(w), a=a.copy()) for w, a in zip(w0, a0)]
        final = [Params(w=w + d, a=a + da) for w, d, a, da
                 in zip(w0, dw, a0, self.da.astype(np.float64))]
        return init, final


class DenseEngine(_DisplacementEngine):
    """BLAS GEMMs written in place (one call per model), one fused Numba kernel for all models.

    Each model's hidden weights are one (2 m, p) array ``W[k]``: w0 in rows :m, the
    displacement dw in rows m:, one hidden unit a row. Where w0 . x needs a GEMM (noisy
    or image inputs, in any model of the ensemble) both preactivations come from one
    GEMM X W[k]^T into a (B, 2 m) row, h0 in its first m columns and dh in the last m
    (a clean model among them has its h0 replaced by P0's; one GEMM of width 2 m is
    faster than two of X against (p, m) weights); the update dw += -lr grad_h^T X
    writes the contiguous rows m: in place.
    """

    def __init__(self, tasks, params0, scales, lrs, dtype, activation=ACTIVATIONS["relu"]):
        super().__init__(params0, scales, lrs, dtype, activation)
        self.tasks = tasks
        M, p, m = self.w0T.shape
        self.W = np.zeros((M, 2 * m, p), self.dtype)
        self.W[:, :m] = self.w0T.transpose(0, 2, 1)
        self.w0T = self.W[:, :m].transpose(0, 2, 1)     # a view: w0 is stored once
        # Clean symbol tasks: w0 . x of a training pair is P1[u] + P2[v] with
        # P = S w0^T, so the centering needs no GEMM in the loop.
        d = p // 2
        self.P0 = [(t.symbols.astype(self.dtype) @ w0T[:d], t.symbols.astype(self.dtype) @ w0T[d:])
                   if t.has_symbol_basis else None for t, w0T in zip(tasks, self.w0T)]

    def _dwT(self):
        m = self.w0T.shape[2]
        return self.W[:, m:].transpose(0, 2, 1)

    def run(self, pairs, noise_rngs):
        M, (p, m) = len(self.tasks), self.w0T.shape[1:]
        n, B = pairs[0][0].shape
        clean = all(P is not None for P in self.P0)
        X = np.empty((M, B, p), self.dtype)
        # h0 | dh, then h0 | h; for clean models h0 alone, dh in D
        H = np.empty((M, B, m if clean else 2 * m), self.dtype)
        D, offset = (np.empty((M, B, m), self.dtype), 0) if clean else (H, m)
        grad_h = np.empty((M, B, m), self.dtype)
        grad_a = np.empty_like(self.a0)
        Y = np.empty((M, B))
        loss = np.empty((M, n))
        correct = np.empty((M, n))
        lrs = self.lrs.astype(self.dtype)
        drawn = _DrawnNoise(self.tasks, noise_rngs, pairs, B, p, self.dtype)
        # fixed blocks per model (fastsd._gemm), one team job per phase for all models
        forward = Gemms([Gemm(D[k], X[k], self.W[k, m:].T) if clean
                         else Gemm(H[k], X[k], self.W[k].T) for k in range(M)])
        update = Gemms([Gemm(self.W[k, m:], grad_h[k].T, X[k], alpha=-self.lrs[k], beta=1.0)
                        for k in range(M)])
        fused = _Fused(self, H, D, offset, Y, grad_h)
        for t in range(n):
            drawn.inputs(t, X)
            for k, (task, (u, v, y), rng) in enumerate(zip(self.tasks, pairs, noise_rngs)):
                if k not in drawn.models:
                    X[k] = task.training_inputs(u[t], v[t], rng)
                Y[k] = y[t]
            forward.run()
            for k, (u, v, _) in enumerate(pairs):
                if self.P0[k] is not None:      # h0 of a clean model is a lookup
                    np.add(self.P0[k][0][u[t]], self.P0[k][1][v[t]], out=H[k, :, :m])
            loss[:, t], correct[:, t] = fused.run(grad_a)
            update.run()
            grad_a *= lrs[:, None]
            self.da -= grad_a
        drawn.advance(n)
        return loss, correct


class _Fused:
    """The step after the forward preactivations: ``dense_fused`` over every model's rows in
    blocks of ``ROW_BLOCK`` on fastsd's team (fixed by the batch size, so the partial sums
    are the same for any thread count), the readout's gradient summed in block order."""

    def __init__(self, engine, H, D, offset, Y, grad_h):
        M, B, m = grad_h.shape
        self.engine, self.H, self.D, self.offset, self.Y, self.grad_h = \
            engine, H, D, offset, Y, grad_h
        self.edges = [*range(0, B, kern.ROW_BLOCK), B]
        J = len(self.edges) - 1
        self.blocks = [(k, j) for k in range(M) for j in range(J)]
        self.part_a = np.empty((M, J, m), engine.dtype)
        self.part_loss, self.part_correct = np.empty((M, J)), np.empty((M, J))
        self.work = kern.FUSED_UNIT_WORK * M * B * m

    def _block(self, k, j):
        e = self.engine
        self.part_loss[k, j], self.part_correct[k, j] = e.kern.dense_fused(
            self.H, self.D, self.offset, e.a0, e.da, self.Y, e.scales, self.grad_h,
            self.part_a[k, j], k, self.edges[j], self.edges[j + 1], e.unit_scale)

    def _part(self, i):
        self._block(*self.blocks[i])

    def run(self, grad_a):
        """grad_h, and grad_a (M, m) written; returns each model's mean loss and accuracy."""
        _threads.run_parts(self._part, len(self.blocks), self.work)
        self.part_a.sum(axis=1, out=grad_a)      # the row blocks' parts, in block order
        B = self.Y.shape[1]
        return self.part_loss.sum(axis=1) / B, self.part_correct.sum(axis=1) / B

    def run_model(self, k, grad_a):
        """``run`` for model k alone: grad_h[k] and grad_a[k] written; its loss and accuracy."""
        J = len(self.edges) - 1
        _threads.run_parts(lambda j: self._block(k, j), J, self.work // len(self.part_a),
                           SPARSE_TEAM_WORK)
        self.part_a[k].sum(axis=0, out=grad_a[k])
        B = self.Y.shape[1]
        return self.part_loss[k].sum() / B, self.part_correct[k].sum() / B


class SparseEngine(_DisplacementEngine):
    """Inputs that are mostly zeros (``task.has_sparse_inputs``: PSVRT, Pentomino): forward,
    centering and update over each batch's non-zero pixels only.

    Each model's hidden weights are one (p, 2 m) array ``WT[k]``, a pixel a row, w0 in
    columns :m and the displacement dw in m:. Per step, each model's batch comes as
    ``SparseImages`` (``task.training_inputs_sparse``: the draws of
    ``training_inputs``), multiplied in one of two ways:

    - sharp stamps on a grid (``task.stamp_pixels()``: PSVRT, Pentomino without
      blur): the rows are cell-major (a cell's stamp pixels in consecutive rows), the
      batch's stamps are sorted by cell, and each cell's stamps take one BLAS GEMM by
      the cell's rows, forward (``stamp_forward``, then ``stamp_sum`` adds an image's
      stamps) and update (``stamp_update``);
    - otherwise (blurred stamps, whose windows overlap): the batch's non-zero pixels are
      sorted by pixel and ``sparse_forward`` adds each pixel's row into the
      preactivations of its inputs, ``sparse_update`` the update into the rows.

    ``dense_fused`` runs between them as on the dense path. Models with the same inputs
    (one seed's, in an ensemble of gammas) draw and sort them once a step, and those
    that also start from the same w0 (one seed's) compute h0 = w0 . x once: the others
    gather dh only and copy h0, the same bits. Steps run in chunks (``CHUNK_STEPS``):
    the chunk's inputs and shared h0 first, then each model through the chunk (its
    weights stay in cache), the team's threads taking a model apiece (a model alone
    keeps the team for its columns or cells). The numbers are the dense path's up to
    rounding (the sums run over the non-zero pixels only, in another order), and a
    model's are the same alone, in an ensemble and for any thread count. Evaluation is
    the dense GEMMs'.
    """

    def __init__(self, tasks, params0, scales, lrs, dtype, activation=ACTIVATIONS["relu"]):
        super().__init__(params0, scales, lrs, dtype, activation)
        self.tasks = tasks
        M, p, m = self.w0T.shape
        layouts = [t.stamp_pixels() for t in tasks]
        self.cells = layouts[0] if all(c is not None and np.array_equal(c, layouts[0])
                                       for c in layouts) else None
        # row r of WT[k] is pixel pixels[r]: cell-major (the cells' stamps, then the pixels
        # no stamp covers, never non-zero in training) for cell GEMMs, else the identity
        stamped = np.arange(0) if self.cells is None else self.cells.ravel()
        self.pixels = np.concatenate([stamped, np.setdiff1d(np.arange(p), stamped)])
        self.WT = np.zeros((M, p, 2 * m), self.dtype)
        self.WT[:, :, :m] = self.w0T[:, self.pixels]
        self.w0T = self.WT[:, :, :m]                # a view: w0 is stored once, rows as WT's

    def _dwT(self):
        m = self.w0T.shape[2]
        return self.WT[:, :, m:]

    def outputs(self, X, sources=None):
        """As ``_DisplacementEngine.outputs``; the inputs' pixels taken in the rows' order."""
        if self.cells is not None and isinstance(X, np.ndarray):
            X = X[..., self.pixels]
        elif self.cells is not None:    # a repeated array (shared inputs) is taken once
            taken = {}
            X = [taken.setdefault(id(x), np.asarray(x)[:, self.pixels]) for x in X]
        return super().outputs(X, sources)

    def params(self):
        init, final = super().params()
        if self.cells is None:
            return init, final
        inv = np.argsort(self.pixels)
        return tuple([Params(w=np.ascontiguousarray(q.w[:, inv]), a=q.a) for q in ps]
                     for ps in (init, final))

    def run(self, pairs, noise_rngs):
        M, m = len(self.tasks), self.w0T.shape[2]
        n, B = pairs[0][0].shape
        H = np.empty((M, B, 2 * m), self.dtype)
        grad_h = np.empty((M, B, m), self.dtype)
        grad_a = np.empty_like(self.a0)
        Y = np.empty((M, B))
        loss, correct = np.empty((M, n)), np.empty((M, n))
        lrs = self.lrs.astype(self.dtype)
        fused = _Fused(self, H, H, m, Y, grad_h)
        leader = shared_inputs(self.tasks, pairs, noise_rngs)
        leaders = sorted(set(leader))
        # models with one seed's inputs and w0 share h0 = w0 . x: their first computes it
        keys = [(leader[k], self.w0_source[k]) for k in range(M)]
        h0_of = [keys.index(key) for key in keys]
        shared = sorted({j for k, j in enumerate(h0_of) if j != k})
        # a chunk of steps: its batches drawn and sorted, the shared h0 formed, then each
        # model trains through it in turn (its weights stay in cache for the chunk)
        S = max(1, min(n, CHUNK_STEPS, CHUNK_BYTES // (max(len(shared), 1) * B * m
                                                       * self.dtype.itemsize)))
        h0 = np.empty((len(shared), S, B, m), self.dtype)
        kernels = (_PixelRows if self.cells is None else _CellGemms)(
            self, B, len(shared) * S, grad_h, lrs)

        def train_through(k, batches, steps):
            """Model k through a chunk's steps (its own H, grad_h, acc, grad_a rows)."""
            src = shared.index(h0_of[k]) if h0_of[k] in shared else None
            for s, t in enumerate(steps):
                X = batches[s][leader[k]]
                if src is None:
                    kernels.forward(k, X, H, k, 0, 2 * m, k)
                else:
                    H[k, :, :m] = h0[src, s]
                    kernels.forward(k, X, H, k, m, m, k)
                Y[k] = pairs[k][2][t]
                loss[k, t], correct[k, t] = fused.run_model(k, grad_a)
                kernels.update(k, X)
                grad_a[k] *= lrs[k]
                self.da[k] -= grad_a[k]

        def shared_h0(q, batches):
            """The q-th (shared model, step of the chunk)'s h0."""
            i, s = divmod(q, len(batches))
            kernels.forward(shared[i], batches[s][leader[shared[i]]], h0[i], s, 0, m,
                            M + i * S + s)

        for t0 in range(0, n, S):
            steps = range(t0, min(t0 + S, n))
            batches = [{j: kernels.sort(self.tasks[j].training_inputs_sparse(
                pairs[j][0][t], pairs[j][1][t], noise_rngs[j])) for j in leaders} for t in steps]
            work = m * sum(kernels.work(X[leader[k]]) for X in batches for k in range(M))
            # the team takes the shared h0 a step apiece, then the models a model apiece
            # (the parts' own jobs then run in order); one model keeps the team for its
            # columns or cells
            _threads.run_parts(lambda q: shared_h0(q, batches), len(shared) * len(steps), work)
            if M > 1:
                _threads.run_parts(lambda k: train_through(k, batches, steps), M, 3 * work)
            else:
                train_through(0, batches, steps)
        for k, j in enumerate(leader):      # a follower's generator is where its leader's is
            if j != k:
                noise_rngs[k].bit_generator.state = noise_rngs[j].bit_generator.state
        return loss, correct


class _PixelRows:
    """The sparse step by pixel rows: a batch's non-zero pixels sorted by pixel
    (``sparse_columns``), ``sparse_forward`` and ``sparse_update`` in blocks of columns,
    one block a thread (a long row runs fastest), at least ``UNIT_BLOCK``: every number is
    summed in the same order whatever the blocks, so the bits do not change."""

    def __init__(self, engine, B, n_scratch, grad_h, lrs):
        M, p, m = engine.w0T.shape
        self.engine, self.grad_h, self.lrs = engine, grad_h, lrs
        T = _threads.threads()
        size = {c: max(kern.UNIT_BLOCK, -(-c // T)) for c in (m, 2 * m)}
        self.blocks = {c: [(u, min(u + size[c], c)) for u in range(0, c, size[c])]
                       for c in size}
        self.acc = np.empty((M, len(self.blocks[m]), self.blocks[m][0][1]), engine.dtype)
        self.sorter = _Sorter(p, engine.dtype)

    def sort(self, images):
        return self.sorter.sort(images)

    @staticmethod
    def work(X):
        """A model's multiply-adds per hidden unit, forward or update."""
        return len(X[2])

    def forward(self, k, X, out, h, lo, cols, scratch):
        """out[h, :, lo:lo + cols] from model k's weights WT[k, :, lo:lo + cols]."""
        WT, parts = self.engine.WT, self.blocks[cols]
        _threads.run_parts(lambda i: kern.sparse_forward(
            WT, *X, k, out, h, lo + parts[i][0], lo + parts[i][1]),
            len(parts), cols * len(X[2]), SPARSE_TEAM_WORK)

    def update(self, k, X):
        m = self.grad_h.shape[2]
        WT, parts = self.engine.WT, self.blocks[m]
        _threads.run_parts(lambda i: kern.sparse_update(
            WT, *X, self.grad_h, self.lrs[k], self.acc[k, i], k, *parts[i]), len(parts),
            m * len(X[2]), SPARSE_TEAM_WORK)


class _CellGemms:
    """The sparse step by cells (sharp stamps, cell-major weights): a batch's stamps sorted
    by cell (``stamp_order``), each cell's stamps one BLAS GEMM forward (``stamp_forward``,
    h0 and dh apart, so that a model alone and one sharing h0 get the same bits) and one
    update (``stamp_update``); the team shares out cells and rows, each cell's GEMM the same
    call whoever runs it. ``n_scratch`` products of shared h0 (a part each) have scratch
    of their own beside the models'."""

    def __init__(self, engine, B, n_scratch, grad_h, lrs):
        M, _, m = engine.w0T.shape
        self.engine, self.grad_h, self.lrs = engine, grad_h, lrs
        self.C, self.s = engine.cells.shape
        k = 2                                      # stamps an image (GridTask)
        self.gemm = _blas.address(engine.dtype)
        self.out = np.empty((M + n_scratch, B * k, m), engine.dtype)
        self.G = np.empty((M, B * k, m), engine.dtype)
        T = _threads.threads()
        self.cell_parts = _edges(self.C, T)
        self.row_parts = _edges(B, T)

    def sort(self, images):
        """(V, start, rows, pos): the stamps' pixels by cell (``stamp_order``)."""
        B, k = images.cells.shape
        V = np.empty((B * k, self.s), self.engine.dtype)
        start = np.empty(self.C + 1, np.int64)
        rows = np.empty(B * k, np.int64)
        pos = np.empty((B, k), np.int64)
        kern.stamp_order(images.cells, images.value, self.C, V, start, rows, pos)
        return V, start, rows, pos

    @staticmethod
    def work(X):
        return X[0].size

    def forward(self, k, X, out, h, lo, cols, scratch):
        """out[h, :, lo:lo + cols] from model k's weights WT[k, :, lo:lo + cols], in blocks
        of m columns (h0, dh)."""
        V, start, _, pos = X
        WT, m = self.engine.WT, self.grad_h.shape[2]
        products, c, r = self.out[scratch], self.cell_parts, self.row_parts
        for u in range(lo, lo + cols, m):
            _threads.run_parts(lambda i: kern.stamp_forward(
                self.gemm, WT, V, start, k, u, products, c[i], c[i + 1]), len(c) - 1,
                m * V.size, SPARSE_TEAM_WORK)
            _threads.run_parts(lambda i: kern.stamp_sum(
                products, pos, out, h, u, r[i], r[i + 1]), len(r) - 1, m * pos.size,
                SPARSE_TEAM_WORK)

    def update(self, k, X):
        V, start, rows, _ = X
        c, m = self.cell_parts, self.grad_h.shape[2]
        _threads.run_parts(lambda i: kern.stamp_update(
            self.gemm, self.engine.WT, V, start, rows, self.grad_h, self.lrs[k], self.G[k], k,
            c[i], c[i + 1]), len(c) - 1, m * V.size, SPARSE_TEAM_WORK)


def _edges(n, T):
    """0 = e_0 < ... < e_P = n: n items in P = min(n, 2 T) near-equal parts."""
    P = min(n, 2 * T)
    return [n * i // P for i in range(P + 1)]


def shared_inputs(tasks, pairs, noise_rngs):
    """For each model, the first model whose training inputs are its own: the same task (one
    object, or equal ``training_key``), batches and generator state (models of one seed);
    their inputs are drawn once a step."""
    keys = [t.training_key() for t in tasks]
    leader = []
    for k in range(len(tasks)):
        leader.append(next(
            j for j in range(k + 1)
            if j == k or ((tasks[j] is tasks[k] or keys[j] is not None and keys[j] == keys[k])
                          and leader[j] == j
                          and all(np.array_equal(a, b) for a, b in zip(pairs[j], pairs[k]))
                          and noise_rngs[j].bit_generator.state
                          == noise_rngs[k].bit_generator.state)))
    return leader


class _Sorter:
    """A batch's ``SparseImages`` sorted by pixel (``kern.sparse_columns``) into scratch arrays
    kept from batch to batch (grown for a larger batch), then copied out at their size."""

    def __init__(self, p, dtype):
        self.p, self.dtype = p, dtype
        self.size = -1

    def sort(self, batch):
        """(cols, start, rows, vals, n): the arguments of the sparse kernels, arrays of their
        own (n distinct pixels; rows and vals hold the non-zero entries)."""
        size = batch.index.size
        if size > self.size:
            self.size = size
            self.cols, self.rows = np.empty(size, np.int64), np.empty(size, np.int64)
            self.start, self.vals = np.empty(size + 1, np.int64), np.empty(size, self.dtype)
        n = kern.sparse_columns(batch.index, batch.value, self.p, self.cols, self.start,
                                self.rows, self.vals)
        e = self.start[n]
        return (self.cols[:n].copy(), self.start[:n + 1].copy(), self.rows[:e].copy(),
                self.vals[:e].copy(), n)


class _DrawnNoise:
    """The inputs of the models whose noise is a counter-based ``NormalStream``, built here.

    Per step: every such model's Box-Muller uniforms from its Philox words in one
    kernel, the radius and direction by NumPy (``fastsd._philox.polar``, vectorised,
    in the engine's dtype), and a fused gather of the symbols plus the scaled noise:
    ``task.training_inputs(u, v, stream)``'s numbers, up to rounding in float32, the
    same ones in float64.
    """

    def __init__(self, tasks, noise_rngs, pairs, B, p, dtype):
        self.models = [k for k, r in enumerate(noise_rngs) if isinstance(r, NormalStream)]
        self.streams = [noise_rngs[k] for k in self.models]
        self.pairs = [pairs[k] for k in self.models]
        self.S = [tasks[k].symbols.astype(dtype) for k in self.models]
        self.std = [dtype.type(tasks[k].noise_std) for k in self.models]
        self.keys = np.array([s.key for s in self.streams], dtype=np.uint64).reshape(-1, 2)
        shape = (len(self.models), B, 2 * -(-p // 4))
        self.U1, self.A = np.empty(shape, dtype), np.empty(shape, dtype)
        self.scale = dtype.type(2.0 ** -_philox.UNIFORM_BITS)
        self.angle = self.scale * dtype.type(2.0 * math.pi)

    def inputs(self, t, X):
        """Write the drawn models' inputs of step t of this call into X[k]."""
        if not self.models:
            return
        kern.noise_uniforms(self.keys, np.array([s.step + t for s in self.streams]),
                            self.scale, self.angle, self.U1, self.A)
        r, c, s = _philox.polar(self.U1, self.A)
        for j, k in enumerate(self.models):
            u, v, _ = self.pairs[j]
            kern.noisy_inputs(self.S[j], u[t], v[t], self.std[j], r[j], c[j], s[j], X[k])

    def advance(self, n):
        for s in self.streams:
            s.advance(n)


class SymbolEngine(_DisplacementEngine):
    """Symbol-basis path (clean symbol tasks), M models with the same L."""

    def __init__(self, tasks, params0, scales, lrs, dtype, activation=ACTIVATIONS["relu"]):
        super().__init__(params0, scales, lrs, dtype, activation)
        d = tasks[0].d
        self.S = _stack([t.symbols for t in tasks], dtype)              # (M, L, d)
        self.S_source = _first_equal(self.S)
        self.K = np.ascontiguousarray(np.matmul(self.S, self.S.transpose(0, 2, 1)))
        self.P1 = np.ascontiguousarray(np.matmul(self.S, self.w0T[:, :d]))
        self.P2 = np.ascontiguousarray(np.matmul(self.S, self.w0T[:, d:]))
        self.Q1 = np.zeros_like(self.P1)
        self.Q2 = np.zeros_like(self.P1)
        self.C1 = np.zeros_like(self.P1)
        self.C2 = np.zeros_like(self.P1)

    def _dwT(self):
        St = self.S.transpose(0, 2, 1)
        with np.errstate(invalid="ignore", over="ignore"):  # divergence: TrainResult.diverged
            return np.concatenate([np.matmul(St, self.C1), np.matmul(St, self.C2)], axis=1)

    def _displacement_preactivations(self, X, sources):
        # x . dw_i = [x1 S^T, x2 S^T] [C1; C2]: O(n L (d + m)) instead of O(n d m). The
        # coordinates [x1 S^T, x2 S^T] = x blockdiag(S^T, S^T) are computed once per
        # distinct (inputs, symbols).
        M, L, d = self.S.shape
        m = self.C1.shape[2]
        if L * (d + m) >= d * m:
            return super()._displacement_preactivations(X, sources)
        basis = np.zeros((2 * d, 2 * L), dtype=self.dtype)
        C = np.empty((2 * L, m), dtype=self.dtype)
        dh = np.empty((M, X[0].shape[0], m), dtype=self.dtype)
        coords = {}
        for k in range(M):
            key = k if sources is None else (sources[k], self.S_source[k])
            if key not in coords:
                basis[:d, :L] = basis[d:, L:] = self.S[k].T
                coords[key] = np.empty((X[k].shape[0], 2 * L), dtype=self.dtype)
                _gemm_into(coords[key], X[k], basis)
            C[:L], C[L:] = self.C1[k], self.C2[k]
            _gemm_into(dh[k], coords[key], C)
        return dh

    def run(self, pairs, noise_rngs):
        # Models of one seed draw the same batches: sort each distinct stream once.
        streams, batch_of = [], []
        for u, v, y in pairs:
            j = next((j for j, (su, sv, sy) in enumerate(streams) if np.array_equal(su, u)
                      and np.array_equal(sv, v) and np.array_equal(sy, y)), None)
            if j is None:
                j = len(streams)
                streams.append((u, v, y))
            batch_of.append(j)
        u = np.ascontiguousarray(np.stack([s[0] for s in streams]), dtype=np.int32)
        v = np.ascontiguousarray(np.stack([s[1] for s in streams]), dtype=np.int32)
        y = np.ascontiguousarray(np.stack([s[2] for s in streams]), dtype=np.float64)
        G, n, B = u.shape
        first = np.empty((G, n, B), np.int32)
        count = np.empty((G, n, B), np.int32)
        n_distinct = np.empty((G, n), np.int32)
        for j in range(G):
            kern.distinct_pairs(u[j], v[j], self.S.shape[1], first[j], count[j], n_distinct[j])
        M = len(pairs)
        loss = np.empty((M, n))
        correct = np.empty((M, n))
        with _threads.at_most(M):          # one thread per model at most
            self.kern.symbol_chunk(self.P1, self.P2, self.Q1, self.Q2, self.C1, self.C2,
                                   self.K, self.a0, self.da, u, v, y, first, count, n_distinct,
                                   np.asarray(batch_of, dtype=np.int64), self.scales, self.lrs,
                                   loss, correct, self.unit_scale)
        return loss / B, correct / B


ENGINES = {"dense": DenseEngine, "symbol": SymbolEngine, "sparse": SparseEngine}


# -- the form of this backend's cost model (priced in seconds by fastsd.mlp.prices) -----

def _distinct(n, draws):
    """Expected number of distinct values among ``draws`` uniform draws from ``n`` values."""
    if draws <= 0:
        return 0.0
    return n * -math.expm1(draws * math.log1p(-1.0 / n)) if n > 1 else 1.0


def step_features(path, L, batch_size, width, input_dim, models=1, inputs="symbols",
                  entries=None):
    """What one SGD step of ``models`` models does on ``path``, in the cost model's units.

    Dense path (``DenseEngine.run``), per model: the Python calls of a step
    ("model"), the fused kernel over B x m units ("unit"), the gathered inputs
    ("input"), the read-modify-write of the p x m weights ("weights"), the
    multiply-adds of the GEMMs ("gemm": two of B x p x m on a clean symbol
    task, whose h0 is a lookup, three when the inputs change every step),
    the counter-based noise drawn in the engine ("noise", the noisy task) and
    the elements of inputs the task builds on the host ("draw", images).
    Symbol path (``symbol_chunk``), per model: the expected distinct pairs of
    a batch times m ("pair": forward and backward), the multiply-adds of the
    GEMMs that update Q = K C, L times the distinct symbols of a batch's side
    times m, on both sides ("update"), and the 2 L x m entries of Q they add
    to ("rows"). "step" is the work shared by the ensemble's models.
    Sparse path (``SparseEngine``), the models of one seed (as a scan's group and the
    calibration's): per model the fused kernel ("unit"); on blurred "images", pixel row by
    pixel row, the multiply-adds over the batch's non-zero pixels, B x entries x m for h0
    once for them all, for dh and for the update per model ("entry": B x entries x m x
    (2 M + 1)), and the weight rows of the batch's distinct pixels that each model reads
    and writes ("weights": M x m x the expected distinct pixels of B x entries draws from
    p, their traffic from memory once the models' weights outgrow the caches); once a step,
    the drawn and sorted pixels ("pixel": B x entries) and the sort's pass over the p
    pixels ("scan"). On "stamps" (two an image, entries / 2 pixels each, tiling p / (entries
    / 2) cells), by cell GEMMs: their multiply-adds, as many ("stamp"), the weight rows of
    the expected distinct cells of the batch's 2 B stamps ("weights"; the GEMM calls, one a
    cell, fold into it) and the stamps' pixels sorted ("pixel"). Blurred images cost the task
    more to render, by their pixels ("render": B x entries, once for one seed's models on
    the sparse path, per model on the dense path, where ``entries`` is given).

    Parameters
    ----------
    path : {"dense", "symbol", "sparse"}
    L, batch_size, width, input_dim : int
        Training symbols, batch size B, hidden units m and input dimension p.
    models : int, default 1
        Models trained in lockstep (on one thread).
    inputs : {"symbols", "noise", "images", "stamps"}, default "symbols"
        Clean symbol pairs, noisy symbol pairs, or images built by the task (blurred, or
        sharp stamps on a grid's cells: ``fastsd.mlp.prices.INPUTS``).
    entries : float, optional
        The pixels an image that the sparse path multiplies (``task.sparse_entries()``).

    Returns
    -------
    dict of str to float
        Counts by unit; every count grows with every size.
    """
    M, B, m, p = models, batch_size, width, input_dim
    if path == "sparse":       # one unit set for both ways (one fit), each way's own non-zero
        macs = (2 * M + 1) * B * entries * m
        stamps, stamp = inputs == "stamps", entries / 2
        rows = (_distinct(max(1.0, p / stamp), 2 * B) * stamp if stamps
                else _distinct(p, B * entries))
        return {"step": 1.0, "model": M, "unit": M * B * m, "weights": M * m * rows,
                "stamp": macs if stamps else 0.0, "entry": 0.0 if stamps else macs,
                "pixel": B * entries, "scan": 0.0 if stamps else p,
                "render": 0.0 if stamps else B * entries}
    if path == "dense":
        return {"step": 1.0, "model": M, "unit": M * B * m, "input": M * B * p,
                "weights": M * p * m, "gemm": M * (2 if inputs == "symbols" else 3) * B * p * m,
                "noise": M * B * p if inputs == "noise" else 0.0,
                "draw": M * B * p if inputs in ("images", "stamps") else 0.0,
                "render": M * B * entries if inputs == "images" and entries else 0.0}
    # B // 2 same pairs, the rest different (draw_pairs); whole draws, so that the count
    # grows with L (for a fraction of a draw, n (1 - (1 - 1/n)^k) falls as n grows)
    pairs = _distinct(L, B // 2) + _distinct(L * (L - 1), B - B // 2)
    return {"step": 1.0, "model": M, "pair": M * pairs * m,
            "update": M * 2 * L * _distinct(L, B) * m, "rows": M * 2 * L * m}


def eval_features(input_dim, width, n_test, models=1, sources=1):
    """What one test evaluation does, in the dense path's units (on either path).

    ``sources`` distinct test sets (one per seed of the ensemble) of ``n_test``
    pairs are drawn and multiplied by their w0 once; each model then forms
    its displacement's preactivations and its outputs. The symbol path's
    cheaper basis for the displacement is not counted (an upper bound). The
    test sets are built by the task on the host ("draw").
    """
    M, m, p, n = models, width, input_dim, n_test
    return {"model": M, "unit": M * n * m, "input": M * n * p,
            "gemm": (M + sources) * n * p * m, "draw": sources * n * p}


#: The least work (multiply-adds) of one job of a lone model's sparse step for fastsd's team
#: to take it (``_threads.MIN_TEAM_WORK`` elsewhere): the step's six jobs each wake the helper
#: and pass the GIL, and below this the split was slower than one thread at default threads,
#: above it faster (``bench/bench_images.py`` times a lone model's step; see the docs'
#: results page). An ensemble's models go a model a thread.
SPARSE_TEAM_WORK = 10_000_000

#: The sparse path's chunks: steps whose batches are drawn before its models train through
#: them in turn, and the bytes of the shared h0 kept for them at most.
CHUNK_STEPS = 16
CHUNK_BYTES = 8 << 20
