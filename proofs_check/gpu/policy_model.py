"""Any flat GPU scheduler as a state model: job arrivals and departures on N nodes of G GPUs.

The state is the scheduler's whole state (``policy.state_key()``: an ``AbsView`` for COMPASS, a
``Placement`` for placement-only policies); its representative is the canonical form
(``proofs_check.gpu.canonical``: nodes are interchangeable, job ids are labels). Successors are
computed from ``policy.with_state(representative)``, so the checked scheduler is the paper's
pseudocode with its "pick any" / argmin ties broken by the representative's node order — a legal
implementation — and a trace replays exactly.

Actions within the bounds: an arrival of (g, w) for every g of the event family, 1 ≤ w ≤ max_w and
w·g ≤ free GPUs while fewer than max_jobs jobs run, and the departure of every running job.
``wcc_trajectory``: successors whose instance counts break the Workload Composition Condition
(count form, Lemma A.1) are outside the premise — Theorem 1 assumes WCC "at every time t", a
premise on the whole trajectory, so only WCC-only paths are explored.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from heuristics.gpu.abs_space import AbsView
from heuristics.gpu.cluster import Job, Placement
from heuristics.gpu.policy import Outcome as PolicyOutcome
from heuristics.gpu.policy import Policy, StateKey
from oracle.gpu.paper_phi import wcc_holds
from proofs_check.core.model import Outcome, Step
from proofs_check.gpu.canonical import canonical
from proofs_check.gpu.events import Event, FlatState, job_events, running_jobs, state_from_json, state_to_json, \
    used_per_node
from proofs_check.gpu.facts import facts

OUTCOMES = {PolicyOutcome.APPLIED: Outcome.APPLIED, PolicyOutcome.REFUSED: Outcome.REFUSED,
            PolicyOutcome.FAILED: Outcome.FAILED}
PolicyFactory = Callable[[int], Policy]


@dataclass(frozen=True)
class EventBounds:
    """Which events the model allows (the search's depth and state budget are its own)."""

    demands: tuple[int, ...]
    max_jobs: int
    max_w: int


def flat_key(key: StateKey) -> FlatState:
    """A flat policy's state key (a hierarchical scheduler has its own model, HierModel)."""
    if isinstance(key, (AbsView, Placement)):
        return key
    raise TypeError(f"PolicyModel needs a flat policy; its state key is a {type(key).__name__}")


class PolicyModel:
    """StateModel[FlatState, Event] of the scheduler ``factory(n)`` on ``n`` nodes."""

    def __init__(self, factory: PolicyFactory, n: int, events: EventBounds, wcc_trajectory: bool = False,
                 canon: Callable[[FlatState], FlatState] = canonical) -> None:
        self.factory, self.size, self.events = factory, n, events
        self.wcc_trajectory, self.canon = wcc_trajectory, canon
        self.proto = factory(n)
        self.capacity = self.proto.capacity

    def __getstate__(self) -> dict[str, Any]:  # the prototype is rebuilt, not shipped
        return {k: v for k, v in self.__dict__.items() if k != "proto"}

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__dict__.update(d)
        self.proto = self.factory(self.size)

    def init_states(self) -> Sequence[FlatState]:
        return [flat_key(self.proto.state_key())]

    def actions(self, s: FlatState) -> Sequence[Event]:
        free = self.size * self.capacity - sum(used_per_node(s))
        e = self.events
        return job_events(running_jobs(s), free, e.demands, e.max_jobs, e.max_w)

    def step(self, s: FlatState, a: Event) -> Step[FlatState, Event]:
        pol = self.proto.with_state(s)
        res = pol.arrive(Job(a.job, a.g, a.w)) if a.arrive else pol.depart(a.job)
        outcome = OUTCOMES[res.outcome]
        return Step(s, a, outcome, flat_key(pol.state_key()) if res.ok else s, res.migrations, res.reason)

    def representative(self, s: FlatState) -> FlatState:
        return self.canon(s)

    def within(self, st: Step[FlatState, Event]) -> bool:
        return not self.wcc_trajectory or wcc_holds(facts(st).counts)

    def state_to_json(self, s: FlatState) -> dict[str, Any]:
        return state_to_json(s)

    def state_from_json(self, d: dict[str, Any]) -> FlatState:
        return state_from_json(d)

    def action_to_json(self, a: Event) -> dict[str, Any]:
        return a.to_json()

    def action_from_json(self, d: dict[str, Any]) -> Event:
        return Event.from_json(d)
