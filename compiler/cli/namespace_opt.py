"""`--namespace NS` and `--default-namespace NS`: the namespace the inputs are applied into, for
`tjc render` and `tjc validate` (one verdict for both), as `args.placement`.

GitOps tools apply a folder's objects into a namespace its files need not name; what
upstream's controller makes for a TrainJob carries the TrainJob's namespace (Flux's broker
address names it), so tjc must know it. `--namespace` is `kubectl apply -n NS`: a TrainJob or
TrainingRuntime without a namespace is in NS, one naming another namespace is an error.
`--default-namespace` is how Argo CD (an application's destination namespace) and Helm (the
release namespace) apply: only those without a namespace are in NS, the others keep theirs.
The rules themselves are `compiler.io.placement`'s; this module only reads the flags.
"""

from __future__ import annotations

import argparse

from compiler.io.placement import Placement


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --namespace and --default-namespace as `placement` (the last one given counts, so
    arguments appended to a fixed command line, as the Argo CD plugin's, can change it)."""
    group = parser.add_argument_group("namespace (where the inputs are applied)")
    group.add_argument("-n", "--namespace", dest="placement", type=_strict, metavar="NS",
                       help="the namespace the inputs are applied into, as kubectl apply -n "
                       "NS: TrainJobs and TrainingRuntimes without one are in NS, one of "
                       "another namespace is an error")
    group.add_argument("--default-namespace", dest="placement", type=_default, metavar="NS",
                       help="as Argo CD and Helm apply: TrainJobs and TrainingRuntimes "
                       "without a namespace are in NS, the others keep theirs")


def _strict(text: str) -> Placement:
    return Placement(_namespace(text), strict=True)


def _default(text: str) -> Placement:
    return Placement(_namespace(text), strict=False)


def _namespace(text: str) -> str:
    """A namespace name (DNS-1123 label), or an argparse error."""
    from compiler.kube.objectmeta import is_dns1123_label  # only when a flag is given

    problems = is_dns1123_label(text)
    if problems:
        raise argparse.ArgumentTypeError(f"{text!r} is not a namespace name: {problems[0]}")
    return text
