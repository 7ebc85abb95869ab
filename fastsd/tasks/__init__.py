"""Same-different tasks: Gaussian symbols (and, later, image tasks)."""
from .base import Task
from .symbols import SameDifferent

__all__ = ["Task", "SameDifferent"]
