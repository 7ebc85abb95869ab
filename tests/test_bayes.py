"""Bayes-optimal classifiers of the noisy task (App. E) against independent references.

The generalizing ratio is checked against SciPy's multivariate normal density
of the 2d-dimensional pair, its accuracy against an exact integral over two
chi-square variables; the memorizing ratio against an explicit log-sum-exp
over every symbol and every ordered pair of distinct symbols, and against
mpmath at a scale where float64 densities overflow.
"""
import itertools
import json
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats
from scipy.special import logsumexp

from fastsd import SameDifferent
from fastsd.bayes import accuracy, log_likelihood_ratio

SETTINGS = settings(max_examples=30, deadline=None)


def mvn_llr(z1, z2, sigma2):
    """log N(x; 0, C_same) - log N(x; 0, C_diff) for x = (z1; z2), s ~ N(0, I/d)."""
    d = len(z1)
    eye = np.eye(d)
    c_same = np.block([[(1 + sigma2) * eye, eye], [eye, (1 + sigma2) * eye]]) / d
    x = np.concatenate([z1, z2])
    return (stats.multivariate_normal(np.zeros(2 * d), c_same).logpdf(x)
            - stats.multivariate_normal(np.zeros(2 * d), (1 + sigma2) / d * np.eye(2 * d))
            .logpdf(x))


def explicit_memorizing_llr(z1, z2, sigma2, symbols):
    """Log-sum-exp over the L same terms and the L(L - 1) ordered distinct pairs, listed."""
    L, d = symbols.shape
    logn1 = [stats.multivariate_normal(s, sigma2 / d * np.eye(d)).logpdf(z1) for s in symbols]
    logn2 = [stats.multivariate_normal(s, sigma2 / d * np.eye(d)).logpdf(z2) for s in symbols]
    same = logsumexp([logn1[i] + logn2[i] for i in range(L)]) - math.log(L)
    diff = (logsumexp([logn1[i] + logn2[j] for i, j in itertools.permutations(range(L), 2)])
            - math.log(L * (L - 1)))
    return same - diff


def nearest_symbol(x, symbols):
    """Index of the training symbol nearest to each row of x (Euclidean)."""
    return np.argmin(((x[:, None, :] - symbols) ** 2).sum(-1), axis=1)


def generalizing_accuracy_exact(d, sigma2):
    """Bayes accuracy of the generalizing prior by quadrature over chi-square variables.

    With u = (z1 + z2)/sqrt2, v = (z1 - z2)/sqrt2 (independent), the ratio is
    c + A |u|^2 + (A - 2B)|v|^2 with A = d / (2(1+s)(2+s)), B = d / (2s(2+s)).
    Same pairs: |u|^2 = (2+s)/d X, |v|^2 = s/d Y; different pairs: both
    (1+s)/d times a chi-square, X, Y ~ chi2_d independent.
    """
    s = sigma2
    c = d * math.log1p(s) - 0.5 * d * math.log(s * (2 + s))
    A = d / (2 * (1 + s) * (2 + s))
    B = d / (2 * s * (2 + s))
    chi = stats.chi2(d)

    def p_same_says_same(ku, kv):
        # P(c + A ku X + (A - 2B) kv Y >= 0) = E_Y[P(X >= (-c - (A - 2B) kv Y) / (A ku))]
        return integrate.quad(lambda y: chi.pdf(y) * chi.sf((-c - (A - 2 * B) * kv * y)
                                                              / (A * ku)), 0, np.inf,
                              limit=200)[0]

    p_same = p_same_says_same((2 + s) / d, s / d)
    p_diff = 1.0 - p_same_says_same((1 + s) / d, (1 + s) / d)
    return 0.5 * (p_same + p_diff)


# -- the log-likelihood ratios -------------------------------------------------------

@SETTINGS
@given(d=st.integers(1, 6), log_s2=st.floats(-3, 1.5), seed=st.integers(0, 2**32 - 1))
def test_generalizing_matches_multivariate_normal(d, log_s2, seed):
    sigma2 = 10.0**log_s2
    rng = np.random.default_rng(seed)
    z1 = rng.standard_normal(d) * 1.5 / math.sqrt(d)
    z2 = z1 + rng.standard_normal(d) * math.sqrt(sigma2 / d) * rng.choice([0.1, 1.0, 3.0])
    got = log_likelihood_ratio(z1, z2, sigma2)
    assert isinstance(got, float)
    assert got == pytest.approx(mvn_llr(z1, z2, sigma2), rel=1e-9, abs=1e-9)


@SETTINGS
@given(d=st.integers(1, 4), L=st.integers(2, 7), log_s2=st.floats(-3, 1),
       near=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_memorizing_matches_explicit_sum_over_ordered_pairs(d, L, log_s2, near, seed):
    sigma2 = 10.0**log_s2
    rng = np.random.default_rng(seed)
    symbols = rng.standard_normal((L, d)) / math.sqrt(d)
    noise = math.sqrt(sigma2 / d)
    if near:   # both items next to one training symbol: the cancellation-prone case
        z1 = symbols[0] + 0.1 * noise * rng.standard_normal(d)
        z2 = symbols[0] + 0.1 * noise * rng.standard_normal(d)
    else:
        z1, z2 = rng.standard_normal((2, d)) / math.sqrt(d)
    got = log_likelihood_ratio(z1, z2, sigma2, prior="memorizing", symbols=symbols)
    assert got == pytest.approx(explicit_memorizing_llr(z1, z2, sigma2, symbols),
                                rel=1e-9, abs=1e-9)


def test_batch_equals_pairs_one_by_one_and_blocks_do_not_matter(monkeypatch):
    rng = np.random.default_rng(3)
    symbols = rng.standard_normal((9, 5)) / math.sqrt(5)
    z1, z2 = rng.standard_normal((2, 40, 5)) / math.sqrt(5)
    for prior, sym in (("generalizing", None), ("memorizing", symbols)):
        batch = log_likelihood_ratio(z1, z2, 0.3, prior, sym)
        assert batch.shape == (40,) and batch.dtype == np.float64
        single = [log_likelihood_ratio(a, b, 0.3, prior, sym) for a, b in zip(z1, z2)]
        np.testing.assert_allclose(batch, single, rtol=1e-12, atol=1e-12)
    monkeypatch.setattr("fastsd.bayes._BLOCK", 9 * 7)   # 7 pairs per block, a ragged last one
    np.testing.assert_allclose(log_likelihood_ratio(z1, z2, 0.3, "memorizing", symbols),
                               batch, rtol=1e-12, atol=1e-12)


def _mp_llr_memorizing(z1, z2, sigma2, symbols):
    """The memorizing ratio in mpmath at 60 digits, from the unsimplified App. E.2 sums."""
    mpmath.mp.dps = 60
    L, d = symbols.shape
    s2 = mpmath.mpf(sigma2)
    n1 = [mpmath.exp(-d * mpmath.fsum((mpmath.mpf(x) - mpmath.mpf(y))**2
                                      for x, y in zip(z1, s)) / (2 * s2)) for s in symbols]
    n2 = [mpmath.exp(-d * mpmath.fsum((mpmath.mpf(x) - mpmath.mpf(y))**2
                                      for x, y in zip(z2, s)) / (2 * s2)) for s in symbols]
    same = mpmath.fsum(n1[i] * n2[i] for i in range(L)) / L
    diff = mpmath.fsum(n1[i] * n2[j] for i, j in itertools.permutations(range(L), 2))
    return float(mpmath.log(same) - mpmath.log(diff / (L * (L - 1))))


def test_memorizing_small_noise_matches_mpmath():
    """d = 100, sigma2 = 0.0025: the densities are far outside float64's range."""
    d, L, sigma2 = 100, 5, 0.0025
    rng = np.random.default_rng(11)
    symbols = rng.standard_normal((L, d)) / math.sqrt(d)
    noise = math.sqrt(sigma2 / d)
    pairs = [(symbols[1] + noise * rng.standard_normal(d),
              symbols[1] + noise * rng.standard_normal(d)),     # same, near one symbol
             (symbols[0] + noise * rng.standard_normal(d),
              symbols[3] + noise * rng.standard_normal(d))]     # different
    for z1, z2 in pairs:
        got = log_likelihood_ratio(z1, z2, sigma2, "memorizing", symbols)
        assert math.isfinite(got)
        assert got == pytest.approx(_mp_llr_memorizing(z1, z2, sigma2, symbols), rel=1e-8)


def test_sigma2_zero_is_the_limit_hard_decision():
    rng = np.random.default_rng(5)
    d, L = 6, 8
    symbols = rng.standard_normal((L, d)) / math.sqrt(d)
    z = rng.standard_normal((50, d)) / math.sqrt(d)
    w = rng.standard_normal((50, d)) / math.sqrt(d)
    z1 = np.concatenate([z, z])
    z2 = np.concatenate([z, w])                                # 50 equal, 50 unequal
    gen = log_likelihood_ratio(z1, z2, 0.0)
    np.testing.assert_array_equal(gen, np.r_[np.full(50, np.inf), np.full(50, -np.inf)])
    # memorizing: same exactly where the nearest training symbols agree
    mem = log_likelihood_ratio(z1, z2, 0.0, "memorizing", symbols)
    agree = nearest_symbol(z1, symbols) == nearest_symbol(z2, symbols)
    np.testing.assert_array_equal(mem, np.where(agree, np.inf, -np.inf))
    # and small positive noise gives the same decisions
    for prior, sym, lim in (("generalizing", None, gen), ("memorizing", symbols, mem)):
        small = log_likelihood_ratio(z1, z2, 1e-9, prior, sym)
        assert np.all(np.isfinite(small))
        np.testing.assert_array_equal(np.sign(small), np.sign(lim))


# -- accuracy ------------------------------------------------------------------------

@pytest.mark.parametrize("d, sigma2", [(4, 0.5), (16, 2.0)])
def test_generalizing_accuracy_matches_exact_integral(d, sigma2):
    exact = generalizing_accuracy_exact(d, sigma2)
    res = accuracy(SameDifferent(d, 4, sigma2=sigma2, seed=0), "generalizing", 40_000, seed=1)
    assert 0.5 < exact < 1.0
    assert abs(res.accuracy - exact) < 4 * res.stderr
    assert res.accuracy == pytest.approx(0.5 * (res.same_accuracy + res.different_accuracy))


def test_stderr_matches_spread_over_seeds():
    task = SameDifferent(8, 4, sigma2=1.0, seed=0)
    runs = [accuracy(task, "generalizing", 400, seed=s) for s in range(60)]
    spread = np.std([r.accuracy for r in runs], ddof=1)
    assert 0.7 < np.mean([r.stderr for r in runs]) / spread < 1.4


def test_memorizing_accuracy_noiseless_is_nearest_symbol_rule():
    """sigma2 = 0: same pairs always right; a different pair is right unless both fresh
    symbols have the same nearest training symbol."""
    task = SameDifferent(3, 4, sigma2=0.0, seed=2)
    res = accuracy(task, "memorizing", 4000, seed=3)
    x, y = task.sample_test(4000, seed=3)
    differ = nearest_symbol(x[:, :3], task.symbols) != nearest_symbol(x[:, 3:], task.symbols)
    assert res.same_accuracy == 1.0
    assert res.different_accuracy == pytest.approx(np.mean(differ[y == 0]))
    assert accuracy(task, "generalizing", 500, seed=3).accuracy == 1.0


def test_record_is_strict_json_and_seed_none_is_recorded():
    task = SameDifferent(4, 3, sigma2=0.5, seed=7)
    res = accuracy(task, "memorizing", 1, seed=None)
    rec = json.loads(json.dumps(res.to_record(), allow_nan=False))
    assert rec["kind"] == "bayes" and rec["n_test"] == 1 and rec["prior"] == "memorizing"
    assert (rec["same_accuracy"] is None) != (rec["different_accuracy"] is None)
    assert isinstance(rec["seed"], int) and rec["task_seed_entropy"] == 7
    again = accuracy(task, "memorizing", 1, seed=rec["seed"])
    assert again == res


# -- bad input -----------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, exc, match", [
    ({"sigma2": -0.1}, ValueError, "`sigma2` must be a finite number >= 0"),
    ({"sigma2": float("nan")}, ValueError, "`sigma2` must be a finite number >= 0"),
    ({"sigma2": "1"}, TypeError, "`sigma2` must be a real number"),
    ({"z2": np.zeros((3, 5))}, ValueError, r"`z2` must have the shape of `z1`, \(3, 4\)"),
    ({"z1": np.zeros((2, 3, 4)), "z2": np.zeros((2, 3, 4))}, ValueError, "`z1` must be an array"),
    ({"z1": np.full((3, 4), np.inf)}, ValueError, "`z1` must be finite"),
    ({"prior": "memorising"}, ValueError, "`prior` must be one of 'generalizing'"),
    ({"prior": "memorizing"}, ValueError, "`symbols` must be the .L, d. training symbols"),
    ({"prior": "memorizing", "symbols": np.zeros((5, 3))}, ValueError,
     r"`symbols` must be an array of shape \(L, 4\) with L >= 2.*got shape \(5, 3\)"),
    ({"prior": "memorizing", "symbols": np.zeros((1, 4))}, ValueError, "with L >= 2"),
    ({"prior": "memorizing", "symbols": np.zeros(4)}, ValueError, "`symbols` must be a 2-d"),
    ({"symbols": np.zeros((5, 4))}, ValueError, "`symbols` must be None for prior"),
])
def test_bad_input_is_named(kwargs, exc, match):
    args = {"z1": np.zeros((3, 4)), "z2": np.zeros((3, 4)), "sigma2": 1.0}
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        log_likelihood_ratio(**args)


def test_accuracy_bad_input():
    task = SameDifferent(4, 3, sigma2=0.5, seed=0)
    with pytest.raises(TypeError, match="`task` must be a fastsd.tasks.SameDifferent"):
        accuracy("task", "generalizing", 10, seed=0)
    with pytest.raises(ValueError, match="`n_test` must be an integer >= 1; got 0"):
        accuracy(task, "generalizing", 0, seed=0)
    with pytest.raises(ValueError, match="`prior` must be one of"):
        accuracy(task, "uniform", 10, seed=0)
    with pytest.raises(ValueError, match="`seed` must be an integer >= 0"):
        accuracy(task, "generalizing", 10, seed=-1)


@settings(max_examples=50, deadline=None)
@given(d=st.integers(1, 512), L=st.integers(2, 9000), n=st.integers(1, 50_000),
       grow=st.sampled_from(["d", "L", "n"]), by=st.integers(1, 1000),
       prior=st.sampled_from(["generalizing", "memorizing"]))
def test_the_time_model_grows_with_every_size(d, L, n, grow, by, prior):
    from fastsd.bayes import predicted_seconds
    sizes = dict(d=d, L=L, n_test=n)
    bigger = dict(sizes, **{"n_test" if grow == "n" else grow: sizes[
        "n_test" if grow == "n" else grow] + by})
    t = predicted_seconds(prior=prior, **sizes)
    assert predicted_seconds(prior=prior, **bigger) >= t > 0
    assert predicted_seconds(d, L, n, "memorizing") >= predicted_seconds(d, L, n, "generalizing")


def test_the_bayes_predictor_predicts_its_groups_time():
    from fastsd.bayes import predicted_seconds
    from fastsd.scan.predictors import BayesPredictor

    pred = BayesPredictor()
    cells = [pred.prepare(dict(d=8, L=L, sigma2=1.0, prior=p, n_test=100))
             for L in (2, 64) for p in ("generalizing", "memorizing")]
    expect = sum(predicted_seconds(8, c["L"], 100, c["prior"]) for c in cells)
    assert pred.seconds(cells) == pytest.approx(expect) and expect > 0


@pytest.mark.parametrize("kw, message", [
    (dict(L=1), "`L` must be an integer >= 2; got 1"),
    (dict(n_test=0), "`n_test` must be an integer >= 1; got 0"),
    (dict(prior="Memorizing"), "`prior` must be one of 'generalizing', 'memorizing'"),
    (dict(d=0), "`d` must be an integer >= 1; got 0"),
])
def test_the_time_model_refuses_what_accuracy_refuses(kw, message):
    from fastsd.bayes import predicted_seconds
    with pytest.raises(ValueError, match=message):
        predicted_seconds(**{**dict(d=4, L=4, n_test=10, prior="memorizing"), **kw})


@pytest.mark.parametrize("prior", ["generalizing", "memorizing"])
def test_the_memory_accuracy_checks_is_what_it_allocates(prior):
    # the memorizing prior works in blocks of pairs against the symbols: its memory does not
    # grow with n_test x L (fig2's L = 8192, n_test = 20,000 once read 4.9 GiB)
    import tracemalloc

    from fastsd.bayes import memory_bytes
    task = SameDifferent(d=16, L=4096, sigma2=0.5, seed=0)
    tracemalloc.start()
    try:
        accuracy(task, prior, 3000, seed=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    want = memory_bytes(16, 4096, 3000, prior)
    assert 0.5 < want / peak < 2.0, (want, peak)
    assert memory_bytes(16, 10 ** 6, 3000, "generalizing") == memory_bytes(16, 2, 3000,
                                                                          "generalizing")
