"""The pod-level fields of a pod template as core validation has them (`ValidatePodSpec`,
`ValidatePodTemplateSpec`): `validateRestartPolicy`, `validateDNSPolicy` and
`validatePodDNSConfig` (policy None needs nameservers), the node selector and the template's
labels and annotations (`ValidateLabels`, `ValidateAnnotations`), `ValidateTolerations`, the
service account and priority class names (DNS-1123 subdomains), hostname and subdomain
(DNS-1123 labels) and activeDeadlineSeconds (1 to 2^31-1). Empty policies are defaulted.
Called by `compiler.kube.podspec.check`; pure.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.kube.objectmeta import is_dns1123_label, is_qualified_name, is_valid_label_value
from compiler.kube.podspec.base import (
    MAX_INT32,
    Problem,
    Scope,
    dicts,
    in_range,
    integer,
    object_name_problems,
    text,
)

RULE = "TJC-POD-SPEC"
RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
OPERATORS = ("Equal", "Exists")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def problems(pod: dict[str, Any], scope: Scope) -> Iterator[Problem]:
    """Every pod-level problem of the pod spec."""
    for key, allowed in (("restartPolicy", RESTART_POLICIES), ("dnsPolicy", DNS_POLICIES)):
        value = pod.get(key)
        if isinstance(value, str) and value and value not in allowed:
            yield Problem(RULE, (key,), f"{key} {value!r} is not one of {', '.join(allowed)}")
    if pod.get("dnsPolicy") == "None" and scope >= Scope.RUNTIME:
        yield from _dns_none(pod.get("dnsConfig"))
    if isinstance(pod.get("nodeSelector"), dict):
        yield from labels(pod["nodeSelector"], ("nodeSelector",), "node selector")
    for index, toleration in dicts(pod.get("tolerations")):
        yield from _toleration(toleration, ("tolerations", index))
    yield from _names(pod)


def labels(values: dict[str, Any], at: tuple[Any, ...], what: str) -> Iterator[Problem]:
    """`ValidateLabels`: qualified keys, label values (reported at the map, as upstream)."""
    for key, value in values.items():
        for msg in is_qualified_name(str(key)):
            yield Problem(RULE, at, f"{what} key {str(key)!r} is not a qualified name: {msg}")
        for msg in is_valid_label_value(text(value)):
            yield Problem(RULE, at, f"{what} value {text(value)!r} is not a label value: {msg}")


def template_problems(template: dict[str, Any]) -> Iterator[Problem]:
    """The pod template's own labels and annotation keys (`ValidatePodTemplateSpec`)."""
    meta = template.get("metadata")
    if not isinstance(meta, dict):
        return
    if isinstance(meta.get("labels"), dict):
        yield from labels(meta["labels"], ("metadata", "labels"), "pod template label")
    if isinstance(meta.get("annotations"), dict):
        for key in meta["annotations"]:
            for msg in is_qualified_name(str(key).lower()):
                yield Problem(RULE, ("metadata", "annotations"), f"pod template annotation "
                              f"key {str(key)!r} is not a qualified name: {msg}")


def _dns_none(config: Any) -> Iterator[Problem]:
    if not isinstance(config, dict):
        yield Problem(RULE, ("dnsConfig",), "dnsPolicy None needs a dnsConfig")
    elif not config.get("nameservers"):
        yield Problem(RULE, ("dnsConfig", "nameservers"), "dnsPolicy None needs at least one "
                      "nameserver in dnsConfig")


def _toleration(toleration: dict[str, Any], at: tuple[Any, ...]) -> Iterator[Problem]:
    key, operator = text(toleration.get("key")), text(toleration.get("operator"))
    value, effect = text(toleration.get("value")), text(toleration.get("effect"))
    for msg in is_qualified_name(key) if key else []:
        yield Problem(RULE, (*at, "key"), f"toleration key {key!r} is not a qualified name: "
                      f"{msg}")
    if not key and operator != "Exists":
        yield Problem(RULE, (*at, "operator"), "a toleration without a key must have operator "
                      "Exists (it matches every taint)")
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        yield Problem(RULE, (*at, "effect"), "a toleration with tolerationSeconds must have "
                      "effect NoExecute")
    if operator in ("", "Equal"):
        for msg in is_valid_label_value(value):
            yield Problem(RULE, (*at, "operator"), f"toleration value {value!r} is not a label "
                          f"value: {msg}")
    elif operator == "Exists":
        if value:
            yield Problem(RULE, (*at, "operator"), f"toleration value {value!r} is set with "
                          "operator Exists; expected no value")
    else:
        yield Problem(RULE, (*at, "operator"), f"toleration operator {operator!r} is not one of "
                      f"{', '.join(OPERATORS)}")
    if effect and effect not in EFFECTS:
        yield Problem(RULE, (*at, "effect"), f"toleration effect {effect!r} is not one of "
                      f"{', '.join(EFFECTS)}")


def _names(pod: dict[str, Any]) -> Iterator[Problem]:
    for key in ("serviceAccountName", "priorityClassName"):
        name = text(pod.get(key))
        for msg in object_name_problems(name) if name else []:
            yield Problem(RULE, (key,), f"{key} {name!r} is not a DNS-1123 subdomain: {msg}")
    for key in ("hostname", "subdomain"):
        name = text(pod.get(key))
        for msg in is_dns1123_label(name) if name else []:
            yield Problem(RULE, (key,), f"{key} {name!r} is not a DNS-1123 label: {msg}")
    deadline = integer(pod.get("activeDeadlineSeconds"))
    if deadline is not None and (problem := in_range(deadline, 1, MAX_INT32)):
        yield Problem(RULE, ("activeDeadlineSeconds",), f"activeDeadlineSeconds {deadline} "
                      f"{problem}")
