"""Settings' valid values as objects (fastsd.constraints), and settings bound once
(fastsd.params.Spec.bind).

A constraint declared as an object checks, words, documents and parses exactly as the
string kind it replaces; every value it lists as invalid is refused naming the setting;
settings bound once reach training without a second check, and bound or given as keywords
train the same network bit for bit.
"""
import argparse

import numpy as np
import pytest

from fastsd import SameDifferent, schedules, train_ensemble
from fastsd import constraints as C
from fastsd.params import KINDS, MLP, TRAINING, Bound, Param, Spec
from fastsd.scan import Cell
from fastsd.scan.predictors import train_cells

#: Each kind declared by its string and by its object, the same ranges.
PAIRS = [
    (dict(kind="int", minimum=2, maximum=9), C.Integer(2, 9)),
    (dict(kind="int", minimum=1), C.Integer(1)),
    (dict(kind="seed"), C.Seed()),
    (dict(kind="batch_size"), C.BatchSize()),
    (dict(kind="float", positive=True), C.Real(positive=True)),
    (dict(kind="float", nonnegative=True), C.Real(nonnegative=True)),
    (dict(kind="float"), C.Real()),
    (dict(kind="gamma"), C.Gamma()),
    (dict(kind="pairs"), C.Pairs()),
    (dict(kind="schedule"), C.Schedule()),
    (dict(kind="activation"), C.ActivationName()),
    (dict(kind="bool"), C.Flag()),
    (dict(kind="sign"), C.Sign()),
    (dict(kind="choice", choices=("a", "b")), C.Options(("a", "b"))),
]
#: A valid value of each kind, as a command line gives it.
TEXT = {"int": "4", "seed": "0", "batch_size": "4", "float": "0.5", "gamma": "lazy",
        "pairs": "all", "schedule": "1,3", "activation": "gelu", "sign": "-1", "choice": "b"}


def declared(fields, default):
    fields = dict(fields)
    kind = fields.pop("kind")
    return Param("s", kind, "a setting", default, **fields)


def test_every_kind_has_a_constraint_and_no_other():
    assert set(KINDS) == {fields["kind"] for fields, _ in PAIRS}
    with pytest.raises(ValueError, match="`kind`"):
        Param("z", "complex", "?")


@pytest.mark.parametrize("fields,constraint", PAIRS, ids=[str(c.valid())[:30] for _, c in PAIRS])
def test_an_object_declares_what_its_string_kind_declares(fields, constraint):
    by_name, by_object = declared(fields, None), declared({"kind": constraint}, None)
    assert by_object.kind == by_name.kind == constraint.kind
    assert type(by_name.constraint) is type(constraint)
    assert by_object.valid() == by_name.valid()
    assert by_object.numpydoc() == by_name.numpydoc()
    assert (by_object.minimum, by_object.maximum, by_object.choices) == (
        by_name.minimum, by_name.maximum, by_name.choices)
    for value, exc in by_name.invalid():
        for p in (by_name, by_object):
            with pytest.raises(exc, match="`s`"):
                p.check(value)
    assert [v for v, _ in by_object.invalid()] == [v for v, _ in by_name.invalid()]


@pytest.mark.parametrize("fields,constraint", PAIRS, ids=[str(c.valid())[:30] for _, c in PAIRS])
def test_the_command_line_text_of_a_valid_value_passes_its_check(fields, constraint):
    if constraint.kind == "bool":
        return          # a flag has no text: the CLI sets it by its own option
    p = declared({"kind": constraint}, None)
    parser = argparse.ArgumentParser()
    p.add_argument(parser)
    value = vars(parser.parse_args([p.flag, TEXT[p.kind]]))["s"]
    checked = p.check(value)
    assert p.check(checked) == checked, "a checked value is its own check (idempotent)"


def test_a_bad_command_line_number_is_refused_by_the_parser_naming_the_range():
    parser = argparse.ArgumentParser()
    declared({"kind": C.Gamma()}, None).add_argument(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--s", "1e-400"])        # float64 rounds it to 0


# -- settings bound once ---------------------------------------------------------------

SETTINGS = dict(width=16, steps=30, eval_every=10, eval_at=[3, 1, 3], activation="relu")


def test_bind_checks_fills_defaults_and_freezes():
    bound = TRAINING.bind(SETTINGS, caller="train_ensemble")
    assert isinstance(bound, Bound) and bound.spec is TRAINING
    assert bound.eval_at == "1,3" and bound["batch_size"] == 128     # recorded text, default
    assert list(bound.evaluations) == [1, 3, 10, 20, 30]
    with pytest.raises(AttributeError, match="read-only"):
        bound.width = 3
    with pytest.raises(TypeError):
        bound["width"] = 3
    with pytest.raises(TypeError, match="unexpected keyword argument 'wdth'"):
        TRAINING.bind({"wdth": 3}, caller="train_ensemble")
    with pytest.raises(TypeError, match="missing required keyword argument 'steps'"):
        TRAINING.bind({"width": 3}, caller="train_ensemble")
    with pytest.raises(ValueError, match="`eval_at` must hold steps <= steps=30"):
        TRAINING.bind({**SETTINGS, "eval_at": 31}, caller="train_ensemble")


def test_bound_settings_are_not_checked_again(monkeypatch):
    calls = []
    real = schedules.check_eval_at
    monkeypatch.setattr(schedules, "check_eval_at", lambda *a: calls.append(a) or real(*a))
    bound = MLP.bind(dict(d=4, L=3, gamma=1.0, **SETTINGS), caller="Cell")
    assert len(calls) == 1
    again = TRAINING.bind(bound)            # MLP declares TRAINING's very settings
    assert isinstance(again, Bound) and again.spec is TRAINING and len(calls) == 1
    assert dict(again) == {n: bound[n] for n in TRAINING}
    assert again.evaluations is bound.evaluations
    # a spec with other Param objects of the same names checks them itself
    other = Spec(*(Param(p.name, p.kind, p.help, p.default, p.minimum, p.maximum, p.positive,
                         p.nonnegative, p.choices, p.optional) for p in TRAINING.values()))
    other.bind(bound)
    assert len(calls) == 2
    # settings that lack some of a spec's (no defaults filled) are checked as given
    TRAINING.bind(MLP.bind(dict(d=4, L=3, gamma=1.0, **SETTINGS)))
    assert len(calls) == 4


def test_a_cell_trains_with_eval_at_checked_once(monkeypatch):
    calls = []
    real = schedules.check_eval_at
    monkeypatch.setattr(schedules, "check_eval_at", lambda *a: calls.append(a) or real(*a))
    built = []
    init = schedules.Evaluations.__init__
    monkeypatch.setattr(schedules.Evaluations, "__init__",
                        lambda self, *a: built.append(a) or init(self, *a))
    cell = Cell(d=4, L=3, gamma="lazy", width=8, steps=12, eval_every=6, eval_at="log",
                n_test=16)
    [rec] = train_cells([cell], backend="numpy")
    assert len(calls) == 1 and len(built) == 1
    assert rec["history"]["step"] == [1, 2, 3, 5, 6, 10, 12]


def test_config_trains_the_network_its_keywords_train_bit_for_bit():
    task = SameDifferent(d=4, L=3, seed=0)
    kw = dict(width=8, steps=20, eval_every=10, eval_at="log", n_test=16, batch_size=4)
    by_kw = train_ensemble(task, [1.0, 0.5], [1, 2], backend="numpy", **kw)
    by_config = train_ensemble(task, [1.0, 0.5], [1, 2], backend="numpy",
                               config=TRAINING.bind(kw, caller="train_ensemble"))
    for a, b in zip(by_kw, by_config):
        assert a.config == b.config
        for k in a.history:
            np.testing.assert_array_equal(a.history[k], b.history[k])
        np.testing.assert_array_equal(a.final_params.w, b.final_params.w)


def test_config_is_refused_beside_keywords_or_unbound():
    task = SameDifferent(d=4, L=3, seed=0)
    bound = TRAINING.bind(dict(width=8, steps=2), caller="train_ensemble")
    with pytest.raises(TypeError, match="not both; got `config` and 'width'"):
        train_ensemble(task, 1.0, 0, backend="numpy", config=bound, width=8)
    with pytest.raises(TypeError, match="`config` must be the training settings bound"):
        train_ensemble(task, 1.0, 0, backend="numpy", config=dict(bound))
    import pickle

    cell = pickle.loads(pickle.dumps(MLP.bind(dict(d=4, L=3, gamma=1.0, width=8, steps=2),
                                              caller="Cell")))
    with pytest.raises(TypeError, match="unexpected keyword argument 'L'"):
        train_ensemble(task, 1.0, 0, backend="numpy", config=cell)  # a copy: checked again


def test_a_cell_pickled_or_copied_keeps_its_settings_and_trains_the_same():
    import copy
    import pickle

    cell = Cell(d=4, L=3, gamma=1.0, width=8, steps=12, eval_every=6, eval_at="log", n_test=16)
    for twin in (pickle.loads(pickle.dumps(cell)), copy.deepcopy(cell)):
        assert twin == cell and twin.key == cell.key
        assert dict(twin.training) == dict(cell.training)
        [a], [b] = train_cells([cell], backend="numpy"), train_cells([twin], backend="numpy")
        assert {k: v for k, v in a.items() if k != "wall_time"} == \
            {k: v for k, v in b.items() if k != "wall_time"}
