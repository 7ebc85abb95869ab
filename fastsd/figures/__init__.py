"""The paper's figures, one module each, registered by name in ``REGISTRY``.

A figure's module holds all of that figure:

* ``FULL`` and ``QUICK``: its published settings and a reduced variant that
  runs in minutes on a laptop. A scan grid is a ``fastsd.presets.Preset``,
  which ``fastsd.reproduce.run_preset`` runs into ``<out>/<name>.jsonl``
  (one store per part when there are several); a figure that is no grid
  (trained models, (L, P) of a matrix) has ``Units`` settings and
  ``collect(spec, out, progress=True, backend="auto") -> (records, stores)``,
  which computes the units its store lacks (``fastsd.figures._units.run_units``)
  on the backend asked for (its records name the one used).
* ``report(spec, records, prefix) -> (heading, table, summary, figures)``:
  the heading and the text of its table, the table as JSON-ready data, and
  the paths of its drawing, written to ``prefix`` + ".png" and ".svg" (the
  module's own ``plot_*`` function, or one of ``fastsd.plots`` that several
  figures share).
* ``HELP`` and ``QUICK_WALL_TIME``: its entry in ``fastsd reproduce --help``.

``fastsd.reproduce.reproduce`` runs any of them. Adding a figure is a module
here and its name in ``REGISTRY`` (and its quick wall time in the README's
table, which a test holds equal).
"""
import importlib

from .._validation import check_choice
from ..presets import Preset
from ._units import Units

#: Figure name -> its module, in the order ``fastsd reproduce all`` runs them.
REGISTRY = {name: importlib.import_module(f"{__name__}.{name}") for name in (
    "fig1a",
    "fig1b",
    "fig1c",
    "fig1e",
    "fig1f",
    "fig2",
    "fig3",
    "figC3",
    "figF1",
    "figA1",
    "figC1",
)}
FIGURES = tuple(REGISTRY)
#: The figures whose settings are a scan grid (a ``Preset``).
GRID_FIGURES = tuple(name for name, module in REGISTRY.items()
                     if isinstance(module.FULL, Preset))
#: Every scan grid by name, full and quick ("fig1c", "fig1c-quick", ...).
PRESETS = {spec.name: spec for name in GRID_FIGURES
           for spec in (REGISTRY[name].FULL, REGISTRY[name].QUICK)}

__all__ = ["FIGURES", "GRID_FIGURES", "PRESETS", "REGISTRY", "Units", "get_figure",
           "get_preset"]


def get_figure(figure):
    """Return the module of ``figure``, one of ``FIGURES``.

    Raises
    ------
    ValueError
        For an unknown figure.
    """
    check_choice("figure", figure, FIGURES)
    return REGISTRY[figure]


def get_preset(figure, quick=False):
    """Return the grid of ``figure`` (one of ``GRID_FIGURES``), optionally its quick variant.

    Raises
    ------
    ValueError
        For an unknown figure.
    """
    check_choice("figure", figure, GRID_FIGURES)
    module = REGISTRY[figure]
    return module.QUICK if quick else module.FULL
