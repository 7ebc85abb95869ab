"""Fig. 1f: test accuracy against the input dimension d at L = 16 (m = 1024)."""
from ..presets import Preset
from ._grid import (PAPER_GAMMAS, PAPER_TRAINING, QUICK_GAMMAS, QUICK_TRAINING, report_accuracy,
                    symbol_grid)

HELP = "accuracy vs d (L=16)"
FULL = Preset(
    "fig1f", "d", "Fig. 1f: test accuracy vs input dimension d (L=16, m=1024)",
    symbol_grid([2 ** k for k in range(4, 11)], [16], PAPER_GAMMAS, range(3), **PAPER_TRAINING))
QUICK = Preset(
    "fig1f-quick", "d", "Fig. 1f (quick): test accuracy vs d (L=16, m=1024)",
    symbol_grid([16, 64, 256, 1024], [16], QUICK_GAMMAS, range(2), **QUICK_TRAINING))

#: Its table and drawing: accuracy against d with Eq. 3 at L, shared with Fig. 1c.
report = report_accuracy
