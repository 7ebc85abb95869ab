"""Every module the tests, examples and benchmarks import is installed by a declared extra.

A fresh machine installs exactly ``pip install -e ".[test]"`` (the README's
test command). A module that tests/ imports but that no requirement of
``fastsd[test]`` provides passes on a machine where it happens to be installed
and breaks collection everywhere else (mpmath did). This check resolves the
requirement closure of ``fastsd[test]`` from the installed metadata and maps
each imported top-level module to the distributions that provide it, so a
module installed by hand but not declared fails here.
"""
import ast
import importlib.metadata as md
import pathlib
import re
import sys

import pytest
from packaging.requirements import Requirement

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: Modules imported only where present (inside a function, guarded by a skip or an
#: ImportError handler), and where a user gets them.
OPTIONAL = {
    "cupy": "the gpu extra (cupy-cuda12x)",
    "numba_cuda": "the gpu extra (numba-cuda)",
    "torch": "a peer in bench/ (pip install torch==2.13.0)",
    "torchvision": "CIFAR's VGG-16 features (README, visual tasks)",
    "jax": "a peer in bench/ (pip install jax jaxlib)",
}


def _local_modules():
    """Names that resolve to files of this checkout rather than to a distribution."""
    names = {"fastsd"}
    for folder in ("tests", "examples", "bench"):
        names |= {p.stem for p in (ROOT / folder).glob("*.py")}
    return names


def _imports(path):
    """``(module, line, at_module_level)`` for each absolute import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [(n.split(".")[0], node.lineno, id(node) in top) for n in names]
    return found


def _third_party_imports(folder):
    local, std = _local_modules(), set(sys.stdlib_module_names)
    for path in sorted((ROOT / folder).glob("*.py")):
        for module, line, top in _imports(path):
            if module not in std and module not in local:
                yield module, f"{folder}/{path.name}:{line}", top


def _closure(name, extras=()):
    """Lower-cased names of the distributions ``name[extras]`` installs, itself included."""
    seen, todo = set(), [(name, tuple(extras))]
    while todo:
        dist, want = todo.pop()
        key = re.sub(r"[-_.]+", "-", dist).lower()
        if (key, want) in seen:
            continue
        seen.add((key, want))
        try:
            requires = md.requires(dist) or []
        except md.PackageNotFoundError:
            continue
        for text in requires:
            req = Requirement(text)
            env = [{"extra": e} for e in want] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(e) for e in env):
                todo.append((req.name, tuple(req.extras)))
    return {key for key, _ in seen}


def _providers(module):
    dists = md.packages_distributions().get(module, [])
    return {re.sub(r"[-_.]+", "-", d).lower() for d in dists}


def test_the_test_extra_resolves_from_metadata():
    # The check below is only as good as the closure: it must hold the extra's
    # own requirements and what they pull in (pytest needs packaging).
    closure = _closure("fastsd", ["test"])
    assert {"numpy", "numba", "pytest", "hypothesis", "mpmath", "packaging"} <= closure


@pytest.mark.parametrize("folder", ["tests", "examples", "bench"])
def test_every_import_is_installed_by_the_test_extra(folder):
    closure = _closure("fastsd", ["test"])
    missing = []
    for module, where, top in _third_party_imports(folder):
        if module in OPTIONAL:
            continue
        if not _providers(module) & closure:
            have = sorted(_providers(module)) or "nothing installed"
            missing.append(f"{module} ({where}; provided by {have})")
    assert not missing, ("imported but not installed by pip install -e '.[test]'; declare them "
                         "in setup.cfg's test extra: " + ", ".join(missing))


@pytest.mark.parametrize("folder", ["tests", "examples"])
def test_optional_modules_are_imported_only_where_guarded(folder):
    # At module level an optional import breaks collection on a machine without it.
    offenders = [f"{m} at {where}" for m, where, top in _third_party_imports(folder)
                 if m in OPTIONAL and top]
    assert not offenders, f"optional modules imported at module level: {offenders}"
