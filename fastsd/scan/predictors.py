"""What a scan cell can ask: one predictor per way of computing test accuracy.

A predictor turns the settings of a cell into a record. It has three jobs:

- ``prepare(settings)`` validates one cell's settings and fills in the
  defaults, before anything runs (an unknown setting, a missing one or a value
  out of range raises here);
- ``group_key(settings, backend)`` says which cells can share one call (the
  "mlp" predictor trains cells with the same d, L, width, steps, ... as one
  lockstep ensemble: on the CPU those of one seed, on the GPU all seeds);
- ``run_group(settings_list, backend, dtype)`` computes the records of a
  group. It runs in a worker process, so it must be a plain function of its
  arguments.

Before a scan runs, ``seconds(group, backend, dtype)`` predicts a group's
wall time on one thread and ``memory(group, backend, dtype)`` the bytes it
allocates; both are None where the predictor has no model (the "mlp"
predictors use the measured cost model of ``fastsd.mlp.costs`` and the
memory needs of ``train_ensemble``). ``cost(settings)`` orders the groups,
largest first.

``PREDICTORS`` maps the names that ``fastsd.scan.run`` accepts to them.
"""
import functools
import time
from dataclasses import asdict

from .. import __version__
from .._dispatch import traits
from .._json import strict_json
from .._validation import check_choice, check_int
from ..conventions import is_lazy, resolve_task_seed
from ..params import (BAYES, LAZY_LIMIT, MAX_MARGIN, MLP, TRAINING, WALKERS, WEIGHT_IMAGES,
                      WEIGHT_STRUCTURE)
from ..tasks import TASKS
from .cells import Cell, settings_key


def visual_tasks():
    """The tasks "mlp_image" cells name: ``fastsd.tasks.TASKS``' visual ones."""
    return {name: e for name, e in TASKS.items() if e.visual}


def _task_settings():
    """The visual tasks' own settings (a cell holds them all, the other tasks' as None)."""
    return tuple(n for e in visual_tasks().values() for n in e.settings)


class _RegisteredDefaults:
    """The "defaults" of ``MLPImagePredictor`` (on the class and its instances alike): the
    training settings its ``_SHARED`` names, at their defaults, and every visual task's own
    settings, None, as the task registry stands."""

    def __get__(self, obj, cls):
        return {**MLP.defaults(cls._SHARED), **dict.fromkeys(_task_settings())}


class Predictor:
    """Base class: single-cell groups, settings checked against ``required`` and ``defaults``."""

    #: Name used by ``fastsd.scan.run``.
    name = None
    #: The declared parameters (``fastsd.params``) of a predictor whose settings are one
    #: spec: ``required`` and ``defaults`` come from it, and ``validate`` checks with it.
    spec = None
    #: Settings every cell must give.
    required = ()
    #: Optional settings and their defaults.
    defaults = {}
    #: Result fields of a record that are numbers (or null): what the figures read. A stored
    #: record where one is not is no cell of this predictor (``fastsd.scan.records.cell_records``).
    numbers = ()
    #: Whether a group may be run as smaller groups with the same records (a lockstep
    #: ensemble whose models' numbers do not depend on it): the scan splits the groups that
    #: would set its critical path on many workers (``fastsd.scan.scheduling``).
    splittable = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.spec is not None:
            cls.required, cls.defaults = cls.spec.required(), cls.spec.defaults()

    def prepare(self, settings):
        """Return the cell's complete settings, validated.

        Raises
        ------
        ValueError
            For an unknown or missing setting, or a value out of range.
        TypeError
            For a value of the wrong type.
        """
        known = set(self.required) | set(self.defaults)
        unknown = sorted(set(settings) - known)
        if unknown:
            raise ValueError(f"`{unknown[0]}` is not a setting of predictor {self.name!r}; "
                             f"valid settings: {', '.join(sorted(known))}.")
        missing = [k for k in self.required if k not in settings]
        if missing:
            raise ValueError(f"`{missing[0]}` must be given for predictor {self.name!r} "
                             f"(as an axis or a fixed setting); got settings "
                             f"{', '.join(sorted(settings))}.")
        return self.validate({**self.defaults, **settings})

    def validate(self, settings):
        """Check and normalise complete settings; return them.

        With a ``spec``: each setting checked as declared, and a ``task_seed``
        of None derived from (seed, L, d) (``resolve_task_seed``).
        """
        if self.spec is None:
            return settings
        s = self.spec.check(settings)
        if "task_seed" in s:
            s["task_seed"] = resolve_task_seed(s["task_seed"], s["seed"], s["L"], s["d"])
        return s

    def key(self, settings):
        """Return the stable key of a prepared cell: a setting the spec did not key from the
        start (not in its ``always_keyed``) is left out at its default
        (``fastsd.params.Spec.keyed``), so adding one keeps every stored key."""
        return settings_key(settings if self.spec is None else self.spec.keyed(settings))

    def group_key(self, settings, backend="cpu"):
        """Return the key of the group the cell runs in (default: its own key).

        ``backend`` is the concrete backend the group will run on ("numpy",
        "cpu" or "cuda"): what is worth sharing can depend on it.
        """
        return self.key(settings)

    def run_group(self, group, backend="auto", dtype=None):
        """Return one record (a JSON-ready dict) per prepared cell in ``group``."""
        raise NotImplementedError

    def cost(self, settings):
        """Relative cost of a prepared cell, to start the largest groups first (default 1)."""
        return 1.0

    def seconds(self, group, backend="cpu", dtype=None):
        """Predicted seconds of ``run_group(group)`` on one thread of ``backend``, or None
        where the predictor has no model of its time (the default)."""
        return None

    def check(self, group, backend="cpu", dtype=None):
        """Raise what ``run_group`` would raise for the group's options before it trains
        (ValueError or TypeError naming the parameter); by default nothing is checked."""

    def memory(self, group, backend="cpu", dtype=None):
        """Bytes ``run_group(group)`` allocates in proportion to its sizes, or None where the
        predictor has no model of them (the default)."""
        return None

    def cost_model(self, backend="cpu", dtype=None):
        """One line on where ``seconds``'s prices come from (for ``--dry-run``), or None
        where the predictor has no time model (the default)."""
        return None

    def record(self, predicted, measured, backend="cpu", dtype=None):
        """Give the time model a scan's predicted (``seconds``) and measured CPU seconds of
        this predictor's groups, for its feedback (``fastsd._probe.correction``); by default
        nothing (no time model)."""


class _TrainsEnsembles(Predictor):
    """A predictor whose groups are ``train_ensemble`` calls: ``check`` plans the call
    (``memory``: ``fastsd.mlp.training.memory_needs``, which validates what the call would,
    gamma's range in the dtype among it) without training."""

    def check(self, group, backend="cpu", dtype=None):
        self.memory(group, backend, dtype)

    def record(self, predicted, measured, backend="cpu", dtype=None):
        if backend == "cpu":                # the host's probed prices (the GPU's are nominal)
            from ..mlp import costs

            costs.record(predicted, measured)


class MLPPredictor(_TrainsEnsembles):
    """Finite-width centered ReLU MLPs trained with SGD (Sec. 2): ``fastsd.train_ensemble``.

    Settings are the fields of ``fastsd.scan.Cell``; ``gamma="lazy"`` is the
    paper's gamma = 1e-5/sqrt(d). Cells sharing ``Cell.ensemble_key`` (all but
    gamma and the seeds) train as one lockstep ensemble, per seed off the GPU
    (``group_key``).
    """

    name = "mlp"
    numbers = ("best_test_accuracy", "final_test_accuracy")
    splittable = True       # train_ensemble: a model's numbers are its own
    spec = MLP

    def validate(self, settings):
        return asdict(Cell(**settings))

    def key(self, settings):
        return Cell(**settings).key

    def group_key(self, settings, backend="cpu"):
        """Cells with equal ``Cell.ensemble_key``; off the GPU, also the same seeds.

        On "cuda" one lockstep ensemble fills the device best. On the CPU each
        model runs on one thread whatever the ensemble, and only models with
        the same seeds share work (initialisation, batches, test sets): a
        group per seed loses nothing and spreads evenly over the workers.
        """
        key = Cell(**settings).ensemble_key()
        return key if traits(backend).lockstep else key + (settings["seed"], settings["task_seed"])

    def run_group(self, group, backend="auto", dtype=None):
        return train_cells([Cell(**s) for s in group], backend=backend, dtype=dtype)

    def cost(self, settings):
        """Predicted seconds of the cell trained alone on one CPU thread (``seconds``)."""
        return self.seconds([settings])

    def seconds(self, group, backend="cpu", dtype=None):
        """Predicted seconds of training the group's ensemble on one thread, its evaluations
        and its activation change included (``fastsd.mlp.costs``); None on "numpy"."""
        s = group[0]
        return _ensemble_seconds(group, backend, dtype, L=s["L"], input_dim=2 * s["d"],
                                 inputs="noise" if s["sigma2"] > 0 else "symbols")

    def memory(self, group, backend="cpu", dtype=None):
        """What ``train_ensemble`` allocates for the group (``fastsd.mlp.training.memory_needs``)."""
        from ..tasks import SameDifferent

        c = Cell(**group[0])
        task = SameDifferent(c.d, c.L, sigma2=c.sigma2, seed=c.task_seed, root_d=c.root_d)
        return _ensemble_memory(group, [task] * len(group), backend, dtype)

    def cost_model(self, backend="cpu", dtype=None):
        """The MLP's cost model of ``backend`` (``fastsd.mlp.costs``: measured or shipped)."""
        return _mlp_cost_model(backend, dtype)


class MLPImagePredictor(_TrainsEnsembles):
    """Finite-width MLPs on the visual tasks (Sec. 4): PSVRT and Pentomino, ``train_ensemble``.

    Settings: ``task`` (a visual task of ``fastsd.tasks.TASKS``: "psvrt",
    "pentomino", or one registered in a file of its own), L (training
    bit-patterns or shapes), gamma (``"lazy"`` is the task's ``lazy_gamma()``: 1e-5
    on the image tasks, which have no sqrt(d) factor, App. G.3-G.4), seed, width,
    steps and the other training
    settings of "mlp"; the task's own settings, at its registered defaults:
    for PSVRT ``patch`` and ``n_patches`` (image side in patches), for
    Pentomino ``image_width`` (image side in 7 x 7 cells) and ``blur``. The
    settings of the other tasks are None. ``task_seed`` (the training items)
    defaults to one derived from (seed, L). Cells that differ only in gamma
    and the seeds train as one ensemble.
    """

    name = "mlp_image"
    numbers = ("best_test_accuracy", "final_test_accuracy")
    splittable = True       # train_ensemble: a model's numbers are its own
    required = ("task", "L", "gamma", "width", "steps")
    _SHARED = ("L", "gamma", "seed", *TRAINING, "task_seed")    # declared in fastsd.params.MLP
    #: The training settings' defaults (``fastsd.params.MLP``) and the settings of every
    #: visual task registered so far, None (the cell's own task fills in its defaults): read
    #: from the registry at each use, so a task registered after this module was imported
    #: has its settings too.
    defaults = _RegisteredDefaults()

    #: The task settings every cell's key named from the start (PSVRT's and Pentomino's):
    #: a task registered since keys its settings only in its own cells, so that every stored
    #: key stays as it is.
    _ALWAYS_KEYED = ("patch", "n_patches", "image_width", "blur")

    def key(self, settings):
        """As ``Predictor.key``, by the training settings' spec (``fastsd.params.MLP``): a
        training setting added later is left out at its default; the task's own settings
        are always keyed (another task's, None, only where ``_ALWAYS_KEYED``)."""
        return settings_key(MLP.keyed({k: v for k, v in settings.items() if v is not None
                                       or k not in _task_settings()
                                       or k in self._ALWAYS_KEYED}))

    def validate(self, settings):
        s = dict(settings)
        tasks = visual_tasks()
        task = check_choice("task", s["task"], tuple(tasks))
        for name, default in tasks[task].settings.items():
            s[name] = default if s.get(name) is None else s[name]
        for other in tasks.values():
            for name in other.settings:
                if other.name != task and s.get(name) is not None:
                    raise ValueError(f"`{name}` must be None (it is a setting of task "
                                     f"{other.name!r}) with task {task!r}; got {s[name]!r}.")
        s.update(MLP.check({k: s[k] for k in self._SHARED}))
        s["task_seed"] = resolve_task_seed(s["task_seed"], s["seed"], s["L"], 0)
        task = self.make_task(s)    # the task checks its own settings (counts, sizes)
        if is_lazy(s["gamma"]):
            s["gamma"] = task.lazy_gamma()      # 1e-5 on an image task (App. G.3-G.4)
        return s

    @staticmethod
    def make_task(s):
        """Return the task of prepared settings ``s`` (``fastsd.tasks.make_task``)."""
        from ..tasks import make_task

        return make_task(s["task"], s["L"], s["task_seed"],
                         **{n: s[n] for n in visual_tasks()[s["task"]].settings})

    def group_key(self, settings, backend="cpu"):
        """Cells that differ only in gamma and the seeds; off the GPU, only in gamma.

        See ``MLPPredictor.group_key``.
        """
        shared = ("gamma", "seed", "task_seed") if traits(backend).lockstep else ("gamma",)
        return tuple(sorted((k, v) for k, v in settings.items() if k not in shared))

    def cost(self, settings):
        """Predicted seconds of the cell trained alone on one CPU thread (``seconds``)."""
        return self.seconds([settings])

    def seconds(self, group, backend="cpu", dtype=None):
        """Predicted seconds of the group's ensemble on one thread, on the path "auto" picks
        (``fastsd.mlp.costs``: every image task's dense inputs priced per element as the
        calibration's images, the sparse path by the pixels of an image that it multiplies,
        ``task.sparse_entries()``, of the task's geometry, as "images" or "stamps")."""
        s = group[0]
        own = tuple((n, s[n]) for n in visual_tasks()[s["task"]].settings)
        input_dim, entries, inputs = _task_geometry(s["task"], own, s["L"])
        return _ensemble_seconds(group, backend, dtype, L=s["L"], input_dim=input_dim,
                                 inputs=inputs, entries=entries)

    def memory(self, group, backend="cpu", dtype=None):
        """What ``train_ensemble`` allocates for the group (``fastsd.mlp.training.memory_needs``)."""
        return _ensemble_memory(group, [self.make_task(group[0])] * len(group), backend, dtype)

    def cost_model(self, backend="cpu", dtype=None):
        """The MLP's cost model of ``backend`` (``fastsd.mlp.costs``: measured or shipped)."""
        return _mlp_cost_model(backend, dtype)

    def run_group(self, group, backend="auto", dtype=None, *, progress=False):
        """Return one record per prepared cell of ``group`` (``Predictor.run_group``);
        ``progress``: a bar over the training steps on stderr (``fastsd train``'s; off in
        scan workers)."""
        from ..mlp import train_ensemble

        s0 = group[0]
        tasks = [self.make_task(s) for s in group]
        results = train_ensemble(tasks, [s["gamma"] for s in group], [s["seed"] for s in group],
                                 **TRAINING.pick(s0), backend=backend, dtype=dtype,
                                 progress=progress)
        names = ("task", *_task_settings(), "task_seed")
        return [dict(r.to_record(), **{k: s[k] for k in names}, task_class=type(t).__name__)
                for s, r, t in zip(group, results, tasks)]


def _ensemble_seconds(group, backend, dtype, *, L, input_dim, inputs, entries=None):
    """Predicted seconds of ``train_ensemble`` on a group of "mlp" or "mlp_image" cells: one
    ensemble, the test sets drawn once per seed, one evaluation more for the activation
    change; on the path "auto" picks (``entries``: an image task's mean non-zero pixels an
    image, for the sparse path). None on a backend without a cost model ("numpy")."""
    from ..mlp import costs, prices

    if not traits(backend).priced:
        return None
    s = group[0]
    model = costs.time_model(backend, dtype or "float32")
    chooser = prices.path_model(backend, dtype or "float32")     # the path train takes
    sizes = dict(L=L, input_dim=input_dim, width=s["width"], batch_size=s["batch_size"])
    if inputs == "symbols":
        path = chooser.choose(**sizes)
    elif entries is not None and "sparse" in _module_engines(backend):
        path = chooser.choose_images(input_dim=input_dim, width=s["width"],
                                     batch_size=s["batch_size"], entries=entries, inputs=inputs)
    else:
        path = "dense"
    return model.train_seconds(path, **sizes, steps=s["steps"], eval_every=s["eval_every"],
                               eval_at=s.get("eval_at"),
                               n_test=s["n_test"], models=len(group),
                               sources=len({g["seed"] for g in group}), inputs=inputs,
                               extra_evals=1, entries=entries)


def _module_engines(backend):
    from .._dispatch import FAMILIES

    return FAMILIES["mlp"].module(backend).ENGINES


@functools.lru_cache(maxsize=None)
def _task_geometry(task, own, L):
    """(input dimension, the sparse path's pixels of a training input or None, the cost
    model's ``inputs``) of a registered task with its own settings ``own`` ((name, value)
    pairs): those of its seed-0 task. Inputs mostly zeros (the images) are "images" or
    "stamps"; in the span of the symbols, "symbols"; else "noise" (dense)."""
    from ..mlp.prices import image_inputs
    from ..tasks import make_task

    t = make_task(task, L, 0, **dict(own))
    if t.has_sparse_inputs:
        return t.input_dim, t.sparse_entries(), image_inputs(t)
    return t.input_dim, None, "symbols" if t.has_symbol_basis else "noise"


def _mlp_cost_model(backend, dtype):
    from ..mlp import costs

    return costs.time_model(backend, dtype or "float32").describe()


def _ensemble_memory(group, tasks, backend, dtype):
    """Bytes ``train_ensemble`` needs for a group of cells with these tasks."""
    from ..mlp.training import memory_needs

    s = group[0]
    needs = memory_needs(tasks, [g["gamma"] for g in group], [g["seed"] for g in group],
                         **TRAINING.pick(s), backend=backend, dtype=dtype)
    return sum(n.nbytes for n in needs)


class TheoryPredictor(Predictor):
    """The rich-regime closed form of the test accuracy on unseen symbols (Eq. 3)."""

    name = "theory"
    numbers = ("test_accuracy",)
    required = ("L",)

    def validate(self, settings):
        return {"L": check_int("L", settings["L"], 2)}

    def run_group(self, group, backend="auto", dtype=None):
        from .. import __version__
        from ..theory import rich_test_accuracy

        start = time.perf_counter()
        out = []
        for s in group:
            out.append(dict(s, test_accuracy=float(rich_test_accuracy(s["L"])),
                            version=__version__, backend="numpy", dtype="float64", seed=None,
                            wall_time=time.perf_counter() - start))
        return out


class WalkersPredictor(Predictor):
    """The walker ensemble of App. C.3 (``fastsd.walkers.simulate``): mu, alignment, |v1|/|v2|.

    The record holds the run's configuration and, as flat columns, the mean
    and 2 sd over walkers of mu per category (``mu_mixed``,
    ``mu_mixed_two_sd``, ...), of the alignment and of |v1|/|v2|; the
    per-walker states are left out (``simulate`` returns them).
    """

    name = "walkers"
    numbers = ("alignment", "norm_ratio")
    spec = WALKERS

    def validate(self, settings):
        from ..walkers.process import check_settings
        return check_settings(**settings)

    def run_group(self, group, backend="auto", dtype=None):
        from ..walkers import CATEGORIES, simulate, summary

        out = []
        for s in group:
            r = simulate(**s, backend=backend)
            rec = dict(r.config, wall_time=r.wall_time, dtype="int64")
            for c in CATEGORIES:
                m = r.mu_summary(c)
                rec.update({f"mu_{c}": m["mean"], f"mu_{c}_two_sd": m["two_sd"]})
            for name, values in (("alignment", r.alignment()), ("norm_ratio", r.norm_ratio())):
                m = summary(values)
                rec.update({name: m["mean"], f"{name}_two_sd": m["two_sd"]})
            out.append(strict_json(rec))
        return out


class LazyLimitPredictor(Predictor):
    """The gamma -> 0, infinite-width network (``fastsd.kernels.lazy_limit``, App. D).

    Settings: d, L; ``method`` ("logistic_flow", the trained network's limit,
    by default; "regression"; "logistic_sgd"), ``pairs`` ("all" or a number
    of sampled pairs), seeds, and the flow's steps and evaluations (``eval_every``
    and ``eval_at``). The task's symbols come from ``task_seed`` (default derived
    from (seed, L, d) as for "mlp", so a lazy-limit cell and an "mlp" cell with the
    same seed, L and d share their symbols). The record is ``LazyResult.to_record``'s,
    the history of the evaluations included (as an "mlp" cell's), so that the
    accuracy at any evaluated step can be read from a store
    (``fastsd.figures.fig1e.lazy_scaling``'s ``at``).
    """

    name = "lazy_limit"
    numbers = ("test_accuracy", "best_test_accuracy")
    spec = LAZY_LIMIT

    def validate(self, settings):
        from ..kernels.lazy import check_schedule

        s = super().validate(settings)
        check_schedule(s["method"], s["eval_at"])
        if s["pairs"] != "all":     # as kernels.lazy_limit: 2 .. L^2 sampled pairs
            s["pairs"] = check_int("pairs", s["pairs"], 2, s["L"] * s["L"])
        return s

    def cost(self, settings):
        """Predicted seconds of the cell (``seconds``); L^3 where it has no model."""
        seconds = self.seconds([settings])
        return float(settings["L"]) ** 3 if seconds is None else seconds

    def seconds(self, group, backend="cpu", dtype=None):
        """Predicted seconds of the group on one thread of the "cpu" backend, for the
        logistic flow of the NTK over all pairs on solver "kron" (``fastsd.kernels.costs``:
        shipped prices); None for other settings or backends."""
        from ..kernels import costs

        kind = traits(backend)          # the lazy limit's prices are the host's
        if not (kind.priced and kind.device == "host"):
            return None
        if not all(costs.modelled(s) for s in group):
            return None
        return sum(costs.predicted_seconds(s["d"], s["L"], steps=s["steps"],
                                           eval_every=s["eval_every"], n_test=s["n_test"],
                                           eval_at=s.get("eval_at"),
                                           dtype=s["dtype"])
                   for s in group)

    def memory(self, group, backend="cpu", dtype=None):
        """The most bytes a cell of the group allocates (``fastsd.kernels.costs.memory_bytes``),
        where its time is modelled; None elsewhere."""
        from ..kernels import costs

        if not all(costs.modelled(s) for s in group):
            return None
        return max(costs.memory_bytes(s["d"], s["L"], n_test=s["n_test"]) for s in group)

    def record(self, predicted, measured, backend="cpu", dtype=None):
        if backend == "cpu":
            from ..kernels import costs

            costs.record(predicted, measured)

    def cost_model(self, backend="cpu", dtype=None):
        """The lazy limit's time model (``fastsd.kernels.costs.describe``)."""
        from ..kernels import costs

        return costs.describe()

    def run_group(self, group, backend="auto", dtype=None):
        from ..kernels import lazy_cell

        out = []
        for s in group:
            kw = {k: v for k, v in s.items() if k not in ("d", "L")}
            out.append(lazy_cell(s["d"], s["L"], backend=backend, **kw))
        return out


class BayesPredictor(Predictor):
    """The Bayes-optimal classifiers of the noisy task (``fastsd.bayes.accuracy``, App. E).

    Settings: d, L, sigma2; ``prior`` ("generalizing" or "memorizing"),
    ``n_test`` Monte Carlo test pairs, ``seed`` of the test pairs and
    ``task_seed`` of the L training symbols (default derived from (seed, L, d)
    as for "mlp", so the memorizing prior sees the symbols the networks of the
    same seed were trained on). The record's ``accuracy`` has a standard
    error ``stderr``.
    """

    name = "bayes"
    numbers = ("accuracy", "stderr")
    spec = BAYES

    def seconds(self, group, backend="cpu", dtype=None):
        """Predicted seconds of the group on one thread (``fastsd.bayes.predicted_seconds``:
        shipped prices, float64 NumPy whatever the backend)."""
        from ..bayes import predicted_seconds

        return sum(predicted_seconds(s["d"], s["L"], s["n_test"], s["prior"]) for s in group)

    def memory(self, group, backend="cpu", dtype=None):
        """The most bytes a cell of the group allocates (its test pairs and likelihood terms,
        as ``fastsd.bayes.accuracy`` checks them)."""
        from ..bayes import memory_bytes

        return max(memory_bytes(s["d"], s["L"], s["n_test"], s["prior"]) for s in group)

    def record(self, predicted, measured, backend="cpu", dtype=None):
        from ..bayes import record

        record(predicted, measured)

    def cost_model(self, backend="cpu", dtype=None):
        """The Bayes-optimal part's time model (``fastsd.bayes.PRICES``)."""
        from ..bayes import describe

        return describe()

    def run_group(self, group, backend="auto", dtype=None):
        from ..bayes import accuracy
        from ..tasks import SameDifferent

        out = []
        for s in group:
            task = SameDifferent(s["d"], s["L"], sigma2=s["sigma2"], seed=s["task_seed"])
            start = time.perf_counter()
            rec = accuracy(task, s["prior"], s["n_test"], seed=s["seed"]).to_record()
            rec.update(task_seed=s["task_seed"], backend="numpy", dtype="float64",
                       wall_time=time.perf_counter() - start)
            out.append(rec)
        return out


class _ModelPairPredictor(Predictor):
    """A rich and a lazy model trained in lockstep on one task; the records describe them.

    Cells that differ only in ``model`` form one group (one ``train_ensemble``).
    Subclasses give ``task(settings)``, ``gamma(settings)`` and ``describe(result,
    task)``, the record's fields besides the cell's settings and the backend,
    path and dtype trained on.
    """

    def group_key(self, settings, backend="cpu"):
        return tuple(sorted((k, v) for k, v in settings.items() if k != "model"))

    def run_group(self, group, backend="auto", dtype=None):
        from ..mlp import train_ensemble

        s0 = group[0]
        task = self.task(s0)
        gammas = [self.gamma(s) for s in group]
        results = train_ensemble(task, gammas, s0["seed"], **TRAINING.pick(s0),
                                 backend=backend, dtype=dtype)
        return [strict_json({**s, "gamma": g, **self.describe(r, task),
                             **{k: r.config[k] for k in ("backend", "path", "dtype")},
                             "version": __version__, "wall_time": r.wall_time})
                for s, g, r in zip(group, gammas, results)]


class WeightStructurePredictor(_ModelPairPredictor):
    """Fig. 1a/1d: a rich (gamma = 1) and a lazy (1e-5/sqrt(d)) model on the symbol task.

    Settings: d, L, ``model`` ("rich" or "lazy"), seed (of the task and the
    training), width, steps, eval_every. The record holds the best test
    accuracy, the mean alignment v1.v2/(|v1||v2|) of the units with a > 0 and
    with a < 0, the readout ratio |mean a-|/|mean a+| (App. C.4.3) and the
    per-unit structure (``fastsd.walkers.weight_structure``).
    """

    name = "weight_structure"
    numbers = ("best_test_accuracy", "alignment_positive", "alignment_negative",
               "readout_ratio")
    spec = WEIGHT_STRUCTURE

    def task(self, s):
        from ..tasks import SameDifferent
        return SameDifferent(d=s["d"], L=s["L"], seed=s["seed"])

    def gamma(self, s):
        from ..conventions import lazy_gamma
        return 1.0 if s["model"] == "rich" else lazy_gamma(s["d"])

    def describe(self, result, task):
        from ..walkers import weight_structure

        ws = weight_structure(result)
        return {"best_test_accuracy": result.best_test_accuracy,
                "alignment_positive": float(ws.alignment[ws.readout > 0].mean()),
                "alignment_negative": float(ws.alignment[ws.readout < 0].mean()),
                "readout_ratio": ws.readout_ratio, "structure": ws.to_record()}


class WeightImagesPredictor(_ModelPairPredictor):
    """Fig. A1: a rich and a lazy model on PSVRT or Pentomino, images two cells a side.

    Settings: ``task`` ("PSVRT": 5 x 5 patches, 256 training patterns;
    "Pentomino": width 2, 14 training shapes; ``TASKS``), ``model``, seed,
    width, steps, eval_every. The record holds the best test accuracy, the
    mean |correlation| between the weights' cells over the 16 units with the
    largest |readout| and over all, and the weight images of the units with
    the largest and the most negative readout (App. A).
    """

    name = "weight_images"
    numbers = ("best_test_accuracy", "cell_correlation_top16", "cell_correlation_all")
    spec = WEIGHT_IMAGES
    #: The tasks' settings (App. A).
    TASKS = {"PSVRT": dict(patch=5, n_patches=2, n_train_patterns=256),
             "Pentomino": dict(width=2, n_train_shapes=14)}

    def task(self, s):
        from ..tasks import PSVRT, Pentomino
        return {"PSVRT": PSVRT, "Pentomino": Pentomino}[s["task"]](**self.TASKS[s["task"]],
                                                                  seed=s["seed"])

    def gamma(self, s):
        from ..conventions import IMAGE_LAZY_GAMMA
        return 1.0 if s["model"] == "rich" else IMAGE_LAZY_GAMMA

    def describe(self, result, task):
        import numpy as np

        from ..analysis import cell_correlations

        iu = np.triu_indices(4, 1)
        w, a = result.final_params.w, result.final_params.a
        corr = np.abs(cell_correlations(task, w)[:, iu[0], iu[1]])
        top = np.argsort(-np.abs(a))[:16]
        images = task.weights_as_images(w)
        return {"best_test_accuracy": result.best_test_accuracy,
                "cell_correlation_top16": float(corr[top].mean()),
                "cell_correlation_all": float(corr.mean()),
                "image_largest_a": images[np.argmax(a)],
                "image_most_negative_a": images[np.argmin(a)]}


class MaxMarginPredictor(Predictor):
    """Fig. C1: the max-margin matrix of P pairs over L symbols in d dimensions (Theorem 1).

    Settings: d, L, P; the symbols are drawn with seed L and the pairs with seed
    P (``fastsd.theory.max_margin``, NumPy on any backend). The record holds the
    alignment of the top and the bottom eigenvector, the relative Frobenius
    distance to the limit and the matrix.
    """

    name = "max_margin"
    numbers = ("top_alignment", "bottom_alignment", "relative_distance")
    spec = MAX_MARGIN

    def run_group(self, group, backend="auto", dtype=None):
        from ..tasks import SameDifferent
        from ..theory import max_margin

        out = []
        for s in group:
            start = time.perf_counter()
            r = max_margin(SameDifferent(s["d"], s["L"], seed=s["L"]), s["P"], seed=s["P"])
            out.append(strict_json({**s, "top_alignment": r["top"]["alignment"],
                                    "bottom_alignment": r["bottom"]["alignment"],
                                    "relative_distance": r["relative_distance"],
                                    "matrix": r["matrix"], "backend": "numpy",
                                    "dtype": "float64", "version": __version__,
                                    "wall_time": time.perf_counter() - start}))
        return out


def cell_record(cell, result, task, activation_change=None):
    """Return the stored record of a trained MLP cell.

    Parameters
    ----------
    cell : fastsd.scan.Cell
    result : fastsd.TrainResult
    task : SameDifferent
        The cell's task; its fresh test pairs measure the activation change.
    activation_change : float, optional
        The activation change when already measured on those pairs (as
        ``train_cells`` does for a whole group); by default measured here.

    Returns
    -------
    dict
        ``result.to_record()`` (configuration, package version, backend,
        dtype, path, seed, accuracies, wall time and the per-evaluation
        history) plus ``task_seed``, ``root_d`` and ``activation_change``
        (App. F, on ``n_test`` fresh pairs drawn from ``task_seed``).
    """
    from ..analysis import activation_changes

    if activation_change is None:
        activation_change, = activation_changes([result], _change_inputs(cell, task))
    record = result.to_record()
    record.update(task_seed=cell.task_seed, root_d=cell.root_d,
                  activation_change=activation_change)
    return strict_json(record)


def _change_inputs(cell, task):
    """The fresh test inputs on which a cell's activation change is measured."""
    return task.sample_test(cell.n_test, seed=cell.task_seed)[0]


def train_cells(cells, *, backend="auto", dtype=None, path="auto", progress=False):
    """Train cells that share their ensemble key in one lockstep ensemble.

    Parameters
    ----------
    cells : sequence of fastsd.scan.Cell
        All with the same ``ensemble_key()``.
    backend, dtype, path : optional
        As in ``fastsd.train``.
    progress : bool, default False
        A tqdm bar over training steps on stderr (off in scan workers).

    Returns
    -------
    list of dict
        One record per cell (see ``cell_record``), in order.

    Raises
    ------
    ValueError
        When the cells do not share their ensemble key.
    """
    from ..analysis import activation_changes
    from ..mlp import train_ensemble
    from ..tasks import SameDifferent

    if len({c.ensemble_key() for c in cells}) != 1:
        raise ValueError("`cells` must share d, L, width, steps and the other non-gamma, "
                         "non-seed settings to train as one ensemble.")
    c0 = cells[0]
    tasks = [SameDifferent(c.d, c.L, sigma2=c.sigma2, seed=c.task_seed, root_d=c.root_d)
             for c in cells]
    results = train_ensemble(tasks, [c.gamma for c in cells], [c.seed for c in cells],
                             config=c0.training, backend=backend, dtype=dtype, path=path,
                             progress=progress)
    # cells of one task seed (and ensemble key) measure on the same inputs
    by_inputs = {}
    for i, c in enumerate(cells):
        by_inputs.setdefault(c.task_seed, []).append(i)
    changes = [None] * len(cells)
    for idx in by_inputs.values():
        x = _change_inputs(cells[idx[0]], tasks[idx[0]])
        for i, change in zip(idx, activation_changes([results[i] for i in idx], x)):
            changes[i] = change
    return [cell_record(c, r, task, change)
            for c, r, task, change in zip(cells, results, tasks, changes)]


#: The predictors ``fastsd.scan.run`` accepts, by name.
PREDICTORS = {p.name: p for p in (MLPPredictor(), MLPImagePredictor(), TheoryPredictor(),
                                   WalkersPredictor(), LazyLimitPredictor(), BayesPredictor(),
                                   WeightStructurePredictor(), WeightImagesPredictor(),
                                   MaxMarginPredictor())}


def get_predictor(name):
    """Return the predictor called ``name``.

    Raises
    ------
    ValueError
        For an unknown name.
    """
    return PREDICTORS[check_choice("predictor", name, tuple(PREDICTORS))]
