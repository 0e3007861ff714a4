"""Exemptions from policy rules, owned by whoever owns the policy settings.

They live in the policy values file (`--policy-values`, kept by the platform team, e.g. under
CODEOWNERS), next to the packs' settings, never in the objects they exempt:

    exemptions:
      - rules: [security.privileged]        # rule ids or pack names
        namespaces: [gpu-debug]              # any of these scopes must match ...
        names: [nccl-test-*]                 # (TrainJob or runtime name, glob)
        selector: {matchLabels: {team: infra}}
        expires: 2026-12-31                  # optional; after that day it no longer applies
        reason: NCCL tests need the host network
    annotationExemptible: [resources.max-gpus]

An object's own annotation `trainjob-compiler/skip-policies` exempts it only from `warn` rules
and from the rules listed in `annotationExemptible`; naming any other rule has no effect but a
remark in the violation. Every exemption used is reported (the engine keeps the violation as a
suppressed notice). Pure: data in, decisions out; the caller supplies today's date.
"""

from __future__ import annotations

import datetime
import fnmatch
from collections.abc import Collection, Mapping
from typing import Any

from compiler.common.records import dataclass

RESERVED = ("exemptions", "annotationExemptible")
SKIP_ANNOTATION = "trainjob-compiler/skip-policies"
_SCOPES = ("namespaces", "names", "selector")


@dataclass(frozen=True)
class Exemption:
    """One entry of `exemptions`: which rules, for which objects, until when."""

    number: int
    rules: tuple[str, ...]
    namespaces: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()
    expires: datetime.date | None = None
    reason: str = ""

    def covers(self, rule_id: str, meta: Mapping[str, Any]) -> bool:
        """Whether the entry names the rule (or its pack) and its scopes match the object."""
        if not names_rule(rule_id, self.rules):
            return False
        labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
        assert isinstance(labels, dict)
        checks = []
        if self.namespaces:
            checks.append(str(meta.get("namespace") or "") in self.namespaces)
        if self.names:
            checks.append(any(fnmatch.fnmatchcase(str(meta.get("name", "")), pattern)
                              for pattern in self.names))
        if self.labels:
            checks.append(all(labels.get(k) == v for k, v in self.labels))
        return bool(checks) and all(checks)

    def describe(self) -> str:
        """How a report names the entry."""
        why = f": {self.reason}" if self.reason else ""
        return f"exemption #{self.number} of the policy settings{why}"


@dataclass(frozen=True)
class Decision:
    """Why a violation is suppressed (`kind` is SARIF's: external or inSource), or a remark
    to add to a violation that stays."""

    kind: str = ""
    justification: str = ""
    remark: str = ""


@dataclass(frozen=True)
class Exemptions:
    """The exemptions and the annotation-exemptible rules of one policy configuration."""

    entries: tuple[Exemption, ...] = ()
    annotation_exemptible: frozenset[str] = frozenset()

    def decide(self, rule_id: str, severity: str, meta: Mapping[str, Any],
               today: datetime.date) -> Decision:
        """Whether a violation of `rule_id` by the object with `meta` is exempted."""
        expired = ""
        for entry in self.entries:
            if not entry.covers(rule_id, meta):
                continue
            if entry.expires is not None and entry.expires < today:
                expired = f"exemption #{entry.number} expired on {entry.expires.isoformat()}"
                continue
            return Decision("external", entry.describe())
        asked = annotation_rules(meta)
        if names_rule(rule_id, asked):
            if severity == "warn" or names_rule(rule_id, self.annotation_exemptible):
                return Decision("inSource", f"annotation {SKIP_ANNOTATION} of the object")
            return Decision(remark=f"the annotation {SKIP_ANNOTATION} cannot exempt this "
                            "deny rule; the policy settings own its exemptions")
        return Decision(remark=expired)


def names_rule(rule_id: str, names: Collection[str]) -> bool:
    """Whether a list of rule ids and pack names names the rule or its pack."""
    return rule_id in names or rule_id.split(".", 1)[0] in names


def annotation_rules(meta: Mapping[str, Any]) -> frozenset[str]:
    """The rule ids and packs an object's skip annotation names."""
    annotations = meta.get("annotations")
    raw = annotations.get(SKIP_ANNOTATION) if isinstance(annotations, dict) else None
    return frozenset(p.strip() for p in str(raw or "").split(",") if p.strip())


def split(values: Mapping[str, Any]) -> tuple[dict[str, Any], Exemptions]:
    """The packs' settings and the exemptions of a policy values mapping; ValueError with
    what is wrong."""
    settings = {k: v for k, v in values.items() if k not in RESERVED}
    raw = values.get("exemptions") or []
    if not isinstance(raw, list):
        raise ValueError("exemptions must be a list of {rules, namespaces|names|selector, "
                         "expires, reason}")
    entries = tuple(_entry(i + 1, item) for i, item in enumerate(raw))
    exemptible = values.get("annotationExemptible") or []
    if not isinstance(exemptible, list) or not all(isinstance(r, str) for r in exemptible):
        raise ValueError("annotationExemptible must be a list of rule ids or pack names")
    return settings, Exemptions(entries, frozenset(exemptible))


def _strings(item: Mapping[str, Any], key: str, number: int) -> tuple[str, ...]:
    value = item.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"exemption #{number}: {key} must be a list of strings")
    return tuple(value)


def _entry(number: int, item: Any) -> Exemption:
    if not isinstance(item, dict):
        raise ValueError(f"exemption #{number} must be a mapping")
    unknown = sorted(set(item) - {"rules", "reason", "expires", *_SCOPES})
    if unknown:
        raise ValueError(f"exemption #{number}: unknown field {unknown[0]}")
    rules = _strings(item, "rules", number)
    if not rules:
        raise ValueError(f"exemption #{number}: rules must name at least one rule or pack")
    if not any(item.get(scope) for scope in _SCOPES):
        raise ValueError(f"exemption #{number}: give namespaces, names or a selector (an "
                         "exemption for every object would switch the rule off)")
    selector = item.get("selector") or {}
    match = selector.get("matchLabels") if isinstance(selector, dict) else None
    if item.get("selector") and (not isinstance(match, dict) or not match
                                 or set(selector) != {"matchLabels"}):
        raise ValueError(f"exemption #{number}: selector must be {{matchLabels: {{...}}}}")
    return Exemption(number, rules, _strings(item, "namespaces", number),
                     _strings(item, "names", number),
                     tuple(sorted((str(k), str(v)) for k, v in (match or {}).items())),
                     _date(item.get("expires"), number), str(item.get("reason") or ""))


def _date(value: Any, number: int) -> datetime.date | None:
    if value is None or isinstance(value, datetime.date):
        return value
    try:
        return datetime.date.fromisoformat(str(value))
    except ValueError:
        raise ValueError(f"exemption #{number}: expires must be a date such as "
                         "2026-12-31") from None
