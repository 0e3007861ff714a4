"""Plain YAML scalars as sigs.k8s.io/yaml reads them, remembered per text, for both loaders.

`plain(text)` is the value of a plain scalar (`yamlscalars.resolve_plain`), kept in a bounded
table the C fast path reads too (`FAST_PLAIN`, handed to `fastload.stream`). Imports no PyYAML:
the fast path reads nearly every file without it (`compiler.io.yamlread`, PyYAML's loaders,
is imported only when a file needs them). Pure but for the table.
"""

from __future__ import annotations

import math
from typing import Any

from compiler.io import fastload, yamlscalars

MISSING = object()
_PLAIN_VALUES: dict[str, Any] = {}  # plain scalar text -> value, for texts seen before
_PLAIN_LIMIT = 16384


def plain(text: str) -> Any:
    """The value of a plain scalar (an immutable str, number, bool or None), remembered per
    text; `MISSING` when it has none JSON can carry (`_scalar` reports it)."""
    value = _PLAIN_VALUES.get(text, MISSING)
    if value is not MISSING:
        return value
    try:
        value = yamlscalars.resolve_plain(text)
    except Exception:  # the full path raises the marked error
        return MISSING
    if isinstance(value, float) and not math.isfinite(value):
        return MISSING
    if len(_PLAIN_VALUES) < _PLAIN_LIMIT:  # the recurring texts come early; keep them
        _PLAIN_VALUES[text] = value
    return value


FAST_PLAIN = fastload.Plain(_PLAIN_VALUES, plain, MISSING, yamlscalars.WORDS,
                            yamlscalars.NUMBER_STARTS)
