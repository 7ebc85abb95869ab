"""The same-different task on Gaussian symbols (Sec. 2, App. G.2)."""
import hashlib
import math
from typing import Optional, Union

import numpy as np
from numpy.typing import ArrayLike

from .._memory import check_fits, need
from .._philox import NormalStream
from .._rng import seed_sequence, tagged_generator
from .._validation import check_array, check_seed
from ..conventions import LAZY_GAMMA_SQRT_D
from ..params import MLP
from .base import Task
from .registry import register_task


class SameDifferent(Task):
    """Same-different task over L fixed Gaussian training symbols.

    Symbols s ~ N(0, I/d) are drawn once from ``seed``. An item is
    z = s + eta with eta ~ N(0, sigma2 I/d), drawn independently for every
    item, and a pair is x = (z1; z2) in R^{2d} with label y = 1 when the two
    symbols are the same (Sec. 2). Training pairs use the L symbols; test
    pairs use fresh symbols for every example.

    Parameters
    ----------
    d : int
        Symbol dimension, >= 1.
    L : int
        Number of training symbols, >= 2 (a different pair needs two).
    sigma2 : float, default 0.0
        Noise variance (times 1/d per coordinate), >= 0.
    root_d : bool, default True
        Keep the 1/sqrt(d) output factor and the d in alpha = gamma^2 d alpha0
        (Sec. 2). False drops both (output 1/gamma, alpha = gamma^2 alpha0),
        the scaling that App. F argues makes models lazier as d grows (Fig. F1).
    seed : int, SeedSequence or None
        Seed of the symbols. None draws fresh entropy, kept in ``seed_entropy``
        so that the task can be rebuilt. The symbols come from their own
        stream of the seed, apart from the streams that ``sample_train``,
        ``sample_test`` and ``train`` draw from the same integer.

    Attributes
    ----------
    symbols : ndarray, shape (L, d), float64
        The training symbols (``from_symbols`` takes given ones).
    seed_entropy : int or None
        The entropy of ``seed``, which rebuilds the symbols; None for given ones.
    symbols_sha256 : str or None
        SHA-256 of given symbols (``from_symbols``), None for drawn ones.
    noise_std : float
        sqrt(sigma2 / d), the standard deviation of each noise coordinate.
    input_dim : int
        2d, the length of a pair vector.

    Raises
    ------
    ValueError, TypeError
        When a parameter is out of range or of the wrong type.
    SizeTooLargeError
        Before drawing, when the L x d symbols would not fit in the memory
        available (the message names the larger of L and d).

    Examples
    --------
    >>> task = SameDifferent(d=16, L=4, seed=0)
    >>> x, y = task.sample_train(8, seed=1)
    >>> x.shape, int(y.sum())
    ((8, 32), 4)
    """

    default_alpha0 = 0.1

    def __init__(self, d: int, L: int, sigma2: float = 0.0,
                 seed: Union[int, np.random.SeedSequence, None] = None, root_d: bool = True):
        self._setup(d, L, sigma2, root_d)
        check_seed("seed", seed)
        if isinstance(seed, np.random.Generator):
            raise TypeError("`seed` must be an integer >= 0, a SeedSequence or None for a task, "
                            "so that its symbols can be rebuilt; got a Generator.")
        check_fits([need(16 * self.L * self.d, f"the training symbols ({self.L} x {self.d}, "
                         f"float64)", ("L", self.L), ("d", self.d))])
        ss = seed_sequence(seed)
        self.seed_entropy = ss.entropy
        self.symbols = (tagged_generator(ss, "symbols").standard_normal((self.L, self.d))
                        / np.sqrt(self.d))
        self.symbols_sha256: Optional[str] = None

    def _setup(self, d, L, sigma2, root_d):
        """Validate and set everything but the symbols and their seed."""
        c = MLP.check({"d": d, "L": L, "sigma2": sigma2, "root_d": root_d})
        self.d, self.L, self.sigma2 = c["d"], c["L"], c["sigma2"]
        self.root_d = c["root_d"]
        self.input_dim = 2 * self.d
        self.scale_dim = self.d if self.root_d else 1
        self.has_symbol_basis = self.sigma2 == 0.0
        self.noise_std = math.sqrt(self.sigma2 / self.d)

    @classmethod
    def from_symbols(cls, symbols: ArrayLike, sigma2: float = 0.0,
                     root_d: bool = True) -> "SameDifferent":
        """The task on given training symbols (orthonormal, clustered, embeddings, ...).

        Everything else is as for drawn symbols: training pairs are built from
        these L symbols (plus noise of variance sigma2 / d per coordinate),
        test pairs from fresh Gaussian symbols s ~ N(0, I/d), whose norm is
        about 1; symbols of another scale change what the test measures.

        Parameters
        ----------
        symbols : array_like, shape (L, d)
            Real and finite, L >= 2, d >= 1; copied as float64.
        sigma2 : float, default 0.0
        root_d : bool, default True
            As for ``SameDifferent``.

        Returns
        -------
        SameDifferent
            With ``seed_entropy`` None (no seed rebuilds these symbols) and
            ``symbols_sha256``, the SHA-256 of the float64 symbols, which the
            records of ``train`` and ``lazy_limit`` carry in its place.

        Raises
        ------
        ValueError
            For an array that is not 2-d, has fewer than 2 rows or no columns,
            holds NaN or inf, a row of zeros or two equal rows; for a bad
            ``sigma2`` or ``root_d``.
        TypeError
            For a complex or non-numeric array.

        Examples
        --------
        >>> import numpy as np
        >>> task = SameDifferent.from_symbols(np.eye(8))      # one-hot symbols, d = L = 8
        >>> task.d, task.L, task.symbols_sha256[:12]
        (8, 8, '912b8f2f0b10')
        """
        S = check_array("symbols", symbols, ndim=2)
        if S.shape[0] < 2 or S.shape[1] < 1:
            raise ValueError(f"`symbols` must be an array of shape (L, d) with L >= 2 (a "
                             f"different pair needs two) and d >= 1; got shape {S.shape}.")
        zero = np.flatnonzero(~S.any(axis=1))
        if zero.size:
            raise ValueError(f"`symbols` must have no row of zeros: a same pair of it is the "
                             f"zero input, whose output is 0 for every network (no biases); "
                             f"got zeros in row {zero[0]}"
                             + (f" (and {zero.size - 1} more)" if zero.size > 1 else "") + ".")
        _, first, inverse = np.unique(S, axis=0, return_index=True, return_inverse=True)
        original = first[inverse.ravel()]           # each row's first equal row
        repeat = np.flatnonzero(original != np.arange(S.shape[0]))
        if repeat.size:
            i = repeat[0]
            raise ValueError(f"`symbols` must have distinct rows: a different pair of two equal "
                             f"rows is a same pair labelled different; got row {i} equal to row "
                             f"{original[i]}"
                             + (f" (and {repeat.size - 1} more repeats)" if repeat.size > 1
                                else "") + ".")
        task = cls.__new__(cls)
        task._setup(S.shape[1], S.shape[0], sigma2, root_d)
        task.seed_entropy = None
        task.symbols = np.array(S, dtype=np.float64)
        task.symbols_sha256 = hashlib.sha256(task.symbols.tobytes()).hexdigest()
        return task

    def lazy_gamma(self) -> float:
        """Return the paper's "gamma ~ 0", 1e-5/sqrt(d) (Sec. 2), what gamma="lazy" means.

        The same with ``root_d=False``, as in the scans (``fastsd.scan.lazy_gamma``).
        """
        return LAZY_GAMMA_SQRT_D / math.sqrt(self.d)

    def __repr__(self):
        extra = "" if self.root_d else ", root_d=False"
        return f"SameDifferent(d={self.d}, L={self.L}, sigma2={self.sigma2}{extra})"

    def _pairs_to_x(self, s1, s2, rng):
        x = np.concatenate([s1, s2], axis=-1)
        if self.sigma2 > 0:
            x = x + rng.standard_normal(x.shape) * self.noise_std
        return x

    def training_noise(self, rng):
        """The noise source of a training run: for sigma2 > 0 a counter-based stream
        (``fastsd._philox.NormalStream``, keyed by one draw from ``rng``), so that every
        backend draws the same noise where it runs; for sigma2 = 0, ``rng`` (unused)."""
        return NormalStream(rng) if self.sigma2 > 0 else rng

    def training_inputs(self, u, v, rng):
        """Return x = (s_u + eta; s_v + eta'), shape (..., 2d), for index arrays u, v.

        ``rng``: a Generator, or in training the ``NormalStream`` of
        ``training_noise``, for which u and v are batches, shape (rows,) for one
        step or (steps, rows) for consecutive steps.
        """
        return self._pairs_to_x(self.symbols[u], self.symbols[v], rng)

    def test_key(self):
        """Test pairs use fresh symbols: they depend on d and sigma2 only, not on the L symbols."""
        return ("SameDifferent", self.d, self.sigma2)

    def _test_inputs(self, y, rng):
        """Test pairs from fresh symbols s ~ N(0, I/d): a same pair repeats one, a different
        pair uses two independent ones; noise is added to each item as in training."""
        n = len(y)
        s1 = rng.standard_normal((n, self.d)) / np.sqrt(self.d)
        s2 = rng.standard_normal((n, self.d)) / np.sqrt(self.d)
        s2 = np.where(y[:, None] == 1.0, s1, s2)
        return self._pairs_to_x(s1, s2, rng)


register_task("symbols", {"d": None, "sigma2": 0.0, "root_d": True},
              lambda L, task_seed, d, sigma2, root_d: SameDifferent(
                  d, L, sigma2=sigma2, seed=task_seed, root_d=root_d), visual=False)
