"""Every module the tests, examples and benchmarks import is installed by a declared extra.

A fresh machine installs exactly ``pip install -e ".[test]"`` (the README's
test command). A module that tests/ imports but that no requirement of
``fastsd[test]`` provides passes on a machine where it happens to be installed
and breaks collection everywhere else (mpmath did). This check reads the
requirements fastsd declares (install_requires and the test extra) from the
installed metadata and maps each imported top-level module to the
distributions that provide it: a module installed by hand, or only as some
other package's dependency, fails here.
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
    "neural_tangents": "a check in bench/bench_activations.py (neural-tangents 0.6.5 with jax "
                       "and jaxlib 0.4.30, tf2jax 0.3.6)",
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


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(name, extras=()):
    """Distributions ``name[extras]`` declares itself: its requirements, with what each
    requirement's own extras add (``dask[distributed]`` declares ``distributed``).

    A transitive dependency is not declared: an upstream release may drop it (tests that
    imported ``packaging`` passed only because pytest happened to need it).
    """
    def requires(dist, want):
        try:
            texts = md.requires(dist) or []
        except md.PackageNotFoundError:
            return []
        env = [{"extra": e} for e in want] or [{"extra": ""}]
        reqs = [Requirement(t) for t in texts]
        return [r for r in reqs if r.marker is None or any(r.marker.evaluate(e) for e in env)]

    found = {_norm(name)}
    for req in requires(name, tuple(extras)):
        found.add(_norm(req.name))
        if req.extras:
            base = {_norm(r.name) for r in requires(req.name, ())}
            found |= {_norm(r.name) for r in requires(req.name, tuple(req.extras))} - base
    return found


def _providers(module):
    dists = md.packages_distributions().get(module, [])
    return {_norm(d) for d in dists}


def test_the_test_extra_resolves_from_metadata():
    # The check below is only as good as this set: fastsd's own requirements and the
    # extra's, with what their extras add, but nothing they pull in themselves.
    declared = _declared("fastsd", ["test"])
    assert {"numpy", "numba", "pytest", "hypothesis", "mpmath", "packaging",
            "distributed"} <= declared
    assert "pluggy" not in declared                 # pytest's dependency, not ours


@pytest.mark.parametrize("folder", ["tests", "examples", "bench"])
def test_every_import_is_installed_by_the_test_extra(folder):
    declared = _declared("fastsd", ["test"])
    missing = []
    for module, where, top in _third_party_imports(folder):
        if module in OPTIONAL:
            continue
        if not _providers(module) & declared:
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


def test_the_docs_build_needs_only_the_docs_extra():
    # `pip install -e ".[docs]"` then sphinx-build (the README's third command): every module
    # docs/conf.py and its extensions import, and every extension and theme conf.py names,
    # comes from fastsd's requirements or the docs extra.
    pytest.importorskip("sphinx")
    import runpy

    declared = _declared("fastsd", ["docs"])
    local = {p.stem for p in (ROOT / "docs" / "_ext").glob("*.py")} | {"fastsd"}
    conf = runpy.run_path(str(ROOT / "docs" / "conf.py"))
    wanted = [(name.split(".")[0], f"docs/conf.py: extensions") for name in conf["extensions"]]
    wanted.append((conf["html_theme"], "docs/conf.py: html_theme"))
    # the build runs every example (the tutorials), so what they import is needed too
    for path in [ROOT / "docs" / "conf.py", *sorted((ROOT / "docs" / "_ext").glob("*.py")),
                 *sorted((ROOT / "examples").glob("*.py"))]:
        wanted += [(m, f"{path.relative_to(ROOT)}:{line}") for m, line, _ in _imports(path)
                   if m not in OPTIONAL]
    local |= {p.stem for p in (ROOT / "examples").glob("*.py")}
    missing = [f"{m} ({where}; provided by {sorted(_providers(m)) or 'nothing installed'})"
               for m, where in wanted
               if m not in local and m not in sys.stdlib_module_names
               and not _providers(m) & declared]
    assert not missing, "declare them in setup.cfg's docs extra: " + ", ".join(missing)
