"""What a policy view of a compiled JobSet (`CompileOptions.policy_view`) holds as the full
compile does, for `tjc validate`, which compiles only to check the JobSet.

A view leaves out the container fields of `VIEW_SKIPS` that the plugins and the JobSet builder
write (env, ports, volume mounts, envFrom). Its violations are those of the full JobSet when
every pack applied to it reads none of those fields (`reads_in_view`, from the pack's read
trie: the same pruned input, so the same result, by plan or by CUE), and they are located the
same way when the value at each violation's path does not hold any of them (`holds_in_view`);
otherwise the caller compiles in full. Pure.
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.core.context import VIEW_SKIPS
from compiler.policy.prune import Node

Path = tuple[str | int, ...]

_LISTS = ("containers", "initContainers")


def reads_in_view(reads: Node) -> bool:
    """Whether a pack whose read trie is `reads` reads nothing a policy view leaves out: not
    the JobSet's replicatedJobs (`object`), no skipped field of a container, no whole
    container, pod spec or view list."""
    if reads.whole or reads.anything is not None or not _object(reads.named.get("object")):
        return False
    containers, pods = reads.named.get("containers"), reads.named.get("pods")
    if containers is not None and not _items(containers, _container_view):
        return False
    return pods is None or _items(pods, lambda item: _pod(item.named.get("spec")))


def _object(node: Node | None) -> bool:
    """The JobSet read outside its replicatedJobs (a runtime rule's `object.spec.mlPolicy`
    is no field of a JobSet)."""
    if node is None:
        return True
    spec = node.named.get("spec")
    return not (node.whole or node.anything is not None or (spec is not None and (
        spec.whole or spec.shape or spec.anything is not None
        or "replicatedJobs" in spec.named)))


def _items(node: Node, item_ok: Callable[[Node], bool]) -> bool:
    """A view list read item by item (never whole, never by index), each item as allowed."""
    if node.whole or node.named:
        return False
    item = node.anything
    return item is None or (not item.whole and item_ok(item))


def _container_view(item: Node) -> bool:
    """An element of `containers`: its container read field by field (none skipped), its pod
    as a pod spec."""
    if item.anything is not None:
        return False
    container = item.named.get("container")
    if container is not None and (container.whole or container.shape
                                  or container.anything is not None
                                  or VIEW_SKIPS & set(container.named)):
        return False
    return _pod(item.named.get("pod"))


def _pod(spec: Node | None) -> bool:
    """A pod spec read without its containers and not whole."""
    return spec is None or not (spec.whole or spec.shape or spec.anything is not None
                                or any(name in spec.named for name in _LISTS))


def holds_in_view(path: Path) -> bool:
    """Whether the value at `path` of a JobSet is the same in its policy view: a field below
    a container other than a skipped one, or one outside every container."""
    if len(path) < 2 or path[:2] != ("spec", "replicatedJobs"):
        return len(path) >= 2  # spec.suspend, metadata...; not the whole spec
    # spec.replicatedJobs[i].template.spec.template.spec.<pod field>...
    shape = ("spec", "replicatedJobs", None, "template", "spec", "template", "spec")
    for depth, part in enumerate(shape):
        if len(path) == depth:
            return False  # a list, job or template holding containers
        if part is not None and path[depth] != part:
            return depth >= 3  # a job field (name, replicas) or a template's other field
    if len(path) == len(shape) or path[7] not in _LISTS:
        return len(path) > len(shape)
    return len(path) >= 10 and path[9] not in VIEW_SKIPS
