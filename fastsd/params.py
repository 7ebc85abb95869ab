"""The parameters of the public entry points, declared once.

Each ``Param`` holds a setting's name, type, valid range, default and help
text. The Python entry points check their arguments with it
(``Spec.check``), the scan predictors take their settings and defaults from
it, and the CLI builds its options from it (``Spec.add_arguments``), so the
three cannot disagree; tests/test_params.py holds them equal and generates
the bad-value tests from the declared ranges (``Param.invalid``).

Specs: ``TRAINING`` (the training settings an ensemble shares: ``fastsd.train``,
``fastsd.train_ensemble``), ``MLP`` (a trained network on the symbol task: those and
the task's, the "mlp" scan cell, ``fastsd train``), ``LAZY_LIMIT`` (``fastsd.kernels.lazy_limit``,
the "lazy_limit" cell, ``fastsd ntk``), ``WALKERS`` (``fastsd.walkers.simulate``,
the "walkers" cell, ``fastsd walkers``), ``BAYES`` (``fastsd.bayes.accuracy``
through the "bayes" cell), ``WEIGHT_STRUCTURE``, ``WEIGHT_IMAGES`` and
``MAX_MARGIN`` (the cells of Fig. 1a/1d, A1 and C1) and ``CALIBRATE``
(``fastsd.mlp.calibration.calibrate``, ``fastsd calibrate``).
"""
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TypeVar, Union

from . import constraints
from ._dispatch import BACKENDS
from ._validation import check_choice
from .schedules import Evaluations

#: A decorated function's type (``Spec.keywords`` keeps it).
F = TypeVar("F", bound=Callable[..., Any])
class _Required:
    """The type of ``REQUIRED``: one object, pickled and copied as itself."""

    def __repr__(self):
        return "REQUIRED"

    def __reduce__(self):
        return "REQUIRED"


#: The default of a setting that must be given.
REQUIRED = _Required()
#: The kinds a declaration may name by a string (``fastsd.constraints.BY_KIND``).
KINDS = tuple(constraints.BY_KIND)


@dataclass(frozen=True)
class Param:
    """One setting of a public entry point.

    Attributes
    ----------
    name : str
        The Python name (the CLI option is ``--name`` with "_" as "-").
    kind : str or fastsd.constraints.Constraint
        The valid values: a ``Constraint`` (e.g. ``Integer(1)``, ``Options(("a", "b"))``), or
        the name of one in ``KINDS``, built from the range fields below; read back as the
        name, with the object as ``constraint``. "int": an integer in [minimum, maximum];
        "float": finite (> 0 where ``positive``, >= 0 where ``nonnegative``); "choice": one of
        ``choices``; "bool": True or False (NumPy's too); "sign": +1 or -1 (a number, not a bool), returned as an int;
        "batch_size": an even integer >= 2; "gamma": a float > 0 or "lazy";
        "seed": an integer >= 0; "pairs": "all" or an integer >= 2 (at most
        L^2, checked where L is known); "schedule": evaluation steps, "log" or
        integers >= 1 (``fastsd.schedules.check_eval_at``, which gives one text for
        one schedule: "1,3,10"); "activation": a name in ``fastsd.activations.ACTIVATIONS``
        (at the time of the check), or an ``Activation`` (returned as its name where it is
        that name's).
    help : str
        One line for ``--help`` and the docs, without the default.
    default : object
        ``REQUIRED`` when the setting must be given.
    minimum, maximum : int, optional
        Inclusive integer range ("int").
    positive, nonnegative : bool
        Float range ("float"): > 0 or >= 0 (finite either way).
    choices : tuple
        The valid values ("choice").
    optional : bool
        None is valid too (it means "derived", as a task seed from (seed, L, d),
        or "the task's default", as alpha0).
    doc : str, optional
        The description in a docstring's Parameters section (``Spec.numpydoc``);
        default ``help``.
    constraint : fastsd.constraints.Constraint
        The valid values (not an argument: from ``kind``); it checks values, lists the
        values to refuse, words the range and parses the CLI's text.

    Raises
    ------
    ValueError
        For ``kind`` neither a ``Constraint`` nor one of ``KINDS``.
    """

    name: str
    kind: Union[str, constraints.Constraint]
    help: str
    default: object = REQUIRED
    minimum: Optional[int] = None
    maximum: Optional[int] = None
    positive: bool = False
    nonnegative: bool = False
    choices: tuple = ()
    optional: bool = False
    doc: Optional[str] = None
    constraint: constraints.Constraint = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if isinstance(self.kind, constraints.Constraint):
            given = self.kind
        else:
            given = constraints.BY_KIND[check_choice("kind", self.kind, KINDS)](self)
        # the range fields read what the constraint holds, whichever way it was declared
        for name in ("minimum", "maximum", "positive", "nonnegative", "choices"):
            object.__setattr__(self, name, getattr(given, name, getattr(self, name)))
        object.__setattr__(self, "kind", given.kind)
        object.__setattr__(self, "constraint", given)

    @property
    def required(self):
        return self.default is REQUIRED

    @property
    def flag(self):
        """The CLI option, e.g. ``--batch-size``."""
        return "--" + self.name.replace("_", "-")

    def check(self, value):
        """Return ``value`` validated and normalised (``constraint.check``; None where
        ``optional``).

        Raises
        ------
        ValueError
            Out of range, naming the parameter, the range and the value.
        TypeError
            Of the wrong type.
        """
        if value is None and self.optional:
            return None
        return self.constraint.check(self.name, value)

    def invalid(self):
        """Values this parameter must refuse, each with the exception it raises.

        Generated from the declared range (``constraint.invalid``): just outside it, a
        value of the wrong type, and (floats) non-finite values.
        """
        return self.constraint.invalid()

    def valid(self):
        """The valid values in words, e.g. "an integer >= 2"."""
        return self.constraint.valid()

    def numpydoc(self):
        """This parameter's entry in a numpydoc Parameters section (unindented lines)."""
        import textwrap

        kind = self.constraint.doc_type
        if self.optional:
            kind += ", optional"
        elif not self.required:
            kind += f", default {self.default!r}"
        text = self.doc or f"{self.help[:1].upper()}{self.help[1:]}: {self.valid()}."
        return [f"{self.name} : {kind}"] + textwrap.wrap(text, 84, initial_indent="    ",
                                                         subsequent_indent="    ")

    def add_argument(self, parser):
        """Add this parameter's option to an argparse parser (or argument group)."""
        default = "" if self.required or self.default is None else f"; default {self.default}"
        kw = {"help": f"{self.help} ({self.valid()}{default})"}
        parse = self.constraint.parse()
        if parse is not None:
            kw["type"] = parse
        if self.required:
            kw["required"] = True
        else:
            kw["default"] = self.default
        parser.add_argument(self.flag, dest=self.name, **kw)


class Bound(Mapping):
    """Settings of one ``Spec`` checked once (``Spec.bind``): a read-only mapping, its
    values also as attributes (``bound.width``).

    Attributes
    ----------
    spec : Spec
        Whose settings these are.
    evaluations : fastsd.schedules.Evaluations or None
        The evaluation steps of ``steps``, ``eval_every`` and ``eval_at``, where the
        settings hold the first two.
    """

    __slots__ = ("spec", "_values", "evaluations")

    def __init__(self, spec, values, evaluations=None):
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "evaluations", evaluations)

    def __getitem__(self, name):
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __getattr__(self, name):
        if name.startswith("_"):        # not a setting (copy and pickle probe such names)
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"no setting {name!r}; settings: "
                                 f"{', '.join(self._values)}") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"settings bound by Spec.bind are read-only; got a write to "
                             f"{name!r}")

    def __reduce__(self):
        # pickled and copied as its parts (a copy's spec is no longer this spec's very
        # objects, so a spec that meets the copy checks its settings again)
        return Bound, (self.spec, self._values, self.evaluations)

    def __repr__(self):
        return "Bound(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"

    def covers(self, spec):
        """Whether these settings hold every one of ``spec``'s, checked by its very
        ``Param`` objects (so ``spec.bind`` need not check them again)."""
        return all(self.spec.get(n) is p and n in self._values for n, p in spec.items())


class Spec(dict):
    """The parameters of one entry point, by name, in declaration order.

    ``always_keyed`` (keyword-only) is, for a spec whose settings key a scan
    store (``keyed``), the frozen tuple of the settings its cells' keys named
    from the start: each of them names its value in every cell's key; any other
    setting (one added since) enters a key only off its default. So a
    parameter added with a default leaves the key of every cell stored before
    it unchanged. Default (): only the settings off their defaults are keyed.

    Raises
    ------
    ValueError
        For a name in ``always_keyed`` that is not one of ``params``.
    """

    def __init__(self, *params, always_keyed=()):
        super().__init__((p.name, p) for p in params)
        unknown = [n for n in always_keyed if n not in self]
        if unknown:
            raise ValueError(f"`always_keyed` must name this spec's settings; got "
                             f"{unknown[0]!r}, which is none of {', '.join(self)}.")
        self.always_keyed = tuple(always_keyed)

    def defaults(self, names=None):
        """{name: default} of the settings that have one (of ``names``, default all)."""
        return {n: p.default for n, p in self.items()
                if not p.required and (names is None or n in names)}

    def required(self):
        """The names of the settings that must be given."""
        return tuple(n for n, p in self.items() if p.required)

    def check(self, settings):
        """Return ``settings`` with each declared one validated (others left as they are),
        and an evaluation schedule checked against the steps (``eval_at`` beyond ``steps``
        is refused here, before anything runs): ``bind``, as a dict."""
        return dict(self.bind(settings))

    def keyed(self, settings):
        """What a scan cell's key names of ``settings``: those in ``always_keyed``, the
        others that are off their defaults, and any that are not this spec's parameters."""
        return {k: v for k, v in settings.items()
                if k not in self or k in self.always_keyed or v != self[k].default}

    def pick(self, settings):
        """The entries of ``settings`` that are this spec's parameters, in its order: a
        ``Bound`` of this spec where ``settings`` is a ``Bound`` of these settings, else
        a dict."""
        out = {n: settings[n] for n in self if n in settings}
        if isinstance(settings, Bound) and settings.covers(self):
            return Bound(self, out, settings.evaluations if "steps" in out else None)
        return out

    def bind(self, settings, caller=None, others=()):
        """``settings`` checked once, as a frozen ``Bound`` that inner code takes as it is.

        Each declared setting is validated (``Param.check``; others are left as they are);
        where ``steps`` and ``eval_every`` are among them, their ``Evaluations`` are built
        once (it checks ``eval_at`` and refuses steps beyond ``steps``, before anything
        runs) and kept as ``Bound.evaluations``. A ``Bound`` of these very settings (this
        spec's ``Param`` objects, as ``MLP`` shares ``TRAINING``'s) is not checked again.

        Parameters
        ----------
        settings : mapping
            {name: value}.
        caller : str, optional
            The function whose keyword arguments ``settings`` are: then a name that is
            neither a setting nor one of ``others`` (its other keywords) and a required
            setting not given are refused as Python words it, and the settings not given
            take their defaults.
        others : sequence of str
            ``caller``'s other keywords, named in the message of an unknown one.

        Returns
        -------
        Bound

        Raises
        ------
        TypeError
            For an unknown or missing keyword of ``caller``; a setting of the wrong type.
        ValueError
            For a setting out of range (``Param.check``).
        """
        if isinstance(settings, Bound) and settings.covers(self):
            return self.pick(settings)
        if caller is not None:
            unknown = sorted(set(settings) - set(self))
            if unknown:
                raise TypeError(f"{caller}() got an unexpected keyword argument "
                                f"{unknown[0]!r}; valid: {', '.join(sorted([*self, *others]))}.")
            missing = [n for n in self.required() if n not in settings]
            if missing:
                raise TypeError(f"{caller}() missing required keyword argument {missing[0]!r}.")
            settings = {**self.defaults(), **settings}
        timed = "eval_at" in self and {"steps", "eval_every"} <= set(settings)
        out = {k: self[k].check(v) if k in self and not (timed and k == "eval_at") else v
               for k, v in settings.items()}
        evaluations = None
        if timed:       # the schedule's one check (Evaluations gives its recorded text)
            evaluations = Evaluations(out["steps"], out["eval_every"], settings.get("eval_at"))
            if "eval_at" in out:
                out["eval_at"] = evaluations.eval_at
        return Bound(self, out, evaluations)

    def keywords(self, func: F) -> F:
        """Decorate ``func``, whose ``**kwargs`` are this spec's settings: its signature
        (``inspect.signature``) names them as keyword-only parameters before its own
        keywords, and its docstring's line ``{settings}`` becomes their numpydoc entries."""
        import inspect

        sig = inspect.signature(func)
        own = [q for q in sig.parameters.values() if q.kind is not q.VAR_KEYWORD]
        mine = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY,
                                  **({} if p.required else {"default": p.default}))
                for n, p in self.items()]
        positional = [q for q in own if q.kind is not q.KEYWORD_ONLY]
        target: Any = func          # a function's attributes, which its type does not name
        target.__signature__ = sig.replace(parameters=positional + mine + [
            q for q in own if q.kind is q.KEYWORD_ONLY])
        indent = " " * 4
        entries = "\n".join(indent + line for p in self.values() for line in p.numpydoc())
        target.__doc__ = (func.__doc__ or "").replace(indent + "{settings}", entries)
        return func

    def add_arguments(self, parser, names=None, required_group=True):
        """Add the options of ``names`` (default all) to ``parser``; required ones in a
        "required" group."""
        req = parser.add_argument_group("required") if required_group else parser
        for n, p in self.items():
            if names is None or n in names:
                p.add_argument(req if p.required else parser)


def seed_param(help="seed", default=0):
    """The seed of an entry point (the Python API's None draws fresh entropy, recorded)."""
    return Param("seed", "seed", help, default)


def _task_seed():
    return Param("task_seed", "seed", "seed of the training symbols (default: derived from "
                 "seed, L and d)", None, optional=True)


def _common(d=True):
    return ((Param("d", "int", "symbol dimension d", minimum=1),) if d else ()) + (
        Param("L", "int", "number of training symbols L", minimum=2),)


#: Where to run, for every entry point that has a choice (``fastsd._dispatch``).
BACKEND = Param("backend", "choice", "where to run: numpy (the float64 reference), cpu (Numba), "
                "cuda (a GPU), or auto, the fastest available", "auto",
                choices=BACKENDS)

_EVAL_AT_DOC = ("Extra evaluation steps besides every ``eval_every`` (``fastsd.schedules``): "
                "None (the paper's protocol), \"log\" (1, 2, 3, 5, 10, 20, 30, 50, ... up to "
                "``steps``) or steps from 1 to ``steps`` (an integer, a sequence or "
                "\"1,3,10\"), recorded as their text. Their test sets come from a stream of "
                "their own, so the evaluations every ``eval_every`` steps draw the test sets "
                "they draw without them; the best test accuracy is then the best over all "
                "evaluations (``fastsd.schedules.protocol_best`` reads the paper's), and the "
                "training loss of an evaluation is the mean since the one before it.")

#: The settings of training that the models of an ensemble share (``fastsd.train_ensemble``'s
#: keywords besides where and how it runs). A setting added here reaches ``fastsd.train``,
#: ``train_ensemble`` and ``memory_needs`` (their signatures and docstrings), the "mlp",
#: "mlp_image" scan cells and ``fastsd train``'s options, and the records' configuration;
#: the engines that use it read it from ``train_ensemble``'s plan.
#:
#: The specs whose settings key a scan store (``MLP``, ``LAZY_LIMIT``, ``WALKERS``,
#: ``WEIGHT_STRUCTURE``, ``WEIGHT_IMAGES``, ``MAX_MARGIN``, ``BAYES``) name in
#: ``always_keyed`` the settings their cells' keys named from the start; that tuple stays as
#: it is when a parameter is added, so that the new one, at its default, leaves the key of
#: every stored cell unchanged (``Spec.keyed``) and no store computes its cells again.
TRAINING = Spec(
    Param("width", "int", "hidden units m", minimum=1, doc="Hidden units m, >= 1."),
    Param("steps", "int", "SGD steps", minimum=1, doc="SGD steps, >= 1."),
    Param("batch_size", "batch_size", "SGD batch size, even (half same pairs)", 128,
          doc="Pairs per SGD step, even and >= 2: exactly half of every batch are same pairs "
              "(App. G.1)."),
    Param("eval_every", "int", "steps between test evaluations", 1000, minimum=1,
          doc="Steps between test evaluations, >= 1; the last step is always evaluated."),
    Param("eval_at", "schedule", "extra evaluation steps besides every eval_every", None,
          optional=True, doc=_EVAL_AT_DOC),
    Param("n_test", "int", "fresh test pairs per evaluation", 1024, minimum=2,
          doc="Fresh test pairs per evaluation, >= 2."),
    Param("alpha0", "float", "base learning rate alpha0 (default: the task's, 0.1)", None,
          positive=True, optional=True,
          doc="Base learning rate, > 0; None for the task's (0.1 for ``SameDifferent``). The "
              "step size is alpha = gamma^2 d alpha0 for gamma <= 1 and gamma sqrt(d) alpha0 "
              "for gamma > 1 (App. G.1)."),
    Param("init", "choice", "initialisation of the hidden weights", "normal",
          choices=("normal", "truncated"),
          doc="Initialisation of the hidden weights (``fastsd.mlp.model.init_params``)."),
    Param("activation", "activation", "the hidden units' activation sigma", "relu",
          doc="The hidden units' activation sigma (``fastsd.activations``): a name of "
              "``ACTIVATIONS`` or an ``Activation``; the unit is sigma(sqrt(m) w.x) / sqrt(m) "
              "(relu(w.x) for ReLU, Eq. 1). Every backend trains any, on every path. "
              "Recorded (and keyed in a scan) only off \"relu\"."),
)

MLP = Spec(
    *_common(),
    Param("gamma", "gamma", "richness gamma ('lazy': 1e-5/sqrt(d))"),
    seed_param("model seed: initialisation, batches, test sets"),
    *TRAINING.values(),
    Param("sigma2", "float", "input noise variance sigma^2", 0.0, nonnegative=True),
    _task_seed(),
    Param("root_d", "bool", "keep the 1/sqrt(d) output prefactor", True),
    always_keyed=("d", "L", "gamma", "seed", "width", "steps", "batch_size", "eval_every",
                  "n_test", "alpha0", "init", "sigma2", "task_seed", "root_d"),
)

LAZY_LIMIT = Spec(
    *_common(),
    Param("method", "choice", "the limit network's training: gradient flow of the BCE, kernel "
          "regression, kernel SGD, or the flow's first direction (the kernel mean-difference "
          "classifier)", "logistic_flow",
          choices=("logistic_flow", "regression", "logistic_sgd", "mean_difference")),
    Param("kernel", "choice", "the limit kernel: NTK (both layers trained) or NNGP (the readout "
          "alone)", "ntk", choices=("ntk", "nngp")),
    Param("pairs", "pairs", "training pairs: 'all' L^2, or a number sampled", "all"),
    seed_param("seed of the pair sample, test sets and batches"),
    _task_seed(),
    Param("n_test", "int", "fresh test pairs per evaluation", 1024, minimum=2),
    Param("steps", "int", "SGD steps' worth of flow time", 25_000, minimum=1),
    Param("eval_every", "int", "steps between test evaluations", 1000, minimum=1),
    Param("eval_at", "schedule", "extra evaluation steps besides every eval_every", None,
          optional=True, doc=_EVAL_AT_DOC),
    Param("alpha0", "float", "base learning rate alpha0 (default: the task's, 0.1)", None,
          positive=True, optional=True),
    Param("ridge", "float", "regression ridge, relative to the mean kernel diagonal", 1e-8,
          nonnegative=True),
    Param("solver", "choice", "dense kernel, matrix-free CG, Kronecker-structured kernel "
          "(all pairs), or auto: the one measured faster that fits", "auto",
          choices=("auto", "dense", "cg", "kron")),
    Param("dtype", "choice", "arithmetic of the Kronecker products (solver kron; auto takes "
          "it): float64, or float32 at twice the speed and ~1e-6 relative error a product",
          "float64", choices=("float64", "float32")),
    Param("activation", "activation", "the network's activation sigma, whose kernels the limit "
          "takes", "relu",
          doc="The network's activation sigma (``fastsd.activations``): a name of "
              "``ACTIVATIONS`` or an ``Activation``; ReLU's arc-cosine kernels, any other's "
              "closed forms or Mehler's series (float64, backends \"numpy\" and \"cpu\"; "
              "solver \"auto\" takes \"dense\", else \"cg\"). Recorded (and keyed) only "
              "off \"relu\"."),
    always_keyed=("d", "L", "method", "kernel", "pairs", "seed", "task_seed", "n_test", "steps",
                  "eval_every", "alpha0", "ridge", "solver"),
)

WALKERS = Spec(
    Param("L", "int", "number of training symbols L", minimum=2, maximum=1 << 16),
    Param("batch_size", "int", "samples per batch N (any N >= 1; App. C.3)", minimum=1),
    Param("n_iters", "int", "batches per run", minimum=1),
    Param("readout", "sign", "readout sign a", 1),
    Param("n_walkers", "int", "independent walkers (runs)", 100, minimum=1),
    seed_param(),
    Param("walker_offset", "int", "global index of the first walker", 0, minimum=0),
    always_keyed=("L", "batch_size", "n_iters", "readout", "n_walkers", "seed", "walker_offset"),
)

CALIBRATE = Spec(
    Param("dtype", "choice", "floating-point type of the training arithmetic to measure",
          "float32", choices=("float32", "float64")),
    Param("repeats", "int", "timed runs per shape; the fastest is kept", 3, minimum=1),
    Param("seconds", "float", "length of each timed run, in seconds", 0.1, positive=True),
)

def _trained_model():
    """The settings of a figure's rich-and-lazy pair of trained models (Fig. 1a/1d, A1)."""
    return (Param("model", "choice", "rich (gamma = 1) or lazy (gamma = 1e-5/sqrt(d), 1e-5 on "
                  "images)", choices=("rich", "lazy")),
            seed_param("seed of the task, the initialisation, batches and test sets"),
            TRAINING["width"], TRAINING["steps"], TRAINING["eval_every"])


WEIGHT_STRUCTURE = Spec(
    *_common(), *_trained_model(),
    always_keyed=("d", "L", "model", "seed", "width", "steps", "eval_every"))

WEIGHT_IMAGES = Spec(
    Param("task", "choice", "the visual task, images two cells a side (App. A)",
          choices=("PSVRT", "Pentomino")),
    *_trained_model(),
    always_keyed=("task", "model", "seed", "width", "steps", "eval_every"))

MAX_MARGIN = Spec(
    *_common(),
    Param("P", "int", "sampled training pairs P", minimum=2),
    always_keyed=("d", "L", "P"),
)

BAYES = Spec(
    *_common(),
    Param("sigma2", "float", "input noise variance sigma^2", nonnegative=True),
    Param("prior", "choice", "the prior over the task", "generalizing",
          choices=("generalizing", "memorizing")),
    Param("n_test", "int", "Monte Carlo test pairs", 20_000, minimum=1),
    seed_param("seed of the test pairs"),
    _task_seed(),
    always_keyed=("d", "L", "sigma2", "prior", "n_test", "seed", "task_seed"),
)

