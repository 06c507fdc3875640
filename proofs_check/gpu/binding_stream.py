"""`verify --audit` on a Kubernetes-style binding stream: one record per pod bound to a node or
deleted, with a node list giving each node's GPUs (``--nodes-file``, ``proofs_check.gpu.node_list``).

CSV (header row) or JSON lines, columns / fields (``proofs_check.gpu.tabular``)::

    time,event,pod,node,gpus                 {"time": 12.5, "event": "bind", "pod": "p-1", "node": "gpu-07", "gpus": 2}
    12.5,bind,p-1,gpu-07,2                   {"time": 80, "event": "delete", "pod": "p-1"}
    80,delete,p-1,,

* ``event`` is ``bind`` or ``delete``; ``pod`` the pod's name, made unique by the optional
  ``namespace`` column (``namespace/pod``); ``node`` a name from the node list; ``gpus`` the pod's
  GPUs, 0..the largest node capacity. ``node`` and ``gpus`` are required on a bind, optional on a
  delete (when given they must match the binding). ``time`` is optional and not interpreted
  (records are taken in file order).
* A pod is one instance, a job of its own: a Kubernetes binding records no gang, so gang
  completeness is not checked (Φ★ and Φπ depend only on the instances, so SIF is unaffected).
* Pods with 0 GPUs do not take part in GPU placement: their records are skipped and counted.

Input errors (exit 2, file, line and field): an unknown column, a missing field, a value that is
not an integer or out of range, a node not in the node list, a pod of more GPUs than its node has.
Findings (``audit.valid`` violated at that record): a node above its capacity (while it lasts); a
pod bound while already bound (not applied); a pod bound to a listed node without GPUs (not
applied); a delete of a pod that is not bound; a delete whose node or gpus differ from the binding
(the pod is removed). ``audit.sif`` is checked after every record that leaves a valid state
(``proofs_check.gpu.audit_tally``; Φπ and Φ★ per node's own capacity on a mixed node list).
"""
from __future__ import annotations

from typing import Any

from proofs_check.core.verdict import ClaimResult
from proofs_check.gpu.audit_tally import AuditError, AuditTally, Cluster, SifBound
from proofs_check.gpu.node_list import read_node_list, resolve_node
from proofs_check.gpu.rebuilt_state import RebuiltState, Slot
from proofs_check.gpu.tabular import as_int, as_name, records

COLUMNS = ("time", "event", "namespace", "pod", "node", "gpus")
EVENTS = ("bind", "delete")
SKIPPED = "records of pods without GPUs (skipped)"


class BindingAudit:
    """Replays bind / delete records on a :class:`RebuiltState`, reporting to an :class:`AuditTally`."""

    def __init__(self, cluster: Cluster, tally: AuditTally) -> None:
        self.cluster = cluster
        self.state = RebuiltState(cluster)
        self.tally = tally
        self.gpu_free: set[str] = set()  # bound pods with 0 GPUs: their deletes are skipped too

    def record(self, lineno: int, where: str, rec: dict[str, Any]) -> None:
        for key in ("event", "pod"):
            if key not in rec:
                raise AuditError(where, key, "missing (every record gives event and pod)")
        event = rec["event"]
        if event not in EVENTS:
            raise AuditError(where, "event", f"must be {' or '.join(EVENTS)}, got {event!r}")
        pod = as_name(rec["pod"], where, "pod")
        if "namespace" in rec:
            pod = f"{as_name(rec['namespace'], where, 'namespace')}/{pod}"
        problems = self._bind(rec, where, pod) if event == "bind" else self._delete(rec, where, pod)
        if problems is None:
            self.tally.notes[SKIPPED] = self.tally.notes.get(SKIPPED, 0) + 1
            return
        problems += self.state.overfull()
        context = {"pod": pod, "node": rec.get("node"), "time": rec.get("time")}  # named with a finding
        if problems:
            self.tally.invalid_line(lineno, problems, context)
        else:
            self.tally.valid_line(lineno, self.cluster, self.state.counts, self.state.partial, context)

    def _bind(self, rec: dict[str, Any], where: str, pod: str) -> list[str] | None:
        """The problems of one bind (None: a pod without GPUs, skipped)."""
        for key in ("node", "gpus"):
            if key not in rec:
                raise AuditError(where, key, "missing (a bind gives node and gpus)")
        name = as_name(rec["node"], where, "node")
        node = resolve_node(self.cluster, name, where, "node")
        gpus = as_int(rec["gpus"], where, "gpus", 0, self.cluster.max_capacity)
        if gpus == 0:
            self.gpu_free.add(pod)
            return None
        if node is not None:
            self.cluster.require_fits(node, gpus, where, "gpus")
        if pod in self.state.jobs:
            return [f"pod {pod} bound to node {name} but already bound to node "
                    f"{self.cluster.label(self.state.jobs[pod][0].node)}"]
        if node is None:
            return [f"pod {pod} bound to node {name}, which has no GPUs"]
        self.state.add(pod, (Slot(node, gpus),))
        return []

    def _delete(self, rec: dict[str, Any], where: str, pod: str) -> list[str] | None:
        """The problems of one delete (None: a pod without GPUs, skipped)."""
        node = resolve_node(self.cluster, as_name(rec["node"], where, "node"), where, "node") if "node" in rec else None
        gpus = as_int(rec["gpus"], where, "gpus", 0, self.cluster.max_capacity) if "gpus" in rec else None
        if pod in self.gpu_free:
            self.gpu_free.discard(pod)
            return None
        if pod not in self.state.jobs:
            return [f"pod {pod} deleted but not bound"]
        (slot,) = self.state.remove(pod)
        was = f"bound to node {self.cluster.label(slot.node)} with {slot.g} GPUs"
        if "node" in rec and node != slot.node:
            return [f"pod {pod} deleted from node {rec['node']} but {was}"]
        if gpus is not None and gpus != slot.g:
            return [f"pod {pod} deleted with {gpus} GPUs but {was}"]
        return []


def audit_bindings(path: str, nodes_file: str, bound: SifBound, progress: bool = False) -> tuple[list[ClaimResult], str]:
    """Check every record of a binding stream; returns (audit.valid, audit.sif) and a text report."""
    cluster = read_node_list(nodes_file)
    tally = AuditTally(path, bound, progress=progress)
    if cluster.gpu_less:
        tally.notes["listed nodes without GPUs (not in N)"] = len(cluster.gpu_less)
    audit = BindingAudit(cluster, tally)
    for lineno, where, rec in records(path, COLUMNS, "binding stream"):
        audit.record(lineno, where, rec)
    if not tally.lines:
        raise AuditError(path, None, "no bind or delete record of a pod with GPUs")
    return tally.results(f"audit {path} (binding stream, {cluster.describe()} from {nodes_file}): "
                         f"{tally.lines} records, SIF bound {bound}")
