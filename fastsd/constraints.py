"""The valid values of a setting, one object per kind (as scikit-learn's ``Interval`` and
``StrOptions``).

A ``Constraint`` checks and normalises a value (``check``), says in words what is valid
(``valid``), names its type for a docstring (``doc_type``), parses a command-line text
(``parse``, None: argparse's text as it is) and lists values it must refuse
(``invalid``: the generated bad-value tests). ``fastsd.params.Param`` holds one, so that a
setting's checks, its CLI option, its docstring entry and its bad-value tests come from one
object; a new kind is a new class here, with no switch elsewhere to extend.
"""
import argparse
import math
import numbers

import numpy as np

from ._validation import check_batch_size, check_choice, check_float, check_int, fail
from .activations import ACTIVATIONS, get_activation
from .schedules import check_eval_at

#: A value of no declared type (``Options.invalid``).
STRANGER = type("Stranger", (), {"__repr__": lambda self: "<an object of no declared type>"})()
#: A text no numeric or named setting takes.
_TEXT = ("x", (TypeError, ValueError))


class Constraint:
    """The valid values of one kind of setting (subclasses say which).

    Attributes
    ----------
    kind : str
        Its name in ``fastsd.params.KINDS`` ("int", "float", ...).
    doc_type : str
        The type in a numpydoc Parameters entry, e.g. ``'float or "lazy"'``.
    """

    kind: str
    doc_type: str

    def check(self, name, value):
        """Return ``value`` validated and normalised; raise naming ``name`` (ValueError out
        of range, TypeError of the wrong type)."""
        raise NotImplementedError

    def valid(self):
        """The valid values in words, e.g. "an integer >= 2"."""
        raise NotImplementedError

    def invalid(self):
        """[(value, exception)] that ``check`` must raise."""
        raise NotImplementedError

    def parse(self):
        """An argparse ``type`` for the option's text, or None (the text itself)."""
        return None


class Integer(Constraint):
    """An integer in [minimum, maximum] (either bound optional); ``kind`` "int", or "seed"
    for ``Seed``."""

    kind, doc_type = "int", "int"

    def __init__(self, minimum=None, maximum=None):
        self.minimum, self.maximum = minimum, maximum

    def check(self, name, value):
        return check_int(name, value, self.minimum, self.maximum)

    def valid(self):
        out = "an integer" + ("" if self.minimum is None else f" >= {self.minimum}")
        return out + ("" if self.maximum is None else f" and <= {self.maximum}")

    def invalid(self):
        out = [_TEXT]
        if self.minimum is not None:
            out.append((self.minimum - 1, ValueError))
        if self.maximum is not None:
            out.append((self.maximum + 1, ValueError))
        return out + [(1.5, TypeError)]

    def parse(self):
        return int


class Seed(Integer):
    """A seed: an integer >= 0."""

    kind = "seed"

    def __init__(self):
        super().__init__(0)


class BatchSize(Constraint):
    """An even integer >= 2 (half of a batch are same pairs)."""

    kind, doc_type = "batch_size", "int"

    def check(self, name, value):
        return check_batch_size(name, value)

    def valid(self):
        return "an even integer >= 2"

    def invalid(self):
        return [_TEXT, (1, ValueError), (1.5, TypeError), (5, ValueError)]

    def parse(self):
        return int


class Real(Constraint):
    """A finite number; > 0 where ``positive``, >= 0 where ``nonnegative``."""

    kind, doc_type = "float", "float"

    def __init__(self, positive=False, nonnegative=False):
        self.positive, self.nonnegative = positive, nonnegative

    def check(self, name, value):
        return check_float(name, value, positive=self.positive, nonnegative=self.nonnegative)

    def valid(self):
        return "a finite number" + (" > 0" if self.positive else
                                    " >= 0" if self.nonnegative else "")

    def invalid(self):
        out = [_TEXT, (math.nan, ValueError), (math.inf, ValueError)]
        if self.positive:
            out.append((0.0, ValueError))
        if self.positive or self.nonnegative:
            out.append((-1.0, ValueError))
        return out

    def parse(self):
        return _as_given(self.valid())


class Gamma(Real):
    """The richness gamma: a finite number > 0, or "lazy" (returned as given; the task
    resolves it)."""

    kind, doc_type = "gamma", 'float or "lazy"'

    def __init__(self):
        super().__init__(positive=True)

    def check(self, name, value):
        if isinstance(value, str):
            return value if value == "lazy" else fail(
                name, "a number > 0 or 'lazy' (the paper's gamma ~ 0)", value)
        return super().check(name, value)

    def valid(self):
        return "a number > 0 or 'lazy'"

    def parse(self):
        return _word_or("lazy", _as_given(self.valid()), self.valid())


class Pairs(Constraint):
    """Training pairs: "all", or an integer >= 2 (at most L^2, checked where L is known)."""

    kind, doc_type = "pairs", 'int or "all"'

    def check(self, name, value):
        if isinstance(value, str):
            return value if value == "all" else fail(name, self.valid(), value)
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            fail(name, self.valid(), value, TypeError)
        return check_int(name, value, 2)

    def valid(self):
        return "'all' or an integer >= 2"

    def invalid(self):
        return [_TEXT, (1, ValueError), (1.5, TypeError)]

    def parse(self):
        return _word_or("all", int, self.valid())


class Schedule(Constraint):
    """Evaluation steps: "log", or integers >= 1 (``fastsd.schedules.check_eval_at``, which
    gives one text for one schedule: "1,3,10")."""

    kind, doc_type = "schedule", '"log", str or sequence of int'

    def check(self, name, value):
        return check_eval_at(value, name)

    def valid(self):
        return "'log' (1, 2, 3, 5, 10, 20, ...) or steps >= 1 separated by commas"

    def invalid(self):
        return [("x", ValueError), ("0,3", ValueError), ([], ValueError), (1.5, TypeError),
                ([1.5], TypeError)]


class ActivationName(Constraint):
    """A name in ``fastsd.activations.ACTIVATIONS`` (at the time of the check) or an
    ``Activation``, returned as its name where it is that name's."""

    kind, doc_type = "activation", "str or fastsd.activations.Activation"

    def check(self, name, value):
        act = get_activation(value, name)
        return act.name if ACTIVATIONS.get(act.name) is act else act

    def valid(self):
        return "one of " + ", ".join(map(repr, ACTIVATIONS))

    def invalid(self):
        return [("x", ValueError), ("ReLU", ValueError), (1, ValueError)]


class Flag(Constraint):
    """True or False (NumPy's too), returned as a bool."""

    kind, doc_type = "bool", "bool"

    def check(self, name, value):
        if not isinstance(value, (bool, np.bool_)):
            fail(name, self.valid(), value, TypeError)
        return bool(value)

    def valid(self):
        return "True or False"

    def invalid(self):
        return [("x", TypeError), (1, TypeError)]


class Sign(Constraint):
    """+1 or -1 (a number, not a bool), returned as an int."""

    kind, doc_type = "sign", "int"

    def check(self, name, value):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            fail(name, self.valid(), value, TypeError)
        if value not in (1, -1):
            fail(name, self.valid(), value)
        return int(value)

    def valid(self):
        return "+1 or -1"

    def invalid(self):
        return [_TEXT, (0, ValueError), (True, TypeError)]

    def parse(self):
        return int


class Options(Constraint):
    """One of ``choices``."""

    kind = "choice"

    def __init__(self, choices):
        self.choices = tuple(choices)
        self.doc_type = "{" + ", ".join(map(repr, self.choices)) + "}"

    def check(self, name, value):
        return check_choice(name, value, self.choices)

    def valid(self):
        return "one of " + ", ".join(map(repr, self.choices))

    def invalid(self):
        return [(STRANGER, (TypeError, ValueError)),
                ("not-" + "-".join(map(str, self.choices)), ValueError)]


def _as_given(valid):
    """An argparse type: ``text`` as a float, refused (with the text as given) where float64
    rounds it to 0 or infinity, as "1e-400" and "1e400", though the text is no zero or
    infinity: the check that follows would name the rounded number ("got 0.0")."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {valid}; got {text!r}") from None
        if value in (0.0, math.inf, -math.inf) and not _spells(text, value):
            raise argparse.ArgumentTypeError(f"must be {valid}; got {text!r}, which is "
                                             f"{value} in float64")
        return value
    return parse


def _spells(text, value):
    """Whether ``text`` writes ``value`` (0 or an infinity) itself, not a number rounded to it."""
    digits = text.strip().lower().lstrip("+-").split("e")[0].replace(".", "").replace("_", "")
    return (set(digits) <= {"0"}) if value == 0 else "inf" in text.lower()


def _word_or(word, number, valid):
    """An argparse type: ``word`` itself, or ``text`` as ``number`` (int or float)."""
    def parse(text):
        if text == word:
            return text
        try:
            return number(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {valid}; got {text!r}") from None
    return parse


#: The constraint of each kind named by a string in a ``Param`` declaration, from the
#: declaration's range fields (``minimum``, ``maximum``, ``positive``, ``nonnegative``,
#: ``choices``).
BY_KIND = {
    "int": lambda p: Integer(p.minimum, p.maximum),
    "seed": lambda p: Seed(),
    "batch_size": lambda p: BatchSize(),
    "float": lambda p: Real(p.positive, p.nonnegative),
    "gamma": lambda p: Gamma(),
    "pairs": lambda p: Pairs(),
    "schedule": lambda p: Schedule(),
    "activation": lambda p: ActivationName(),
    "bool": lambda p: Flag(),
    "sign": lambda p: Sign(),
    "choice": lambda p: Options(p.choices),
}

__all__ = ["ActivationName", "BY_KIND", "BatchSize", "Constraint", "Flag", "Gamma", "Integer",
           "Options", "Pairs", "Real", "STRANGER", "Schedule", "Seed", "Sign"]
