"""CUE policies: the built-in packs, user packs, exemptions, locations and the engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from compiler.cli.main import main
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import read_sources
from compiler.pipeline.session import JobResult
from compiler.policy import cuelib
from compiler.policy.packs import Loader, pack_files
from compiler.policy.prune import prune
from compiler.policy.views import policy_input
from compiler.render.pipeline import render_stream

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "policies" / "testdata"

TEAM_POLICY = """\
package team

input: _

rules: "team.label": {
\tseverity:  "deny"
\tappliesTo: ["TrainJob"]
\tmessage:   "every TrainJob needs a team label"
\tviolations: [if input.object.metadata.labels.team == _|_ {path: ["metadata", "labels"]}]
}
"""

TRAINJOB = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: job
  namespace: team-a
{annotations}spec:
  runtimeRef:
    name: torch-distributed
  trainer:
    numNodes: 2
    image: ghcr.io/acme/trainer:latest
"""


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_builtin_packs_pass_their_own_cases(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["policies", "test"], capsys)
    assert code == 0, out
    assert "77/77 cases passed" in out


def test_every_builtin_rule_is_listed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["policies", "list", "-o", "json"], capsys)
    rules = {r["id"]: r for r in json.loads(out)}
    assert code == 0
    assert rules["security.privileged"]["severity"] == "deny"
    assert rules["security.run-as-non-root"]["severity"] == "warn"
    assert rules["images.tag"]["severity"] == "warn"
    assert {r["pack"] for r in rules.values()} == {"security", "resources", "scheduling",
                                                   "images", "pss"}


def test_show_prints_the_rule_source(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["policies", "show", "security.privileged"], capsys)
    assert code == 0
    assert 'rules: "security.privileged"' in out and "[deny]" in out


def test_builtin_runtimes_and_examples_have_no_policy_errors(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["validate", "runtimes", "examples"], capsys)
    assert code == 0, out
    assert "[security.run-as-non-root]" in out  # warnings are allowed, and reported


def test_a_case_fails_when_its_rule_does_not_fire(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "team.cue").write_text(TEAM_POLICY)
    (tmp_path / "testdata").mkdir()
    labelled = TRAINJOB.format(annotations="  labels: {team: a}\n")
    (tmp_path / "testdata" / "wrong.yaml").write_text(
        "# rule: team.label\n# expect: fail\n" + labelled)
    code, out, _ = run(["policies", "test", str(tmp_path)], capsys)
    assert code == 1
    assert "FAIL wrong.yaml" in out and "team.label: no `expect: pass` case" in out


def test_user_policy_is_located_at_the_trainjob(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "team.cue").write_text(TEAM_POLICY)
    job = tmp_path / "job.yaml"
    job.write_text(TRAINJOB.format(annotations=""))
    code, out, _ = run(["validate", str(job), "--policy", str(tmp_path)], capsys)
    assert code == 1
    assert f"{job}:4:3: error: TrainJob team-a/job: metadata.labels: every TrainJob needs a " \
           "team label [team.label]" in out
    code, out, _ = run(["validate", str(job), "--policy", str(tmp_path), "--skip",
                        "team.label"], capsys)
    assert code == 0 and "team.label" not in out


def test_jobset_violation_points_at_the_trainjob_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(TRAINJOB.format(annotations=""))
    code, out, _ = run(["validate", str(job)], capsys)
    assert code == 0
    # (the JobSet's image came from the TrainJob's: the finding names the field the user wrote)
    assert f"{job}:11:12: warning: TrainJob team-a/job: spec.trainer.image: image " \
           "ghcr.io/acme/trainer:latest is tagged latest" in out


SKIP_IMAGES = "  annotations:\n    trainjob-compiler/skip-policies: images, resources\n"


def _write(tmp_path: Path, values: str, annotations: str = "",
           namespace: str = "team-a") -> tuple[Path, Path]:
    (tmp_path / "values.yaml").write_text(values)
    job = tmp_path / "job.yaml"
    job.write_text(TRAINJOB.format(annotations=annotations).replace(
        "namespace: team-a", f"namespace: {namespace}"))
    return job, tmp_path / "values.yaml"


def test_annotation_exempts_only_from_warn_rules(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    job, values = _write(tmp_path, "resources: {maxNumNodes: 1}\n", SKIP_IMAGES)
    code, out, _ = run(["validate", str(job), "--policy-values", str(values)], capsys)
    assert code == 1  # the deny rule resources.max-nodes is not the author's to exempt
    assert f"{job}:13:12: notice: TrainJob team-a/job: spec.trainer.image: image " \
           "ghcr.io/acme/trainer:latest is tagged latest: pin a version tag or a digest " \
           "[images.tag] (exempted by annotation trainjob-compiler/skip-policies of the " \
           "object)" in out
    assert f"{job}:12:15: error: TrainJob team-a/job: spec.trainer.numNodes: " \
           "2 trainer nodes, more than the allowed 1 (the annotation " \
           "trainjob-compiler/skip-policies cannot exempt this deny rule; the policy " \
           "settings own its exemptions) [resources.max-nodes]" in out


def test_settings_can_make_a_deny_rule_annotation_exemptible(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job, values = _write(tmp_path, "resources: {maxNumNodes: 1}\n"
                         "annotationExemptible: [resources.max-nodes]\n", SKIP_IMAGES)
    code, out, _ = run(["validate", str(job), "--policy-values", str(values), "-q"], capsys)
    assert code == 0, out
    assert "notice: TrainJob team-a/job: spec.trainer.numNodes: " \
           "2 trainer nodes, more than the allowed 1 [resources.max-nodes] (exempted by " \
           "annotation trainjob-compiler/skip-policies of the object)" in out


EXEMPT = """\
resources: {maxNumNodes: 1}
exemptions:
  - rules: [resources.max-nodes]
    namespaces: [team-a]
    expires: EXPIRES
    reason: the team's benchmark quota
"""


def test_settings_exemption_is_scoped_reported_and_expires(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job, values = _write(tmp_path, EXEMPT.replace("EXPIRES", "2999-01-01"))
    code, out, _ = run(["validate", str(job), "--policy-values", str(values), "-q"], capsys)
    assert code == 0, out
    assert "[resources.max-nodes] (exempted by exemption #1 of the policy settings: the " \
           "team's benchmark quota)" in out
    code, out, _ = run(["validate", str(job), "--policy-values", str(values), "--format",
                        "json"], capsys)
    found = [d for d in json.loads(out)["diagnostics"] if d["rule"] == "resources.max-nodes"]
    assert found[0]["severity"] == "notice" and found[0]["suppression"] == {
        "kind": "external", "severity": "error",
        "justification": "exemption #1 of the policy settings: the team's benchmark quota"}
    code, out, _ = run(["validate", str(job), "--policy-values", str(values), "--format",
                        "sarif"], capsys)
    result = next(r for r in json.loads(out)["runs"][0]["results"]
                  if r["ruleId"] == "resources.max-nodes")
    assert result["level"] == "error" and result["suppressions"][0]["kind"] == "external"
    other, _ = _write(tmp_path, EXEMPT.replace("EXPIRES", "2999-01-01"), namespace="team-b")
    code, out, _ = run(["validate", str(other), "--policy-values", str(values)], capsys)
    assert code == 1 and "error: TrainJob team-b/job" in out
    job, values = _write(tmp_path, EXEMPT.replace("EXPIRES", "2020-01-01"))
    code, out, _ = run(["validate", str(job), "--policy-values", str(values)], capsys)
    assert code == 1 and "(exemption #1 expired on 2020-01-01) [resources.max-nodes]" in out


@pytest.mark.parametrize("entry", [
    "[{rules: [security.privileged]}]",
    "[{rules: [], namespaces: [a]}]",
    "[{rules: [security], namespaces: [a], expires: soon}]",
    "[{rules: [security], selector: {team: a}}]",
    "{rules: [security]}",
])
def test_broken_exemptions_are_a_usage_error(entry: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    job, values = _write(tmp_path, f"exemptions: {entry}\n")
    code, out, err = run(["validate", str(job), "--policy-values", str(values)], capsys)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert f"{values}:1:1: error: policy values: " in err and "[TJC-POLICY-SETUP]" in err


def test_deny_in_render_fails_but_keeps_the_objects(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("resources: {maxNumNodes: 1}\n")
    job = tmp_path / "job.yaml"
    job.write_text(TRAINJOB.format(annotations=""))
    code, out, err = run(["render", str(job), "--policy-values", str(values)], capsys)
    assert code == 1 and "kind: JobSet" in out  # what the cluster would create, refused
    assert f"{job}:10:15: error:" in err and "[resources.max-nodes]" in err


def test_broken_policy_file_is_reported_at_its_line(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.cue").write_text("package bad\n\nrules: {\n  x: 1 +\n}\n")
    code, _, err = run(["validate", "examples", "--policy", str(tmp_path)], capsys)
    assert code == 2
    assert "bad.cue:5:1: error:" in err and "[TJC-POLICY-INVALID]" in err


def test_rule_breaking_the_contract_is_reported_at_the_rule(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "odd.cue").write_text(TEAM_POLICY.replace('"deny"', '"block"'))
    code, _, err = run(["policies", "list", "--policy", str(tmp_path)], capsys)
    assert code == 2
    assert "odd.cue:6:" in err and "[TJC-POLICY-INVALID]" in err


def test_missing_engine_fails_closed_with_the_install_hint(tmp_path: Path) -> None:
    (tmp_path / "team.cue").write_text(TEAM_POLICY)
    env = {**os.environ, "TJC_LIBCUE": str(tmp_path / "absent.so")}
    for verb in ("validate", "render"):
        cmd = [sys.executable, "-m", "compiler", verb, str(ROOT / "examples")]
        for extra in (["--policy", str(tmp_path)], []):
            done = subprocess.run([*cmd, *extra], env=env, capture_output=True, text=True,
                                  check=False)
            assert done.returncode == 2, (verb, extra, done.stderr)
            assert done.stdout == "" and len(done.stderr.splitlines()) == 1
            assert "CUE evaluator" in done.stderr and "--no-default-policies" in done.stderr
        off = subprocess.run([*cmd, "--no-default-policies"], env=env, capture_output=True,
                             text=True, check=False)
        assert off.returncode == 0, off.stderr
    cases = subprocess.run([sys.executable, "-m", "compiler", "policies", "test"], env=env,
                           capture_output=True, text=True, check=False)
    assert cases.returncode == 2 and "CUE evaluator" in cases.stderr
    assert "Traceback" not in cases.stderr


def test_binding_compiles_unifies_and_reports_positions() -> None:
    ctx = cuelib.Context()
    value = ctx.compile("a: int\nb: a + 1", "x.cue").unify(ctx.compile("a: 2"))
    assert value.lookup("b").to_json() == 3
    with pytest.raises(cuelib.CueError) as caught:
        ctx.compile("a: 1\na: 2", "y.cue").validate()
    assert (caught.value.messages[0].file, caught.value.messages[0].line) == ("y.cue", 2)


def test_pruned_inputs_give_the_same_results_as_whole_ones() -> None:
    """The read-set analysis may only drop data no rule reads: compare with whole inputs."""
    packs = Loader().load_all(pack_files([], builtin=True))
    sources = read_sources([str(p) for p in sorted(CASES.glob("*.yaml"))] + ["examples"])
    jobsets = [(o, r.trainjob.data) for r in render_stream(sources, builtin_runtimes())
               if isinstance(r, JobResult) for o in r.objects if o["kind"] == "JobSet"]
    assert len(jobsets) > 10
    for obj, trainjob in jobsets:
        full = policy_input("JobSet", obj, trainjob)
        for pack in packs:
            ids = [r.id for r in pack.rules.values() if "JobSet" in r.applies_to]
            pruned = prune(full, pack.reads)
            assert len(json.dumps(pruned)) < len(json.dumps(full))
            assert pack.evaluate([{"rules": ids, "input": pruned}]) == \
                pack.evaluate([{"rules": ids, "input": full}])


def test_readme_example_is_the_tested_pack(capsys: pytest.CaptureFixture[str]) -> None:
    example = ROOT / "docs" / "policy-example"
    assert (example / "vision.cue").read_text() in (ROOT / "README.md").read_text()
    code, out, _ = run(["policies", "test", str(example)], capsys)
    assert code == 0 and "4/4 cases passed" in out, out


MIXED_JOBS = """\
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: own, namespace: team-a}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            metadata:
              labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: ghcr.io/acme/trainer:1.0
                      securityContext: {privileged: true}
""" + "".join(f"""---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {{name: job-{i}, namespace: team-a}}
spec:
  runtimeRef: {{name: {runtime}{kind}}}
  trainer: {{numNodes: {nodes}, image: "{image}"}}
""" for i, (runtime, kind, nodes, image) in enumerate([
    ("torch-distributed", "", 8, "ghcr.io/acme/t:1"),
    ("jax-distributed", "", 2, "docker.io/acme/t:latest"),
    ("torch-distributed", "", "x", "ghcr.io/acme/t:1"),
    ("own", ", kind: TrainingRuntime", 2, "nvcr.io/nvidia/pytorch:25.01-py3"),
    ("own", ", kind: TrainingRuntime", 16, "ghcr.io/acme/t"),
]))


def _validate_all(tmp_path: Path, capsys: pytest.CaptureFixture[str], processes: int
                  ) -> tuple[int, str, str]:
    """The mixed jobs, one document per file, with the example packs, in `processes`."""
    for i, doc in enumerate(MIXED_JOBS.split("---\n")):
        (tmp_path / "jobs" / f"{i:02d}.yaml").parent.mkdir(exist_ok=True)
        (tmp_path / "jobs" / f"{i:02d}.yaml").write_text(doc)
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"resources": {"maxNumNodes": 4, "maxGPUs": 8},
                                      "images": {"allowedRegistries": ["ghcr.io", "nvcr.io"]}}))
    return run(["validate", str(tmp_path / "jobs"),
                str(ROOT / "docs" / "policy-example" / "testdata"),
                "--policy", str(ROOT / "docs" / "policy-example"), "--policy-values",
                str(values), "-j", str(processes)], capsys)


def test_worker_processes_find_what_one_process_finds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = _validate_all(tmp_path, capsys, 1)
    for rule in ("resources.max-nodes", "images.allowed-registries", "images.tag",
                 "security.privileged", "vision.gpu-image", "TJC-SCHEMA-TYPE"):
        assert f"[{rule}]" in one[1], (rule, one)
    assert _validate_all(tmp_path, capsys, 2) == one


def test_cue_values_file_and_user_pack_in_render(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "team.cue").write_text(TEAM_POLICY)
    values = tmp_path / "values.cue"
    values.write_text("images: allowedRegistries: [\"registry.example.com\"]\n")
    job = tmp_path / "job.yaml"
    job.write_text(TRAINJOB.format(annotations=""))
    code, out, err = run(["render", str(job), "--policy-values", str(values)], capsys)
    assert code == 1 and "kind: JobSet" in out and "[images.allowed-registries]" in err
    code, out, err = run(["render", str(job), "--policy", str(tmp_path)], capsys)
    assert code == 1 and "kind: JobSet" in out and "[team.label]" in err
    code, out, err = run(["render", str(job), "--no-default-policies"], capsys)
    assert code == 0 and "kind: JobSet" in out and "images.tag" not in err


def test_broken_values_file_is_a_usage_error(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("resources: {maxNumNodes: many}\n")
    code, _, err = run(["validate", "examples", "--policy-values", str(values)], capsys)
    assert code == 2 and "Traceback" not in err  # located in the values file, not the pack
    assert err.startswith(f"{values}:1:26: error: policy values: resources.maxNumNodes: ")
    assert err.endswith("[TJC-POLICY-SETUP]\n")


def test_policy_diagnostics_in_sarif(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(TRAINJOB.format(annotations=""))
    code, out, _ = run(["validate", str(job), "--format", "sarif"], capsys)
    results = json.loads(out)["runs"][0]["results"]
    assert code == 0 and any(r["ruleId"] == "images.tag" for r in results)


def test_jobsets_equal_where_packs_look_are_evaluated_once() -> None:
    """The memo: TrainJobs that differ only in fields no rule reads share the evaluations."""
    from compiler import compile_trainjob, prepare_runtime
    from compiler.policy.engine import PolicySet

    runtime = prepare_runtime(next(d.data for d in builtin_runtimes()
                                   if d.data["metadata"]["name"] == "torch-distributed"))
    policies = PolicySet(Loader().load_all(pack_files([], builtin=True)), plans=False)
    for i in range(5):
        job = yaml.safe_load(TRAINJOB.format(annotations="").replace("name: job",
                                                                        f"name: job-{i}"))
        jobset = next(o for o in compile_trainjob(job, runtime).objects if o["kind"] == "JobSet")
        assert [v.rule.id for v in policies.check("JobSet", jobset, job)] == \
            ["images.tag", "resources.trainer-requests", "security.run-as-non-root"]
    assert policies.evaluations == len(policies.packs)


@pytest.mark.parametrize("annotations", ["", SKIP_IMAGES])
def test_exemptions_hold_in_worker_processes(annotations: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    job, values = _write(tmp_path, EXEMPT.replace("EXPIRES", "2999-01-01"), annotations)
    (tmp_path / "job2.yaml").write_text(job.read_text().replace("name: job", "name: job-2"))
    outputs = []
    for processes in ("1", "2"):
        outputs.append(run(["validate", str(job), str(tmp_path / "job2.yaml"),
                            "--policy-values", str(values), "-j", processes], capsys))
    assert outputs[0] == outputs[1]
    assert outputs[0][0] == 0 and "(exempted by exemption #1" in outputs[0][1]
