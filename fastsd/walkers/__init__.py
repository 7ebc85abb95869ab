"""The Markov walker ensemble of App. C.3-C.4 and weight structure (Fig. 1a/1d).

``simulate`` runs independent sign-update Markov processes, one per hidden
unit, in the basis of the training symbols, and counts the mu statistics of
App. C.4; ``weight_structure`` measures the same structure (alignment of the
two halves of each hidden weight vector, readout ratio of App. C.4.3) on a
trained network.
"""
from .analysis import (WeightStructure, alignment, norm_ratio, readout_ratio, summary,
                       weight_structure)
from .process import CATEGORIES, WalkerResult, simulate

__all__ = ["CATEGORIES", "WalkerResult", "WeightStructure", "alignment", "norm_ratio",
           "readout_ratio", "simulate", "summary", "weight_structure"]
