"""Activation change (App. F, Fig. F1) and the root_d option of the task."""
import math

import numpy as np
import pytest

from fastsd import SameDifferent, train, train_ensemble
from fastsd.analysis import activation_change

KW = dict(width=32, steps=200, batch_size=16, eval_every=100, n_test=64)


def test_activation_change_is_the_ratio_of_mean_absolute_preactivations():
    task = SameDifferent(d=6, L=4, seed=0)
    r = train(task, 1.0, seed=1, **KW)
    x, _ = task.sample_test(50, seed=2)
    h0 = x @ r.initial_params.w.T
    hT = x @ r.final_params.w.T
    assert activation_change(r, x) == pytest.approx(np.abs(hT - h0).mean() / np.abs(h0).mean(),
                                                    rel=1e-12)


def test_richer_models_change_their_activations_more():
    task = SameDifferent(d=8, L=4, seed=0)
    x, _ = task.sample_test(200, seed=3)
    changes = [activation_change(r, x)
               for r in train_ensemble(task, [1e-4, 1e-2, 1.0], [5, 5, 5], **KW)]
    assert changes[0] < changes[1] < changes[2]
    assert changes[0] < 1e-2 < changes[2]


def test_root_d_false_drops_sqrt_d_from_the_scale_and_d_from_the_learning_rate():
    d, gamma = 16, 0.5
    with_d = SameDifferent(d=d, L=3, seed=0)
    without = SameDifferent(d=d, L=3, seed=0, root_d=False)
    assert with_d.output_scale(gamma) == pytest.approx(1 / (gamma * math.sqrt(d)))
    assert without.output_scale(gamma) == pytest.approx(1 / gamma)
    assert with_d.learning_rate(gamma, 0.1) == pytest.approx(gamma**2 * d * 0.1)
    assert without.learning_rate(gamma, 0.1) == pytest.approx(gamma**2 * 0.1)
    assert with_d.learning_rate(4.0, 0.1) == pytest.approx(4.0 * math.sqrt(d) * 0.1)
    assert without.learning_rate(4.0, 0.1) == pytest.approx(4.0 * 0.1)
    np.testing.assert_array_equal(with_d.symbols, without.symbols)
    assert train(without, gamma, seed=1, **KW).config["root_d"] is False


def test_bad_inputs():
    task = SameDifferent(d=3, L=3, seed=0)
    r = train(task, 1.0, seed=1, **KW)
    with pytest.raises(ValueError, match=r"`x` must be an array of shape \(n, 6\)"):
        activation_change(r, np.zeros((2, 5)))
    with pytest.raises(ValueError, match=r"`x` must be finite"):
        activation_change(r, np.full((2, 6), np.nan))
    with pytest.raises(ValueError, match=r"`x` must give non-zero initial preactivations"):
        activation_change(r, np.zeros((2, 6)))
    with pytest.raises(TypeError, match=r"`root_d` must be True or False; got 'no'"):
        SameDifferent(d=3, L=3, root_d="no")


def test_activation_changes_of_an_ensemble_equal_each_models_own():
    # models of one seed share w0 and so the denominator; the values must not change
    task = SameDifferent(d=8, L=4, seed=0)
    x, _ = task.sample_test(100, seed=3)
    rs = train_ensemble(task, [1e-3, 0.3, 1.0, 1.0], [5, 5, 5, 6], **KW)
    from fastsd.analysis import activation_changes
    assert activation_changes(rs, x) == [activation_change(r, x) for r in rs]


def test_activation_changes_refuse_bad_inputs_naming_them():
    task = SameDifferent(d=8, L=4, seed=0)
    r = train(task, 1.0, seed=1, **KW)
    x, _ = task.sample_test(10, seed=3)
    from fastsd.analysis import activation_changes
    with pytest.raises(ValueError, match=r"`x` must hold at least one input"):
        activation_change(r, x[:0])                 # used to return nan with warnings
    with pytest.raises(TypeError, match=r"`results` must be a list of TrainResult.*TrainResult"):
        activation_changes(r, x)
    with pytest.raises(TypeError, match=r"got a str at index 1"):
        activation_changes([r, "a"], x)
