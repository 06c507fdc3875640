"""`verify --audit` on what kubectl writes: a Pod (and Node) watch stream or PodList, with the
nodes from a NodeList, and optionally the Events list (issue 24, items 1, 2 and 4).

Records are read by ``proofs_check.gpu.k8s_events``; this module replays them on a
:class:`~proofs_check.gpu.rebuilt_state.RebuiltState` over every node ever seen, reports to the
two audit claims (``proofs_check.gpu.audit_tally``) and tracks the waits
(``proofs_check.gpu.fragmentation_wait``).

* A pod *holds* GPUs while it has ``spec.nodeName`` and its phase is not Succeeded/Failed; the
  audit applies a binding when that starts (bind) and when it ends (deleted, or finished and not
  yet deleted: its GPUs are free again). A deleted pod that was never bound is a wait that ended,
  not a finding. Every record that changes a binding, and every node joining or leaving, is a line
  of the audit (SIF checked after it); every other record is counted by reason.
* Nodes: the NodeList (``--nodes-file``) is the cluster at the start; Node objects in the stream
  join (ADDED), cordon / uncordon (MODIFIED ``spec.unschedulable``) and leave (DELETED) as they
  happen. N and Φ★ are over the present GPU nodes; a node's pods are lost with it (released, their
  later records counted). Nodes without GPUs are not in N; a GPU pod bound to one is a finding.
  A node whose GPU count changes keeps its first count (counted).
* Findings (``audit.valid``), each naming the record's line, pod, node and time: a node above its
  allocatable GPUs; a GPU pod bound to a node without GPUs, to an unknown or removed node, or with
  more GPUs than any node has (not applied); a bound pod moved to another node.
* Waits: a pod with GPUs and no node, not finished, waits until it is bound or deleted; gang
  members wait as one unit. FailedScheduling events (``--k8s-events``) are attached to the pod's
  wait (count, last message); their pods not seen waiting in the stream are counted.
"""
from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from oracle.gpu.min_migration import min_migrations_to_admit
from proofs_check.core.verdict import ClaimResult, Verdict
from proofs_check.gpu.audit_tally import AuditError, AuditTally, Cluster, SifBound
from proofs_check.gpu.fragmentation_wait import Admission, WaitEnd, WaitTracker, report_lines, summary
from proofs_check.gpu.k8s_events import (
    Change,
    EventReason,
    GpuKind,
    K8sOptions,
    NodeView,
    PodView,
    Skipped,
    SkipReason,
    WatchType,
    changes,
    read_nodes,
    scheduling_events,
)
from proofs_check.gpu.rebuilt_state import RebuiltState, Slot

PROGRESS_EVERY = 5.0  # seconds between progress lines on stderr


@dataclass(frozen=True)
class K8sAuditOptions:
    """The reading options plus the optional Events list and the admit-oracle budget."""

    read: K8sOptions = K8sOptions()
    events_file: str | None = None
    admit_limit: int = 100  # waits whose migrations are computed (the rest: counted)
    admit_time_limit: float = 5.0
    progress: bool = True


_KIND_SKIP = {GpuKind.NONE: SkipReason.NO_GPU, GpuKind.FRACTIONAL: SkipReason.FRACTIONAL, GpuKind.MIG: SkipReason.MIG}


class K8sAudit:
    """The replay (module docstring)."""

    def __init__(self, path: str, nodes: list[tuple[str, NodeView, bool]], tally: AuditTally,
                 options: K8sAuditOptions) -> None:
        gpu = [(w, n, present) for w, n, present in nodes if n.gpus > 0]
        if not gpu:
            raise AuditError(path, None, "no node with GPUs (give --nodes-file with `kubectl get nodes -o json`)")
        self.names = [n.name for _, n, _ in gpu]
        self.caps = [n.gpus for _, n, _ in gpu]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.gpu_less = {n.name for _, n, _ in nodes if n.gpus == 0}
        self.present = [p for _, _, p in gpu]
        self.cordoned = [n.cordoned for _, n, _ in gpu]
        self.superset = Cluster(tuple(self.caps), tuple(self.names), frozenset(self.gpu_less))
        self.state = RebuiltState(self.superset)
        self.used = [0] * len(self.caps)
        self.tally = tally
        self.options = options
        self.waits = WaitTracker(options.admit_limit)
        self.lost: set[str] = set()
        self.refused: dict[str, str | None] = {}  # pods whose binding was a finding, not applied -> node
        self.gang_of: dict[str, str] = {}
        self.skips: Counter[SkipReason] = Counter()
        self.clock: float | None = None
        self._present_cluster: Cluster | None = None
        self.node_events: Counter[str] = Counter()

    # ---------------------------------------------------------------- the cluster now

    def cluster_now(self) -> Cluster | None:
        if self._present_cluster is None:
            idx = [i for i, p in enumerate(self.present) if p]
            if not idx:
                return None
            self._present_cluster = Cluster(tuple(self.caps[i] for i in idx), tuple(self.names[i] for i in idx))
        return self._present_cluster

    def _tick(self, t: float | None) -> float | None:
        if t is not None and (self.clock is None or t > self.clock):
            self.clock = t
        return self.clock

    # ---------------------------------------------------------------- records

    def record(self, rec: Change | Skipped) -> None:
        if isinstance(rec, Skipped):
            self.skips[rec.reason] += 1
            return
        if isinstance(rec.obj, NodeView):
            self._node(rec, rec.obj)
        else:
            self._pod(rec, rec.obj)

    def _pod(self, rec: Change, pod: PodView) -> None:
        now = self._tick(pod.latest_time)
        if pod.kind is not GpuKind.WHOLE:
            self.skips[_KIND_SKIP[pod.kind]] += 1
            return
        key = pod.key
        unit = pod.gang or key
        if pod.gang:
            self.gang_of[key] = pod.gang
        if key in self.lost:
            self.skips[SkipReason.LOST_POD] += 1
            if rec.type is WatchType.DELETED:
                self.lost.discard(key)
            return
        bound = self.state.jobs.get(key)
        holds = rec.type is not WatchType.DELETED and pod.holds_gpus
        context = {"pod": key, "node": pod.node, "time": _iso(now)}
        if bound is None and holds and self.refused.get(key, "") == pod.node:
            self.skips[SkipReason.NO_CHANGE] += 1  # reported once, when it was bound
        elif bound is None and holds:
            self.waits.resolved(unit, key, pod.scheduled or now, WaitEnd.BOUND)
            problems = self._bind(key, pod)
            if problems:
                self.refused[key] = pod.node
            self._line(rec, problems, context)
        elif bound is not None and not holds:
            self._release(key)
            self._line(rec, [], context)
        elif bound is not None:
            (slot,) = bound
            if self.names[slot.node] == pod.node:
                self.skips[SkipReason.NO_CHANGE] += 1
                self._observe(rec)
                return
            self._release(key)
            problems = [f"pod {key} moved from node {self.names[slot.node]} to node {pod.node} (pods do not migrate)"]
            self._line(rec, problems + self._bind(key, pod), context)
        else:
            self.skips[SkipReason.NO_CHANGE] += 1
            if self.refused.pop(key, "") != "":
                return  # a refused binding ended: nothing was applied
            if rec.type is WatchType.DELETED or pod.phase in ("Succeeded", "Failed"):
                self.waits.resolved(unit, key, pod.deleted or now, WaitEnd.DELETED)
            else:
                self.waits.pending(unit, key, pod.gpus, pod.gang is not None, pod.created or now, rec.where)
                self._observe(rec)

    def _bind(self, key: str, pod: PodView) -> list[str]:
        node = pod.node
        assert node is not None
        if node in self.gpu_less:
            return [f"pod {key} ({pod.gpus} GPUs) bound to node {node}, which has no GPUs"]
        n = self.index.get(node)
        if n is None:
            return [f"pod {key} bound to node {node}, which is not a known node"]
        if not self.present[n]:
            return [f"pod {key} bound to node {node}, which has left the cluster"]
        if pod.gpus > self.superset.max_capacity:
            return [f"pod {key} bound to node {node} with {pod.gpus} GPUs, more than any node has"]
        self.state.add(key, (Slot(n, pod.gpus),))
        self.used[n] += pod.gpus
        return []

    def _release(self, key: str) -> None:
        for slot in self.state.remove(key):
            self.used[slot.node] -= slot.g

    def _node(self, rec: Change, node: NodeView) -> None:
        self._tick(node.created)
        n = self.index.get(node.name)
        if n is None:
            self.skips[SkipReason.CPU_NODE] += 1
            return
        if node.gpus != self.caps[n] and rec.type is not WatchType.DELETED:
            self.skips[SkipReason.CAPACITY_CHANGE] += 1
        context = {"node": node.name, "time": _iso(self.clock)}
        if rec.type is WatchType.DELETED:
            if not self.present[n]:
                self.skips[SkipReason.NO_CHANGE] += 1
                return
            self.present[n] = False
            self._present_cluster = None
            gone = [k for k, slots in self.state.jobs.items() if slots[0].node == n]
            for k in gone:
                self._release(k)
                self.lost.add(k)
            self.node_events["nodes removed"] += 1
            self.node_events["pods lost with their node"] += len(gone)
            self._line(rec, [], context)
            return
        if node.cordoned != self.cordoned[n]:
            self.cordoned[n] = node.cordoned
            self.node_events["cordons" if node.cordoned else "uncordons"] += 1
        if self.present[n]:
            self.skips[SkipReason.NO_CHANGE] += 1
            self._observe(rec)
            return
        self.present[n] = True
        self._present_cluster = None
        self.node_events["nodes joined"] += 1
        self._line(rec, [], context)

    # ---------------------------------------------------------------- checks

    def _line(self, rec: Change, problems: list[str], context: dict[str, Any]) -> None:
        problems = problems + self.state.overfull()
        cluster = self.cluster_now()
        if problems:
            self.tally.invalid_line(rec.lineno, problems, context)
        elif cluster is None:
            self.skips[SkipReason.NO_CHANGE] += 1
        else:
            counts = self.state.counts[:cluster.max_capacity]
            self.tally.valid_line(rec.lineno, cluster, counts, self.state.partial, context)
        self._observe(rec)

    def _observe(self, rec: Change) -> None:
        if not self.waits.open:
            return
        idx = [i for i, p in enumerate(self.present) if p and not self.cordoned[i]]
        free = [self.caps[i] - self.used[i] for i in idx]
        self.waits.observe(self.clock, rec.where, free, [self.caps[i] for i in idx],
                           [self.names[i] for i in idx], self._admit_fn(idx))

    def _admit_fn(self, idx: list[int]) -> Callable[[int, int], Admission]:
        def admit(g: int, w: int) -> Admission:
            ids = {name: k for k, name in enumerate(self.state.jobs)}
            where = {i: pos for pos, i in enumerate(idx)}
            nodes: list[list[tuple[int, int]]] = [[] for _ in idx]
            for name, slots in self.state.jobs.items():
                for slot in slots:
                    if slot.node in where:
                        nodes[where[slot.node]].append((ids[name], slot.g))
            caps = [self.caps[i] for i in idx]
            cert = min_migrations_to_admit(nodes, caps, g, w, job_id=len(ids), n_nodes=len(idx),
                                           time_limit=self.options.admit_time_limit)
            names = list(self.state.jobs)
            moves: tuple[str, ...] = ()
            if cert.witness is not None and cert.is_proven:
                moves = tuple(f"{names[m.job]} ({m.g} GPUs) {self.names[idx[m.src]]} → {self.names[idx[m.dst]]}"
                              for m in cert.witness.moves)
            return Admission(cert.objective if cert.is_proven else None, cert.status.value, moves)
        return admit


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    from datetime import datetime, timezone
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def initial_nodes(nodes_file: str | None, records: list[Change | Skipped], opts: K8sOptions,
                  path: str) -> list[tuple[str, NodeView, bool]]:
    """Every node of the audit: the node list's (present from the start), then the stream's in
    order of first appearance (present from their first ADDED, or from the start when the stream
    only modifies or deletes them, i.e. they existed before it)."""
    out: list[tuple[str, NodeView, bool]] = []
    seen: set[str] = set()
    if nodes_file is not None:
        for where, node in read_nodes(nodes_file, opts):
            if node.name in seen:
                raise AuditError(where, "metadata.name", f"node {node.name!r} listed twice")
            seen.add(node.name)
            out.append((where, node, True))
    for rec in records:
        if isinstance(rec, Change) and isinstance(rec.obj, NodeView) and rec.obj.name not in seen:
            seen.add(rec.obj.name)
            out.append((rec.where, rec.obj, rec.type is not WatchType.ADDED))
    if not out:
        raise AuditError(path, None, "no nodes: give --nodes-file (`kubectl get nodes -o json`) or Node objects "
                         "in the stream")
    return out


def audit_k8s(path: str, bound: SifBound, nodes_file: str | None,
              options: K8sAuditOptions = K8sAuditOptions()) -> tuple[list[ClaimResult], str]:
    """Audit a kubectl Pod watch stream / PodList; returns (audit.valid, audit.sif, audit.waits)
    and the text report."""
    records = list(changes(path, options.read))
    nodes = initial_nodes(nodes_file, records, options.read, path)
    tally = AuditTally(path, bound)  # progress is this loop's (records of the whole stream)
    audit = K8sAudit(path, nodes, tally, options)
    t0 = last = time.monotonic()
    for k, rec in enumerate(records, start=1):
        audit.record(rec)
        if options.progress and k % 1000 == 0 and time.monotonic() - last > PROGRESS_EVERY:
            last = time.monotonic()
            print(f"audit {path}: {k:,} of {len(records):,} records, {last - t0:.0f} s", file=sys.stderr, flush=True)
    waits = audit.waits.finish(audit.clock)
    event_note = _attach_events(options.events_file, waits, audit.skips) if options.events_file else []
    for reason, n in sorted(audit.skips.items(), key=lambda kv: kv[0].value):
        tally.notes[f"skipped: {reason.value}"] = n
    for what, n in sorted(audit.node_events.items()):
        tally.notes[what] = n
    if audit.gpu_less:
        tally.notes["nodes without GPUs (not in N)"] = len(audit.gpu_less)
    gangs = {w.unit for w in waits if w.gang} | set(audit.gang_of.values())
    if gangs:
        tally.notes["gangs (pod groups) seen"] = len(gangs)
    if not tally.lines:
        raise AuditError(path, None, "no record binds or releases a pod with GPUs")
    results, text = tally.results(
        f"audit {path} (Kubernetes, {audit.superset.describe()} seen"
        f"{' from ' + nodes_file if nodes_file else ''}): {len(records)} records, {tally.lines} change a "
        f"binding or the nodes, SIF bound {bound}")
    s = summary(waits)
    waits_result = ClaimResult(
        "audit.waits", Verdict.HOLDS,
        f"{s.pods} pods waited, {s.blocked_pods} of them blocked by fragmentation "
        f"({s.gpu_hours_blocked:.2f} of {s.gpu_hours_waited:.2f} GPU-hours waited)",
        results[0].bounds,
        {**s.to_json(), "admit oracle not run (--admit-limit)": audit.waits.admit_skipped,
         "waits": [w.to_json() for w in waits]})
    lines = report_lines(waits) + event_note
    if audit.waits.admit_skipped:
        lines.append(f"  admit oracle not run on {audit.waits.admit_skipped} waits (limit {options.admit_limit})")
    return results + [waits_result], "\n".join([text, *lines, f"audit.waits: MEASURED — {waits_result.message}"])


def _attach_events(events_file: str, waits: list[Any], skips: Counter[SkipReason]) -> list[str]:
    """FailedScheduling events onto the waits of their pods; counts of the rest."""
    events, other = scheduling_events(events_file)
    skips[SkipReason.OTHER_EVENT] += other
    by_pod: dict[str, list[Any]] = {}
    for w in waits:
        for p in w.pods:
            by_pod.setdefault(p, []).append(w)
    unseen, scheduled = set(), 0
    for ev in events:
        if ev.reason is EventReason.SCHEDULED:
            scheduled += 1
            continue
        ws = by_pod.get(ev.pod)
        if not ws:
            unseen.add(ev.pod)
            continue
        for w in ws:
            w.failed_scheduling += ev.count
            w.message = ev.message
    return [f"events {events_file}: {len(events) - scheduled} FailedScheduling, {scheduled} Scheduled, "
            f"{other} other events skipped; {len(unseen)} pods with FailedScheduling never seen waiting in the stream"]
