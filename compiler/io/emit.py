"""Canonical YAML and JSON text for output objects.

Keys are sorted at every level, lists keep their order, strings that YAML could read as
something else (kubectl's reader first: what it reads back is what was emitted) are
double-quoted (JSON escapes are valid YAML), nothing depends on the hash seed or the input key
order: same objects, same bytes. A small dedicated emitter, because it
is several times faster than a general one and the render step runs on every commit; the
compiled module's `emit` (`yamlext/fastemit.c`) writes the same text as `_block` here, several
times faster again, and this module's Python is the definition it is tested against. Pure.
"""

from __future__ import annotations

import json
import re
import string
from functools import lru_cache
from typing import Any

import yaml

from compiler.io.fastload import emitter
from compiler.io.yamlscalars import NUMBER_STARTS, WORDS, go_value

# the characters a plain string may hold (after its first one, which is a letter, a digit or
# one of "_./")
_PLAIN_CHARS = string.ascii_letters + string.digits + "_./:=@%+()-"
_PLAIN = re.compile(f"[A-Za-z0-9_./][{re.escape(_PLAIN_CHARS)}]*")  # whole text: fullmatch
_NUMERIC_LIKE = re.compile(r"^[-+.]?[0-9][0-9_:.eExXoObB+\-]*$")
_YAML11_BOOLS = frozenset({"y", "Y", "n", "N"})
_RESOLVER = yaml.resolver.Resolver()
# the first characters PyYAML's implicit types start with (it has no catch-all resolver)
_IMPLICIT_STARTS = frozenset(k for k in _RESOLVER.yaml_implicit_resolvers if k)


# What the compiled emitter writes plain without asking `scalar_string`: a text of
# _PLAIN_CHARS that starts with a letter no rule below looks at (no word, number, YAML 1.1
# boolean or PyYAML implicit type starts with it) and does not end with ":". As a table: 2
# for such a first character, 1 for any other of _PLAIN_CHARS, 0 else.
_PLAIN_STARTS = frozenset(string.ascii_letters) - _IMPLICIT_STARTS - set(NUMBER_STARTS) - \
    {word[:1] for word in WORDS | _YAML11_BOOLS}
_PLAIN_TABLE = bytes(2 if chr(c) in _PLAIN_STARTS else int(chr(c) in _PLAIN_CHARS)
                     for c in range(128))


@lru_cache(maxsize=8192)  # bounded: every image tag and env value of a run passes
def scalar_string(text: str) -> str:
    """A string as a YAML scalar: plain when that reads back as the same string."""
    if _PLAIN.fullmatch(text) and not text.endswith(":") and _reads_as_str(text):
        return text
    return _escape_unprintable(json.dumps(text, ensure_ascii=False))


# What YAML may not hold raw (outside its printable set) or reads as a line break (NEL, LS,
# PS): C1 controls, DEL, surrogates, U+FEFF, U+FFFE/U+FFFF. JSON escapes them as \uXXXX too.
_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")


def _escape_unprintable(text: str) -> str:
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _reads_as_str(text: str) -> bool:
    """False for what PyYAML or a YAML 1.1 reader such as go-yaml could take for non-strings
    (go-yaml's own reading, kubectl's, decides first: `0X1F` is 31 there, not for PyYAML)."""
    if text in _YAML11_BOOLS or _NUMERIC_LIKE.match(text) or go_value(text)[0] != "str":
        return False
    if text[:1] not in _IMPLICIT_STARTS:  # (PyYAML tries no implicit type on it: a string)
        return True
    tag = _RESOLVER.resolve(yaml.ScalarNode, text, (True, False))  # type: ignore[no-untyped-call]
    return bool(tag == "tag:yaml.org,2002:str")


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return scalar_string(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, float):
        text = json.dumps(value)
        return text if "." in text or "e" not in text else text.replace("e", ".0e", 1)
    return str(value)


def _block(value: Any, indent: str, out: list[str]) -> None:
    """Append the lines of a non-empty dict or list at this indent."""
    if isinstance(value, dict):
        for key in sorted(value):
            _entry(f"{indent}{scalar_string(str(key))}:", value[key], indent, out)
    else:
        for item in value:
            if isinstance(item, dict) and item:
                start = len(out)
                _block(item, indent + "  ", out)
                out[start] = f"{indent}- {out[start][len(indent) + 2:]}"
            else:
                _entry(f"{indent}-", item, indent, out)


def _entry(head: str, value: Any, indent: str, out: list[str]) -> None:
    if isinstance(value, (dict, list)):
        if not value:
            out.append(f"{head} {'{}' if isinstance(value, dict) else '[]'}")
            return
        out.append(head)
        child = indent + "  " if isinstance(value, dict) or head.endswith("-") else indent
        _block(value, child, out)
        return
    out.append(f"{head} {_scalar(value)}")


_NATIVE = emitter()
_TEXTS: dict[str, str] = {}  # the compiled emitter's strings and their texts, up to _MAX_TEXTS
_MAX_TEXTS = 8192  # then kept as they are: an image tag or env value of a run is not added


def to_yaml(obj: dict[str, Any]) -> str:
    """One object as a canonical YAML document (no leading `---`)."""
    if _NATIVE is not None:
        try:
            return _NATIVE(obj, _TEXTS, _MAX_TEXTS, scalar_string, _scalar, _PLAIN_TABLE)
        except UnicodeEncodeError:  # a lone surrogate in a scalar's text: as Python writes it
            pass
    return python_yaml(obj)


def python_yaml(obj: dict[str, Any]) -> str:
    """`to_yaml` in Python: what the compiled emitter writes, and its fallback."""
    if not obj:
        return "{}\n"
    out: list[str] = []
    _block(obj, "", out)
    return "\n".join(out) + "\n"


def yaml_stream(objects: list[dict[str, Any]]) -> str:
    """Several objects as a multi-document YAML stream."""
    if not objects:
        return ""
    return "---\n" + "---\n".join(map(to_yaml, objects))


def to_json(value: Any) -> str:
    """Canonical indented JSON."""
    return _escape_unprintable(json.dumps(value, indent=2, sort_keys=True,
                                          ensure_ascii=False)) + "\n"


def nested_json(value: Any, depth: int) -> str:
    """`to_json` of a value as an item of a list `depth` levels deep (indented, no newline
    at the end): what `to_json` of the whole prints for it."""
    indent = "  " * depth
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return _escape_unprintable(indent + text.replace("\n", "\n" + indent))


def json_list(objects: list[dict[str, Any]]) -> str:
    """Several objects as a Kubernetes `v1 List`."""
    return to_json({"apiVersion": "v1", "kind": "List", "items": objects})
