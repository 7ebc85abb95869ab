"""The Hypothesis profiles of tests/conftest.py mean what they say in every environment.

Under CI=true Hypothesis's own default profile is derandomized with no database, and a
"dev" profile inherited from it did not explore (the first line of a run said so).
"""
from hypothesis import settings


def test_ci_is_deterministic_and_dev_explores_wherever_it_runs():
    ci, dev = settings.get_profile("ci"), settings.get_profile("dev")
    assert ci.derandomize and ci.database is None and ci.max_examples >= 100
    assert not dev.derandomize and dev.database is not None
