"""Golden case files: one txtar-style file per case, inputs and expectations side by side.

Format (after cue's testdata): a header of `#` lines saying why the case exists and which
upstream behaviour or test case it pins, then sections `-- NAME --`. Sections under `want/`
are expectations (`want/objects.yaml`, `want/diagnostics.txt`); every other section is an
input file, loaded as if it were a file of that name. A header line `# flags: ...` passes
render flags (a parenthesised remark may follow them): `--no-builtin-runtimes`,
`--no-validate` (compile a TrainJob the cluster would reject, to pin what upstream's controller
builds for it), `--explain` (also compare `tjc explain` with `want/explain.txt`),
`--mpi-ssh-key=PATH` (a key file relative to the repository root) to render MPI SSH Secrets,
and `--trainer-version=vX.Y.Z` to render as that Kubeflow Trainer release does (its built-in
runtimes, CRDs, webhook rules and gates; such a case is also held to that release's oracle by
`tests/parity/test_releases.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.common.diagnostics import Diagnostic
from compiler.core.context import CompileOptions
from compiler.core.release import release_of
from compiler.explain.explainer import Explainer, find_runtime
from compiler.io import emit, sshkeys
from compiler.io.builtin import builtin_runtimes
from compiler.io.loader import Document, Source, parse_source
from compiler.kube.releases import DEFAULT
from compiler.pipeline.session import JobResult
from compiler.render.pipeline import render_stream

SECTION = re.compile(r"^-- (?P<name>\S+) --$", re.MULTILINE)
ROOT = Path(__file__).resolve().parent.parent
GOLDEN_DIR = ROOT / "golden"


@dataclass
class Case:
    """A parsed golden file."""

    path: Path
    header: str
    inputs: dict[str, str] = field(default_factory=dict)
    wants: dict[str, str] = field(default_factory=dict)

    @property
    def flags(self) -> list[str]:
        """Render flags named in the header."""
        for line in self.header.splitlines():
            if line.startswith("# flags:"):
                return line.split(":", 1)[1].split("(", 1)[0].split()
        return []

    @property
    def release(self) -> str:
        """The Kubeflow Trainer release the case renders for (`--trainer-version=`)."""
        found = [f.split("=", 1)[1] for f in self.flags if f.startswith("--trainer-version=")]
        return found[0] if found else DEFAULT


def parse(path: Path) -> Case:
    """Read a golden file."""
    text = path.read_text(encoding="utf-8")
    parts = SECTION.split(text)
    case = Case(path=path, header=parts[0])
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        target = case.wants if name.startswith("want/") else case.inputs
        target[name] = body[1:] if body.startswith("\n") else body
    return case


def run(case: Case) -> dict[str, str]:
    """Render the case's inputs; the actual text of every `want/` section."""
    sources = [Source(name, text) for name, text in case.inputs.items()]
    builtin = () if "--no-builtin-runtimes" in case.flags else builtin_runtimes(case.release)
    keys = [f.split("=", 1)[1] for f in case.flags if f.startswith("--mpi-ssh-key=")]
    options = CompileOptions(ssh_keys=sshkeys.from_file(str(ROOT / keys[0])) if keys else None,
                             trainer_version=case.release)
    objects: list[dict[str, Any]] = []
    diagnostics: list[Diagnostic] = []
    validate = "--no-validate" not in case.flags
    for item in render_stream(sources, builtin, options, validate=validate):
        if isinstance(item, JobResult):
            objects.extend(item.objects)
            diagnostics.extend(item.diagnostics)
        else:
            diagnostics.append(item)
    actual = {
        "want/objects.yaml": emit.yaml_stream(objects),
        "want/diagnostics.txt": "".join(d.text() + "\n" for d in diagnostics),
    }
    if "--explain" in case.flags:
        actual["want/explain.txt"] = _explain(sources, builtin, case.release)
    return actual


def _explain(sources: list[Source], builtin: Sequence[Document], release: str) -> str:
    """`tjc explain` of every TrainJob of the case, one after the other."""
    docs = [d for source in sources for d in parse_source(source)[0]]
    out = []
    for doc in docs:
        if doc.data.get("kind") == "TrainJob":
            runtime = find_runtime(doc, [*docs, *builtin])
            out.append(runtime.text() + "\n" if isinstance(runtime, Diagnostic)
                       else Explainer(doc, runtime, release=release_of(release)).text())
    return "\n".join(out)


def format_case(case: Case, actual: dict[str, str]) -> str:
    """The golden file text with `want/` sections replaced by `actual`."""
    out = [case.header.rstrip("\n") + "\n"]
    for name, body in case.inputs.items():
        out.append(f"-- {name} --\n{body}")
    for name in ("want/objects.yaml", "want/diagnostics.txt", "want/explain.txt"):
        if name in actual:
            out.append(f"-- {name} --\n{actual[name]}")
    return "".join(out)


def cases() -> list[Path]:
    """Every golden file, sorted."""
    return sorted(GOLDEN_DIR.glob("*.txtar"))
