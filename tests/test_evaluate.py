"""Evaluating networks given as Params: the hand-crafted solution of Eq. 2 and trained models."""
import numpy as np
import pytest

from fastsd import SameDifferent, theory, train
from fastsd.mlp import Params, accuracy, output
from fastsd.mlp import _reference as ref


@pytest.mark.parametrize("rho", [0.5, 1.0, 2.0, 10.0])
def test_handcrafted_accuracy_matches_app_b(rho):
    # App. B: same pairs always right; different pairs right with probability (2/pi) atan(rho)
    task = SameDifferent(d=16, L=2, seed=0)
    res = accuracy(theory.handcrafted_network(16, rho), task, n_test=40000, seed=int(rho * 10))
    assert res["same_accuracy"] == 1.0
    expected = float(theory.handcrafted_different_accuracy(rho))
    assert abs(res["different_accuracy"] - expected) < 4 * max(res["different_accuracy_se"], 1e-3)


def test_handcrafted_network_is_eq2_written_out():
    p = theory.handcrafted_network(3, 2.5)
    x = np.random.default_rng(0).standard_normal((50, 6))
    z1, z2 = x[:, :3].sum(1), x[:, 3:].sum(1)
    r = lambda t: np.maximum(t, 0)  # noqa: E731
    eq2 = r(z1 + z2) + r(-z1 - z2) - 2.5 * (r(z1 - z2) + r(z2 - z1))
    np.testing.assert_allclose(output(p, x), eq2, rtol=1e-12, atol=1e-12)


def test_output_with_initial_is_the_centered_reference_and_predict_agrees():
    task = SameDifferent(d=4, L=3, seed=1)
    r = train(task, 0.5, width=8, steps=30, batch_size=8, eval_every=10, n_test=16, seed=2)
    x, _ = task.sample_test(20, seed=3)
    want = ref.centered_output(r.initial_params.w, r.initial_params.a, r.final_params.w,
                               r.final_params.a, x, r.config["output_scale"])
    np.testing.assert_array_equal(r.predict(x), want)
    np.testing.assert_array_equal(
        output(r.final_params, x, scale=r.config["output_scale"], initial=r.initial_params), want)


def test_bad_inputs_name_the_parameter():
    p = theory.handcrafted_network(2, 1.0)
    with pytest.raises(ValueError, match=r"`rho` must be a finite number > 0; got 0.0"):
        theory.handcrafted_network(2, 0.0)
    with pytest.raises(ValueError, match=r"`d` must be an integer >= 1; got 0"):
        theory.handcrafted_network(0, 1.0)
    with pytest.raises(TypeError, match=r"`params` must be a fastsd Params"):
        output((p.w, p.a), np.zeros((1, 4)))
    with pytest.raises(ValueError, match=r"`x` must be an array of shape \(n, 4\)"):
        output(p, np.zeros((1, 5)))
    with pytest.raises(ValueError, match=r"`params.w` must be finite"):
        output(Params(w=np.full((4, 4), np.nan), a=p.a), np.zeros((1, 4)))
    with pytest.raises(ValueError, match=r"`initial` must have the shape of `params`"):
        output(p, np.zeros((1, 4)), initial=Params(w=np.zeros((3, 4)), a=np.zeros(3)))
    with pytest.raises(ValueError, match=r"`n_test` must be an integer >= 2; got 1"):
        accuracy(p, SameDifferent(d=2, L=2, seed=0), n_test=1)
