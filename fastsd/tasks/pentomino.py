"""Pentomino: same-different on pentomino shapes, same up to rotation (Sec. 4.2, App. G.4).

The 18 one-sided pentominoes are generated, not listed: one template for each
of the 12 free pentominoes, plus the mirror image (``np.fliplr``) of every
template whose mirror is not one of its rotations. Every orientation of a
piece is ``np.rot90`` of its template, re-centred in a 5 x 5 box.
"""
from typing import Optional, Union

import numpy as np

from .._validation import check_float, check_int
from ._images import GridTask, distinct_partner
from .registry import register_task

#: One template per free pentomino (Golomb's letters), '#' a unit square.
FREE_TEMPLATES = {
    "F": (".##", "##.", ".#."),
    "I": ("#####",),
    "L": ("#...", "####"),
    "N": ("##..", ".###"),
    "P": ("##", "##", "#."),
    "T": ("###", ".#.", ".#."),
    "U": ("#.#", "###"),
    "V": ("#..", "#..", "###"),
    "W": ("#..", "##.", ".##"),
    "X": (".#.", "###", ".#."),
    "Y": ("..#.", "####"),
    "Z": ("##.", ".#.", ".##"),
}
BOX = 5          # side of the box holding one orientation
CELL = 7         # side of a grid cell: the box plus a one-pixel border (App. G.4)


def crop(a):
    """The bounding box of the nonzero pixels of a 2-d array."""
    rows = np.flatnonzero(a.any(axis=1))
    cols = np.flatnonzero(a.any(axis=0))
    return a[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]


def centred(a, box=BOX):
    """A shape cropped to its bounding box and placed at the centre of a box x box array."""
    a = crop(a)
    out = np.zeros((box, box), dtype=a.dtype)
    r, c = (box - a.shape[0]) // 2, (box - a.shape[1]) // 2
    out[r:r + a.shape[0], c:c + a.shape[1]] = a
    return out


def fixed_key(a):
    """A hashable key of a shape up to translation: its cropped pixels and their shape."""
    a = crop(np.asarray(a) > 0)
    return a.shape, a.tobytes()


def canonical(a, reflect=False):
    """The least ``fixed_key`` over the rotations (and, with ``reflect``, reflections) of a shape.

    Two shapes are equal up to rotation (and reflection) iff their canonical
    keys are equal.
    """
    a = np.asarray(a) > 0
    images = [a, np.fliplr(a)] if reflect else [a]
    return min(fixed_key(np.rot90(b, k)) for b in images for k in range(4))


def _template(rows):
    return centred(np.array([[ch == "#" for ch in row] for row in rows], dtype=np.float64))


def one_sided_pieces():
    """The 18 one-sided pentominoes, generated from the 12 free templates by reflection.

    Returns
    -------
    names : list of str
        The free letter, or "R" + letter for a mirror image ("RF", ...).
    templates : ndarray, shape (18, 5, 5), float64, entries {0, 1}
    """
    names, templates = [], []
    for name, rows in FREE_TEMPLATES.items():
        t = _template(rows)
        names.append(name)
        templates.append(t)
        mirror = centred(np.fliplr(t))
        if canonical(mirror) != canonical(t):          # chiral: its mirror is another piece
            names.append("R" + name)
            templates.append(mirror)
    return names, np.stack(templates)


def orientations(templates):
    """All four rotations of each template, re-centred: shape (n, 4, 5, 5).

    Entry [i, k] is ``np.rot90(templates[i], k)`` (k quarter turns
    anticlockwise) centred in the box; symmetric pieces repeat orientations,
    so that a uniform k gives a uniform distinct orientation.
    """
    return np.stack([[centred(np.rot90(t, k)) for k in range(4)] for t in templates])


PIECE_NAMES, PIECE_TEMPLATES = one_sided_pieces()
PIECE_ORIENTATIONS = orientations(PIECE_TEMPLATES)


class Pentomino(GridTask):
    """Pentomino same-different: two pentominoes on a grid of 7 x 7 cells (App. G.4).

    An image is (7 width) x (7 width) pixels, single channel, flattened
    row-major. Two one-sided pentominoes (pixels 1 on 0), each in a 5 x 5 box
    at the centre of its own 7 x 7 cell (a one-pixel border), sit in two
    distinct cells of the width x width grid. Same means the same one-sided
    piece, each copy under an independent uniform rotation; a mirror image
    is a different piece. The 18 pieces are split at random (from ``seed``)
    into ``n_train_shapes`` training pieces and 18 - n_train_shapes test
    pieces. Training images get a Gaussian blur; test images none.
    As an image task it drops the 1/sqrt(d) output factor and uses
    alpha0 = 0.5 (App. G.4).

    Parameters
    ----------
    width : int, default 2
        Cells per side, >= 2.
    n_train_shapes : int
        Training pieces L, 2..16 (two pieces at least are left for test).
    blur : float, default 0.5
        Largest blur sigma in pixels, >= 0.
    seed : int, SeedSequence or None
        Seed of the split; None draws fresh entropy, kept in ``seed_entropy``.
    random_blur : bool, default True
        True: each training image gets sigma ~ U(0, blur), "blurs randomly
        applied" (App. G.4). False: every training image gets sigma = blur,
        what the published code does (its random draw is discarded).

    Attributes
    ----------
    L : int
        ``n_train_shapes``.
    train_pieces, test_pieces : ndarray of int
        Indices into ``PIECE_NAMES`` of the training and test pieces.
    input_dim : int
        (7 width)^2.
    image_shape : tuple
        (7 width, 7 width).

    Raises
    ------
    ValueError, TypeError
        For a parameter out of range (width < 2, fewer than two test pieces,
        blur < 0) or of the wrong type.
    SizeTooLargeError
        Before allocating, when the image layout (``width``) would not fit in
        memory.

    Examples
    --------
    >>> task = Pentomino(width=2, n_train_shapes=12, seed=0)
    >>> x, y = task.sample_test(64, seed=1)
    >>> x.shape, int(y.sum())
    ((64, 196), 32)
    """

    def __init__(self, width: int = 2, n_train_shapes: Optional[int] = None, blur: float = 0.5,
                 seed: Union[int, np.random.SeedSequence, None] = None, random_blur: bool = True):
        width = check_int("width", width, minimum=2)
        n_pieces = len(PIECE_NAMES)
        n_train = self._check_n_train(
            "n_train_shapes", n_train_shapes, n_pieces - 2,
            f", so that at least two of the {n_pieces} pieces are left for testing")
        self.blur = check_float("blur", blur, nonnegative=True)
        if not isinstance(random_blur, (bool, np.bool_)):
            raise TypeError(f"`random_blur` must be True or False; got {random_blur!r}.")
        self.random_blur = bool(random_blur)
        self.sharp_training = self.blur == 0.0
        self.width = width
        self._set_geometry(width, CELL, BOX, "width")
        perm = self._item_stream(seed).permutation(n_pieces)
        self.train_pieces, self.test_pieces = perm[:n_train], perm[n_train:]

    def __repr__(self):
        return (f"Pentomino(width={self.width}, n_train_shapes={self.L}, blur={self.blur}"
                + ("" if self.random_blur else ", random_blur=False") + ")")

    def training_key(self):
        """The geometry, the blur and the pieces in their order, training and test
        (``Task.training_key``; ``test_key`` too: a test draw indexes the test pieces)."""
        return ("Pentomino", self.width, self.blur, self.random_blur,
                self.train_pieces.tobytes(), self.test_pieces.tobytes())

    def _render(self, p1, p2, rng, sigma=None, sparse=False):
        """Images of pieces p1, p2 (indices into PIECE_NAMES), each under a random rotation."""
        k1, k2 = rng.integers(0, 4, size=(2, p1.shape[0]))
        return self.place_stamps(PIECE_ORIENTATIONS[p1, k1], PIECE_ORIENTATIONS[p2, k2], rng,
                                 sigma, sparse=sparse)

    def _training_images(self, u, v, rng, sparse):
        """Blurred images of training pieces u and v (index arrays (n,))."""
        sigma = None
        if self.blur > 0.0:
            n = np.shape(u)[0]
            sigma = (rng.uniform(0.0, self.blur, size=n) if self.random_blur
                     else np.full(n, self.blur))
        return self._render(self.train_pieces[u], self.train_pieces[v], rng, sigma, sparse)

    def _test_inputs(self, y, rng):
        k = self.test_pieces.size
        a = rng.integers(0, k, size=y.shape[0])
        b = distinct_partner(a, y, k, rng)
        return self._render(self.test_pieces[a], self.test_pieces[b], rng)


register_task("pentomino", {"image_width": 2, "blur": 0.5},
              lambda L, task_seed, image_width, blur: Pentomino(
                  width=image_width, n_train_shapes=L, blur=blur, seed=task_seed))
