"""Job events, the actions of every GPU-cluster state model, and the facts a state implies.

An event is a job arrival (w instances of g GPUs, gang) or a job departure. ``job`` is the job's
label in the representative state just before the event: a representative labels its k running
jobs 0..k-1, so an arriving job gets label k (``proofs_check.gpu.canonical``).
"""
from __future__ import annotations

from typing import Any, Final, NamedTuple

from heuristics.gpu.abs_space import AbsView, NodeView, SlotView
from heuristics.gpu.cluster import Instance, Job, Placement
from heuristics.gpu.policy import EventResult
from proofs_check.gpu.canonical import FlatState

_new: Final = tuple.__new__  # Final: a C static in the compiled build (heuristics.gpu.abs_store)
_JOB: Final = Job


class Event(NamedTuple):
    """A job event; ``job`` is the label in the representative state just before the event.

    ``choices`` are the options the scheduler took at its tie points during the event
    (``heuristics.gpu.ties``; empty: option 0 everywhere, the default tie-breaking)."""

    arrive: bool
    job: int
    g: int
    w: int
    choices: tuple[int, ...] = ()

    def __str__(self) -> str:
        ties = f" ties {','.join(map(str, self.choices))}" if self.choices else ""
        return f"{'+' if self.arrive else '-'}J{self.job} (g={self.g},w={self.w}){ties}"

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"event": "arrive" if self.arrive else "depart", "job": self.job, "g": self.g,
                             "w": self.w}
        if self.choices:
            d["choices"] = list(self.choices)
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Event":
        if d.get("event") not in ("arrive", "depart"):
            raise ValueError(f"event must be 'arrive' or 'depart', got {d.get('event')!r}")
        return Event(d["event"] == "arrive", int(d["job"]), int(d["g"]), int(d["w"]),
                     tuple(int(c) for c in d.get("choices", ())))


class Round(NamedTuple):
    """An input from the environment, not a job: the start of the scheduler's next round
    (``next_round()``, for schedulers with a clock or rounds such as FFT and DRR). ``choices`` as
    for an :class:`Event`."""

    choices: tuple[int, ...] = ()

    @property
    def arrive(self) -> bool:
        return False

    def __str__(self) -> str:
        ties = f" ties {','.join(map(str, self.choices))}" if self.choices else ""
        return f"next round{ties}"

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"event": "round"}
        if self.choices:
            d["choices"] = list(self.choices)
        return d


Action = Event | Round


def action_from_json(d: dict[str, Any]) -> Action:
    """An :class:`Event` or a :class:`Round` from its ``to_json``."""
    if d.get("event") == "round":
        return Round(tuple(int(c) for c in d.get("choices", ())))
    return Event.from_json(d)


def apply_event(pol: Any, e: Event) -> EventResult:
    """Run event ``e`` on scheduler ``pol`` (any object with ``arrive(Job)`` and ``depart(id)``)."""
    # tuple.__new__: the NamedTuple's own __new__ is a Python-level function, and this runs once per transition
    arrive, job, g, w, _ = e  # unpacked, not four attribute look-ups (compiled: a tuple access)
    return pol.arrive(_new(_JOB, (job, g, w))) if arrive else pol.depart(job)


def is_arrival(e: Event) -> bool:
    return e.arrive


def is_departure(e: Event) -> bool:
    return not e.arrive


def job_events(running: dict[int, Job], free: int, demands: tuple[int, ...], max_jobs: int,
               max_w: int) -> list[Event]:
    """Every admissible event, in the search's fixed order: arrivals (by g, then w) of g in the
    family and 1 ≤ w ≤ max_w with w·g ≤ free GPUs while fewer than ``max_jobs`` jobs run, then
    the departure of each running job by label."""
    label = len(running)
    while label in running:  # only for states that are not representatives
        label += 1
    events: list[Event] = []
    if len(running) < max_jobs:
        events += _arrivals(label, free, demands, max_w)
    for j, (_, g, w) in sorted(running.items()):
        events.append(_departure(j, g, w))
    return events


# The departure of one (label, g, w), as ``_ARRIVALS``: few such keys, one per expanded state and job.
_DEPARTURES: Final[dict[tuple[int, int, int], Event]] = {}


def _departure(job: int, g: int, w: int) -> Event:
    key = (job, g, w)
    made = _DEPARTURES.get(key)
    if made is None:  # tuple.__new__ with every field (choices: none), as in apply_event
        made = _DEPARTURES[key] = _new(Event, (False, job, g, w, ()))
    return made


# The arrivals of one (label, free GPUs, family, max_w): a search meets few of these and asks for
# them once per expanded state, so they are built once (events are immutable values). Bounded by
# the labels below max_jobs times the free-GPU counts of one cluster size.
_ARRIVALS: Final[dict[tuple[int, int, tuple[int, ...], int], list[Event]]] = {}


def _arrivals(label: int, free: int, demands: tuple[int, ...], max_w: int) -> list[Event]:
    key = (label, free, demands, max_w)
    made = _ARRIVALS.get(key)
    if made is None:
        made = _ARRIVALS[key] = [_new(Event, (True, label, g, w, ())) for g in demands
                                 for w in range(1, min(max_w, free // g) + 1)]
    return made


# --------------------------------------------------------------------------- what a flat state implies
def counts_of_state(key: FlatState, capacity: int) -> tuple[int, ...]:
    """n_1..n_G of the instances in a state."""
    c = [0] * capacity
    if isinstance(key, AbsView):
        for nd in key.nodes:
            c[0] += len(nd.pool)
            for s in nd.slots:
                c[s.anchor_g - 1] += 1
                c[0] += len(s.fillers)
    else:
        for node in key.nodes:
            for i in node:
                c[i.g - 1] += 1
    return tuple(c)


def running_jobs(key: FlatState) -> dict[int, Job]:
    """The running jobs a state implies (every instance of a job is placed: gang)."""
    shape: dict[int, list[int]] = {}  # job -> [g of its first instance, instances]
    if isinstance(key, AbsView):
        # unpacked, not read by attribute (``AbsStore.with_state``): this runs per expanded state
        for _, units, slots in key.nodes:
            for j in units:
                _count(shape, j, 1)
            for _, anchor, g, fillers in slots:
                _count(shape, anchor, g)
                for j in fillers:
                    _count(shape, j, 1)
    else:
        for node in key.nodes:
            for i in node:
                _count(shape, i.job, i.g)
    return {j: _new(_JOB, (j, g, w)) for j, (g, w) in shape.items()}


def _count(shape: dict[int, list[int]], job: int, g: int) -> None:
    """One more instance of ``job`` (``setdefault`` would build its default list every time)."""
    seen = shape.get(job)
    if seen is None:
        shape[job] = [g, 1]
    else:
        seen[1] += 1


def used_per_node(key: FlatState) -> list[int]:
    if isinstance(key, AbsView):
        return [nd.used() for nd in key.nodes]
    return [sum(i.g for i in node) for node in key.nodes]


# --------------------------------------------------------------------------- JSON
def state_to_json(key: FlatState) -> dict[str, Any]:
    if isinstance(key, AbsView):
        return {"type": "abs", "capacity": key.capacity, "nodes": [
            {"kind": nd.kind, "pool": list(nd.pool),
             "slots": [{"width": s.width, "anchor": s.anchor_job, "g": s.anchor_g, "fillers": list(s.fillers)}
                       for s in nd.slots]}
            for nd in key.nodes]}
    return {"type": "placement", "capacity": key.capacity,
            "nodes": [[{"job": i.job, "g": i.g} for i in node] for node in key.nodes]}


def state_from_json(d: dict[str, Any]) -> FlatState:
    if d.get("type") == "abs":
        return AbsView(int(d["capacity"]), tuple(
            NodeView(nd["kind"], tuple(nd["pool"]),
                     tuple(SlotView(s["width"], s["anchor"], s["g"], tuple(s["fillers"])) for s in nd["slots"]))
            for nd in d["nodes"]))
    if d.get("type") == "placement":
        return Placement(int(d["capacity"]), tuple(tuple(Instance(i["job"], i["g"]) for i in node)
                                                   for node in d["nodes"]))
    raise ValueError(f"unknown state type {d.get('type')!r}")
