"""Every compiled entry point frees what Numba's runtime allocated for it.

Numba's runtime (NRT) counts the arrays its compiled code allocates and frees
(``rtsys.get_allocation_stats``, counting switched on here). Each entry point runs once
to compile and fill its caches, then again between two readings of the counts, its result
dropped and collected: the second call must free exactly as many allocations as it made
(and have made some, so that the reading cannot pass by counting nothing). A leak of a
buffer per call, or an array kept alive by a cache that grows, fails here.

``.ci/run`` runs this file with the rest of the suite a second time under a checking
allocator (glibc's small-block cache off, freed memory overwritten), where a kernel that
reads memory it has freed gets garbage instead of the old values.
"""
import gc

import pytest
from numba.core.runtime import _nrt_python, rtsys

import fastsd
from fastsd import PSVRT, Pentomino, SameDifferent

SMALL = dict(width=32, steps=40, eval_every=20, n_test=64, batch_size=16)


@pytest.fixture(scope="module", autouse=True)
def nrt_stats():
    was = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    yield
    if not was:
        _nrt_python.memsys_disable_stats()


def balance(fn):
    """(allocations, frees) of Numba's runtime over a second call of fn, result dropped."""
    fn()
    gc.collect()
    before = rtsys.get_allocation_stats()
    result = fn()
    del result
    gc.collect()
    after = rtsys.get_allocation_stats()
    return {name: getattr(after, name) - getattr(before, name)
            for name in ("alloc", "free", "mi_alloc", "mi_free")}


def symbols():
    return SameDifferent(d=12, L=6, seed=1)


def psvrt():
    return PSVRT(patch=3, n_patches=3, n_train_patterns=40, seed=2)


def pentomino():
    return Pentomino(width=2, n_train_shapes=10, blur=0.5, seed=3)


ENTRY_POINTS = {
    "train dense": lambda: fastsd.train(symbols(), 1.0, seed=0, backend="cpu", path="dense",
                                        **SMALL),
    "train symbol": lambda: fastsd.train(symbols(), 1.0, seed=0, backend="cpu", path="symbol",
                                         **SMALL),
    "train sparse (cell GEMMs, PSVRT)": lambda: fastsd.train(
        psvrt(), 1.0, seed=0, backend="cpu", path="sparse", **SMALL),
    "train sparse (pixel rows, Pentomino)": lambda: fastsd.train(
        pentomino(), 1.0, seed=0, backend="cpu", path="sparse", **SMALL),
    "train_ensemble dense": lambda: fastsd.train_ensemble(
        symbols(), [1e-3, 1.0], [0, 1], backend="cpu", path="dense", **SMALL),
    "train_ensemble symbol": lambda: fastsd.train_ensemble(
        symbols(), [1e-3, 1.0], [0, 1], backend="cpu", path="symbol", **SMALL),
    "train_ensemble sparse (PSVRT)": lambda: fastsd.train_ensemble(
        psvrt(), [1e-3, 1.0], 0, backend="cpu", path="sparse", **SMALL),
    "train_ensemble sparse (Pentomino)": lambda: fastsd.train_ensemble(
        pentomino(), [1e-3, 1.0], 0, backend="cpu", path="sparse", **SMALL),
    "lazy_limit dense": lambda: fastsd.lazy_limit(
        SameDifferent(d=8, L=6, seed=4), solver="dense", steps=200, eval_every=100,
        n_test=64, backend="cpu"),
    "lazy_limit kron": lambda: fastsd.lazy_limit(
        SameDifferent(d=8, L=6, seed=4), solver="kron", steps=200, eval_every=100,
        n_test=64, backend="cpu"),
    "walkers": lambda: fastsd.walkers.simulate(L=5, batch_size=8, n_iters=20, n_walkers=6,
                                               seed=5, backend="cpu"),
}


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_entry_point_frees_what_it_allocates(name):
    got = balance(ENTRY_POINTS[name])
    print(f"{name}: {got}")
    assert got["mi_alloc"] > 0, f"{name}: no allocation counted, the reading proves nothing"
    assert got["alloc"] == got["free"] and got["mi_alloc"] == got["mi_free"], (name, got)


def test_the_reading_sees_an_array_kept_alive():
    """The harness itself: compiled arrays kept past the call count as allocated, not freed."""
    import numba
    import numpy as np

    @numba.njit
    def make(n):
        return np.ones(n)

    kept = []
    got = balance(lambda: kept.append(make(4)))
    assert got["alloc"] == got["free"] + 1 and got["mi_alloc"] == got["mi_free"] + 1
