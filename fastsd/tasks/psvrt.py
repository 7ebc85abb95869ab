"""PSVRT: same-different on random bit-patterns, same up to translation (Sec. 4.1, App. G.3)."""
from typing import Optional, Union

import numpy as np

from .._memory import Need, check_fits
from .._validation import check_int
from ._images import GridTask, distinct_partner
from .registry import register_task

#: Patterns are indexed by integers of patch^2 bits, which must fit an int64.
MAX_PATCH = 7


def codes_to_patterns(codes, patch):
    """Bit-patterns of integer codes: bit k of a code is pixel k (row-major), 1 -> +1, 0 -> -1.

    Parameters
    ----------
    codes : ndarray of int64, shape (...)
    patch : int

    Returns
    -------
    ndarray, shape (..., patch, patch), float64, entries +-1.
    """
    bits = (codes[..., None] >> np.arange(patch * patch, dtype=np.int64)) & 1
    return (2.0 * bits - 1.0).reshape(*codes.shape, patch, patch)


def patterns_to_codes(patterns):
    """Inverse of ``codes_to_patterns``: (..., patch, patch) of +-1 -> int64 codes (...)."""
    p = np.asarray(patterns)
    bits = (p.reshape(*p.shape[:-2], -1) > 0).astype(np.int64)
    return (bits << np.arange(bits.shape[-1], dtype=np.int64)).sum(axis=-1)


class PSVRT(GridTask):
    """Parameterised SVRT: two +-1 bit-patterns on a blank grid of patches (App. G.3).

    An image is (n_patches patch) x (n_patches patch) pixels, single channel,
    flattened row-major. Two patch x patch patterns of +-1 pixels sit in two
    distinct cells of the n_patches x n_patches grid of patches (so they never
    overlap), every other pixel is 0. A same image shows one pattern twice,
    a different image two distinct patterns. Training images use a fixed set
    of ``n_train_patterns`` distinct patterns drawn once from ``seed``; test
    images use patterns drawn uniformly from the 2^(patch^2) - L others, fresh
    for every image (so no test pattern is a training pattern, unlike the
    published code, where a collision had probability ~L / 2^25).

    Pixel values are those of the published code (+-1 on 0, not normalised).
    As an image task it drops the 1/sqrt(d) output factor and uses
    alpha0 = 0.5 (App. G.3).

    Parameters
    ----------
    patch : int, default 5
        Side of a bit-pattern in pixels, 2..7 (patch 1 leaves no pattern for testing).
    n_patches : int, default 5
        Cells per side of the image, >= 2 (two patterns need two cells).
    n_train_patterns : int
        Training patterns L, 2 <= L <= 2^(patch^2) - 2 (two patterns are left
        for the different test images).
    seed : int, SeedSequence or None
        Seed of the training patterns; None draws fresh entropy, kept in
        ``seed_entropy``.

    Attributes
    ----------
    L : int
        ``n_train_patterns``.
    patterns : ndarray, shape (L, patch, patch), float64
        The training patterns, in the order of the training indices.
    codes : ndarray, shape (L,), int64
        Their integer codes (``patterns_to_codes``), increasing.
    input_dim : int
        (n_patches patch)^2.
    image_shape : tuple
        (n_patches patch, n_patches patch).

    Raises
    ------
    ValueError, TypeError
        For a parameter out of range (patch < 2, n_patches < 2, more training
        patterns than the patch allows) or of the wrong type.
    SizeTooLargeError
        Before allocating, when the image layout (``n_patches``) or the
        training patterns (``n_train_patterns``) would not fit in memory.

    Examples
    --------
    >>> task = PSVRT(patch=5, n_patches=5, n_train_patterns=64, seed=0)
    >>> x, y = task.sample_train(128, seed=1)
    >>> x.shape, int(y.sum())
    ((128, 625), 64)
    """

    def __init__(self, patch: int = 5, n_patches: int = 5, n_train_patterns: Optional[int] = None,
                 seed: Union[int, np.random.SeedSequence, None] = None):
        patch = check_int("patch", patch, minimum=2, maximum=MAX_PATCH)
        n_patches = check_int("n_patches", n_patches, minimum=2)
        self.n_codes = 2 ** (patch * patch)
        n_train = self._check_n_train(
            "n_train_patterns", n_train_patterns, self.n_codes - 2,
            f" (2**(patch**2) - 2 for patch={patch}, so that two patterns are left for testing)")
        self.patch, self.n_patches = patch, n_patches
        self._set_geometry(n_patches, patch, patch, "n_patches")
        # codes and their sampling, gaps, and the patterns (L x patch x patch, float64)
        check_fits([Need(8 * n_train * (4 + patch * patch), f"the training patterns ({n_train} "
                         f"x {patch} x {patch})", "n_train_patterns", n_train)])
        rng = self._item_stream(seed)
        self.codes = np.sort(rng.choice(self.n_codes, size=n_train, replace=False)).astype(np.int64)
        self.patterns = codes_to_patterns(self.codes, patch)
        # The r-th unused code is r + #{j : codes[j] - j <= r} (codes increasing).
        self._gaps = self.codes - np.arange(n_train, dtype=np.int64)

    def __repr__(self):
        return (f"PSVRT(patch={self.patch}, n_patches={self.n_patches}, "
                f"n_train_patterns={self.L})")

    def training_key(self):
        """The geometry and the training patterns (``Task.training_key``)."""
        return ("PSVRT", self.patch, self.n_patches, self.codes.tobytes())

    def test_codes(self, rank):
        """Map ranks 0 <= r < 2^(patch^2) - L to the codes outside the training set, increasing."""
        return rank + np.searchsorted(self._gaps, rank, side="right")

    def _training_images(self, u, v, rng, sparse):
        return self.place_stamps(self.patterns[u], self.patterns[v], rng, sparse=sparse)

    def _test_inputs(self, y, rng):
        k = self.n_codes - self.L
        a = rng.integers(0, k, size=y.shape[0], dtype=np.int64)
        b = distinct_partner(a, y, k, rng)
        p1 = codes_to_patterns(self.test_codes(a), self.patch)
        p2 = codes_to_patterns(self.test_codes(b), self.patch)
        return self.place_stamps(p1, p2, rng)


register_task("psvrt", {"patch": 5, "n_patches": 5},
              lambda L, task_seed, patch, n_patches: PSVRT(
                  patch=patch, n_patches=n_patches, n_train_patterns=L, seed=task_seed))
