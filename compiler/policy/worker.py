"""A second process for the JobSet policy stage of `tjc validate` on large inputs.

Checking policies on JobSets means compiling every TrainJob, which `tjc validate` otherwise
need not do. On a large input the parent starts this worker (`python -m
compiler.policy.worker`, loading the same packs, settings and exemptions) and pickles it each valid
TrainJob, defaulted, with its runtime, in batches; the worker compiles them and evaluates the
JobSet rules on the other core while the parent goes on validating. It writes its findings
(rule id, path, message, whether the runtime wrote the field) per TrainJob to a file; the
parent locates them. Whatever goes wrong in the worker, the parent does the stage itself.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from compiler.compile import PreparedRuntime, compile_defaulted, prepare_runtime
from compiler.data import Obj
from compiler.diagnostics import has_errors
from compiler.inputs import RuntimeEntry
from compiler.loader import Document, Source
from compiler.policy.check import Finding, jobset_findings
from compiler.policy.engine import PolicySet, Violation
from compiler.policy.exemptions import Decision
from compiler.policy.packs import Loader

WORKER_ENV = "TJC_POLICY_WORKER"  # "1": always, "0": never, unset: by input size
MIN_BYTES = 1_000_000
BATCH = 256


Where = tuple[str, int, tuple[str | int, ...]]


def where(doc: Document) -> Where:
    """A document's identity, the same in both processes."""
    return doc.source.name, doc.index, tuple(doc.base)


def wanted(sources: Sequence[Source]) -> bool:
    """Whether the inputs are large enough for a worker to pay off (or the env says)."""
    choice = os.environ.get(WORKER_ENV)
    if choice in ("0", "1"):
        return choice == "1"
    return sum(len(s.text) for s in sources) >= MIN_BYTES


def start(policies: PolicySet, sources: Sequence[Source]) -> Worker | None:
    """A worker for these inputs, when the policies have JobSet rules and it pays off."""
    if not any("JobSet" in r.applies_to for r in policies.rules()) or not wanted(sources):
        return None
    return Worker(policies)


class Worker:
    """A running worker: `submit` each valid TrainJob, `wait()`, then read `findings(doc)`."""

    def __init__(self, policies: PolicySet) -> None:
        import subprocess  # here, not at the top: a small input never starts a worker
        import tempfile

        self.policies = policies
        self._results: dict[Where, list[Finding]] = {}
        self._runtimes: dict[int, int] = {}
        self._batch: list[Any] = []
        handle, self._path = tempfile.mkstemp(prefix="tjc-policy-", suffix=".jsonl")
        os.close(handle)
        self._proc = subprocess.Popen([sys.executable, "-m", "compiler.policy.worker"],
                                      stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        self._send({"packs": [str(p.path) for p in policies.packs],
                    "values": policies.settings, "skip": sorted(policies.skip),
                    "exemptions": policies.exemptions, "today": policies.today,
                    "out": self._path})

    def _send(self, message: Any) -> None:
        import pickle

        try:
            assert self._proc.stdin is not None
            pickle.dump(message, self._proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        except (OSError, ValueError):
            pass  # the worker died: wait() says so, and the parent does the stage itself

    def submit(self, doc: Document, trainjob: Obj, runtime: RuntimeEntry) -> None:
        """Queue one valid TrainJob (defaulted) and its runtime."""
        number = self._runtimes.get(id(runtime))
        if number is None:
            number = self._runtimes[id(runtime)] = len(self._runtimes)
            self._batch.append(("runtime", number, runtime.doc.data))
        self._batch.append(("trainjob", where(doc), number, trainjob))
        if len(self._batch) >= BATCH:
            self._send(self._batch)
            self._batch = []

    def findings(self, doc: Document) -> list[Finding]:
        """What the worker found in the JobSet of one TrainJob (after `wait`)."""
        return self._results.get(where(doc), [])

    def wait(self) -> bool:
        """Finish the input, wait for the worker and read its findings; False if it failed."""
        self._send(self._batch)
        self._send(None)
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
        except OSError:
            pass
        results = self._read()
        self._results = results or {}
        return results is not None

    def _read(self) -> dict[Where, list[Finding]] | None:
        try:
            if self._proc.wait() != 0:
                return None
            rules = {r.id: r for r in self.policies.rules()}
            out: dict[Where, list[Finding]] = {}
            for line in Path(self._path).read_text(encoding="utf-8").splitlines():
                item = json.loads(line)
                key = (item["where"][0], item["where"][1], tuple(item["where"][2]))
                out[key] = [Finding(Violation(rules[f["rule"]], tuple(f["path"]), f["message"],
                                              _decision(f.get("exempted"))),
                                    f["runtime"]) for f in item["findings"]]
            return out
        except (OSError, ValueError, KeyError):
            return None
        finally:
            Path(self._path).unlink(missing_ok=True)


def run(stream: BinaryIO) -> None:
    """The worker's side: every submitted TrainJob's JobSet findings, a JSON line each."""
    import pickle

    setup = pickle.load(stream)
    packs = Loader(setup["values"]).load_all([Path(p) for p in setup["packs"]])
    policies = PolicySet(packs, setup["skip"], exemptions=setup["exemptions"],
                         today=setup["today"])
    runtimes: dict[int, PreparedRuntime] = {}
    with open(setup["out"], "w", encoding="utf-8") as out:
        while (batch := pickle.load(stream)) is not None:
            for item in batch:
                if item[0] == "runtime":
                    runtimes[item[1]] = prepare_runtime(item[2])
                    continue
                found = _findings(item[3], runtimes[item[2]], policies)
                if found:
                    out.write(json.dumps({"where": item[1], "findings": [
                        {"rule": f.violation.rule.id, "path": f.violation.path,
                         "message": f.violation.message, "runtime": f.from_runtime,
                         "exempted": _exempted(f.violation.exempted)}
                        for f in found]}) + "\n")


def _exempted(decision: Decision | None) -> list[str] | None:
    if decision is None:
        return None
    return [decision.kind, decision.justification, decision.remark]


def _decision(raw: list[str] | None) -> Decision | None:
    return None if raw is None else Decision(*raw)


def _findings(trainjob: Obj, prepared: PreparedRuntime, policies: PolicySet) -> list[Finding]:
    compiled = compile_defaulted(trainjob, prepared)
    jobset = next((o for o in compiled.objects if o.get("kind") == "JobSet"), None)
    if has_errors(compiled.diagnostics) or jobset is None:
        return []
    return jobset_findings(policies, trainjob, prepared, jobset)


if __name__ == "__main__":
    run(sys.stdin.buffer)
