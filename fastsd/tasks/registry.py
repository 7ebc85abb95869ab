"""Tasks by name: each task's own file registers how a scan cell builds it.

A task's file calls ``register_task`` with its name, its own settings (with their defaults)
and a function that builds the task from them, L and the training items' seed. ``make_task``
builds any registered task by name; the "mlp_image" scan cells name a visual task so, and the
package imports every module of ``fastsd.tasks`` (``discover``), so a task added in a new
file there is registered without editing another module.
"""
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping

from .._validation import check_choice
from .base import Task


@dataclass(frozen=True)
class TaskEntry:
    """A task a scan cell can name.

    Attributes
    ----------
    name : str
        Its name in cells and records ("psvrt").
    settings : mapping
        Its own settings as cells name them, with their defaults ({"patch": 5, ...}).
    build : callable
        ``build(L, task_seed, **settings) -> Task``, checking the settings as the task's
        constructor does.
    visual : bool
        Whether the "mlp_image" predictor trains it (the visual tasks of Sec. 4, no
        sqrt(d) factor in gamma: App. G.3-G.4).
    """

    name: str
    settings: Mapping[str, Any]
    build: Callable[..., Task]
    visual: bool = True


#: The registered tasks by name, in registration order.
TASKS: Dict[str, TaskEntry] = {}


def register_task(name: str, settings: Mapping[str, Any], build: Callable[..., Task],
                  visual: bool = True) -> TaskEntry:
    """Register a task under ``name`` (see ``TaskEntry``); returns its entry.

    Raises
    ------
    ValueError
        For a name registered already, or (a visual task) a setting that another visual
        task has too: an "mlp_image" cell holds every visual task's settings, the other
        tasks' as None.
    """
    if name in TASKS:
        raise ValueError(f"`name` must be a task not registered yet; got {name!r}, which is.")
    for other in TASKS.values():
        shared = sorted(set(settings) & set(other.settings)) if visual and other.visual else []
        if shared:
            raise ValueError(f"`settings` of a visual task must have names of their own; got "
                             f"{shared[0]!r}, a setting of task {other.name!r}.")
    entry = TaskEntry(name, dict(settings), build, visual)
    TASKS[name] = entry
    return entry


def make_task(name: str, L: int, task_seed: Any = None, **settings: Any) -> Task:
    """The registered task ``name`` with L training items, seeded by ``task_seed``, and its
    own ``settings`` (the others at their defaults).

    Raises
    ------
    ValueError
        For a name not registered, or a setting that is not the task's (naming both); as the
        task's constructor for values out of range.
    """
    entry = TASKS[check_choice("task", name, tuple(TASKS))]
    unknown = sorted(set(settings) - set(entry.settings))
    if unknown:
        raise ValueError(f"`{unknown[0]}` is not a setting of task {name!r}; its settings: "
                         f"{', '.join(entry.settings) or 'none'}.")
    return entry.build(L=L, task_seed=task_seed, **{**entry.settings, **settings})


def discover(package: str = __package__) -> None:
    """Import every public module of ``package`` (``fastsd.tasks``): each task's file
    registers its task as it is imported (the private ones, ``_images`` and ``_cpu``, are
    helpers the tasks import themselves)."""
    module = importlib.import_module(package)
    for info in pkgutil.iter_modules(module.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")


__all__ = ["TASKS", "TaskEntry", "discover", "make_task", "register_task"]
