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
from collections.abc import Callable, Iterator
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


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, flags=re.ASCII)


def _full(pattern: str, value: str) -> bool:
    return _compiled(pattern).fullmatch(value) is not None


def _remembered(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """`check` with its answers remembered per value (names and label keys recur); each call
    gets its own list."""
    cached = functools.lru_cache(maxsize=4096)(lambda value: tuple(check(value)))

    @functools.wraps(check)
    def wrapper(value: str) -> list[str]:
        return list(cached(value))
    return wrapper


@_remembered
def is_dns1123_subdomain(value: str) -> list[str]:
    """`IsDNS1123Subdomain`: the problems with `value` (none when it is one)."""
    errs = [max_len_error(253)] if _size(value) > 253 else []
    if not _full(_SUBDOMAIN, value):
        errs.append(regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN, "example.com"))
    return errs


@_remembered
def is_dns1123_label(value: str) -> list[str]:
    """`IsDNS1123Label`: the problems with `value`."""
    errs = [max_len_error(63)] if _size(value) > 63 else []
    if not _full(_LABEL, value):
        errs.append("must not contain dots" if _full(_SUBDOMAIN, value)
                    else regex_error(_LABEL_MSG, _LABEL, "my-name", "123-abc"))
    return errs


@_remembered
def is_qualified_name(value: str) -> list[str]:
    """`IsQualifiedName`: `[prefix/]name`, prefix a DNS-1123 subdomain, name at most 63."""
    parts = value.split("/")
    errs: list[str] = []
    if len(parts) > 2:
        example = regex_error(_QNAME_MSG, _QNAME, "MyName", "my.name", "123-abc")
        return [f"a qualified name {example}"
                " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += [f"prefix part {msg}" for msg in is_dns1123_subdomain(prefix)]
    if not name:
        errs.append("name part must be non-empty")
    elif _size(name) > 63:
        errs.append(f"name part {max_len_error(63)}")
    if not _full(_QNAME, name):
        errs.append(f"name part {regex_error(_QNAME_MSG, _QNAME, 'MyName', 'my.name', '123-abc')}")
    return errs


@_remembered
def is_valid_label_value(value: str) -> list[str]:
    """`IsValidLabelValue`: empty, or a qualified name part of at most 63."""
    errs = [max_len_error(63)] if _size(value) > 63 else []
    if not _full(_LABEL_VALUE, value):
        errs.append(regex_error(_VALUE_MSG, _LABEL_VALUE, "MyValue", "my_value", "12345"))
    return errs


def _mask_trailing_dash(name: str) -> str:
    """Upstream's `maskTrailingDash` for generateName (it drops the last two characters)."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def _invalid(rule: str, path: Path, value: str, msgs: list[str]) -> Iterator[Diagnostic]:
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
        out += _invalid("TJC-META-GENERATE-NAME", (*META, "generateName"), generate,
                        is_dns1123_subdomain(_mask_trailing_dash(generate)))
    if not name:
        out.append(error("TJC-META-NAME", "name or generateName is required", (*META, "name")))
    elif isinstance(name, str):
        out += _invalid("TJC-META-NAME", (*META, "name"), name, is_dns1123_subdomain(name))
    namespace = meta.get("namespace")
    if KINDS[kind] and isinstance(namespace, str) and namespace:
        out += _invalid("TJC-META-NAMESPACE", (*META, "namespace"), namespace,
                        is_dns1123_label(namespace))
    out += _labels(meta.get("labels"))
    out += _annotations(meta.get("annotations"))
    out += _finalizers(meta.get("finalizers"))
    return out


def _labels(labels: Any) -> Iterator[Diagnostic]:
    if not isinstance(labels, dict):
        return
    for key, value in labels.items():
        path = (*META, "labels", key)
        yield from _invalid("TJC-META-LABEL-KEY", path, key, is_qualified_name(key))
        if isinstance(value, str):
            yield from _invalid("TJC-META-LABEL-VALUE", path, value, is_valid_label_value(value))


def _annotations(annotations: Any) -> Iterator[Diagnostic]:
    if not isinstance(annotations, dict):
        return
    total = 0
    for key, value in annotations.items():
        yield from _invalid("TJC-META-ANNOTATION-KEY", (*META, "annotations", key), key,
                            is_qualified_name(key.lower()))
        total += _size(key) + (_size(value) if isinstance(value, str) else 0)
    if total > TOTAL_ANNOTATION_SIZE:
        yield error("TJC-META-ANNOTATIONS-TOO-LONG", f"annotations take {total} bytes: may not be "
                    f"more than {TOTAL_ANNOTATION_SIZE} bytes", (*META, "annotations"))


def _finalizers(finalizers: Any) -> Iterator[Diagnostic]:
    if not isinstance(finalizers, list):
        return
    for i, value in enumerate(finalizers):
        if isinstance(value, str):
            yield from _invalid("TJC-META-FINALIZER", (*META, "finalizers", i), value,
                                is_qualified_name(value))
