"""Every training setting declared in ``fastsd.params.TRAINING`` reaches the trainer from every
entry point: the Python API (signatures, docstrings, errors), the CLI, the scan cells of the
"mlp", "mlp_image" and trained-pair predictors, the memory check, and the records.

The tests are generated from the spec, so a setting added to it is checked everywhere
without a test being written for it (issue 27: adding a training parameter touches the spec
and the engines that use it, nothing else).
"""
import inspect

import pytest

import fastsd.mlp
from fastsd import SameDifferent, train, train_ensemble
from fastsd.cli import build_parser
from fastsd.mlp import training
from fastsd.mlp.training import memory_needs
from fastsd.params import TRAINING
from fastsd.scan import Cell, get_predictor



def _other(p):
    """A valid value of ``p`` other than its default."""
    if p.kind == "choice":
        return next(c for c in p.choices if c != p.default)
    if p.kind == "batch_size":
        return 6
    if p.kind == "float":
        return 0.05
    if p.kind == "schedule":            # a step within the steps below (4), as it is recorded
        return "3"
    if p.kind == "activation":
        return "tanh"
    return (p.minimum or 0) + 3


OTHER = {n: _other(p) for n, p in TRAINING.items()}


def test_the_python_api_names_and_documents_every_setting():
    for func in (train_ensemble, memory_needs):
        params = inspect.signature(func).parameters
        for name, p in TRAINING.items():
            assert params[name].kind is inspect.Parameter.KEYWORD_ONLY
            assert (params[name].default is inspect.Parameter.empty) == p.required
            if not p.required:
                assert params[name].default == p.default
            assert f"\n    {name} : " in func.__doc__
        assert "{settings}" not in func.__doc__


def test_unknown_or_missing_settings_are_refused_as_python_would():
    task = SameDifferent(d=4, L=3, seed=0)
    with pytest.raises(TypeError, match=r"train_ensemble\(\) got an unexpected keyword "
                                        r"argument 'widht'; valid: .*backend.*width"):
        train_ensemble(task, 1.0, 0, widht=8, steps=2)
    with pytest.raises(TypeError, match=r"missing required keyword argument 'steps'"):
        train_ensemble(task, 1.0, 0, width=8)
    with pytest.raises(TypeError, match=r"memory_needs\(\) got an unexpected keyword"):
        memory_needs(task, 1.0, 0, width=8, steps=2, momentum=0.9)
    with pytest.raises(TypeError, match="unexpected keyword argument 'momentum'"):
        train(task, 1.0, width=8, steps=2, momentum=0.9)


def test_the_results_record_every_setting():
    task = SameDifferent(d=4, L=3, seed=0)
    r = train(task, 1.0, seed=1, backend="numpy", **OTHER)
    for name, value in OTHER.items():
        assert r.config[name] == value, name


def test_the_cli_has_an_option_for_every_setting():
    args = ["train", "--d", "4", "--L", "3", "--gamma", "1"]
    for name, value in OTHER.items():
        args += [TRAINING[name].flag, str(value)]
    ns = build_parser().parse_args(args)
    for name, value in OTHER.items():
        assert getattr(ns, name) == value, name
    assert Cell(**{n: getattr(ns, n) for n in ("d", "L", "gamma", *TRAINING)})


class _Called(Exception):
    pass


def _spy(monkeypatch, owner, name):
    calls = []

    def spy(*args, config=None, **kwargs):
        calls.append({**(config or {}), **kwargs})     # settings bound (config=) or as keywords
        raise _Called
    monkeypatch.setattr(owner, name, spy)
    return calls


@pytest.mark.parametrize("predictor, settings", [
    ("mlp", dict(d=4, L=3, gamma=1.0)),
    ("mlp_image", dict(task="psvrt", L=4, gamma=1.0, patch=2, n_patches=2)),
    ("weight_structure", dict(d=4, L=3, model="rich")),
    ("weight_images", dict(task="PSVRT", model="rich")),
])
def test_scan_cells_pass_every_setting_they_declare_to_the_trainer(monkeypatch, predictor,
                                                                   settings):
    pred = get_predictor(predictor)
    mine = {n: v for n, v in OTHER.items() if n in {*pred.required, *pred.defaults}}
    cell = pred.prepare({**settings, **mine})
    calls = _spy(monkeypatch, fastsd.mlp, "train_ensemble")
    with pytest.raises(_Called):
        pred.run_group([cell], backend="numpy")
    for name, value in mine.items():
        assert calls[0][name] == value, name
    if predictor in ("mlp", "mlp_image"):          # and to the memory check
        calls = _spy(monkeypatch, training, "memory_needs")
        with pytest.raises(_Called):
            pred.memory([cell], backend="numpy")
        assert {n: calls[0][n] for n in mine} == mine
