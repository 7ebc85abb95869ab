"""fastsd: fast simulation of equality reasoning in neural networks.

Implements "Learning richness modulates equality reasoning in neural
networks": the same-different task, centered two-layer ReLU MLPs trained from
the lazy to the rich regime, and the paper's theory.

Nothing heavy is imported at import time; the public names load on first use.
"""
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_LAZY = {
    "SameDifferent": ("fastsd.tasks", "SameDifferent"),
    "train": ("fastsd.mlp", "train"),
    "train_ensemble": ("fastsd.mlp", "train_ensemble"),
    "TrainResult": ("fastsd.mlp", "TrainResult"),
    "Params": ("fastsd.mlp", "Params"),
    "BackendUnavailableError": ("fastsd.exceptions", "BackendUnavailableError"),
    "SizeTooLargeError": ("fastsd.exceptions", "SizeTooLargeError"),
    "StoreLockedError": ("fastsd.exceptions", "StoreLockedError"),
    "ResultStore": ("fastsd.store", "ResultStore"),
    "PSVRT": ("fastsd.tasks", "PSVRT"),
    "Pentomino": ("fastsd.tasks", "Pentomino"),
    "CifarPairs": ("fastsd.tasks", "CifarPairs"),
    "lazy_limit": ("fastsd.kernels", "lazy_limit"),
    "ntk": ("fastsd.kernels", "ntk"),
    "thread_limit": ("fastsd._threads", "thread_limit"),
}
_MODULES = ("theory", "tasks", "mlp", "analysis", "presets", "scan", "plots", "store",
            "walkers", "kernels", "bayes", "reproduce", "figures", "params", "conventions",
            "schedules", "activations", "constraints")

__all__ = sorted(_LAZY) + ["__version__", *_MODULES]

if TYPE_CHECKING:       # what _LAZY loads on first use, for type checkers (tests/test_typing.py)
    from ._threads import thread_limit
    from .exceptions import BackendUnavailableError, SizeTooLargeError, StoreLockedError
    from .kernels import lazy_limit, ntk
    from .mlp import Params, TrainResult, train, train_ensemble
    from .store import ResultStore
    from .tasks import PSVRT, CifarPairs, Pentomino, SameDifferent


def __getattr__(name):
    import importlib
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    if name in _MODULES:
        return importlib.import_module(f"fastsd.{name}")
    raise AttributeError(f"module 'fastsd' has no attribute {name!r}")
