"""`tjc policies`: list the CUE policy rules, show one, run a pack folder's test cases."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from compiler.common.diagnostics import one_line

HELP = "list, show and test the CUE policy packs"
EPILOG = """\
examples:
  tjc policies list                          every built-in rule: id, severity, kinds,
                                             compiled or evaluated by CUE (and why)
  tjc policies list --policy examples/policies/team.cue   with your own packs
  tjc policies show security.privileged      one rule (or pack) and its CUE source
  tjc policies test policies/                run a pack folder's testdata/ cases
  tjc policies test                          run the built-in packs' cases

exit codes: 0 ok, 1 a test case failed, 2 usage error or a pack that does not load.
"""


def register(verbs: Any) -> None:
    """Add the `policies` verb and its sub-commands."""
    parser = verbs.add_parser("policies", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    sub.required = True
    for name, text in (("list", "list the rules"), ("show", "show one rule or pack")):
        cmd = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        if name == "show":
            cmd.add_argument("rule", metavar="RULE|PACK")
        cmd.add_argument("--policy", action="append", default=[], metavar="DIR",
                         help="also load the packs of DIR; may be repeated")
        cmd.add_argument("--no-default-policies", action="store_true",
                         help="leave the built-in packs out")
        cmd.add_argument("-o", "--output", choices=("text", "json"), default="text")
        cmd.set_defaults(func=run_list if name == "list" else run_show)
    test = sub.add_parser("test", help="run a pack folder's test cases",
                          description="Run the cases in DIR/testdata/ against DIR's packs.")
    test.add_argument("folder", nargs="?", metavar="DIR",
                      help="pack folder (default: the built-in packs)")
    test.set_defaults(func=run_test)


def _packs(args: argparse.Namespace) -> list[Any]:
    from compiler.cli.policy_opts import load_packs, policy_paths
    from compiler.policy.packs import pack_files

    return load_packs(pack_files(policy_paths(args.policy),
                                 builtin=not args.no_default_policies))


def _evaluation(pack: Any, rule_id: str) -> str:
    """How a rule runs: "compiled" (a plan made from its CUE source) or "cue: <why>"."""
    reason = pack.plan.reasons.get(rule_id)
    return "compiled" if reason is None else f"cue: {reason}"


def run_list(args: argparse.Namespace) -> int:
    """Print every rule, with whether it runs compiled or by CUE (and why)."""
    rules = [(pack, rule) for pack in _packs(args) for rule in pack.rules.values()]
    if args.output == "json":
        print(json.dumps([{"id": r.id, "severity": r.severity, "appliesTo": list(r.applies_to),
                           "pack": r.pack, "message": r.message,
                           "evaluation": _evaluation(p, r.id)} for p, r in rules], indent=2))
        return 0
    width = max((len(r.id) for _, r in rules), default=4)
    print(f"{'RULE':<{width}}  SEVERITY  EVALUATION  APPLIES TO")
    for p, r in rules:
        how = _evaluation(p, r.id)
        print(f"{r.id:<{width}}  {r.severity:<8}  {how.split(':')[0]:<10}  "
              f"{', '.join(r.applies_to)}" + (f"  ({how[5:]})" if how != "compiled" else ""))
    return 0


def run_show(args: argparse.Namespace) -> int:
    """Print one rule (or every rule of a pack) with its CUE source."""
    packs = _packs(args)
    chosen = [(p, r) for p in packs for r in p.rules.values()
              if args.rule in (r.id, r.pack)]
    if not chosen:
        print(f"tjc: no rule or pack named {args.rule} (see tjc policies list)", file=sys.stderr)
        return 2
    out = []
    for pack, rule in chosen:
        entry = {"id": rule.id, "severity": rule.severity, "appliesTo": list(rule.applies_to),
                 "message": rule.message, "pack": pack.file,
                 "evaluation": _evaluation(pack, rule.id),
                 "source": _rule_source(Path(pack.file), rule.id)}
        out.append(entry)
    if args.output == "json":
        print(json.dumps(out, indent=2))
        return 0
    for e in out:
        print(f"{e['id']} [{e['severity']}] in {e['pack']}\n  applies to: "
              f"{', '.join(e['appliesTo'])}\n  message: {e['message']}\n  evaluation: "
              f"{e['evaluation']}\n\n{e['source']}")
    return 0


def _rule_source(path: Path, rule_id: str) -> str:
    """The top-level block of a pack file that declares the rule."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    start = next((i for i, line in enumerate(lines) if f'"{rule_id}"' in line
                  and line.startswith("rules")), None)
    if start is None:
        return ""
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("}")),
               len(lines) - 1)
    return "\n".join(lines[start:end + 1])


def run_test(args: argparse.Namespace) -> int:
    """Run the cases; print one line per case and the rules that lack a case."""
    from compiler.cli.policy_opts import load_packs, require_engine
    from compiler.policy import testcases
    from compiler.policy.packs import BUILTIN_DIR, pack_files

    folder = Path(args.folder) if args.folder else BUILTIN_DIR
    if not folder.is_dir():
        print(f"tjc: {folder} is not a folder", file=sys.stderr)
        return 2
    files = pack_files([folder], builtin=False)
    require_engine(load=True)  # the cases test the CUE packs themselves
    rules = [r for p in load_packs(files) for r in p.rules]
    try:
        found = testcases.cases(folder)
    except ValueError as exc:
        print(one_line(f"tjc: {exc}"), file=sys.stderr)
        return 2
    except yaml.YAMLError as exc:  # a case's `# values:` header
        problem = getattr(exc, "problem", None) or str(exc)
        print(one_line(f"tjc: a `# values:` header below {folder / 'testdata'} is not YAML: "
                       f"{problem}"), file=sys.stderr)
        return 2
    failed = 0
    for case in found:
        outcome = testcases.run_case(case, files)
        failed += not outcome.ok
        status = "ok  " if outcome.ok else "FAIL"
        print(f"{status} {case.path.name}: {case.rule} expect {case.expect}"
              + ("" if outcome.ok else f"\n     {outcome.detail}"))
    missing = testcases.coverage(found, rules)
    for line in missing:
        print(f"FAIL {line}")
    print(f"{len(found) - failed}/{len(found)} cases passed"
          + (f", {len(missing)} missing" if missing else ""))
    return 1 if failed or missing else 0
