"""The walkers' counter-based generator: known values, exact decoding, and statistics.

Statistical tests use fixed seeds and thresholds at about 4-5 standard
deviations (or chi-square p > 1e-6), so a correct generator fails them with
negligible probability and a biased one (e.g. P(v = u) = 0.55, or a stuck
bit) fails them surely at these sample sizes.
"""
import numpy as np
import pytest
from scipy import stats

from fastsd.walkers import _cpu
from fastsd.walkers import _reference as ref
from fastsd.walkers.process import seed_state


def test_mix64_is_the_splitmix64_finaliser():
    # splitmix64 seeded with 0 outputs mix64(k * 0x9E3779B97F4A7C15), k = 1, 2, ...;
    # its first outputs are published (e.g. in the xoshiro reference seeding code).
    k = np.arange(1, 4, dtype=np.uint64)
    got = ref.mix64(k * ref.GOLDEN)
    want = np.array([0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F], np.uint64)
    np.testing.assert_array_equal(got, want)


def test_decode_maps_the_fields_as_documented():
    L = 5
    low = np.array([0, 2**32 - 1, 2**31], np.uint64)          # u = 0, L - 1, floor(L/2)
    u, v, coin = ref.decode(low, L)
    np.testing.assert_array_equal(u, [0, 4, 2])
    np.testing.assert_array_equal(v, u)                       # bit 62 clear: same pair
    np.testing.assert_array_equal(coin, 0)
    diff = np.uint64(1) << np.uint64(62)
    top = np.uint64(1) << np.uint64(63)
    mid_max = np.uint64((2**30 - 1) << 32)
    r = np.array([diff, diff | mid_max, diff | mid_max | np.uint64(2**32 - 1) | top], np.uint64)
    u, v, coin = ref.decode(r, L)
    # k = 0 -> the smallest other symbol; k = L - 2 -> the largest one
    np.testing.assert_array_equal(u, [0, 0, 4])
    np.testing.assert_array_equal(v, [1, 4, 3])
    np.testing.assert_array_equal(coin, [0, 0, 1])


def test_compiled_generator_equals_the_reference_bit_for_bit():
    seed64, _ = seed_state(123)
    for w in (0, 1, 2**40):
        key = ref.walker_key(seed64, np.array([w]))[0]
        assert int(_cpu.walker_key(seed64, w)) == int(key)
        for c in (0, 1, 12345, 2**50):
            r = ref.word(np.array([key]), np.array([c]))[0]
            assert int(_cpu.word(key, c)) == int(r)
            for L in (2, 3, 16, 65536):
                assert tuple(_cpu.decode(r, L)) == tuple(int(x[0]) for x in
                                                        ref.decode(np.array([r]), L))


@pytest.fixture(scope="module")
def samples():
    seed64, _ = seed_state(2024)
    L = 7
    u, v, coin = ref.draw(seed64, np.arange(50), L, 10**6, 4000)    # 200,000 samples
    return L, u.ravel(), v.ravel(), coin.ravel()


def test_u_is_uniform(samples):
    L, u, _, _ = samples
    assert u.min() >= 0 and u.max() < L
    assert stats.chisquare(np.bincount(u, minlength=L)).pvalue > 1e-6


def test_half_the_pairs_are_same(samples):
    _, u, v, _ = samples
    n, k = u.size, np.sum(u == v)
    assert abs(k / n - 0.5) < 5 * np.sqrt(0.25 / n)


def test_the_other_symbol_is_uniform_over_the_rest(samples):
    L, u, v, _ = samples
    diff = u != v
    assert v.min() >= 0 and v.max() < L
    # offset (v - u) mod L is uniform over 1 .. L-1 for every u
    off = (v[diff] - u[diff]) % L
    assert off.min() >= 1
    table = np.zeros((L, L - 1))
    np.add.at(table, (u[diff], off - 1), 1)
    assert stats.chi2_contingency(table).pvalue > 1e-6
    assert stats.chisquare(table.sum(axis=0)).pvalue > 1e-6


def test_the_tie_coin_is_fair_and_independent_of_the_pair(samples):
    _, u, v, coin = samples
    n = coin.size
    assert set(np.unique(coin)) == {0, 1}
    assert abs(coin.mean() - 0.5) < 5 * np.sqrt(0.25 / n)
    same = (u == v).astype(int)
    assert stats.chi2_contingency(np.histogram2d(same, coin, bins=2)[0]).pvalue > 1e-6


def test_walkers_and_successive_samples_are_uncorrelated():
    seed64, _ = seed_state(5)
    u, _, _ = ref.draw(seed64, np.arange(400), 16, 0, 500)
    x = (u - 7.5) / np.sqrt((16**2 - 1) / 12)                  # standardised
    n = x.size
    # neighbouring walkers at the same sample, and one walker's successive samples
    assert abs(np.mean(x[1:] * x[:-1])) < 5 / np.sqrt(x[1:].size)
    assert abs(np.mean(x[:, 1:] * x[:, :-1])) < 5 / np.sqrt(n)
    # adjacent seeds give unrelated streams
    other, _ = seed_state(6)
    y, _, _ = ref.draw(other, np.arange(400), 16, 0, 500)
    assert abs(np.mean(x * (y - 7.5) / np.sqrt((16**2 - 1) / 12))) < 5 / np.sqrt(n)
