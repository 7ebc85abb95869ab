"""Extreme logits shared by the loss tests of every backend."""
import math

# (f, y, exact loss, exact sigmoid(f) - y); exact loss = max(t, 0) + log1p(exp(-|t|)),
# t = (1 - 2y) f, and log1p(exp(-1000)) ~ 5e-435 rounds to 0 in every float format.
EXTREME = [
    (1000.0, 0.0, 1000.0, 1.0),
    (1000.0, 1.0, 0.0, 0.0),
    (-1000.0, 0.0, 0.0, 0.0),
    (-1000.0, 1.0, 1000.0, -1.0),
    (math.inf, 0.0, math.inf, 1.0),
    (math.inf, 1.0, 0.0, 0.0),
    (-math.inf, 0.0, 0.0, 0.0),
    (-math.inf, 1.0, math.inf, -1.0),
]
