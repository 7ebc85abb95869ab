"""What the visual same-different tasks share (Sec. 4, App. G.3-G.5).

Every visual task has a finite set of L training items (bit-patterns,
pentomino pieces, CIFAR classes), so that the trainer's pair draws
(``draw_pairs``: half same, half different, index pairs over the L items)
are those of every ``Task`` (``fastsd.tasks.base``). What differs is how an index pair becomes an
input: ``training_inputs(u, v, rng)`` renders it, drawing the nuisance
(positions, rotations, blur, which image of a class) from ``rng``.
Test pairs come from items outside the training set (``_test_inputs``).

The grid tasks (PSVRT, Pentomino) draw one image holding two stamps in two
distinct cells of a square grid of cells; ``place_stamps`` renders a batch of
them with one scatter per stamp, with no loop over examples.
"""
import numpy as np

from .._memory import Need, check_fits
from .._rng import seed_sequence, tagged_generator
from .._validation import check_array, check_int, check_seed
from .base import Task


def distinct_partner(a, y, k, rng):
    """Second item of each pair: ``a`` where y = 1, else uniform over the other k - 1 items."""
    return np.where(y == 1.0, a, (a + rng.integers(1, k, size=a.shape)) % k)


def reflect_index(j, n):
    """Index into [0, n) of position j under scipy.ndimage's 'reflect' (d c b a | a b c d | d c b a)."""
    j = np.mod(j, 2 * n)
    return np.where(j < n, j, 2 * n - 1 - j)


def gaussian_taps(sigma, truncate=4.0):
    """Per-image 1-d Gaussian taps as ``scipy.ndimage.gaussian_filter1d`` builds them.

    Parameters
    ----------
    sigma : ndarray, shape (n,)
        Standard deviations in pixels, >= 0; sigma = 0 gives the identity.

    Returns
    -------
    ndarray, shape (n, 2 R + 1), float64
        Normalised weights at offsets -R..R, zero beyond each image's own
        radius int(truncate sigma + 0.5); R is the largest radius.
    """
    sigma = np.asarray(sigma, dtype=np.float64)
    radius = (truncate * sigma + 0.5).astype(np.int64)
    R = int(radius.max(initial=0))
    t = np.arange(-R, R + 1)
    live = sigma > 1e-15
    s2 = np.where(live, sigma, 1.0)[:, None] ** 2
    w = np.where(np.abs(t)[None, :] <= radius[:, None], np.exp(-0.5 * t[None, :] ** 2 / s2), 0.0)
    w[~live] = (t == 0)
    return w / w.sum(axis=1, keepdims=True)


class SparseImages:
    """A batch of images given by the pixels that can be non-zero.

    Image i is the sum, over e, of ``value[i, e]`` at pixel ``index[i, e]`` of
    a zero image; an index can repeat (a blurred window folded back at the
    border adds into a pixel twice). The visual tasks' images are two
    stamps on an empty canvas, so this is a few percent of the pixels; the
    "sparse" training path (``fastsd.mlp``) reads them so.

    Attributes
    ----------
    index : ndarray, shape (n, K), int64
    value : ndarray, shape (n, K), float64
    input_dim : int
        Pixels of an image, H * W.
    cells : ndarray, shape (n, k), int64, or None
        For sharp stamps on a grid (``GridTask.stamp_pixels``): the cell of each
        of an image's k stamps, whose s pixels are the entries j s .. (j + 1) s - 1,
        at ``stamp_pixels()[cells[i, j]]``; None otherwise.
    """

    def __init__(self, index, value, input_dim, cells=None):
        self.index, self.value, self.input_dim, self.cells = index, value, input_dim, cells

    def dense(self):
        """The images, shape (n, input_dim), float64."""
        from ._cpu import scatter_add
        out = np.zeros((self.index.shape[0], self.input_dim))
        scatter_add(self.index, self.value, out)
        return out


def place_blurred(shape, stamps, origins, sigma, truncate=4.0, sparse=False):
    """Blurred image of square stamps on a zero background, without blurring the background.

    Equals ``scipy.ndimage.gaussian_filter(sharp, sigma, truncate=truncate)``
    (mode 'reflect') of the image ``sharp`` that holds the stamps, for
    stamps that do not overlap: blur is linear, so each stamp is blurred in
    its own window (its side plus the kernel radius on each side) and the
    windows are added into the image, window pixels beyond the border folded
    back as 'reflect' does (the 1-d reflect-blur matrices are symmetric, so
    folding the output is reflecting the input). One Numba kernel over all
    images and stamps; the cost is that of the windows, not of the image.

    Parameters
    ----------
    shape : tuple of int
        (H, W) of an image.
    stamps : ndarray, shape (n, k, s, s)
        k stamps per image.
    origins : ndarray of int, shape (n, k, 2)
        Row and column of each stamp's top-left pixel in its image.
    sigma : ndarray, shape (n,)
        Blur of each image in pixels, >= 0.
    sparse : bool, default False
        Return the windows as ``SparseImages`` (k (s + 2R)^2 pixels an
        image, R the largest kernel radius) instead of dense images.

    Returns
    -------
    ndarray, shape (n, H * W), float64, or SparseImages
    """
    from ._cpu import blurred_windows_kernel
    H, W = shape
    w = gaussian_taps(sigma, truncate)
    n, k, s = stamps.shape[:3]
    side = s + w.shape[1] - 1
    index = np.empty((n, k * side * side), np.int64)
    value = np.empty((n, k * side * side))
    blurred_windows_kernel(np.ascontiguousarray(stamps, dtype=np.float64),
                           np.ascontiguousarray(origins, dtype=np.int64), w, H, W, index, value)
    images = SparseImages(index, value, H * W)
    return images if sparse else images.dense()


class ImageTask(Task):
    """Base of the visual tasks: L training items rendered into images.

    Subclasses set ``L``, ``input_dim``, ``image_shape`` and implement
    ``training_inputs(u, v, rng)`` and ``_test_inputs(y, rng)``. Image tasks
    drop the 1/sqrt(d) output factor and use alpha = gamma^2 alpha0 with
    alpha0 = 0.5 (App. G.3-G.4): ``scale_dim = 1``. For gamma > 1 the rule of
    App. G.1 with d dropped gives alpha = gamma alpha0 (the paper's vision
    runs stop at gamma = 1).
    """

    scale_dim = 1
    default_alpha0 = 0.5
    has_symbol_basis = False
    #: Shape of one input as an image (rows, columns) or, for feature tasks,
    #: (2, *feature_shape); ``weights_as_images`` reshapes to it.
    image_shape: tuple

    def _check_n_train(self, name, value, limit, why):
        """Validate a count of training items: an integer in 2..limit, ``why`` says the limit."""
        if value is None:
            raise TypeError(f"`{name}` must be given (an integer in 2..{limit}); got None.")
        value = check_int(name, value, minimum=2)
        if value > limit:
            raise ValueError(f"`{name}` must be an integer <= {limit}{why}; got {value}.")
        self.L = value
        return value

    def _item_stream(self, seed):
        """The generator of the task's fixed draws (items, split), from ``seed``.

        Records ``seed_entropy`` so that the task can be rebuilt; a Generator
        is refused since it could not be.
        """
        check_seed("seed", seed)
        if isinstance(seed, np.random.Generator):
            raise TypeError("`seed` must be an integer >= 0, a SeedSequence or None for a task, "
                            "so that it can be rebuilt; got a Generator.")
        ss = seed_sequence(seed)
        self.seed_entropy = ss.entropy
        return tagged_generator(ss, "symbols")

    def weights_as_images(self, w):
        """Reshape hidden weights into the shape of an input, for Fig. A1.

        Parameters
        ----------
        w : array_like, shape (m, input_dim)
            Hidden weights, one row per unit (``TrainResult.final_params.w``).

        Returns
        -------
        ndarray, shape (m, *image_shape), float64
            Grid tasks: (m, H, W), one image per unit, laid out as the
            inputs are. Feature tasks: (m, 2, ...), the two halves of each
            unit that read the two images of a pair.

        Raises
        ------
        ValueError
            When ``w`` is not a 2-d array with ``input_dim`` columns.
        """
        w = check_array("w", w, ndim=2)
        if w.shape[1] != self.input_dim:
            raise ValueError(f"`w` must have {self.input_dim} columns (the input dimension); "
                             f"got shape {w.shape}.")
        return w.reshape(w.shape[0], *self.image_shape)


class GridTask(ImageTask):
    """An image of ``grid`` x ``grid`` square cells of ``cell`` pixels, two of them filled.

    Its training inputs also come as ``SparseImages`` (``training_inputs_sparse``,
    ``has_sparse_inputs``), for the "sparse" training path.

    Subclasses set ``grid``, ``cell`` and ``stamp`` (the side of what fills a
    cell, placed at offset ``(cell - stamp) // 2`` inside it) and call
    ``_set_geometry``.
    """

    has_sparse_inputs = True
    #: Training images are the stamps themselves, not blurred (``stamp_pixels``).
    sharp_training = True

    def test_key(self):
        """The test items are the training items' complement: what sets them sets the test
        sets (``Task.test_key``), so one seed's models of equal tasks draw them once."""
        return self.training_key()

    def sparse_entries(self):
        """The pixels of a training image that the "sparse" path multiplies: its work's size.

        Sharp stamps (``stamp_pixels``): the two stamps' pixels, 2 stamp^2 (the cell
        GEMMs multiply a stamp whole). Blurred ones: the mean non-zero pixels of an
        image, estimated once from 256 training images of a fixed seed (every pair
        of items equally likely) and cached: the same number for the same task.
        """
        if self.sharp_training:
            return float(2 * self.stamp * self.stamp)
        if getattr(self, "_entries", None) is None:
            rng = np.random.default_rng(0)
            u = rng.integers(0, self.L, size=256)
            v = rng.integers(0, self.L, size=256)
            images = self.training_inputs_sparse(u, v, rng)
            self._entries = float(np.count_nonzero(images.value)) / 256
        return self._entries

    def stamp_pixels(self):
        """The pixels of each cell's stamp, where the training images are sharp stamps.

        Returns
        -------
        ndarray, shape (grid^2, stamp^2), int64, or None
            Row c: the pixels (row-major, in the stamp's order) that a stamp in
            cell c covers; the rows are disjoint. None where training images are
            blurred (their windows overlap). The "sparse" training path multiplies
            a cell's stamps by its weight rows in one GEMM where this is given.
        """
        if not self.sharp_training:
            return None
        return self._cell_origin[:, None] + self._stamp_offsets[None, :]

    def _set_geometry(self, grid, cell, stamp, name):
        """Lay out the grid; ``name`` is the parameter that sets ``grid``, for the memory check."""
        side = grid * cell
        # the cell origins (grid^2 x 3 int64), then an input image and its renderings
        check_fits([Need(8 * (3 * grid * grid + 4 * side * side), f"the image layout "
                         f"({grid} x {grid} cells of {cell} pixels, {side} x {side} images)",
                         name, grid)])
        self.grid, self.cell, self.stamp = grid, cell, stamp
        self.image_shape = (side, side)
        self.input_dim = side * side
        off = (cell - stamp) // 2
        r, c = np.divmod(np.arange(grid * grid), grid)
        self._cell_rc = np.stack([r * cell + off, c * cell + off], axis=1)  # (grid^2, 2)
        self._cell_origin = self._cell_rc[:, 0] * side + self._cell_rc[:, 1]
        i, j = np.divmod(np.arange(stamp * stamp), stamp)
        self._stamp_offsets = i * side + j                                  # (stamp^2,)

    def place_stamps(self, s1, s2, rng, sigma=None, sparse=False):
        """Put stamps s1, s2 (n, stamp, stamp) into two distinct random cells.

        The ordered pair of cells is uniform over the grid^2 (grid^2 - 1)
        choices, independently for each image.

        Parameters
        ----------
        s1, s2 : ndarray, shape (n, stamp, stamp)
        rng : numpy.random.Generator
        sigma : ndarray, shape (n,), optional
            Gaussian blur of each image in pixels (see
            ``place_blurred``); None for sharp images.
        sparse : bool, default False
            Return ``SparseImages`` (the stamps' pixels, or their blurred
            windows) instead of dense images; the draws from ``rng`` are the same.

        Returns
        -------
        ndarray, shape (n, H * W), float64, or SparseImages; sharp images
        are zero outside the two stamps.
        """
        n = s1.shape[0]
        n_cells = self.grid * self.grid
        c1 = rng.integers(0, n_cells, size=n)
        c2 = (c1 + rng.integers(1, n_cells, size=n)) % n_cells
        if sigma is not None:
            origins = np.stack([self._cell_rc[c1], self._cell_rc[c2]], axis=1)
            return place_blurred(self.image_shape, np.stack([s1, s2], axis=1), origins, sigma,
                                 sparse=sparse)
        index = np.concatenate([self._cell_origin[c][:, None] + self._stamp_offsets
                                for c in (c1, c2)], axis=1)
        value = np.concatenate([s.reshape(n, -1) for s in (s1, s2)], axis=1).astype(np.float64)
        if sparse:
            return SparseImages(index, value, self.input_dim, cells=np.stack([c1, c2], axis=1))
        img = np.zeros((n, self.input_dim))
        np.put_along_axis(img, index, value, axis=1)     # the two stamps never overlap
        return img

    def training_inputs(self, u, v, rng):
        """Images of training items u and v (index arrays of shape (n,)); shape (n, input_dim)."""
        return self._training_images(u, v, rng, sparse=False)

    def training_inputs_sparse(self, u, v, rng):
        """``training_inputs(u, v, rng)`` as ``SparseImages``, from the same draws."""
        return self._training_images(u, v, rng, sparse=True)

    def _training_images(self, u, v, rng, sparse):
        raise NotImplementedError(f"{type(self).__name__} must implement _training_images")

    def as_cells(self, x):
        """View flattened images or weights (n, H * W) as (n, grid, grid, cell, cell).

        Entry [k, r, c] is cell (row r, column c) of image k; used to compare
        the regions of a hidden unit in Fig. A1 or to read a pair's stamps.

        Raises
        ------
        ValueError
            When ``x`` is not a 2-d array with ``input_dim`` columns.
        """
        x = self.weights_as_images(x)
        g, c = self.grid, self.cell
        return x.reshape(x.shape[0], g, c, g, c).transpose(0, 1, 3, 2, 4)
