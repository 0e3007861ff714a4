"""Loading policy packs: CUE files checked against the contract, their rules and read sets.

A pack is one `.cue` file (one theme per file). Loading compiles it with the CUE evaluator,
unifies it with `contract.cue`, reads the rule index (id, severity, message, kinds), fills in
the settings, and asks which parts of `input` the file can read. Every problem becomes a
`TJC-POLICY-INVALID` diagnostic at the file's own line and column. The built-in packs live in
the package's `policies/` folder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.common.diagnostics import Diagnostic, Location, Severity
from compiler.policy import cache, cuelib, native
from compiler.policy.native import PackPlan
from compiler.policy.prune import Node, trie

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "policies"
CONTRACT = Path(__file__).resolve().parent / "contract.cue"
KINDS = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime", "JobSet")


@dataclass(frozen=True)
class Rule:
    """One rule of a pack, as its index declares it."""

    id: str
    severity: str
    message: str
    applies_to: tuple[str, ...]
    pack: str


@dataclass
class Pack:
    """A loaded pack: rules, read trie, resolved settings, the compiled plan of its rules
    (`native`, when it is a built-in pack unchanged) and its evaluator value (settings filled
    in), compiled on first use: a run whose plans decide every input never loads CUE."""

    name: str
    file: str
    rules: dict[str, Rule]
    reads: Node
    path: Path
    settings: dict[str, Any]
    plan: PackPlan | None
    compile: Callable[[], cuelib.Value]
    _value: cuelib.Value | None = None

    @property
    def value(self) -> cuelib.Value:
        """The pack's CUE value (compiled now if not yet)."""
        if self._value is None:
            self._value = self.compile()
        return self._value


class PolicyLoadError(Exception):
    """A pack or the settings could not be loaded; `diagnostics` say where."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        super().__init__("; ".join(d.message for d in diagnostics))


def _invalid(err: cuelib.CueError, file: str) -> list[Diagnostic]:
    out = []
    for m in err.messages or [cuelib.CueMessage(str(err))]:
        m = m.located_in(file)
        where = Location(m.file or file, m.line or 1, m.column or 1)
        path = f" (at {'.'.join(m.path)})" if m.path else ""
        out.append(Diagnostic(Severity.ERROR, "TJC-POLICY-INVALID", f"{m.message}{path}",
                              subject="policy").at(where))
    return out


def display_name(path: Path) -> str:
    """A pack file's name as reported: relative to the working folder when below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def pack_files(folders: Sequence[Path], builtin: bool) -> list[Path]:
    """The `.cue` files of the built-in folder (if wanted) and the given folders, by name."""
    roots = ([BUILTIN_DIR] if builtin else []) + list(folders)
    files: list[Path] = []
    for root in roots:
        files += [root] if root.is_file() else sorted(  # (a FIFO or device is no pack)
            p for p in root.glob("*.cue") if p.is_file())
    return files


class Loader:
    """Loads packs into one evaluator context."""

    def __init__(self, settings: dict[str, Any] | None = None) -> None:
        self.contract_source = CONTRACT.read_bytes()
        self.settings = settings or {}
        self._context: cuelib.Context | None = None
        self._contract: cuelib.Value | None = None

    @property
    def context(self) -> cuelib.Context:
        """The evaluator context (the CUE library is loaded on first use)."""
        if self._context is None:
            self._context = cuelib.Context()
        return self._context

    @property
    def contract(self) -> cuelib.Value:
        """The contract, compiled on first use."""
        if self._contract is None:
            self._contract = self.context.compile(self.contract_source, "contract.cue")
        return self._contract

    def _compile(self, source: bytes, file: str) -> cuelib.Value:
        try:
            value = self.context.compile(source, file).unify(self.contract)
            value.validate()
            if self.settings:
                value = value.fill("settings", self.settings)
                value.validate()
        except cuelib.CueError as err:
            raise PolicyLoadError(_invalid(err, file)) from None
        return value

    def _facts(self, source: bytes, file: str) -> tuple[cuelib.Value | None, dict[str, Any]]:
        """The pack's index, reads and resolved settings: from the cache when this pack
        (with these settings, this version) was loaded before, else from CUE."""
        key = cache.key(source, self.contract_source, self.settings,
                        cache.engine_stamp(cuelib.library_path()))
        facts = cache.read(key)
        if facts is not None:
            return None, facts
        value = self._compile(source, file)
        try:
            facts = {"index": value.lookup("tjcIndex").to_json(),
                     "settings": value.lookup("settings").to_json(),
                     "reads": cuelib.input_reads(source, file)}
        except cuelib.CueError as err:
            raise PolicyLoadError(_invalid(err, file)) from None
        cache.write(key, facts)
        return value, facts

    def load(self, path: Path) -> Pack:
        """One pack file; `PolicyLoadError` when it does not compile or breaks the contract."""
        file, source = display_name(path), path.read_bytes()
        value, facts = self._facts(source, file)
        rules = {rid: Rule(rid, r["severity"], r["message"], tuple(r["appliesTo"]), path.stem)
                 for rid, r in facts["index"].items()}
        reads = facts["reads"]
        reads_trie = trie(reads.get("paths") or [], reads.get("shapes") or [])
        plan = native.plan_for(path, source, list(rules))
        return Pack(path.stem, file, rules, reads_trie, path.resolve(), facts["settings"],
                    plan, lambda: self._compile(source, file), value)

    def load_all(self, paths: Sequence[Path]) -> list[Pack]:
        """Every pack, or `PolicyLoadError` with the problems of all of them; a rule id
        defined twice is a problem too."""
        packs, problems, seen = [], [], dict[str, str]()
        for path in paths:
            try:
                pack = self.load(path)
            except PolicyLoadError as exc:
                problems += exc.diagnostics
                continue
            for rid in pack.rules:
                if rid in seen:
                    problems.append(Diagnostic(
                        Severity.ERROR, "TJC-POLICY-INVALID",
                        f"rule {rid} is defined in {seen[rid]} and in {pack.file}",
                        subject="policy").at(Location(pack.file, 1, 1)))
                seen[rid] = pack.file
            packs.append(pack)
        if problems:
            raise PolicyLoadError(problems)
        return packs
