"""Which pods waited because of fragmentation (issue 24, item 2).

A *waiting unit* is a pending pod, or the pending members of one gang (``k8s_events.GANG_KEYS``):
w instances of g GPUs. At every record of the audited stream while it waits, :func:`cause`
classifies why no schedulable node set could host it, from the free GPUs of the present,
uncordoned nodes only (node selectors, taints, affinities and quotas are not in a GPU count, so
"a node fits" means the wait had another reason):

* :attr:`WaitCause.NO_NODE_LARGE_ENOUGH` — g is above every schedulable node's capacity;
* :attr:`WaitCause.FITS` — Σ_n ⌊free_n / g⌋ ≥ w: the GPUs were there, node by node;
* :attr:`WaitCause.TOO_FEW_FREE` — Σ_n free_n < g·w: the cluster was full;
* :attr:`WaitCause.FRAGMENTATION` — enough free GPUs in total, but no w nodes with room for g:
  the unit waited because the free GPUs were split across nodes.

The time between two records is charged to the cause seen at the first of them. At the first
fragmentation moment of a unit the free GPUs per node are kept, and the exact minimum number of
migrations that would have admitted it (``oracle.gpu.min_migration.min_migrations_to_admit``, the
``admit`` oracle, on the schedulable nodes; pods on cordoned nodes stay where they are) is asked
by the auditor through :meth:`WaitTracker.observe`'s ``admit`` callback. :func:`summary`: pods
waited, GPU-hours waited, the fragmentation-blocked share.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Sequence


class WaitCause(Enum):
    FRAGMENTATION = "fragmentation"
    TOO_FEW_FREE = "too few free GPUs"
    NO_NODE_LARGE_ENOUGH = "no node large enough"
    FITS = "a node had room (another constraint)"


class WaitEnd(Enum):
    BOUND = "bound"
    DELETED = "deleted before binding"
    STILL_WAITING = "still waiting at the end of the log"


def cause(free: Sequence[int], capacities: Sequence[int], g: int, w: int) -> WaitCause:
    """Why w instances of g GPUs find no host among nodes with ``free`` GPUs (module docstring)."""
    if not capacities or g > max(capacities):
        return WaitCause.NO_NODE_LARGE_ENOUGH
    if sum(f // g for f in free) >= w:
        return WaitCause.FITS
    if sum(free) < g * w:
        return WaitCause.TOO_FEW_FREE
    return WaitCause.FRAGMENTATION


@dataclass(frozen=True)
class Admission:
    """The admit oracle's answer: migrations (None unless proven) and its status word."""

    migrations: int | None
    status: str
    moves: tuple[str, ...] = ()


@dataclass(frozen=True)
class BlockedMoment:
    """The first record at which a unit waited for fragmentation."""

    time: float | None
    where: str
    free_total: int
    free_per_node: tuple[tuple[str, int, int], ...]  # (node, free, capacity), free > 0, most free first
    admission: Admission | None


@dataclass
class Wait:
    """One waiting unit (a pod, or a gang's pending pods) from its first pending record."""

    unit: str
    gang: bool
    g: int
    since: float | None
    since_where: str
    pending: set[str] = field(default_factory=set)
    pods: set[str] = field(default_factory=set)
    until: float | None = None
    end: WaitEnd = WaitEnd.STILL_WAITING
    seconds: dict[WaitCause, float] = field(default_factory=dict)
    last: tuple[float | None, WaitCause] | None = None
    blocked: BlockedMoment | None = None
    failed_scheduling: int = 0
    message: str = ""

    @property
    def w(self) -> int:
        return len(self.pending) or len(self.pods)

    @property
    def waited(self) -> float | None:
        return None if self.since is None or self.until is None else max(0.0, self.until - self.since)

    def to_json(self) -> dict[str, Any]:
        b = self.blocked
        return {"unit": self.unit, "gang": self.gang, "pods": sorted(self.pods), "g": self.g, "w": len(self.pods),
                "since": _iso(self.since), "until": _iso(self.until), "end": self.end.value,
                "waited s": self.waited,
                "seconds by cause": {c.value: round(s, 3) for c, s in self.seconds.items()},
                "failed scheduling events": self.failed_scheduling, "scheduler message": self.message or None,
                "first fragmentation": None if b is None else {
                    "time": _iso(b.time), "record": b.where, "free GPUs": b.free_total,
                    "free per node": [{"node": n, "free": f, "capacity": c} for n, f, c in b.free_per_node],
                    "min migrations to admit": None if b.admission is None else b.admission.migrations,
                    "admit status": None if b.admission is None else b.admission.status,
                    "moves": [] if b.admission is None else list(b.admission.moves)}}


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    from datetime import datetime, timezone
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


AdmitFn = Callable[[int, int], Admission]  # (g, w) -> the admit oracle's answer now


class WaitTracker:
    """The waiting units of one audit, updated record by record (see the module docstring)."""

    def __init__(self, admit_limit: int = 100) -> None:
        self.waits: dict[str, Wait] = {}
        self.open: dict[str, Wait] = {}
        self.admit_left = admit_limit
        self.admit_skipped = 0

    def pending(self, unit: str, pod: str, g: int, gang: bool, now: float | None, where: str) -> None:
        """``pod`` (of ``unit``) is pending at this record."""
        wait = self.open.get(unit)
        if wait is None:
            wait = Wait(unit, gang, g, now, where)
            self.open[unit] = wait
            self.waits[f"{unit}@{where}"] = wait
        wait.g = max(wait.g, g)
        wait.pending.add(pod)
        wait.pods.add(pod)

    def resolved(self, unit: str, pod: str, now: float | None, end: WaitEnd) -> None:
        """``pod`` of ``unit`` stopped waiting (bound or deleted)."""
        wait = self.open.get(unit)
        if wait is None or pod not in wait.pending:
            return
        wait.pending.discard(pod)
        if not wait.pending:
            self._charge(wait, now)
            wait.until, wait.end = now, end
            del self.open[unit]

    def observe(self, now: float | None, where: str, free: Sequence[int], capacities: Sequence[int],
                names: Sequence[str], admit: AdmitFn) -> None:
        """The cluster after a record: classify every open unit's wait."""
        for wait in self.open.values():
            c = cause(free, capacities, wait.g, wait.w)
            self._charge(wait, now)
            wait.last = (now, c)
            if c is WaitCause.FRAGMENTATION and wait.blocked is None:
                per_node = sorted(((n, f, cap) for n, f, cap in zip(names, free, capacities) if f > 0),
                                  key=lambda x: (-x[1], x[0]))
                if self.admit_left > 0:
                    self.admit_left -= 1
                    admission: Admission | None = admit(wait.g, wait.w)
                else:
                    self.admit_skipped += 1
                    admission = None
                wait.blocked = BlockedMoment(now, where, sum(free), tuple(per_node), admission)

    def finish(self, now: float | None) -> list[Wait]:
        """Close the log: units still open are still waiting; every unit, in order of start."""
        for wait in self.open.values():
            self._charge(wait, now)
            wait.until = now
        self.open.clear()
        return list(self.waits.values())

    @staticmethod
    def _charge(wait: Wait, now: float | None) -> None:
        if wait.last is None:
            return
        then, c = wait.last
        if then is not None and now is not None and now > then:
            wait.seconds[c] = wait.seconds.get(c, 0.0) + now - then
        wait.last = (now, c)


@dataclass(frozen=True)
class Summary:
    """The question's answer in figures."""

    units: int
    pods: int
    blocked_units: int
    blocked_pods: int
    gpu_hours_waited: float
    gpu_hours_blocked: float

    @property
    def blocked_share(self) -> float | None:
        """The fragmentation-blocked share of the GPU-hours waited."""
        return None if not self.gpu_hours_waited else self.gpu_hours_blocked / self.gpu_hours_waited

    def to_json(self) -> dict[str, Any]:
        return {"waiting units": self.units, "pods waited": self.pods,
                "units blocked by fragmentation": self.blocked_units,
                "pods blocked by fragmentation": self.blocked_pods,
                "GPU-hours waited": round(self.gpu_hours_waited, 4),
                "GPU-hours blocked by fragmentation": round(self.gpu_hours_blocked, 4),
                "fragmentation-blocked share": None if self.blocked_share is None else round(self.blocked_share, 4)}


def summary(waits: Sequence[Wait]) -> Summary:
    """Pods waited, GPU-hours waited (g × pods × wait), and how much of it was fragmentation."""
    blocked = [w for w in waits if w.blocked is not None]
    waited = sum(w.g * len(w.pods) * (w.waited or 0.0) for w in waits) / 3600
    frag = sum(w.g * len(w.pods) * w.seconds.get(WaitCause.FRAGMENTATION, 0.0) for w in waits) / 3600
    return Summary(len(waits), sum(len(w.pods) for w in waits), len(blocked),
                   sum(len(w.pods) for w in blocked), waited, frag)


def report_lines(waits: Sequence[Wait], limit: int = 20) -> list[str]:
    """The text report: the summary, then one line per unit blocked by fragmentation."""
    s = summary(waits)
    share = "—" if s.blocked_share is None else f"{100 * s.blocked_share:.1f} %"
    out = [f"waits: {s.pods} pods waited ({s.units} units), {s.blocked_pods} pods ({s.blocked_units} units) "
           f"blocked by fragmentation; GPU-hours waited {s.gpu_hours_waited:.2f}, blocked by fragmentation "
           f"{s.gpu_hours_blocked:.2f} ({share})"]
    blocked = [w for w in waits if w.blocked is not None]
    for w in blocked[:limit]:
        b = w.blocked
        assert b is not None
        nodes = ", ".join(f"{n} {f}/{c}" for n, f, c in b.free_per_node[:6]) + (" …" if len(b.free_per_node) > 6 else "")
        adm = b.admission
        mig = ("not computed (--admit-limit)" if adm is None else
               f"{adm.migrations} migration(s) would admit it" + (f" ({'; '.join(adm.moves[:3])}"
                                                                 f"{' …' if len(adm.moves) > 3 else ''})" if adm.moves else "")
               if adm.migrations is not None else f"admit oracle: {adm.status}")
        frag_s = w.seconds.get(WaitCause.FRAGMENTATION, 0.0)
        out.append(f"  {'gang ' if w.gang else 'pod '}{w.unit} ({len(w.pods)}×{w.g} GPUs) waited from "
                   f"{_iso(w.since) or w.since_where} to {_iso(w.until) or '?'} ({w.end.value}; {frag_s:.0f} s for "
                   f"fragmentation); at {_iso(b.time) or b.where}: {b.free_total} GPUs free, no node fits — free per "
                   f"node: {nodes}; {mig}")
    if len(blocked) > limit:
        out.append(f"  … {len(blocked) - limit} more in --json")
    return out
