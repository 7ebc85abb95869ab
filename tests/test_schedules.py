"""Evaluation schedules (issue 44): ``eval_at`` adds evaluations without changing a run.

Independent facts: the protocol's evaluations of a run with a schedule are the run without
one (same weights, same test sets, so the same accuracies, bit for bit for networks); a
flow's training loss at step t equals that of a flow stopped at t; the steps are the
schedule's.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from fastsd import SameDifferent, train, train_ensemble
from fastsd.kernels import lazy_limit
from fastsd.schedules import (Evaluations, check_eval_at, evaluation_steps, log_steps,
                              protocol_best)


def test_log_steps_are_one_two_three_five_a_decade():
    assert log_steps(1) == [1]
    assert log_steps(1000) == [1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000]
    assert log_steps(49) == [1, 2, 3, 5, 10, 20, 30]


@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=20))
def test_one_text_for_one_schedule(steps):
    assert check_eval_at(steps[0]) == str(steps[0])           # one step alone
    text = check_eval_at(steps)
    assert [int(s) for s in text.split(",")] == sorted(set(steps))
    assert check_eval_at(text) == text == check_eval_at(tuple(reversed(steps)))
    assert check_eval_at(np.array(steps)) == text


@pytest.mark.parametrize("value, exc, words", [
    ("x", ValueError, "'log', or steps"), ("0,3", ValueError, "steps >= 1; got 0"),
    ([], ValueError, "at least one step"), ("", ValueError, "got ''"),
    (1.5, TypeError, "got 1.5 (of type float)"), ([1.5], TypeError, "got 1.5"),
    ([True], TypeError, "got True"), ({1, 2}, TypeError, "got {1, 2} (of type set)"),
    ("1,,3", ValueError, "'1,,3'"), (0, ValueError, "steps >= 1; got 0"),
    (True, TypeError, "got True (of type bool)"),
    (np.array([[1, 2]]), TypeError, "an array of shape (1, 2)")])
def test_bad_schedules_are_named(value, exc, words):
    with pytest.raises(exc, match="`eval_at`") as e:
        check_eval_at(value)
    assert words in str(e.value)


@given(st.integers(1, 5000), st.integers(1, 5000),
       st.one_of(st.none(), st.just("log"), st.lists(st.integers(1, 5000), min_size=1)))
def test_the_evaluations_are_the_protocols_and_the_schedules(steps, every, extra):
    if isinstance(extra, list) and max(extra) > steps:
        with pytest.raises(ValueError, match=f"steps <= steps={steps}"):
            evaluation_steps(steps, every, extra)
        return
    got = evaluation_steps(steps, every, extra)
    assert got == sorted(set(got)) and got[-1] == steps and got[0] >= 1
    protocol = set(range(every, steps + 1, every)) | {steps}
    assert protocol <= set(got)
    want = protocol | (set(log_steps(steps)) if extra == "log" else set(extra or ()))
    assert set(got) == want


@given(st.integers(1, 3000), st.integers(1, 3000),
       st.one_of(st.none(), st.just("log"), st.lists(st.integers(1, 3000), min_size=1)))
def test_evaluations_are_counted_as_they_are_listed(steps, every, extra):
    if isinstance(extra, list) and max(extra) > steps:
        return
    evals = Evaluations(steps, every, extra)
    listed = list(evals)
    assert len(evals) == len(listed)
    assert [t for t in listed if evals.is_protocol(t)] == \
        sorted(set(range(every, steps + 1, every)) | {steps})


def test_a_billion_evaluations_are_counted_not_held():
    import tracemalloc

    tracemalloc.start()
    try:
        evals = Evaluations(10**9, 1, "log")
        assert len(evals) == 10**9
        assert next(iter(evals)) == 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_a_schedule_leaves_the_networks_run_as_it_was(backend):
    task = SameDifferent(d=16, L=6, seed=0)
    kw = dict(width=32, steps=250, eval_every=100, n_test=64, backend=backend)
    plain = train_ensemble(task, [1.0, "lazy"], 3, **kw)
    sched = train_ensemble(task, [1.0, "lazy"], 3, eval_at="log", **kw)
    for a, b in zip(plain, sched):
        assert b.config["eval_at"] == "log" and a.config["eval_at"] is None
        assert list(b.history["step"]) == evaluation_steps(250, 100, "log")
        np.testing.assert_array_equal(a.final_params.w, b.final_params.w)
        np.testing.assert_array_equal(a.final_params.a, b.final_params.a)
        at = np.isin(b.history["step"], a.history["step"])
        # the same test sets at the protocol's steps: the same accuracies, bit for bit
        np.testing.assert_array_equal(b.history["test_accuracy"][at], a.history["test_accuracy"])
        assert protocol_best(b.history, 100) == a.best_test_accuracy
        assert b.best_test_accuracy == b.history["test_accuracy"].max()


def test_explicit_steps_beyond_the_run_are_refused_before_training():
    with pytest.raises(ValueError, match=r"`eval_at` must hold steps <= steps=50; got 60"):
        train(SameDifferent(d=4, L=4, seed=0), 1.0, width=8, steps=50, eval_at=[1, 60])


def test_a_schedule_reads_the_limits_flow_where_a_shorter_flow_ends():
    task = SameDifferent(d=32, L=6, seed=1)
    kw = dict(n_test=256, seed=2, solver="dense")
    plain = lazy_limit(task, steps=400, eval_every=200, **kw)
    sched = lazy_limit(task, steps=400, eval_every=200, eval_at=[3, 30, 150], **kw)
    assert sched.history["step"] == [3, 30, 150, 200, 400]
    assert sched.config["eval_at"] == "3,30,150"
    # the protocol's evaluations: the same test sets, logits within the flow's accuracy
    for t, acc in zip(plain.history["step"], plain.history["test_accuracy"]):
        assert abs(sched.history["test_accuracy"][sched.history["step"].index(t)] - acc) <= 1 / 256
    for t in (3, 30, 150):          # the training loss at t is a flow's that ends at t
        short = lazy_limit(task, steps=t, eval_every=t, **kw)
        got = sched.history["train_loss"][sched.history["step"].index(t)]
        assert got == pytest.approx(short.history["train_loss"][-1], rel=1e-7)


@pytest.mark.parametrize("method", ["mean_difference", "regression"])
def test_a_schedule_is_refused_where_nothing_would_read_it(method):
    task = SameDifferent(d=8, L=4, seed=0)
    with pytest.raises(ValueError, match=f"`eval_at` must be None with method '{method}', "
                                         f"which is read once"):
        lazy_limit(task, method, eval_at="log", n_test=16)


@pytest.mark.parametrize("predictor, settings", [
    ("mlp", dict(d=8, L=[2, 3], gamma=1.0, seed=0, width=4, steps=20, eval_at="5,50")),
    ("lazy_limit", dict(d=8, L=[2, 3], seed=0, steps=20, eval_at="5,50")),
    ("lazy_limit", dict(d=8, L=[2, 3], seed=0, method="mean_difference", eval_at="log"))])
def test_a_scan_refuses_a_schedule_before_it_runs(predictor, settings, tmp_path):
    from fastsd.scan import Grid, run

    store = tmp_path / "s.jsonl"
    with pytest.raises(ValueError, match="`eval_at` must"):
        run(Grid(**settings), predictor, store, "serial", progress=False)
    assert not store.exists()
