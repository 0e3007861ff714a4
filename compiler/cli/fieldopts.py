"""`--field-validation`: how validate and render treat unknown fields of Trainer kinds, as
kubectl's `--validate` (strict, its default: the API server refuses such an object; warn: the
API server drops the field and warns; ignore: it drops it silently). Used by the validate and
render verbs; the krm function reads `fieldValidation` from its functionConfig."""

from __future__ import annotations

import argparse

MODES = ("strict", "warn", "ignore")


def add_argument(parser: argparse.ArgumentParser) -> None:
    """Add --field-validation."""
    parser.add_argument("--field-validation", choices=MODES, default="strict",
                        help="unknown fields in TrainJobs and runtimes: errors (strict, the "
                        "default, as kubectl apply), warnings (warn) or nothing (ignore)")
