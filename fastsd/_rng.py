"""Seeds to independent random streams, with no global state.

Every random draw in fastsd comes from a ``numpy.random.Generator`` derived
from a user seed through ``numpy.random.SeedSequence``, so that a seed gives
the same numbers whatever the backend or the thread count.
"""
import numpy as np

#: The independent streams a training run draws from, in spawn order: the test sets of the
#: evaluations every ``eval_every`` steps come from "test", those of the extra steps of a
#: schedule (``eval_at``, ``fastsd.schedules``) from "scheduled_test", so that a schedule
#: leaves the other evaluations' test sets as they were. A stream added at the end leaves
#: the earlier ones unchanged (spawned children are numbered in order).
TRAIN_STREAMS = ("init", "pairs", "noise", "test", "scheduled_test")


#: Spawn keys that keep a task's own streams apart from a training run's
#: (which uses spawn keys 0..4), so that equal integer seeds never share numbers.
TASK_TAGS = {"symbols": 1000, "sample_train": 1001, "sample_test": 1002}


def tagged_generator(seed, tag):
    """Return a Generator on the stream ``tag`` of ``seed``; a Generator is used as is."""
    if isinstance(seed, np.random.Generator):
        return seed
    ss = seed_sequence(seed)
    child = np.random.SeedSequence(ss.entropy, spawn_key=ss.spawn_key + (TASK_TAGS[tag],))
    return np.random.Generator(np.random.PCG64(child))


def seed_sequence(seed):
    """Return a SeedSequence for ``seed`` (None draws fresh OS entropy)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    return np.random.SeedSequence(seed)


def recorded_seed(seed):
    """The integer that rebuilds ``seed``'s streams, for a record; None where none does.

    That is the entropy of its SeedSequence: for ``seed=None`` the fresh
    entropy drawn, so that the run can be repeated. A Generator, or a
    SeedSequence with a spawn key (a child), cannot be rebuilt from one
    integer: None.
    """
    if isinstance(seed, np.random.Generator):
        return None
    ss = seed_sequence(seed)
    return None if ss.spawn_key else int(ss.entropy)


def train_streams(seed):
    """Return a dict of independent generators, one per name in TRAIN_STREAMS.

    A SeedSequence gives the same streams every time (its children are spawned
    from a fresh copy, so earlier spawns do not shift them); a Generator gives
    children of its current state.
    """
    if isinstance(seed, np.random.Generator):
        return dict(zip(TRAIN_STREAMS, seed.spawn(len(TRAIN_STREAMS))))
    ss = seed_sequence(seed)
    fresh = np.random.SeedSequence(ss.entropy, spawn_key=ss.spawn_key, pool_size=ss.pool_size)
    return {name: np.random.Generator(np.random.PCG64(child))
            for name, child in zip(TRAIN_STREAMS, fresh.spawn(len(TRAIN_STREAMS)))}
