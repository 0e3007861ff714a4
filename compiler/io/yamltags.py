"""Tagged YAML scalars and mapping keys as kubectl reads them (go-yaml v2 under sigs.k8s.io/yaml).

A tag on a collection changes nothing there (`!!set {a, b}` is the mapping {a: null, b: null},
`!!str [1]` a list). A tagged scalar's text (after `%TAG` handles are expanded; `!!` is
`tag:yaml.org,2002:`) is read by its tag alone, whatever its quoting:

- `!!bool`, `!!int`, `!!float`, `!!null`, `!!timestamp`: the text is resolved as a plain scalar
  is (`yamlscalars.go_value`; a timestamp is tried for `!!timestamp` only) and must come out of
  that type, an int also serving `!!float`; otherwise kubectl refuses the document (`!!int
  "1"` is 1, `!!int x` an error; a `!!timestamp` stays its text);
- `!!binary`: the text is base64 (line breaks ignored), and its bytes are the string (each byte
  that is not UTF-8 becomes U+FFFD, as Go's JSON encoder writes it);
- any other tag (`!!str`, the non-specific `!`, `!!set`, `!foo`, a verbatim `!<...>`): the text.

`tagged` is the (Go type, value) of one such scalar, `yamlscalars.api_value` the JSON value the
API server receives; `key_text` names a key as sigs.k8s.io/yaml does. Pure; called by
`compiler.io.loader` only.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from compiler.io.yamlscalars import WORDS, Unrepresentable, float32_key, go_value

YAML_TAG = "tag:yaml.org,2002:"
STR_TAG = YAML_TAG + "str"
BINARY_TAG = YAML_TAG + "binary"
NON_SPECIFIC = "!"
_RESOLVED = {YAML_TAG + name: name for name in ("bool", "int", "float", "null", "timestamp")}
_GO_TAG = {"uint": "int"}  # go-yaml's tag of each Go type, where the names differ


class TagMismatch(ValueError):
    """A tag that cannot hold its text (`!!int x`), or `!!binary` text that is not base64:
    kubectl refuses the document with this message."""


def tagged(tag: str, text: str) -> tuple[str, Any]:
    """(Go type: null, bool, int, uint, float, timestamp or str; value) of a scalar with an
    explicit tag, as go-yaml v2 decodes it; TagMismatch when kubectl refuses it."""
    want = _RESOLVED.get(tag)
    if want is None:
        return ("str", _binary(text)) if tag == BINARY_TAG else ("str", text)
    kind, value = _resolve(text, timestamps=want == "timestamp")
    have = _GO_TAG.get(kind, kind)
    if have == want:
        return kind, value
    if want == "float" and kind == "int":
        return "float", float(value)
    raise TagMismatch(f"cannot decode !!{have} `{text}` as a !!{want}")


def _resolve(text: str, timestamps: bool) -> tuple[str, Any]:
    """go-yaml's resolution of a tagged text: the plain one, with timestamps when asked."""
    if timestamps and text not in WORDS and is_timestamp(text):  # it starts with a digit
        return "timestamp", text
    return go_value(text)


def key_text(kind: str, value: Any) -> str:
    """The string sigs.k8s.io/yaml makes of a mapping key of this Go type; Unrepresentable
    for a type it cannot convert (null, an unsigned int beyond int64)."""
    if kind in ("str", "timestamp"):
        return str(value)
    if kind == "bool":
        return "true" if value else "false"
    if kind == "int":
        return str(value)
    if kind == "float":
        return float32_key(value)
    raise Unrepresentable(f"unsupported map key of type {'<nil>' if kind == 'null' else kind}")


# Go's base64.StdEncoding: padded, the standard alphabet; \r and \n anywhere are passed over.
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _binary(text: str) -> str:
    """The string a `!!binary` text decodes to, as Go's JSON encoder writes its bytes."""
    compact = text.replace("\r", "").replace("\n", "")
    if not _BASE64.fullmatch(compact):
        raise TagMismatch("!!binary value contains invalid base64 data")
    return go_string(base64.b64decode(compact))


def go_string(data: bytes) -> str:
    """Bytes as text the way Go's JSON encoder writes a string: each byte that does not start
    a valid UTF-8 sequence becomes U+FFFD (Python's own replacement would merge some)."""
    parts: list[str] = []
    while True:
        try:
            parts.append(data.decode())
            return "".join(parts)
        except UnicodeDecodeError as exc:
            parts.append(data[:exc.start].decode() + "\ufffd")
            data = data[exc.start + 1:]


# The layouts go-yaml v2 tries (time.Parse): "2006-1-2T15:4:5.999999999Z07:00", the same with
# a lower-case t, "2006-1-2 15:4:5.999999999" (a layout space matches one or more) and
# "2006-1-2"; a field takes at most two digits, a fraction any number after `.` or `,`.
_DATE = r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
_TIME = r"([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:[.,][0-9]+)?"
_ZONE = r"(?:Z|[+-]([0-9]{2}):([0-9]{2}))"
_TIMESTAMPS = [re.compile(_DATE + sep + _TIME + zone)
               for sep, zone in (("T", _ZONE), ("t", _ZONE), (" +", ""))] + [re.compile(_DATE)]


def is_timestamp(text: str) -> bool:
    """Whether go-yaml v2 takes `text` for a timestamp (one of its layouts, fields in range)."""
    for layout in _TIMESTAMPS:
        match = layout.fullmatch(text)
        if match and _in_range([int(g) if g else 0 for g in match.groups()]):
            return True
    return False


def _in_range(fields: list[int]) -> bool:
    year, month, day, *clock = fields + [0] * (8 - len(fields))
    hour, minute, second, zone_hour, zone_minute = clock
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    return 1 <= month <= 12 and 1 <= day <= days[month - 1] and hour < 24 and minute < 60 \
        and second < 60 and zone_hour <= 24 and zone_minute <= 60
