"""What a folder walk of the loader (`compiler.io.loader.expand_paths`) leaves out besides
hidden entries: `node_modules` folders, what the `.gitignore` files say (those of the folders
walked, and of their parents up to the repository root), and the `--exclude GLOB` patterns.

The `.gitignore` subset is git's: blank lines and `#` comments, `!` to take a pattern back,
a trailing `/` for folders only, a pattern with a `/` anchored at its file's folder, `*`, `?`,
`[...]` and `**`; the last pattern that matches decides. Reads `.gitignore` files only.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence

from compiler.common.records import dataclass

ALWAYS_SKIPPED = frozenset({"node_modules"})  # as hidden folders (.git): never entered
GITIGNORE = ".gitignore"


@dataclass(frozen=True)
class Rule:
    """One `.gitignore` line: a pattern of paths relative to `base` (an absolute folder)."""

    base: str
    pattern: re.Pattern[str]
    negated: bool
    folders_only: bool

    def matches(self, path: str, is_dir: bool) -> bool:
        """Whether the rule names this absolute path."""
        if self.folders_only and not is_dir:
            return False
        if not path.startswith(self.base + os.sep):
            return False
        return self.pattern.fullmatch(path[len(self.base) + 1:].replace(os.sep, "/")) is not None


def parse_gitignore(text: str, base: str) -> list[Rule]:
    """The rules of one `.gitignore` file of folder `base`."""
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line[1:] if negated else line.removeprefix("\\")
        folders_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        body = _glob(line.lstrip("/"))
        rules.append(Rule(base, re.compile(body if anchored else f"(?:.*/)?{body}"), negated,
                          folders_only))
    return rules


def _glob(pattern: str) -> str:
    """A gitignore glob as a regular expression over `/`-separated relative paths."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
        elif pattern[i] == "*":
            out.append(".*" if pattern.startswith("**", i) else "[^/]*")
            i += 2 if pattern.startswith("**", i) else 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            inner = pattern[i + 1:end]
            out.append("[" + ("^" + inner[1:] if inner[:1] == "!" else inner)
                       .replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


class WalkFilter:
    """Decides, entry by entry, what one walk below `top` leaves out."""

    def __init__(self, top: str, exclude: Sequence[str] = ()) -> None:
        self.cwd = os.getcwd()
        self.top = self.absolute(top)
        self.exclude = tuple(exclude)

    def outer_rules(self) -> list[Rule]:
        """The rules of the `.gitignore` files above `top`, up to its repository's root (none
        when `top` is in no git repository)."""
        chain = []
        folder = os.path.dirname(self.top)
        while True:
            chain.append(folder)
            if os.path.exists(os.path.join(folder, ".git")):
                break
            parent = os.path.dirname(folder)
            if parent == folder:
                return []
            folder = parent
        return [r for f in reversed(chain) for r in self.rules_of(f)]

    def rules_of(self, folder: str) -> list[Rule]:
        """The rules of `folder`'s own `.gitignore` (absolute folder)."""
        try:
            with open(os.path.join(folder, GITIGNORE), encoding="utf-8",
                      errors="replace") as f:
                return parse_gitignore(f.read(1 << 20), folder)
        except OSError:
            return []

    def skipped(self, path: str, name: str, is_dir: bool, rules: Sequence[Rule]) -> bool:
        """Whether the walk leaves out this entry (`path` as the walk names it, below top)."""
        if is_dir and name in ALWAYS_SKIPPED:
            return True
        if not (self.exclude or rules):
            return False
        absolute = self.absolute(path)
        if self.exclude:
            rel = absolute[len(self.top) + 1:].replace(os.sep, "/")
            if any(fnmatch.fnmatchcase(rel, g) or fnmatch.fnmatchcase(name, g)
                   for g in self.exclude):
                return True
        ignored = False
        for rule in rules:
            if rule.negated != ignored:
                continue  # cannot change the answer
            if rule.matches(absolute, is_dir):
                ignored = not rule.negated
        return ignored

    def absolute(self, path: str) -> str:
        """The absolute form of a path the walk names (`path` starts with the walk's top)."""
        return os.path.normpath(os.path.join(self.cwd, path))
