"""Where the inputs are applied: TrainJobs and TrainingRuntimes placed in a namespace.

GitOps files often name no namespace: the tool that applies them gives it (`kubectl apply -n`,
an Argo CD application's destination, a Helm release's namespace). The API server stores such
an object in that namespace, and what upstream's controller makes for a TrainJob carries it
(every object's metadata.namespace, Flux's broker address). `placed` gives a document that
namespace before anything reads it: the runtime table, validation, the compile, the output.
Two rules, as the tools have them: `kubectl apply -n NS` refuses an object naming another
namespace (`strict`); Argo CD and Helm apply such an object into its own namespace.

Called by `compiler.io.inputs` (every input TrainJob and runtime) and the CLI (previous
versions, extra runtimes). Pure: never changes a document, reads no option itself.
"""

from __future__ import annotations

from dataclasses import replace

from compiler.common.diagnostics import Diagnostic, ObjectRef, error
from compiler.common.records import dataclass
from compiler.io.loader import Document

TRAINER_API = "trainer.kubeflow.org/v1alpha1"
NAMESPACED_KINDS = ("TrainJob", "TrainingRuntime")
MISMATCH = "TJC-INPUT-NAMESPACE-MISMATCH"


@dataclass(frozen=True)
class Placement:
    """The namespace the inputs are applied into; `strict`: one naming another is refused."""

    namespace: str
    strict: bool = True


def placed(doc: Document, where: Placement | None) -> Document | Diagnostic:
    """A TrainJob or TrainingRuntime as the API server stores it when applied as `where`
    says: without metadata.namespace it is in `where.namespace`; one naming another namespace
    keeps it, or with `strict` is an error at metadata.namespace, as kubectl's ("the
    namespace from the provided object does not match the namespace sent on the request").
    Any other document, or any document when `where` is None, comes back as it is."""
    found = in_namespace(doc, where)
    meta = found.data.get("metadata")
    have = meta.get("namespace") if isinstance(meta, dict) else None
    if where is None or not where.strict or not isinstance(have, str) or \
            have == where.namespace or not _namespaced(found):
        return found
    name = meta.get("name") if isinstance(meta, dict) else None
    path = ("metadata", "namespace")
    message = (f"namespace {have} does not match {where.namespace}, the namespace the inputs "
               f"are applied into (--namespace); kubectl apply -n {where.namespace} refuses it "
               f"too: leave metadata.namespace out or make it {where.namespace}")
    obj = ObjectRef(found.kind, name if isinstance(name, str) else "", have)
    return replace(error(MISMATCH, message, path), obj=obj).at(doc.locate(path))


def in_namespace(doc: Document, where: Placement | None) -> Document:
    """A TrainJob or TrainingRuntime without metadata.namespace, as a copy in
    `where.namespace`; any other document as it is."""
    meta = doc.data.get("metadata")
    if where is None or not isinstance(meta, dict) or not _namespaced(doc) or \
            meta.get("namespace") not in (None, ""):
        return doc
    return replace(doc, data={**doc.data, "metadata": {**meta, "namespace": where.namespace}})


def _namespaced(doc: Document) -> bool:
    return doc.data.get("apiVersion") == TRAINER_API and doc.kind in NAMESPACED_KINDS
