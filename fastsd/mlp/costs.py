"""Seconds per SGD step of the MLP's training paths on this machine: the time model.

``fastsd reproduce --dry-run`` and the scan's progress bar predict wall time
with ``time_model``; ``path="auto"`` chooses by the shipped prices instead
(``fastsd.mlp.prices.path_model``), never by a measured time.

``time_model`` gives, in order:

- this machine's calibration, where one is stored (``fastsd calibrate``,
  ``fastsd.mlp.calibration``; source "calibrated");
- else the shipped prices (``fastsd.mlp.prices.fallback``) scaled to this
  machine by the family's probe (``machine_factors``: its GEMM and scalar rates
  against the shipped prices' machine, timed once at a few short shapes and cached
  by ``fastsd._probe``), and by the runs' own feedback (``fastsd._probe.correction``:
  measured over predicted CPU seconds of the latest scans); source "probed";
- under ``FASTSD_COSTS=fallback`` the shipped prices as fitted, unscaled, even
  where a calibration is stored (the tests do, so that every machine predicts
  alike); source "fallback".

The prices are for one thread on a quiet machine: other processes on the cores
slow both paths alike (a prediction of wall time adds the load,
``fastsd._probe.slowdown``).
"""
import os

from .. import _probe
from .._validation import check_choice
from .calibration import PROBE_KINDS, cached, machine_key, probe
from .prices import DTYPES, TABLES, CostModel, backend_module, fallback

#: The environment variable that can force the shipped prices: "fallback", or "auto" (the
#: default: this machine's calibration where one is stored, else the probed prices).
ENV = "FASTSD_COSTS"
#: The family's name in the probe's cache (``fastsd._probe.factors``).
FAMILY = "mlp"


def _key():
    return machine_key("cpu")


def machine_factors(environ=None):
    """This machine's factors against the shipped prices' machine (``fastsd._probe``):
    {"gemm", "scalar"}, cached per machine, else measured by
    ``fastsd.mlp.calibration.probe``; 1 under ``FASTSD_COSTS=fallback``."""
    return _probe.factors(FAMILY, probe, _key(), PROBE_KINDS, environ)


def correction(environ=None):
    """The runs' feedback on the probed prices (``fastsd._probe.correction``): 1 without
    runs or under ``FASTSD_COSTS=fallback``."""
    return _probe.correction(FAMILY, _key(), environ)


def record(predicted, measured, environ=None):
    """Keep a scan's predicted and measured CPU seconds of MLP cells for ``correction``."""
    _probe.record(FAMILY, _key(), predicted, measured, environ)


def probed(backend="cpu", dtype="float32", environ=None):
    """The shipped prices scaled to this machine (source "probed").

    A backend whose table names its GEMM units (the host's BLAS) has those scaled by
    the probe's "gemm" factor and the others by its "scalar" factor, each times the
    runs' ``correction``; one that names none (the GPU's nominal prices) keeps its
    prices.
    """
    model = fallback(backend, dtype)
    units = TABLES[backend]["gemm_units"]
    if units is None:
        return model
    measured, c = machine_factors(environ), correction(environ)
    factors = {k: v * c for k, v in measured.items()}
    kinds = dict.fromkeys(units, "gemm")
    prices = {path: _probe.scale(p, factors, kinds) for path, p in model.prices.items()}
    probe_factors = {k: round(v, 3) for k, v in measured.items()}
    return CostModel(backend=backend, dtype=dtype, prices=prices, source="probed",
                     machine=dict(model.machine, probe=probe_factors, feedback=round(c, 3)))


def time_model(backend="cpu", dtype="float32", environ=None):
    """The cost model that predicts times: this machine's calibration, else the fallback
    scaled by the probe and the runs' feedback (``path="auto"`` chooses by
    ``fastsd.mlp.prices.path_model`` instead).

    Parameters
    ----------
    backend : {"cpu", "cuda"}
    dtype : {"float32", "float64"}
    environ : mapping, optional
        Environment variables (default ``os.environ``): ``FASTSD_COSTS``
        ("auto" or "fallback") and those of the cache root.

    Returns
    -------
    CostModel

    Raises
    ------
    ValueError
        For a backend with one path, an unknown dtype or a bad ``FASTSD_COSTS``.
    """
    environ = os.environ if environ is None else environ
    check_choice("dtype", dtype, DTYPES)
    backend_module(backend)
    mode = environ.get(ENV) or "auto"
    check_choice(ENV, mode, ("auto", "fallback"))
    if mode == "fallback":
        return fallback(backend, dtype)
    model = cached(backend, dtype, environ)
    return model if model is not None else probed(backend, dtype, environ)


__all__ = ["ENV", "FAMILY", "correction", "machine_factors", "machine_key", "probed", "record",
           "time_model"]
