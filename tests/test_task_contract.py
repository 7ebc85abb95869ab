"""The contract every task keeps (fastsd.tasks.base.Task): what the trainer and engines use.

Each task is checked for the same properties: L and input_dim, balanced index pairs and
labels from the base class (no task borrows another's methods), training inputs of the
declared size, balanced and reproducible training and test samples.
"""
import numpy as np
import pytest
from test_cifar import write_split

from fastsd.conventions import IMAGE_LAZY_GAMMA
from fastsd.tasks import PSVRT, CifarPairs, Pentomino, SameDifferent
from fastsd.tasks.base import Task


def _cifar(tmp_path):
    d = tmp_path / "cifar-100-python"
    d.mkdir()
    rng = np.random.default_rng(0)
    write_split(d / "train", np.repeat(np.arange(6), 4), rng)
    write_split(d / "test", np.repeat(np.arange(6), 2), rng)
    return CifarPairs(tmp_path, n_train_classes=4, seed=0)


TASKS = {
    "symbols": lambda tmp: SameDifferent(d=5, L=4, seed=0),
    "noisy symbols": lambda tmp: SameDifferent(d=5, L=4, sigma2=1.0, seed=0),
    "PSVRT": lambda tmp: PSVRT(patch=2, n_patches=2, n_train_patterns=4, seed=0),
    "Pentomino": lambda tmp: Pentomino(width=2, n_train_shapes=4, seed=0),
    "CIFAR": _cifar,
}


@pytest.fixture(params=sorted(TASKS))
def task(request, tmp_path):
    return TASKS[request.param](tmp_path)


def test_declares_what_the_engines_use(task):
    assert isinstance(task, Task)
    assert isinstance(task.L, int) and task.L >= 2
    assert isinstance(task.input_dim, int) and task.input_dim >= 1
    # one way of drawing pairs for every task, inherited, not borrowed from another task
    assert type(task).draw_pairs is Task.draw_pairs
    assert type(task).sample_train is Task.sample_train
    assert type(task).sample_test is Task.sample_test
    for name in ("training_inputs", "_test_inputs"):          # what each task renders itself
        assert getattr(type(task), name) is not getattr(Task, name), name
    assert task.lazy_gamma() > 0 and np.isfinite(task.output_scale(task.lazy_gamma()))
    if task.scale_dim == 1:             # image tasks: the lazy gamma Fig. A1 trains with
        assert task.lazy_gamma() == IMAGE_LAZY_GAMMA


def test_index_pairs_are_balanced_and_render_to_the_declared_size(task):
    rng = np.random.default_rng(1)
    u, v, y = task.draw_pairs(rng, (3, 8))
    assert u.shape == v.shape == y.shape == (3, 8) and u.dtype == v.dtype == np.int32
    assert np.all((0 <= u) & (u < task.L) & (0 <= v) & (v < task.L))
    assert np.all(y[:, :4] == 1) and np.all(y[:, 4:] == 0)
    assert np.all((u == v) == (y == 1))          # same pairs repeat an item, different never
    for t in range(3):                          # the engines render one step's batch at a time
        x = task.training_inputs(u[t], v[t], rng)
        assert x.shape == (8, task.input_dim) and x.dtype == np.float64
        assert np.all(np.isfinite(x))


@pytest.mark.parametrize("sampler", ["sample_train", "sample_test"])
def test_samples_are_balanced_and_reproducible(task, sampler):
    x, y = getattr(task, sampler)(10, seed=3)
    assert x.shape == (10, task.input_dim) and y.shape == (10,)
    assert sorted(y) == [0.0] * 5 + [1.0] * 5
    x2, y2 = getattr(task, sampler)(10, seed=3)
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(y, y2)
