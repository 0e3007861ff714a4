"""Run `tjc` on generated inputs in a worker process under a memory cap and a time limit, and
check what a user may always expect of it.

The parent (`Worker`) sends one case at a time (a verb, its arguments, the input files) to a
child process started with `resource.setrlimit` (address space and CPU time); the child writes
the files into a scratch folder, runs `compiler.cli.main.main` in-process with an interval
timer as the per-case time limit, and answers with the exit code and both output streams. A
child that dies (a crash, a signal, the CPU limit) or stops answering is reported as such and
replaced. `problems` states the invariants: exit code 0, 1 or 2; no traceback; every line on
stderr (and validate's text report) a located one-line diagnostic; render's output parses.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

MEMORY_CAP = 3 << 30
CASE_SECONDS = 20.0
CPU_SECONDS = 3600
LOCATED = re.compile(r"^(?:<builtin>/)?[^\s:][^:]*:\d+:\d+: (?:error|warning|notice): .* \[[^\]]+\]"
                     r"(?: \(also [^)]*\))*$")
SUMMARY = re.compile(r"^(?:\d+ of \d+ TrainJobs rendered: )?\d+ errors, \d+ warnings, "
                     r"\d+ notices(?: \(\d+ more in the built-in runtimes, .*\))?$")
REPO = Path(__file__).resolve().parents[2]
OUT_OF_MEMORY = "ran out of memory"
RECYCLE = 300


@dataclass
class Case:
    """One run of tjc: `tjc <verb> <args...>` with these files in the current folder."""

    verb: str
    args: list[str]
    files: dict[str, str] = field(default_factory=dict)
    documents: int = 1


@dataclass
class Outcome:
    """What the run gave; `failure` is set when the worker could not finish it normally."""

    code: int = -1
    stdout: str = ""
    stderr: str = ""
    failure: str = ""
    seconds: float = 0.0


def problems(case: Case, out: Outcome) -> list[str]:
    """Every broken promise in one outcome (empty when all hold)."""
    if out.failure:
        return [out.failure]
    found: list[str] = []
    if out.code not in (0, 1, 2):
        found.append(f"exit code {out.code}")
    if "Traceback" in out.stderr or "Traceback" in out.stdout:
        found.append("a traceback was printed")
    report = out.stdout.splitlines() if case.verb == "validate" and "-o" not in case.args \
        else []
    for line in [*out.stderr.splitlines(), *report]:
        if not (LOCATED.match(line) or SUMMARY.match(line)
                or (out.code == 2 and line.startswith("tjc: ")) or line.startswith("usage: ")):
            found.append(f"not a located one-line diagnostic: {line[:200]!r}")
            break
    if case.verb == "render" and out.code in (0, 1) and "--output-dir" not in case.args:
        found += _unparsable("json" in case.args, out.stdout)
    return found


def _unparsable(as_json: bool, text: str) -> list[str]:
    try:
        if as_json:
            json.loads(text)
        else:
            list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    except (ValueError, yaml.YAMLError) as exc:
        return [f"render output does not parse: {str(exc)[:200]}"]
    return []


class Worker:
    """A child process that runs cases; restarted after a crash."""

    def __init__(self, memory: int = MEMORY_CAP, seconds: float = CASE_SECONDS) -> None:
        self.memory, self.seconds = memory, seconds
        self.proc: subprocess.Popen[str] | None = None
        self.count = 0
        self.served = 0

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            memory = self.memory

            def limits() -> None:
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
                resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))

            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.fuzz.harness", str(self.seconds)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO,
                preexec_fn=limits)
        return self.proc

    def run(self, case: Case) -> Outcome:
        """Run one case; a dead or silent child is a failure and gets replaced. The child is
        replaced every RECYCLE cases too (a long-lived process grows by a few hundred KiB per
        run), and a case that ran out of memory is run again in a fresh child: only a case
        that does so alone is a finding."""
        self.served += 1
        if self.served % RECYCLE == 0:
            self.close()
        outcome = self._run(case)
        if outcome.failure == OUT_OF_MEMORY:
            self.close()
            self.count -= case.documents
            outcome = self._run(case)
        return outcome

    def _run(self, case: Case) -> Outcome:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        self.count += case.documents
        try:
            proc.stdin.write(json.dumps(case.__dict__) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            return self._dead(proc)
        ready, _, _ = select.select([proc.stdout], [], [], self.seconds * 3 + 10)
        line = proc.stdout.readline() if ready else ""
        if not line:
            return self._dead(proc)
        return Outcome(**json.loads(line))

    def _dead(self, proc: subprocess.Popen[str]) -> Outcome:
        if proc.poll() is None:
            proc.kill()
        code = proc.wait()
        self.proc = None
        reason = f"killed by signal {-code}" if code < 0 else f"worker exited {code}"
        return Outcome(failure=f"the run did not finish: {reason} (limits: "
                       f"{self.memory >> 20} MiB, {self.seconds:g} s)")

    def close(self) -> None:
        """Stop the child."""
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class _Timeout(BaseException):
    """The per-case time limit passed (a BaseException: tjc's handlers must not catch it)."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def _run_case(case: Case, seconds: float, scratch: Path) -> Outcome:
    from compiler.cli.main import main

    for name, text in case.files.items():
        target = scratch / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8", "surrogatepass"))
    out, err = io.StringIO(), io.StringIO()
    start = time.monotonic()
    outcome = Outcome()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        if case.verb == "differential":
            outcome.code, outcome.failure = _differential(case, scratch, out)
        else:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                outcome.code = main([case.verb, *case.args])
    except SystemExit as exc:
        outcome.code = exc.code if isinstance(exc.code, int) else 2
    except _Timeout:
        outcome.failure = f"took more than {seconds:g} s"
    except MemoryError:
        outcome.failure = OUT_OF_MEMORY
    except Exception:  # what the fuzzer looks for
        outcome.failure = "exception: " + traceback.format_exc(limit=-8)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    outcome.seconds = time.monotonic() - start
    if "--output-dir" in case.args and not outcome.failure:
        outcome.failure = "; ".join(_written_problems(case, scratch))
    outcome.stdout, outcome.stderr = out.getvalue(), err.getvalue()
    return outcome


def _differential(case: Case, scratch: Path, out: io.StringIO) -> tuple[int, str]:
    """The verdicts of every tool (`tests.fuzz.differential`); a disagreement is the failure."""
    from tests.fuzz import differential

    found = differential.verdicts(differential.names_of(case.files), scratch)
    out.write(json.dumps(found))
    return 0, differential.disagreement(found)


def _written_problems(case: Case, scratch: Path) -> list[str]:
    """Render's --output-dir files must parse, and stay inside the folder."""
    out_dir = scratch / case.args[case.args.index("--output-dir") + 1]
    found = []
    for path in scratch.rglob("*"):
        if path.is_file() and path.suffix in (".yaml", ".json") \
                and path.name not in case.files and out_dir in path.parents:
            found += _unparsable(path.suffix == ".json", path.read_text(encoding="utf-8"))
        elif path.is_file() and out_dir not in path.parents and path.name not in case.files:
            found.append(f"a file was written outside --output-dir: {path.relative_to(scratch)}")
    return found


def _serve(seconds: float) -> None:
    """The child: read cases from stdin, answer on stdout, each in a clean scratch folder."""
    signal.signal(signal.SIGALRM, _alarm)
    channel = os.fdopen(os.dup(1), "w")  # fd 1 itself goes to /dev/null: nothing tjc or a
    devnull = os.open(os.devnull, os.O_WRONLY)  # child of it prints can corrupt the answers
    os.dup2(devnull, 1)
    root = Path(tempfile.mkdtemp(prefix="tjc-fuzz-"))
    try:
        for line in sys.stdin:
            scratch = root / "case"
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            os.chdir(scratch)
            outcome = _run_case(Case(**json.loads(line)), seconds, scratch)
            os.chdir(root)
            text = json.dumps(outcome.__dict__, ensure_ascii=True)
            channel.write(text + "\n")
            channel.flush()
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    _serve(float(sys.argv[1]))
