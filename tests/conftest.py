"""Shared test setup: hypothesis runs derandomized in CI (CI=true) and on demand, and with
fewer examples in the fast tier (TJC_TEST_FAST=1, set by `make test-fast`)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

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
