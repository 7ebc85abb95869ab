"""The noisy task's counter-based training noise (fastsd._philox) and the CPU kernels that draw it.

Truths: the Random123 known-answer vectors of Philox4x32-10; the normal
distribution (Kolmogorov-Smirnov, moments, correlations); and the stream's
definition, by which numbers depend on (key, step, row, coordinate) only.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from fastsd import SameDifferent, _philox
from fastsd.mlp import _cpu_kernels as kern


def hexwords(s):
    return [int(w, 16) for w in s.split()]


# Random123 v1.14 tests/kat_vectors, "philox4x32 10": counter, key, output
PHILOX_KAT = [
    ("00000000 00000000 00000000 00000000", "00000000 00000000",
     "6627e8d5 e169c58d bc57ac4c 9b00dbd8"),
    ("ffffffff ffffffff ffffffff ffffffff", "ffffffff ffffffff",
     "408f276d 41c83b0e a20bc7c6 6d5451fd"),
    ("243f6a88 85a308d3 13198a2e 03707344", "a4093822 299f31d0",
     "d16cfe09 94fdcceb 5001e420 24126ea1"),
]


def _kat_inputs():
    return np.array([hexwords(c + " " + k) for c, k, _ in PHILOX_KAT], dtype=np.uint64)


def _kat_outputs():
    return np.array([hexwords(o) for _, _, o in PHILOX_KAT], dtype=np.uint64)


def test_philox_known_answers_numpy_and_numba():
    inp = _kat_inputs()
    out = np.stack(_philox.philox(*inp.T), axis=1)              # elementwise on arrays
    np.testing.assert_array_equal(out, _kat_outputs())
    compiled = [kern._philox4(*(np.uint64(w) for w in row)) for row in inp]
    np.testing.assert_array_equal(np.array(compiled, dtype=np.uint64), _kat_outputs())


def test_keys_split_64_bit_integers():
    np.testing.assert_array_equal(_philox.keys([2**63 + 7, 5]),
                                  np.array([[7, 2**31], [5, 0]], dtype=np.uint64))


def _stream(seed=0):
    return _philox.NormalStream(np.random.default_rng(seed))


def test_normals_are_standard_normal_and_uncorrelated():
    z = _stream().standard_normal((40, 64, 62))      # p not a multiple of 4
    flat = z.ravel()
    assert stats.kstest(flat, "norm").pvalue > 1e-3
    n = flat.size
    assert abs(flat.mean()) < 4 / math.sqrt(n)
    assert abs(flat.var() - 1) < 4 * math.sqrt(2 / n)
    bound = 4 / math.sqrt(z[..., 0].size)
    for a, b in ((z[:, :, :-1], z[:, :, 1:]),          # neighbouring coordinates (one pair)
                 (z[:, :-1], z[:, 1:]),                # neighbouring rows
                 (z[:-1], z[1:])):                     # consecutive steps
        assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 4 / math.sqrt(a.size)
    assert abs(np.corrcoef(z[..., 0].ravel(), z[..., 1].ravel())[0, 1]) < bound
    assert np.abs(flat).max() <= math.sqrt(48 * math.log(2)) + 1e-12
    assert len(np.unique(flat)) == n


@settings(max_examples=25, deadline=None)
@given(split=st.lists(st.integers(1, 4), min_size=1, max_size=4),
       rows=st.integers(1, 5), p=st.integers(1, 9))
def test_numbers_do_not_depend_on_how_steps_are_split(split, rows, p):
    whole = _stream(3).standard_normal((sum(split), rows, p))
    s = _stream(3)
    parts = [s.standard_normal((n, rows, p)) for n in split]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    assert s.step == sum(split)
    # one step at a time (the reference engine) and a skipped-ahead stream agree too
    s = _stream(3)
    np.testing.assert_array_equal(s.standard_normal((rows, p)), whole[0])
    s.advance(len(whole) - 1)
    assert s.step == len(whole)


def test_keys_give_independent_streams():
    a = _stream(1).standard_normal((20, 16, 32)).ravel()
    b = _stream(2).standard_normal((20, 16, 32)).ravel()
    assert abs(np.corrcoef(a, b)[0, 1]) < 4 / math.sqrt(a.size)
    assert stats.ks_2samp(a, b).pvalue > 1e-4


def test_float32_transform_is_float64_rounded():
    w = _philox.words(_philox.keys(12345), np.arange(6), 32, 40)
    z64 = _philox.box_muller(w, np.float64)
    z32 = _philox.box_muller(w.astype(np.uint32), np.float32)
    assert z32.dtype == np.float32
    u64, a64 = _philox.uniforms(w, np.float64)
    u32, a32 = _philox.uniforms(w.astype(np.uint32), np.float32)
    np.testing.assert_array_equal(u32.astype(np.float64), u64)    # exact in both dtypes
    np.testing.assert_allclose(a32, a64, rtol=2.0**-23)   # float32(2 pi) and the product
    np.testing.assert_allclose(z32, z64, rtol=0, atol=3e-6)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cpu_kernels_draw_the_streams_numbers(dtype):
    """noise_uniforms + polar + noisy_inputs == training_inputs on the NormalStream: bit for
    bit in float64, to float32 rounding in float32."""
    dtype = np.dtype(dtype)
    tasks = [SameDifferent(d=5, L=4, sigma2=0.3, seed=1), SameDifferent(d=5, L=3, sigma2=2.0,
                                                                      seed=2)]
    rng = np.random.default_rng(7)
    B, p = 6, 10
    streams = [t.training_noise(np.random.default_rng(k)) for k, t in enumerate(tasks)]
    for s in streams:
        s.advance(11)                              # a later step: the counter is global
    u = [rng.integers(0, t.L, B).astype(np.int32) for t in tasks]
    v = [rng.integers(0, t.L, B).astype(np.int32) for t in tasks]
    expect = [t.training_inputs(uk, vk, s) for t, uk, vk, s in zip(tasks, u, v, streams)]
    keys = np.array([s.key for s in streams])
    scale = dtype.type(2.0 ** -_philox.UNIFORM_BITS)
    U1 = np.empty((2, B, 2 * -(-p // 4)), dtype)
    A = np.empty_like(U1)
    kern.noise_uniforms(keys, np.array([11, 11]), scale, scale * dtype.type(2 * math.pi), U1, A)
    r, c, s = _philox.polar(U1, A)
    for k, t in enumerate(tasks):
        X = np.empty((B, p), dtype)
        kern.noisy_inputs(t.symbols.astype(dtype), u[k], v[k], dtype.type(t.noise_std),
                          r[k], c[k], s[k], X)
        if dtype == np.float64:
            np.testing.assert_array_equal(X, expect[k])
        else:
            np.testing.assert_allclose(X, expect[k], rtol=0, atol=2e-6 * (1 + t.noise_std * 6))
