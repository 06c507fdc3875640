"""The node list of an audited cluster (``verify --audit … --nodes-file FILE``): each node's name
and GPU capacity, as CSV (``node,gpus`` header) or JSON lines (``{"node": "gpu-07", "gpus": 8}``).

Nodes are numbered in file order. A node with 0 GPUs (a CPU node of a Kubernetes cluster) is not
part of the GPU cluster — it does not count in N — but its name is kept, so that a GPU instance
bound to it is a finding rather than an unknown node. A repeated name, a missing field or a
negative count is bad input (file, line, field).
"""
from __future__ import annotations

from typing import Any

from heuristics.gpu.snapshot import SnapshotError, read_text
from proofs_check.gpu.audit_tally import AuditError, Cluster
from proofs_check.gpu.k8s_events import K8sOptions, documents, is_kubernetes, read_nodes
from proofs_check.gpu.tabular import as_int, as_name, records

COLUMNS = ("node", "gpus")


def read_node_list(path: str) -> Cluster:
    """The cluster of the GPU nodes listed in ``path`` (names kept; GPU-less nodes set apart).
    A ``kubectl get nodes -o json`` NodeList is read too (``nvidia.com/gpu`` allocatable)."""
    if _is_node_document(path):
        return _from_kubernetes(path)
    names: list[str] = []
    caps: list[int] = []
    gpu_less: set[str] = set()
    seen: set[str] = set()
    for _, where, rec in records(path, COLUMNS, "node list"):
        for key in COLUMNS:
            if key not in rec:
                raise AuditError(where, key, "missing (a node list gives node and gpus)")
        name = as_name(rec["node"], where, "node")
        if name in gpu_less or name in seen:
            raise AuditError(where, "node", f"node {name!r} listed twice")
        seen.add(name)
        gpus = as_int(rec["gpus"], where, "gpus", 0)
        if gpus == 0:
            gpu_less.add(name)
        else:
            names.append(name)
            caps.append(gpus)
    if not caps:
        raise AuditError(path, None, "no node with GPUs in the node list")
    return Cluster(tuple(caps), tuple(names), frozenset(gpu_less))


def resolve_node(cluster: Cluster, value: Any, where: str, field: str) -> int | None:
    """A host as a node index; None for a listed node without GPUs. A node index (0..N-1, GPU
    nodes in list order) or, when the nodes have names, a name; anything else is bad input."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < cluster.n_nodes:
            raise AuditError(where, field, f"node {value} outside 0..{cluster.n_nodes - 1}")
        return value
    if not isinstance(value, str):
        raise AuditError(where, field, f"{value!r} is not a node (an index or a name)")
    index = cluster.index_of.get(value)
    if index is not None:
        return index
    if value in cluster.gpu_less:
        return None
    if cluster.names is None:
        raise AuditError(where, field, f"unknown node {value!r}: the nodes are numbered 0..{cluster.n_nodes - 1}")
    raise AuditError(where, field, f"unknown node {value!r} (not in the node list)")


def _is_node_document(path: str) -> bool:
    """A JSON file whose first value is a Kubernetes object or list (kubectl output)."""
    try:
        head = read_text(path).lstrip()[:1]  # a pipe's text is kept for the reader that follows
    except SnapshotError:
        return False
    if head != "{":
        return False
    try:
        first = next(documents(path), None)
    except AuditError:
        return False
    return first is not None and is_kubernetes(first[2])


def _from_kubernetes(path: str) -> Cluster:
    names: list[str] = []
    caps: list[int] = []
    gpu_less: set[str] = set()
    for where, node in read_nodes(path, K8sOptions()):
        if node.name in gpu_less or node.name in names:
            raise AuditError(where, "metadata.name", f"node {node.name!r} listed twice")
        if node.gpus:
            names.append(node.name)
            caps.append(node.gpus)
        else:
            gpu_less.add(node.name)
    if not caps:
        raise AuditError(path, None, "no node with GPUs in the node list")
    return Cluster(tuple(caps), tuple(names), frozenset(gpu_less))
