"""`tjc controller`: run the reconcile controller against a cluster."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from compiler.cli import collect, policy_opts

if TYPE_CHECKING:
    from compiler.controller.livepolicy import LivePolicies
    from compiler.policy.engine import PolicySet

HELP = "run the TrainJob controller: compile every TrainJob and apply its JobSet"
EPILOG = """\
examples:
  tjc controller                                   in-cluster config or ~/.kube/config
  tjc controller --kubeconfig kind.yaml --namespace team-a
  tjc controller --all-namespaces --leader-elect --workers 8
  tjc controller --policy /etc/tjc/policies --policy-values /etc/tjc/values.yaml
  tjc controller --policy-reports                  PolicyReports for Policy Reporter

Before it builds, every TrainJob goes through admission (schema, CEL and webhook rules) and the
policy packs (the built-in ones unless --no-default-policies, plus --policy folders, with the
exemptions of --policy-values); one that fails gets the Failed condition and no JobSet. The
--policy-values file and the --policy folders are read again when they change (a mounted
ConfigMap updated in place); a version that does not load keeps the last good settings (an
error log line, and a Warning event on the controller's Pod). Exemptions expire on the day of
each decision, not of the start. With --policy-reports, each namespace gets a PolicyReport
named trainjob-compiler (the ClusterTrainingRuntimes a ClusterPolicyReport): per object and
rule, pass, fail, warn or skip (exempted), written again when an object, its runtime, the
settings or the day change.

Serves Prometheus metrics on /metrics and probes on /healthz and /readyz (--metrics-port).
exit codes: 0 stopped by a signal, 1 lost the leader lease, 2 usage error (also: no usable
kubeconfig, the metrics port taken).
"""


def register(verbs: Any) -> None:
    """Add the `controller` verb."""
    parser = verbs.add_parser("controller", help=HELP, description=HELP[0].upper() + HELP[1:]
                              + ".", epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig file (default: "
                        "in-cluster config, then $KUBECONFIG or ~/.kube/config)")
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--namespace", metavar="NS", type=_namespace,
                       help="watch one namespace only")
    scope.add_argument("--all-namespaces", action="store_true",
                       help="watch every namespace (the default)")
    parser.add_argument("--workers", type=bounded(1, 1024), default=4, metavar="N",
                        help="TrainJobs reconciled at once (default 4)")
    parser.add_argument("--metrics-port", type=bounded(0, 65535), default=8080, metavar="P",
                        help="port of /metrics, /healthz and /readyz (default 8080)")
    parser.add_argument("--leader-elect", action="store_true",
                        help="reconcile only while holding the Lease tjc-controller (in "
                        "$POD_NAMESPACE, else default)")
    parser.add_argument("--policy-reports", action="store_true",
                        help="keep a PolicyReport (wgpolicyk8s.io/v1alpha2) per namespace, and "
                        "a ClusterPolicyReport, with what the admission and the policy packs "
                        "say of every TrainJob and runtime (the CRDs must be installed)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every retry")
    policy_opts.add_arguments(parser)
    parser.set_defaults(func=run)


def bounded(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer from low to high (a usage error otherwise, not a crash
    once the controller is running)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer from {low} to {high}, "
                                             f"got {text!r}")
        return value
    return parse


def _namespace(text: str) -> str:
    """An argparse type: a namespace name (DNS-1123 label); `../x` would be a URL path."""
    from compiler.kube.objectmeta import is_dns1123_label

    problems = is_dns1123_label(text)
    if problems:
        raise argparse.ArgumentTypeError(f"{text!r} is not a namespace name: {problems[0]}")
    return text


# The modules of the `[controller]` extra (pyproject.toml), checked before the controller is
# imported: without them `tjc controller` says how to install them instead of a traceback.
EXTRA_MODULES = ("kubernetes", "urllib3")
HINT = ("tjc {verb} needs the controller extra ({missing} is not installed): "
        "pip install 'trainjob-compiler[controller]'")


def missing_extra() -> str | None:
    """The first module of the controller extra that cannot be imported, or None."""
    import importlib.util

    for name in EXTRA_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return name
    return None


def run(args: argparse.Namespace) -> int:
    """Start the controller."""
    missing = missing_extra()
    if missing is not None:
        hint = HINT.format(verb="controller", missing=missing)
        print(f"tjc controller: error: {hint}", file=sys.stderr)
        return 2
    from compiler.controller.kubeconfig import KubeconfigError
    from compiler.controller.manager import Options, StartupError
    from compiler.controller.manager import run as run_controller

    policies = live_policies(args)
    collect.started()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(message)s")
    options = Options(kubeconfig=args.kubeconfig, namespace=args.namespace,
                      workers=args.workers, metrics_port=args.metrics_port,
                      leader_elect=args.leader_elect, policies=policies,
                      policy_reports=args.policy_reports)
    try:
        return run_controller(options)
    except (KubeconfigError, StartupError) as exc:
        print(f"tjc controller: error: {exc}", file=sys.stderr)
        return 2


def live_policies(args: argparse.Namespace) -> LivePolicies | None:
    """The policy set the options ask for (a setup error here stops the start, exit 2),
    built again the same way whenever the settings files change; None without packs."""
    from compiler.controller.livepolicy import LivePolicies

    def load() -> PolicySet | None:
        checker = policy_opts.build(args)
        return checker.policies if checker is not None else None

    first = load()
    if first is None:
        return None
    return LivePolicies(first, load, policy_opts.watched(args))
