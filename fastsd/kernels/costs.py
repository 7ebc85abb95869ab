"""Predicted seconds of a lazy-limit cell: the logistic flow on solver "kron" (Fig. 1e).

A cell of the "lazy_limit" predictor with its defaults (``lazy_limit``,
method "logistic_flow", kernel "ntk", all L^2 pairs, solver "auto", which
takes "kron" from L = ``kron.AUTO_FLOW_MIN_L``) does, in counted units
(``cost_features``):

- "cell": the fixed work (task, symbol Gram, pair indices, records);
- "build": the kernel entries of the factorisation, L^2 for each of its
  ``kron_build_rows`` exact rows of the rearranged kernel (two per
  cross-approximation term, and ``kron.ERROR_ROWS`` error rows);
- "aca": the cross approximation's work against the terms so far and the
  recompression's QR, (cross-approximation terms)^2 L^2;
- "gemm": the flow's kernel products, 4 R L^3 flops each (two GEMMs over the
  R Kronecker terms); "gemm32" the same in float32 (``dtype="float32"``);
- "product": the products' rearranging of the R L x L intermediate (R L^2 a
  product) and "vector", their diagonal correction and the step's vector
  updates (L^2 a product);
- "test": the test logits below ``kron.TEST_CROSS_MIN_L``, n_test L^2 kernel
  entries an evaluation (matrix-free);
- from ``kron.TEST_CROSS_MIN_L`` on, each test pair's L x L block is cross-
  approximated with k terms (all blocks of a chunk in lockstep, k the most any
  needs): "test_aca", its kernel entries, n_test L k an evaluation, and
  "test_aca2", its updates against the terms so far, n_test L k^2; "cross",
  the logits' GEMM, 2 n_test k L^2 flops;
- "inputs": the test pairs drawn, n_test x d an evaluation (fresh symbols);
- "dots": their dot products with the L symbols, n_test L d an evaluation,
  and the symbol Gram, L^2 d (these grow with d, the others do not).

The terms R, the cross-approximation terms, the test blocks' terms k and the
flow's steps are known only after the run; ``expected_counts`` predicts them
from d, L, the steps and the evaluations by laws fitted to measured cells
(``COUNT_LAWS``). ``PRICES`` are seconds per unit on the reference machine,
each fitted to the time of its own phase of the cell (``PHASES``, timed inside
measured cells), so that a unit's price means what it counts; on another
machine ``prices`` scales each unit by the factor of its kind (``UNIT_KINDS``:
float64 GEMM, kernel entries, other) in that machine's probe (``fastsd._probe``).
A rough estimate, for ``fastsd reproduce --dry-run`` and the scan's ETA; ``bench/bench_lazy_costs.py``
measures cells, refits both and prints the measured / predicted ratio of each.

Other settings (regression, kernel SGD, the NNGP kernel, sampled pairs, the
dense or matrix-free solvers) are not modelled: ``modelled`` says which are.
"""
import math

from .. import _probe
from .._pricing import predict, table
from .._validation import check_int
from ..schedules import Evaluations
from .dynamics import POWER_ITERS
from .kron import TEST_TERMS, ERROR_ROWS, TEST_CROSS_MIN_L

#: The shipped table (``prices.json`` beside this module, with its provenance): the prices,
#: the count laws, the range of d and L they were fitted on, and the reference machine's
#: seconds a kernel entry (``kernel_entry_seconds``).
TABLE = table("fastsd.kernels", "prices.json")
#: Laws of the counts known after a run (``expected_counts``), fitted to measured cells by
#: least squares on their logarithms, in u = ln d and v = ln L: ln R and ln(ACA terms) =
#: c0 + c1 u + c2 u^2 + c3 v + c4 u v; the flow's steps beyond one a segment between
#: evaluations, ln(1 + extra) = c0 + c1 u + c2 u^2 + c3 v + c4 u v + c5 ln(SGD steps),
#: clipped at 0 (a segment takes one step at least; c5 >= 0, so a longer flow takes no fewer
#: steps); the test blocks' terms k, ln k = c0 + c1 u + c2 u^2.
COUNT_LAWS = {k: tuple(v) for k, v in TABLE["count_laws"].items()}
#: Seconds per unit of ``cost_features`` on the reference machine's rates, one thread, each
#: phase's units fitted to that phase's time (``PHASES``); "gemm32", a float32 product's
#: flop, is half "gemm".
PRICES = dict(TABLE["prices"])
#: Where ``PRICES`` and ``COUNT_LAWS`` were measured.
MEASURED_ON = f"{TABLE['provenance']['machine']}, {TABLE['provenance']['measured']}"


def evaluations(steps, eval_every, eval_at=None):
    """Test evaluations of a flow: one after each ``eval_every`` steps, at the end and at the
    steps of ``eval_at`` (``fastsd.schedules.Evaluations``)."""
    return len(Evaluations(steps, eval_every, eval_at))


#: The range of d and L the laws were fitted on: outside it they are read at its edge
#: (measured R falls slowly with d, while the fitted quadratic in ln d would rise).
FITTED_D, FITTED_L = tuple(TABLE["fitted_d"]), tuple(TABLE["fitted_L"])


def _law(coef, d, L, *extra):
    u = math.log(min(max(d, FITTED_D[0]), FITTED_D[1]))
    v = math.log(min(max(L, FITTED_L[0]), FITTED_L[1]))
    terms = (1.0, u, u * u, v, u * v) + extra
    return sum(c * t for c, t in zip(coef, terms))


def _check(d, L, steps=1, eval_every=1, n_test=2):
    """The sizes as ``lazy_limit`` accepts them (d >= 1, L >= 2, steps and eval_every >= 1,
    n_test >= 2), as ints; a clear error naming the parameter otherwise."""
    return (check_int("d", d, 1), check_int("L", L, 2), check_int("steps", steps, 1),
            check_int("eval_every", eval_every, 1), check_int("n_test", n_test, 2))


def expected_counts(d, L, steps, eval_every, eval_at=None):
    """The counts of a flow cell known only after its run, as ``COUNT_LAWS`` predict them.

    Parameters
    ----------
    d, L : int
        Symbol dimension and training symbols.
    steps, eval_every : int
        The flow's SGD steps of time and the steps between evaluations.
    eval_at : None, "log", str or sequence of int
        Extra evaluation steps (``fastsd.schedules``): each ends a segment of the flow.

    Returns
    -------
    dict
        "kron_terms" (R), "kron_aca_terms", "kron_build_rows" (two per
        cross-approximation term and ``ERROR_ROWS``), "flow_steps" (at least one a
        segment between evaluations) and "flow_products" (``2 POWER_ITERS``, one
        for the start, four a step), as ``lazy_limit`` records them in
        ``solver_info``, and "kron_test_terms" (k: the terms of a chunk of test
        blocks from ``kron.TEST_CROSS_MIN_L`` on, at most L); floats.

    Raises
    ------
    ValueError, TypeError
        For d < 1, L < 2, steps < 1 or eval_every < 1, or a non-integer.
    """
    d, L, steps, eval_every, _ = _check(d, L, steps, eval_every)
    segments = evaluations(steps, eval_every, eval_at)
    terms = min(float(L * L), max(1.0, math.exp(_law(COUNT_LAWS["terms"], d, L))))
    aca = min(float(L * L), max(terms, math.exp(_law(COUNT_LAWS["aca_terms"], d, L))))
    extra = math.expm1(max(0.0, _law(COUNT_LAWS["flow_steps"], d, L, math.log(steps))))
    flow_steps = segments + extra
    test_terms = min(float(L), max(1.0, math.exp(_law(COUNT_LAWS["test_terms"], d, L))))
    return {"kron_terms": terms, "kron_aca_terms": aca,
            "kron_build_rows": 2.0 * aca + min(ERROR_ROWS, L * L), "flow_steps": flow_steps,
            "flow_products": 2.0 * POWER_ITERS + 1.0 + 4.0 * flow_steps,
            "kron_test_terms": test_terms}


def cost_features(d, L, *, steps, eval_every, n_test, eval_at=None, counts=None,
                  dtype="float64"):
    """What a flow cell on solver "kron" does, in counted units (module notes).

    Parameters
    ----------
    d, L : int
    steps, eval_every, n_test : int
        As ``lazy_limit``.
    eval_at : None, "log", str or sequence of int
        As ``lazy_limit``: extra evaluations.
    counts : dict, optional
        Counts of the run (its ``solver_info``: "kron_terms", "kron_aca_terms",
        "kron_build_rows", "flow_products"; "kron_test_terms" where measured):
        those given replace ``expected_counts``'.
    dtype : {"float64", "float32"}, default "float64"
        The products' arithmetic (``lazy_limit``'s ``dtype``): float32 products
        count their multiply-adds as "gemm32" instead of "gemm".

    Returns
    -------
    dict of str to float
        Counts by unit; each grows with L, the steps and n_test.

    Raises
    ------
    ValueError, TypeError
        For sizes ``lazy_limit`` refuses (d < 1, L < 2, steps, eval_every < 1, n_test < 2).
    """
    d, L, steps, eval_every, n_test = _check(d, L, steps, eval_every, n_test)
    c = {**expected_counts(d, L, steps, eval_every, eval_at), **(counts or {})}
    L2 = float(L * L)
    R, products, k = c["kron_terms"], c["flow_products"], c["kron_test_terms"]
    pairs = float(evaluations(steps, eval_every, eval_at) * n_test)
    cross = float(L >= TEST_CROSS_MIN_L)
    gemm = "gemm32" if dtype == "float32" else "gemm"
    return {"cell": 1.0, "build": c["kron_build_rows"] * L2,
            "aca": float(c["kron_aca_terms"]) ** 2 * L2,
            gemm: 4.0 * R * L2 * L * products, "product": R * L2 * products,
            "vector": L2 * products, "test": (1.0 - cross) * pairs * L2,
            "test_aca": cross * pairs * L * k, "test_aca2": cross * pairs * L * k * k,
            "cross": cross * 2.0 * pairs * k * L2,
            "inputs": pairs * d, "dots": pairs * L * d + L2 * d}


#: The phases of a flow cell that ``bench/bench_lazy_costs.py`` times inside it, and the
#: units of ``cost_features`` each phase's time is fitted to ("rest": the cell's wall
#: time less the others).
PHASES = {"factorise": ("build", "aca"), "products": ("gemm", "product"),
          "test_aca": ("test_aca", "test_aca2"), "test_gemm": ("cross",),
          "test_exact": ("test",), "rest": ("cell", "vector", "inputs", "dots")}


def memory_bytes(d, L, *, n_test):
    """Predicted peak bytes of a flow cell on solver "kron".

    The larger of the factorisation (the cross approximation's two buffers of
    16 terms doubled as they fill, with the recompression's QR of both factor
    sets, a copy LAPACK makes and the new factors; or with the new factors and
    a chunk of probed rows' approximation, at most 64 MiB) and what
    the flow holds (the
    stored factors, 16 R L^2 + 8 L^2 bytes, and from ``kron.TEST_CROSS_MIN_L``
    the test blocks' approximations, at most 256 MiB), plus what ``lazy_limit``
    checks against the memory available (pairs, Gram, test sets), at the
    counts ``expected_counts`` predicts.

    Parameters
    ----------
    d, L, n_test : int

    Returns
    -------
    int

    Raises
    ------
    ValueError, TypeError
        For d < 1, L < 2 or n_test < 2.
    """
    from .lazy import memory_needs

    d, L, _, _, n_test = _check(d, L, n_test=n_test)

    c = expected_counts(d, L, 1000, 1000)
    M = L * L
    aca = c["kron_aca_terms"]
    buffers = 16 * 2 ** max(0, math.ceil(math.log2(aca / 16)))
    factors = 2 * c["kron_terms"]
    build = max(8 * M * (2 * buffers + 3 * aca + factors),                 # recompression
                8 * M * (2 * buffers + factors) + min(64 << 20, 8 * M * ERROR_ROWS))   # probes
    blocks = min(256 << 20, 16 * TEST_TERMS * L * n_test) if L >= TEST_CROSS_MIN_L else 0
    flow = 16 * c["kron_terms"] * M + 8 * M + blocks
    needs = memory_needs(L, 2 * d, "logistic_flow", "all", M, n_test, None, 1, 2)
    return int(max(build, flow) + sum(n.nbytes for n in needs))


def modelled(settings):
    """Whether a "lazy_limit" cell's time is modelled: the logistic flow of ReLU's NTK over all
    pairs on solver "kron" (given, or "auto"'s choice at its L, d and default memory).

    Parameters
    ----------
    settings : dict
        The cell's settings, with d and L; the others default as ``fastsd.params.LAZY_LIMIT``
        declares them, and all are checked as a scan cell's are.

    Returns
    -------
    bool

    Raises
    ------
    ValueError, TypeError
        For a missing d or L, or a setting out of range (as ``LAZY_LIMIT.check``).
    """
    from .._memory import default_max_bytes
    from ..params import LAZY_LIMIT
    from .solvers import SolveSize, choose_solver

    if not isinstance(settings, dict):
        raise TypeError(f"`settings` must be a dict of a lazy_limit cell's settings; got "
                        f"{settings!r:.80}.")
    missing = [k for k in ("d", "L") if k not in settings]
    if missing:
        raise ValueError(f"`settings` must give `{missing[0]}`; got settings "
                         f"{', '.join(sorted(settings)) or 'none'}.")
    s = LAZY_LIMIT.check({**LAZY_LIMIT.defaults(), **settings})
    if s["method"] != "logistic_flow" or s["kernel"] != "ntk" or s["pairs"] != "all" \
            or s["activation"] != "relu":
        return False
    if s["solver"] != "auto":
        return s["solver"] == "kron"
    L = s["L"]
    size = SolveSize(P=L * L, L=L, all_pairs=True, max_bytes=default_max_bytes(),
                     method="logistic_flow", d=s["d"], dtype=s["dtype"])
    try:
        return choose_solver("auto", size).name == "kron"
    except ValueError:          # nothing fits: the cell fails when it runs
        return False


def predicted_seconds(d, L, *, steps, eval_every, n_test, eval_at=None, dtype="float64"):
    """Predicted seconds of one flow cell on solver "kron" on one thread (``cost_features``
    at ``expected_counts``, times ``PRICES``)."""
    return predict(prices(), cost_features(d, L, steps=steps, eval_every=eval_every,
                                           n_test=n_test, eval_at=eval_at, dtype=dtype))


#: The kind of each unit of ``cost_features`` that is not NumPy work ("numpy", ``fastsd._probe``):
#: float64 GEMM multiply-adds (the products, the test blocks' logits) and kernel entries
#: (the factors' rows, the matrix-free test logits, the test blocks' rows and columns).
UNIT_KINDS = {"gemm": "gemm64", "gemm32": "gemm64", "cross": "gemm64", "build": "entries",
              "test": "entries", "test_aca": "entries"}
#: The family's name in the probe's cache, the kinds of its factors, and the sources they
#: depend on (``fastsd._probe.machine_key``).
FAMILY = "kernels"
PROBE_KINDS = ("gemm64", "numpy", "entries")
SOURCES = ("kernels/", "_numerics.py", "_gemm.py", "_blas.py")


def kernel_entry_seconds(repeats=3):
    """Seconds a kernel entry on one thread: the matrix-free test logits of the lazy limit.

    The "cpu" backend's ``pair_kernel_matvec`` (the NTK of n test pairs against
    all L^2 training pairs times a vector) at ``TABLE["kernel_entry_shape"]``
    (n, L, d), n L^2 entries; the fastest of ``repeats``, by the thread's CPU time
    (``fastsd._probe.clock``). The caller sets the threads.
    """
    import numpy as np

    from .backend import KERNELS

    n, L, d = TABLE["kernel_entry_shape"]
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
        start = _probe.clock()
        cpu.pair_kernel_matvec(*args)
        best = min(best, _probe.clock() - start)
    return best / (n * L * L)


def probe(repeats=3):
    """This machine's factors for the lazy limit's kinds of work, now (``PROBE_KINDS``): the
    generic ones (``fastsd._probe.generic``) and its kernel entries against the reference
    machine's (``kernel_entry_seconds``), one thread, the fastest of ``repeats``."""
    from .._threads import thread_limit

    f = _probe.generic(repeats)
    with thread_limit(1):
        entries = kernel_entry_seconds(repeats)
    return dict(f, entries=max(entries / TABLE["kernel_entry"], _probe.LIMITS[0]))


def _key():
    return _probe.machine_key(SOURCES)


def machine_factors(environ=None):
    """This machine's factors (``PROBE_KINDS``), cached by ``fastsd._probe`` (measured once
    by ``probe``); 1 under ``FASTSD_COSTS=fallback``."""
    return _probe.factors(FAMILY, probe, _key(), PROBE_KINDS, environ)


def correction(environ=None):
    """The runs' feedback on the lazy limit's prices (``fastsd._probe.correction``)."""
    return _probe.correction(FAMILY, _key(), environ)


def record(predicted, measured, environ=None):
    """Keep a scan's predicted and measured CPU seconds of lazy-limit cells."""
    _probe.record(FAMILY, _key(), predicted, measured, environ)


def prices(environ=None):
    """``PRICES`` scaled to this machine by its probe and its runs' feedback (as fitted
    under ``FASTSD_COSTS=fallback``)."""
    c = correction(environ)
    f = {k: v * c for k, v in machine_factors(environ).items()}
    return _probe.scale(PRICES, f, UNIT_KINDS, other="numpy")


def describe():
    """One line on where the lazy limit's prices come from, for ``--dry-run``."""
    f, c = machine_factors(), correction()
    runs = f", its runs' feedback x{c:.2f}" if c != 1.0 else ""
    return (f"lazy limit: shipped prices and count laws measured on {MEASURED_ON}, scaled "
            f"to this machine by its probe (float64 GEMM x{f['gemm64']:.2f}, kernel entries "
            f"x{f['entries']:.2f}, NumPy x{f['numpy']:.2f}{runs})")


__all__ = ["COUNT_LAWS", "FAMILY", "PHASES", "PRICES", "PROBE_KINDS", "TABLE", "UNIT_KINDS",
           "correction", "cost_features", "describe", "evaluations", "expected_counts",
           "kernel_entry_seconds", "machine_factors", "memory_bytes", "modelled",
           "predicted_seconds", "prices", "probe", "record"]
