"""Test-wide settings.

CUDA kernels run on Numba's CPU simulator in the normal suite, so that they
are tested on machines without a GPU. On a GPU machine, run the suite with
``NUMBA_ENABLE_CUDASIM=0`` to test them on the device instead. This must be
set before Numba is first imported, hence here. ``FASTSD_COSTS=fallback``: the
training paths are chosen by the shipped cost model (fastsd.mlp.costs) on
every machine.

Hypothesis profiles: "ci" is deterministic (``derandomize=True``: the same
examples on every run, no example database) with more examples for the
properties that do not fix their own count; "dev" (the default) explores new
random examples on each run and remembers failures in ``.hypothesis/``. The
profile is ``HYPOTHESIS_PROFILE`` when set, else "ci" when ``CI`` is set (as
``.ci/run`` runs), else "dev"; ``--hypothesis-profile NAME`` overrides both.
The session's first line names the profile in use.
"""
import os

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
# path="auto" prices the paths with the shipped fallback prices, not with a calibration this
# machine may have stored (fastsd calibrate), so that it picks the same paths everywhere.
os.environ.setdefault("FASTSD_COSTS", "fallback")

settings.register_profile("ci", derandomize=True, database=None, max_examples=200,
                          deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
# Explicit, not inherited: where CI is set, Hypothesis's own default is derandomized with
# no database, and "dev" must explore even there (HYPOTHESIS_PROFILE=dev under CI).
settings.register_profile("dev", derandomize=False, max_examples=100, deadline=None,
                          print_blob=True,
                          database=DirectoryBasedExampleDatabase(".hypothesis/examples"))
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
settings.load_profile(PROFILE)


def pytest_configure(config):
    """Note ``--hypothesis-profile NAME`` (loaded by Hypothesis' plugin) for the header."""
    global PROFILE
    PROFILE = config.getoption("hypothesis_profile", None) or PROFILE


def pytest_sessionstart(session):
    """Print the Hypothesis profile even under ``-q``, which hides pytest's header."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        current = settings.default
        reporter.write_line(
            f"hypothesis profile {PROFILE!r}: derandomize="
            f"{current.derandomize}, max_examples={current.max_examples} (tests may set "
            f"their own count), database={'off' if current.database is None else 'on'}")
