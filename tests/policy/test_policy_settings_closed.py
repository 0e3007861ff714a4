"""Policy settings are closed: a misspelt setting, rule id or pack name is an error located in
the user's file (or naming the flag), never a silent no-op that leaves a limit off."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml

from compiler.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "jax-mnist.yaml")


def _validate(values: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
              *extra: str) -> tuple[int, str]:
    path = tmp_path / "values.yaml"
    path.write_text(values)
    code = main(["validate", "-q", "--policy-values", str(path), *extra, EXAMPLE])
    out, err = capsys.readouterr()
    return code, out + err


def test_a_misspelt_setting(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`maxNumNode: 16` silently left the node limit off (exit 0)."""
    code, out = _validate("resources:\n  maxNumNode: 16\n", tmp_path, capsys)
    assert (code, out) == (2, f"{tmp_path / 'values.yaml'}:2:15: error: policy values: "
                           "resources.maxNumNode: unknown setting (did you mean "
                           "'maxNumNodes'?); the packs declare maxGPUs, maxNumNodes "
                           "[TJC-POLICY-SETUP]\n")


def test_an_unknown_settings_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _validate("resource:\n  maxNumNodes: 16\n", tmp_path, capsys)
    assert code == 2 and "resource: unknown setting (did you mean 'resources'?)" in out
    assert out.startswith(f"{tmp_path / 'values.yaml'}:2:3: error: ")


def test_a_setting_of_the_wrong_type_is_reported_in_the_values_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A type error was reported at a line inside the package's own .cue file."""
    code, out = _validate('resources: {maxNumNodes: "16"}\n', tmp_path, capsys)
    assert code == 2 and out.splitlines()
    assert all(line.startswith(f"{tmp_path / 'values.yaml'}:1:26: error: policy values: "
                               "resources.maxNumNodes: conflicting values \"16\" and ")
               for line in out.splitlines())


def test_known_settings_still_apply(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _validate("resources: {maxNumNodes: 1}\n", tmp_path, capsys)
    assert code == 1 and "[resources.max-nodes]" in out


@pytest.mark.parametrize("values, where, message", [
    ("exemptions:\n- rules: [security.privilegd]\n  namespaces: [x]\n", "2:11",
     "exemptions[0].rules[0]: 'security.privilegd' is not a rule id or pack name (did you "
     "mean 'security.privileged'?)"),
    ("annotationExemptible: [resources.max-gpu]\n", "1:24",
     "annotationExemptible[0]: 'resources.max-gpu' is not a rule id or pack name (did you "
     "mean 'resources.max-gpus'?)"),
])
def test_an_unknown_rule_id_in_the_values(values: str, where: str, message: str,
                                          tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _validate(values, tmp_path, capsys)
    assert (code, out) == (2, f"{tmp_path / 'values.yaml'}:{where}: error: policy values: "
                           f"{message} [TJC-POLICY-SETUP]\n")


def test_an_unknown_skip(capsys: pytest.CaptureFixture[str]) -> None:
    """`--skip images.tagg` was accepted and skipped nothing."""
    assert main(["validate", "-q", "--skip", "images.tagg", EXAMPLE]) == 2
    assert "--skip 'images.tagg' is not a rule id or pack name (did you mean 'images.tag'?)" \
        in capsys.readouterr().err
    assert main(["validate", "-q", "--skip", "images,security.privileged", EXAMPLE]) == 0


def test_krm_inline_settings_are_closed(capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    job = yaml.safe_load(Path(EXAMPLE).read_text())
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList",
                     "items": [job], "functionConfig": {"kind": "X", "spec": {
                         "policyValues": {"resources": {"maxGPU": 1}}}}}
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(
        yaml.safe_dump(resource_list).encode())))
    assert main(["krm"]) == 2
    assert "resources.maxGPU: unknown setting (did you mean 'maxGPUs'?)" in \
        capsys.readouterr().err
