"""The public API's type annotations, checked by mypy (setup.cfg's [mypy] names the modules).

Three properties: the annotated modules type-check; a user's call with a wrong type or an
unknown setting is caught by the checker while the same call written right is not; and the
typed names (``fastsd._types``, the Literal choices) are the declared ones, so a setting
declared in ``fastsd.params`` without its type (or a choice added to one and not the other)
fails here.
"""
import pathlib
import typing

import pytest

mypy_api = pytest.importorskip("mypy.api", reason="mypy is in the [test] extra")

from fastsd import _types  # noqa: E402
from fastsd._dispatch import BACKENDS  # noqa: E402
from fastsd.kernels.lazy import METHODS, Method  # noqa: E402
from fastsd.mlp.model import INITS  # noqa: E402
from fastsd.mlp.training import PATHS  # noqa: E402
from fastsd.params import LAZY_LIMIT, TRAINING  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent


def mypy(*args):
    out, err, status = mypy_api.run(["--config-file", str(ROOT / "setup.cfg"),
                                     "--no-incremental", *args])
    return status, out + err


def test_the_annotated_modules_type_check():
    status, report = mypy()
    assert status == 0, report


def check_snippet(tmp_path, body):
    path = tmp_path / "user_code.py"
    path.write_text("from fastsd import SameDifferent, lazy_limit, train, train_ensemble\n"
                    "from fastsd.scan import Grid, run\n"
                    "task = SameDifferent(d=4, L=3, seed=0)\n" + body)
    return mypy("--follow-imports=silent", str(path))


def test_a_call_written_right_passes(tmp_path):
    status, report = check_snippet(tmp_path, (
        "r = train(task, 'lazy', width=8, steps=3, eval_at=[1, 2], activation='gelu')\n"
        "acc: float = r.best_test_accuracy\n"
        "rs = train_ensemble([task, task], [1.0, 0.5], 0, width=8, steps=3, backend='cpu')\n"
        "lim = lazy_limit(task, 'regression', solver='dense')\n"
        "run(Grid(gamma=[1.0], L=4), 'mlp', 'x.jsonl', 'serial')\n"))
    assert status == 0, report


@pytest.mark.parametrize("call,error", [
    ("train(task, 1.0, width='8', steps=3)", "arg-type"),
    ("train(task, 1.0, width=8, steps=3, wdth=3)", "call-arg"),
    ("train_ensemble(task, 1.0, 0, width=8, steps=3, backend='gpu')", "arg-type"),
    ("lazy_limit(task, 'logistic')", "arg-type"),
    ("train(task, 1.0, width=8, steps=3).best_test_acc", "attr-defined"),
    ("run(Grid(gamma=[1.0]), 'mlp', 3)", "arg-type"),
])
def test_a_wrong_call_is_caught_by_the_checker(tmp_path, call, error):
    status, report = check_snippet(tmp_path, call + "\n")
    assert status == 1 and f"[{error}]" in report, report


def test_the_typed_settings_are_the_declared_ones():
    typed = typing.get_type_hints(_types.TrainingSettings)
    assert set(typed) == set(TRAINING)              # every setting typed, none other
    assert set(_types.TrainOptions.__annotations__) | {"width", "steps"} == \
        set(TRAINING) | {"backend", "dtype", "path", "batches", "progress"}
    assert typing.get_args(typed["init"]) == INITS
    assert typing.get_args(Method) == METHODS == LAZY_LIMIT["method"].choices
    assert typing.get_args(_types.BackendName) == BACKENDS
    assert typing.get_args(_types.PathName) == PATHS


def test_type_checkers_see_every_lazily_loaded_name():
    """fastsd loads its public names on first use (``fastsd.__getattr__``); its
    ``TYPE_CHECKING`` imports give a checker the same names from the same modules."""
    import ast

    import fastsd

    tree = ast.parse((ROOT / "fastsd" / "__init__.py").read_text())
    block = next(n for n in tree.body if isinstance(n, ast.If)
                 and getattr(n.test, "id", None) == "TYPE_CHECKING")
    seen = {a.name: "fastsd" + ("." + imp.module if imp.module else "")
            for imp in block.body for a in imp.names}
    loaded = {name: getattr(fastsd, name).__module__ for name in fastsd._LAZY}
    assert set(seen) == set(fastsd._LAZY)
    for name, (module, attr) in fastsd._LAZY.items():
        assert attr == name and seen[name] == module, name
    assert all(loaded[n].startswith(seen[n]) for n in seen)
