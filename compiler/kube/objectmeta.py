"""The API server's ObjectMeta rules for the custom resources tjc reads.

What `ValidateObjectMetaAccessor` (k8s.io/apimachinery `pkg/api/validation/objectmeta.go`) checks
when a TrainJob, TrainingRuntime or ClusterTrainingRuntime is created: the name and generateName
must be DNS-1123 subdomains (the apiextensions server's `NameIsDNSSubdomain`), the namespace a
DNS-1123 label, label keys qualified names and values label values, annotation keys qualified
names (lower-cased first) with all annotations at most 256 kB together, finalizers qualified
names. Messages are upstream's (`pkg/util/validation/validation.go`). A cluster-scoped object's
namespace is dropped by the API server, not refused, so it is not checked. Lengths are counted
in UTF-8 bytes, as Go's `len` does. Pure: metadata in, diagnostics out; called by
`compiler.validate.documents.check_document` for every document, so render refuses what validate
does.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator
from typing import Any

from compiler.common.diagnostics import Diagnostic, Path, error

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + "(\\." + _LABEL + ")*"
_QNAME_CHAR = "[A-Za-z0-9]"
_QNAME = "(" + _QNAME_CHAR + "[-A-Za-z0-9_.]*)?" + _QNAME_CHAR
_LABEL_VALUE = "(" + _QNAME + ")?"
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
              "'-', and must start and end with an alphanumeric character")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric character")
_QNAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
              "with an alphanumeric character")
_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', "
              "'_' or '.', and must start and end with an alphanumeric character")
TOTAL_ANNOTATION_SIZE = 256 * (1 << 10)
KINDS = {"TrainJob": True, "TrainingRuntime": True, "ClusterTrainingRuntime": False}
META = ("metadata",)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Upstream's `RegexError` wording."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    """Upstream's `MaxLenError` wording."""
    return f"must be no more than {length} characters"


def _size(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


_SUBDOMAIN_RE = re.compile(_SUBDOMAIN, flags=re.ASCII)
_LABEL_RE = re.compile(_LABEL, flags=re.ASCII)
_QNAME_RE = re.compile(_QNAME, flags=re.ASCII)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE, flags=re.ASCII)
# The checks below are remembered per value (names, label keys and values recur across
# documents); the public `is_*` functions give each caller its own list.


@functools.lru_cache(maxsize=4096)
def _subdomain(value: str) -> tuple[str, ...]:
    if len(value) <= 253 and _SUBDOMAIN_RE.fullmatch(value):
        return ()  # it matched, so it is ASCII: its length is its size in bytes
    errs = [max_len_error(253)] if _size(value) > 253 else []
    if not _SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN, "example.com"))
    return tuple(errs)


@functools.lru_cache(maxsize=4096)
def _label(value: str) -> tuple[str, ...]:
    errs = [max_len_error(63)] if _size(value) > 63 else []
    if not _LABEL_RE.fullmatch(value):
        errs.append("must not contain dots" if _SUBDOMAIN_RE.fullmatch(value)
                    else regex_error(_LABEL_MSG, _LABEL, "my-name", "123-abc"))
    return tuple(errs)


@functools.lru_cache(maxsize=4096)
def _qualified(value: str) -> tuple[str, ...]:
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) > 2:
        example = regex_error(_QNAME_MSG, _QNAME, "MyName", "my.name", "123-abc")
        return (f"a qualified name {example}"
                " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",)
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += [f"prefix part {msg}" for msg in _subdomain(prefix)]
    if not name:
        errs.append("name part must be non-empty")
    elif _size(name) > 63:
        errs.append(f"name part {max_len_error(63)}")
    if not _QNAME_RE.fullmatch(name):
        errs.append(f"name part {regex_error(_QNAME_MSG, _QNAME, 'MyName', 'my.name', '123-abc')}")
    return tuple(errs)


@functools.lru_cache(maxsize=4096)
def _label_value(value: str) -> tuple[str, ...]:
    if len(value) <= 63 and _LABEL_VALUE_RE.fullmatch(value):
        return ()  # it matched, so it is ASCII: its length is its size in bytes
    errs = [max_len_error(63)] if _size(value) > 63 else []
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_VALUE_MSG, _LABEL_VALUE, "MyValue", "my_value", "12345"))
    return tuple(errs)


@functools.lru_cache(maxsize=4096)
def _annotation_key(key: str) -> tuple[str, ...]:
    return _qualified(key.lower())


def is_dns1123_subdomain(value: str) -> list[str]:
    """`IsDNS1123Subdomain`: the problems with `value` (none when it is one)."""
    return list(_subdomain(value))


def is_dns1123_label(value: str) -> list[str]:
    """`IsDNS1123Label`: the problems with `value`."""
    return list(_label(value))


def is_qualified_name(value: str) -> list[str]:
    """`IsQualifiedName`: `[prefix/]name`, prefix a DNS-1123 subdomain, name at most 63."""
    return list(_qualified(value))


def is_valid_label_value(value: str) -> list[str]:
    """`IsValidLabelValue`: empty, or a qualified name part of at most 63."""
    return list(_label_value(value))


def _mask_trailing_dash(name: str) -> str:
    """Upstream's `maskTrailingDash` for generateName (it drops the last two characters)."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def _invalid(rule: str, path: Path, value: str, msgs: Iterable[str]) -> Iterator[Diagnostic]:
    shown = value if len(value) <= 80 else value[:77] + "..."
    for msg in msgs:
        yield error(rule, f"invalid value {shown!r}: {msg}", path)


def validate(kind: str, data: dict[str, Any]) -> list[Diagnostic]:
    """Every ObjectMeta problem of one document of a kind tjc reads (others: none)."""
    meta = data.get("metadata")
    if kind not in KINDS or not isinstance(meta, dict):
        return []
    out: list[Diagnostic] = []
    name, generate = meta.get("name"), meta.get("generateName")
    if isinstance(generate, str) and generate:
        errs = _subdomain(_mask_trailing_dash(generate))
        if errs:
            out += _invalid("TJC-META-GENERATE-NAME", (*META, "generateName"), generate, errs)
    if not name:
        out.append(error("TJC-META-NAME", "name or generateName is required", (*META, "name")))
    elif isinstance(name, str):
        errs = _subdomain(name)
        if errs:
            out += _invalid("TJC-META-NAME", (*META, "name"), name, errs)
    namespace = meta.get("namespace")
    if KINDS[kind] and isinstance(namespace, str) and namespace:
        errs = _label(namespace)
        if errs:
            out += _invalid("TJC-META-NAMESPACE", (*META, "namespace"), namespace, errs)
    labels, annotations, finalizers = (meta.get("labels"), meta.get("annotations"),
                                       meta.get("finalizers"))
    if isinstance(labels, dict):
        _labels(labels, out)
    if isinstance(annotations, dict):
        out += _annotations(annotations)
    if isinstance(finalizers, list):
        out += _finalizers(finalizers)
    return out


def _labels(labels: dict[str, Any], out: list[Diagnostic]) -> None:
    """Each label's key and value problems, in order (most labels have none)."""
    for key, value in labels.items():
        key_errs = _qualified(key)
        value_errs = _label_value(value) if isinstance(value, str) else ()
        if key_errs:
            out += _invalid("TJC-META-LABEL-KEY", (*META, "labels", key), key, key_errs)
        if value_errs:
            out += _invalid("TJC-META-LABEL-VALUE", (*META, "labels", key), value, value_errs)


def _annotations(annotations: dict[str, Any]) -> Iterator[Diagnostic]:
    total = 0
    for key, value in annotations.items():
        yield from _invalid("TJC-META-ANNOTATION-KEY", (*META, "annotations", key), key,
                            _annotation_key(key))
        total += _size(key) + (_size(value) if isinstance(value, str) else 0)
    if total > TOTAL_ANNOTATION_SIZE:
        yield error("TJC-META-ANNOTATIONS-TOO-LONG", f"annotations take {total} bytes: may not be "
                    f"more than {TOTAL_ANNOTATION_SIZE} bytes", (*META, "annotations"))


def _finalizers(finalizers: list[Any]) -> Iterator[Diagnostic]:
    for i, value in enumerate(finalizers):
        if isinstance(value, str):
            yield from _invalid("TJC-META-FINALIZER", (*META, "finalizers", i), value,
                                _qualified(value))
