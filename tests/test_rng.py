"""The one seed record (fastsd._rng.recorded_seed) that every result uses."""
import numpy as np

import fastsd
from fastsd._rng import recorded_seed, seed_sequence, train_streams


def test_the_recorded_integer_rebuilds_the_streams():
    assert recorded_seed(7) == 7
    fresh = seed_sequence(None)
    again = train_streams(recorded_seed(fresh))
    for name, g in train_streams(fresh).items():
        assert g.integers(2**62) == again[name].integers(2**62)
    # what one integer cannot rebuild is recorded as None
    assert recorded_seed(np.random.default_rng(0)) is None
    assert recorded_seed(np.random.SeedSequence(3).spawn(1)[0]) is None


def test_every_result_records_the_same_integer():
    task = fastsd.SameDifferent(d=4, L=3, seed=0)
    r = fastsd.train(task, 1.0, width=4, steps=2, eval_every=2, n_test=4, batch_size=2,
                     seed=11, backend="numpy", progress=False)
    w = fastsd.walkers.simulate(3, 4, 2, n_walkers=2, seed=11, backend="numpy")
    k = fastsd.kernels.lazy_limit(task, "regression", n_test=4, seed=11)
    b = fastsd.bayes.accuracy(fastsd.SameDifferent(d=4, L=3, sigma2=1.0, seed=0),
                              "generalizing", n_test=4, seed=11)
    assert r.config["seed"] == w.config["seed"] == k.config["seed"] == 11
    assert b.to_record()["seed"] == 11
