"""Fig. 1c: test accuracy against the number of training symbols L (d = 256, m = 1024)."""
from ..presets import Preset
from ._grid import PAPER_GAMMAS, PAPER_TRAINING, QUICK_GAMMAS, QUICK_TRAINING, symbol_grid
from ._grid import report_accuracy

HELP = "accuracy vs L (d=256)"
FULL = Preset(
    "fig1c", "L", "Fig. 1c: test accuracy vs number of training symbols L (d=256, m=1024)",
    symbol_grid([256], [2 ** k for k in range(1, 11)], PAPER_GAMMAS, range(3), **PAPER_TRAINING))
QUICK = Preset(
    "fig1c-quick", "L", "Fig. 1c (quick): test accuracy vs L (d=256, m=1024)",
    symbol_grid([256], [2, 3, 4, 6, 8, 16], QUICK_GAMMAS, range(2), **QUICK_TRAINING))

#: Its table and drawing: accuracy against L with Eq. 3, shared with the other L figures.
report = report_accuracy
