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
  R Kronecker terms);
- "vector": the products' O(L^2) work (diagonal correction, the step's
  vector updates), L^2 a product;
- "test": the test logits below ``kron.TEST_CROSS_MIN_L``, n_test L^2 kernel
  entries an evaluation (matrix-free);
- "cross": the same count from ``kron.TEST_CROSS_MIN_L`` on, where each test
  pair's block is cross-approximated (its GEMM, 2 k n_test L^2 flops with k
  about 10-20, dominates);
- "inputs": the test pairs drawn, n_test x d an evaluation (fresh symbols);
- "dots": their dot products with the L symbols, n_test L d an evaluation,
  and the symbol Gram, L^2 d (these grow with d, the others do not).

The terms R, the cross-approximation terms and the flow's steps are known only
after the run (``solver_info``); ``expected_counts`` predicts them from d, L,
the steps and the evaluations by laws fitted to measured cells (``COUNT_LAWS``).
``PRICES`` are seconds per unit, fitted on the development machine; both are
shipped, not calibrated per machine (a rough estimate, for ``fastsd reproduce
--dry-run`` and the scan's ETA). ``bench/bench_lazy_costs.py`` measures cells,
refits both and prints the measured / predicted ratio of each.

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

#: Laws of the counts known after a run, fitted by least squares on the logarithms of
#: 56 cells (``bench/bench_lazy_costs.py``: d 8..16384, L 64..1024, 5,000 and 25,000
#: steps, evaluations every 1,000), in u = ln d and v = ln L: ln R and
#: ln(ACA terms) = c0 + c1 u + c2 u^2 + c3 v + c4 u v; the flow's steps beyond one a
#: segment between evaluations, ln(1 + extra) = c0 + c1 u + c2 u^2 + c3 v + c4 u v
#: + c5 ln(SGD steps), clipped at 0 (a segment takes one step at least; c5 >= 0, so
#: a longer flow takes no fewer steps).
COUNT_LAWS = {
    "terms": (6.8904, -1.0038, 0.0551, 0.0374, 0.0016),
    "aca_terms": (6.6819, -0.8883, 0.0481, 0.1408, -0.0059),
    "flow_steps": (-4.0654, 1.1081, 0.0318, 1.3293, -0.4312, 0.5035),
}

#: Seconds per unit of ``cost_features`` on one thread (one BLAS thread, float64, backend
#: "cpu"), two cells at once on the 2 cores as the scan's workers run them, fitted by
#: non-negative least squares on relative error to the same 56 cells at their recorded
#: counts ("gemm": 72 GFLOP/s a thread).
PRICES = {"cell": 0.6299, "build": 0.0, "aca": 1.09e-08, "gemm": 1.392e-11,
          "vector": 3.699e-07, "test": 5.596e-09, "cross": 2.289e-09, "inputs": 3.971e-08,
          "dots": 1.375e-10}
#: Where ``PRICES`` and ``COUNT_LAWS`` were measured.
MEASURED_ON = "Intel Xeon (AVX-512), 2 cores, 2026-12-03"


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
        ``solver_info``; floats.

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
    return {"kron_terms": terms, "kron_aca_terms": aca,
            "kron_build_rows": 2.0 * aca + min(PROBES, L * L), "flow_steps": flow_steps,
            "flow_products": 2.0 * POWER_ITERS + 1.0 + 4.0 * flow_steps}


def cost_features(d, L, *, steps, eval_every, n_test, counts=None):
    """What a flow cell on solver "kron" does, in counted units (module notes).

    Parameters
    ----------
    d, L : int
    steps, eval_every, n_test : int
        As ``lazy_limit``.
    counts : dict, optional
        The run's ``solver_info`` ("kron_terms", "kron_aca_terms",
        "kron_build_rows", "flow_products"); default ``expected_counts``.

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
    c = expected_counts(d, L, steps, eval_every) if counts is None else counts
    L2 = float(L * L)
    evals = evaluations(steps, eval_every)
    tests = evals * n_test * L2
    cross = L >= TEST_CROSS_MIN_L
    return {"cell": 1.0, "build": c["kron_build_rows"] * L2,
            "aca": float(c["kron_aca_terms"]) ** 2 * L2,
            "gemm": 4.0 * c["kron_terms"] * L2 * L * c["flow_products"],
            "vector": L2 * c["flow_products"],
            "test": 0.0 if cross else tests, "cross": tests if cross else 0.0,
            "inputs": float(evals * n_test * d), "dots": float(evals * n_test * L * d + L2 * d)}


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
                     method="logistic_flow", d=s["d"])
    try:
        return choose_solver("auto", size).name == "kron"
    except ValueError:          # nothing fits: the cell fails when it runs
        return False


def predicted_seconds(d, L, *, steps, eval_every, n_test):
    """Predicted seconds of one flow cell on solver "kron" on one thread (``cost_features``
    at ``expected_counts``, times ``PRICES``)."""
    return predict(prices(), cost_features(d, L, steps=steps, eval_every=eval_every,
                                           n_test=n_test))


#: The units of ``cost_features`` that are float64 GEMM multiply-adds (the products, the
#: cross-approximated test logits), scaled by this machine's float64 GEMM rate
#: (``fastsd._probe``, "gemm64").
GEMM_UNITS = ("gemm", "cross")


def prices(environ=None):
    """``PRICES`` scaled to this machine (``fastsd._probe``; as fitted under
    ``FASTSD_COSTS=fallback``)."""
    return _probe.scale(PRICES, GEMM_UNITS, machine_factors(environ), "gemm64")


def describe():
    """One line on where the lazy limit's prices come from, for ``--dry-run``."""
    f = machine_factors()
    return (f"lazy limit: shipped prices and count laws measured on {MEASURED_ON}, scaled "
            f"to this machine by its probe (float64 GEMM x{f['gemm64']:.2f}, other "
            f"x{f['scalar']:.2f})")


__all__ = ["COUNT_LAWS", "GEMM_UNITS", "PRICES", "cost_features", "describe", "evaluations",
           "expected_counts", "memory_bytes", "modelled", "predicted_seconds", "prices"]
