"""The paper's figures, one module each, registered by name in ``REGISTRY``.

A figure's module holds all of that figure:

* ``FULL`` and ``QUICK``: its published settings and a reduced variant that
  runs in minutes on a laptop, each a ``fastsd.presets.Preset`` of scan parts
  (a grid over the settings of one predictor: trained networks, the lazy limit,
  walkers, the Bayes-optimal classifiers, a figure's pair of trained models, the
  max-margin matrix), which ``fastsd.reproduce.run_presets`` runs into
  ``<out>/<name>.jsonl`` (one store per part when there are several).
* ``report(spec, records, prefix) -> (heading, table, summary, figures)``,
  ``records`` the stored records of each part by label, in grid order:
  the heading and the text of its table, the table as JSON-ready data, and
  the paths of its drawing, written to ``prefix`` + ".png" and ".svg" (the
  module's own ``plot_*`` function, or one of ``fastsd.plots`` that several
  figures share).
* ``HELP``: its entry in ``fastsd reproduce --help``.

``fastsd.reproduce.reproduce`` runs any of them. Adding a figure is a module
here and its name in ``REGISTRY``.
"""
import importlib

from .._validation import check_choice

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
#: Every figure's preset by name, full and quick ("fig1c", "fig1c-quick", ...).
PRESETS = {spec.name: spec for name in FIGURES
           for spec in (REGISTRY[name].FULL, REGISTRY[name].QUICK)}

__all__ = ["FIGURES", "PRESETS", "REGISTRY", "get_figure", "get_preset"]


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
    """Return the preset of ``figure`` (one of ``FIGURES``), optionally its quick variant.

    Raises
    ------
    ValueError
        For an unknown figure.
    """
    check_choice("figure", figure, FIGURES)
    module = REGISTRY[figure]
    return module.QUICK if quick else module.FULL
