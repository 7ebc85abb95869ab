"""Fig. 1f: test accuracy against the input dimension d at L = 16 (m = 1024)."""
from ..presets import Preset
from ._grid import (PAPER_GAMMAS, PAPER_TRAINING, QUICK_GAMMAS, QUICK_TRAINING, report_accuracy,
                    symbol_grid)

HELP = "accuracy vs d (L=16)"
QUICK_WALL_TIME = "14 s"
FULL = Preset(
    "fig1f", "d", "Fig. 1f: test accuracy vs input dimension d (L=16, m=1024)",
    symbol_grid([2 ** k for k in range(4, 11)], [16], PAPER_GAMMAS, range(3), **PAPER_TRAINING))
QUICK = Preset(
    "fig1f-quick", "d", "Fig. 1f (quick): test accuracy vs d (L=16, m=1024)",
    symbol_grid([16, 64, 256, 1024], [16], QUICK_GAMMAS, range(2), **QUICK_TRAINING))


def report(preset, records, prefix):
    """Tabulate and draw Fig. 1f (``fastsd.figures``): accuracy per d and gamma, drawn vs d."""
    return report_accuracy(preset, records, prefix, plot_accuracy_vs_d)


def plot_accuracy_vs_d(records, out_prefix, title=None):
    """Fig. 1f: test accuracy against the input dimension d at fixed L.

    Adds the rich-regime prediction of Eq. 3 at that L as a dashed black
    line (it does not depend on d).

    Parameters
    ----------
    records : sequence of dict
        Stored records (``d``, ``L``, ``gamma``, ``width``,
        ``best_test_accuracy``), all with one L.
    out_prefix : str or os.PathLike
        Output path without extension.
    title : str, optional
        Defaults to "L = <L>, m = <width>".

    Returns
    -------
    list of str
        The PNG and SVG paths written.

    Raises
    ------
    ValueError
        When ``records`` is empty or mixes several L.
    """
    from .. import plots
    from ..theory import rich_test_accuracy

    L = plots._check_records(records, "L")
    fig, ax = plots._new_axes()
    banded = plots._draw_gammas(ax, records, "d")
    ax.axhline(float(rich_test_accuracy(L)), color="k", ls="--", lw=1.2,
               label=f"Eq. 3 at L = {L} (rich theory)")
    return plots._finish(fig, ax, "input dimension d", out_prefix, banded,
                         title or f"L = {L}, m = {records[0]['width']}")
