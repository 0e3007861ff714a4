"""Shared test setup: hypothesis runs derandomized in CI (CI=true) and on demand, with fewer
examples in the fast tier (TJC_TEST_FAST=1, set by `make test-fast`), drawing the same
examples whatever ran or was imported before (`tests/core/test_hypothesis_setup.py`)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis.internal.conjecture import providers
from hypothesis.internal.constants_ast import Constants

settings.register_profile(
    "ci", derandomize=True, max_examples=150, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("fast", max_examples=20, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
if os.environ.get("TJC_TEST_FAST"):
    settings.load_profile("fast")
else:
    settings.load_profile("ci" if os.environ.get("CI") else "dev")

# Hypothesis (the pinned 6.170) now and then draws a literal found in the project's loaded
# modules; which modules are loaded depends on the tests run before, so a derandomized test
# drew other examples in another selection or order. Without those literals it draws the same.
# No setting turns this off: the hook is replaced, and checked, so that a Hypothesis without
# it fails here rather than quietly bringing the order back.


def _no_local_constants() -> Constants:
    return Constants()


assert callable(getattr(providers, "_get_local_constants", None))
providers._get_local_constants = _no_local_constants
