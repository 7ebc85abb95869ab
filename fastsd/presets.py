"""A figure's scan grid: a ``Preset``, the named parts behind one figure of the paper.

The paper's presets live with their figures in ``fastsd.figures`` (each module
a full grid and a ``-quick`` variant that runs in minutes on a laptop;
``fastsd.figures.PRESETS`` holds them all by name), and
``fastsd.reproduce.run_presets`` runs them through ``fastsd.scan.run_many``.
"""
from dataclasses import dataclass

from .scan import get_predictor
from .scan.cells import Cell


@dataclass(frozen=True)
class Preset:
    """The grids of one figure.

    Attributes
    ----------
    name : str
        File stem of the results, e.g. "fig1c" or "fig1c-quick".
    axis : str
        What the figure is drawn against: the swept quantity on its x-axis
        ("L", "d"; "gamma": activation change, Fig. F1), or its layout
        ("heatmap", "lazy_heatmap", "noisy", "visual").
    title : str
        One line saying what the figure shows.
    parts : tuple of (str, str, Grid)
        Label, predictor name and grid of each part, run in order. A preset
        with one part stores it in ``<name>.jsonl``, one with several in
        ``<name>-<label>.jsonl``.
    """

    name: str
    axis: str
    title: str
    parts: tuple

    def store_name(self, label):
        """File stem of a part's store: the preset's name, plus the label with several parts."""
        return self.name if len(self.parts) == 1 else f"{self.name}-{label}"

    def cells(self, predictor="mlp"):
        """Return the prepared settings of every cell of the ``predictor`` parts.

        For "mlp" they are ``Cell`` objects, for the others dicts.
        """
        pred = get_predictor(predictor)
        out = [pred.prepare(s) for _, p, grid in self.parts if p == predictor
               for _, s in grid.cells()]
        return [Cell(**s) for s in out] if predictor == "mlp" else out
