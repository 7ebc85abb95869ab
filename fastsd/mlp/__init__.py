"""The centered two-layer ReLU MLP: parameters, reference, kernels, trainer."""
from .evaluate import accuracy, output
from .model import Params, init_params
from .training import TrainResult, train, train_ensemble

__all__ = ["Params", "init_params", "output", "accuracy", "TrainResult", "train",
           "train_ensemble"]
