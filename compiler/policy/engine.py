"""Evaluating policy packs on documents: violations with rule, severity, path and message.

Every pack's rules run as the plan compiled from their CUE source (`compiled`), CUE deciding
the rules a plan does not compile and the inputs it leaves to CUE. For those, the document's
policy input (`views.policy_input`) is cut down to what the pack can read (`prune`), and equal
remainders are evaluated once (the rules are pure functions of their input and settings).
Rules are skipped per run (`--skip`), by rule id or pack name. A violation may carry its own
severity (else its rule's). A rule that defers to others (`defersTo`) loses its violation at a
path where one of them reports one as severe or more in the same document (`_deferred`), so
that two rules checking one problem report it once. The Namespace objects of the inputs
(`use_namespaces`) give `input.namespace` its labels.
Exemptions (`exemptions`: the policy settings', and the object's own annotation within what
those allow; a JobSet follows its TrainJob) do not hide a violation: it stays, suppressed, as a
notice that names the exemption used.
"""

from __future__ import annotations

import datetime
from collections.abc import Collection, Iterable, Sequence
from typing import NamedTuple

from compiler.common.diagnostics import Diagnostic, Location, Severity, Suppression
from compiler.common.jsondata import Obj
from compiler.policy import cuelib
from compiler.policy import exemptions as ex
from compiler.policy.packs import Pack, Rule
from compiler.policy.prune import prune
from compiler.policy.views import policy_input

SKIP_ANNOTATION = ex.SKIP_ANNOTATION
SEVERITY = {"deny": Severity.ERROR, "warn": Severity.WARNING}
_RANK = {"warn": 0, "deny": 1}
_MEMO_LIMIT = 100_000

Path = tuple[str | int, ...]


class Violation(NamedTuple):
    """One rule broken by one document, at a field path inside it; `exempted` says which
    exemption suppresses it (kind and justification), `remark` adds to the message; `own`
    is the violation's own severity ("": its rule's). (A named tuple: a JobSet's
    violations are many and short-lived, and a tuple is made in half the time of a frozen
    dataclass.)"""

    rule: Rule
    path: Path
    message: str
    exempted: ex.Decision | None = None
    own: str = ""

    @property
    def severity(self) -> str:
        """deny or warn: the violation's own, else its rule's."""
        return self.own or self.rule.severity

    def diagnostic(self) -> Diagnostic:
        """The violation as an unlocated diagnostic (a notice when an exemption was used)."""
        severity = SEVERITY[self.severity]
        decision = self.exempted
        if decision is None or not decision.kind:
            remark = f" ({decision.remark})" if decision is not None and decision.remark else ""
            return Diagnostic(severity, self.rule.id, self.message + remark, self.path,
                              subject="policy")
        return Diagnostic(Severity.NOTICE, self.rule.id, self.message, self.path,
                          subject="policy", suppression=Suppression(
                              decision.kind, decision.justification, severity))


def _annotated(meta: Obj) -> bool:
    """Whether the object's skip annotation names a rule or pack (`annotation_rules`, asked
    only when the annotation is there)."""
    annotations = meta.get("annotations")
    return isinstance(annotations, dict) and bool(annotations.get(SKIP_ANNOTATION)) \
        and bool(ex.annotation_rules(meta))


def skipped_by(rule_id: str, skips: Collection[str]) -> bool:
    """Whether a skip list names the rule or its pack."""
    return ex.names_rule(rule_id, skips)


def _deferred(found: list[Violation]) -> list[Violation]:
    """The violations without those that give way: at a path where a rule they defer to
    reports one more severe, or as severe unless that rule defers to theirs too (then both
    stay: a problem is never lost)."""
    strongest: dict[tuple[str, Path], Violation] = {}
    for v in found:
        known = strongest.get((v.rule.id, v.path))
        if known is None or _RANK[v.severity] > _RANK[known.severity]:
            strongest[(v.rule.id, v.path)] = v
    return [v for v in found if not any(_gives_way(v, strongest.get((other, v.path)))
                                        for other in v.rule.defers_to)]


def _gives_way(v: Violation, other: Violation | None) -> bool:
    if other is None:
        return False
    mine, theirs = _RANK[v.severity], _RANK[other.severity]
    return theirs > mine or (theirs == mine and v.rule.id not in other.rule.defers_to)


class PolicySet:
    """Loaded packs, the run's skips, and the memo of CUE's evaluations; `plans=False`
    evaluates every rule with CUE, compiled or not (`tjc policies test` compares the two)."""

    def __init__(self, packs: Sequence[Pack], skip: Iterable[str] = (),
                 settings: Obj | None = None, exemptions: ex.Exemptions | None = None,
                 today: datetime.date | None = None, plans: bool = True) -> None:
        self.packs = list(packs)
        self.plans = plans
        self.skip = frozenset(skip)
        self.settings = settings or {}
        self.exemptions = exemptions or ex.Exemptions()
        self.today = today or datetime.datetime.now(datetime.timezone.utc).date()
        self._memo: dict[tuple[str, tuple[str, ...], str], tuple[Violation, ...]] = {}
        self._applicable: dict[tuple[str, str, frozenset[str]], list[Rule]] = {}
        self._packs: dict[str, list[tuple[Pack, list[Rule], tuple[str, ...]]]] = {}
        self.evaluations = 0
        self.errors: list[Diagnostic] = []
        self._reported: set[tuple[str, str]] = set()
        self.namespaces: dict[str, dict[str, str]] = {}

    def use_namespaces(self, labels: dict[str, dict[str, str]]) -> None:
        """The labels of the Namespace objects of the inputs, by name (`input.namespace`)."""
        self.namespaces = labels

    def rules(self) -> list[Rule]:
        """Every rule of every pack, in pack order."""
        return [rule for pack in self.packs for rule in pack.rules.values()]

    def applicable(self, kind: str) -> list[str]:
        """The ids of the rules this set checks a document of `kind` with (not skipped)."""
        return [rule.id for _, rules, _ in self._by_kind(kind) for rule in rules]

    def check(self, kind: str, obj: Obj, trainjob: Obj | None = None, *,
              today: datetime.date | None = None) -> list[Violation]:
        """Every violation of one document (a JobSet with the TrainJob it came from);
        exemptions expire against `today` (default: the set's own date, taken when it was
        made: a long-running caller such as the controller passes the date of each
        decision)."""
        found: list[Violation] = []
        full: Obj | None = None  # the input of plans and CUE, built when first needed
        for pack, rules, compiled in self._by_kind(kind):
            full = full if full is not None else policy_input(kind, obj, trainjob,
                                                              self.namespaces)
            found += self._pack_violations(pack, rules, compiled, full)
        if not found:
            return found
        if any(v.rule.defers_to for v in found):
            found = _deferred(found)
        owner = trainjob if kind == "JobSet" and trainjob is not None else obj
        meta = (owner or {}).get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        if not self.exemptions.entries and not _annotated(meta):
            return found  # nothing can exempt or remark on these violations
        day = today or self.today
        return [self._exempt(v, meta, day) for v in found]

    def _by_kind(self, kind: str) -> list[tuple[Pack, list[Rule], tuple[str, ...]]]:
        """The packs with rules (not skipped this run) that apply to this kind, with those
        rules and the ids of the compiled ones."""
        known = self._packs.get(kind)
        if known is None:
            known = self._packs[kind] = [
                (p, rules, tuple(r.id for r in rules if r.id in p.plan.compiled))
                for p in self.packs if (rules := self._rules(p, kind, self.skip))]
        return known

    def _pack_violations(self, pack: Pack, rules: list[Rule], compiled: tuple[str, ...],
                         full: Obj) -> list[Violation]:
        """One pack's violations, rule by rule in the pack's order: the plan's where it
        decides, CUE's for the rest."""
        decided = pack.plan.run(full, compiled) if self.plans else {}
        if len(decided) == len(rules) and not any(decided.values()) \
                and None not in decided.values():
            return []  # (the common case: every rule decided by its plan, and clean)
        left = [r for r in rules if decided.get(r.id) is None]
        by_cue = self._evaluate(pack, left, prune(full, pack.reads)) if left else ()
        if not decided:
            return list(by_cue)
        out: list[Violation] = []
        for rule in rules:
            found = decided.get(rule.id)
            if found is None:
                out += [v for v in by_cue if v.rule is rule]
            elif found:
                out += [Violation(rule, path, message or rule.message, None, own)
                        for path, message, own in found]
        return out

    def _exempt(self, v: Violation, meta: Obj, today: datetime.date) -> Violation:
        decision = self.exemptions.decide(v.rule.id, v.severity, meta, today)
        if not decision.kind and not decision.remark:
            return v
        return v._replace(exempted=decision)

    def _rules(self, pack: Pack, kind: str, skips: frozenset[str]) -> list[Rule]:
        key = (pack.name, kind, skips)
        rules = self._applicable.get(key)
        if rules is None:
            rules = [r for r in pack.rules.values()
                     if kind in r.applies_to and not skipped_by(r.id, skips)]
            self._applicable[key] = rules
        return rules

    def _evaluate(self, pack: Pack, rules: list[Rule], pruned: Obj) -> tuple[Violation, ...]:
        # repr is a faithful key: equal data built in the same key order prints the same, and
        # pruning visits keys in the read trie's order (data in another order only misses).
        ids = tuple(r.id for r in rules)
        key = (pack.name, ids, repr(pruned))
        found = self._memo.get(key)
        if found is None:
            if len(self._memo) > _MEMO_LIMIT:
                self._memo.clear()
            self.evaluations += 1
            result = pack.evaluate([{"rules": list(ids), "input": pruned}])[0]
            found = self._memo[key] = self._violations(pack, rules, result)
        return found

    def _violations(self, pack: Pack, rules: list[Rule], result: Obj) -> tuple[Violation, ...]:
        out: list[Violation] = []
        for rule in rules:
            outcome = result.get(rule.id) or {}
            if outcome.get("errors"):
                self._rule_failed(pack, rule, outcome["errors"])
                continue
            for item in outcome.get("violations") or []:
                path = tuple(p for p in item.get("path") or () if isinstance(p, (str, int)))
                own = item.get("severity")
                out.append(Violation(rule, path, str(item.get("message") or rule.message), None,
                                     own if own in _RANK else ""))
        return tuple(out)

    def _rule_failed(self, pack: Pack, rule: Rule, errors: list[Obj]) -> None:
        """A rule that cannot be evaluated is the policy's bug: reported once, at the rule."""
        raw = errors[0]
        first = cuelib.CueMessage(str(raw.get("message", "")), str(raw.get("file", "")),
                                  int(raw.get("line", 0)), int(raw.get("column", 0)))
        key = (rule.id, first.message)
        if key in self._reported:
            return
        self._reported.add(key)
        where = Location(first.file or pack.file, first.line or 1, first.column or 1)
        self.errors.append(Diagnostic(
            Severity.ERROR, "TJC-POLICY-ERROR",
            f"rule {rule.id} cannot be evaluated: {first.message}", subject="policy").at(where))
