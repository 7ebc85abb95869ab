"""The declared parameters (fastsd.params) against every place that takes them.

Two properties, generated from the declarations rather than written per
parameter: the Python API, the CLI and the scan predictors agree on every
default; and every value just outside a declared range (or of the wrong type)
is refused by each of them with an error that names the parameter.
"""
import inspect

import pytest

from fastsd import SameDifferent, bayes, lazy_limit, train, train_ensemble
from fastsd.kernels import lazy_cell
from fastsd.kernels.solvers import SOLVERS
from fastsd.cli import build_parser, main
from fastsd.params import BAYES, LAZY_LIMIT, MLP, REQUIRED, WALKERS, Param, Spec
from fastsd.scan import Cell, get_predictor
from fastsd.walkers import simulate

SUB = build_parser()._subparsers._group_actions[0].choices
#: spec -> (its scan predictor, its CLI command or None, the CLI options it leaves out)
USES = {"mlp": (MLP, "mlp", "train", {"root_d"}),
        "lazy_limit": (LAZY_LIMIT, "lazy_limit", "ntk", set()),
        "walkers": (WALKERS, "walkers", "walkers", {"walker_offset"}),
        "bayes": (BAYES, "bayes", None, set())}
#: Python entry points and task constructors that take a spec's parameters.
API = {"mlp": (train_ensemble, SameDifferent.__init__), "lazy_limit": (lazy_limit, lazy_cell),
       "walkers": (simulate,), "bayes": (bayes.accuracy, SameDifferent.__init__)}
#: The Python API's seed is None (fresh entropy, recorded in the result); the CLI's, the
#: scans' and a scan cell's (lazy_cell) is 0: a run must be repeatable from its command.
FRESH_ENTROPY = {"seed"}
CELL_FUNCTIONS = {lazy_cell}


def signature_defaults(func):
    return {k: p.default for k, p in inspect.signature(func).parameters.items()
            if p.default is not inspect.Parameter.empty}


def cli_required(spec):
    return [a for n, p in spec.items() if p.required for a in (p.flag, example(p))]


def example(p):
    """A valid CLI value of a required parameter."""
    return {"gamma": "1", "batch_size": "4"}.get(p.kind, "4")


@pytest.mark.parametrize("use", sorted(USES))
def test_defaults_agree_between_the_python_api_the_cli_and_the_scans(use):
    spec, predictor, command, not_in_cli = USES[use]
    pred = get_predictor(predictor)
    assert set(pred.required) == set(spec.required())
    assert pred.defaults == spec.defaults()
    checked = 0
    if command is not None:
        cli = vars(SUB[command].parse_args(cli_required(spec)))
        assert set(spec) - not_in_cli <= set(cli), "every declared parameter is an option"
        for name in set(spec) - not_in_cli - set(spec.required()):
            assert cli[name] == spec[name].default, name
            checked += 1
    for func in API[use]:
        api = signature_defaults(func)
        for name in set(api) & set(spec) - set(spec.required()):
            fresh = name in FRESH_ENTROPY and func not in CELL_FUNCTIONS
            want = None if fresh else spec[name].default
            assert api[name] == want, (func.__qualname__, name)
            checked += 1
    assert checked >= 2


def test_the_declared_solvers_are_the_registered_ones():
    assert LAZY_LIMIT["solver"].choices == ("auto",) + tuple(SOLVERS)


def test_cell_fields_are_the_declared_parameters():
    import dataclasses
    fields = {f.name: f.default for f in dataclasses.fields(Cell)}
    assert set(fields) == set(MLP)
    for name, p in MLP.items():
        assert fields[name] == (dataclasses.MISSING if p.required else p.default), name


# -- bad values, generated from the declared ranges -------------------------------------

def bad_cases(spec):
    for name, p in spec.items():
        for value, exc in p.invalid():
            yield pytest.param(name, value, exc, id=f"{name}={value!r}"[:40])


TASK = dict(d=4, L=3)


def call_mlp(name, value):
    task_keys = {"d": "d", "L": "L", "sigma2": "sigma2", "task_seed": "seed",
                 "root_d": "root_d"}
    if name in task_keys:
        SameDifferent(**{**TASK, task_keys[name]: value})
        return
    kw = dict(gamma=1.0, width=2, steps=1, eval_every=1, n_test=4, batch_size=4, seed=0)
    kw[name] = value
    train(SameDifferent(**TASK, seed=0), kw.pop("gamma"), **kw)


def call_lazy(name, value):
    if name in ("d", "L", "task_seed"):
        SameDifferent(**{**TASK, ("seed" if name == "task_seed" else name): value})
        return
    kw = dict(steps=1, eval_every=1, n_test=4)
    kw[name] = value
    lazy_limit(SameDifferent(**TASK, seed=0), **kw)


def call_walkers(name, value):
    kw = dict(L=3, batch_size=4, n_iters=1, n_walkers=2, seed=0, backend="numpy")
    kw[name] = value
    simulate(**kw)


def call_bayes(name, value):
    kw = dict(d=4, L=3, sigma2=0.5, prior="generalizing", n_test=4, seed=0, task_seed=0)
    kw[name] = value
    task = SameDifferent(kw["d"], kw["L"], sigma2=kw["sigma2"], seed=kw["task_seed"])
    bayes.accuracy(task, kw["prior"], kw["n_test"], seed=kw["seed"])


CALLS = {"mlp": call_mlp, "lazy_limit": call_lazy, "walkers": call_walkers,
         "bayes": call_bayes}
ALL_CASES = [pytest.param(use, *c.values, id=f"{use}-{c.id}")
             for use in sorted(USES) for c in bad_cases(USES[use][0])]


@pytest.mark.parametrize("use, name, value, exc", ALL_CASES)
def test_the_python_api_refuses_a_bad_value_naming_it(use, name, value, exc):
    """Named as the API names it: the task's ``seed`` is the scan's ``task_seed``."""
    api_name = {"task_seed": "seed"}.get(name, name)
    with pytest.raises(exc, match=f"`{api_name}`"):
        CALLS[use](name, value)


@pytest.mark.parametrize("use, name, value, exc", ALL_CASES)
def test_the_scan_predictor_refuses_a_bad_value_naming_it(use, name, value, exc):
    spec, predictor, _, _ = USES[use]
    settings = {n: int(example(p)) if p.kind != "float" else 0.5
                for n, p in spec.items() if p.required}
    with pytest.raises(exc, match=f"`{name}`"):
        get_predictor(predictor).prepare({**settings, name: value})


CLI_CASES = [c for c in ALL_CASES if USES[c.values[0]][2] is not None
             and c.values[1] not in USES[c.values[0]][3]
             and isinstance(c.values[2], (int, float, str))]


@pytest.mark.parametrize("use, name, value, exc", CLI_CASES)
def test_the_cli_refuses_a_bad_value_naming_its_option(use, name, value, exc, capsys):
    spec, _, command, _ = USES[use]
    args = [a for n, p in spec.items() if p.required and n != name
            for a in (p.flag, example(p))]
    try:
        code = main([command, *args, spec[name].flag, str(value)])
    except SystemExit as e:         # argparse: a value of the wrong type is a usage error
        code = e.code
    assert code in (1, 2)
    assert spec[name].flag in capsys.readouterr().err


def test_generated_cases_cover_every_declared_parameter():
    for use, (spec, *_rest) in USES.items():
        named = {c.values[1] for c in ALL_CASES if c.values[0] == use}
        assert named == set(spec)
    assert len(ALL_CASES) >= 100 and len(CLI_CASES) >= 60


# -- the declaration itself -------------------------------------------------------------

def test_a_param_checks_what_it_declares():
    p = Param("k", "int", "a count", 3, minimum=2, maximum=5)
    assert p.check(4) == 4 and p.valid() == "an integer >= 2 and <= 5"
    for value, exc in p.invalid():
        with pytest.raises(exc, match="`k`"):
            p.check(value)
    q = Param("t", "float", "a time", REQUIRED, positive=True)
    assert q.required and q.check(2) == 2.0 and isinstance(q.check(2), float)
    assert Spec(p, q).required() == ("t",) and Spec(p, q).defaults() == {"k": 3}
    with pytest.raises(ValueError, match="kind"):
        Param("z", "complex", "?")
