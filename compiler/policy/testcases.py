"""A pack's own test cases: `<pack folder>/testdata/*.yaml`, run by `tjc policies test`.

A case is a YAML stream (runtimes and TrainJobs) whose leading comments say what it tests:

    # rule: security.privileged
    # expect: fail            (the rule must fire) or pass (it must not)
    # values: {security: {allowedCapabilities: [NET_RAW]}}   (optional pack settings and
    #         exemptions, as in --policy-values)
    # skip: security          (optional rule ids or packs left out, as --skip)

The case is validated as `tjc validate` would (built-in runtimes available to resolve
runtimeRefs) with the folder's packs and those settings, evaluated by CUE; where the packs'
rules compile to plans (`compiled`), the plans must give the same diagnostics. Every rule
must have at least one passing and one failing case.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from compiler.common.diagnostics import Diagnostic
from compiler.common.records import dataclass
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import read_sources
from compiler.policy.check import PolicyChecker
from compiler.policy.engine import PolicySet
from compiler.policy.exemptions import split
from compiler.policy.packs import Loader, Pack, PolicyLoadError
from compiler.validate.documents import validate_stream


@dataclass(frozen=True)
class Case:
    """One test case file and what it expects."""

    path: Path
    rule: str
    expect: str
    values: dict[str, Any]
    skip: tuple[str, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """What running a case gave."""

    case: Case
    ok: bool
    detail: str


def read_case(path: Path) -> Case:
    """The header of a case file; ValueError when it lacks `rule` or `expect`."""
    header: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc.reason})") from None
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        key, _, value = line[1:].partition(":")
        header[key.strip()] = value.strip()
    if not header.get("rule") or header.get("expect") not in ("pass", "fail"):
        raise ValueError(f"{path}: the first comment lines must give `# rule: ID` and "
                         "`# expect: pass|fail`")
    values = yaml.safe_load(header["values"]) if header.get("values") else {}
    skip = tuple(p.strip() for p in header.get("skip", "").split(",") if p.strip())
    return Case(path, header["rule"], header["expect"], values if isinstance(values, dict)
                else {}, skip)


def cases(folder: Path) -> list[Case]:
    """Every case below `folder/testdata`, by file name."""
    return [read_case(p) for p in sorted((folder / "testdata").glob("*.yaml"))]


def run_case(case: Case, files: Sequence[Path]) -> Outcome:
    """Validate the case's documents with the packs and check the expectation."""
    try:
        settings, exemptions = split(case.values)
        packs: list[Pack] = Loader(settings).load_all(files)
    except ValueError as exc:
        return Outcome(case, False, f"values: {exc}")
    except PolicyLoadError as exc:
        return Outcome(case, False, "; ".join(d.text() for d in exc.diagnostics))
    if case.rule not in {r for p in packs for r in p.rules}:
        return Outcome(case, False, f"no loaded pack defines rule {case.rule}")
    found = _diagnostics(case, PolicySet(packs, case.skip, settings, exemptions, plans=False))
    if any(p.plan.compiled for p in packs):
        planned = _diagnostics(case, PolicySet(packs, case.skip, settings, exemptions))
        if planned != found:
            differ = next((d for d in planned + found if (d in planned) != (d in found)), None)
            return Outcome(case, False, "the compiled plans and CUE disagree"
                           + (f": {differ.text()}" if differ else " on the order"))
    fired = [d for d in found if d.rule == case.rule and d.suppression is None]
    broken = [d for d in found if d.rule == "TJC-POLICY-ERROR"]
    if broken:
        return Outcome(case, False, broken[0].text())
    if case.expect == "fail":
        return Outcome(case, bool(fired), _first(fired) if fired else "the rule did not fire")
    return Outcome(case, not fired, _first(fired) if fired else "the rule did not fire")


def _diagnostics(case: Case, policies: PolicySet) -> list[Diagnostic]:
    found = list(validate_stream(read_sources([str(case.path)]), builtin_runtimes(),
                                 policies=PolicyChecker(policies)))
    return found + policies.errors


def _first(found: list[Diagnostic]) -> str:
    return found[0].text()


def coverage(folder_cases: Sequence[Case], rules: Sequence[str]) -> list[str]:
    """Rules without a passing or without a failing case."""
    have = {(c.rule, c.expect) for c in folder_cases}
    return [f"{rule}: no `expect: {want}` case" for rule in rules for want in ("fail", "pass")
            if (rule, want) not in have]
