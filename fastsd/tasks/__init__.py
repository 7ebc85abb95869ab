"""Same-different tasks: Gaussian symbols and the visual tasks of Sec. 4."""
from .base import Task
from .cifar import CifarPairs, vgg16_features
from .registry import TASKS, discover, make_task, register_task
from .psvrt import PSVRT                # registered first: Sec. 4's order, the cells' choices
from .pentomino import Pentomino
from .symbols import SameDifferent

discover()          # a task in a file of its own registers itself (fastsd.tasks.registry)

__all__ = ["Task", "SameDifferent", "PSVRT", "Pentomino", "CifarPairs", "TASKS", "make_task",
           "register_task", "vgg16_features"]
