"""The lazy limit's time and memory model (fastsd.kernels.costs) and the shared price fit.

- ``fastsd._pricing.fit_prices`` recovers the prices of exact synthetic timings;
- the count laws predict the terms, cross-approximation terms and products of
  a real flow cell that they were not fitted on, and its measured peak memory
  (tracemalloc) is close to ``memory_bytes``;
- the features at a run's recorded counts are those counts in units;
- the prediction grows with the steps, n_test and (on each side of the test
  logits' switch) L;
- which settings are modelled, and the "lazy_limit" predictor's plan.
"""
import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsd import SameDifferent, _pricing
from fastsd.kernels import costs, lazy_limit
from fastsd.kernels import kron
from fastsd.kernels.kron import TEST_CROSS_MIN_L
from fastsd.scan import Grid, get_predictor, plan


def test_the_price_fit_recovers_the_prices_of_exact_timings():
    rng = np.random.default_rng(0)
    prices = {"a": 2e-3, "b": 0.0, "c": 5e-9, "d": 1e-6}
    rows = [{"a": 1.0, "b": float(rng.integers(1, 100)), "c": float(rng.integers(1, 10 ** 9)),
             "d": float(rng.integers(1, 10 ** 4))} for _ in range(12)]
    seconds = [_pricing.predict(prices, r) for r in rows]
    got = _pricing.fit_prices(rows, seconds)
    assert set(got) == set(prices) and all(v >= 0 for v in got.values())
    for r, s in zip(rows, seconds):
        assert _pricing.predict(got, r) == pytest.approx(s, rel=1e-6)
    assert _pricing.predict({"a": 2.0}, {"a": 3.0, "z": 7.0}) == 6.0     # no price: free


@pytest.mark.parametrize("d, L, steps", [(48, 72, 25000), (20, 100, 3000)])
def test_the_count_laws_and_memory_hold_for_cells_they_were_not_fitted_on(d, L, steps):
    task = SameDifferent(d=d, L=L, seed=3)
    kw = dict(seed=1, steps=steps, eval_every=1000, n_test=1024)
    lazy_limit(SameDifferent(d=4, L=48, seed=0), steps=10, eval_every=10, n_test=16)  # JIT
    tracemalloc.start()
    try:
        res = lazy_limit(task, **kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.solver == "kron"
    want, got = costs.expected_counts(d, L, steps, 1000), res.solver_info
    for key in ("kron_terms", "kron_aca_terms", "flow_products"):
        assert 1 / 1.35 < want[key] / got[key] < 1.35, (key, want[key], got[key])
    assert got["flow_products"] == 2 * 30 + 1 + 4 * got["flow_steps"]    # the counts' form
    # two rows a term, the probes, and a few pivots found exact with the rows sampled after them
    extra = got["kron_build_rows"] - (2 * got["kron_aca_terms"] + 256)
    assert 0 <= extra <= 3 * (kron.SAMPLE + 1), got
    assert 1 / 1.5 < costs.memory_bytes(d, L, n_test=1024) / peak < 1.5


def test_the_features_at_recorded_counts_are_those_counts_in_units():
    info = {"kron_terms": 20, "kron_aca_terms": 30, "kron_build_rows": 316,
            "flow_products": 165, "kron_test_terms": 12}
    pairs = 25 * 1024
    for L in (128, TEST_CROSS_MIN_L):
        f = costs.cost_features(256, L, steps=25000, eval_every=1000, n_test=1024, counts=info)
        assert f["gemm"] == 4 * 20 * L ** 3 * 165 and f["product"] == 20 * L * L * 165
        assert f["build"] == 316 * L * L and f["aca"] == 900 * L * L
        assert f["vector"] == 165 * L * L
        assert f["inputs"] == pairs * 256 and f["dots"] == pairs * L * 256 + L * L * 256
        crossed = {"test_aca": pairs * L * 12, "test_aca2": pairs * L * 144,
                   "cross": 2 * pairs * 12 * L * L}
        if L < TEST_CROSS_MIN_L:        # matrix-free test logits: n_test L^2 entries
            assert f["test"] == pairs * L * L and all(f[u] == 0 for u in crossed)
        else:                           # cross-approximated test blocks of 12 terms
            assert f["test"] == 0 and all(f[u] == v for u, v in crossed.items())
    # counts a run does not record come from the laws
    partial = {k: v for k, v in info.items() if k != "kron_test_terms"}
    f = costs.cost_features(256, 512, steps=25000, eval_every=1000, n_test=1024, counts=partial)
    k = costs.expected_counts(256, 512, 25000, 1000)["kron_test_terms"]
    assert f["gemm"] == 4 * 20 * 512 ** 3 * 165 and f["test_aca"] == pairs * 512 * k
    assert costs.evaluations(25000, 1000) == 25 and costs.evaluations(2500, 1000) == 3


@settings(max_examples=60, deadline=None)
@given(d=st.integers(1, 4096), L=st.integers(2, 4096), steps=st.integers(1, 10 ** 5),
       eval_every=st.integers(1, 5000), n_test=st.integers(2, 10 ** 5))
def test_the_prediction_grows_with_the_sizes(d, L, steps, eval_every, n_test):
    def t(**kw):
        return costs.predicted_seconds(**{**dict(d=d, L=L, steps=steps, eval_every=eval_every,
                                                 n_test=n_test), **kw})

    base = t()
    assert math.isfinite(base) and base > 0
    assert t(steps=2 * steps) >= base and t(n_test=2 * n_test) >= base
    if L + 1 != TEST_CROSS_MIN_L:   # the test logits' switch to cross approximation
        assert t(L=L + 1) >= base * (1 - 1e-12)
    c = costs.expected_counts(d, L, steps, eval_every)
    assert c["flow_steps"] >= costs.evaluations(steps, eval_every)
    assert 1 <= c["kron_terms"] <= c["kron_aca_terms"] <= L * L


def _cell(**kw):
    return get_predictor("lazy_limit").prepare({"d": 16, "L": 64, **kw})


@pytest.mark.parametrize("kw, expected", [
    ({}, True),                                  # "auto" takes kron from L = 48
    ({"L": 16}, False),                          # "auto" takes dense
    ({"L": 16, "solver": "kron"}, True),
    ({"solver": "dense"}, False), ({"solver": "cg"}, False),
    ({"method": "regression"}, False), ({"method": "logistic_sgd"}, False),
    ({"kernel": "nngp"}, False), ({"pairs": 100}, False),
])
def test_which_cells_are_modelled(kw, expected):
    assert costs.modelled(_cell(**kw)) is expected


def test_the_lazy_limit_predictor_plans_flow_cells_and_leaves_the_others(tmp_path):
    grid = Grid(d=[16, 64], L=[64, 128], steps=2000, eval_every=1000, n_test=256)
    p = plan(grid, "lazy_limit", tmp_path / "s.jsonl")
    assert p.modelled and p.cells == 4 and p.seconds > 0
    want = sorted((costs.predicted_seconds(d, L, steps=2000, eval_every=1000, n_test=256)
                   for d in (16, 64) for L in (64, 128)), reverse=True)
    assert list(p.group_seconds) == pytest.approx(want)      # largest first
    assert max(p.group_memory) == costs.memory_bytes(16, 128, n_test=256)
    assert "lazy limit: shipped prices" in p.cost_model
    for other in (plan(Grid(d=[4], L=[64], method="regression"), "lazy_limit",
                       tmp_path / "r.jsonl"),
                  plan(grid, "lazy_limit", tmp_path / "n.jsonl", backend="numpy")):
        assert not other.modelled and other.seconds is None and other.cost_model is None


@pytest.mark.parametrize("kw, message", [
    (dict(d=0), "`d` must be an integer >= 1; got 0"),
    (dict(L=1), "`L` must be an integer >= 2; got 1"),
    (dict(steps=0), "`steps` must be an integer >= 1; got 0"),
    (dict(eval_every=0), "`eval_every` must be an integer >= 1; got 0"),
    (dict(n_test=1), "`n_test` must be an integer >= 2; got 1"),
])
def test_bad_sizes_are_refused_by_name(kw, message):
    sizes = {**dict(d=8, L=64, steps=100, eval_every=10, n_test=64), **kw}
    with pytest.raises(ValueError, match=message):
        costs.predicted_seconds(**sizes)
    with pytest.raises(ValueError, match=message):
        costs.cost_features(**sizes)
    if "steps" not in kw and "eval_every" not in kw:
        with pytest.raises(ValueError, match=message):
            costs.memory_bytes(sizes["d"], sizes["L"], n_test=sizes["n_test"])
    with pytest.raises(TypeError, match="`L` must be an integer"):
        costs.expected_counts(8, 64.5, 100, 10)


def test_modelled_takes_raw_settings_and_refuses_bad_ones():
    assert costs.modelled({"d": 16, "L": 64}) is True          # defaults filled in
    assert costs.modelled({"d": 16, "L": 64, "method": "regression"}) is False
    with pytest.raises(ValueError, match="`settings` must give `L`"):
        costs.modelled({"d": 16})
    with pytest.raises(ValueError, match="`d` must be an integer >= 1; got 0"):
        costs.modelled({"d": 0, "L": 64})
    with pytest.raises(TypeError, match="`settings` must be a dict"):
        costs.modelled(None)


def test_the_laws_hold_at_the_edge_of_their_fitted_range_beyond_it():
    # measured R falls slowly with d (17 at d = 1024, 12 at 16384, 7 at 10^5): beyond the
    # fitted d the laws are read at the edge, so R does not climb with the fit's quadratic
    edge = costs.expected_counts(costs.FITTED_D[1], 64, 25000, 1000)
    far = costs.expected_counts(10 ** 9, 64, 25000, 1000)
    assert far["kron_terms"] == edge["kron_terms"] < 20
    # while the d-proportional test-input work still grows
    assert costs.predicted_seconds(10 ** 5, 64, steps=25000, eval_every=1000, n_test=1024) > \
        4 * costs.predicted_seconds(16384, 64, steps=25000, eval_every=1000, n_test=1024)


def test_float32_products_are_priced_at_half_the_float64_gemm_and_modelled_at_any_l():
    """dtype="float32" moves the products' flops from "gemm" to "gemm32" (half the price):
    the prediction falls by exactly half the products' GEMM time, nothing else changes."""
    kw = dict(steps=25000, eval_every=1000, n_test=1024)
    f64 = costs.cost_features(256, 512, **kw)
    f32 = costs.cost_features(256, 512, dtype="float32", **kw)
    assert f32.pop("gemm32") == f64.pop("gemm") > 0 and f32 == f64
    p = costs.prices()
    assert p["gemm32"] == p["gemm"] / 2
    t64 = costs.predicted_seconds(256, 512, **kw)
    t32 = costs.predicted_seconds(256, 512, dtype="float32", **kw)
    assert t64 - t32 == pytest.approx(0.5 * p["gemm"] * costs.cost_features(
        256, 512, **kw)["gemm"], rel=1e-9)
    # float32 products need "kron", which "auto" then takes even where it prefers "dense"
    assert not costs.modelled({"d": 8, "L": 24})
    assert costs.modelled({"d": 8, "L": 24, "dtype": "float32"})
    pred = get_predictor("lazy_limit")
    cell = pred.prepare({"d": 8, "L": 24, "steps": 200, "eval_every": 100, "n_test": 64,
                         "dtype": "float32"})
    rec, = pred.run_group([cell], backend="cpu")
    assert rec["solver"] == "kron" and rec["dtype"] == "float32"
    assert rec["solver_info"]["kron_dtype"] == "float32"
