"""`tjc krm`: run as a KRM function (kustomize exec/container function, kpt).

Reads a `ResourceList` on stdin and writes the transformed one on stdout (see
`compiler.gitops.krm`); its `functionConfig` carries the render and policy options. Exit 1 when a
result is an error (the KRM spec's failure), 2 when the input is not a ResourceList or the options
are unusable.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from compiler.cli import policy_opts, release_opt
from compiler.common.diagnostics import Diagnostic, one_line
from compiler.core.context import CompileOptions
from compiler.gitops import krm
from compiler.gitops.passthrough import PassOptions
from compiler.io import emit
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import iter_source, read_source

if TYPE_CHECKING:
    from compiler.policy.check import PolicyChecker

HELP = "run as a KRM function: ResourceList on stdin, transformed ResourceList on stdout"
EPILOG = """\
functionConfig options (a ConfigMap's data, or the spec of any kind):
  keepTrainJobs: false     keep each TrainJob, followed by its objects
  validate: true           check TrainJobs as tjc validate does (false: --no-validate)
  builtinRuntimes: true    resolve against the built-in ClusterTrainingRuntimes
  defaultPolicies: true    apply the built-in CUE policy packs
  nameHash: false          name the objects <name>-<hash> (tjc render --name-hash)
  policies: [DIR, ...]     also apply the packs of these folders
  skip: [RULE, ...]        rules or packs not to apply
  policyValues: {...}      settings of the packs (e.g. resources: {maxNumNodes: 16})
  namespace: NS            the items are applied into NS (tjc render --namespace)
  defaultNamespace: NS     ... only those without a namespace (tjc render --default-namespace)
  trainerVersion: vX.Y.Z   the Kubeflow Trainer release (default: the repository's .tjc.yaml
                           trainerVersion, else the newest)
  jobsetVersion: vX.Y.Z    the cluster's JobSet release (tjc render --jobset-version)

examples (run from the repository's top folder):
  kustomize build --enable-alpha-plugins --enable-exec examples/gitops/rendered
      (its kustomization has a transformers: entry whose config.kubernetes.io/function
       is exec: {path: tjc, args: [krm]})
  kpt fn eval examples/gitops/base --exec "tjc krm" -o stdout
  kpt fn eval examples/gitops/base --exec "tjc krm" -o stdout -- keepTrainJobs=true
      (kpt runs the --exec command line; the key=value pairs after -- become the
       functionConfig, a ConfigMap)
"""


def register(verbs: Any) -> None:
    """Add the `krm` verb to the parser."""
    parser = verbs.add_parser("krm", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read the ResourceList, transform it, print it; exit 1 on an error result."""
    del args
    try:
        items, config = krm.items_of(_read_stdin())
        cfg = krm.parse_config(config)
    except _Unreadable as exc:
        print(exc, file=sys.stderr)
        return 2
    except krm.ConfigError as exc:
        print(f"tjc krm: error: {exc}", file=sys.stderr)
        return 2
    versions = release_opt.resolve(argparse.Namespace(trainer_version=cfg.trainer_version,
                                                      jobset_version=cfg.jobset_version))
    version = versions.release.version
    opts = PassOptions(keep_trainjobs=cfg.keep_trainjobs, validate=cfg.validate,
                       compile=CompileOptions(name_hash=cfg.name_hash, trainer_version=version),
                       policies=_policies(cfg), fields=cfg.field_validation,
                       placement=cfg.placement, jobset=versions.jobset)
    builtin = builtin_runtimes(version) if cfg.builtin_runtimes else ()
    outcome = krm.run(items, opts, builtin)
    if opts.policies is not None and opts.policies.policies.errors:
        outcome.resource_list["results"].extend(
            krm.result(d, {}) for d in opts.policies.policies.errors)
        outcome.failed = True
    sys.stdout.write(emit.to_yaml(outcome.resource_list))
    for res in outcome.resource_list["results"]:
        if res["severity"] == "error":
            print(one_line(f"tjc krm: {_line(res)}"), file=sys.stderr)
    return 1 if outcome.failed else 0


class _Unreadable(krm.ConfigError):
    """Stdin does not parse: the loader's located line says where and why."""


def _read_stdin() -> Any:
    """The first document on stdin (YAML or JSON), read by the loader, with its bounds on
    size, depth and alias expansion; a bad document is its one located line."""
    source = read_source("-")
    for doc in iter_source(source):
        if isinstance(doc, Diagnostic):
            raise _Unreadable(doc.text())
        return doc.data if not doc.base else None  # base: an item of a v1 List
    if not source.text.strip():
        raise krm.ConfigError("no ResourceList on stdin")
    return None  # only comments, or an empty v1 List: not a ResourceList


def _policies(cfg: krm.FunctionConfig) -> PolicyChecker | None:
    if not cfg.validate:
        return None
    ns = argparse.Namespace(policy=cfg.policies, no_default_policies=not cfg.default_policies,
                            skip=cfg.skip, policy_values=None, pss_level=[])
    return policy_opts.build(ns, settings=cfg.policy_values)


def _line(res: dict[str, Any]) -> str:
    """One stderr line per error result (kustomize shows the function's stderr)."""
    where = res.get("file", {}).get("path", "")
    ref = res.get("resourceRef")
    obj = f"{ref['kind']} {ref.get('namespace', '')}/{ref['name']}".replace(" /", " ") \
        if ref else ""
    fld = res.get("field", {}).get("path", "")
    parts = [p for p in (where, "error", obj, fld) if p]
    return ": ".join(parts) + f": {res['message']} [{res['tags']['rule']}]"
