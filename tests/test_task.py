"""Properties of the same-different task on Gaussian symbols (Sec. 2, App. G.2).

Every statistical check compares a Monte Carlo estimate with its exact value
within a few standard errors computed from the same sample size, with fixed
seeds so that the tests are deterministic.
"""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fastsd import SameDifferent
from fastsd.tasks.base import BatchStream

SETTINGS = settings(max_examples=25, deadline=None)


def symbol_index(halves, symbols):
    """Index of the symbol each row of ``halves`` equals exactly, or -1 when none.

    Raises AssertionError when a row equals more than one symbol (which would make
    the identification ambiguous).
    """
    eq = np.all(halves[:, None, :] == symbols[None, :, :], axis=2)   # (n, L)
    assert np.all(eq.sum(axis=1) <= 1)
    return np.where(eq.any(axis=1), eq.argmax(axis=1), -1)


# -- symbols ---------------------------------------------------------------------

@SETTINGS
@given(d=st.integers(1, 8), L=st.integers(2, 40), seed=st.integers(0, 2**32 - 1))
def test_symbols_shape_dtype_and_reproducible(d, L, seed):
    task = SameDifferent(d=d, L=L, seed=seed)
    assert task.symbols.shape == (L, d)
    assert task.symbols.dtype == np.float64
    assert task.input_dim == 2 * d
    assert np.all(np.isfinite(task.symbols))
    # the same seed rebuilds the same symbols; the stored entropy too
    np.testing.assert_array_equal(SameDifferent(d=d, L=L, seed=seed).symbols, task.symbols)
    np.testing.assert_array_equal(
        SameDifferent(d=d, L=L, seed=task.seed_entropy).symbols, task.symbols)
    # symbols are pairwise distinct (needed for the task to be well posed)
    assert len({row.tobytes() for row in task.symbols}) == L


def test_seed_none_draws_fresh_symbols_and_records_entropy():
    a = SameDifferent(d=4, L=5, seed=None)
    b = SameDifferent(d=4, L=5, seed=None)
    assert not np.array_equal(a.symbols, b.symbols)
    np.testing.assert_array_equal(SameDifferent(d=4, L=5, seed=a.seed_entropy).symbols,
                                  a.symbols)


@pytest.mark.parametrize("d", [1, 3, 8])
def test_symbols_are_standard_normal_over_d(d):
    """s ~ N(0, I/d): coordinates have mean 0, variance 1/d, no correlation; E|s|^2 = 1."""
    L = 40000
    s = SameDifferent(d=d, L=L, seed=12345).symbols
    sq = np.sum(s**2, axis=1)
    # |s|^2 = chi2_d / d: mean 1, variance 2/d
    se = np.sqrt(2.0 / d / L)
    assert abs(sq.mean() - 1.0) < 5 * se
    # per-coordinate mean 0 with standard error sqrt(1/(d L))
    assert np.all(np.abs(s.mean(axis=0)) < 5 * np.sqrt(1.0 / (d * L)))
    # per-coordinate variance 1/d, standard error (1/d) sqrt(2/L)
    assert np.all(np.abs(s.var(axis=0) - 1.0 / d) < 5 * (1.0 / d) * np.sqrt(2.0 / L))
    # off-diagonal covariances 0, standard error 1/(d sqrt(L))
    if d > 1:
        cov = (s.T @ s) / L
        off = cov[~np.eye(d, dtype=bool)]
        assert np.all(np.abs(off) < 5.5 / (d * np.sqrt(L)))
    # fourth moment: Gaussian coordinates have E[s^4] = 3/d^2 (std of the estimate
    # sqrt(96 - 9)/d^2/sqrt(L)); distinguishes N(0, 1/d) from e.g. uniform or +-1/sqrt(d)
    m4 = np.mean(s**4, axis=0)
    assert np.all(np.abs(m4 - 3.0 / d**2) < 5 * np.sqrt(87.0) / d**2 / np.sqrt(L))


# -- training pairs ----------------------------------------------------------------

@SETTINGS
@given(d=st.integers(1, 8), L=st.integers(2, 8), n=st.integers(1, 64),
       seed=st.integers(0, 2**32 - 1), data_seed=st.integers(0, 2**32 - 1))
def test_sample_train_structure(d, L, n, seed, data_seed):
    task = SameDifferent(d=d, L=L, seed=seed)
    x, y = task.sample_train(n, seed=data_seed)
    assert x.shape == (n, 2 * d) and y.shape == (n,)
    assert x.dtype == np.float64
    assert set(np.unique(y)) <= {0.0, 1.0}
    n_same = int(y.sum())
    if n % 2 == 0:
        assert n_same == n // 2
    else:
        assert n_same in (n // 2, n // 2 + 1)
    # every half is one of the L training symbols, exactly (sigma2 = 0)
    iu = symbol_index(x[:, :d], task.symbols)
    iv = symbol_index(x[:, d:], task.symbols)
    assert np.all(iu >= 0) and np.all(iv >= 0)
    # label 1 exactly when both halves are the same symbol: different pairs never
    # repeat a symbol, same pairs have identical halves
    np.testing.assert_array_equal(y == 1.0, iu == iv)
    np.testing.assert_array_equal(x[y == 1.0, :d], x[y == 1.0, d:])
    # reproducible from the seed
    x2, y2 = task.sample_train(n, seed=data_seed)
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)


def test_sample_train_L2_different_pairs_swap_the_two_symbols():
    task = SameDifferent(d=3, L=2, seed=7)
    x, y = task.sample_train(400, seed=8)
    iu = symbol_index(x[:, :3], task.symbols)
    iv = symbol_index(x[:, 3:], task.symbols)
    diff = y == 0.0
    assert diff.sum() == 200
    np.testing.assert_array_equal(iv[diff], 1 - iu[diff])
    # both orders occur
    assert 0 < np.sum(iu[diff] == 0) < 200


def test_sample_train_symbol_usage_is_uniform():
    """u uniform over L; for different pairs v is uniform over the other L - 1 symbols."""
    L, n = 4, 40000
    task = SameDifferent(d=2, L=L, seed=1)
    x, y = task.sample_train(n, seed=2)
    iu = symbol_index(x[:, :2], task.symbols)
    iv = symbol_index(x[:, 2:], task.symbols)
    counts = np.bincount(iu, minlength=L)
    # multinomial: each count has sd sqrt(n p (1 - p))
    p = 1.0 / L
    assert np.all(np.abs(counts - n * p) < 5 * np.sqrt(n * p * (1 - p)))
    diff = y == 0.0
    nd = diff.sum()
    joint = np.zeros((L, L))
    np.add.at(joint, (iu[diff], iv[diff]), 1)
    assert np.all(np.diag(joint) == 0)
    q = 1.0 / (L * (L - 1))
    off = joint[~np.eye(L, dtype=bool)]
    assert np.all(np.abs(off - nd * q) < 5 * np.sqrt(nd * q * (1 - q)))


def test_sample_train_is_shuffled():
    """Labels come in shuffled order, not all same pairs first."""
    task = SameDifferent(d=2, L=3, seed=0)
    _, y = task.sample_train(200, seed=3)
    assert not np.all(y[:100] == 1.0)
    # a run test: the number of label changes is near its expectation n/2 for a random order
    changes = np.sum(y[1:] != y[:-1])
    assert 60 < changes < 140


@pytest.mark.parametrize("n", [1, 3, 7, 15])
def test_draw_pairs_balance_for_odd_batches(n):
    task = SameDifferent(d=2, L=5, seed=0)
    rng = np.random.default_rng(11)
    rows = 4000
    u, v, y = task.draw_pairs(rng, (rows, n))
    assert u.shape == v.shape == y.shape == (rows, n)
    per_row = y.sum(axis=1)
    assert np.all((per_row == n // 2) | (per_row == n // 2 + 1))
    # the extra pair is same or different with probability 1/2
    extra = (per_row == n // 2 + 1).mean()
    assert abs(extra - 0.5) < 5 * np.sqrt(0.25 / rows)
    np.testing.assert_array_equal(y == 1.0, u == v)
    assert u.min() >= 0 and u.max() < 5 and v.min() >= 0 and v.max() < 5


def test_draw_pairs_even_batches_exactly_half():
    task = SameDifferent(d=2, L=2, seed=0)
    u, v, y = task.draw_pairs(np.random.default_rng(0), (3, 50, 8))
    np.testing.assert_array_equal(y.sum(axis=-1), np.full((3, 50), 4.0))
    np.testing.assert_array_equal(y == 1.0, u == v)
    np.testing.assert_array_equal(v[y == 0.0], 1 - u[y == 0.0])


@settings(max_examples=30, deadline=None)
@given(takes=st.lists(st.integers(1, 2500), min_size=1, max_size=6), B=st.integers(1, 5),
       seed=st.integers(0, 99))
def test_batch_stream_serves_draw_pairs_blocks_in_order(takes, B, seed):
    task = SameDifferent(d=2, L=5, seed=0)
    stream = BatchStream(task, np.random.default_rng(seed), B)
    got = [stream.take(n) for n in takes]
    rng = np.random.default_rng(seed)
    blocks = [task.draw_pairs(rng, (BatchStream.BLOCK, B))
              for _ in range(-(-sum(takes) // BatchStream.BLOCK))]
    want = [np.concatenate(column)[:sum(takes)] for column in zip(*blocks)]
    for k, (have, expect) in enumerate(zip(zip(*got), want)):
        np.testing.assert_array_equal(np.concatenate(have), expect)
        assert [len(a) for a in have] == takes and have[0].dtype == expect.dtype


@pytest.mark.parametrize("sigma2", [0.05, 0.5, 2.0])
def test_noise_variance_per_coordinate(sigma2):
    """z = s + eta, eta ~ N(0, sigma2 I / d): the noise has variance sigma2/d per coordinate."""
    d, L = 4, 3
    task = SameDifferent(d=d, L=L, sigma2=sigma2, seed=5)
    rng = np.random.default_rng(6)
    u, v, y = task.draw_pairs(rng, (5000,))
    x = task.training_inputs(u, v, rng)
    clean = np.concatenate([task.symbols[u], task.symbols[v]], axis=-1)
    eta = (x - clean).ravel()
    N = eta.size
    var = sigma2 / d
    assert abs(eta.mean()) < 5 * np.sqrt(var / N)
    assert abs(eta.var() - var) < 5 * var * np.sqrt(2.0 / N)
    # independent noise on the two halves: their correlation is 0
    half = (x - clean)
    r = np.mean(half[:, :d] * half[:, d:]) / var
    assert abs(r) < 5 / np.sqrt(N / 2)

    # through the public sampler: for a same pair z1 - z2 = eta1 - eta2 has variance 2 sigma2/d
    xs, ys = task.sample_train(6000, seed=9)
    same = xs[ys == 1.0]
    diffs = (same[:, :d] - same[:, d:]).ravel()
    Ns = diffs.size
    assert abs(diffs.var() - 2 * var) < 5 * 2 * var * np.sqrt(2.0 / Ns)
    # no half equals a clean symbol any more
    assert np.all(symbol_index(xs[:, :d], task.symbols) == -1)


def test_noisy_task_is_not_symbol_basis_and_clean_is():
    assert SameDifferent(d=3, L=3, sigma2=0.0, seed=0).has_symbol_basis
    assert not SameDifferent(d=3, L=3, sigma2=0.1, seed=0).has_symbol_basis


# -- test pairs ----------------------------------------------------------------

@SETTINGS
@given(d=st.integers(1, 8), L=st.integers(2, 8), n=st.integers(1, 64),
       seed=st.integers(0, 2**32 - 1), data_seed=st.integers(0, 2**32 - 1))
def test_sample_test_structure(d, L, n, seed, data_seed):
    # equal task and data seeds are covered by their own test below
    assume(data_seed != seed)
    task = SameDifferent(d=d, L=L, seed=seed)
    x, y = task.sample_test(n, seed=data_seed)
    assert x.shape == (n, 2 * d) and y.shape == (n,)
    n_same = int(y.sum())
    if n % 2 == 0:
        assert n_same == n // 2
    else:
        assert n_same in (n // 2, n // 2 + 1)
    # fresh symbols: no half is a training symbol
    assert np.all(symbol_index(x[:, :d], task.symbols) == -1)
    assert np.all(symbol_index(x[:, d:], task.symbols) == -1)
    same = y == 1.0
    np.testing.assert_array_equal(x[same, :d], x[same, d:])
    assert np.all(np.any(x[~same, :d] != x[~same, d:], axis=1))
    x2, y2 = task.sample_test(n, seed=data_seed)
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)


@pytest.mark.parametrize("d, L, n, seed", [(4, 8, 16, 0), (4, 8, 16, 1), (4, 8, 16, 123),
                                         (1, 2, 1, 0)])
def test_sample_test_with_the_task_seed_still_draws_fresh_symbols(d, L, n, seed):
    """Test symbols must be fresh even when the data seed equals the task's seed.

    Seeding the task and its test sampler with the same integer is natural
    (``SameDifferent(..., seed=0).sample_test(n, seed=0)``); the test pairs must
    still not contain training symbols.
    """
    task = SameDifferent(d=d, L=L, seed=seed)
    x, _ = task.sample_test(n, seed=seed)
    assert np.all(symbol_index(x[:, :d], task.symbols) == -1)
    assert np.all(symbol_index(x[:, d:], task.symbols) == -1)


def test_sample_test_symbols_fresh_per_example_and_gaussian():
    d, n = 4, 20000
    task = SameDifferent(d=d, L=3, seed=0)
    x, y = task.sample_test(n, seed=1)
    first = x[:, :d]
    # every example draws its own symbol: (almost surely) no repeats across examples
    assert len({row.tobytes() for row in first}) == n
    # each half ~ N(0, I/d): E|z|^2 = 1 with sd sqrt(2/d)/sqrt(n)
    sq = np.sum(first**2, axis=1)
    assert abs(sq.mean() - 1.0) < 5 * np.sqrt(2.0 / d / n)
    # halves of different pairs are independent: correlation ~ 0
    diff = x[y == 0.0]
    c = np.mean(np.sum(diff[:, :d] * diff[:, d:], axis=1))
    assert abs(c) < 5 * np.sqrt(1.0 / d / diff.shape[0])


def test_sample_test_order_is_shuffled_and_seeded():
    task = SameDifferent(d=2, L=2, seed=0)
    _, y = task.sample_test(200, seed=3)
    assert 60 < np.sum(y[1:] != y[:-1]) < 140
    xa, _ = task.sample_test(10, seed=4)
    xb, _ = task.sample_test(10, seed=5)
    assert not np.array_equal(xa, xb)


def test_sample_test_with_noise_same_pairs_differ_by_noise_only():
    d, sigma2 = 3, 0.3
    task = SameDifferent(d=d, L=2, sigma2=sigma2, seed=0)
    x, y = task.sample_test(8000, seed=2)
    same = x[y == 1.0]
    diffs = (same[:, :d] - same[:, d:]).ravel()
    var = 2 * sigma2 / d
    assert abs(diffs.var() - var) < 5 * var * np.sqrt(2.0 / diffs.size)
    # each item: var per coordinate (1 + sigma2)/d
    z = x[:, :d].ravel()
    v1 = (1 + sigma2) / d
    assert abs(z.var() - v1) < 5 * v1 * np.sqrt(2.0 / z.size)


def test_generator_seed_advances_state():
    """A Generator passed as seed is used (and advanced), not copied."""
    task = SameDifferent(d=2, L=3, seed=0)
    g = np.random.default_rng(0)
    x1, _ = task.sample_train(6, seed=g)
    x2, _ = task.sample_train(6, seed=g)
    x3, _ = task.sample_train(6, seed=np.random.default_rng(0))
    np.testing.assert_array_equal(x1, x3)
    # with fresh symbols (test pairs) a repeated draw has probability 0
    t1, _ = task.sample_test(6, seed=g)
    t2, _ = task.sample_test(6, seed=g)
    assert not np.array_equal(t1, t2)


def test_output_scale_and_learning_rate_follow_the_paper():
    """1/(gamma sqrt d) and alpha = gamma^2 d alpha0 (gamma <= 1), gamma sqrt(d) alpha0 (gamma > 1)."""
    task = SameDifferent(d=9, L=2, seed=0)
    assert task.output_scale(0.5) == pytest.approx(1 / (0.5 * 3))
    assert task.learning_rate(0.5, 0.1) == pytest.approx(0.25 * 9 * 0.1)
    assert task.learning_rate(1.0, 0.1) == pytest.approx(9 * 0.1)
    assert task.learning_rate(4.0, 0.1) == pytest.approx(4 * 3 * 0.1)
