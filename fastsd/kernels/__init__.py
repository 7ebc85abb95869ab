"""Infinite-width kernels and the exact lazy limit (gamma -> 0) of the same-different MLP.

- ``arccos``, ``nngp``, ``ntk``: closed forms (Cho & Saul 2009; App. D), w ~ N(0, I).
- ``empirical_ntk``: Monte Carlo tangent kernel of a finite network, for checks.
- ``lazy_limit``: kernel regression, logistic gradient flow or kernel SGD of the
  gamma -> 0, infinite-width network, at a cost independent of d (Sec. 3.3).
- ``lazy_cell``: one Fig. 1e cell as a JSON record.

Modules: ``arccos`` and ``empirical`` (the kernels), ``lazy`` (the lazy limit's
entry point), ``pairs`` (training pairs and the pair kernel), ``solvers``
(dense / matrix-free solvers and their registry), ``kron`` (the all-pairs kernel
as a sum of Kronecker products), ``dynamics`` (regression,
flow, SGD), ``backend`` (the family of backend modules ``_reference``,
``_cpu``, ``_cuda``).
"""
from . import kron  # noqa: F401  (registers solver="kron")
from .arccos import arccos, nngp, ntk
from .empirical import empirical_ntk
from .lazy import LazyResult, lazy_cell, lazy_limit
from .solvers import CG_MAX_PAIRS, SolveTooLargeError

__all__ = [
           "CG_MAX_PAIRS",
           "LazyResult",
           "SolveTooLargeError",
           "arccos",
           "empirical_ntk",
           "lazy_cell",
           "lazy_limit",
           "nngp",
           "ntk",
]
