"""What every task tells the trainer: input size, output scale, learning rate.

The output scale and the learning-rate rule are properties of the task, not
flags: the symbol task uses 1/(gamma sqrt(d)) and alpha = gamma^2 d alpha0
(Sec. 2, App. G.1), while image tasks drop the sqrt(d) factor (App. G.3-G.4).
"""
import math
from typing import Tuple

import numpy as np

from .._memory import Need, check_fits
from ..conventions import LAZY_GAMMA_SQRT_D
from .._rng import tagged_generator
from .._types import SeedLike
from .._validation import check_int, check_seed

def balanced_labels(n, rng):
    """Labels of n pairs, exactly half 1.0 (same) for even n, in random order.

    For odd n the extra pair is same or different with probability 1/2.
    """
    y = np.zeros(n)
    y[: n // 2] = 1.0
    if n % 2:
        y[-1] = rng.integers(0, 2)
    return y[rng.permutation(n)]



def task_identity(task):
    """What rebuilds a task's training items, for records: ``task_seed_entropy`` (None for
    given symbols) and, for given symbols, ``task_symbols_sha256``."""
    entropy = getattr(task, "seed_entropy", None)
    out = {"task_seed_entropy": None if entropy is None else int(entropy)}
    if getattr(task, "symbols_sha256", None) is not None:
        out["task_symbols_sha256"] = task.symbols_sha256
    return out


class Task:
    """Base class of the same-different tasks: what the trainer and the engines use.

    Every task holds ``L`` training items (symbols, bit-patterns, shapes or
    classes) and declares:

    * ``L`` (int >= 2), ``input_dim`` (the length p of a pair vector x),
      ``scale_dim`` (the d in 1/(gamma sqrt(d)); 1 for image tasks) and
      ``default_alpha0``;
    * ``training_inputs(u, v, rng)``: the inputs of training pairs of items
      (index arrays u, v of shape (n,)), shape (n, input_dim), float64,
      drawing any randomness from ``rng``, what ``training_noise`` made of
      the model's noise Generator;
    * ``sample_test(n, seed)``: n balanced test pairs from unseen items.

    From these the base class draws the training batches (``draw_pairs``, the
    engines' index pairs; ``sample_train``), so every task draws its pairs the
    same way. ``tests/test_task_contract.py`` holds every task to this.
    """

    L: int
    input_dim: int
    scale_dim: int = 1
    default_alpha0: float = 0.1
    #: True when every training input lies in the span of a fixed set of
    #: vectors, so that the symbol-basis training path applies.
    has_symbol_basis: bool = False
    #: True when the task also gives its training inputs as the few pixels that can be
    #: non-zero (``training_inputs_sparse(u, v, rng)``, ``fastsd.tasks._images.SparseImages``,
    #: the same draws), so that the "sparse" training path applies.
    has_sparse_inputs: bool = False

    def training_noise(self, rng):
        """The source a training run passes as ``rng`` to ``training_inputs``, made once per
        model from its ``"noise"`` Generator: here the Generator itself."""
        return rng

    def training_inputs(self, u, v, rng):
        """Return the inputs of training pairs (u, v), index arrays of shape (n,): (n, input_dim)."""
        raise NotImplementedError(f"{type(self).__name__} must implement training_inputs")

    def _test_inputs(self, y, rng):
        """Return the inputs of test pairs with labels y (shape (n,)): (n, input_dim)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _test_inputs")

    def draw_pairs(self, rng, shape):
        """Draw balanced pairs of training-item indices (symbols, patterns, shapes, classes).

        Along the last axis (a batch of n pairs) the first n // 2 pairs are
        same, the next n // 2 different, and for odd n the last pair is same
        or different with probability 1/2. A different pair uses two distinct
        items, the second uniform over the other L - 1.

        Parameters
        ----------
        rng : numpy.random.Generator
        shape : tuple of int
            (..., n): leading axes (e.g. steps) and the batch size n.

        Returns
        -------
        u, v : ndarray of int32, shape ``shape``
            Indices of the first and second item.
        y : ndarray of float64, shape ``shape``
            1.0 for same, 0.0 for different.
        """
        *lead, n = shape
        half = n // 2
        u = rng.integers(0, self.L, size=shape)
        y = np.zeros(shape)
        y[..., :half] = 1.0
        if n % 2:
            y[..., -1] = rng.integers(0, 2, size=lead)
        offset = rng.integers(1, self.L, size=shape)
        v = np.where(y == 1.0, u, (u + offset) % self.L)
        return u.astype(np.int32), v.astype(np.int32), y

    def sample_train(self, n: int, seed: SeedLike = None) -> Tuple[np.ndarray, np.ndarray]:
        """Draw n balanced training pairs over the L training items, in shuffled order.

        Parameters
        ----------
        n : int
            Number of pairs, >= 1. When n is even exactly half are same.
        seed : int, SeedSequence, Generator or None

        Returns
        -------
        x : ndarray, shape (n, input_dim), float64
        y : ndarray, shape (n,), float64
            1.0 for same, 0.0 for different.

        Raises
        ------
        SizeTooLargeError
            Before drawing, when the n pairs would not fit in memory.
        """
        n, rng = self._sample_stream(n, seed, "sample_train")
        u, v, y = self.draw_pairs(rng, (n,))
        perm = rng.permutation(n)
        u, v, y = u[perm], v[perm], y[perm]
        return self.training_inputs(u, v, rng), y

    def sample_test(self, n: int, seed: SeedLike = None) -> Tuple[np.ndarray, np.ndarray]:
        """Draw n balanced test pairs from items outside the training set, in shuffled order.

        Symbol tasks draw fresh symbols s ~ N(0, I/d) for every pair; visual
        tasks draw patterns, shapes or classes held out of training.

        Parameters
        ----------
        n : int
            Number of pairs, >= 1. When n is even exactly half are same; for
            odd n the extra pair is same or different with probability 1/2.
        seed : int, SeedSequence, Generator or None

        Returns
        -------
        x : ndarray, shape (n, input_dim), float64
        y : ndarray, shape (n,), float64
            1.0 for same, 0.0 for different.

        Raises
        ------
        SizeTooLargeError
            Before drawing, when the n pairs would not fit in memory.
        """
        n, rng = self._sample_stream(n, seed, "sample_test")
        y = balanced_labels(n, rng)
        return self._test_inputs(y, rng), y

    def test_key(self):
        """Return what determines ``sample_test``'s draws besides the generator, or None.

        Models whose tasks give equal keys and whose test generators are
        equal draw identical test sets, so an ensemble draws them once.
        None (the default) never shares.
        """
        return None

    def training_key(self):
        """Return what determines ``training_inputs``'s draws besides the generator, or None.

        Models whose tasks give equal keys (or are one task), with equal batches and
        generators, draw identical training inputs, so the sparse engine draws them
        once a step for them all. None (the default) shares only within one task object.
        """
        return None

    def lazy_gamma(self) -> float:
        """Return the paper's "gamma ~ 0" for this task, what gamma="lazy" means.

        1e-5/sqrt(D) with D = ``scale_dim``: 1e-5 for the image tasks, which
        have no sqrt(d) factor (App. G.3-G.4); ``SameDifferent`` gives
        1e-5/sqrt(d).
        """
        return LAZY_GAMMA_SQRT_D / math.sqrt(self.scale_dim)

    def _sample_stream(self, n, seed, tag):
        """Check a sampler's ``n`` (>= 1, fits in memory) and ``seed``; return n and its stream."""
        n = check_int("n", n, minimum=1)
        check_seed("seed", seed)
        self._check_sample_fits(n)
        return n, tagged_generator(seed, tag)

    def _check_sample_fits(self, n):
        """Raise ``SizeTooLargeError`` unless n pairs (float64 inputs and their parts) fit."""
        check_fits([Need(24 * n * self.input_dim, f"the pairs ({n} x {self.input_dim} inputs, "
                         f"float64, with their items)", "n", n)])

    def output_scale(self, gamma: float) -> float:
        """Return the factor 1/(gamma sqrt(scale_dim)) in front of the readout sum (Eq. 1)."""
        return 1.0 / (gamma * math.sqrt(self.scale_dim))

    def learning_rate(self, gamma: float, alpha0: float) -> float:
        """Return the SGD step size of App. G.1.

        alpha = gamma^2 D alpha0 for gamma <= 1 and gamma sqrt(D) alpha0 for
        gamma > 1, with D = ``scale_dim``.
        """
        if gamma <= 1.0:
            return gamma * gamma * self.scale_dim * alpha0
        return gamma * math.sqrt(self.scale_dim) * alpha0

    def gamma_range(self, alpha0, dtype):
        """The gammas whose output scale and learning rate are normal numbers of ``dtype``.

        Parameters
        ----------
        alpha0 : float
            Base learning rate, > 0.
        dtype : {"float32", "float64"}

        Returns
        -------
        (float, float)
            The smallest and largest gamma for which tiny <= 1/(gamma sqrt(D)) <= max
            and tiny <= alpha(gamma) <= max (``output_scale``, ``learning_rate``), with
            tiny and max the dtype's smallest normal and largest finite numbers.
        """
        info = np.finfo(dtype)
        tiny, big, root = float(info.tiny), float(info.max), math.sqrt(self.scale_dim)

        def gamma_at(lr):           # the inverse of learning_rate (increasing in gamma)
            g = math.sqrt(lr / (self.scale_dim * alpha0))
            return g if g <= 1.0 else lr / (root * alpha0)

        return (max(1.0 / (big * root), gamma_at(tiny)),
                min(1.0 / (tiny * root), gamma_at(big)))


class BatchStream:
    """A model's training batches: ``task.draw_pairs`` of ``BLOCK`` steps at a time.

    The trainer (``fastsd.mlp.train_ensemble``) and the lazy limit's kernel
    SGD (``fastsd.kernels.lazy_limit``) take their batches from one of these,
    so a seed gives the same batches whatever the evaluation schedule
    (``eval_every``) or the number of steps (a shorter run trains on a
    prefix of a longer run's batches), and at most one block is held.

    Parameters
    ----------
    task : Task
    rng : numpy.random.Generator
        The model's pair stream (``fastsd._rng.train_streams``' "pairs").
    batch_size : int
        Pairs per step.
    """

    #: Steps drawn at a time. Part of the stream's definition: changing it changes the batches.
    #: The default ``eval_every``, so that a window is one block, run in one engine call.
    BLOCK = 1000

    def __init__(self, task, rng, batch_size):
        self._task, self._rng, self._batch_size = task, rng, batch_size
        self._block, self._pos = None, self.BLOCK

    def take(self, n):
        """The next n steps' batches: u, v (n, batch_size) int32 and y (n, batch_size) float64."""
        parts = []
        while n > 0:
            if self._pos == self.BLOCK:
                self._block = self._task.draw_pairs(self._rng, (self.BLOCK, self._batch_size))
                self._pos = 0
            k = min(n, self.BLOCK - self._pos)
            parts.append(tuple(a[self._pos:self._pos + k] for a in self._block))
            self._pos += k
            n -= k
        if len(parts) == 1:
            return parts[0]
        return tuple(np.concatenate(column) for column in zip(*parts))
