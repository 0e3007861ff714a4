"""`tjc runtimes`: list the runtimes TrainJobs can refer to, or show one of them.

Holds the `runtimes` verb. The runtimes are the built-in ClusterTrainingRuntimes plus those given
with `--runtimes` (a user runtime replaces the built-in one of the same kind and name, with a
notice, as in `tjc render` and `tjc validate`). Called by `compiler.cli.main`. It only reports
what the runtime documents say: it neither validates nor compiles them (that is `tjc validate`
and `tjc render`), and it writes nothing but stdout and stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from typing import Any

from compiler.common.diagnostics import Diagnostic, Severity, has_errors, one_line
from compiler.common.jsondata import Obj
from compiler.core.plugins import registry
from compiler.core.resolve import runtime_key
from compiler.io import emit
from compiler.io.builtin import builtin_runtimes
from compiler.io.inputs import kind_of, runtime_table
from compiler.io.loader import Document, Source, parse_source, read_sources
from compiler.kube.defaults import apply_defaults

FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
SUPPORT_LABEL = "trainer.kubeflow.org/support"
COLUMNS = (("NAME", "name"), ("KIND", "kind"), ("NAMESPACE", "namespace"),
           ("FRAMEWORK", "framework"), ("ML POLICY", "mlPolicy"), ("NODES", "numNodes"),
           ("DEPRECATED", "deprecated"), ("IMAGES", "images"))

HELP = "list the runtimes TrainJobs can refer to, or show one"
EPILOG = """\
actions:
  list       one row per runtime (the default): kind, framework label, ML policy, numNodes
             (after CRD defaults), deprecation and images; sorted by kind, then name
  show NAME  the runtime document(s) named NAME, as loaded: the ClusterTrainingRuntime and
             every TrainingRuntime of that name (--namespace NS keeps only the TrainingRuntime
             of namespace NS)

exit codes: 0 ok (notices allowed), 1 an unknown NAME or a broken --runtimes input, 2 usage
error or unreadable input.

examples:
  tjc runtimes                                  the built-in runtimes, as a table
  tjc runtimes list -o json                     the same as JSON, for scripts
  tjc runtimes show torch-distributed           one runtime as YAML
  tjc runtimes --runtimes examples/custom-runtime/ list   yours too (they override built-ins)
  tjc runtimes show vision-torch --runtimes examples/custom-runtime/ -n team-vision -o json
"""


def register(verbs: Any) -> None:
    """Add the `runtimes` verb to the parser."""
    parser = verbs.add_parser("runtimes", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", nargs="?", choices=("list", "show"), default="list",
                        help="list (default) or show NAME")
    parser.add_argument("name", nargs="?", metavar="NAME", help="the runtime to show")
    parser.add_argument("-o", "--output", choices=("yaml", "json"),
                        help="output format (default: a table for list, yaml for show)")
    parser.add_argument("--runtimes", action="append", default=[], metavar="PATH",
                        help="runtime documents of your own (file or folder); they replace "
                        "built-in runtimes of the same kind and name; may be repeated")
    parser.add_argument("--no-builtin-runtimes", action="store_true",
                        help="do not load the built-in ClusterTrainingRuntimes")
    parser.add_argument("-n", "--namespace", metavar="NS",
                        help="only the TrainingRuntimes of namespace NS")
    parser.add_argument("-q", "--quiet", action="store_true", help="do not print notices")
    parser.set_defaults(func=run, runtimes_parser=parser)


def run(args: argparse.Namespace) -> int:
    """Load the runtimes, print the list or the named runtime, return the exit code."""
    usage = _usage_problem(args)
    if usage:
        args.runtimes_parser.error(usage)  # exits with code 2
    builtin = () if args.no_builtin_runtimes else builtin_runtimes()
    docs, diagnostics = load_runtimes(read_sources(args.runtimes), builtin)
    for diag in diagnostics:
        if not (args.quiet and diag.severity is Severity.NOTICE):
            print(diag.text(), file=sys.stderr)
    if args.namespace is not None:
        docs = [doc for doc in docs if _in_namespace(doc, args.namespace)]
    code = show(docs, args) if args.action == "show" else list_runtimes(docs, args.output)
    return code or (1 if has_errors(diagnostics) else 0)


def _usage_problem(args: argparse.Namespace) -> str:
    if args.action == "show" and not args.name:
        return "show needs the NAME of a runtime"
    if args.action == "list" and args.name:
        return f"list takes no NAME (got {args.name!r}); did you mean: show {args.name}?"
    return ""


def _in_namespace(doc: Document, namespace: str) -> bool:
    """Whether `doc` is a TrainingRuntime of `namespace`."""
    key = runtime_key(doc.data)
    return key.kind == "TrainingRuntime" and key.namespace == namespace


def load_runtimes(sources: Sequence[Source], builtin: Sequence[Document]
                  ) -> tuple[list[Document], list[Diagnostic]]:
    """The runtimes (user ones replacing built-ins) sorted by kind, name and namespace, with
    the override notices and the problems of the user sources (non-runtime kinds skipped)."""
    table, notes = runtime_table(sources, builtin)
    problems = [p for source in sources for p in _source_problems(source)]
    docs = sorted((entry.doc for entry in table.values()), key=_sort_key)
    return docs, problems + notes


def _source_problems(source: Source) -> Iterator[Diagnostic]:
    docs, problems = parse_source(source)
    yield from problems
    for doc in docs:
        kind = kind_of(doc)
        if isinstance(kind, Diagnostic):
            yield kind


def _sort_key(doc: Document) -> tuple[str, str, str]:
    key = runtime_key(doc.data)
    return key.kind, key.name, key.namespace


def summary(doc: Document) -> Obj:
    """One runtime's row: the fields `list` prints (absent values are None)."""
    data = doc.data
    key = runtime_key(data)
    meta = data.get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    labels = labels if isinstance(labels, dict) else {}
    spec = apply_defaults(key.kind, data).get("spec") if key.kind else None
    policy = spec.get("mlPolicy") if isinstance(spec, dict) else None
    nodes = policy.get("numNodes") if isinstance(policy, dict) else None
    framework = labels.get(FRAMEWORK_LABEL)
    return {
        "name": key.name, "kind": key.kind, "namespace": key.namespace or None,
        "framework": framework if isinstance(framework, str) else None,
        "mlPolicy": ml_policy(policy),
        "numNodes": nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else None,
        "images": images(spec), "deprecated": labels.get(SUPPORT_LABEL) == "deprecated",
        "source": doc.source.name,
    }


def ml_policy(policy: Any) -> str | None:
    """Which ML policy sources are set (`+`-joined, in registry order; each plugin names the
    source it stands for), `plain` for none, None without mlPolicy."""
    if not isinstance(policy, dict):
        return None
    found = [p.ml_source for p in registry()
             if p.ml_source and policy.get(p.ml_source) is not None]
    return "+".join(found) or "plain"


def images(spec: Any) -> list[str]:
    """The distinct container images of a runtime spec's JobSet template, in order (per
    replicated job: init containers, then containers)."""
    out: list[str] = []
    for pod in _pod_specs(spec):
        for field in ("initContainers", "containers"):
            containers = pod.get(field)
            for container in containers if isinstance(containers, list) else []:
                image = container.get("image") if isinstance(container, dict) else None
                if isinstance(image, str) and image and image not in out:
                    out.append(image)
    return out


def _pod_specs(spec: Any) -> Iterator[Obj]:
    jobs = _dig(spec, "template", "spec", "replicatedJobs")
    for job in jobs if isinstance(jobs, list) else []:
        pod = _dig(job, "template", "spec", "template", "spec")
        if isinstance(pod, dict):
            yield pod


def _dig(value: Any, *path: str) -> Any:
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def list_runtimes(docs: Sequence[Document], output: str | None) -> int:
    """Print one row (or object) per runtime."""
    rows = [summary(doc) for doc in docs]
    if output == "json":
        sys.stdout.write(emit.to_json(rows))
    elif output == "yaml":
        sys.stdout.write(yaml_list(rows))
    elif rows:
        sys.stdout.write(table(rows))
    else:
        print("tjc runtimes: no runtimes", file=sys.stderr)
    return 0


def yaml_list(rows: Sequence[Obj]) -> str:
    """Canonical YAML of a list of objects (one sequence document)."""
    if not rows:
        return "[]\n"
    lines: list[str] = []
    for row in rows:
        first, *rest = emit.to_yaml(row).splitlines()
        lines += [f"- {first}", *(f"  {line}" for line in rest)]
    return "\n".join(lines) + "\n"


def table(rows: Sequence[Obj]) -> str:
    """Aligned text columns; NAMESPACE only when a TrainingRuntime is listed."""
    namespaced = any(row["namespace"] for row in rows)
    columns = [c for c in COLUMNS if namespaced or c[1] != "namespace"]
    cells = [[title for title, _ in columns]]
    cells += [[_cell(row[field]) for _, field in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    return "".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)
                             ).rstrip() + "\n" for line in cells)


def _cell(value: Any) -> str:
    """A table cell, control characters escaped: a runtime's name, label or image is the
    runtime author's text and must not move the terminal's cursor or start a new row."""
    if value is None or value is False or value == []:
        return "-"
    if value is True:
        return "yes"
    if isinstance(value, list):
        return one_line(",".join(value))
    return one_line(str(value))


def show(docs: Sequence[Document], args: argparse.Namespace) -> int:
    """Print every runtime named `args.name`; exit 1 naming the known ones if there is none."""
    found = [doc for doc in docs if runtime_key(doc.data).name == args.name]
    if not found:
        names = sorted({runtime_key(doc.data).name for doc in docs})
        where = f"TrainingRuntime {args.name!r} in namespace {args.namespace}" \
            if args.namespace is not None else f"runtime named {args.name!r}"
        print(one_line(f"tjc runtimes: no {where}; available: {', '.join(names) or 'none'}"),
              file=sys.stderr)
        return 1
    if args.output == "json":
        objects = [doc.data for doc in found]
        sys.stdout.write(emit.to_json(objects[0]) if len(objects) == 1
                         else emit.json_list(objects))
    else:
        sys.stdout.write("".join(one_line(f"# {_title(doc)} from {doc.source.name}") + "\n---\n"
                                 f"{emit.to_yaml(doc.data)}" for doc in found))
    return 0


def _title(doc: Document) -> str:
    key = runtime_key(doc.data)
    name = f"{key.namespace}/{key.name}" if key.namespace else key.name
    return f"{key.kind} {name}"
