"""The first pass over a stream reads no further than its last part that may hold a runtime
(or a Namespace with Pod Security labels), and finds what reading it whole finds: the same
runtimes, the same notes, located at the same lines, also when bad YAML ends the stream."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.io import inputs, kubectlstream, loader
from compiler.io.inputs import Namespaces, may_hold_runtime, runtime_table
from compiler.io.kubectlstream import Part, parts, through_last
from compiler.io.loader import Document, Source

API = "trainer.kubeflow.org/v1alpha1"


def _runtime(name: str) -> str:
    return (f"apiVersion: {API}\nkind: ClusterTrainingRuntime\nmetadata:\n  name: {name}\n"
            "spec:\n  mlPolicy: {numNodes: 1}\n")


def _job(name: str) -> str:
    return (f"apiVersion: {API}\nkind: TrainJob\nmetadata:\n  name: {name}\nspec:\n"
            "  runtimeRef:\n    name: torch-distributed\n    kind: ClusterTrainingRuntime\n")


NAMESPACE = ("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ml\n  labels:\n"
             "    pod-security.kubernetes.io/enforce: restricted\n")
BROKEN = "a: [1, 2\nb: c\n"  # bad YAML: it ends the stream
DUPLICATE = "a: 1\na: 2\n"  # a duplicate key: it ends the stream too

_PART = st.one_of(
    st.builds(_runtime, st.sampled_from(["r1", "r2", "torch-distributed"])),
    st.builds(_job, st.sampled_from(["j1", "j2"])),
    st.sampled_from([NAMESPACE, BROKEN, DUPLICATE, "# only a comment\n", "", "a: b\n"]))


def _stream(pieces: list[str], lead: bool) -> str:
    return ("---\n" if lead else "") + "---\n".join(pieces)


def _whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubectlstream, "through_last", lambda text, wanted: len(text))


def _summary(text: str, pod_security: bool) -> tuple[Any, ...]:
    source = Source("s.yaml", text)
    namespaces = Namespaces() if pod_security else None
    table, notes = runtime_table([source], [], namespaces=namespaces)
    return ([(k, e.doc.data, e.doc.index, e.doc.source is source, e.doc.locate(("spec",)))
             for k, e in table.items()], notes, namespaces)


@settings(max_examples=150, deadline=None)
@given(st.lists(_PART, max_size=8), st.booleans(), st.booleans())
def test_the_first_pass_finds_what_reading_the_whole_stream_finds(
        pieces: list[str], lead: bool, pod_security: bool) -> None:
    text = _stream(pieces, lead)
    reached = _summary(text, pod_security)
    with pytest.MonkeyPatch.context() as patch:
        _whole(patch)
        assert reached == _summary(text, pod_security)


@settings(max_examples=100, deadline=None)
@given(st.lists(_PART, max_size=8), st.booleans(), st.sampled_from(["TrainingRuntime",
                                                                    "pod-security", "kind"]))
def test_the_end_is_that_of_the_last_part_taken(pieces: list[str], lead: bool,
                                                mark: str) -> None:
    text = _stream(pieces, lead)
    taken = [p for p in parts(text) if isinstance(p, Part) and mark in p.text]
    end = 0 if not taken else taken[-1].offset + len(taken[-1].text.rstrip("\n")) + 1
    assert through_last(text, lambda part: mark in part) == min(end, len(text))


def test_a_stream_with_its_runtimes_first_is_read_only_that_far(
        monkeypatch: pytest.MonkeyPatch) -> None:
    head = _runtime("r1") + "---\n" + _runtime("r2")
    text = head + "".join("---\n" + _job(f"j{i}") for i in range(50))
    read: list[str] = []
    real = loader.iter_source

    def spy(source: Source) -> Iterator[Document | Any]:
        read.append(source.text)
        return real(source)
    monkeypatch.setattr(inputs, "iter_source", spy)
    table, _ = runtime_table([Source("s.yaml", text)], [])
    assert read == [head]
    assert [k.name for k in table] == ["r1", "r2"]
    assert [e.doc.locate(("spec", "mlPolicy")).line for e in table.values()] == [6, 13]


@pytest.mark.parametrize(("pieces", "names"), [
    ([_runtime("r1"), BROKEN, _job("j")], ["r1"]),
    ([_job("j"), BROKEN, _runtime("r1")], []),  # the bad YAML ends the stream before it
    ([_job("j"), DUPLICATE, _runtime("r1")], []),
    ([_runtime("r1"), _job("j"), _runtime("r1")], ["r1"]),  # defined twice: noted
])
def test_what_ends_the_stream_ends_it_for_the_first_pass_too(pieces: list[str],
                                                             names: list[str]) -> None:
    table, notes = runtime_table([Source("s.yaml", _stream(pieces, False))], [])
    assert [k.name for k in table] == names
    assert [n.rule for n in notes] == (["TJC-RUNTIME-DUPLICATE"] if len(pieces) == 3
                                       and pieces[0] == pieces[2] else [])


def test_namespaces_after_the_last_runtime_are_still_read() -> None:
    text = _stream([_runtime("r1"), _job("j"), NAMESPACE, _job("k")], False)
    namespaces = Namespaces()
    runtime_table([Source("s.yaml", text)], [], namespaces=namespaces)
    assert namespaces.labels == {"ml": {"pod-security.kubernetes.io/enforce": "restricted"}}
    assert may_hold_runtime(_job("j").encode()) is False
