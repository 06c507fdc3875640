"""Exhaustive breadth-first exploration of a placement policy's reachable states (TLC-style).

For every cluster size N = ``bounds.min_nodes`` .. ``bounds.max_nodes`` the explorer starts from
the empty cluster and applies, to every reached state, every admissible job arrival (g in the event
family's demands, 1 ≤ w ≤ ``max_w`` and w·g ≤ the free GPUs, while fewer than ``max_jobs`` jobs
run) and every departure of a running job, up to ``depth`` events. A new job gets the smallest
unused label (labels of a canonical state are 0..k-1, so it is k).

Semantics (documented in docs/verify.md):

* every stored state IS its canonical representative (``proofs_check.gpu.canonical``: nodes
  renumbered, jobs relabelled) and successors are computed from ``policy.with_state(rep)``. The
  checked scheduler is therefore the paper's pseudocode with its "pick any" / argmin ties broken
  by the representative's node order — a legal implementation — and a counterexample replays
  exactly (``proofs_check.replay``);
* breadth-first with a parent pointer per state: the first violation found is a shortest event
  sequence (at the smallest N where one exists, since N grows outermost);
* ``wcc_trajectory``: successors whose instance counts break the Workload Composition Condition
  (count form, Lemma A.1; the empty cluster satisfies it) are not kept: Theorem 1 assumes WCC
  "at every time t", a premise on the whole trajectory, so only WCC-only paths are explored;
* an event the policy refuses (does not fit) leaves the state unchanged and is only counted; an
  *operator failure* (``reason`` starting "operator failure") is reported to the probes that
  treat it as a violation (Proposition 1: the algorithm produced no state);
* a budget (``max_states`` distinct states per N, or the deadline) hit before the bounds are
  covered makes the run incomplete: nothing that was not found may then be called "holds".

Probes are the claims' state predicates (``proofs_check.gpu.claims`` builds them): an *invariant*
probe is violated by the first reached state (or transition, for event-kind-specific ones) that
breaks it; a *reachable* probe succeeds at the first state that reaches its target. Each probe
may carry a premise ("sometimes" check): a premise never met makes the claim vacuous.
"""
from __future__ import annotations

import functools
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator, NamedTuple

from heuristics.gpu.abs_space import POOL, SLOTTED, AbsView
from heuristics.gpu.cluster import Job, Placement
from heuristics.gpu.policy import Policy
from oracle.gpu.paper_phi import wcc_holds
from proofs_check.gpu.canonical import canonical

if TYPE_CHECKING:
    from proofs_check.core.engine import Engine


class Event(NamedTuple):
    """A job event; ``job`` is the label in the canonical state just before the event."""

    arrive: bool
    job: int
    g: int
    w: int

    def __str__(self) -> str:
        return f"{'+' if self.arrive else '-'}J{self.job} (g={self.g},w={self.w})"

    def to_json(self) -> dict[str, Any]:
        return {"event": "arrive" if self.arrive else "depart", "job": self.job, "g": self.g, "w": self.w}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "Event":
        if d.get("event") not in ("arrive", "depart"):
            raise ValueError(f"event must be 'arrive' or 'depart', got {d.get('event')!r}")
        return Event(d["event"] == "arrive", int(d["job"]), int(d["g"]), int(d["w"]))


@dataclass(frozen=True)
class Bounds:
    """What the exhaustive search covers; printed in every report."""

    max_nodes: int = 6
    min_nodes: int = 1
    depth: int = 10
    max_jobs: int = 4
    max_w: int = 4
    max_states: int = 2_000_000  # distinct states per (claim group, N); more → inconclusive

    def describe(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- state facts
def counts_of_state(key: Hashable, capacity: int) -> tuple[int, ...]:
    """n_1..n_G of the instances in a state (AbsView or Placement)."""
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


def running_jobs(key: Hashable) -> dict[int, Job]:
    """The running jobs a state implies (every instance of a job is placed: gang)."""
    shape: dict[int, list[int]] = {}
    if isinstance(key, AbsView):
        for nd in key.nodes:
            for j in nd.pool:
                shape.setdefault(j, [1, 0])[1] += 1
            for s in nd.slots:
                shape.setdefault(s.anchor_job, [s.anchor_g, 0])[1] += 1
                for j in s.fillers:
                    shape.setdefault(j, [1, 0])[1] += 1
    else:
        for node in key.nodes:
            for i in node:
                shape.setdefault(i.job, [i.g, 0])[1] += 1
    return {j: Job(j, g, w) for j, (g, w) in shape.items()}


def used_per_node(key: Hashable) -> list[int]:
    if isinstance(key, AbsView):
        return [nd.used() for nd in key.nodes]
    return [sum(i.g for i in node) for node in key.nodes]


class Facts:
    """Lazily computed quantities of one state that probes read (each computed at most once).

    ``event`` and ``migrations`` describe the transition that produced the state (None for the
    initial state); transition probes (``after="event"``) read them.
    """

    __slots__ = ("key", "n_nodes", "capacity", "_counts", "_phi_pi", "_phi_star", "event", "migrations")

    def __init__(self, key: Hashable, n_nodes: int, capacity: int, phi_star: Callable[[tuple, int], int],
                 event: "Event | None" = None, migrations: tuple = ()):
        self.key, self.n_nodes, self.capacity = key, n_nodes, capacity
        self.event, self.migrations = event, migrations
        self._counts: tuple[int, ...] | None = None
        self._phi_pi: int | None = None
        self._phi_star = phi_star

    @property
    def view(self) -> AbsView:
        if not isinstance(self.key, AbsView):
            raise TypeError("this claim needs an ABS state (AbsView); the policy exposes a Placement")
        return self.key

    @property
    def counts(self) -> tuple[int, ...]:
        if self._counts is None:
            self._counts = counts_of_state(self.key, self.capacity)
        return self._counts

    @property
    def phi_pi(self) -> int:
        """Φπ: partial nodes of the state's placement."""
        if self._phi_pi is None:
            self._phi_pi = sum(1 for u in used_per_node(self.key) if 0 < u < self.capacity)
        return self._phi_pi

    def phi_star(self) -> int:
        """Exact Φ★ of the state's instance counts on N nodes (memoised by the oracle)."""
        return self._phi_star(self.counts, self.n_nodes)

    def n_pool(self) -> int:
        return sum(1 for nd in self.view.nodes if nd.kind == POOL)

    def n_slotted(self) -> int:
        return sum(1 for nd in self.view.nodes if nd.kind == SLOTTED)


# --------------------------------------------------------------------------- probes and results
@dataclass(frozen=True)
class Probe:
    """One claim part as the explorer sees it.

    ``test(facts)`` returns None when nothing is found, else a dict of the numbers that matter
    (a breach for an invariant, the witness figures for a reachable target). ``after`` restricts
    the test to states reached by that event kind ("any" = state property, checked once per
    state when first reached; "event" = every transition, e.g. its migrations).
    ``premise(facts)`` is the "sometimes" check.
    """

    claim_id: str
    kind: str  # "invariant" | "reachable"
    test: Callable[[Facts], dict[str, Any] | None]
    after: str = "any"  # "any" | "arrival" | "departure" | "event"
    premise: Callable[[Facts], bool] | None = None
    failure_breaks: bool = False  # an operator failure violates the claim (Proposition 1)


@dataclass
class Finding:
    """The first state (or failing event) where a probe fired, with its shortest trace."""

    n_nodes: int
    events: list[Event]
    states: list[Hashable]  # the canonical state after each event
    numbers: dict[str, Any]
    failure: str = ""  # the operator failure reason when the last event failed


@dataclass
class ProbeOutcome:
    finding: Finding | None = None
    premise_met: bool = False
    unknown: str = ""  # an exact solve hit its limit while evaluating the probe


@dataclass
class SizeStats:
    """TLC-style figures of one exploration (one N)."""

    n_nodes: int
    generated: int = 0
    distinct: int = 0
    refused: int = 0  # arrivals the policy did not admit (state unchanged)
    operator_failures: int = 0
    pruned_wcc: int = 0  # successors dropped because WCC failed in them
    depth_reached: int = 0
    at_depth_bound: int = 0  # states not expanded because they sit at the depth bound
    queue_left: int = 0  # states still queued when a budget stopped the search
    seconds: float = 0.0
    complete: bool = True
    stop_reason: str = ""

    @property
    def rate(self) -> float:
        return self.distinct / self.seconds if self.seconds > 0 else float("inf")


@dataclass
class Exploration:
    sizes: list[SizeStats] = field(default_factory=list)
    outcomes: dict[str, ProbeOutcome] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return all(s.complete for s in self.sizes)


PolicyFactory = Callable[[int], Policy]
Progress = Callable[[str], None]


def stderr_progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the search
def arrivals(free: int, n_running: int, demands: tuple[int, ...], bounds: Bounds) -> Iterator[tuple[int, int]]:
    """(g, w) shapes that may arrive: g in the family, 1 ≤ w ≤ max_w, w·g ≤ free GPUs."""
    if n_running >= bounds.max_jobs:
        return
    for g in demands:
        for w in range(1, min(bounds.max_w, free // g) + 1):
            yield g, w


def explore(
    factory: PolicyFactory,
    demands: tuple[int, ...],
    bounds: Bounds,
    probes: list[Probe],
    phi_star: Callable[[tuple, int], int],
    wcc_trajectory: bool = False,
    deadline: float | None = None,
    progress: Progress | None = None,
    label: str = "",
    canon: Callable[[Hashable], Hashable] = canonical,
    workers: int = 1,
    engine: "Engine | None" = None,
) -> Exploration:
    """Explore N = min_nodes..max_nodes; stop early once every probe has a finding.

    ``canon`` is the state-key reduction (identity disables symmetry reduction, for benchmarks);
    ``workers`` > 1, or an ``engine`` (``proofs_check.parallel``: forked processes or a Dask
    cluster), runs the search partitioned by state owner (identical results, docs/verify.md).
    """
    if engine is None and workers > 1:
        from proofs_check.core.engine import Engine

        engine = Engine("local", workers)
    size_search = _explore_size
    if engine is not None and engine.partitioned:
        from proofs_check.parallel import explore_size

        size_search = functools.partial(explore_size, engine)
    result = Exploration(outcomes={p.claim_id: ProbeOutcome() for p in probes})
    for n in range(bounds.min_nodes, bounds.max_nodes + 1):
        open_probes = [p for p in probes if result.outcomes[p.claim_id].finding is None]
        if not open_probes:
            break
        stats = size_search(factory, n, demands, bounds, open_probes, result.outcomes, phi_star,
                            wcc_trajectory, deadline, progress, label, canon)
        result.sizes.append(stats)
        if not stats.complete:
            break
    return result


def _explore_size(factory, n, demands, bounds, probes, outcomes, phi_star, wcc_trajectory,
                  deadline, progress, label, canon) -> SizeStats:
    t0 = time.perf_counter()
    stats = SizeStats(n)
    proto = factory(n)
    capacity = proto.capacity
    root = canon(proto.state_key())
    parents: dict[Hashable, tuple[Hashable, Event] | None] = {root: None}
    stats.distinct = 1
    _check(Facts(root, n, capacity, phi_star), None, root, None, probes, outcomes, parents, n, True)
    frontier = [root]
    depth = 0
    next_report = t0 + 2.0
    while frontier:
        if depth >= bounds.depth:
            stats.at_depth_bound = len(frontier)
            break
        nxt: list[Hashable] = []
        done = 0
        for key in frontier:
            now = time.perf_counter()
            if (deadline is not None and now > deadline) or stats.distinct >= bounds.max_states:
                stats.complete = False
                stats.stop_reason = "time limit" if deadline is not None and now > deadline else \
                    f"max-states {bounds.max_states}"
                stats.queue_left = len(frontier) - done + len(nxt)
                break
            if progress is not None and now >= next_report:
                next_report = now + 2.0
                _report_progress(progress, label, stats, depth, len(frontier) - done, len(nxt), now - t0)
            succs = successors(proto, key, n, demands, bounds, canon)
            _absorb(key, succs, n, capacity, probes, outcomes, parents, nxt, stats, phi_star, wcc_trajectory)
            done += 1
        if not stats.complete:
            break
        if nxt:
            depth += 1
            stats.depth_reached = depth
        frontier = nxt
        if not [p for p in probes if outcomes[p.claim_id].finding is None]:
            stats.stop_reason = "every probe decided"
            stats.queue_left = len(frontier)
            break
    stats.seconds = time.perf_counter() - t0
    if progress is not None:
        progress(f"[{label} N={n}] done: {stats.distinct} distinct, {stats.generated} generated, "
                 f"depth {stats.depth_reached}, {stats.seconds:.1f}s ({stats.rate:,.0f} distinct/s)")
    return stats


def _report_progress(progress, label, stats, depth, left, found, elapsed) -> None:
    rate = stats.distinct / elapsed if elapsed > 0 else 0.0
    per_state = elapsed / max(stats.distinct, 1)
    progress(f"[{label} N={stats.n_nodes}] depth {depth}: {stats.distinct:,} distinct, "
             f"{stats.generated:,} generated, queue {left + found:,}, {rate:,.0f} distinct/s; "
             f"this level needs ≥ ~{left * per_state:.0f}s more")


# A successor record: (event, applied?, policy's reason, canonical successor or None, migrations).
Successor = tuple[Event, bool, str, Hashable | None, tuple]


def successors(proto: Policy, key: Hashable, n: int, demands: tuple[int, ...], bounds: Bounds,
               canon: Callable[[Hashable], Hashable]) -> list[Successor]:
    """Every admissible event applied to ``key`` (the policy rebuilt from it for each event)."""
    running = running_jobs(key)
    free = n * proto.capacity - sum(used_per_node(key))
    label = len(running)
    while label in running:  # only for non-canonical keys (benchmark without reduction)
        label += 1
    events = [Event(True, label, g, w) for g, w in arrivals(free, len(running), demands, bounds)]
    events += [Event(False, j, job.g, job.w) for j, job in sorted(running.items())]
    out: list[Successor] = []
    for ev in events:
        pol = proto.with_state(key)
        res = pol.arrive(Job(ev.job, ev.g, ev.w)) if ev.arrive else pol.depart(ev.job)
        out.append((ev, res.ok, res.reason, canon(pol.state_key()) if res.ok else None, res.migrations))
    return out


def _absorb(key, succs: list[Successor], n, capacity, probes, outcomes, parents, nxt, stats,
            phi_star, wcc_trajectory) -> None:
    """Record the successors of ``key`` in BFS order: counts, dedup, parent pointers, probes."""
    for ev, ok, reason, succ, migrations in succs:
        stats.generated += 1
        if not ok:
            if reason.startswith("operator failure"):
                stats.operator_failures += 1
                for p in probes:
                    out = outcomes[p.claim_id]
                    if p.failure_breaks and out.finding is None:
                        out.finding = _finding(parents, key, n, ev, key, {"operator failure": reason}, reason)
            else:
                stats.refused += 1
            continue
        facts = Facts(succ, n, capacity, phi_star, ev, migrations)
        if wcc_trajectory and not wcc_holds(facts.counts):
            stats.pruned_wcc += 1
            continue
        new = succ not in parents
        if new:
            parents[succ] = (key, ev)
            nxt.append(succ)
            stats.distinct += 1
        _check(facts, ev, succ, key, probes, outcomes, parents, n, new)


def _check(facts, ev, succ, parent, probes, outcomes, parents, n, new) -> None:
    for p in probes:
        out = outcomes[p.claim_id]
        if out.finding is not None or not applies(p, ev, new):
            continue
        if p.premise is not None and not out.premise_met and p.premise(facts):
            out.premise_met = True
        try:
            numbers = p.test(facts)
        except PhiUnknown as e:
            out.unknown = out.unknown or str(e)
            continue
        if numbers is not None:
            if ev is None:
                out.finding = Finding(n, [], [], numbers)
            else:
                out.finding = _finding(parents, parent, n, ev, succ, numbers)


def applies(p: Probe, ev: Event | None, new: bool) -> bool:
    """Whether probe ``p`` is evaluated on this transition (``ev`` None: the initial state): a
    state probe when the state is first reached, an event-kind probe on every event of its kind."""
    if p.after == "any":
        return new
    return ev is not None and (p.after == "event" or (p.after == "arrival") == ev.arrive)


class PhiUnknown(RuntimeError):
    """Raised by a Φ★ provider when the exact solve hit its limit (the state's claim is then
    inconclusive, never decided)."""


def _finding(parents, parent, n, ev, succ, numbers, failure: str = "") -> Finding:
    events, states = trace_to(parents, parent)
    return Finding(n, events + [ev], states + [succ], numbers, failure)


def trace_to(parents: dict, key: Hashable) -> tuple[list[Event], list[Hashable]]:
    """The event sequence from the root to ``key`` and the state after each event."""
    events: list[Event] = []
    states: list[Hashable] = []
    while parents[key] is not None:
        prev, ev = parents[key]
        events.append(ev)
        states.append(key)
        key = prev
    return events[::-1], states[::-1]


# --------------------------------------------------------------------------- state (de)serialisation
def state_to_json(key: Hashable) -> dict[str, Any]:
    if isinstance(key, AbsView):
        return {"type": "abs", "capacity": key.capacity, "nodes": [
            {"kind": nd.kind, "pool": list(nd.pool),
             "slots": [{"width": s.width, "anchor": s.anchor_job, "g": s.anchor_g, "fillers": list(s.fillers)}
                       for s in nd.slots]}
            for nd in key.nodes]}
    if isinstance(key, Placement):
        return {"type": "placement", "capacity": key.capacity,
                "nodes": [[{"job": i.job, "g": i.g} for i in node] for node in key.nodes]}
    raise TypeError(f"cannot serialise a {type(key).__name__} state")


def state_from_json(d: dict[str, Any]) -> Hashable:
    from heuristics.gpu.abs_space import NodeView, SlotView
    from heuristics.gpu.cluster import Instance

    if d.get("type") == "abs":
        return AbsView(int(d["capacity"]), tuple(
            NodeView(nd["kind"], tuple(nd["pool"]),
                     tuple(SlotView(s["width"], s["anchor"], s["g"], tuple(s["fillers"])) for s in nd["slots"]))
            for nd in d["nodes"]))
    if d.get("type") == "placement":
        return Placement(int(d["capacity"]), tuple(tuple(Instance(i["job"], i["g"]) for i in node) for node in d["nodes"]))
    raise ValueError(f"unknown state type {d.get('type')!r}")
