"""BLAS ?gemm called from Numba kernels: SciPy's ``cython_blas`` function, by its address.

A kernel that loops over many small GEMMs (the sparse path's cells, ``fastsd.mlp``)
calls BLAS without going back to Python: ``address(dtype)`` is the address of SciPy's
sgemm or dgemm (the library ``fastsd._gemm`` and NumPy's float GEMMs use), passed to the
kernel as an integer, and ``gemm`` calls it there. The address is an argument, not a
constant of the compiled code, so the kernels stay in Numba's on-disk cache. The calls
run on the calling thread: BLAS's own threads are held at one by ``_threads.compute``.
"""
import llvmlite.ir as ir
import numpy as np
from numba import types
from numba.extending import get_cython_function_address, intrinsic, register_jitable


def address(dtype):
    """Address of SciPy's Fortran ``sgemm`` (float32) or ``dgemm`` (float64), an int."""
    name = {np.dtype(np.float32): "sgemm", np.dtype(np.float64): "dgemm"}[np.dtype(dtype)]
    return get_cython_function_address("scipy.linalg.cython_blas", name)


@intrinsic
def _call(typingctx, fn, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13):
    """Call the function at address ``fn`` with 13 pointer arguments (Fortran ?gemm's)."""
    sig = types.void(fn, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13)

    def codegen(context, builder, signature, values):
        vp = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [vp] * 13)
        f = builder.inttoptr(values[0], fnty.as_pointer())
        builder.call(f, [builder.inttoptr(v, vp) for v in values[1:]])
        return context.get_dummy_value()
    return sig, codegen


@register_jitable
def gemm(fn, trans_a, out, a, b, alpha, beta):
    """out = alpha op(a) @ b + beta out, row-major 2-d arrays with unit column stride.

    op(a) is a (rows, inner), or, with ``trans_a``, a.T for a (inner, rows); b is
    (inner, cols), out (rows, cols), all of out's dtype (float32 with sgemm's address
    ``fn``, float64 with dgemm's). Nothing is checked: the caller owns the shapes.
    """
    rows, cols = out.shape
    inner = b.shape[0]
    size = out.itemsize
    # row-major out = op(a) b is column-major out^T = b^T op(a)^T: b^T is b's memory as is
    ints = np.empty(6, np.int32)
    ints[0], ints[1], ints[2] = cols, rows, inner
    ints[3], ints[4], ints[5] = b.strides[0] // size, a.strides[0] // size, out.strides[0] // size
    scalars = np.empty(2, out.dtype)
    scalars[0], scalars[1] = alpha, beta
    flags = np.empty(2, np.uint8)
    flags[0], flags[1] = 78, 84 if trans_a else 78          # "N", "T" or "N"
    _call(fn, flags.ctypes.data, flags[1:].ctypes.data, ints.ctypes.data, ints[1:].ctypes.data,
          ints[2:].ctypes.data, scalars.ctypes.data, b.ctypes.data, ints[3:].ctypes.data,
          a.ctypes.data, ints[4:].ctypes.data, scalars[1:].ctypes.data, out.ctypes.data,
          ints[5:].ctypes.data)
