"""The controller's policy settings while it runs (`compiler.controller.livepolicy`): the
--policy-values file read again when it changes (edited in place, or a mounted ConfigMap's
`..data` symlink swapped), exemptions expiring on the day of each decision, and a new version
that does not load keeping the last good settings (a log line and an event), never none."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from compiler.cli import controller_cmd
from compiler.cli.main import build_parser
from compiler.common.jsondata import Obj
from compiler.controller import status as st
from compiler.controller.kube import JOBSET, TRAINJOB
from compiler.controller.livepolicy import LivePolicies
from compiler.controller.reconcile import Reconciler
from compiler.core.context import SSHKeyPair
from tests.controller.test_controller_units import (
    NOW,
    FakeKube,
    FakeStore,
    _trainjob,
    _with_runtime,
)

DAY = 86400.0
PRIVILEGED = [{"manager": "tenant.example.com/debug", "trainingRuntimeSpec": {"template": {
    "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {"spec": {
        "containers": [{"name": "node", "securityContext": {"privileged": True}}]}}}}}]}}}}]
EXEMPT = """\
exemptions:
  - rules: [security.privileged]
    namespaces: [ns]
    reason: NCCL debugging
"""


def _live(values: Path) -> LivePolicies:
    """The controller's policy settings, built as `tjc controller --policy-values` builds
    them."""
    args = build_parser("controller").parse_args(
        ["controller", "--policy-values", str(values)])
    live = controller_cmd.live_policies(args)
    assert live is not None
    return live


class Cluster:
    """A reconciler over an in-memory API, with a clock the test moves."""

    def __init__(self, policies: LivePolicies) -> None:
        self.kube = FakeKube()
        _with_runtime(self.kube)
        self.now = NOW
        self.reconciler = Reconciler(
            self.kube, FakeStore(self.kube, TRAINJOB), FakeStore(self.kube, JOBSET),  # type: ignore[arg-type]
            lambda ns, name: SSHKeyPair(b"PRIVATE", b"PUBLIC"), lambda *_: None,
            clock=lambda: self.now, policies=policies)

    def create(self, name: str, labels: dict[str, str] | None = None,
               **spec: Any) -> str | None:
        """Create and reconcile a TrainJob: None when its JobSet was built, else the message
        of its Failed condition."""
        trainjob = _trainjob(**{"trainer": {"numNodes": 1}, **spec})
        trainjob["metadata"].update(name=name, uid=f"uid-{name}", labels=labels or {})
        self.kube.put(TRAINJOB, trainjob)
        self.reconciler.reconcile(("ns", name))
        found = self.kube.get(TRAINJOB, "ns", name) or {}
        failed = st.condition(found.get("status") or {}, "Failed")
        if failed is not None:
            return str(failed["message"])
        assert self.kube.get(JOBSET, "ns", name) is not None
        return None


def _configmap_volume(folder: Path, version: str, text: str) -> Path:
    """A folder laid out as the kubelet lays out a ConfigMap volume, its `..data` pointing
    at a new version holding `values.yaml` with `text`; the path the controller reads."""
    (folder / version).mkdir(parents=True)
    (folder / version / "values.yaml").write_text(text)
    (folder / "..data_tmp").symlink_to(version)
    os.replace(folder / "..data_tmp", folder / "..data")  # the atomic swap the kubelet does
    link = folder / "values.yaml"
    if not link.is_symlink():
        link.symlink_to("..data/values.yaml")
    return link


def test_an_exemption_removed_from_a_mounted_configmap_stops_exempting(tmp_path: Path) -> None:
    values = _configmap_volume(tmp_path, "..v1", EXEMPT)
    cluster = Cluster(_live(values))
    assert cluster.create("before", runtimePatches=PRIVILEGED) is None  # exempted
    _configmap_volume(tmp_path, "..v2", "exemptions: []\n")
    refused = cluster.create("after", runtimePatches=PRIVILEGED)
    assert refused is not None and "[security.privileged]" in refused


def test_an_exemption_edited_in_place_stops_exempting(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(EXEMPT)
    cluster = Cluster(_live(values))
    assert cluster.create("before", runtimePatches=PRIVILEGED) is None
    values.write_text(EXEMPT.replace("[ns]", "[other]"))
    refused = cluster.create("after", runtimePatches=PRIVILEGED)
    assert refused is not None and "[security.privileged]" in refused


@pytest.mark.parametrize("days", [1, 30, 365])
def test_an_exemption_expires_while_the_controller_runs(tmp_path: Path, days: int) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(EXEMPT + "    expires: 2027-01-15\n")  # the day of NOW
    cluster = Cluster(_live(values))
    assert cluster.create("on-the-day", runtimePatches=PRIVILEGED) is None
    cluster.now = NOW + days * DAY
    refused = cluster.create("later", runtimePatches=PRIVILEGED)
    assert refused is not None and "[security.privileged]" in refused
    assert "exemption #1 expired on 2027-01-15" in refused


BROKEN: dict[str, Callable[[Path], object]] = {
    "a syntax error": lambda p: p.write_text("resources: {maxNumNodes: 8\n"),
    "a type error": lambda p: p.write_text("resources: {maxNumNodes: eight}\n"),
    "bad exemptions": lambda p: p.write_text("resources: {maxNumNodes: 8}\nexemptions: 5\n"),
    "not a mapping": lambda p: p.write_text("- resources\n"),
    "deleted": lambda p: p.unlink(),
    "a folder": lambda p: _folder_in_place(p),
}


def _folder_in_place(path: Path) -> None:
    path.unlink()
    path.mkdir()


@pytest.mark.parametrize("breakage", list(BROKEN), ids=lambda b: b.replace(" ", "-"))
def test_a_new_version_that_does_not_load_keeps_the_last_good_settings(
        tmp_path: Path, breakage: str, caplog: pytest.LogCaptureFixture) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("resources: {maxNumNodes: 2}\n")
    live = _live(values)
    reported: list[str] = []
    live.report = reported.append
    cluster = Cluster(live)
    too_many: dict[str, Any] = {"trainer": {"numNodes": 4}}
    assert "[resources.max-nodes]" in (cluster.create("first", **too_many) or "")
    BROKEN[breakage](values)
    with caplog.at_level(logging.ERROR, "tjc.controller"):
        # stricter than no values at all (which would build it): the last good ones hold
        assert "[resources.max-nodes]" in (cluster.create("second", **too_many) or "")
        assert "[resources.max-nodes]" in (cluster.create("third", **too_many) or "")
    assert len(reported) == 1 and reported[0].startswith(
        f"policy settings not reloaded ({values}), the last good ones stay in use: ")
    assert "\n" not in reported[0]
    assert [r.getMessage() for r in caplog.records] == reported  # logged once, as reported
    assert live.problem == reported[0]
    if values.is_dir():
        values.rmdir()
    values.write_text("resources: {maxNumNodes: 8}\n")  # repaired: read again
    assert cluster.create("fourth", **too_many) is None
    assert live.problem is None and live.generation == 1


RULE = """\
package extra

input: _

rules: "extra.team": {{
\tseverity:  "deny"
\tappliesTo: ["TrainJob"]
\tmessage:   "this team may not train"
\tviolations: [if input.object.metadata.labels.team == "{team}" {{path: ["metadata"]}}]
}}
"""


def test_a_policy_folder_is_watched_too(tmp_path: Path) -> None:
    folder = tmp_path / "policies"
    folder.mkdir()
    (folder / "extra.cue").write_text(RULE.format(team="red"))
    args = build_parser("controller").parse_args(
        ["controller", "--no-default-policies", "--policy", str(folder)])
    live = controller_cmd.live_policies(args)
    assert live is not None
    cluster = Cluster(live)
    assert "[extra.team]" in (cluster.create("a", labels={"team": "red"}) or "")
    assert cluster.create("b", labels={"team": "blue"}) is None
    (folder / "extra.cue").write_text(RULE.format(team="blue"))
    assert "[extra.team]" in (cluster.create("c", labels={"team": "blue"}) or "")
    assert cluster.create("d", labels={"team": "red"}) is None
    (folder / "extra.cue").write_text("package extra\n\nrules: {\n")  # broken: kept
    assert "[extra.team]" in (cluster.create("e", labels={"team": "blue"}) or "")
    assert live.problem is not None and "extra.cue" in live.problem


def test_a_settings_problem_is_a_warning_event_on_the_controllers_pod(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from compiler.controller.manager import EVENTS, Controller, Options

    values = tmp_path / "values.yaml"
    values.write_text(EXEMPT)
    live = _live(values)
    created: list[tuple[str, str | None, Obj]] = []

    class Kube(FakeKube):
        def create(self, res: Any, namespace: str | None, obj: Obj) -> Obj:
            created.append((res.plural, namespace, obj))
            return obj

    monkeypatch.setenv("POD_NAME", "tjc-controller-7d9f")
    monkeypatch.setenv("POD_NAMESPACE", "tjc-system")
    Controller(Kube(), Options(metrics_port=-1, policies=live))  # type: ignore[arg-type]
    values.write_text("exemptions: [\n")
    live.current()
    live.current()
    assert [(plural, ns) for plural, ns, _ in created] == [(EVENTS.plural, "tjc-system")]
    event = created[0][2]
    assert (event["type"], event["reason"], event["regarding"]) == (
        "Warning", "PolicySettingsNotReloaded",
        {"apiVersion": "v1", "kind": "Pod", "name": "tjc-controller-7d9f",
         "namespace": "tjc-system"})
    assert "values.yaml" in event["note"]
