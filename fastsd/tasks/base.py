"""What every task tells the trainer: input size, output scale, learning rate.

The output scale and the learning-rate rule are properties of the task, not
flags: the symbol task uses 1/(gamma sqrt(d)) and alpha = gamma^2 d alpha0
(Sec. 2, App. G.1), while image tasks drop the sqrt(d) factor (App. G.3-G.4).
"""
import math

from .._memory import Need, check_fits

#: gamma * sqrt(d) of the paper's "gamma ~ 0" (lazy) models: gamma = 1e-5/sqrt(d) on the
#: symbol task (Sec. 2, App. G.1); tasks without the sqrt(d) factor use gamma = 1e-5.
LAZY_GAMMA_SQRT_D = 1e-5


def is_lazy(gamma):
    """True for the setting gamma = "lazy"; any other string is an error.

    Raises
    ------
    ValueError
        For a string other than "lazy" (e.g. "LAZY"), naming both spellings
        that are accepted.
    """
    if isinstance(gamma, str) and gamma != "lazy":
        raise ValueError(f"`gamma` must be a number > 0 or 'lazy' (the paper's gamma ~ 0); got "
                         f"{gamma!r}.")
    return gamma == "lazy"


class Task:
    """Base class of the same-different tasks.

    Subclasses set ``input_dim`` (the length p of a pair vector x),
    ``scale_dim`` (the d in 1/(gamma sqrt(d)); 1 for image tasks) and
    ``default_alpha0``, and implement ``sample_train`` and ``sample_test``.
    """

    input_dim: int
    scale_dim: int = 1
    default_alpha0: float = 0.1
    #: True when every training input lies in the span of a fixed set of
    #: vectors, so that the symbol-basis training path applies.
    has_symbol_basis: bool = False

    def test_key(self):
        """Return what determines ``sample_test``'s draws besides the generator, or None.

        Models whose tasks give equal keys and whose test generators are
        equal draw identical test sets, so an ensemble draws them once.
        None (the default) never shares.
        """
        return None

    def lazy_gamma(self):
        """Return the paper's "gamma ~ 0" for this task, what gamma="lazy" means.

        1e-5/sqrt(D) with D = ``scale_dim``: 1e-5 for the image tasks, which
        have no sqrt(d) factor (App. G.3-G.4); ``SameDifferent`` gives
        1e-5/sqrt(d).
        """
        return LAZY_GAMMA_SQRT_D / math.sqrt(self.scale_dim)

    def _check_sample_fits(self, n):
        """Raise ``SizeTooLargeError`` unless n pairs (float64 inputs and their parts) fit."""
        check_fits([Need(24 * n * self.input_dim, f"the pairs ({n} x {self.input_dim} inputs, "
                         f"float64, with their items)", "n", n)])

    def output_scale(self, gamma):
        """Return the factor 1/(gamma sqrt(scale_dim)) in front of the readout sum (Eq. 1)."""
        return 1.0 / (gamma * math.sqrt(self.scale_dim))

    def learning_rate(self, gamma, alpha0):
        """Return the SGD step size of App. G.1.

        alpha = gamma^2 D alpha0 for gamma <= 1 and gamma sqrt(D) alpha0 for
        gamma > 1, with D = ``scale_dim``.
        """
        if gamma <= 1.0:
            return gamma * gamma * self.scale_dim * alpha0
        return gamma * math.sqrt(self.scale_dim) * alpha0
