"""`compiler.kube.objectmeta` with its memoised checks and fast paths gives what it gave before
(`tests.reference_checks`): the same problems for any string, and the same diagnostics in
the same order for generated metadata of each kind, asked twice (the second time from the
memo)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from compiler.kube import objectmeta as om
from tests import reference_checks as ref

# The characters the rules care about, a non-ASCII letter, a lone surrogate (counted as 3 bytes)
text = st.one_of(
    st.text("abz09-._/AZ", max_size=12),
    st.text("a-.Z/ā\ud800", max_size=8),
    st.builds(lambda c, n: c * n, st.sampled_from("aA-é"), st.integers(60, 70)),
    st.builds(lambda c, n: c * n, st.sampled_from("a."), st.integers(250, 256)),
    st.builds(lambda a, b: f"{a}/{b}", st.text("ab.-", max_size=5), st.text("bB_-", max_size=5)),
)
scalar = st.one_of(text, st.none(), st.integers(-1, 1), st.booleans())
metadata = st.fixed_dictionaries({}, optional={
    "name": scalar, "generateName": scalar, "namespace": scalar,
    "labels": st.one_of(st.dictionaries(text, scalar, max_size=4), scalar),
    "annotations": st.one_of(st.dictionaries(text, st.one_of(text, st.none()), max_size=3),
                             st.just({"big": "x" * (256 * 1024)}), scalar),
    "finalizers": st.one_of(st.lists(scalar, max_size=3), scalar),
})


@given(text)
def test_checks_of_any_string(value: str) -> None:
    for name in ("is_dns1123_subdomain", "is_dns1123_label", "is_qualified_name",
                 "is_valid_label_value"):
        fast, old = getattr(om, name), getattr(ref, name)
        assert fast(value) == old(value) == fast(value), name
        fast(value).append("x")  # each call gets its own list
        assert fast(value) == old(value)


@given(st.sampled_from(["TrainJob", "TrainingRuntime", "ClusterTrainingRuntime", "JobSet"]),
       st.one_of(metadata, scalar))
def test_validate_of_generated_metadata(kind: str, meta: Any) -> None:
    doc = {"kind": kind, "metadata": meta}
    expected = ref.meta_validate(kind, doc)
    assert om.validate(kind, doc) == expected
    assert om.validate(kind, doc) == expected
