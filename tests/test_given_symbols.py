"""SameDifferent.from_symbols: a task on the user's symbols (issue 28 item 6)."""
import hashlib

import numpy as np
import pytest

from fastsd import SameDifferent, train
from fastsd.bayes import accuracy as bayes_accuracy
from fastsd.kernels import lazy_limit


def test_given_symbols_train_exactly_as_the_same_drawn_symbols():
    """The same symbols, given or drawn, give the same trajectories and limit."""
    drawn = SameDifferent(d=8, L=6, seed=3)
    given = SameDifferent.from_symbols(drawn.symbols.copy())
    assert (given.d, given.L, given.sigma2, given.input_dim, given.scale_dim) == (8, 6, 0.0, 16, 8)
    assert given.lazy_gamma() == drawn.lazy_gamma()
    kw = dict(width=32, steps=200, eval_every=100, n_test=64, seed=1)
    a, b = train(drawn, 0.5, **kw), train(given, 0.5, **kw)
    for key in a.history:
        np.testing.assert_array_equal(a.history[key], b.history[key])
    la = lazy_limit(drawn, "regression", n_test=64, seed=1)
    lb = lazy_limit(given, "regression", n_test=64, seed=1)
    assert la.test_accuracy == lb.test_accuracy
    rec = lb.to_record()
    assert rec["task_seed_entropy"] is None
    assert rec["task_symbols_sha256"] == hashlib.sha256(
        np.asarray(drawn.symbols, np.float64).tobytes()).hexdigest()
    assert "task_symbols_sha256" not in la.to_record()
    assert b.to_record()["task_symbols_sha256"] == given.symbols_sha256


def test_given_symbols_are_copied_as_float64_and_noise_applies():
    S = np.eye(4, dtype=np.float32)
    task = SameDifferent.from_symbols(S, sigma2=0.5, root_d=False)
    S[0, 0] = 7.0
    assert task.symbols.dtype == np.float64 and task.symbols[0, 0] == 1.0
    assert task.scale_dim == 1 and task.sigma2 == 0.5
    x, _ = task.sample_train(200, seed=0)
    assert np.std(x - np.round(x)) > 0.1             # noisy items, not the one-hot symbols
    assert bayes_accuracy(task, "generalizing", 64, seed=0).task_seed_entropy is None


@pytest.mark.parametrize("bad, exc, words", [
    (np.ones(4), ValueError, "2-d"),
    (np.ones((1, 4)), ValueError, "L >= 2"),
    (np.ones((3, 0)), ValueError, "d >= 1"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), ValueError, "finite"),
    (np.eye(2) * 1j, TypeError, "real"),
    (np.zeros((3, 4)), ValueError, "no row of zeros: a same pair of it is the zero input"),
    (np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]), ValueError, "zeros in row 1."),
    (np.array([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0]]), ValueError,
     "distinct rows: a different pair of two equal rows is a same pair labelled different; got "
     "row 2 equal to row 0."),
    (np.array([[0.0, 1.0], [-0.0, 1.0]]), ValueError, "row 1 equal to row 0"),
    ([["a", "b"], ["c", "d"]], TypeError, "numeric"),
])
def test_bad_symbols_are_refused_with_the_parameter_named(bad, exc, words):
    with pytest.raises(exc, match="symbols") as err:
        SameDifferent.from_symbols(bad)
    assert words in str(err.value)


def test_bad_noise_is_refused_for_given_symbols_too():
    with pytest.raises(ValueError, match="sigma2"):
        SameDifferent.from_symbols(np.eye(3), sigma2=-1.0)
