"""On a benchmark corpus, validated as `tjc validate` does it, the fast pod-resource, ObjectMeta
and quirk checks give what the implementations they replaced gave
(`tests.reference_checks`), for every document they were handed, in the same order; a few
TrainJobs are given a bad label and a negative amount, so each check reports something."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.corpus import write_tree
from compiler.cli.main import main
from compiler.kube import objectmeta, podresources
from compiler.pipeline import quirks
from tests.reference_checks import meta_validate, pod_validate, quirks_check


def _spoil(path: Path) -> None:
    """A bad label and a negative amount in a TrainJob file."""
    job = yaml.safe_load(path.read_text())
    job["metadata"].setdefault("labels", {})["Bad Key"] = "-x-"
    trainer = job["spec"].setdefault("trainer", {})
    trainer.setdefault("resourcesPerNode", {}).setdefault("limits", {})["cpu"] = "-1"
    path.write_text(yaml.safe_dump(job))


def test_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                capsys: pytest.CaptureFixture[str]) -> None:
    files = write_tree(tmp_path, 300, seed=7)
    for path in [f for f in files if "/jobs/" in f.as_posix()][::50]:
        _spoil(path)
    seen: dict[str, list[Any]] = {"pod": [], "meta": [], "quirks": []}
    fast: list[bool] = []
    pod, meta, check = podresources.validate, objectmeta.validate, quirks.check

    def pod_spy(data: Any) -> Any:
        found = pod(data)
        fast.append(podresources._clean(data))
        seen["pod"].append((found, pod_validate(data)))
        return found

    def meta_spy(kind: str, data: Any) -> Any:
        found = meta(kind, data)
        seen["meta"].append((found, meta_validate(kind, data)))
        return found

    def quirks_spy(trainjob: Any, runtime: Any) -> Any:
        found = check(trainjob, runtime)
        seen["quirks"].append((found, quirks_check(trainjob, runtime)))
        return found

    monkeypatch.setattr(podresources, "validate", pod_spy)
    monkeypatch.setattr(objectmeta, "validate", meta_spy)
    monkeypatch.setattr(quirks, "check", quirks_spy)
    assert main(["validate", "-q", "--no-default-policies", "-j", "1", str(tmp_path)]) == 1
    capsys.readouterr()
    for name, pairs in seen.items():
        assert len(pairs) >= 290, name
        assert [new for new, _ in pairs] == [old for _, old in pairs], name
    assert {name: sum(bool(new) for new, _ in pairs) >= 5 for name, pairs in seen.items()} == \
        {"pod": True, "meta": True, "quirks": True}
    assert sum(fast) >= 0.9 * len(fast)  # most documents need no full walk
