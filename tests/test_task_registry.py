"""Tasks by name (fastsd.tasks.registry): make_task builds what the constructors build, a task
file of its own registers itself, and the "mlp_image" cells take their tasks from it."""
import numpy as np
import pytest

from fastsd.scan import get_predictor
from fastsd.tasks import PSVRT, TASKS, Pentomino, SameDifferent, make_task, register_task
from fastsd.tasks.registry import discover


@pytest.mark.parametrize("name,settings,built", [
    ("psvrt", {"patch": 3, "n_patches": 4},
     lambda: PSVRT(patch=3, n_patches=4, n_train_patterns=6, seed=7)),
    ("pentomino", {"image_width": 3, "blur": 0.0},
     lambda: Pentomino(width=3, n_train_shapes=6, blur=0.0, seed=7)),
    ("symbols", {"d": 5, "sigma2": 0.5},
     lambda: SameDifferent(5, 6, sigma2=0.5, seed=7)),
])
def test_make_task_builds_what_the_constructor_builds(name, settings, built):
    task, want = make_task(name, 6, 7, **settings), built()
    assert type(task) is type(want) and task.training_key() == want.training_key()
    for a, b in zip(task.sample_test(64, seed=3), want.sample_test(64, seed=3)):
        np.testing.assert_array_equal(a, b)


def test_make_task_refuses_what_it_does_not_know():
    with pytest.raises(ValueError, match="`task` must be one of 'psvrt', 'pentomino'"):
        make_task("PSVRT", 4)
    with pytest.raises(ValueError, match="`blur` is not a setting of task 'psvrt'"):
        make_task("psvrt", 4, blur=0.5)
    with pytest.raises(ValueError, match="`patch`"):
        make_task("psvrt", 4, patch=1)          # the constructor's own check


def test_a_visual_task_needs_setting_names_of_its_own(monkeypatch):
    monkeypatch.setattr("fastsd.tasks.registry.TASKS", dict(TASKS))
    from fastsd.tasks import registry

    with pytest.raises(ValueError, match="`name` must be a task not registered yet"):
        registry.register_task("psvrt", {}, PSVRT)
    with pytest.raises(ValueError, match="got 'patch', a setting of task 'psvrt'"):
        registry.register_task("tiles", {"patch": 2}, PSVRT)
    registry.register_task("tiles", {"patch": 2}, PSVRT, visual=False)    # not a cell's


def test_a_task_file_of_its_own_registers_itself(tmp_path, monkeypatch):
    package = tmp_path / "mytasks"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_helper.py").write_text("raise RuntimeError('a private module is no task')\n")
    (package / "checker.py").write_text(
        "from fastsd.tasks import PSVRT, register_task\n"
        "register_task('checker', {'squares': 2}, lambda L, task_seed, squares: "
        "PSVRT(patch=2, n_patches=squares, n_train_patterns=L, seed=task_seed))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr("fastsd.tasks.registry.TASKS", dict(TASKS))
    from fastsd.tasks import registry

    discover("mytasks")
    assert "checker" in registry.TASKS
    assert registry.make_task("checker", 4, 0, squares=3).input_dim == 36


def test_mlp_image_cells_name_the_registered_visual_tasks():
    pred = get_predictor("mlp_image")
    visual = [name for name, e in TASKS.items() if e.visual]
    assert visual[:2] == ["psvrt", "pentomino"]
    own = {n for name in visual for n in TASKS[name].settings}
    assert own <= set(pred.defaults) and all(pred.defaults[n] is None for n in own)
    cell = pred.prepare(dict(task="pentomino", L=4, gamma=1.0, width=8, steps=2))
    assert (cell["image_width"], cell["blur"], cell["patch"]) == (2, 0.5, None)
    assert type(pred.make_task(cell)) is Pentomino
