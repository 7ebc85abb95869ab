"""This machine's speed against the machine the shipped prices were fitted on, and its load.

The shipped time models (the MLP's prices, the lazy limit's and the Bayes part's)
were fitted on one reference machine. On another CPU the same work runs at other
rates, and kinds of work do not change alike (a CPU's vector width moves its
matrix products far more than its scalar code). Each family owns its time model and its probe: a function that
measures, now, this machine's seconds over the reference machine's for each
kind of its work (the MLP times its engine for "gemm" and "scalar"; the lazy
limit times its kernel entries for "entries"). This ground floor, which imports
no family, keeps what they share:

- ``factors``: a family's factors, cached in ``<cache root>/probe.v6.json``
  (``fastsd._jitcache.cache_root``) with one entry per family and machine key
  (``machine_key``: CPU model, cores, fastsd, the family's sources, NumPy,
  SciPy, Numba), so a probe runs once a machine and checkout and another
  checkout's entry is kept beside it;
- the generic rates any family may name, measured here with NumPy alone
  (``generic``): "gemm64", float64 BLAS multiply-adds (``float64_gemm_seconds``),
  and "numpy", NumPy's element-wise and memory-bound work (``numpy_seconds``),
  against the reference machine's seconds in ``probe_references.json``;
- ``clock``: every probe times the calling thread's CPU time, not the wall
  clock, so a busy machine, whose other processes take the cores in turns,
  does not read as a slow one;
- ``correction``: the runs' own measured CPU seconds against their predicted
  ones (``record``, at the end of each scan), by family; a model that keeps
  predicting too short or too long is corrected by their ratio (the median of
  the latest runs', once there are three);
- ``busy_cores``: the cores other processes keep busy now, which a prediction of
  wall time (not of work) must share (``slowdown``).

``FASTSD_COSTS=fallback`` (the tests) keeps the prices as fitted: factors of 1,
no correction, no load.
"""
import hashlib
import json
import math
import os
import statistics
import time

from . import __version__
from ._pricing import table

#: Version of the cache file's layout: entries per family and machine key, with the runs'
#: feedback (format 5 held the factors of all families in one entry per machine key).
FORMAT = 6
#: The probe's clock: the calling thread's CPU time, where every probe runs (one thread),
#: so that time spent waiting for a core another process holds is not read as slowness.
clock = time.thread_time
#: The factors a cached file may hold; outside them (a damaged file) the probe runs again.
LIMITS = (0.05, 20.0)
#: The generic rates' seconds on the reference machine (``probe_references.json``).
REFERENCES = table("fastsd", "probe_references.json")
#: The kinds ``generic`` measures.
GENERIC = ("gemm64", "numpy")
#: Runs whose measured / predicted CPU seconds ``correction`` takes the median of (the
#: latest), the fewest it needs (so that one odd run, e.g. the first after an edit, which
#: compiles the kernels, does not set it), the least predicted seconds a run must have to
#: count, and the range a correction stays in.
FEEDBACK_RUNS = 8
FEEDBACK_MIN_RUNS = 3
FEEDBACK_MIN_SECONDS = 2.0
CORRECTION_LIMITS = (0.25, 4.0)


def _off(environ):
    return environ.get("FASTSD_COSTS") == "fallback"


def float64_gemm_seconds(repeats=3):
    """Seconds a flop of float64 GEMMs on one thread, in the lazy flow's shapes.

    A product of ``fastsd.kernels.kron.KronFactors`` at ``probe_references.json``'s
    ``float64_gemm_shape`` (L = 384, R = 27): (R L x L) @ (L x L), then
    (L x R L) @ (R L x L), 4 R L^3 flops; the fastest of ``repeats``. The caller
    sets the threads.
    """
    import numpy as np

    L, R = REFERENCES["float64_gemm_shape"]
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


def numpy_seconds(repeats=3):
    """Seconds an element of NumPy's memory-bound and element-wise work on one thread.

    On R x L x L float64 (``float64_gemm_shape``): the rearranging copy of a
    Kronecker product's intermediate, an exp in place and as many normal draws;
    the fastest of ``repeats``.
    """
    import numpy as np

    L, R = REFERENCES["float64_gemm_shape"]
    x = np.full((R, L, L), 0.5)
    rng = np.random.default_rng(0)
    best = float("inf")
    for _ in range(repeats):
        start = clock()
        y = x.transpose(1, 0, 2).copy()
        np.exp(y, out=y)
        rng.standard_normal(R * L * L)
        best = min(best, clock() - start)
    return best / (R * L * L)


def generic(repeats=3):
    """The generic factors, now: {"gemm64", "numpy"}, this machine's seconds over the
    reference machine's (> 1 where it is slower; at least ``LIMITS[0]``), on one thread.

    The two take turns, ``repeats`` rounds, the fastest of each kept.
    """
    from ._threads import thread_limit

    gemm64 = numpy = math.inf
    with thread_limit(1):
        for _ in range(repeats):
            gemm64 = min(gemm64, float64_gemm_seconds(repeats=1))
            numpy = min(numpy, numpy_seconds(repeats=1))
    return {"gemm64": max(gemm64 / REFERENCES["float64_gemm"], LIMITS[0]),
            "numpy": max(numpy / REFERENCES["numpy"], LIMITS[0])}


def machine_key(sources, **extra):
    """What a family's factors depend on: CPU, cores, fastsd and the family's ``sources``
    (``fastsd._jitcache.source_hash``'s parts), NumPy, SciPy, Numba; ``extra`` entries
    added. A cached entry is used only where all are equal."""
    import numba
    import numpy as np
    import scipy

    from . import _jitcache
    from ._threads import cpu_count, cpu_model

    return {**extra, "cpu": cpu_model(), "cores": cpu_count(), "fastsd": __version__,
            "sources": _jitcache.source_hash(parts=tuple(sources)),
            "numpy": np.__version__, "scipy": scipy.__version__, "numba": numba.__version__}


def cache_path(environ=None):
    """The file of the cached probes: ``<cache root>/probe.v<FORMAT>.json``, a file per
    layout, so that a checkout of another layout sharing the cache root keeps its own (one
    of format 5 and one of format 6 had each rewritten the other's file as damaged)."""
    from . import _jitcache     # (it loads Numba: not at import, see tests/test_threads.py)

    return os.path.join(_jitcache.cache_root(environ), f"probe.v{FORMAT}.json")


_MEMO = {}


def _entry_id(family, key):
    """The cache entry's name for a family and machine key: a hash of their JSON."""
    text = json.dumps([family, key], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _entries(path):
    """The cached entries of ``path`` ({} for a missing, damaged or older file)."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return {}
    ok = isinstance(data, dict) and data.get("format") == FORMAT
    return data["entries"] if ok and isinstance(data.get("entries"), dict) else {}


def _valid(entry, family, key, kinds):
    return (isinstance(entry, dict) and entry.get("family") == family
            and entry.get("machine") == key and isinstance(entry.get("factors"), dict)
            and all(isinstance(entry["factors"].get(k), float)
                    and LIMITS[0] <= entry["factors"][k] <= LIMITS[1] for k in kinds))


def _update(path, ident, change):
    """Apply ``change`` to the entry ``ident`` of ``path`` (read again, written whole and
    atomically: another process may have added one); nothing on a read-only cache."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        entries = _entries(path)
        entries[ident] = change(entries.get(ident))
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"format": FORMAT, "entries": entries}, fh, indent=1)
        os.replace(tmp, path)
    except OSError:             # a read-only cache: measure again in the next process
        pass


def factors(family, measure, key, kinds, environ=None):
    """This machine's seconds over the reference machine's, by kind of a family's work.

    Cached per family and machine key (``cache_path``: one entry for each, so that two
    checkouts, versions or machines sharing a cache keep their own), else measured and
    added.

    Parameters
    ----------
    family : str
        Whose factors ("mlp", "kernels", "bayes").
    measure : callable
        Returns the factors, measured now (the family's probe).
    key : dict
        The machine's key (JSON-ready; ``machine_key``): the entry stored under it is used,
        no other.
    kinds : tuple of str
        The factors ``measure`` gives; a cached entry lacking one is measured again.
    environ : mapping, optional
        Environment variables (default ``os.environ``): ``FASTSD_COSTS``
        ("fallback": factors of 1) and those of the cache root.

    Returns
    -------
    dict of str to float
        One factor a kind: > 1 where this machine is slower.
    """
    environ = os.environ if environ is None else environ
    if _off(environ):
        return {k: 1.0 for k in kinds}
    path, ident = cache_path(environ), _entry_id(family, key)
    if (path, ident) in _MEMO:
        return _MEMO[path, ident]
    entry = _entries(path).get(ident)
    if _valid(entry, family, key, kinds):
        _MEMO[path, ident] = entry["factors"]
        return entry["factors"]
    got = {k: float(v) for k, v in measure().items()}
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    _update(path, ident, lambda old: {"family": family, "machine": key, "factors": got,
                                      "measured_at": stamp, "runs": []})
    _MEMO[path, ident] = got
    return got


def record(family, key, predicted, measured, environ=None):
    """Keep a run's predicted and measured CPU seconds in the family's entry (the latest
    ``FEEDBACK_RUNS``), for ``correction``.

    ``predicted`` is the family's prediction as it was given, the correction then in force
    included: it is taken out again, so that a kept run says how the probed prices alone
    did (and the correction does not feed on itself). Runs predicted under
    ``FEEDBACK_MIN_SECONDS`` are too short to tell, and nothing is kept without a probed
    entry or under ``FASTSD_COSTS=fallback``."""
    environ = os.environ if environ is None else environ
    predicted = float(predicted) / correction(family, key, environ)
    measured = float(measured)
    if _off(environ) or not (predicted >= FEEDBACK_MIN_SECONDS and measured > 0
                             and math.isfinite(measured)):
        return
    path, ident = cache_path(environ), _entry_id(family, key)

    def add(entry):
        if entry is None:
            raise _NoEntry
        runs = [r for r in entry.get("runs", []) if isinstance(r, list) and len(r) == 2]
        return dict(entry, runs=(runs + [[predicted, measured]])[-FEEDBACK_RUNS:])
    try:
        _update(path, ident, add)
    except _NoEntry:
        pass


class _NoEntry(Exception):
    """No probed entry to add a run to."""


def correction(family, key, environ=None):
    """The factor a family's predictions are multiplied by: the median of the kept runs'
    measured over predicted CPU seconds (``record``), within ``CORRECTION_LIMITS``; 1 with
    fewer than ``FEEDBACK_MIN_RUNS`` runs."""
    environ = os.environ if environ is None else environ
    if _off(environ):
        return 1.0
    entry = _entries(cache_path(environ)).get(_entry_id(family, key)) or {}
    runs = [r for r in entry.get("runs", ()) if isinstance(r, list) and len(r) == 2
            and all(isinstance(x, float) and math.isfinite(x) and x > 0 for x in r)]
    if len(runs) < FEEDBACK_MIN_RUNS:
        return 1.0
    ratio = statistics.median(m / p for p, m in runs)
    return min(max(ratio, CORRECTION_LIMITS[0]), CORRECTION_LIMITS[1])


def scale(prices, f, kinds, other="scalar"):
    """``prices`` (unit -> seconds on the reference machine) for this machine.

    Parameters
    ----------
    prices : dict of str to float
    f : dict
        The machine's factors (``factors``).
    kinds : dict of str to str
        The kind of each unit that is not ``other``.
    other : str, default "scalar"
        The kind of the units ``kinds`` does not name.

    Returns
    -------
    dict of str to float
    """
    return {unit: value * f[kinds.get(unit, other)] for unit, value in prices.items()}


#: A reading of ``busy_cores`` is reused for this many seconds (a dry run of several
#: figures plans each, and the whole).
BUSY_REUSE = 5.0
_BUSY = {}


def busy_cores(interval=0.5, environ=None):
    """Cores' worth of CPU that other processes used over the next ``interval`` seconds, on
    the cores this process may run on (0 under ``FASTSD_COSTS=fallback``). The caller is
    asleep meanwhile, so what is busy is not its own work. A reading is reused for
    ``BUSY_REUSE`` seconds."""
    import psutil

    environ = os.environ if environ is None else environ
    if _off(environ):
        return 0.0
    last = _BUSY.get(interval)
    if last is not None and time.monotonic() - last[0] < BUSY_REUSE:
        return last[1]
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    per_cpu = psutil.cpu_percent(interval=interval, percpu=True)
    if cores is not None:
        per_cpu = [per_cpu[c] for c in cores if c < len(per_cpu)]
    busy = sum(per_cpu) / 100.0
    _BUSY[interval] = (time.monotonic(), busy)
    return busy


def slowdown(workers, busy, cores):
    """Wall time over CPU time of ``workers`` busy processes on ``cores`` shared with
    ``busy`` cores' worth of other work: each process gets cores / (workers + busy) of a
    core when they outnumber the cores, as a fair scheduler shares them."""
    return max(1.0, (workers + busy) / max(cores, 1))
