"""Golden cases: every file in golden/ renders to exactly its `want/` sections.

Set TJC_UPDATE_GOLDEN=1 (`make golden`) to rewrite the `want/` sections from the code; review
the diff against the upstream reference before committing it. Each case also checks that
rendering twice gives the same bytes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests import goldenfile

UPDATE = os.environ.get("TJC_UPDATE_GOLDEN") == "1"


@pytest.mark.parametrize("path", goldenfile.cases(), ids=lambda p: p.stem)
def test_golden(path: Path) -> None:
    case = goldenfile.parse(path)
    assert case.header.startswith("#"), "a golden case starts with a line on why it exists"
    actual = goldenfile.run(case)
    assert goldenfile.run(case) == actual, "rendering is not deterministic"
    if UPDATE:
        path.write_text(goldenfile.format_case(case, actual), encoding="utf-8")
        return
    for name, text in actual.items():
        assert name in case.wants, f"{path.name}: missing section -- {name} --"
        assert text == case.wants[name], f"{path.name}: {name} differs (make golden to update)"


def test_enough_cases() -> None:
    assert len(goldenfile.cases()) >= 25
