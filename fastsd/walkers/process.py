"""The walker ensemble of App. C.3: public entry point and result."""
import time
from typing import Any
from dataclasses import dataclass, field

import numpy as np

from .. import __version__, _threads
from .._calls import Spans
from .._dispatch import FAMILIES
from .._rng import recorded_seed, seed_sequence
from .._types import BackendName, SeedLike
from .._validation import check_int, check_seed, fail
from ..params import WALKERS
from . import _reference
from .._json import strict_json
from .._memory import check_fits, need
from .analysis import alignment, norm_ratio, summary

CATEGORIES = _reference.CATEGORIES
#: The walkers' backends: ``_reference``, ``_cpu`` and ``_cuda`` each define these.
FAMILY = FAMILIES["walkers"]
#: Largest L: the generator's multiply-shift draws of u and v are exact up to L / 2^30.
MAX_L = WALKERS["L"].maximum


@dataclass(eq=False)
class WalkerResult:
    """Final states and mu counts of an ensemble of walkers (App. C.3-C.4).

    Walker k is one run of the paper's simulation: one hidden unit with
    readout sign ``config["readout"]``, from omega = 0.

    Attributes
    ----------
    omega1, omega2 : ndarray, shape (n_walkers, L), int64
        Coordinates of v1 and v2 in the basis of the L training symbols after
        n_iters batches.
    counts : ndarray, shape (n_walkers, 4), int64
        Samples per category (``CATEGORIES``: positive, negative, mixed,
        zero) over the run, where s1 = omega1[u] + omega1[v] and
        s2 = omega2[u] + omega2[v] at the time of the sample: both > 0, both
        < 0, s1 s2 < 0, and the rest (s1 or s2 = 0).
    active : ndarray, shape (n_walkers, 4), int64
        Of those, the samples on which the unit was active (rho > 0, or
        rho = 0 and the tie coin came up active).
    config : dict
        L, batch_size, n_iters, readout, n_walkers, walker_offset, seed (the
        integer that repeats the run), backend, version.
    wall_time : float
        Seconds spent simulating.
    """

    omega1: np.ndarray
    omega2: np.ndarray
    counts: np.ndarray
    active: np.ndarray
    config: dict = field(default_factory=dict)
    wall_time: float = 0.0

    def mu(self, category="mixed"):
        """Per-run mu: the active fraction of the category's samples (App. C.4.1).

        Parameters
        ----------
        category : {"positive", "negative", "mixed", "zero"}
            "mixed" (s1 s2 < 0) is the paper's mu.

        Returns
        -------
        ndarray, shape (n_walkers,), float64
            NaN for runs where the category never occurred.
        """
        k = _category_index(category)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.counts[:, k] > 0,
                            self.active[:, k] / np.maximum(self.counts[:, k], 1), np.nan)

    def mu_summary(self, category="mixed"):
        """Mean and 2 sd of mu over the runs where the category occurred.

        Returns
        -------
        dict
            ``mean``, ``two_sd`` (ddof=1) and ``n_runs``, as App. C.4 reports
            (0.508 +- 0.056 for a > 0, 0.499 +- 0.009 for a < 0, mixed
            category, L = 16, batch 512, 100 runs).
        """
        return summary(self.mu(category))

    def alignment(self):
        """Per-walker omega1.omega2 / (|omega1||omega2|) (shape (n_walkers,); NaN if a norm is 0).

        With orthonormal symbols (d -> infinity) this is v1.v2 / (|v1||v2|),
        which tends to +1 for a > 0 and -1 for a < 0 (App. C.4).
        """
        return alignment(self.omega1, self.omega2)

    def norm_ratio(self):
        """Per-walker |omega1| / |omega2| = |v1| / |v2| (tends to 1; inf or NaN at zero norms)."""
        return norm_ratio(self.omega1, self.omega2)

    def to_record(self):
        """Strict-JSON dict: config, mu per category (summary and per run), alignment,
        norm ratio, the final states and counts. NaN and inf become null."""
        rec = dict(self.config)
        rec.update(
            wall_time=self.wall_time,
            mu={c: self.mu_summary(c) for c in CATEGORIES},
            mu_runs={c: self.mu(c) for c in CATEGORIES},
            alignment=summary(self.alignment()), norm_ratio=summary(self.norm_ratio()),
            alignment_runs=self.alignment(), norm_ratio_runs=self.norm_ratio(),
            omega1=self.omega1, omega2=self.omega2, counts=self.counts, active=self.active,
            categories=list(CATEGORIES))
        return strict_json(rec)


def _category_index(category):
    if category not in CATEGORIES:
        fail("category", "one of " + ", ".join(map(repr, CATEGORIES)), category)
    return CATEGORIES.index(category)


def seed_state(seed):
    """The generator's 64-bit seed state, and the integer to record (None for a SeedSequence
    with a spawn key, which an integer cannot rebuild)."""
    if isinstance(seed, np.random.Generator):
        fail("seed", "an integer >= 0, a SeedSequence or None (walkers draw from a "
             "counter-based generator keyed by the seed)", seed, TypeError)
    ss = seed_sequence(seed)
    return np.uint64(ss.generate_state(1, np.uint64)[0]), recorded_seed(ss)


def check_settings(L, batch_size, n_iters, readout=1, n_walkers=100, seed=None,
                   walker_offset=0):
    """Validate the arguments of ``simulate`` (but the backend); return them as a dict.

    Raises
    ------
    ValueError, TypeError
        As ``simulate``.
    """
    s = WALKERS.check(dict(L=L, batch_size=batch_size, n_iters=n_iters, readout=readout,
                           n_walkers=n_walkers, walker_offset=walker_offset))
    s["seed"] = check_seed("seed", seed)    # None too: fresh entropy, recorded
    s["walker_offset"] = check_int("walker_offset", walker_offset, minimum=0,
                                   maximum=2**62 - s["n_walkers"])
    return s


def _needs(module, L, batch_size, n_walkers):
    """The allocations of ``simulate`` that scale with its sizes, as ``Need``s."""
    W = n_walkers
    # omega1, omega2 (W x L) and counts, active (W x 4), int64; the result copies them
    return [need(2 * 8 * W * (2 * L + 8), f"the walker states ({W} walkers x (2 x {L} + 8) "
                 f"int64)", ("n_walkers", W), ("L", L))] + module.buffers(L, batch_size, W)


@_threads.computing
def simulate(L: int, batch_size: int, n_iters: int, readout: int = 1, n_walkers: int = 100,
             seed: SeedLike = None, backend: BackendName = "auto",
             walker_offset: int = 0) -> "WalkerResult":
    """Run an ensemble of independent sign-update Markov processes (App. C.3).

    Each walker is one hidden unit in the symbol basis, with state omega1,
    omega2 (integers, one per symbol) starting at 0. Each sample draws u
    uniform in [L]; with probability 1/2 v = u, otherwise v is uniform over
    [L] \\ {u}. With rho = omega1[u] + omega2[v], the unit is active if
    rho > 0, or with probability 1/2 if rho = 0. When active, b1[u] and b2[v]
    move by +1 if (a > 0 and u = v) or (a < 0 and u != v), else by -1; the
    batch updates b are added to omega after every ``batch_size`` samples.
    Along the way the mu statistics of App. C.4 are counted.

    Random numbers come from a counter-based generator keyed by (seed, walker
    index, sample index) (``fastsd.walkers._reference``), so walker k's
    trajectory is the same on every backend, for any thread count and however
    the walkers are split across calls: ``simulate(..., n_walkers=a+b)``
    equals ``simulate(..., n_walkers=a)`` stacked on
    ``simulate(..., n_walkers=b, walker_offset=a)``.

    Parameters
    ----------
    L : int
        Number of training symbols, 2 <= L <= 65536.
    batch_size : int
        Samples per batch N, >= 1. Any N is meaningful, odd ones included:
        each sample is same (v = u) with probability 1/2 on its own coin
        (App. C.3 step 2), so a batch is not split exactly in half as the
        training batches of ``fastsd.train`` are; N = 1 is the case App. C.4
        analyses.
    n_iters : int
        Number of batches (time steps t), >= 1.
    readout : {+1, -1}
        Sign of the readout a.
    n_walkers : int
        Number of independent walkers (runs), >= 1.
    seed : int, SeedSequence or None
        None draws fresh entropy, recorded in ``config["seed"]`` so that the
        run can be repeated.
    backend : {"auto", "numpy", "cpu", "cuda"}
        "numpy" is the vectorised reference; "cpu" the Numba kernels (prange
        over walkers); "cuda" one GPU thread per walker (Numba-CUDA only).
    walker_offset : int
        Global index of the first walker, >= 0.

    Returns
    -------
    WalkerResult

    Raises
    ------
    ValueError
        L < 2 or > 65536, batch_size < 1, n_iters < 1, n_walkers < 1,
        walker_offset < 0, readout not +-1, negative seed, unknown backend.
    TypeError
        Non-integer sizes, a non-numeric readout, a Generator as seed.
    SizeTooLargeError
        Before allocating, when the walker states (``n_walkers`` x ``L``) or
        the backend's batch buffers (``batch_size``) would not fit in the
        memory available; the message names the parameter and the bytes.
    BackendUnavailableError
        When an explicitly requested backend cannot run here.

    Examples
    --------
    >>> r = simulate(L=16, batch_size=512, n_iters=20, readout=-1, n_walkers=8, seed=0)
    >>> r.omega1.shape
    (8, 16)
    >>> 0.3 < r.mu_summary("mixed")["mean"] < 0.7
    True
    """
    c = check_settings(L, batch_size, n_iters, readout, n_walkers, seed, walker_offset)
    L, batch_size, n_iters, readout, n_walkers, walker_offset = (
        c[k] for k in ("L", "batch_size", "n_iters", "readout", "n_walkers", "walker_offset"))
    seed64, recorded = seed_state(seed)
    backend, module = FAMILY.load(backend)
    check_fits(_needs(module, L, batch_size, n_walkers))

    start = time.perf_counter()
    out: Any = None         # the state, then the arrays of WalkerResult
    for s, e in Spans().over(0, n_iters):       # bounded calls: a signal is handled promptly
        out = module.simulate(seed64, walker_offset, n_walkers, L, batch_size, e - s, readout,
                              start=s, state=out)
    wall = time.perf_counter() - start
    config = dict(L=L, batch_size=batch_size, n_iters=n_iters, readout=readout,
                  n_walkers=n_walkers, walker_offset=walker_offset, seed=recorded,
                  backend=backend, version=__version__)
    omega1, omega2, counts, active = out
    return WalkerResult(omega1, omega2, counts, active, config=config, wall_time=wall)
