"""The MLP predictor's cell: one training run of the same-different task.

``Cell`` validates and completes the settings of one "mlp" scan cell. Its
fields, defaults and checks are the declared parameters ``fastsd.params.MLP``;
the paper's conventions it applies (the lazy gamma, the symbols' seed) live in
``fastsd.conventions``.
"""
from dataclasses import asdict, field, fields, make_dataclass

from ..conventions import is_lazy, lazy_gamma, resolve_task_seed
from ..params import MLP, TRAINING


def settings_key(settings):
    """Return the stable key of a scan cell: ``name=repr(value)`` pairs sorted by name."""
    return ",".join(f"{k}={settings[k]!r}" for k in sorted(settings))


_DOC = """One training run: a ``SameDifferent`` task and an MLP trained on it.

    Its fields are the parameters declared in ``fastsd.params.MLP``, with their
    defaults; all are keyword arguments.

    Parameters
    ----------
    d, L : int
        Symbol dimension (>= 1) and number of training symbols (>= 2).
    gamma : float or "lazy"
        Richness (Eq. 1); "lazy" is the paper's 1e-5/sqrt(d), stored as that number.
    seed : int, default 0
        Model seed (initialisation, batches, test sets).
    width, steps : int
        Hidden units m and SGD steps.
    sigma2 : float, default 0.0
        Input noise variance.
    batch_size, eval_every, n_test : int, default 128, 1000, 1024
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


def _post_init(self):
    bound = MLP.bind({f.name: getattr(self, f.name) for f in fields(self)})
    object.__setattr__(self, "_training", TRAINING.pick(bound))
    s = dict(bound)
    if is_lazy(s["gamma"]):
        s["gamma"] = lazy_gamma(s["d"])
    s["task_seed"] = resolve_task_seed(s["task_seed"], s["seed"], s["L"], s["d"])
    for name, value in s.items():
        object.__setattr__(self, name, value)


def _key(self):
    """Stable string naming the cell: every field as ``name=repr(value)``, sorted by name
    (a field added since the first stored cells left out at its default,
    ``fastsd.params.Spec.keyed``)."""
    return settings_key(MLP.keyed(asdict(self)))


def _training(self):
    """The cell's training settings bound once (``fastsd.params.TRAINING``, a
    ``fastsd.params.Bound``): ``train_ensemble(..., config=cell.training)`` takes them
    without checking them again."""
    return self._training


def _ensemble_key(self):
    """Return the fields an ensemble shares: all but gamma, seed and task_seed.

    Cells with equal ensemble keys train together in one ``train_ensemble``
    call (same d, L, width, steps, ...).
    """
    return tuple(getattr(self, f.name) for f in fields(self)
                 if f.name not in ("gamma", "seed", "task_seed"))


Cell = make_dataclass(
    "Cell",
    [(n, object) for n, p in MLP.items() if p.required]
    + [(n, object, field(default=p.default)) for n, p in MLP.items() if not p.required],
    frozen=True, kw_only=True,
    namespace={"__doc__": _DOC, "__module__": __name__, "__post_init__": _post_init,
               "key": property(_key), "training": property(_training),
               "ensemble_key": _ensemble_key})
