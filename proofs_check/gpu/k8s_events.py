"""Reading what ``kubectl`` writes: watch-event streams, PodList / NodeList / List documents and
the Events list, as plain frozen records (issue 24, item 1).

Inputs, as kubectl writes them (docs/verify.md, "Kubernetes logs as kubectl writes them"):

* ``kubectl get pods -A -w -o json --output-watch-events`` — a stream of JSON values
  ``{"type": "ADDED"|"MODIFIED"|"DELETED", "object": {Pod}}``, one a line or pretty-printed one
  after another (both are read: the file is a sequence of JSON values). ``BOOKMARK`` and
  ``ERROR`` events are skipped and counted. Node objects (``kubectl get nodes -w …``) may be
  interleaved: a node joining, changing (cordon) or leaving as it happens.
* ``kubectl get pods -A -o json`` / ``kubectl get nodes -o json`` — a ``PodList``/``NodeList``
  (or a ``List`` of Pods/Nodes): each item is read as an ``ADDED`` event of that object.
* ``kubectl get events -A -o json`` — an ``EventList`` (core/v1 ``involvedObject`` or
  events.k8s.io/v1 ``regarding``); the reasons ``Scheduled`` and ``FailedScheduling`` of Pods are
  kept, every other event is skipped and counted.

Semantics (the glue a user would otherwise write, issue 24):

* A pod's GPUs are max(Σ containers, max init container) of the configured resource names
  (``nvidia.com/gpu`` by default), each container's ``requests`` or, if absent, ``limits``
  (Kubernetes' effective request for extended resources). Quantities are strings or numbers.
  A fractional quantity (``"0.5"``, ``"500m"``) or a MIG resource (``nvidia.com/mig-…``) is not
  an error: the pod is marked (:class:`GpuKind`), counted and reported, and takes no part in
  whole-GPU placement.
* Unknown fields are ignored. A missing ``metadata.name`` or a quantity that is no number is bad
  input (:class:`~proofs_check.gpu.audit_tally.AuditError` naming file, line and field).
* Gangs: the first present of the configured labels / annotations (:data:`GANG_KEYS`: Volcano,
  the coscheduling plugin, Kueue; or a user-given key) names the pod's group.
* Timestamps (RFC 3339) are read where the objects carry them: creation, the ``PodScheduled``
  condition, deletion, container termination. Watch events carry no time of their own.

Every function here is pure over the decoded JSON; the audit that replays the records is
``proofs_check.gpu.k8s_audit``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from fractions import Fraction
from typing import Any, Iterator, Mapping, Sequence

from heuristics.gpu.snapshot import read_text
from proofs_check.gpu.audit_tally import AuditError

DEFAULT_GPU_RESOURCES = ("nvidia.com/gpu",)
MIG_PREFIX = "nvidia.com/mig-"
# Pod-group keys, in the order they are looked up (labels first, then annotations).
GANG_KEYS = (
    "scheduling.x-k8s.io/pod-group",  # coscheduling plugin (scheduler-plugins ≥ 0.24)
    "pod-group.scheduling.sigs.k8s.io",  # coscheduling plugin (older label)
    "kueue.x-k8s.io/pod-group-name",  # Kueue plain pod groups
    "scheduling.k8s.io/group-name",  # Volcano (annotation, also set as a label)
    "volcano.sh/job-name",  # Volcano jobs
)
FINISHED_PHASES = ("Succeeded", "Failed")


class WatchType(Enum):
    """A watch event's ``type`` (a List item is read as ADDED)."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


class GpuKind(Enum):
    """What a pod asks of GPUs."""

    NONE = "no GPUs"
    WHOLE = "whole GPUs"
    FRACTIONAL = "fractional GPUs"
    MIG = "MIG slices"


class SkipReason(Enum):
    """Why a record took no part in the audit (each counted and reported)."""

    BOOKMARK = "watch BOOKMARK events"
    ERROR_EVENT = "watch ERROR events"
    OTHER_KIND = "objects that are neither Pod nor Node"
    NO_GPU = "records of pods without GPUs"
    FRACTIONAL = "records of pods with fractional GPU requests"
    MIG = "records of pods with MIG slices"
    NO_CHANGE = "records that change no GPU binding"
    OTHER_EVENT = "events other than Scheduled / FailedScheduling of a pod"
    CPU_NODE = "node records of nodes without GPUs"
    CAPACITY_CHANGE = "node records changing a node's GPU count (the first count kept)"
    LOST_POD = "records of pods lost with their removed node"


class EventReason(Enum):
    """The scheduler events kept from an Events list."""

    SCHEDULED = "Scheduled"
    FAILED_SCHEDULING = "FailedScheduling"


@dataclass(frozen=True)
class K8sOptions:
    """How to read pods: the GPU resource names and the extra gang key (label or annotation)."""

    gpu_resources: tuple[str, ...] = DEFAULT_GPU_RESOURCES
    gang_key: str | None = None


@dataclass(frozen=True)
class PodView:
    """What the audit needs of one Pod object."""

    key: str  # namespace/name
    node: str | None  # spec.nodeName
    phase: str
    gpus: int  # whole GPUs (0 unless kind is WHOLE)
    kind: GpuKind
    gang: str | None  # namespace/group
    created: float | None
    scheduled: float | None  # the PodScheduled condition's True transition
    deleted: float | None  # metadata.deletionTimestamp
    finished: float | None  # the last container termination
    unschedulable: str | None  # PodScheduled False's message (the scheduler's why)

    @property
    def holds_gpus(self) -> bool:
        """Bound to a node and not finished: its GPUs are allocated (deletion is the event)."""
        return self.node is not None and self.phase not in FINISHED_PHASES

    @property
    def latest_time(self) -> float | None:
        times = [t for t in (self.created, self.scheduled, self.deleted, self.finished) if t is not None]
        return max(times) if times else None


@dataclass(frozen=True)
class NodeView:
    """What the audit needs of one Node object: its allocatable GPUs and cordon."""

    name: str
    gpus: int
    cordoned: bool  # spec.unschedulable
    created: float | None


@dataclass(frozen=True)
class Change:
    """One watch event (or List item): where it is, its type, the object read."""

    lineno: int
    where: str
    type: WatchType
    obj: PodView | NodeView


@dataclass(frozen=True)
class Skipped:
    """A record that takes no part (counted by reason)."""

    lineno: int
    where: str
    reason: SkipReason


@dataclass(frozen=True)
class SchedulingEvent:
    """A Scheduled / FailedScheduling event of a pod."""

    pod: str  # namespace/name
    reason: EventReason
    first: float | None
    last: float | None
    count: int
    message: str
    where: str


# ------------------------------------------------------------------------------ documents


def documents(path: str) -> Iterator[tuple[int, str, Any]]:
    """(line, "file:line", value) of every JSON value in ``path``: JSON lines or pretty-printed
    values one after another (kubectl's watch output). Bad JSON names its line and column."""
    text = read_text(path)
    decoder = json.JSONDecoder()
    pos, n = 0, len(text)
    counted, lineno = 0, 1  # line numbers counted incrementally (one pass over the text)
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            return
        lineno += text.count("\n", counted, pos)
        counted = pos
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            line = text.count("\n", 0, e.pos) + 1
            col = e.pos - (text.rfind("\n", 0, e.pos) + 1) + 1
            at = f"column {col}" if line == lineno else f"line {line}, column {col}"
            raise AuditError(f"{path}:{lineno}", None, f"invalid JSON at {at}: {e.msg}") from None
        yield lineno, f"{path}:{lineno}", value
        pos = end


def is_kubernetes(value: Any) -> bool:
    """A watch event or a Kubernetes object / list (format detection)."""
    if not isinstance(value, dict):
        return False
    if "type" in value and isinstance(value.get("object"), dict):
        return True
    return isinstance(value.get("kind"), str) and ("items" in value or "metadata" in value)


def changes(path: str, options: K8sOptions) -> Iterator[Change | Skipped]:
    """Every watch event / List item of ``path``, read (module docstring)."""
    for lineno, where, value in documents(path):
        if not isinstance(value, dict):
            raise AuditError(where, None, "expected a watch event or a Kubernetes object")
        if "type" in value:
            kind = value["type"]
            if kind == "BOOKMARK":
                yield Skipped(lineno, where, SkipReason.BOOKMARK)
                continue
            if kind == "ERROR":
                yield Skipped(lineno, where, SkipReason.ERROR_EVENT)
                continue
            try:
                wtype = WatchType(kind)
            except ValueError:
                raise AuditError(where, "type", f"{kind!r}: expected ADDED, MODIFIED, DELETED, BOOKMARK or ERROR") from None
            obj = value.get("object")
            if not isinstance(obj, dict):
                raise AuditError(where, "object", "a watch event carries the object")
            yield _change(lineno, where, wtype, obj, "object", options)
        elif isinstance(value.get("items"), list):
            for i, item in enumerate(value["items"]):
                if not isinstance(item, dict):
                    raise AuditError(where, f"items[{i}]", "must be an object")
                kind_of_list = value.get("kind", "")
                if "kind" not in item and kind_of_list.endswith("List"):
                    item = {**item, "kind": kind_of_list[:-len("List")]}
                yield _change(lineno, where, WatchType.ADDED, item, f"items[{i}]", options)
        else:
            yield _change(lineno, where, WatchType.ADDED, value, "", options)


def _change(lineno: int, where: str, wtype: WatchType, obj: Mapping[str, Any], at: str,
            options: K8sOptions) -> Change | Skipped:
    kind = obj.get("kind")
    if kind == "Pod":
        return Change(lineno, where, wtype, read_pod(obj, where, at, options))
    if kind == "Node":
        return Change(lineno, where, wtype, read_node(obj, where, at, options))
    if kind is None and isinstance(obj.get("spec"), dict) and "containers" in obj["spec"]:
        return Change(lineno, where, wtype, read_pod(obj, where, at, options))  # kind left out
    return Skipped(lineno, where, SkipReason.OTHER_KIND)


# ------------------------------------------------------------------------------ objects


def _field(at: str, name: str) -> str:
    return f"{at}.{name}" if at else name


def _dict(d: Mapping[str, Any], key: str, where: str, at: str) -> Mapping[str, Any]:
    v = d.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise AuditError(where, _field(at, key), "must be an object")
    return v


def _list(d: Mapping[str, Any], key: str, where: str, at: str) -> Sequence[Any]:
    v = d.get(key)
    if v is None:
        return ()
    if not isinstance(v, list):
        raise AuditError(where, _field(at, key), "must be a list")
    return v


def timestamp(value: Any, where: str, field: str) -> float | None:
    """An RFC 3339 time as POSIX seconds (None when absent)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise AuditError(where, field, f"{value!r} is not an RFC 3339 time")
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise AuditError(where, field, f"{value!r} is not an RFC 3339 time") from None


def quantity(value: Any, where: str, field: str) -> int | Fraction:
    """A Kubernetes quantity of a countable resource: an integer, a decimal or a milli-value
    (an int when whole and written as an integer, the common case, else a Fraction)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise AuditError(where, field, f"{value!r} is not a quantity")
    if isinstance(value, int) and value >= 0:
        return value
    text = str(value).strip()
    if text.isdigit():
        return int(text)
    scale = Fraction(1)
    if text.endswith("m"):
        text, scale = text[:-1], Fraction(1, 1000)
    try:
        q = Fraction(text) * scale
    except (ValueError, ZeroDivisionError):
        raise AuditError(where, field, f"{value!r} is not a GPU count") from None
    if q < 0:
        raise AuditError(where, field, f"{value!r} is negative")
    return q


def pod_gpus(spec: Mapping[str, Any], where: str, at: str, resources: Sequence[str]) -> tuple[int, GpuKind]:
    """(whole GPUs, kind) of a pod spec: max(Σ containers, max init container), each container's
    requests or else limits of the GPU resources; MIG / fractional marked, never an error."""
    def container_gpus(c: Any, cat: str) -> tuple[int | Fraction, bool]:
        if not isinstance(c, dict):
            raise AuditError(where, cat, "a container must be an object")
        res = _dict(c, "resources", where, cat)
        req, lim = _dict(res, "requests", where, f"{cat}.resources"), _dict(res, "limits", where, f"{cat}.resources")
        mig = any(k.startswith(MIG_PREFIX) for k in (*req, *lim))
        total: int | Fraction = 0
        for name in resources:
            src, part = (req, "requests") if name in req else (lim, "limits")
            if name in src:
                total += quantity(src[name], where, f"{cat}.resources.{part}.{name}")
        return total, mig

    regular = [container_gpus(c, _field(at, f"spec.containers[{i}]"))
               for i, c in enumerate(_list(spec, "containers", where, _field(at, "spec")))]
    init = [container_gpus(c, _field(at, f"spec.initContainers[{i}]"))
            for i, c in enumerate(_list(spec, "initContainers", where, _field(at, "spec")))]
    total = max([sum(g for g, _ in regular)] + [g for g, _ in init])
    if total and total.denominator != 1:
        return 0, GpuKind.FRACTIONAL
    if any(m for _, m in regular + init) and not total:
        return 0, GpuKind.MIG
    return int(total), GpuKind.WHOLE if total else GpuKind.NONE


def _name(meta: Mapping[str, Any], where: str, at: str) -> str:
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise AuditError(where, _field(at, "metadata.name"), "missing (every object has a name)")
    return name


def gang_of(meta: Mapping[str, Any], namespace: str, options: K8sOptions) -> str | None:
    """The pod's group (namespace/name) from the first gang key present, labels before annotations."""
    keys = ((options.gang_key,) if options.gang_key else ()) + GANG_KEYS
    for source in ("labels", "annotations"):
        values = meta.get(source)
        if isinstance(values, dict):
            for key in keys:
                v = values.get(key)
                if isinstance(v, str) and v:
                    return f"{namespace}/{v}"
    return None


def read_pod(obj: Mapping[str, Any], where: str, at: str, options: K8sOptions) -> PodView:
    """A Pod object as the audit reads it (module docstring)."""
    meta = _dict(obj, "metadata", where, at)
    spec = _dict(obj, "spec", where, at)
    status = _dict(obj, "status", where, at)
    name = _name(meta, where, at)
    namespace = meta.get("namespace") or "default"
    node = spec.get("nodeName") or None
    if node is not None and not isinstance(node, str):
        raise AuditError(where, _field(at, "spec.nodeName"), "must be a node name")
    gpus, kind = pod_gpus(spec, where, at, options.gpu_resources)
    scheduled, unschedulable = None, None
    for i, cond in enumerate(_list(status, "conditions", where, _field(at, "status"))):
        if isinstance(cond, dict) and cond.get("type") == "PodScheduled":
            t = timestamp(cond.get("lastTransitionTime"), where, _field(at, f"status.conditions[{i}].lastTransitionTime"))
            if cond.get("status") == "True":
                scheduled = t
            elif cond.get("reason") == "Unschedulable":
                unschedulable = str(cond.get("message") or "Unschedulable")
    finished = None
    for i, cs in enumerate(_list(status, "containerStatuses", where, _field(at, "status"))):
        term = cs.get("state", {}).get("terminated") if isinstance(cs, dict) else None
        if isinstance(term, dict):
            t = timestamp(term.get("finishedAt"), where, _field(at, f"status.containerStatuses[{i}].state.terminated.finishedAt"))
            if t is not None and (finished is None or t > finished):
                finished = t
    return PodView(f"{namespace}/{name}", node, str(status.get("phase") or "Pending"), gpus, kind,
                   gang_of(meta, namespace, options),
                   timestamp(meta.get("creationTimestamp"), where, _field(at, "metadata.creationTimestamp")),
                   scheduled, timestamp(meta.get("deletionTimestamp"), where, _field(at, "metadata.deletionTimestamp")),
                   finished, unschedulable)


def read_node(obj: Mapping[str, Any], where: str, at: str, options: K8sOptions) -> NodeView:
    """A Node object: ``status.allocatable`` GPUs (capacity when allocatable is absent), cordon."""
    meta = _dict(obj, "metadata", where, at)
    status = _dict(obj, "status", where, at)
    alloc = _dict(status, "allocatable", where, _field(at, "status"))
    cap = _dict(status, "capacity", where, _field(at, "status"))
    total: int | Fraction = 0
    for name in options.gpu_resources:
        src, part = (alloc, "allocatable") if name in alloc else (cap, "capacity")
        if name in src:
            total += quantity(src[name], where, _field(at, f"status.{part}.{name}"))
    if total.denominator != 1:
        raise AuditError(where, _field(at, "status.allocatable"), f"{total} GPUs is not a whole number")
    spec = _dict(obj, "spec", where, at)
    return NodeView(_name(meta, where, at), int(total), bool(spec.get("unschedulable")),
                    timestamp(meta.get("creationTimestamp"), where, _field(at, "metadata.creationTimestamp")))


def read_nodes(path: str, options: K8sOptions) -> list[tuple[str, NodeView]]:
    """The nodes of a NodeList / List / Node watch file (where, node), in file order."""
    out = []
    for rec in changes(path, options):
        if isinstance(rec, Change) and isinstance(rec.obj, NodeView) and rec.type is not WatchType.DELETED:
            out.append((rec.where, rec.obj))
    if not out:
        raise AuditError(path, None, "no Node object (expected `kubectl get nodes -o json` output)")
    return out


# ------------------------------------------------------------------------------ events


def scheduling_events(path: str) -> tuple[list[SchedulingEvent], int]:
    """The Scheduled / FailedScheduling events of pods in an EventList (or a watch of events),
    and how many other events were skipped."""
    out: list[SchedulingEvent] = []
    skipped = 0
    for _, where, value in documents(path):
        items: Sequence[Any]
        if isinstance(value, dict) and isinstance(value.get("items"), list):
            items = value["items"]
        elif isinstance(value, dict) and isinstance(value.get("object"), dict):
            items = [value["object"]]
        else:
            items = [value]
        for i, ev in enumerate(items):
            if not isinstance(ev, dict):
                raise AuditError(where, f"items[{i}]", "an event must be an object")
            read = read_event(ev, where, f"items[{i}]")
            if read is None:
                skipped += 1
            else:
                out.append(read)
    return out, skipped


def read_event(ev: Mapping[str, Any], where: str, at: str) -> SchedulingEvent | None:
    """One core/v1 or events.k8s.io/v1 Event; None unless a Scheduled / FailedScheduling of a Pod."""
    try:
        reason = EventReason(ev.get("reason"))
    except ValueError:
        return None
    obj = ev.get("involvedObject") or ev.get("regarding")
    if not isinstance(obj, dict) or obj.get("kind") != "Pod":
        return None
    name = obj.get("name")
    if not isinstance(name, str):
        raise AuditError(where, _field(at, "involvedObject.name"), "missing")
    raw_series = ev.get("series")
    series: Mapping[str, Any] = raw_series if isinstance(raw_series, dict) else {}
    first = timestamp(ev.get("firstTimestamp") or ev.get("eventTime"), where, _field(at, "firstTimestamp"))
    last = timestamp(ev.get("lastTimestamp") or series.get("lastObservedTime"), where, _field(at, "lastTimestamp")) or first
    count = ev.get("count") or series.get("count") or 1
    message = str(ev.get("message") or ev.get("note") or "")
    return SchedulingEvent(f"{obj.get('namespace') or 'default'}/{name}", reason, first, last,
                           count if isinstance(count, int) else 1, message, where)
