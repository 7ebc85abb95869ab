"""fastsd's threads: the team (fastsd._threads) and the GEMM in fixed blocks (fastsd._gemm).

The GEMM is checked against NumPy's float64 product over shapes, layouts (C, F,
slices, transposed views), alpha and beta; its bits against itself under 1, 2
and 3 threads; the team for parts run once each, errors, nesting and callers
that arrive together.
"""
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastsd import _gemm, _threads, thread_limit


def _array(rng, shape, dtype, layout):
    """An array of ``shape`` in one of the layouts the engines use."""
    r, c = shape
    if layout == "C":
        return rng.standard_normal((r, c)).astype(dtype)
    if layout == "F":
        return np.asfortranarray(rng.standard_normal((r, c)).astype(dtype))
    if layout == "rows":          # a slice of columns: rows apart by more than c
        return rng.standard_normal((r, c + 3)).astype(dtype)[:, 1:c + 1]
    return rng.standard_normal((c, r)).astype(dtype).T     # "T": a transposed C array


layouts = st.sampled_from(["C", "F", "rows", "T"])


@settings(max_examples=60, deadline=None)
@given(r=st.integers(1, 300), c=st.integers(1, 300), k=st.integers(1, 80),
       dtype=st.sampled_from([np.float32, np.float64]), lo=layouts, la=layouts, lb=layouts,
       alpha=st.sampled_from([1.0, -0.37, 2.5]), beta=st.sampled_from([0.0, 1.0, -0.5]),
       seed=st.integers(0, 2**16))
def test_gemm_equals_numpy(r, c, k, dtype, lo, la, lb, alpha, beta, seed):
    rng = np.random.default_rng(seed)
    out, a, b = (_array(rng, (r, c), dtype, lo), _array(rng, (r, k), dtype, la),
                 _array(rng, (k, c), dtype, lb))
    want = alpha * (a.astype(np.float64) @ b.astype(np.float64)) + beta * out
    _gemm.gemm_into(out, a, b, alpha, beta)
    scale = np.abs(a).astype(np.float64) @ np.abs(b) * abs(alpha) + abs(beta) * np.abs(want)
    eps = np.finfo(dtype).eps
    assert np.all(np.abs(out - want) <= 4 * (k + 2) * eps * (scale + 1e-300))


def test_gemm_refuses_mismatched_operands():
    with pytest.raises(ValueError, match="shapes or dtypes"):
        _gemm.Gemm(np.zeros((3, 4), np.float32), np.zeros((3, 2), np.float32),
                   np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="shapes or dtypes"):
        _gemm.Gemm(np.zeros((3, 4), np.float32), np.zeros((3, 2), np.float64),
                   np.zeros((2, 4), np.float32))


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 5000), cols=st.integers(1, 5000), inner=st.integers(1, 2000))
def test_blocks_cover_the_output_aligned(rows, cols, inner):
    axis, edges = _gemm.blocks(rows, cols, inner)
    length = rows if axis == 0 else cols
    assert length == max(rows, cols)
    assert edges[0] == 0 and edges[-1] == length
    assert all(b > a for a, b in zip(edges, edges[1:]))
    assert all(e % _gemm.ALIGN == 0 for e in edges[:-1])
    assert len(edges) - 1 <= _gemm.MAX_BLOCKS


@pytest.mark.parametrize("shape", [(128, 2048, 128), (1024, 128, 512), (96, 1000, 96),
                                   (1000, 1000, 1000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gemm_bits_do_not_depend_on_threads(shape, dtype):
    # (1000, 1000, 1000) float32: 65% of entries differed between 1 and 2 OpenBLAS threads
    # on its Haswell kernel (2-core AMD EPYC)
    r, c, k = shape
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((r, k)).astype(dtype), rng.standard_normal((k, c)).astype(dtype)
    outs = []
    for n in (1, 2, 3):
        out = np.ones((r, c), dtype)
        with thread_limit(n):
            _gemm.gemm_into(out, a, b, -0.5, 1.0)
        outs.append(out)
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])


@pytest.mark.parametrize("nthreads", [1, 2, 4])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 100])
def test_team_runs_every_part_once(nthreads, n):
    seen = []
    lock = threading.Lock()

    def part(i):
        with lock:
            seen.append(i)

    _threads._team.run(part, n, nthreads)
    assert sorted(seen) == list(range(n))


def test_team_raises_a_parts_error_after_the_claimed_parts():
    done = []

    def part(i):
        if i == 3:
            raise KeyError("part 3")
        done.append(i)

    with pytest.raises(KeyError, match="part 3"):
        _threads._team.run(part, 10, 2)
    _threads._team.run(done.append, 4, 2)          # the team still works afterwards
    assert sorted(done[-4:]) == [0, 1, 2, 3]


def test_team_nested_and_concurrent_calls_run_every_part():
    counts = np.zeros((4, 6, 5), int)

    def inner(caller, i):
        def part(j):
            counts[caller, i, j] += 1
        _threads._team.run(part, 5, 2)

    def caller(c):
        _threads._team.run(lambda i: inner(c, i), 6, 2)

    workers = [threading.Thread(target=caller, args=(c,)) for c in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert np.all(counts == 1)


def test_thread_limit_refuses_bad_counts():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="`threads` must be an integer >= 1"):
            with thread_limit(bad):
                pass


def test_threads_follow_the_limit():
    with thread_limit(1):
        assert _threads.threads() == 1
    with thread_limit(np.int64(1)):                # any integer type
        assert _threads.threads() == 1
    assert 1 <= _threads.threads() <= _threads.cpu_count()


def test_a_scan_worker_loads_no_numba_before_its_thread_variables_are_set():
    """A local worker unpickles ``run_group`` and ``_worker_init`` (importing fastsd.scan),
    then sets NUMBA_NUM_THREADS for its share of the cores. Numba reads it when imported:
    loaded earlier (fastsd.scan.plans had imported fastsd._probe, which imported
    fastsd._jitcache and with it Numba), its thread pool and the variable disagreed, and the
    first kernel compiled in a worker raised "Cannot set NUMBA_NUM_THREADS to a different
    value once the threads have been launched": every cell of Fig. 3 quick failed on the
    first run after an edit of fastsd."""
    import subprocess
    import sys

    code = ("import sys, pickle\n"
            "from fastsd.scan import executors\n"
            "pickle.loads(pickle.dumps((executors.run_group, executors._worker_init)))\n"
            "import fastsd.scan, fastsd.reproduce\n"
            "print(sorted(m for m in ('numba', 'scipy') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]", out
