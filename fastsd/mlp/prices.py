"""The MLP's price model: seconds of its paths' counted work units, and the path "auto" takes.

Each two-path backend module of the mlp family states what a step does in
counted units (``step_features``: for the CPU's dense path the GEMM
multiply-adds, the B x m fused units, the gathered inputs, the noise drawn in
the engine and the inputs a task builds on the host (images), the weights'
read-modify-write, a fixed cost per model and per step; for its symbol path the
distinct pairs of a batch times m, the L x (distinct symbols) x m rows of
Q = K C updated and the L x L entries of K visited). A ``CostModel`` prices
each unit in seconds: the predicted time of a step is the sum of counts times
prices. The prices are non-negative and every count grows with every size, so
the predicted time grows with L, d, m, the batch size and the number of models.
The prices are for one thread, as a scan's workers run (one per core), on a
quiet machine. An evaluation is priced with the dense path's prices.

The shipped prices of a backend are data: ``prices_<backend>.json`` beside this
module (``TABLES``), with their provenance (machine, date, fastsd version, how
they were fitted), the calibration's shapes (``fastsd calibrate``) and the
probe's (``fastsd.mlp.calibration.probe``). ``fallback`` gives them as fitted.

The path of a model is chosen as if it trained alone (``CostModel.choose``),
so the path, and hence the numbers, of a model in an ensemble are those of
its run on its own; and it is chosen by the shipped prices as fitted
(``path_model``), never by this machine's probe or calibration, which predict
times only (``fastsd.mlp.costs``): the paths agree only to float32 rounding, so
a choice that followed a measured time would give other numbers for the same
call after the probe was redone (a busier moment, another checkout's cache, a
cleared cache).
"""
from dataclasses import dataclass, field

import numpy as np

from .._dispatch import FAMILIES
from .._pricing import predict, table
from .._validation import check_choice, check_float, check_int
from ..schedules import Evaluations

#: The paths the cost model prices, and `path="auto"` chooses between: "dense" or "symbol" for
#: clean symbol tasks, "dense" or "sparse" for the image tasks whose inputs are mostly zeros.
PATHS = ("dense", "symbol", "sparse")
DTYPES = ("float32", "float64")
#: What a model's training inputs are: clean symbol pairs (looked up), noisy symbol pairs
#: (counter-based noise drawn by the engine), or images built by the task on the host:
#: "stamps" where they are sharp stamps on a grid's cells (``GridTask.stamp_pixels``: PSVRT,
#: Pentomino without blur; the sparse path multiplies them by cell GEMMs), "images" otherwise
#: (blurred stamps, multiplied pixel row by pixel row; and every dense image task).
INPUTS = ("symbols", "noise", "images", "stamps")
#: The ensemble size at which "auto" compares an image task's paths (``choose_images``):
#: one seed's group of gammas, as Fig. 3's scans train them.
GROUP_MODELS = 6
#: The shipped price tables of the two-path backends (``prices_<backend>.json``): "machine",
#: "provenance", "gemm_units" (the units that count BLAS multiply-adds, scaled by the probe's
#: GEMM factor; None for the GPU's nominal prices), "prices" ({dtype: {path: {unit:
#: seconds}}}) and, for "cpu", "calibration" (the shapes ``fastsd calibrate`` times: path, L,
#: d, m, B, models, inputs, each weighing one unit more than the others), "probe" (the
#: engine steps the probe times: path, L, d, m, B, steps a run) and "check" (steps timed
#: side by side by bench/bench_paths.py, which the prices must order as measured).
TABLES = {backend: table("fastsd.mlp", f"prices_{backend}.json") for backend in ("cpu", "cuda")}


def check_path_inputs(path, inputs):
    """The symbol path trains clean symbol pairs only, the sparse path images only."""
    if inputs != "symbols" and path == "symbol":
        raise ValueError(f"`inputs` must be 'symbols' on the symbol path (it trains clean "
                         f"symbol tasks only); got {inputs!r}.")
    if inputs not in ("images", "stamps") and path == "sparse":
        raise ValueError(f"`inputs` must be 'images' or 'stamps' on the sparse path (it trains "
                         f"image tasks whose inputs are mostly zeros); got {inputs!r}.")


def image_inputs(task):
    """The ``inputs`` of an image task whose inputs are mostly zeros (``has_sparse_inputs``):
    "stamps" where its training images are sharp stamps on a grid (``stamp_pixels``), else
    "images"."""
    return "stamps" if task.stamp_pixels() is not None else "images"


def backend_module(backend):
    """The mlp family's module of ``backend``, which must have two paths (a cost model)."""
    module = FAMILIES["mlp"].module(backend)
    if not hasattr(module, "step_features"):
        raise ValueError(f"`backend` must have two training paths to have a cost model (cpu or "
                         f"cuda); got {backend!r}, which has one (dense).")
    return module


@dataclass(frozen=True)
class CostModel:
    """Prices in seconds of one backend's work units, and the predictions they give.

    Attributes
    ----------
    backend : {"cpu", "cuda"}
    dtype : {"float32", "float64"}
    prices : dict
        {path: {unit: seconds per unit}}, the units of the backend module's
        ``step_features`` (and of ``eval_features``, priced as "dense").
    source : {"calibrated", "probed", "fallback"}
        Measured on this machine (``calibrate``), the backend's shipped
        ``FALLBACK_PRICES`` scaled to this machine (``probed``), or those as fitted.
    machine : dict, optional
        Where the prices were measured (``machine_key``); for the fallback,
        the backend's ``FALLBACK_MACHINE``.
    measured_at : str, optional
        When (UTC, ISO 8601).
    points : tuple of dict
        The calibration's measurements: each shape and its best seconds per step.
    """

    backend: str
    dtype: str
    prices: dict
    source: str
    machine: dict = None
    measured_at: str = None
    points: tuple = field(default=(), repr=False)

    def step_seconds(self, path, *, L, input_dim, width, batch_size, models=1,
                     inputs="symbols", entries=None):
        """Predicted seconds of one SGD step of ``models`` models on ``path``, one thread.

        Parameters
        ----------
        path : {"dense", "symbol", "sparse"}
        L : int
            Training symbols (>= 2; unused by the dense path).
        input_dim : int
            Input dimension p (2d for the symbol task).
        width, batch_size, models : int
            Hidden units m, batch size B and models trained in lockstep, >= 1.
        inputs : {"symbols", "noise", "images", "stamps"}, default "symbols"
            The models' training inputs (``INPUTS``); the symbol path trains
            on "symbols" only, the sparse path on "images" or "stamps" only.
        entries : float, optional
            The pixels an image that the sparse path multiplies
            (``task.sparse_entries()``), > 0: its size (it needs it); on the dense
            path, blurred images' rendering is priced by it where it is given.

        Raises
        ------
        ValueError, TypeError
            For a path this backend lacks, a size out of range, inputs other
            than "symbols" on the symbol path or "images" / "stamps" on the
            sparse path, or the sparse path without ``entries``.
        """
        check_choice("path", path, tuple(self.prices))
        check_choice("inputs", inputs, INPUTS)
        check_path_inputs(path, inputs)
        L = check_int("L", L, 2)
        sizes = [check_int(n, v, 1) for n, v in (("input_dim", input_dim), ("width", width),
                                                 ("batch_size", batch_size), ("models", models))]
        p, m, B, M = sizes
        if path == "sparse" or entries is not None:
            entries = check_float("entries", entries, positive=True)
        features = backend_module(self.backend).step_features(path, L, B, m, p, M, inputs,
                                                              entries)
        return predict(self.prices[path], features)

    def eval_seconds(self, *, input_dim, width, n_test, models=1, sources=1):
        """Predicted seconds of one test evaluation: ``sources`` test sets of ``n_test`` pairs
        (one per seed), ``models`` models; priced with the dense path's prices."""
        p, m, n, M, S = (check_int(k, v, 1) for k, v in (
            ("input_dim", input_dim), ("width", width), ("n_test", n_test), ("models", models),
            ("sources", sources)))
        features = backend_module(self.backend).eval_features(p, m, n, M, S)
        return predict(self.prices["dense"], features)

    def train_seconds(self, path, *, L, input_dim, width, batch_size, steps, eval_every,
                      n_test, eval_at=None, models=1, sources=1, inputs="symbols",
                      extra_evals=0, entries=None):
        """Predicted seconds of ``train_ensemble``'s loop: its steps and its evaluations.

        ``eval_at``: extra evaluation steps (``fastsd.schedules``). ``extra_evals``
        adds evaluations' worth of work after training (a scan cell's activation
        change is one). Other parameters as ``step_seconds`` and ``eval_seconds``.
        """
        steps = check_int("steps", steps, 1)
        eval_every = check_int("eval_every", eval_every, 1)
        evals = (len(Evaluations(steps, eval_every, eval_at))
                 + check_int("extra_evals", extra_evals, 0))
        step = self.step_seconds(path, L=L, input_dim=input_dim, width=width,
                                 batch_size=batch_size, models=models, inputs=inputs,
                                 entries=entries)
        return steps * step + evals * self.eval_seconds(input_dim=input_dim, width=width,
                                                        n_test=n_test, models=models,
                                                        sources=sources)

    def choose(self, *, L, input_dim, width, batch_size):
        """The faster path of one clean symbol-task model trained alone: "symbol" or "dense".

        A model's path does not depend on the ensemble around it (nor on the
        threads), so neither do its numbers. Ties go to "dense".
        """
        if "symbol" not in self.prices:
            return "dense"
        sizes = dict(L=L, input_dim=input_dim, width=width, batch_size=batch_size)
        symbol, dense = (self.step_seconds(p, **sizes) for p in ("symbol", "dense"))
        return "symbol" if symbol < dense else "dense"

    def choose_images(self, *, input_dim, width, batch_size, entries, inputs="images"):
        """The faster path of an image-task model trained in a seed's group: "sparse" or
        "dense".

        The paths' costs a model are compared in an ensemble of ``GROUP_MODELS`` models
        of one seed (a scan's group of gammas), whatever ensemble the model is in, so that
        its path, and its numbers, do not depend on the models around it. The sparse
        path's cost a model falls in such a group (the inputs and h0 are formed once),
        the dense path's does not: near their crossover a model alone may take the
        sparse path when the dense one would have been faster alone.

        ``entries`` is the task's pixels an image that the sparse path multiplies
        (``task.sparse_entries()``), ``inputs`` "images" or "stamps"
        (``image_inputs(task)``). Ties, and prices without the sparse path, go to
        "dense".
        """
        if "sparse" not in self.prices:
            return "dense"
        sizes = dict(L=2, input_dim=input_dim, width=width, batch_size=batch_size,
                     inputs=inputs, entries=entries, models=GROUP_MODELS)
        sparse = self.step_seconds("sparse", **sizes)
        return "sparse" if sparse < self.step_seconds("dense", **sizes) else "dense"

    def describe(self):
        """One line: what the prices are and where they come from."""
        m = self.machine or {}
        where = f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores"
        if self.source == "calibrated":
            return (f"{self.backend} {self.dtype} cost model calibrated on this machine ({where}) "
                    f"at {self.measured_at}")
        if self.source == "probed":
            f, c = m.get("probe", {}), m.get("feedback", 1.0)
            runs = f", its runs' feedback x{c:.2f}" if c != 1.0 else ""
            return (f"{self.backend} {self.dtype} cost model: the shipped prices ({where}) "
                    f"scaled to this machine by its probe (GEMM x{f.get('gemm', 1):.2f}, "
                    f"other x{f.get('scalar', 1):.2f}{runs}); `fastsd calibrate` measures it")
        return (f"{self.backend} {self.dtype} cost model: the shipped fallback prices "
                f"({where}); `fastsd calibrate` measures this machine")

    def to_json(self):
        """A JSON-ready dict of the model (``from_json`` reads it back)."""
        return {"backend": self.backend, "dtype": self.dtype, "prices": self.prices,
                "source": self.source, "machine": self.machine, "measured_at": self.measured_at,
                "points": list(self.points)}

    @classmethod
    def from_json(cls, data):
        """The model of a dict written by ``to_json``.

        Raises
        ------
        ValueError
            When a price is negative or not finite.
        """
        prices = {path: {str(u): float(v) for u, v in units.items()}
                  for path, units in data["prices"].items()}
        for path, units in prices.items():
            check_choice("path", path, PATHS)
            for unit, value in units.items():
                if not (np.isfinite(value) and value >= 0):
                    raise ValueError(f"`prices` must be finite and >= 0; got {value!r} for "
                                     f"{path} {unit!r}.")
        return cls(backend=data["backend"], dtype=data["dtype"], prices=prices,
                   source=data["source"], machine=data.get("machine"),
                   measured_at=data.get("measured_at"), points=tuple(data.get("points", ())))


def crossover(model, *, input_dim, width, batch_size, max_L=1 << 20):
    """The largest L for which ``model.choose`` picks the symbol path (1 where it never does).

    The symbol path's time grows with L and the dense path's does not depend
    on it, so "auto" picks the symbol path for every L up to this one.
    """
    sizes = dict(input_dim=input_dim, width=width, batch_size=batch_size)
    if model.choose(L=2, **sizes) != "symbol":
        return 1
    lo, hi = 2, check_int("max_L", max_L, 2)
    if model.choose(L=hi, **sizes) == "symbol":
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if model.choose(L=mid, **sizes) == "symbol" else (lo, mid)
    return lo


def fallback(backend="cpu", dtype="float32"):
    """The backend's shipped prices (``TABLES``) as a ``CostModel``, as fitted."""
    check_choice("dtype", dtype, DTYPES)
    backend_module(backend)
    shipped = TABLES[backend]
    return CostModel(backend=backend, dtype=dtype, prices=shipped["prices"][dtype],
                     source="fallback", machine=shipped["machine"])


def path_model(backend="cpu", dtype="float32"):
    """The prices ``path="auto"`` chooses by: the backend's shipped prices, as fitted.

    Never this machine's probe or calibration (``load``, which predicts times): the path a
    run takes, and hence its numbers, is then a function of the problem, the backend, the
    dtype and fastsd's version alone, the same after the probe is redone or on another
    machine.
    """
    return fallback(backend, dtype)
