"""The contract every scan predictor keeps (fastsd.scan.predictors.Predictor).

Each predictor of ``PREDICTORS`` is checked for the same properties on a tiny
cell: preparing completes and is idempotent, refuses unknown and missing
settings by name, gives a stable key that changes with any setting, a
positive cost and a hashable group key; a group runs to one strict-JSON record
per cell, in order, carrying the cell's required settings and where, with
what and how long it ran; and a rerun of a cell gives the same record apart
from its wall time.
"""
import json
import math

import pytest

from fastsd.scan.predictors import PREDICTORS

#: A tiny valid cell of each predictor (its required settings and small sizes).
CELLS = {
    "mlp": dict(d=4, L=3, gamma=1.0, width=4, steps=4, eval_every=2, n_test=8, batch_size=4),
    "mlp_image": dict(task="psvrt", L=4, gamma=1.0, width=4, steps=2, eval_every=1, n_test=4,
                      batch_size=4),
    "theory": dict(L=3),
    "walkers": dict(L=3, batch_size=4, n_iters=2, n_walkers=2),
    "lazy_limit": dict(d=4, L=3, steps=20, eval_every=10, n_test=8),
    "bayes": dict(d=4, L=3, sigma2=0.5, n_test=8),
    "weight_structure": dict(d=4, L=3, model="rich", width=4, steps=4, eval_every=2),
    "weight_images": dict(task="PSVRT", model="lazy", width=4, steps=2, eval_every=1),
    "max_margin": dict(d=4, L=3, P=8),
}
#: The integer setting the tests change (L, where the predictor has one).
VARY = {"weight_images": "width"}
TIMING = {"wall_time"}


def test_every_predictor_is_covered():
    assert set(CELLS) == set(PREDICTORS)


@pytest.fixture(params=sorted(PREDICTORS))
def predictor(request):
    return PREDICTORS[request.param]


def test_prepare_completes_and_is_idempotent(predictor):
    s = predictor.prepare(CELLS[predictor.name])
    assert set(predictor.required) | set(predictor.defaults) == set(s)
    assert predictor.prepare(s) == s
    assert predictor.key(s) == predictor.key(predictor.prepare(dict(reversed(s.items()))))


def test_prepare_names_an_unknown_and_a_missing_setting(predictor):
    with pytest.raises(ValueError, match="`no_such_setting` is not a setting"):
        predictor.prepare({**CELLS[predictor.name], "no_such_setting": 1})
    name = predictor.required[0]
    with pytest.raises(ValueError, match=f"`{name}` must be given"):
        predictor.prepare({k: v for k, v in CELLS[predictor.name].items() if k != name})


def test_key_changes_with_a_setting_and_cost_is_positive(predictor):
    s = predictor.prepare(CELLS[predictor.name])
    vary = VARY.get(predictor.name, "L")
    other = predictor.prepare({**CELLS[predictor.name], vary: s[vary] + 1})
    assert predictor.key(s) != predictor.key(other)
    cost = predictor.cost(s)
    assert math.isfinite(cost) and cost > 0
    assert hash(predictor.group_key(s, "cpu")) == hash(predictor.group_key(dict(s), "cpu"))


def test_a_group_runs_to_one_strict_record_per_cell_in_order(predictor):
    vary = VARY.get(predictor.name, "L")
    cells = [predictor.prepare(CELLS[predictor.name]),
             predictor.prepare({**CELLS[predictor.name], vary: CELLS[predictor.name][vary] + 1})]
    group = [c for c in cells if predictor.group_key(c, "cpu") == predictor.group_key(cells[0],
                                                                                     "cpu")]
    records = predictor.run_group(group, backend="cpu")
    assert len(records) == len(group)
    for cell, rec in zip(group, records):
        json.dumps(rec, allow_nan=False)
        for name in predictor.required:
            if name in rec:
                assert rec[name] == cell[name], name
        assert rec[vary] == cell[vary]
        assert {"backend", "version", "wall_time"} <= set(rec)
        assert rec["wall_time"] >= 0


def test_a_rerun_gives_the_same_record_but_its_wall_time(predictor):
    s = predictor.prepare(CELLS[predictor.name])
    a, = predictor.run_group([s], backend="cpu")
    b, = predictor.run_group([s], backend="cpu")
    assert ({k: v for k, v in a.items() if k not in TIMING}
            == {k: v for k, v in b.items() if k not in TIMING})


def test_the_declared_numbers_are_numbers_in_every_record(predictor):
    from fastsd.scan.records import _not_a_cell

    s = predictor.prepare(CELLS[predictor.name])
    rec, = predictor.run_group([s], backend="cpu")
    for name in predictor.numbers:
        assert name in rec and (rec[name] is None or isinstance(rec[name], (int, float))), name
    # stored by the scan, the record is a cell of its predictor
    stored = dict(rec, key=predictor.key(s), predictor=predictor.name, settings=s)
    assert _not_a_cell(json.loads(json.dumps(stored)), predictor) is None
