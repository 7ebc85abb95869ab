"""fastsd's Numba cache is keyed on every source file of the package (fastsd._jitcache).

Numba alone checks only the file defining a cached kernel; the walkers' kernels compile
their reference's generator from another file, and once needed a hand-cleared
__pycache__ after it changed.
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
    for kernel in (_cpu_kernels.dense_fused, walkers_cpu.simulate_into):
        assert kernel._cache._cache_path.startswith(_jitcache._DIR)

    @_jitcache.njit
    def twice(x):
        return 2 * x

    assert twice(3) == 6 and numba.config.CACHE_DIR == before
