"""The one harness that runs a test body over every backend of a kernel family.

``over_backends("walkers")`` parametrizes a test's ``backend`` argument over the
family's backends ("numpy", the float64 reference, then "cpu" and "cuda"), each
skipped with its reason where it cannot run here ("cuda" runs on Numba's
simulator in the default test setup). The body compares against
``REFERENCE``, the "numpy" backend.
"""
import pytest

from fastsd._dispatch import FAMILIES
from fastsd.exceptions import BackendUnavailableError

REFERENCE = "numpy"


def unavailable(family, backend):
    """Why ``backend`` of ``family`` cannot run here, or None."""
    try:
        FAMILIES[family].resolve(backend)
    except BackendUnavailableError as e:
        return str(e)
    return None


def over_backends(family, include_reference=True):
    """``pytest.mark.parametrize("backend", ...)`` over the family's runnable backends."""
    names = [b for b in FAMILIES[family].backends if include_reference or b != REFERENCE]
    params = []
    for b in names:
        reason = unavailable(family, b)
        params.append(pytest.param(b, id=b, marks=[pytest.mark.skip(reason=reason)]
                                   if reason else []))
    return pytest.mark.parametrize("backend", params)
