"""Infinite-width kernels and the exact lazy limit (gamma -> 0) of the same-different MLP.

- ``arccos``, ``nngp``, ``ntk``: closed forms (Cho & Saul 2009; App. D), w ~ N(0, I).
- ``empirical_ntk``: Monte Carlo tangent kernel of a finite network, for checks.
- ``lazy_limit``: kernel regression, logistic gradient flow or kernel SGD of the
  gamma -> 0, infinite-width network, at a cost independent of d (Sec. 3.3).
- ``lazy_cell``: one Fig. 1e cell as a JSON record.
"""
from .arccos import arccos, nngp, ntk
from .empirical import empirical_ntk
from .lazy import CG_MAX_PAIRS, LazyResult, SolveTooLargeError, lazy_cell, lazy_limit

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
