"""The one spelling of the output-format flag, `-o/--output FORMAT`, for every verb.

Verbs call `add_argument`; spellings a verb had before (`--format`, `-f`) stay accepted as
hidden aliases that print a one-line deprecation note on stderr. Holds no format knowledge.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any


class _Deprecated(argparse.Action):
    """Stores the value as `-o/--output` would, after a note on stderr."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        print(f"{parser.prog}: note: {option_string} is deprecated; use -o/--output",
              file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_argument(parser: argparse.ArgumentParser, choices: Sequence[str], default: str,
                 help: str, *, dest: str = "output", old: Sequence[str] = ()) -> None:
    """`-o/--output` with these choices, and the hidden aliases `old` (deprecated)."""
    parser.add_argument("-o", "--output", dest=dest, choices=choices, default=default,
                        metavar="{" + ",".join(choices) + "}", help=help)
    if old:
        parser.add_argument(*old, dest=dest, choices=choices, action=_Deprecated,
                            help=argparse.SUPPRESS)
