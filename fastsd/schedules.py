"""When a run reads its test accuracy: every ``eval_every`` steps (the paper's protocol) and,
besides, at the steps of a schedule ``eval_at``.

The paper evaluates every 1000 SGD steps and reports the best evaluation (App. G.1). The
lazy regime's accuracy moves within the first steps, so ``eval_at`` adds earlier readings:
"log" (1, 2, 3, 5, 10, 20, 30, 50, ... up to the run's steps) or explicit steps. The
evaluations are the union of both; a schedule never removes the protocol's evaluations, so
that the protocol's best (``protocol_best``) can be read from a run with a schedule.
"""
import numbers

import numpy as np

#: The mantissas of the "log" schedule in each decade: 1, 2, 3, 5 x 10^k.
LOG_MANTISSAS = (1, 2, 3, 5)
#: The schedules ``eval_at`` names.
NAMED = ("log",)


def log_steps(steps):
    """The "log" schedule: 1, 2, 3, 5, 10, 20, 30, 50, 100, ... up to ``steps``.

    Parameters
    ----------
    steps : int
        The run's steps, >= 1.

    Returns
    -------
    list of int
        Increasing, all <= ``steps``.
    """
    out, scale = [], 1
    while scale <= steps:
        out += [m * scale for m in LOG_MANTISSAS if m * scale <= steps]
        scale *= 10
    return out


def check_eval_at(value, name="eval_at"):
    """``eval_at`` validated, in the form that is recorded and keys a scan store.

    Parameters
    ----------
    value : None, "log", str, int or sequence of int
        None: no steps besides every ``eval_every``. "log": ``log_steps``.
        Explicit steps: an integer >= 1, a 1-d sequence of them, or their
        comma-separated text ("1,3,10", as ``--eval-at`` takes them).
    name : str
        The parameter's name in messages.

    Returns
    -------
    None or str
        None, "log", or the steps, increasing and without repeats, joined by commas
        ("1,3,10"): one text for one schedule, whichever way it was given.

    Raises
    ------
    ValueError
        For an empty schedule, a step < 1, or a text that is neither "log" nor integers
        separated by commas.
    TypeError
        For a value of another type (a float step, a set, a dict, a 2-d array, ...).
    """
    valid = "'log', or steps >= 1 as integers or their comma-separated text (e.g. '1,3,10')"
    if value is None:
        return None
    if isinstance(value, str):
        if value in NAMED:
            return value
        try:
            steps = [int(part) for part in value.split(",")]
        except ValueError:
            raise ValueError(f"`{name}` must be {valid}; got {value!r}.") from None
    elif isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        steps = [value]
    elif isinstance(value, (list, tuple, range, np.ndarray)):
        if isinstance(value, np.ndarray) and value.ndim != 1:
            raise TypeError(f"`{name}` must be {valid}; got an array of shape {value.shape}.")
        steps = list(value)
        for s in steps:
            if isinstance(s, (bool, np.bool_)) or not isinstance(s, numbers.Integral):
                raise TypeError(f"`{name}` must be {valid}; got {s!r} (of type "
                                f"{type(s).__name__}) in {value!r:.80}.")
    else:
        raise TypeError(f"`{name}` must be {valid}; got {value!r:.80} (of type "
                        f"{type(value).__name__}).")
    if not steps:
        raise ValueError(f"`{name}` must name at least one step ({valid}); got {value!r}.")
    if min(steps) < 1:
        raise ValueError(f"`{name}` must hold steps >= 1; got {min(steps)} in {value!r:.80}.")
    return ",".join(str(s) for s in sorted({int(s) for s in steps}))


class Evaluations:
    """The steps after which a run evaluates its test accuracy: every multiple of
    ``eval_every`` up to ``steps``, ``steps`` itself, and the steps of ``eval_at``.

    Iterated in increasing order without being held (a run of 10^9 steps evaluated
    every step holds no list of them) and counted by arithmetic.

    Parameters
    ----------
    steps, eval_every : int
        The run's steps and the steps between the protocol's evaluations, >= 1
        (checked by the caller).
    eval_at : None, "log", str or sequence of int
        Extra steps (``check_eval_at``); "log" is cut at ``steps``.

    Attributes
    ----------
    steps, eval_every : int
    eval_at : None or str
        ``eval_at`` as it is recorded (``check_eval_at``).
    extra : list of int
        The steps of ``eval_at`` that are not the protocol's, increasing.

    Raises
    ------
    ValueError
        For explicit steps beyond ``steps``, naming both; as ``check_eval_at``.
    """

    def __init__(self, steps, eval_every, eval_at=None):
        eval_at = check_eval_at(eval_at)
        self.steps, self.eval_every, self.eval_at = steps, eval_every, eval_at
        if eval_at is None:
            extra = []
        elif eval_at == "log":
            extra = log_steps(steps)
        else:
            extra = [int(s) for s in eval_at.split(",")]
            if extra[-1] > steps:
                raise ValueError(f"`eval_at` must hold steps <= steps={steps}; got {extra[-1]} "
                                 f"in {eval_at!r}.")
        self.extra = [t for t in extra if not self.is_protocol(t)]

    def is_protocol(self, t):
        """Whether step t is one of the paper's evaluations (a multiple of ``eval_every``,
        or the last step): those draw their test sets from the "test" stream."""
        return t % self.eval_every == 0 or t == self.steps

    def test_stream(self, t):
        """The training run's stream (``fastsd._rng.train_streams``) of step t's test set:
        "test" at the paper's evaluations, "scheduled_test" at a schedule's others, so that
        a schedule leaves the paper's test sets as they are drawn without it."""
        return "test" if self.is_protocol(t) else "scheduled_test"

    def __len__(self):
        return -(-self.steps // self.eval_every) + len(self.extra)

    def __iter__(self):
        extra = iter(self.extra)
        nxt = next(extra, None)
        for t in self._protocol():
            while nxt is not None and nxt < t:
                yield nxt
                nxt = next(extra, None)
            yield t

    def _protocol(self):
        yield from range(self.eval_every, self.steps, self.eval_every)
        yield self.steps


def evaluation_steps(steps, eval_every, eval_at=None):
    """The steps after which a run of ``steps`` steps evaluates, as a list
    (``Evaluations`` lists them without holding them).

    Parameters
    ----------
    steps, eval_every : int
    eval_at : None, "log", str or sequence of int

    Returns
    -------
    list of int
        Increasing: every multiple of ``eval_every`` up to ``steps``, ``steps`` itself,
        and the steps of ``eval_at``.

    Raises
    ------
    ValueError
        As ``Evaluations``.
    """
    return list(Evaluations(steps, eval_every, eval_at))


def accuracy_at(record, at="best"):
    """A record's test accuracy read at ``at``.

    Parameters
    ----------
    record : dict
        A "mlp" or "lazy_limit" record (``TrainResult.to_record``,
        ``LazyResult.to_record``): ``best_test_accuracy``, ``eval_every`` and the
        ``history`` of its evaluations.
    at : "best", "protocol" or int
        "best": the best over all its evaluations; "protocol": the best at the
        paper's evaluations only (``protocol_best``); a step t: the accuracy
        evaluated after step t.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For a step the record did not evaluate (its steps named: run it with an
        ``eval_at`` that holds the step).
    TypeError
        For ``at`` other than "best", "protocol" or an integer.
    """
    if isinstance(at, str) and at == "best":
        return float(record["best_test_accuracy"])
    if isinstance(at, str) and at == "protocol":
        return protocol_best(record["history"], record["eval_every"])
    if isinstance(at, (bool, np.bool_)) or not isinstance(at, numbers.Integral):
        raise TypeError(f"`at` must be 'best', 'protocol' or a step (an integer); got {at!r}.")
    steps = list(record["history"]["step"])
    if at not in steps:
        raise ValueError(f"`at` must be a step the record evaluated; step {at} is not among "
                         f"the steps of the record of d={record.get('d')}, L={record.get('L')}, "
                         f"seed={record.get('seed')} (eval_at={record.get('eval_at')!r}: "
                         f"{_some(steps)}): run it with an `eval_at` that holds the step, e.g. "
                         f"eval_at='log'.")
    return float(record["history"]["test_accuracy"][steps.index(at)])


def _some(steps):
    return ", ".join(map(str, steps)) if len(steps) <= 8 else \
        ", ".join(map(str, steps[:6])) + f", ... {steps[-1]}"


def protocol_best(history, eval_every):
    """The best test accuracy at the paper's evaluations only: the steps that are multiples
    of ``eval_every`` and the last one, as a run without ``eval_at`` would read it.

    Parameters
    ----------
    history : dict
        "step" and "test_accuracy", one entry per evaluation (a record's history).
    eval_every : int

    Returns
    -------
    float
    """
    steps = np.asarray(history["step"])
    acc = np.asarray(history["test_accuracy"], float)
    keep = (steps % eval_every == 0) | (steps == steps.max())
    return float(acc[keep].max())
