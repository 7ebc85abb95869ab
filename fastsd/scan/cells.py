"""The MLP predictor's cell: one training run of the same-different task.

``Cell`` validates and completes the settings of one "mlp" scan cell; the
paper's conventions it applies (the lazy gamma, the symbols' seed) live in
``fastsd.conventions``.
"""
from dataclasses import asdict, dataclass, fields


from .._validation import check_batch_size, check_choice, check_float, check_int
from ..conventions import resolve_task_seed


def settings_key(settings):
    """Return the stable key of a scan cell: ``name=repr(value)`` pairs sorted by name."""
    return ",".join(f"{k}={settings[k]!r}" for k in sorted(settings))


@dataclass(frozen=True)
class Cell:
    """One training run: a ``SameDifferent`` task and an MLP trained on it.

    Parameters
    ----------
    d, L : int
        Symbol dimension and number of training symbols.
    gamma : float
        Richness (Eq. 1).
    seed : int
        Model seed (initialisation, batches, test sets).
    width, steps : int
        Hidden units m and SGD steps.
    sigma2 : float, default 0.0
        Input noise variance.
    batch_size, eval_every, n_test : int
        As in ``fastsd.train``: batch_size even and >= 2, n_test >= 2.
    alpha0 : float, optional
        Base learning rate; None for the task's default (0.1).
    init : {"normal", "truncated"}
    task_seed : int, optional
        Seed of the training symbols; None derives it from (seed, L, d) with
        ``derive_task_seed``.
    root_d : bool, default True
        Keep the 1/sqrt(d) output prefactor (see ``SameDifferent``).

    Raises
    ------
    ValueError, TypeError
        When a field is out of range or of the wrong type.
    """

    d: int
    L: int
    gamma: float
    seed: int
    width: int
    steps: int
    sigma2: float = 0.0
    batch_size: int = 128
    eval_every: int = 1000
    n_test: int = 1024
    alpha0: float = None
    init: str = "normal"
    task_seed: int = None
    root_d: bool = True

    def __post_init__(self):
        ints = {"d": 1, "L": 2, "seed": 0, "width": 1, "steps": 1, "eval_every": 1, "n_test": 2}
        for name, minimum in ints.items():
            object.__setattr__(self, name, check_int(name, getattr(self, name), minimum))
        object.__setattr__(self, "batch_size", check_batch_size("batch_size", self.batch_size))
        object.__setattr__(self, "gamma", check_float("gamma", self.gamma, positive=True))
        object.__setattr__(self, "sigma2", check_float("sigma2", self.sigma2, nonnegative=True))
        if self.alpha0 is not None:
            object.__setattr__(self, "alpha0", check_float("alpha0", self.alpha0, positive=True))
        check_choice("init", self.init, ("normal", "truncated"))
        check_choice("root_d", self.root_d, (True, False))
        object.__setattr__(self, "task_seed",
                           resolve_task_seed(self.task_seed, self.seed, self.L, self.d))

    @property
    def key(self):
        """Stable string naming the cell: every field as ``name=repr(value)``, sorted by name."""
        return settings_key(asdict(self))

    def ensemble_key(self):
        """Return the fields an ensemble shares: all but gamma, seed and task_seed.

        Cells with equal ensemble keys train together in one
        ``train_ensemble`` call (same d, L, width, steps, ...).
        """
        return tuple(getattr(self, f.name) for f in fields(self)
                     if f.name not in ("gamma", "seed", "task_seed"))
