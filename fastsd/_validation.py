"""Checks at public entry points, with one message shape.

Every message reads "`name` must be <what>; got <value>." so that users see
the parameter, the valid range and what they passed.
"""
import numbers

import numpy as np


class _Described(str):
    """A description of a received value, shown without quotes."""

    def __repr__(self):
        return str(self)


def fail(name, what, got, exc=ValueError):
    """Raise ``exc`` ("`name` must be what; got got."): every check's message."""
    raise exc(f"`{name}` must be {what}; got {got!r}.")


def check_int(name, value, minimum=None, maximum=None):
    """Return ``value`` as an int, or raise if it is not an integer in range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        rng = f" >= {minimum}" if minimum is not None else ""
        fail(name, f"an integer{rng}", value, TypeError)
    value = int(value)
    if minimum is not None and value < minimum:
        fail(name, f"an integer >= {minimum}", value)
    if maximum is not None and value > maximum:
        fail(name, f"an integer <= {maximum}", value)
    return value


def check_float(name, value, *, positive=False, nonnegative=False):
    """Return ``value`` as a finite float; optionally require > 0 or >= 0."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        fail(name, "a real number", value, TypeError)
    value = float(value)
    if positive and not (np.isfinite(value) and value > 0):
        fail(name, "a finite number > 0", value)
    if nonnegative and not (np.isfinite(value) and value >= 0):
        fail(name, "a finite number >= 0", value)
    if not np.isfinite(value):
        fail(name, "a finite number", value)
    return value


def check_choice(name, value, choices):
    """Raise unless ``value`` is one of ``choices``."""
    if value not in choices:
        fail(name, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def check_array(name, value, *, ndim=None, shape=None, dtype=np.float64):
    """Return ``value`` as a finite ndarray of ``dtype`` with the given shape.

    ``shape`` may contain ``None`` for a free axis.
    """
    if np.iscomplexobj(value):          # casting would drop the imaginary part silently
        fail(name, "a real array", _Described("a complex array"), TypeError)
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        fail(name, "a numeric array", _Described(type(value).__name__), TypeError)
    if ndim is not None and arr.ndim != ndim:
        fail(name, f"a {ndim}-d array", _Described(f"shape {arr.shape}"))
    if shape is not None:
        ok = arr.ndim == len(shape) and all(
            s is None or s == a for s, a in zip(shape, arr.shape))
        if not ok:
            want = "(" + ", ".join("n" if s is None else str(s) for s in shape) + ")"
            fail(name, f"an array of shape {want}", _Described(f"shape {arr.shape}"))
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        fail(name, "finite (no NaN or inf)", _Described("an array containing NaN or inf"))
    return arr


def check_seed(name, value):
    """Accept None, a non-negative int, a SeedSequence or a numpy Generator."""
    if value is None or isinstance(value, (np.random.SeedSequence, np.random.Generator)):
        return value
    return check_int(name, value, minimum=0)


def check_batch_size(name, value):
    """Return ``value`` as an even int >= 2: a training batch is exactly half same pairs."""
    value = check_int(name, value)
    if value < 2 or value % 2:
        fail(name, "an even integer >= 2 (exactly half of a batch are same pairs)", value)
    return value
