"""The policy options shared by `tjc validate` and `tjc render`, and building the policy set.

The built-in packs are on unless `--no-default-policies`; without the CUE evaluator any
command that would apply a pack fails closed (exit 2, one line saying how to get it).
`--policy DIR` adds packs, `--skip` turns rules (or whole packs) off for the run,
`--policy-values FILE` (YAML, JSON or CUE) sets the packs' settings and the exemptions
(`compiler.policy.exemptions`), `--pss-level` the pss pack's levels over those. The CUE
evaluator is started only when at least one pack needs it (`compiler.policy.cueproc`: its
own process, bounded in memory and time; going over a bound is a `PolicyLimitError`, exit 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.common.diagnostics import Diagnostic, Location, Severity, format_path
from compiler.common.errors import InputError, PolicyError
from compiler.io.loader import Document, Source, iter_source, read_source

if TYPE_CHECKING:
    from compiler.policy.check import PolicyChecker
    from compiler.policy.packs import Pack


class PolicySetupError(PolicyError):
    """The policies cannot be used (engine missing, broken pack or settings): exit code 2."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --policy, --no-default-policies, --skip and --policy-values."""
    group = parser.add_argument_group("policies (CUE)")
    group.add_argument("--policy", action="append", default=[], metavar="DIR",
                       help="also apply the CUE policy packs (*.cue) of DIR; may be repeated")
    group.add_argument("--no-default-policies", action="store_true",
                       help="do not apply the built-in packs (security, resources, "
                       "scheduling, images)")
    group.add_argument("--skip", action="append", default=[], metavar="RULE",
                       help="do not apply this rule id or pack (comma-separated; may be "
                       "repeated)")
    group.add_argument("--policy-values", metavar="FILE",
                       help="settings for the packs, as YAML, JSON or CUE (e.g. "
                       "resources: {maxNumNodes: 16}), and the exemptions: per rule, "
                       "namespaces, names or a label selector, optional expiry; objects' "
                       "annotation trainjob-compiler/skip-policies exempts only from warn "
                       "rules and rules listed in annotationExemptible")
    group.add_argument("--pss-level", action="append", default=[], type=pss_levels,
                       metavar="[enforce=|warn=]LEVEL",
                       help="the Pod Security Standards level (privileged, baseline, "
                       "restricted) the pss pack applies in namespaces without "
                       "pod-security.kubernetes.io labels among the inputs: enforce (the "
                       "default) or warn, comma-separated; over pss in --policy-values "
                       "(default: privileged, as Kubernetes)")


PSS_LEVELS = ("privileged", "baseline", "restricted")


def pss_levels(text: str) -> dict[str, str]:
    """`--pss-level`'s value as pss settings (`baseline`, `enforce=baseline,warn=restricted`),
    or an argparse error."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        mode, _, level = part.rpartition("=")
        if mode not in ("", "enforce", "warn") or level not in PSS_LEVELS:
            raise argparse.ArgumentTypeError(
                f"expected [enforce=|warn=]LEVEL, comma-separated, with a LEVEL of "
                f"{', '.join(PSS_LEVELS)}; got {part!r}")
        out[mode or "enforce"] = level
    return out


def setup_problem(message: str, file: str = "") -> PolicySetupError:
    diag = Diagnostic(Severity.ERROR, "TJC-POLICY-SETUP", message, subject="policy")
    return PolicySetupError([diag.at(Location(file, 1, 1)) if file else diag])


Locate = Callable[[tuple[str | int, ...]], Location]


def load_values(path: str) -> dict[str, Any]:
    """Pack settings from a YAML/JSON or CUE file (`PolicyLimitError` when CUE goes over
    its limits on it)."""
    return load_values_located(path)[0]


def load_values_located(path: str) -> tuple[dict[str, Any], Locate]:
    """`load_values`, and where each path of the values is in the file (a CUE file: its
    first line)."""
    found: list[Document] = []
    values = _load_values(path, found)
    if found:
        return values, found[0].locate
    return values, lambda keys: Location(path, 1, 1)


def _load_values(path: str, found: list[Document]) -> dict[str, Any]:
    from compiler.policy import cuelib, cueproc

    file = Path(path)
    try:  # bounded as an input file is: /dev/zero or a FIFO never fills the memory
        text = read_source(path).text
    except InputError as exc:
        raise setup_problem(f"policy values: {exc.diagnostic.message}", path) from None
    try:
        data = cueproc.values(text.encode(), path) if file.suffix == ".cue" \
            else _yaml_values(text, path, found)
    except cuelib.EngineMissing as exc:
        raise setup_problem(str(exc)) from None
    except cuelib.CueError as err:
        m = err.messages[0] if err.messages else cuelib.CueMessage(str(err))
        diag = Diagnostic(Severity.ERROR, "TJC-POLICY-SETUP", f"policy values: {m.message}",
                          subject="policy")
        raise PolicySetupError([diag.at(Location(m.file or path, m.line or 1,
                                                 m.column or 1))]) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise setup_problem("policy values must be a mapping (such as resources: "
                            "{maxNumNodes: 16})", path)
    return data


def _yaml_values(text: str, path: str, found: list[Document]) -> Any:
    """The first document of a YAML/JSON values file, read as an input file is (bounded
    aliases and depth); a document that does not parse is its located error. The document
    goes to `found` (its positions locate later problems)."""
    for doc in iter_source(Source(path, text)):
        if isinstance(doc, Diagnostic) and doc.rule == "TJC-INPUT-NOT-OBJECT":
            return []  # not a mapping: the caller says what is expected
        if isinstance(doc, Diagnostic):
            raise PolicySetupError([Diagnostic(
                Severity.ERROR, "TJC-POLICY-SETUP", f"policy values: {doc.message}",
                subject="policy", locations=doc.locations)])
        found.append(doc)
        return doc.data
    return None


def load_packs(files: Sequence[Path], settings: dict[str, Any] | None = None) -> list[Pack]:
    """The packs; PolicySetupError (never a traceback) when the engine is missing or a pack
    does not load, PolicyLimitError when one goes over the evaluator's limits."""
    from compiler.policy import cuelib
    from compiler.policy.packs import Loader, PolicyLoadError

    try:
        return Loader(settings).load_all(files)
    except cuelib.EngineMissing as exc:
        raise setup_problem(str(exc)) from None
    except PolicyLoadError as exc:
        raise PolicySetupError(exc.diagnostics) from None


def require_engine(load: bool) -> None:
    """PolicySetupError when the CUE evaluator is missing; `load=False` only checks that it
    is installed (the built-in packs' compiled plans may decide every input of the run),
    `load=True` starts it."""
    from compiler.policy import cuelib, cueproc

    cueproc.limits()  # a limit that is no amount is a usage error, whether CUE runs or not
    try:
        cueproc.start() if load else cuelib.present()
    except cuelib.EngineMissing as exc:
        raise setup_problem(str(exc)) from None


def skips(values: list[str]) -> list[str]:
    """The rule ids and packs of every --skip."""
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def policy_paths(values: Sequence[str]) -> list[Path]:
    """The --policy folders (or .cue files); PolicySetupError for one that is missing or
    neither (/dev/zero, a FIFO), instead of silently applying no pack of it."""
    folders = [Path(p) for p in values]
    missing = [str(p) for p in folders if not p.exists()]
    if missing:
        raise setup_problem(f"policy folder not found: {', '.join(missing)}")
    odd = [str(p) for p in folders if not p.is_dir() and not p.is_file()]
    if odd:
        raise setup_problem(f"--policy {', '.join(odd)}: expected a folder of .cue files "
                            "or a .cue file")
    return folders


def watched(args: argparse.Namespace) -> list[Path]:
    """The files the options' policy settings come from (the --policy-values file, the
    --policy folders): what a long-running command watches for a new version."""
    return [Path(p).absolute() for p in
            ([args.policy_values] if args.policy_values else []) + list(args.policy)]


def build(args: argparse.Namespace, settings: dict[str, Any] | None = None
          ) -> PolicyChecker | None:
    """The policy checker the options ask for, or None when no pack is in use; `settings`
    (inline pack settings, as a KRM functionConfig carries them) stand for --policy-values."""
    if args.no_default_policies and not args.policy:
        return None  # no pack: the policy modules are not even imported
    from compiler.policy import packs as packs_mod
    from compiler.policy import settings as closed
    from compiler.policy.check import PolicyChecker
    from compiler.policy.engine import PolicySet
    from compiler.policy.exemptions import split

    files = packs_mod.pack_files(policy_paths(args.policy),
                                 builtin=not args.no_default_policies)
    if not files:
        return None
    require_engine(load=False)
    values, locate = _values(args, settings)
    try:
        settings, exemptions = split(values)
    except ValueError as exc:
        raise setup_problem(f"policy values: {exc}", args.policy_values) from None
    levels = {k: v for given in args.pss_level for k, v in given.items()}
    if levels:
        pss = settings.get("pss")
        settings = {**settings, "pss": {**(pss if isinstance(pss, dict) else {}), **levels}}
    if settings:  # closed: a key no pack declares is a mistake, never a silent no-op
        declared = closed.declared(load_packs(files))
        if levels and "pss" not in declared:
            raise setup_problem("--pss-level: no loaded pack has pss settings (the built-in "
                                "pss pack is left out with --no-default-policies)")
        _refuse(closed.unknown_settings(settings, declared), locate)
    try:
        loaded = load_packs(files, settings)
    except PolicySetupError as exc:
        raise PolicySetupError(_in_values(exc.diagnostics, locate)) from None
    known = closed.known_ids(loaded)
    skipped = skips(args.skip)
    for _, message in closed.unknown_ids((((), name) for name in skipped), known):
        raise setup_problem(f"--skip {message}")
    _refuse(closed.unknown_ids(_named_ids(values), known), locate)
    return PolicyChecker(PolicySet(loaded, skipped, settings, exemptions))


def _values(args: argparse.Namespace, settings: dict[str, Any] | None
            ) -> tuple[dict[str, Any], Locate]:
    """The policy values (inline `settings`, the --policy-values file, or none) and where
    each of their paths is."""
    if settings is not None:
        return settings, lambda keys: Location("functionConfig policyValues", 1, 1)
    if args.policy_values:
        return load_values_located(args.policy_values)
    return {}, lambda keys: Location("", 1, 1)


def _named_ids(values: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """The rule ids and pack names the values name: in exemptions and annotationExemptible
    (their shapes are checked by `exemptions.split` already)."""
    out: list[tuple[tuple[str | int, ...], str]] = []
    for i, entry in enumerate(values.get("exemptions") or []):
        for j, name in enumerate(entry.get("rules") or []):
            out.append((("exemptions", i, "rules", j), name))
    for j, name in enumerate(values.get("annotationExemptible") or []):
        out.append((("annotationExemptible", j), name))
    return out


def _refuse(problems: list[tuple[tuple[str | int, ...], str]], locate: Locate) -> None:
    """PolicySetupError for the problems, each at its place in the user's values."""
    if problems:
        raise PolicySetupError([
            Diagnostic(Severity.ERROR, "TJC-POLICY-SETUP",
                       f"policy values: {format_path(path)}: {message}",
                       subject="policy").at(locate(path)) for path, message in problems])


def _in_values(found: list[Diagnostic], locate: Locate) -> list[Diagnostic]:
    """A pack's error about a setting the user gave (a type that does not fit) is reported
    in the user's values, where it can be fixed, not inside the pack."""
    out: list[Diagnostic] = []
    for d in found:
        keys = d.path[1:] if d.path[:1] == ("settings",) else ()
        if not keys:
            out.append(d)
            continue
        if "errors in empty disjunction" in d.message:  # its parts follow, one by one
            continue
        message = d.message.rsplit(" (at ", 1)[0]
        out.append(Diagnostic(Severity.ERROR, "TJC-POLICY-SETUP",
                              f"policy values: {format_path(keys)}: {message} (the pack "
                              f"declares it in {d.locations[0] if d.locations else 'its file'})",
                              subject="policy").at(locate(keys)))
    return out
