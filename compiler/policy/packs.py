"""Loading policy packs: CUE files checked against the contract, their rules and read sets.

A pack is one `.cue` file (one theme per file). Loading compiles it with the CUE evaluator
(in its bounded process, `cueproc`), unifies it with `contract.cue`, reads the rule index (id,
severity, message, kinds), fills in the settings, asks which parts of `input` the file can
read and takes its syntax tree, from which `compiled` makes the pack's plan; a pack loaded
before is read from the disk cache (`cache`) instead. Every problem becomes a
`TJC-POLICY-INVALID` diagnostic at the file's own line and column; a pack that goes over the
evaluator's memory or time limit is a `PolicyLimitError`. The built-in packs live in the
package's `policies/` folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compiler.common.diagnostics import Diagnostic, Location, Severity
from compiler.common.errors import PolicyError
from compiler.common.records import dataclass
from compiler.policy import cache, cuelib, cueproc
from compiler.policy.compiled.plan import PackPlan
from compiler.policy.prune import Node, trie

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "policies"
CONTRACT = Path(__file__).resolve().parent / "contract.cue"
KINDS = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime", "JobSet")


@dataclass(frozen=True)
class Rule:
    """One rule of a pack, as its index declares it (`defers_to`: the rules whose violation
    at the same path of the same document replaces this rule's)."""

    id: str
    severity: str
    message: str
    applies_to: tuple[str, ...]
    pack: str
    defers_to: tuple[str, ...] = ()


@dataclass
class Pack:
    """A loaded pack: rules, read trie, resolved settings, the plan compiled from its source
    (`plan`: the rules it compiles) and what the evaluator compiles it from (`source`: the
    file, the contract, the settings given), sent the first time CUE evaluates it: a run
    whose plans decide every input starts no evaluator."""

    name: str
    file: str
    rules: dict[str, Rule]
    reads: Node
    path: Path
    settings: dict[str, Any]
    plan: PackPlan
    source: cueproc.PackSource

    def evaluate(self, items: list[dict[str, Any]]) -> list[Any]:
        """For each {"rules": [...], "input": {...}}: each rule's violations (or errors), as
        `cuelib.Value.eval_batch` gives them; `PolicyLoadError` if the pack does not compile,
        `PolicyLimitError` over the evaluator's limits."""
        try:
            return cueproc.evaluate(self.source, items)
        except cuelib.CueError as err:
            raise PolicyLoadError(_invalid(err, self.file)) from None
        except cuelib.EngineMissing as exc:  # installed, but it does not load
            raise PolicyLoadError([Diagnostic(Severity.ERROR, "TJC-POLICY-SETUP", str(exc),
                                              subject="policy")]) from None


class PolicyLoadError(PolicyError):
    """A pack or the settings could not be loaded; `diagnostics` say where."""


def _invalid(err: cuelib.CueError, file: str) -> list[Diagnostic]:
    out = []
    for m in err.messages or [cuelib.CueMessage(str(err))]:
        m = m.located_in(file)
        where = Location(m.file or file, m.line or 1, m.column or 1)
        path = f" (at {'.'.join(m.path)})" if m.path else ""
        setting = tuple(m.path) if m.path[:1] == ("settings",) else ()  # the user's, maybe
        out.append(Diagnostic(Severity.ERROR, "TJC-POLICY-INVALID", f"{m.message}{path}",
                              setting, subject="policy").at(where))
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
    """Loads packs with one contract and one set of settings."""

    def __init__(self, settings: dict[str, Any] | None = None) -> None:
        self.contract_source = CONTRACT.read_bytes()
        self.settings = settings or {}
        self.compiled = 0  # packs CUE compiled (not found in the cache)

    def _facts(self, pack: cueproc.PackSource) -> dict[str, Any]:
        """The pack's index, reads and resolved settings: from the cache when this pack
        (with these settings, this version) was loaded before, else from CUE."""
        facts = cache.read(pack.key)
        if facts is not None:
            return facts
        try:
            facts = cueproc.pack_facts(pack)
        except cuelib.CueError as err:
            raise PolicyLoadError(_invalid(err, pack.file)) from None
        self.compiled += 1
        cache.write(pack.key, facts)
        return facts

    def load(self, path: Path) -> Pack:
        """One pack file; `PolicyLoadError` when it does not compile or breaks the contract,
        `PolicyLimitError` when it goes over the evaluator's limits."""
        file, source = display_name(path), path.read_bytes()
        key = cache.key(source, self.contract_source, self.settings,
                        cache.engine_stamp(cuelib.library_path()))
        spec = cueproc.PackSource(key, file, source, self.contract_source, self.settings)
        facts = self._facts(spec)
        rules = {rid: Rule(rid, r["severity"], r["message"], tuple(r["appliesTo"]), path.stem,
                           tuple(r.get("defersTo") or ()))
                 for rid, r in facts["index"].items()}
        reads = facts["reads"]
        reads_trie = trie(reads.get("paths") or [], reads.get("shapes") or [])
        plan = PackPlan(facts.get("syntax"), list(rules), facts["settings"])
        return Pack(path.stem, file, rules, reads_trie, path.resolve(), facts["settings"],
                    plan, spec)

    def load_all(self, paths: Sequence[Path]) -> list[Pack]:
        """Every pack, or `PolicyLoadError` with the problems of all of them; a rule id
        defined twice is a problem too. A pack over the evaluator's limits stops the load
        (`PolicyLimitError`)."""
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
