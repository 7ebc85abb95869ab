"""Predicted seconds of a lazy-limit cell: the logistic flow on solver "kron" (Fig. 1e).

A cell of the "lazy_limit" predictor with its defaults (``lazy_limit``,
method "logistic_flow", kernel "ntk", all L^2 pairs, solver "auto", which
takes "kron" from L = ``kron.AUTO_FLOW_MIN_L``) does, in counted units
(``cost_features``):

- "cell": the fixed work (task, symbol Gram, pair indices, records);
- "build": the kernel entries of the factorisation, L^2 for each of its
  ``kron_build_rows`` exact rows of the rearranged kernel (two per
  cross-approximation term, and ``kron.PROBES`` probes);
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
from .._pricing import predict
from ..mlp.costs import machine_factors
from .._validation import check_int
from .dynamics import POWER_ITERS
from .kron import TEST_TERMS, PROBES, TEST_CROSS_MIN_L

#: Laws of the counts known after a run, fitted by least squares on their logarithms, in
#: u = ln d and v = ln L: ln R and ln(ACA terms) = c0 + c1 u + c2 u^2 + c3 v + c4 u v; the
#: flow's steps beyond one a segment between evaluations, ln(1 + extra) = c0 + c1 u +
#: c2 u^2 + c3 v + c4 u v + c5 ln(SGD steps), clipped at 0 (a segment takes one step at
#: least; c5 >= 0, so a longer flow takes no fewer steps): 56 cells (d 8..16384, L 64..1024,
#: 5,000 and 25,000 steps, evaluations every 1,000); the test blocks' terms k (1,024 test
#: pairs a chunk), ln k = c0 + c1 u + c2 u^2: 7 cells (d 32..1024, L 384..512), where k
#: hardly changes with L. All from ``bench/bench_lazy_costs.py``.
COUNT_LAWS = {
    "terms": (6.8904, -1.0038, 0.0551, 0.0374, 0.0016),
    "aca_terms": (6.6819, -0.8883, 0.0481, 0.1408, -0.0059),
    "flow_steps": (-4.0654, 1.1081, 0.0318, 1.3293, -0.4312, 0.5035),
    "test_terms": (5.5220, -0.6746, 0.0390),
}

#: Seconds per unit of ``cost_features`` on the reference machine's rates, one thread (one
#: BLAS thread, float64, backend "cpu"), two cells at once on the 2 cores as the scan's
#: workers run them: each phase's units (``PHASES``) fitted to that phase's time in 35
#: timed cells (d 8..1024, L 64..512, 25,000 steps) by non-negative least squares on
#: relative error, each unit's count times its kind's probe factor (``UNIT_KINDS``), so
#: that the prices are the reference machine's. A product's GEMM flop comes out at 0.97 of
#: the probe's reference (``fastsd._probe.REFERENCE_FLOAT64_GEMM``) and a matrix-free test
#: entry at 1.06 of its (``REFERENCE_KERNEL_ENTRY``): the units count what takes the time.
PRICES = {"cell": 0.06774, "build": 1.006e-08, "aca": 1.697e-09, "gemm": 1.352e-11,
          "product": 4.924e-09, "vector": 2.079e-08, "test": 5.921e-09, "test_aca": 6.171e-09,
          "test_aca2": 2.069e-09, "cross": 2.038e-11, "inputs": 1.538e-08, "dots": 2.128e-11}
#: A float32 product's GEMM flop (``lazy_limit(dtype="float32")``): half the float64 price,
#: as measured side by side (``bench/bench_kron.py --dtypes``, AMD EPYC, d = 256: 2.10x at
#: L = 256, 1.99x at 512); scaled by the float64 probe factor as "gemm" is.
PRICES["gemm32"] = PRICES["gemm"] / 2.0
#: Where ``PRICES`` and ``COUNT_LAWS`` were measured.
MEASURED_ON = ("2-core Intel Xeon (AVX-512; count laws, 2026-12-03) and AMD EPYC (AVX2; "
               "prices and test-block terms, 2026-12-03)")


def evaluations(steps, eval_every):
    """Test evaluations of a flow: one after each ``eval_every`` steps and at the end."""
    return -(-steps // eval_every)


#: The range of d and L the laws were fitted on: outside it they are read at its edge
#: (measured R falls slowly with d, while the fitted quadratic in ln d would rise).
FITTED_D, FITTED_L = (8, 16384), (64, 1024)


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


def expected_counts(d, L, steps, eval_every):
    """The counts of a flow cell known only after its run, as ``COUNT_LAWS`` predict them.

    Parameters
    ----------
    d, L : int
        Symbol dimension and training symbols.
    steps, eval_every : int
        The flow's SGD steps of time and the steps between evaluations.

    Returns
    -------
    dict
        "kron_terms" (R), "kron_aca_terms", "kron_build_rows" (two per
        cross-approximation term and ``PROBES``), "flow_steps" (at least one a
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
    segments = evaluations(steps, eval_every)
    terms = min(float(L * L), max(1.0, math.exp(_law(COUNT_LAWS["terms"], d, L))))
    aca = min(float(L * L), max(terms, math.exp(_law(COUNT_LAWS["aca_terms"], d, L))))
    extra = math.expm1(max(0.0, _law(COUNT_LAWS["flow_steps"], d, L, math.log(steps))))
    flow_steps = segments + extra
    test_terms = min(float(L), max(1.0, math.exp(_law(COUNT_LAWS["test_terms"], d, L))))
    return {"kron_terms": terms, "kron_aca_terms": aca,
            "kron_build_rows": 2.0 * aca + min(PROBES, L * L), "flow_steps": flow_steps,
            "flow_products": 2.0 * POWER_ITERS + 1.0 + 4.0 * flow_steps,
            "kron_test_terms": test_terms}


def cost_features(d, L, *, steps, eval_every, n_test, counts=None, dtype="float64"):
    """What a flow cell on solver "kron" does, in counted units (module notes).

    Parameters
    ----------
    d, L : int
    steps, eval_every, n_test : int
        As ``lazy_limit``.
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
    c = {**expected_counts(d, L, steps, eval_every), **(counts or {})}
    L2 = float(L * L)
    R, products, k = c["kron_terms"], c["flow_products"], c["kron_test_terms"]
    pairs = float(evaluations(steps, eval_every) * n_test)
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
                8 * M * (2 * buffers + factors) + min(64 << 20, 8 * M * PROBES))   # probes
    blocks = min(256 << 20, 16 * TEST_TERMS * L * n_test) if L >= TEST_CROSS_MIN_L else 0
    flow = 16 * c["kron_terms"] * M + 8 * M + blocks
    needs = memory_needs(L, 2 * d, "logistic_flow", "all", M, n_test, None, 1, 2)
    return int(max(build, flow) + sum(n.nbytes for n in needs))


def modelled(settings):
    """Whether a "lazy_limit" cell's time is modelled: the logistic flow of the NTK over all
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
    if s["method"] != "logistic_flow" or s["kernel"] != "ntk" or s["pairs"] != "all":
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


def predicted_seconds(d, L, *, steps, eval_every, n_test, dtype="float64"):
    """Predicted seconds of one flow cell on solver "kron" on one thread (``cost_features``
    at ``expected_counts``, times ``PRICES``)."""
    return predict(prices(), cost_features(d, L, steps=steps, eval_every=eval_every,
                                           n_test=n_test, dtype=dtype))


#: The kind of each unit of ``cost_features`` that is not "scalar" work (``fastsd._probe``):
#: float64 GEMM multiply-adds (the products, the test blocks' logits) and kernel entries
#: (the factors' rows, the matrix-free test logits, the test blocks' rows and columns).
UNIT_KINDS = {"gemm": "gemm64", "gemm32": "gemm64", "cross": "gemm64", "build": "entries",
              "test": "entries", "test_aca": "entries"}


def prices(environ=None):
    """``PRICES`` scaled to this machine (``fastsd._probe``; as fitted under
    ``FASTSD_COSTS=fallback``)."""
    return _probe.scale(PRICES, machine_factors(environ), UNIT_KINDS)


def describe():
    """One line on where the lazy limit's prices come from, for ``--dry-run``."""
    f = machine_factors()
    return (f"lazy limit: shipped prices and count laws measured on {MEASURED_ON}, scaled "
            f"to this machine by its probe (float64 GEMM x{f['gemm64']:.2f}, kernel entries "
            f"x{f['entries']:.2f}, other x{f['scalar']:.2f})")


__all__ = ["COUNT_LAWS", "PHASES", "PRICES", "UNIT_KINDS", "cost_features", "describe",
           "evaluations", "expected_counts", "memory_bytes", "modelled", "predicted_seconds",
           "prices"]
