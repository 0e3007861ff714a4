"""The suite's Hypothesis setup (`tests/conftest.py`): a derandomized test (the parity tests,
the one-verdict test, CI's profile) draws the same examples whatever was imported before it.

Hypothesis mixes literals it finds in the project's loaded modules into what it draws; which
modules are loaded depends on the tests run before (and on what they import: a temporary
package, a plugin module), so the same derandomized test drew other examples after
`tests/test_policies.py` than alone. The setup turns that off."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import parity_strategies as ps

FIXED = settings(max_examples=200, derandomize=True, database=None, deadline=None,
                 suppress_health_check=list(HealthCheck))
LITERALS = "\n".join(f"V{i} = ({1000 + 37 * i}, 'lit{i}x', {i + 0.5})" for i in range(60))


def _examples(strategy: st.SearchStrategy[Any]) -> list[Any]:
    seen: list[Any] = []

    @FIXED
    @given(strategy)
    def draw(value: Any) -> None:
        seen.append(value)

    draw()
    return seen


def test_derandomized_examples_do_not_depend_on_loaded_modules(tmp_path: Path) -> None:
    strategies = [st.text(), st.integers(), ps.parity_case()]
    before = [_examples(s) for s in strategies]
    (tmp_path / "more_literals.py").write_text(LITERALS + "\n")
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.import_module("more_literals")
        after = [_examples(s) for s in strategies]
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("more_literals", None)
    assert after == before
