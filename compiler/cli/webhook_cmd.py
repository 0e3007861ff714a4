"""`tjc webhook`: serve the validating admission webhook for TrainJobs and runtimes."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from compiler.cli import collect, controller_cmd, policy_opts

HELP = "serve the admission webhook: refuse at kubectl apply what the controller would fail"
EPILOG = """\
examples:
  tjc webhook                                      certificate in /etc/tjc/tls, port 9443
  tjc webhook --tls-dir /run/secrets/webhook --port 8443
  tjc webhook --policy /etc/tjc/policies --policy-values /etc/tjc/values.yaml

Answers AdmissionReviews (admission.k8s.io/v1) on POST /validate for TrainJobs,
TrainingRuntimes and ClusterTrainingRuntimes, created or updated, with the controller's
verdict: admission (schema, CEL and webhook rules, immutable fields against the old object)
and the policy packs with the exemptions of --policy-values. A refusal names each rule id and
field path; warnings, and the exemptions used, come back as admission warnings. The
--policy-values file, the --policy folders and the certificate (tls.crt and tls.key of
--tls-dir, a mounted kubernetes.io/tls Secret as cert-manager writes it) are read again when
they change. deploy/webhook/ holds the manifests (ValidatingWebhookConfiguration, Service,
Deployment, Certificate).

Probes: GET /healthz and /readyz (ready once the runtimes are listed), on the same port.
exit codes: 0 stopped by a signal, 2 usage error (also: no usable kubeconfig, a certificate
that does not load, the port taken).
"""


def register(verbs: Any) -> None:
    """Add the `webhook` verb."""
    parser = verbs.add_parser("webhook", help=HELP, description=HELP[0].upper() + HELP[1:]
                              + ".", epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig file (default: "
                        "in-cluster config, then $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--tls-dir", default="/etc/tjc/tls", metavar="DIR",
                        help="folder of tls.crt and tls.key (default /etc/tjc/tls)")
    parser.add_argument("--port", type=controller_cmd.bounded(1, 65535), default=9443,
                        metavar="P", help="HTTPS port (default 9443)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log every request and its time")
    policy_opts.add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Start the webhook."""
    missing = controller_cmd.missing_extra()
    if missing is not None:
        hint = controller_cmd.HINT.format(verb="webhook", missing=missing)
        print(f"tjc webhook: error: {hint}", file=sys.stderr)
        return 2
    from compiler.controller.kube import Kube, client_from_kubeconfig
    from compiler.controller.kubeconfig import KubeconfigError
    from compiler.controller.servingcert import CertificateError, ServingCertificate
    from compiler.controller.webhookserver import StartupError
    from compiler.controller.webhookserver import run as serve

    policies = controller_cmd.live_policies(args)
    collect.started()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s")
    try:
        certificate = ServingCertificate(Path(args.tls_dir))
        kube = Kube(client_from_kubeconfig(args.kubeconfig))
        return serve(kube, certificate, args.port, policies)
    except (CertificateError, KubeconfigError, StartupError) as exc:
        print(f"tjc webhook: error: {exc}", file=sys.stderr)
        return 2
