"""How diagnostics look on a terminal: colour (`--color`, NO_COLOR) and `tjc render`'s stderr,
which says each problem once, keeps the findings in the built-in runtimes to one line unless
asked (`--show-builtin`, `-v`), and ends with a summary line.

Called by the verbs that print diagnostic lines; knows nothing of how they were found.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from collections.abc import Iterable
from typing import TextIO

from compiler.common.diagnostics import Diagnostic, Severity
from compiler.validate.locations import BUILTIN_PREFIX

_COLOURS = {Severity.ERROR: "\033[1;31m", Severity.WARNING: "\033[1;33m",
            Severity.NOTICE: "\033[36m"}
_RESET = "\033[0m"


def add_color_argument(parser: argparse.ArgumentParser) -> None:
    """`--color auto|always|never`."""
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour the severity of each diagnostic line: on a terminal "
                        "unless NO_COLOR is set (auto, the default), always or never")


def colour_on(choice: str, stream: TextIO) -> bool:
    """Whether to colour lines written to `stream`: `always` and `never` say so; `auto` colours
    a terminal unless NO_COLOR is set to anything but the empty string (no-color.org) or
    TERM is `dumb`."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def line(d: Diagnostic, colour: bool) -> str:
    """The diagnostic's one line, its severity coloured when `colour`."""
    text = d.text()
    if not colour:
        return text
    where = f"{d.locations[0]}: " if d.locations else ""
    word = d.severity.value
    rest = text[len(where) + len(word):]
    return f"{where}{_COLOURS[d.severity]}{word}{_RESET}{rest}"


def only_builtin(d: Diagnostic) -> bool:
    """Whether the diagnostic is about the built-in runtimes alone (upstream's files, which a
    user cannot change)."""
    return bool(d.locations) and all(loc.file.startswith(BUILTIN_PREFIX)
                                     for loc in d.locations)


class StderrReport:
    """`tjc render`'s diagnostic lines: `add` them as they come, then `finish`."""

    def __init__(self, stream: TextIO, *, quiet: bool, show_builtin: bool, colour: bool
                 ) -> None:
        self.stream, self.quiet, self.show_builtin = stream, quiet, show_builtin
        self.colour = colour
        self.counts: Counter[Severity] = Counter()
        self.hidden: Counter[Severity] = Counter()

    def add(self, diagnostics: Iterable[Diagnostic]) -> None:
        """Print each diagnostic (but notices with `quiet`, and those only in the built-in
        runtimes unless `show_builtin`); the pipeline said each problem once."""
        for d in diagnostics:
            if self.quiet and d.severity is Severity.NOTICE and d.suppression is None:
                continue
            if not self.show_builtin and d.severity is not Severity.ERROR and only_builtin(d):
                self.hidden[d.severity] += 1
                continue
            self.counts[d.severity] += 1
            print(line(d, self.colour), file=self.stream)

    def finish(self, rendered: int, trainjobs: int) -> None:
        """The summary line (not with `quiet`: then stderr holds only the problems)."""
        if self.quiet:
            return
        text = (f"{rendered} of {trainjobs} TrainJobs rendered: "
                f"{self.counts[Severity.ERROR]} errors, {self.counts[Severity.WARNING]} "
                f"warnings, {self.counts[Severity.NOTICE]} notices")
        hidden = sum(self.hidden.values())
        if hidden:
            text += (f" ({hidden} more in the built-in runtimes, which you cannot change: "
                     "--show-builtin lists them)")
        print(text, file=self.stream)
