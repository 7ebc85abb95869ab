"""GEMMs in parts fixed by their shapes, each part one single-threaded BLAS call.

``gemm_into(out, a, b, alpha, beta)`` writes out = alpha a @ b + beta out in
place. The output is cut into blocks of rows (or of columns, whichever side is
longer) whose size depends on the shapes alone (``blocks``), and the blocks go to
fastsd's team (``fastsd._threads``): the same blocks, so the same bits, for any
thread count. (OpenBLAS's own threads cut a GEMM by the thread count, and its
float32 Haswell kernel rounds a block's edge differently from its inside, so
its bits change with the thread count.)

The calls go to SciPy's BLAS (the library Numba's ``np.dot`` also calls) through
``scipy.linalg.cython_blas``'s function pointers and ctypes, which releases the
GIL for the call, so that the team's threads multiply at once.
"""
import ctypes

import numpy as np

from . import _threads

#: A block is a multiple of this many rows or columns (the kernels' unroll divides it).
ALIGN = 64
#: The fewest multiply-adds worth a block of its own (a smaller block's BLAS call would not
#: repay handing it to another thread).
MIN_BLOCK_WORK = 1 << 20
#: The most blocks one GEMM is cut into.
MAX_BLOCKS = 16

_P = ctypes.c_void_p
_functions = {}


def _blas(dtype):
    """SciPy's Fortran ?gemm for float32 / float64, as a ctypes function."""
    dtype = np.dtype(dtype)
    if dtype not in _functions:
        from scipy.linalg import cython_blas

        name = {np.dtype(np.float32): "sgemm", np.dtype(np.float64): "dgemm"}[dtype]
        capsule = cython_blas.__pyx_capi__[name]
        api = ctypes.pythonapi
        api.PyCapsule_GetName.restype = ctypes.c_char_p
        api.PyCapsule_GetName.argtypes = [ctypes.py_object]
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        pointer = api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))
        _functions[dtype] = (ctypes.CFUNCTYPE(None, *[_P] * 13)(pointer),
                             ctypes.c_float if dtype == np.float32 else ctypes.c_double)
    return _functions[dtype]


def _layout(x):
    """(transposed?, leading dimension) of a 2-D array read as a column-major matrix of x.T.

    fastsd's arrays are row-major: x (r, c) with unit column stride is, to
    Fortran, the c x r matrix x.T with leading dimension stride[0]; with unit row
    stride it is x itself, transposed on the way in.
    """
    item = x.itemsize
    r, c = x.shape
    s0, s1 = x.strides
    if (s1 == item or c == 1) and s0 % item == 0 and s0 // item >= max(c, 1):
        return False, max(s0 // item, c, 1)
    if (s0 == item or r == 1) and s1 % item == 0 and s1 // item >= max(r, 1):
        return True, max(s1 // item, r, 1)
    return None


def blocks(rows, cols, inner):
    """The blocks of an (rows, cols) output with ``inner`` multiply-adds per entry.

    Returns
    -------
    axis : int
        0 to cut rows, 1 to cut columns (the longer side).
    edges : list of int
        Block edges along that axis, from 0 to its length; multiples of ``ALIGN``
        but the last, fixed by the three sizes alone.
    """
    axis = 0 if rows >= cols else 1
    length, other = (rows, cols) if axis == 0 else (cols, rows)
    per_unit = max(1, other * inner)                    # multiply-adds per row (column)
    size = max(ALIGN, -(-MIN_BLOCK_WORK // per_unit), -(-length // MAX_BLOCKS))
    size = -(-size // ALIGN) * ALIGN
    return axis, list(range(0, length, size)) + [length]


class Gemm:
    """out = alpha a @ b + beta out, in fixed blocks, prepared once and run many times.

    The arrays are bound at construction (their addresses, not their values):
    ``run()`` multiplies their current contents.

    Parameters
    ----------
    out : (r, c) float32 or float64 array, written
        Unit stride along one axis (row-major or column-major, slices allowed).
    a : (r, k) array, b : (k, c) array of out's dtype, the same kind of layout
    alpha, beta : float
    """

    def __init__(self, out, a, b, alpha=1.0, beta=0.0):
        r, c = out.shape
        k = a.shape[1]
        if a.shape[0] != r or b.shape != (k, c) or not (a.dtype == b.dtype == out.dtype):
            raise ValueError(f"gemm shapes or dtypes differ: out {out.shape} {out.dtype}, "
                             f"a {a.shape} {a.dtype}, b {b.shape} {b.dtype}")
        fn, scalar = _blas(out.dtype)
        self._fn = fn
        self._keep = (out, a, b)
        axis, edges = blocks(r, c, k)
        self._calls = []
        for lo, hi in zip(edges[:-1], edges[1:]):
            part = (slice(lo, hi), slice(None)) if axis == 0 else (slice(None), slice(lo, hi))
            o = out[part]
            x = a[lo:hi] if axis == 0 else a
            y = b if axis == 0 else b[:, lo:hi]
            self._calls.append(self._bind(o, x, y, scalar(alpha), scalar(beta)))
        self.parts = len(self._calls)
        self.work = r * c * k

    @staticmethod
    def _bind(out, a, b, alpha, beta):
        """The ctypes arguments of out = alpha a b + beta out as one Fortran gemm call."""
        r, c = out.shape
        k = a.shape[1]
        lo = _layout(out)
        if lo is None or lo[0]:
            # out^T = b^T a^T is the column-major view; write out's transpose instead
            return Gemm._bind(out.T, b.T, a.T, alpha, beta)
        # Fortran: C (c x r) = alpha op(B') op(A') + beta C, with B' = b.T-view, A' = a.T-view
        lb, la = _layout(b), _layout(a)
        if lb is None or la is None:
            raise ValueError("gemm operands need a unit stride along one axis")
        tb, ldb = lb
        ta, lda = la
        ints = [ctypes.c_int(v) for v in (c, r, k, ldb, lda, lo[1])]
        keep = (ints, alpha, beta)
        args = (ctypes.c_char_p(b"T" if tb else b"N"), ctypes.c_char_p(b"T" if ta else b"N"),
                ctypes.byref(ints[0]), ctypes.byref(ints[1]), ctypes.byref(ints[2]),
                ctypes.byref(alpha), _P(b.ctypes.data), ctypes.byref(ints[3]),
                _P(a.ctypes.data), ctypes.byref(ints[4]), ctypes.byref(beta),
                _P(out.ctypes.data), ctypes.byref(ints[5]))
        return args, keep

    def part(self, i):
        """Run block i (one single-threaded BLAS call)."""
        self._fn(*self._calls[i][0])

    def run(self):
        """Run every block on fastsd's team."""
        _threads.run_parts(self.part, self.parts, self.work)


def gemm_into(out, a, b, alpha=1.0, beta=0.0):
    """out = alpha a @ b + beta out, in place, in fixed blocks on fastsd's team.

    Parameters
    ----------
    out : (r, c) float32 or float64 array, written
    a : (r, k), b : (k, c) arrays of the same dtype
        Each array needs a unit stride along one of its axes (C- or F-ordered,
        or a slice of one).
    alpha, beta : float
    """
    if 0 in out.shape:
        return
    if a.shape[1] == 0:
        out *= beta
        return
    with _threads.compute():
        Gemm(out, a, b, alpha, beta).run()



class Gemms:
    """Several prepared ``Gemm``s whose blocks run as one job on fastsd's team."""

    def __init__(self, gemms):
        self._parts = [(g, i) for g in gemms for i in range(g.parts)]
        self._work = sum(g.work for g in gemms)

    def _part(self, j):
        gemm, i = self._parts[j]
        gemm.part(i)

    def run(self):
        """Run every block of every GEMM (under ``fastsd._threads.compute``)."""
        _threads.run_parts(self._part, len(self._parts), self._work)
