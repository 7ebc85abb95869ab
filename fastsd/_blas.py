"""BLAS ?gemm called from Numba kernels: SciPy's ``cython_blas`` function, by its address.

A kernel that loops over many small GEMMs (the sparse path's cells, ``fastsd.mlp``)
calls BLAS without going back to Python: ``address(dtype)`` is the address of SciPy's
sgemm or dgemm (the library ``fastsd._gemm`` and NumPy's float GEMMs use), passed to the
kernel as an integer, and ``gemm`` calls it there. The address is an argument, not a
constant of the compiled code, so the kernels stay in Numba's on-disk cache. The calls
run on the calling thread: BLAS's own threads are held at one by ``_threads.compute``.

Fortran passes every argument by reference. The call is built by one intrinsic,
``_gemm_call``, that owns all of that memory for the whole call: the flags, sizes, leading
dimensions and the scalars alpha and beta are stored in stack slots of the calling function
(allocated in its entry block, alive until it returns), and the matrices' data pointers are
read from the arrays themselves, which the intrinsic takes as arguments and the caller holds
across the call. (An earlier version put the by-reference arguments in small NumPy arrays
made inside the compiled function and passed their ``.ctypes.data`` integers: an integer does
not keep an array alive, Numba freed the flags and scalars before the call read them, and
under an allocator that overwrites freed memory BLAS refused the call and left ``out``
unwritten, with no error.)
"""
import llvmlite.ir as ir
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import get_cython_function_address, intrinsic, register_jitable


def address(dtype):
    """Address of SciPy's Fortran ``sgemm`` (float32) or ``dgemm`` (float64), an int."""
    name = {np.dtype(np.float32): "sgemm", np.dtype(np.float64): "dgemm"}[np.dtype(dtype)]
    return get_cython_function_address("scipy.linalg.cython_blas", name)


#: Fortran's transpose flags, as the character codes ?gemm reads.
_N, _T = 78, 84


@intrinsic
def _gemm_call(typingctx, fn, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """Fortran ?gemm at address ``fn``: C = alpha op(A) op(B) + beta C, column-major.

    ``transa``, ``transb`` are character codes (``_N``, ``_T``); m, n, k and the leading
    dimensions integers; alpha and beta numbers, cast to the matrices' dtype; a, b, c
    arrays of one float dtype (float32 for sgemm's address, float64 for dgemm's). Every
    by-reference argument points into a stack slot of the caller's frame or into one of
    the three arrays: nothing the call reads can be freed before it returns.
    """
    arrays = (a, b, c)
    if not all(isinstance(x, types.Array) for x in arrays):
        return None
    if not (a.dtype == b.dtype == c.dtype) or c.dtype not in (types.float32, types.float64):
        return None
    integers = (fn, transa, transb, m, n, k, lda, ldb, ldc)
    if not all(isinstance(x, types.Integer) for x in integers):
        return None
    if not all(isinstance(x, (types.Float, types.Integer)) for x in (alpha, beta)):
        return None
    sig = types.void(fn, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

    def codegen(context, builder, signature, values):
        vp = ir.IntType(8).as_pointer()
        tys = signature.args

        def by_reference(i, target):
            """A stack slot holding argument i cast to ``target``, as a void pointer."""
            slot = cgutils.alloca_once(builder, context.get_value_type(target))
            builder.store(context.cast(builder, values[i], tys[i], target), slot)
            return builder.bitcast(slot, vp)

        def data(i):
            """Argument i's data pointer (the first element of the array's view)."""
            array = context.make_array(tys[i])(context, builder, values[i])
            return builder.bitcast(array.data, vp)

        dtype = tys[12].dtype
        args = [by_reference(1, types.uint8), by_reference(2, types.uint8),
                by_reference(3, types.int32), by_reference(4, types.int32),
                by_reference(5, types.int32), by_reference(6, dtype), data(7),
                by_reference(8, types.int32), data(9), by_reference(10, types.int32),
                by_reference(11, dtype), data(12), by_reference(13, types.int32)]
        fnty = ir.FunctionType(ir.VoidType(), [vp] * 13)
        builder.call(builder.inttoptr(values[0], fnty.as_pointer()), args)
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
    _gemm_call(fn, _N, _T if trans_a else _N, cols, rows, inner, alpha,
               b, b.strides[0] // size, a, a.strides[0] // size, beta, out, out.strides[0] // size)
