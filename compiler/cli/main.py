"""`tjc`: parse the command line, dispatch to a verb, map outcomes to exit codes.

Exit codes: 0 success (warnings and notices allowed), 1 an input has errors, 2 usage error or
unreadable input. Never prints a traceback for bad input.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from collections.abc import Sequence

from compiler import __version__
from compiler.cli import collect, pipes

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2

# The verbs in the order `tjc --help` lists them; verb V lives in `compiler.cli.V_cmd`.
VERBS = ("render", "validate", "runtimes", "explain", "policies", "controller", "webhook", "run",
         "krm", "diff", "argocd", "completion")

DESCRIPTION = """\
Compile Kubeflow Trainer v2 TrainJobs and their runtimes into exactly the JobSet (and side
objects) Kubeflow Trainer v2.3.0 would create, without a cluster.

exit codes:
  0  success (warnings and notices may have been printed)
  1  an input has errors (each printed as file:line:col: severity: ...)
  2  usage error, or an input that cannot be read
"""

EPILOG = """\
examples (run from the repository's top folder):
  tjc render examples/                      render every TrainJob below a folder
  tjc render examples/custom-runtime/ -o json   a TrainJob with its own runtime, as JSON
  cat examples/jax-mnist.yaml | tjc render -    read from stdin
  tjc validate examples/ -o sarif           check everything offline, as SARIF
  tjc runtimes list                         the runtimes a TrainJob can reference
  tjc explain examples/jax-mnist.yaml       who set which field of the output
  tjc policies list                         the CUE policy rules tjc applies
  kustomize build examples/gitops/base | tjc render --passthrough -   a whole app rendered
  tjc diff --git main HEAD examples/        what a change does to the JobSets
  source <(tjc completion bash)             shell completion (bash, zsh, fish)
"""


class _Parser(argparse.ArgumentParser):
    """argparse that exits with code 2 and a one-line message on usage errors."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The `tjc` parser with every verb, or with the verb `only` alone (a command line that
    starts with a verb needs no other: each verb's module, with its imports, is loaded only
    when the verb is registered)."""
    parser = _Parser(prog="tjc", description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"tjc {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="COMMAND", parser_class=_Parser)
    verbs.required = True
    for verb in VERBS if only is None else (only,):
        importlib.import_module(f"compiler.cli.{verb}_cmd").register(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `tjc`; returns the exit code (the console script exits with it)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv and argv[0] in VERBS else None)
    args = parser.parse_args(argv)
    with pipes.guarded():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    # Imported here, after `entry` has set the collector's thresholds (start-up).
    from compiler.common.diagnostics import one_line
    from compiler.common.errors import InputError, PolicyError

    try:
        code: int = args.func(args)
    except PolicyError as exc:
        for diag in exc.diagnostics:
            print(diag.text(), file=sys.stderr)
        return EXIT_USAGE
    except InputError as exc:
        print(one_line(f"tjc: {exc.diagnostic.message}"), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    return code


def entry() -> None:
    """Console-script entry point.

    Collections are rare while the command starts (`compiler.cli.collect`), and everything
    alive at the end is frozen, so the exit collection has nothing to walk."""
    collect.starting()
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    entry()
