"""Files are parsed for runtimes only when they can hold one, and never missed when they do;
the first pass scans bytes and still reports unreadable, too large and non-UTF-8 files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.corpus import _dump, corpus
from compiler.common.errors import InputError
from compiler.io import loader
from compiler.io.inputs import may_hold_runtime, runtime_table
from compiler.io.loader import SourceFiles, read_source

RUNTIME = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\nmetadata: {name: a}\n"


def test_a_trainjob_that_only_refers_to_a_runtime_is_not_parsed_twice() -> None:
    runtimes, jobs = corpus(50)
    plain = [j for j in jobs if "env" not in j["spec"]["trainer"]
             or all("valueFrom" not in e for e in j["spec"]["trainer"]["env"])]
    assert plain and not any(may_hold_runtime(_dump(j).encode()) for j in plain)
    assert all(may_hold_runtime(_dump(r).encode()) for r in runtimes)


@pytest.mark.parametrize("text", [
    RUNTIME,
    "---\n" + _dump({"kind": "TrainJob", "spec": {"runtimeRef": {
        "kind": "ClusterTrainingRuntime"}}}) + "---\n" + RUNTIME,
    "".join("  " + line + "\n" for line in RUNTIME.splitlines()),  # an indented document
    "{apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainingRuntime}\n",
    json.dumps({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime"},
               indent=2),
    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: trainer.kubeflow.org/v1alpha1\n"
    "  kind: TrainingRuntime\n",
    "kind: >-\n  ClusterTrainingRuntime\n",
])
def test_every_way_of_writing_a_runtime_is_parsed(text: str) -> None:
    assert may_hold_runtime(text.encode())


JOB = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: j}\n"
       "spec:\n  runtimeRef:\n    name: torch\n    kind: ClusterTrainingRuntime\n")


@pytest.mark.parametrize(("text", "parsed"), [
    (JOB, False),
    (JOB.replace("    kind:", "\t kind:"), False),  # indented with a tab
    (JOB.replace("kind: ClusterTrainingRuntime", "kind: 'ClusterTrainingRuntime'  "), False),
    (JOB.replace("kind: ClusterTrainingRuntime", 'kind:"TrainingRuntime"'), False),
    (JOB + "---\n" + JOB, False),
    ("kind: 'TrainingRuntime'\n", True),  # a quoted kind at the top level
    (JOB.replace("kind: TrainJob", "kind: 'TrainingRuntime'"), True),
    (JOB.replace("\n", "\r\n"), True),  # CRLF: the runtimeRef line is not recognised
    (JOB + "items: []\nkind2: List\n", True),  # a List may hold a runtime at any depth
    (JOB + "  apiVersion: v1\n", True),  # an indented apiVersion (indented document)
    (JOB + "  apiVersion :x\n", True),
    (JOB + "  xapiVersion: v1\n  apiVersions: [a]\n", False),
    (json.dumps({"kind": "TrainJob", "spec": {"runtimeRef": {"kind": "TrainingRuntime"}}},
                indent=2), True),  # JSON: not a block `kind:` line
    ("{kind: TrainJob, spec: {runtimeRef: {kind: ClusterTrainingRuntime}}}\n", True),
    ("kind: TrainJob\n", False),
    ("", False),
    ('kind: "Cluster\\u0054rainingRuntime"\n', True),  # an escape spells the kind
    (JOB.replace("name: torch", 'name: "a\\tb"'), True),
])
def test_the_scan_decision(text: str, parsed: bool) -> None:
    assert may_hold_runtime(text.encode()) is parsed
    assert _reference(text) is parsed


_OLD_KIND = re.compile(r"^[ \t]+kind:[ \t]*[\"']?(?:Cluster)?TrainingRuntime[\"']?[ \t]*$", re.M)
_OLD_API = re.compile(r"^[ \t]+apiVersion[ \t]*:", re.M)


def _reference(text: str) -> bool:
    """The decision as two regular expressions over the decoded text state it."""
    mentions = text.count("TrainingRuntime")
    if "\\" in text:
        return True
    return bool(mentions) and (len(_OLD_KIND.findall(text)) != mentions or "List" in text
                               or _OLD_API.search(text) is not None)


_PIECES = st.sampled_from(["TrainingRuntime", "Cluster", "kind", ":", " ", "\t", "\n", "\r",
                           "'", '"', "apiVersion", "List", "x", "ü", "-", "{", "}", "#",
                           "\\"])


@given(st.lists(_PIECES, max_size=40))
def test_the_byte_scan_decides_as_the_text_expressions_do(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert may_hold_runtime(text.encode()) is _reference(text)


def _files(tmp_path: Path, texts: dict[str, bytes]) -> SourceFiles:
    for name, data in texts.items():
        (tmp_path / name).write_bytes(data)
    return SourceFiles([str(tmp_path)])


def test_byte_order_mark_and_crlf_files_are_scanned_as_their_text(tmp_path: Path) -> None:
    bom = b"\xef\xbb\xbf"
    files = _files(tmp_path, {"a.yaml": bom + RUNTIME.encode(),
                              "b.yaml": bom + b"  kind: TrainingRuntime\n",
                              "c.yaml": JOB.replace("\n", "\r\n").encode(),
                              "d.yaml": bom + JOB.encode(), "e.yaml": JOB.encode()})
    picked = [s.name for s in files.where(may_hold_runtime)]
    assert [Path(n).name for n in picked] == ["a.yaml", "c.yaml"]
    assert [s.text for s in files.where(may_hold_runtime)] == [read_source(n).text
                                                                for n in picked]
    table, _ = runtime_table(files, [])
    assert [(k.kind, k.name) for k in table] == [("TrainingRuntime", "a")]


@pytest.mark.parametrize("data", [b"kind: TrainJob\nx: \xff\n", RUNTIME.encode() + b"\xc3"])
def test_a_file_that_is_not_utf8_is_reported_by_the_first_pass(tmp_path: Path,
                                                               data: bytes) -> None:
    files = _files(tmp_path, {"a.yaml": RUNTIME.encode(), "bad.yaml": data})
    with pytest.raises(InputError) as raised:
        runtime_table(files, [])
    with pytest.raises(InputError) as direct:
        read_source(str(tmp_path / "bad.yaml"))
    assert raised.value.diagnostic == direct.value.diagnostic
    assert direct.value.diagnostic.rule == "TJC-INPUT-ENCODING"


def test_too_large_and_unreadable_files_are_reported_by_the_first_pass(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader, "MAX_BYTES", 100)
    files = _files(tmp_path, {"big.yaml": b"# " + b"x" * 100 + b"\n"})
    with pytest.raises(InputError) as raised:
        runtime_table(files, [])
    assert raised.value.diagnostic.rule == "TJC-INPUT-TOO-LARGE"
    missing = SourceFiles([str(tmp_path / "gone.yaml")])
    with pytest.raises(InputError) as unreadable:
        runtime_table(missing, [])
    assert unreadable.value.diagnostic.rule == "TJC-INPUT-UNREADABLE"
    assert "cannot read" in unreadable.value.diagnostic.message


def test_a_runtime_whose_kind_is_spelt_with_an_escape_is_found(tmp_path: Path) -> None:
    """sigs.k8s.io/yaml decodes a double-quoted escape: the file holds a runtime."""
    escaped = RUNTIME.replace("kind: TrainingRuntime", 'kind: "Training\\u0052untime"')
    files = _files(tmp_path, {"a.yaml": escaped.encode()})
    table, _ = runtime_table(files, [])
    assert [(k.kind, k.name) for k in table] == [("TrainingRuntime", "a")]
