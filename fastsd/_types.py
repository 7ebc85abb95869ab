"""The types of the public API's annotations (checked by mypy: tests/test_typing.py).

``TrainingSettings`` types the training settings ``fastsd.params.TRAINING`` declares
(``train``'s and ``train_ensemble``'s keywords); tests/test_typing.py holds the two equal, so
a setting declared there and not typed here (or the other way) fails the suite.
"""
from typing import Literal, Optional, Sequence, TypedDict, Union

import numpy as np
from numpy.typing import ArrayLike

from .activations import Activation

#: gamma: a number > 0, or "lazy" (the task's gamma ~ 0).
GammaLike = Union[float, Literal["lazy"]]
#: A seed: an integer >= 0, a SeedSequence, a Generator (where a function says so) or None
#: (fresh entropy, recorded).
SeedLike = Union[int, np.random.SeedSequence, np.random.Generator, None]
#: Where to run (``fastsd._dispatch.BACKENDS``).
BackendName = Literal["auto", "numpy", "cpu", "cuda"]
#: The training path (``fastsd.mlp.training.PATHS``).
PathName = Literal["auto", "dense", "symbol", "sparse"]
#: A floating-point type by name or as a NumPy type; None: the backend's default.
DtypeLike = Union[Literal["float32", "float64"], type, np.dtype, None]
#: Extra evaluation steps (``fastsd.schedules.check_eval_at``).
ScheduleLike = Union[str, int, Sequence[int], None]
#: An activation by name (``fastsd.activations.ACTIVATIONS``) or itself.
ActivationLike = Union[str, Activation]


class TrainingOptions(TypedDict, total=False):
    """The keywords of ``fastsd.params.TRAINING`` but width and steps (``fastsd.train``'s
    ``**kwargs``; it names those two)."""

    batch_size: int
    eval_every: int
    eval_at: ScheduleLike
    n_test: int
    alpha0: Optional[float]
    init: Literal["normal", "truncated"]
    activation: ActivationLike


class TrainingSettings(TrainingOptions, total=False):
    """The keywords of ``fastsd.params.TRAINING`` (``train_ensemble``'s ``**training``:
    width and steps are required unless ``config`` holds them)."""

    width: int
    steps: int


class TrainOptions(TrainingOptions, total=False):
    """``fastsd.train``'s ``**kwargs``: the training options and where and how it runs."""

    backend: BackendName
    dtype: DtypeLike
    path: PathName
    batches: Literal["host", "device"]
    progress: bool


__all__ = ["ActivationLike", "ArrayLike", "BackendName", "DtypeLike", "GammaLike", "PathName",
           "ScheduleLike", "SeedLike", "TrainOptions",
           "TrainingOptions", "TrainingSettings"]
