"""This machine's speed against the machine the shipped prices were fitted on.

The shipped time models (the MLP's ``FALLBACK_PRICES``, the lazy limit's and the
Bayes part's ``PRICES``) were fitted on one development machine. On another
CPU the same work runs at other rates, and GEMMs and scalar code do not change
alike (an AVX2 CPU multiplies float32 matrices at less than half an AVX-512
CPU's rate while its scalar code nearly keeps pace). ``factors()`` finds two
factors, this machine's time over the reference machine's:

"gemm"
    for BLAS multiply-adds (the units a model names as its ``GEMM_UNITS``);
"scalar"
    for everything else (compiled kernels, NumPy, Python);
"gemm64"
    for float64 BLAS multiply-adds (the lazy limit's kernel products and test
    blocks, the Bayes-optimal distances): ``float64_gemm_seconds`` times the
    lazy flow's two product GEMMs against ``REFERENCE_FLOAT64_GEMM``, their
    seconds a flop on the reference machine;
"entries"
    for the lazy limit's kernel entries (the arc-cosine NTK formula, compiled):
    ``kernel_entry_seconds`` times the matrix-free test logits against
    ``REFERENCE_KERNEL_ENTRY``.

``fastsd.mlp.costs.probe`` times the MLP's real engine (``step_timer``, one thread)
at its ``PROBES``: dense steps, where the GEMMs weigh most, and symbol-path steps,
where scalar code does. The shipped float32 prices predict each on the
reference machine (where they were fitted, within a few percent), split into
their GEMM and other units; the two factors fit measured = f_gemm x GEMM part
+ f_scalar x other part over the probes (non-negative least squares on relative
error, as the prices were fitted); between its rounds it times the float64
product (``float64_gemm_seconds``) and the kernel entries
(``kernel_entry_seconds``), the fastest of the rounds kept. About a second once
the kernels are loaded.

A price is then scaled by the factor of its unit's kind (``scale``): a float32 model's
GEMM units by "gemm", a float64 model's by "gemm64", kernel entries by "entries", the other
units by "scalar". The factors are
cached in ``<cache root>/probe.json`` (``fastsd._jitcache.cache_root``), one entry per
machine key (the MLP calibration's: CPU model, cores, fastsd's engines, NumPy,
SciPy, Numba), so the probe runs once a machine and checkout, and another checkout's
entry is kept beside it. Every probe times the calling thread's CPU time (``clock``),
not the wall clock: a busy machine, whose other processes take the cores in turns,
does not read as a slow one. ``FASTSD_COSTS=fallback`` (the
tests) keeps the prices as fitted: factors of 1.
"""
import hashlib
import json
import os
import time

from . import _jitcache

#: Version of the cache file's layout: one entry per machine key (format 4 held one).
FORMAT = 5
#: The probe's clock: the calling thread's CPU time, where every probe runs (one thread),
#: so that time spent waiting for a core another process holds is not read as slowness.
clock = time.thread_time
KINDS = ("gemm", "scalar", "gemm64", "entries")
#: The factors a cached file may hold; outside them (a damaged file) the probe runs again.
LIMITS = (0.05, 20.0)


#: Seconds a flop of the lazy flow's float64 product GEMMs (``float64_gemm_seconds``) on the
#: reference machine, one thread (72 GFLOP/s: the rate fitted to its lazy-limit cells).
REFERENCE_FLOAT64_GEMM = 1.392e-11
#: Seconds a kernel entry of the matrix-free test logits (``kernel_entry_seconds``) on the
#: reference machine, one thread (fitted to its lazy-limit cells below
#: ``fastsd.kernels.kron.TEST_CROSS_MIN_L``, where they are most of the time).
REFERENCE_KERNEL_ENTRY = 5.596e-09
#: The test logits timed: n test pairs against the L^2 pairs of L symbols in d dimensions.
KERNEL_ENTRY_SHAPE = (96, 128, 32)
#: The product timed: L = 384 symbols, R = 27 Kronecker terms (the count law's at d = 256).
FLOAT64_GEMM_SHAPE = (384, 27)


def float64_gemm_seconds(repeats=3):
    """Seconds a flop of float64 GEMMs on one thread, in the lazy flow's shapes.

    One product of ``fastsd.kernels.kron.KronFactors`` at ``FLOAT64_GEMM_SHAPE``:
    (R L x L) @ (L x L), then (L x R L) @ (R L x L), 4 R L^3 flops; the fastest of
    ``repeats``. About 0.1 s a repeat on an AVX2 core. The caller sets the threads.
    """
    import numpy as np

    L, R = FLOAT64_GEMM_SHAPE
    a = np.full((R * L, L), 0.5)
    c = np.full((L, L), 0.25)
    bh = np.full((R * L, L), 0.125)
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        x = a @ c
        xh = x.reshape(R, L, L).transpose(1, 0, 2).reshape(L, R * L)
        xh @ bh
        best = min(best, clock() - start)
    return best / (4.0 * R * L ** 3)


def kernel_entry_seconds(repeats=3):
    """Seconds a kernel entry on one thread: the matrix-free test logits of the lazy limit.

    The "cpu" backend's ``pair_kernel_matvec`` (the NTK of n test pairs against
    all L^2 training pairs times a vector) at ``KERNEL_ENTRY_SHAPE``, n L^2
    entries; the fastest of ``repeats``. About 30 ms a repeat on an AVX2 core. The
    caller sets the threads.
    """
    import numpy as np

    from .kernels.backend import KERNELS

    n, L, d = KERNEL_ENTRY_SHAPE
    cpu = KERNELS.load("cpu")[1]
    rng = np.random.default_rng(0)
    S, X1, X2 = (rng.standard_normal((k, d)) / np.sqrt(d) for k in (L, n, n))
    u, v = np.divmod(np.arange(L * L), L)
    norms = np.sum(S * S, axis=1)
    args = (X1 @ S.T, np.arange(n), X2 @ S.T, np.arange(n),
            np.sum(X1 * X1, axis=1) + np.sum(X2 * X2, axis=1), u, v, norms[u] + norms[v],
            np.ones((L * L, 1)))
    cpu.pair_kernel_matvec(*args)           # compiled or loaded, caches warm
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        cpu.pair_kernel_matvec(*args)
        best = min(best, clock() - start)
    return best / (n * L * L)


def cache_path(environ=None):
    """The file of the cached probe: ``<cache root>/probe.json``."""
    return os.path.join(_jitcache.cache_root(environ), "probe.json")


_MEMO = {}


def _entry_id(key):
    """The cache entry's name for a machine key: a hash of its JSON."""
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def _entries(path):
    """The cached entries of ``path`` ({} for a missing, damaged or older file)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    ok = isinstance(data, dict) and data.get("format") == FORMAT
    return data["entries"] if ok and isinstance(data.get("entries"), dict) else {}


def _valid(entry, key):
    return (isinstance(entry, dict) and entry.get("machine") == key
            and isinstance(entry.get("factors"), dict)
            and all(isinstance(entry["factors"].get(k), float)
                    and LIMITS[0] <= entry["factors"][k] <= LIMITS[1] for k in KINDS))


def factors(measure, key, environ=None):
    """This machine's seconds over the reference machine's, by kind of work.

    Cached per machine key (``cache_path``: one entry for each key, so that two checkouts,
    versions or machines sharing a cache keep their own), else measured and added.

    Parameters
    ----------
    measure : callable
        Returns the factors, measured now (``fastsd.mlp.costs.probe``).
    key : dict
        The machine's key (JSON-ready): the entry stored under it is used, no other.
    environ : mapping, optional
        Environment variables (default ``os.environ``): ``FASTSD_COSTS``
        ("fallback": factors of 1) and those of the cache root.

    Returns
    -------
    dict of str to float
        {"gemm", "scalar", "gemm64", "entries"}: > 1 where this machine is slower.
    """
    environ = os.environ if environ is None else environ
    if environ.get("FASTSD_COSTS") == "fallback":
        return {k: 1.0 for k in KINDS}
    path, ident = cache_path(environ), _entry_id(key)
    if (path, ident) in _MEMO:
        return _MEMO[path, ident]
    entry = _entries(path).get(ident)
    if _valid(entry, key):
        _MEMO[path, ident] = entry["factors"]
        return entry["factors"]
    got = measure()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        entries = _entries(path)            # read again: another process may have added one
        entries[ident] = {"machine": key, "factors": got,
                          "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"format": FORMAT, "entries": entries}, fh, indent=1)
        os.replace(tmp, path)
    except OSError:             # a read-only cache: measure again in the next process
        pass
    _MEMO[path, ident] = got
    return got


def scale(prices, f, kinds):
    """``prices`` (unit -> seconds on the reference machine) for this machine.

    Parameters
    ----------
    prices : dict of str to float
    f : dict
        The machine's factors (``factors``).
    kinds : dict of str to str
        The kind (``KINDS``) of each unit that is not "scalar": "gemm" for
        float32 BLAS multiply-adds (the MLP), "gemm64" for float64 ones (lazy
        limit, Bayes), "entries" for the lazy limit's kernel entries.

    Returns
    -------
    dict of str to float
    """
    return {unit: value * f[kinds.get(unit, "scalar")] for unit, value in prices.items()}
