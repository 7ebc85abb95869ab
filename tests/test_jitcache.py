"""fastsd's Numba cache is keyed on a kernel's sources (fastsd._jitcache): its module and
every fastsd module that module imports, directly or through others.

Numba alone checks only the file defining a cached kernel; the walkers' kernels compile
their reference's generator from another file, and once needed a hand-cleared
__pycache__ after it changed. Keyed on every source file of the package, any edit anywhere
(the CLI, a scan's cluster code) recompiled every kernel, some 40 s (issue 52).
"""
import shutil

import numba

from fastsd import _jitcache


def test_any_source_edit_names_another_cache(tmp_path):
    tree = tmp_path / "fastsd"
    shutil.copytree(_jitcache.PACKAGE, tree, ignore=shutil.ignore_patterns("__pycache__"))
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "nc")}
    first = _jitcache.cache_dir(env, tree)
    assert first.startswith(str(tmp_path / "nc")) and first == _jitcache.cache_dir(env, tree)
    ref = tree / "walkers" / "_reference.py"       # not the file that defines the kernels
    ref.write_text(ref.read_text() + "\n# an edit\n")
    assert _jitcache.cache_dir(env, tree) != first
    home = _jitcache.cache_dir({"XDG_CACHE_HOME": str(tmp_path / "xdg")}, tree)
    assert home.startswith(str(tmp_path / "xdg" / "fastsd" / "numba"))


def test_the_kernels_cache_there_and_the_users_setting_is_left_alone():
    from fastsd.mlp import _cpu_kernels
    from fastsd.walkers import _cpu as walkers_cpu

    before = numba.config.CACHE_DIR
    for kernel, module in ((_cpu_kernels.dense_fused, _cpu_kernels),
                           (walkers_cpu.simulate_into, walkers_cpu)):
        assert kernel._cache._cache_path.startswith(_jitcache.cache_dir(module=module.__file__))

    @_jitcache.njit
    def twice(x):
        return 2 * x

    assert twice(3) == 6 and numba.config.CACHE_DIR == before


def test_a_kernels_cache_moves_with_its_sources_and_only_with_them(tmp_path):
    tree = tmp_path / "fastsd"
    shutil.copytree(_jitcache.PACKAGE, tree, ignore=shutil.ignore_patterns("__pycache__"))
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "nc")}
    kernels = {m: tree / m for m in ("walkers/_cpu.py", "mlp/_cpu_kernels.py",
                                     "kernels/_cpu.py")}

    def dirs():
        return {m: _jitcache.cache_dir(env, tree, module=f) for m, f in kernels.items()}
    first = dirs()
    assert len(set(first.values())) == 3
    for name in ("cli.py", "scan/cluster.py", "mlp/training.py", "activations.py"):
        edit = tree / name                          # imported by no kernel module
        edit.write_text(edit.read_text() + "\n# an edit\n")
        assert dirs() == first, name
    ref = tree / "walkers" / "_reference.py"       # compiled into the walkers' kernels
    ref.write_text(ref.read_text() + "\n# an edit\n")
    second = dirs()
    assert second["walkers/_cpu.py"] != first["walkers/_cpu.py"]
    assert {m: d for m, d in second.items() if m != "walkers/_cpu.py"} == \
        {m: d for m, d in first.items() if m != "walkers/_cpu.py"}
    shared = tree / "_numerics.py"                  # inlined by the MLP and pair kernels
    shared.write_text(shared.read_text() + "\n# an edit\n")
    third = dirs()
    assert third["mlp/_cpu_kernels.py"] != second["mlp/_cpu_kernels.py"]
    assert third["kernels/_cpu.py"] != second["kernels/_cpu.py"]
    assert third["walkers/_cpu.py"] == second["walkers/_cpu.py"]


def test_the_import_closure_follows_every_kind_of_import(tmp_path):
    root = tmp_path / "fastsd"
    files = {
        "__init__.py": "",
        "a.py": "from . import b\nfrom .pkg.c import f\n",
        "b.py": "def g():\n    import fastsd.d\n",         # inside a function
        "d.py": "from fastsd.pkg import e\n",
        "pkg/__init__.py": "X = 1\n",
        "pkg/c.py": "from .. import b\nfrom . import X\n",  # a name of pkg/__init__
        "pkg/e.py": "import numpy\n",
        "lonely.py": "from . import a\n",                  # imports a; a does not import it
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    got = {p.relative_to(root).as_posix() for p in _jitcache.import_closure(root / "a.py", root)}
    assert got == {"a.py", "b.py", "d.py", "pkg/c.py", "pkg/e.py", "pkg/__init__.py"}
