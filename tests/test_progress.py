"""A bar that is off creates no tqdm object.

Even a disabled tqdm bar creates tqdm's multiprocessing lock; in scan workers,
terminated when a scan stops, its semaphores were reported as leaked on the
scan's exit (the signal tests saw the warning after "fastsd: terminated").
"""
import pytest
import tqdm.auto

import fastsd
from fastsd import _progress
from fastsd.scan import Grid, run


@pytest.fixture
def no_tqdm(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a tqdm bar was created with progress off")
    monkeypatch.setattr(tqdm.auto, "tqdm", refuse)


def test_a_bar_that_is_off_is_a_stand_in(no_tqdm):
    with _progress.bar(False, total=10) as bar:
        bar.update(3)
    with pytest.raises(AssertionError, match="tqdm bar was created"):
        _progress.bar(True, total=10)


def test_training_lazy_limit_and_scans_create_no_bar_when_off(no_tqdm, tmp_path):
    task = fastsd.SameDifferent(d=4, L=3, seed=0)
    fastsd.train(task, 1.0, width=8, steps=4, eval_every=2, n_test=8, batch_size=4,
                 backend="numpy", progress=False)
    fastsd.kernels.lazy_limit(task, "logistic_flow", steps=4, eval_every=2, n_test=8,
                              progress=False)
    run(Grid(L=[2, 3], d=4, width=8, steps=4, eval_every=2, n_test=8, batch_size=4,
             gamma=1.0, seed=0), "mlp", tmp_path / "s.jsonl", "serial", backend="numpy",
        progress=False)
