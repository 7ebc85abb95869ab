"""Fig. C3: the ultra-rich regime, test accuracy against L for gamma >= 1 (App. G.1).

gamma > 1 with alpha = gamma sqrt(d) alpha0; the published grid is d = 256,
L = 2..12, log10 gamma in {0, .4, ..., 2}. Drawn and tabulated as Fig. 1c.
"""
from ..presets import Preset
from ._grid import PAPER_TRAINING, QUICK_TRAINING, symbol_grid
from ._grid import report_accuracy

HELP = "ultra-rich gamma up to 100, accuracy vs L (d=256)"
GAMMAS = tuple(10.0 ** e for e in (0.0, 0.4, 0.8, 1.2, 1.6, 2.0))
FULL = Preset(
    "figC3", "L", "Fig. C3: rich and ultra-rich test accuracy vs L (d=256, m=1024)",
    symbol_grid([256], range(2, 13), GAMMAS, range(3), **PAPER_TRAINING))
QUICK = Preset(
    "figC3-quick", "L", "Fig. C3 (quick): ultra-rich test accuracy vs L (d=256, m=1024)",
    symbol_grid([256], [2, 3, 4, 6, 8], GAMMAS[::2] + (100.0,), range(2), **QUICK_TRAINING))

#: Its table and drawing: accuracy against L with Eq. 3, shared with the other L figures.
report = report_accuracy
