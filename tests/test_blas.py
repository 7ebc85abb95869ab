"""BLAS ?gemm called from Numba kernels (``fastsd._blas``), against NumPy's matmul.

Hypothesis over shapes (1 to 40 a side), float32 and float64, ``a`` as is or transposed,
every operand a block of a larger array (leading dimensions above the block's width): the
product is NumPy's to rounding, alpha and beta apply, and nothing outside ``out``'s block is
written (the kernel hands BLAS raw pointers and leading dimensions).
"""
import numba
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsd import _blas


@numba.njit
def _gemm(fn, trans_a, out, a, b, alpha, beta):
    _blas.gemm(fn, trans_a, out, a, b, alpha, beta)


@settings(deadline=None, max_examples=60)
@given(rows=st.integers(1, 40), cols=st.integers(1, 40), inner=st.integers(1, 40),
       pad=st.integers(0, 5), trans_a=st.booleans(), dtype=st.sampled_from(["float32", "float64"]),
       alpha=st.sampled_from([1.0, -0.25]), beta=st.sampled_from([0.0, 1.0, 0.5]),
       seed=st.integers(0, 2**32 - 1))
def test_gemm_is_numpys_product_on_blocks_of_larger_arrays(rows, cols, inner, pad, trans_a, dtype,
                                                           alpha, beta, seed):
    rng = np.random.default_rng(seed)
    a_shape = (inner, rows) if trans_a else (rows, inner)
    big_a = rng.standard_normal((a_shape[0] + pad, a_shape[1] + pad)).astype(dtype)
    big_b = rng.standard_normal((inner + pad, cols + pad)).astype(dtype)
    big_out = rng.standard_normal((rows + 2 * pad, cols + 2 * pad)).astype(dtype)
    a = big_a[pad:, pad:]
    b = big_b[:inner, pad:]
    before = big_out.copy()
    out = big_out[pad:pad + rows, pad:pad + cols]
    want = (alpha * ((a.T if trans_a else a).astype(np.float64) @ b.astype(np.float64))
            + beta * out.astype(np.float64))
    _gemm(_blas.address(dtype), trans_a, out, a, b, alpha, beta)
    tol = 1e-4 if dtype == "float32" else 1e-12
    assert np.allclose(out, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))
    outside = np.ones(big_out.shape, bool)
    outside[pad:pad + rows, pad:pad + cols] = False
    assert np.array_equal(big_out[outside], before[outside])
