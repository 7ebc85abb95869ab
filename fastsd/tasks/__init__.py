"""Same-different tasks: Gaussian symbols and the visual tasks of Sec. 4."""
from .base import Task
from .cifar import CifarPairs, vgg16_features
from .pentomino import Pentomino
from .psvrt import PSVRT
from .symbols import SameDifferent

__all__ = ["Task", "SameDifferent", "PSVRT", "Pentomino", "CifarPairs", "vgg16_features"]
