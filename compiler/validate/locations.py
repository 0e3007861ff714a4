"""What a report needs to know about the run: the rules' descriptions, the exit code, the
command line, and where the repository is, to write repository-relative URIs.

The CLI fills a `Context` (it knows the working folder and finds the repository root); the
renderers (`sarif`, `github`) only compute with it. Built-in runtimes, `<builtin>/NAME`, get
the URI of the upstream file they are a copy of. Pure: no I/O.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import field

from compiler.common.records import dataclass

BUILTIN_PREFIX = "<builtin>/"
README_URL = "README.md"
SRCROOT = "%SRCROOT%"


@dataclass(frozen=True)
class RuleInfo:
    """A rule's descriptions and the README anchor of its documentation."""

    id: str
    short: str
    full: str
    anchor: str

    @property
    def name(self) -> str:
        """An identifier-like name (`security.privileged` -> `SecurityPrivileged`)."""
        parts = re.split(r"[^A-Za-z0-9]+", self.id.removeprefix("TJC-"))
        return "".join(p[:1].upper() + p[1:].lower() for p in parts if p)

    @property
    def help_uri(self) -> str:
        """The README section that documents the rule."""
        return f"{README_URL}#{self.anchor}"


# Rule families of the validation layers and the engine, by rule id prefix.
_FAMILIES: tuple[tuple[str, str, str, str], ...] = (
    ("TJC-SCHEMA-", "the CRD's JSON Schema refuses the value", "types, enums, limits, required "
     "fields and list keys of the upstream CRDs, as the API server checks them", "tjc-validate"),
    ("TJC-UNKNOWN-FIELD", "a field the API server drops", "a field the CRD schema does not "
     "declare: the API server prunes it (or rejects the object under strict field "
     "validation)", "tjc-validate"),
    ("TJC-CEL-", "a CEL rule of the CRD refuses the object", "an x-kubernetes-validations rule "
     "of the upstream CRDs (transition rules against --against)", "tjc-validate"),
    ("TJC-WEBHOOK-", "upstream's admission webhook refuses the object", "a rule of Kubeflow "
     "Trainer's validating webhooks and plugin validators", "tjc-validate"),
    ("TJC-QUIRK-", "an upstream behaviour you may not expect", "the input is accepted, but "
     "upstream's controller does something a user would not expect with it", "tjc-validate"),
    ("TJC-POLICY-", "the policy engine could not apply a pack", "a pack that does not load or "
     "a rule that cannot be evaluated", "policies-cue"),
    ("TJC-RUNTIME-", "the TrainJob's runtime", "resolving the runtime a TrainJob references",
     "tjc-validate"),
    ("TJC-INPUT-", "an input that cannot be read as a Kubernetes object", "reading the YAML "
     "and JSON inputs", "tjc-validate"),
)


def describe(rule_id: str, policy_rules: Mapping[str, str]) -> RuleInfo:
    """The description of a rule: a policy rule's own message, or its family's."""
    if rule_id in policy_rules:
        message = policy_rules[rule_id]
        return RuleInfo(rule_id, message, f"policy rule {rule_id}: {message}", "policies-cue")
    for prefix, short, full, anchor in _FAMILIES:
        if rule_id.startswith(prefix):
            return RuleInfo(rule_id, short, f"{rule_id}: {full}", anchor)
    return RuleInfo(rule_id, "a diagnostic of tjc", rule_id, "tjc-validate")


@dataclass(frozen=True)
class Context:
    """The run a report is about."""

    policy_rules: Mapping[str, str] = field(default_factory=dict)
    exit_code: int = 0
    command_line: str = ""
    cwd: str = ""
    root: str | None = None
    builtin_uris: Mapping[str, str] = field(default_factory=dict)

    def repo_path(self, file: str) -> str | None:
        """`file` relative to the repository root, or None when it is elsewhere."""
        if self.root is None or file.startswith("<"):
            return None
        full = posixpath.normpath(posixpath.join(self.cwd, file))
        root = self.root.rstrip("/")
        if full.startswith(root + "/"):
            return full[len(root) + 1:]
        return None

    def artifact(self, file: str) -> dict[str, str]:
        """A SARIF artifactLocation: repository-relative where possible."""
        if file.startswith(BUILTIN_PREFIX):
            return {"uri": self.builtin_uris.get(file.removeprefix(BUILTIN_PREFIX), file)}
        rel = self.repo_path(file)
        if rel is not None:
            return {"uri": rel, "uriBaseId": SRCROOT}
        full = posixpath.normpath(posixpath.join(self.cwd, file))
        return {"uri": f"file://{full}" if full.startswith("/") else file}
