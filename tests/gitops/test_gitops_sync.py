"""A changed TrainJob through GitOps: what an existing JobSet refuses to take in place
(JobSet v0.12.0's webhook and CRD rules), `tjc render --name-hash` (a new JobSet instead), and
the marks `tjc diff` puts next to a refused change. The cluster side is tests/e2e/fullpath/
test_gitops_update.py."""

from __future__ import annotations

import copy
import difflib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.gitops import updates
from compiler.kube.jobset_update import Refusal, refusals
from tests.gitops.test_gitops import annotated, resource_list, run, stream, trainjob, write_jobs

NO_POLICIES = "--no-default-policies"
HASHED = re.compile(r"^mnist-[bcdfghkmt2-9]{8}$")
IMAGE = "pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime"
POD = ("spec", "replicatedJobs", "node", "template", "spec", "template")


def jobset(**spec: Any) -> dict[str, Any]:
    """A rendered JobSet as tjc writes it: no completionMode, no restartPolicy (JobSet's
    defaulting webhook sets them at creation)."""
    pod = {"containers": [{"name": "node", "image": IMAGE}]}
    rjob = {"name": "node", "replicas": 1, "groupName": "default",
            "template": {"spec": {"parallelism": 2, "completions": 2,
                                  "template": {"metadata": {}, "spec": pod}}}}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "mnist", "namespace": "ml"},
            "spec": {"replicatedJobs": [rjob], "suspend": False, **spec}}


def edited(js: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    """A copy of `js` with `value` at `path` (replicated jobs by index)."""
    out = copy.deepcopy(js)
    target: Any = out
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
    target[path[-1]] = value
    return out


RJOB0 = ("spec", "replicatedJobs", 0, "template", "spec")
LABELS = (*RJOB0, "template", "metadata", "labels")


# --- what the JobSet webhook refuses -------------------------------------------------------

@pytest.mark.parametrize(("old", "new"), [
    (jobset(), jobset(suspend=True)),  # suspend and resume: in place
    (jobset(), edited(jobset(), ("metadata", "labels"), {"team": "a"})),
    (jobset(), jobset(ttlSecondsAfterFinished=60)),
    (jobset(), jobset(failurePolicy={"maxRestarts": 2})),  # a rule checks old and new only
    # suspended, with the webhook's defaults in the rendered template: even client-side
    (edited(edited(jobset(suspend=True), (*RJOB0, "completionMode"), "Indexed"),
            (*RJOB0, "template", "spec", "restartPolicy"), "OnFailure"),
     edited(edited(edited(jobset(suspend=True), (*RJOB0, "completionMode"), "Indexed"),
                   (*RJOB0, "template", "spec", "restartPolicy"), "OnFailure"),
            LABELS, {"queue": "a"})),
])
def test_changes_an_existing_jobset_takes_in_place(old: dict[str, Any],
                                                   new: dict[str, Any]) -> None:
    assert refusals(old, new) == []


def test_a_new_image_or_node_count_is_refused() -> None:
    image = (*RJOB0, "template", "spec", "containers", 0, "image")
    assert refusals(jobset(), edited(jobset(), image, "other:1")) == [
        Refusal("spec.replicatedJobs", (*POD, "spec", "containers", 0, "image"), False)]
    found = refusals(jobset(), edited(edited(jobset(), (*RJOB0, "parallelism"), 3),
                                      (*RJOB0, "completions"), 3))
    assert {(r.path[-1], r.client_side) for r in found} == {("parallelism", False),
                                                           ("completions", False)}


def test_pod_template_labels_change_only_while_suspended_and_server_side() -> None:
    running = refusals(jobset(), edited(jobset(), LABELS, {"queue": "a"}))
    assert running == [Refusal("spec.replicatedJobs", (*POD, "metadata", "labels"), False,
                               while_suspended=True)]
    # suspended: the webhook allows it, but a client-side apply sends the list without the
    # completionMode and restartPolicy it defaulted at creation (server-side apply keeps them)
    suspended = refusals(jobset(suspend=True), edited(jobset(suspend=True), LABELS, {"q": "a"}))
    assert suspended == [Refusal("spec.replicatedJobs", ("spec", "replicatedJobs", "node"),
                                 True)]


def test_replicated_jobs_added_and_immutable_policies_are_refused() -> None:
    two = copy.deepcopy(jobset())
    two["spec"]["replicatedJobs"].append({**two["spec"]["replicatedJobs"][0], "name": "x"})
    assert [r.path for r in refusals(jobset(), two)] == [("spec", "replicatedJobs")]
    assert [r.field for r in refusals(jobset(successPolicy={"operator": "All"}),
                                      jobset(successPolicy={"operator": "Any"}))] == \
        ["spec.successPolicy"]
    # the live JobSet has the defaulted network, so a subdomain set now changes it
    assert [r.field for r in refusals(jobset(), jobset(network={"subdomain": "s"}))] == \
        ["spec.network"]
    assert [r.field for r in refusals(jobset(), jobset(managedBy="kueue.x-k8s.io/x"))] == \
        ["spec.managedBy"]


# --- tjc render --name-hash ----------------------------------------------------------------

def render(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
           *docs: dict[str, Any], args: tuple[str, ...] = ("--name-hash",)
           ) -> list[dict[str, Any]]:
    code, out, err = run(["render", NO_POLICIES, *args, "-"], capsys, monkeypatch,
                         stream(*docs))
    assert code == 0, err
    return [d for d in yaml.safe_load_all(out) if d]


def with_image(job: dict[str, Any], image: str) -> dict[str, Any]:
    out = copy.deepcopy(job)
    out["spec"]["trainer"]["image"] = image
    return out


def test_name_hash_renders_what_upstream_creates_for_the_hashed_name(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    [js] = render(capsys, monkeypatch, trainjob())
    name = js["metadata"]["name"]
    assert HASHED.match(name), name
    renamed = trainjob(name)
    [plain] = render(capsys, monkeypatch, renamed, args=())
    assert js == plain  # every embedded name (the hostnames in env) follows the new name
    assert f"{name}-node-0-0.{name}" in yaml.safe_dump(js)
    assert render(capsys, monkeypatch, trainjob()) == [js]  # same input, same name


def test_name_hash_changes_with_what_an_update_cannot_change_only(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    base = trainjob()
    suspended = copy.deepcopy(base)
    suspended["spec"]["suspend"] = True
    names = {key: render(capsys, monkeypatch, job)[0]["metadata"]["name"] for key, job in (
        ("base", base), ("suspended", suspended), ("image", with_image(base, "other:2")),
        ("nodes", trainjob(nodes=3)))}
    assert names["base"] == names["suspended"]  # suspend and resume: the same JobSet
    assert len({names["base"], names["image"], names["nodes"]}) == 3


def test_name_hash_renames_the_side_objects_too(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    docs = render(capsys, monkeypatch, trainjob(runtime="deepspeed-distributed"))
    names = {d["kind"]: d["metadata"]["name"] for d in docs}
    base = names["JobSet"]
    assert HASHED.match(base) and names["ConfigMap"] == f"{base}-mpi-hostfile"
    assert f"name: {base}-mpi-hostfile" in yaml.safe_dump(docs[1])  # the volume names it


def test_name_hash_keeps_the_output_file_of_the_trainjob(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    jobs = write_jobs(tmp_path / "jobs", trainjob())
    out = tmp_path / "out"
    code, _, err = run(["render", NO_POLICIES, "--name-hash", str(jobs), "--output-dir",
                        str(out)], capsys, monkeypatch)
    assert code == 0, err
    text = (out / "ml" / "mnist.yaml").read_text()
    assert HASHED.match(yaml.safe_load(text.split("---", 1)[1])["metadata"]["name"])


def test_name_hash_too_long_a_name_is_an_error_that_says_why(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    name = "a" * 45  # fits without the suffix, not with it
    assert run(["render", NO_POLICIES, "-"], capsys, monkeypatch, stream(trainjob(name)))[0] == 0
    code, out, err = run(["render", NO_POLICIES, "--name-hash", "-"], capsys, monkeypatch,
                         stream(trainjob(name)))
    assert code == 1 and out == ""
    assert f"TrainJob ml/{name}: metadata.name: JobSet name is too long" in err
    assert f"(--name-hash renders the TrainJob as {name}-" in err


def test_name_hash_in_passthrough_and_krm(capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    docs = render(capsys, monkeypatch, trainjob(), args=("--passthrough", "--name-hash"))
    assert HASHED.match(docs[0]["metadata"]["name"])
    config = {"kind": "X", "spec": {"nameHash": True, "defaultPolicies": False}}
    code, out, err = run(["krm"], capsys, monkeypatch,
                         resource_list([annotated(trainjob(), "job.yaml", 0)], config))
    assert code == 0, err
    assert yaml.safe_load(out)["items"][0]["metadata"]["name"] == docs[0]["metadata"]["name"]


# --- tjc diff marks ------------------------------------------------------------------------

def diff(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
         old: dict[str, Any], new: dict[str, Any], *args: str) -> str:
    a = write_jobs(tmp_path / "a", old)
    b = write_jobs(tmp_path / "b", new)
    code, out, err = run(["diff", *args, str(a), str(b)], capsys, monkeypatch)
    assert code == 1, err
    return out


def test_diff_marks_a_refused_change_next_to_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = diff(tmp_path, capsys, monkeypatch, trainjob(), with_image(trainjob(), "other:2"))
    lines = out.splitlines()
    at = lines.index("+              image: other:2")
    assert lines[at + 1] == (
        "! JobSet webhook refuses this change to the existing JobSet ml/mnist "
        "(spec.replicatedJobs is immutable); it syncs with tjc render --name-hash "
        "(README: Changing a TrainJob)")
    assert lines[-1].endswith("; 1 with a change the existing JobSet refuses (marked !)")


def test_diff_marks_each_block_and_says_it_once_in_full(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = diff(tmp_path, capsys, monkeypatch, trainjob(), trainjob(nodes=3), "-f", "markdown")
    marks = [line for line in out.splitlines() if line.startswith("!")]
    assert len(marks) == 2  # parallelism/completions, then PET_NNODES
    assert "it syncs with tjc render --name-hash" in marks[0]
    assert marks[1] == "! JobSet webhook refuses this change too (spec.replicatedJobs is " \
        "immutable)"
    assert "The JobSet in the cluster refuses 2 of these changes" in out


def test_diff_does_not_mark_what_syncs_in_place(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    suspended = trainjob()
    suspended["spec"]["suspend"] = True
    for args in ((), ("--name-hash",)):  # a suspend keeps the hashed name too
        out = diff(tmp_path / str(len(args)), capsys, monkeypatch, trainjob(), suspended, *args)
        lines = out.splitlines()
        assert "+  suspend: true" in lines
        assert not any(line.startswith(("!", "-  name:", "+  name:")) for line in lines)
        assert out.endswith("TrainJob(s)\n")  # no refusal counted in the summary


def test_diff_with_name_hash_says_a_new_jobset_replaces_the_old(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    out = diff(tmp_path, capsys, monkeypatch, trainjob(), with_image(trainjob(), "other:2"),
               "--name-hash")
    marks = [line for line in out.splitlines() if line.startswith("!")]
    assert len(marks) == 1 and marks[0].startswith("! a new JobSet ml/mnist-")
    assert "refuses" not in out


def test_diff_mark_for_a_change_only_a_server_side_apply_syncs() -> None:
    old = yaml.safe_dump(jobset(suspend=True))
    new = yaml.safe_dump(edited(jobset(suspend=True), LABELS, {"queue": "a"}))
    lines, refused = updates.mark(old, new, difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), "a", "b"))
    assert refused == 1
    marks = [line for line in lines if line.startswith("!")]
    assert len(marks) == 1 and "through a client-side apply" in marks[0]
    assert "a server-side apply syncs it while the JobSet is suspended" in marks[0]
    assert lines[lines.index(marks[0]) - 1].startswith("+")
