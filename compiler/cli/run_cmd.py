"""`tjc run --local`: compile one TrainJob, then run every pod of its JobSet as a local process.

Parses flags, compiles as `tjc render` does (validation included), hands the objects to
`compiler.localrun` and maps the outcome to an exit code: 0 the JobSet succeeded, 1 it failed
(or the TrainJob has errors), 2 usage error, unreadable input or a JobSet that cannot run
here, 130 interrupted.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler.common.diagnostics import Diagnostic, Severity, has_errors
from compiler.common.launch import LocalLaunch
from compiler.core.context import CompileOptions
from compiler.core.plugins import hooked
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import read_sources
from compiler.pipeline.session import JobResult
from compiler.render.pipeline import render_stream

if TYPE_CHECKING:
    from compiler.localrun import plan, runner

HELP = "run a TrainJob's JobSet as local processes (one per pod) to try it before a cluster"
DESCRIPTION = """\
Compile one TrainJob as `tjc render` does, then run every pod of its JobSet on this machine,
in JobSet order (dependsOn, startupPolicy), each as the process its container would run: the
command and args with the env the kubelet would give (completion index, downward API,
ConfigMap and Secret keys, $(VAR) expansion). Every pod host name is 127.0.0.1 and every
declared container port a free local port; mounted ConfigMaps and Secrets (the MPI hostfile,
SSH keys) become files; `python`, `python3` and `torchrun` run the --python interpreter, and
mpirun reaches its hosts through a local stand-in for ssh. Output lines are prefixed with the
pod name.

exit codes:
  0    the JobSet succeeded (its success policy was met)
  1    the JobSet failed (a pod failed, or --timeout passed), or the TrainJob has errors
  2    usage error, unreadable input, or a JobSet that cannot run locally (the reason is printed)
  130  interrupted (Ctrl-C, SIGTERM or SIGHUP stops every process; a second one during the
       grace period kills them at once)
"""
EPILOG = """\
examples:
  tjc run --local examples/jax-psum.yaml --python .venv-jax/bin/python
  tjc run --local examples/custom-runtime/resnet.yaml \\
      --runtime examples/custom-runtime/runtime.yaml --workdir examples/
  tjc run --local examples/torch-mnist.yaml --ignore-gpus --timeout 300
"""


def register(verbs: Any) -> None:
    """Add the `run` verb to the parser."""
    parser = verbs.add_parser("run", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trainjob", metavar="TRAINJOB", help="a file with one TrainJob")
    parser.add_argument("--local", action="store_true", required=True,
                        help="run on this machine (the only mode; required)")
    parser.add_argument("--runtime", action="append", default=[], metavar="FILE",
                        help="runtime documents besides the built-in ones; may be repeated")
    parser.add_argument("--python", default=sys.executable, metavar="PATH",
                        help="interpreter that stands in for the image's python "
                        "(default: the one running tjc)")
    parser.add_argument("--workdir", default=".", metavar="DIR",
                        help="working directory of every process (default: the current one)")
    parser.add_argument("--ignore-gpus", action="store_true",
                        help="run pods that request GPUs anyway, on the CPU")
    parser.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                        help="fail the JobSet when it has not finished after this long")
    parser.set_defaults(func=run)


def _seconds(text: str) -> float:
    """--timeout: a positive, finite number of seconds (`-1` failed every job at once,
    `nan` and `inf` meant no timeout)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    """Compile, plan and run; print a summary on stderr."""
    from compiler.localrun import plan  # only now: other verbs need not load the runner

    workdir = Path(args.workdir)
    if not workdir.is_dir():
        print(f"tjc: --workdir {args.workdir}: not a directory", file=sys.stderr)
        return 2
    result = _compile(args)
    if isinstance(result, int):
        return result
    with tempfile.TemporaryDirectory(prefix="tjc-run-") as scratch:
        try:
            built = plan.build_plan(result.objects, plan.Options(
                python=args.python, run_dir=Path(scratch), ignore_gpus=args.ignore_gpus,
                launchers=local_launchers()))
        except plan.Refusal as exc:
            print(f"tjc: cannot run {result.name} locally: {exc}", file=sys.stderr)
            return 2
        try:
            outcome = _run_stoppable(built, workdir.resolve(), args.timeout)
        except KeyboardInterrupt:
            print(f"tjc: interrupted; every process of JobSet {built.jobset} was stopped",
                  file=sys.stderr)
            return 130
    _summary(built, outcome)
    return 0 if outcome.succeeded else 1


def local_launchers() -> tuple[LocalLaunch, ...]:
    """Every plugin's launcher hook, in registry order: the runner knows no framework."""
    return tuple(hook for _, hook in hooked(LocalLaunch))


def _run_stoppable(built: plan.Plan, workdir: Path, timeout: float | None) -> runner.Outcome:
    """Run with SIGTERM and SIGHUP handled as Ctrl-C is, so that each stops every process
    (a second one during the grace period kills them at once)."""
    from compiler.localrun import runner

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in _STOPPING}
    try:
        return runner.run(built, workdir, sys.stdout, timeout=timeout)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


_STOPPING = (signal.SIGTERM, signal.SIGHUP)


def _compile(args: argparse.Namespace) -> JobResult | int:
    """The one TrainJob's compiled objects, or the exit code when there are none."""
    from compiler.io import sshkeys  # MPI jobs need their SSH Secret to run

    mine = read_sources([args.trainjob])
    sources = [*mine, *read_sources(args.runtime)]
    options = CompileOptions(ssh_keys=sshkeys.generated())
    jobs: list[JobResult] = []
    failed = False
    for item in render_stream(sources, builtin_runtimes(), options):
        diagnostics = [item] if isinstance(item, Diagnostic) else item.diagnostics
        failed = failed or has_errors(diagnostics)
        for diag in diagnostics:
            if diag.severity is not Severity.NOTICE:
                print(diag.text(), file=sys.stderr)
        if isinstance(item, JobResult) and any(item.trainjob.source is s for s in mine):
            jobs.append(item)
    if len(jobs) != 1:  # a usage error first (two TrainJobs of one name are also an error)
        print(f"tjc: {args.trainjob} must hold exactly one TrainJob, found {len(jobs)}",
              file=sys.stderr)
        return 2
    if failed:
        return 1
    return jobs[0]


def _summary(built: plan.Plan, outcome: runner.Outcome) -> None:
    state = "Succeeded" if outcome.succeeded else "Failed"
    print(f"tjc: JobSet {built.jobset} {state} in {outcome.seconds:.1f}s: {outcome.reason}"
          + (f" (after {outcome.restarts} restarts)" if outcome.restarts else ""),
          file=sys.stderr)
    for job in built.jobs:
        for pod in job.pods:
            code = outcome.exit_codes.get(pod.name)
            shown = pod.stand_in if pod.stand_in else \
                "not started" if pod.name not in outcome.exit_codes else \
                "stopped" if code is None else f"exit {code}"
            print(f"tjc:   {pod.name}: {shown}", file=sys.stderr)
