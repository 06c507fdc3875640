"""The interface every GPU placement policy implements, and the value types it exchanges.

A policy owns its cluster state. The simulators and the verifier only talk to it through
``arrive`` / ``depart`` / ``placement`` / ``clone`` / ``state_key`` / ``with_state``, so COMPASS,
its baselines and the oracle scheduler are interchangeable; ``heuristics.gpu.registry`` names them.
This module imports no policy implementation (they import it), so it can never close a cycle.
"""
from __future__ import annotations

from enum import Enum
from typing import NamedTuple, Protocol

from heuristics.gpu.abs_space import AbsView
from heuristics.gpu.cluster import Job, Placement
from heuristics.gpu.hier_abs import HierView

# The whole state of a policy, as ``Policy.state_key`` returns it and ``Policy.with_state`` takes
# it: an ``AbsView`` for COMPASS, a ``Placement`` for the policies whose state is their placement
# (first-fit, best-fit, worst-fit, FGD, SIFOpt, FFT, DRR), a ``HierView`` for hierarchical COMPASS.
StateKey = AbsView | Placement | HierView


class Migration(NamedTuple):
    """One instance moved from node ``src`` to node ``dst``; ``kind`` says which rule moved it."""

    job: int
    g: int
    src: int
    dst: int
    kind: str


class Outcome(Enum):
    """What a job event did. Code decides on this value, never on ``EventResult.reason``."""

    APPLIED = "applied"
    REFUSED = "refused"  # the arrival does not fit (or the policy declines it): state unchanged
    FAILED = "operator failure"  # an operator had no legal move (Proposition 1): state unchanged


class EventResult(NamedTuple):
    """Outcome of one job event; ``reason`` is human-readable text for a refusal or a failure."""

    outcome: Outcome
    migrations: tuple[Migration, ...] = ()
    reason: str = ""

    @property
    def ok(self) -> bool:
        """The event was applied."""
        return self.outcome is Outcome.APPLIED

    @property
    def failed(self) -> bool:
        """An operator failed (a soundness finding, unlike a refusal)."""
        return self.outcome is Outcome.FAILED

    @property
    def gpus_moved(self) -> int:
        """GPUs moved by the event's migrations."""
        return sum(m.g for m in self.migrations)

    @staticmethod
    def applied(migrations: tuple[Migration, ...] = ()) -> EventResult:
        return EventResult(Outcome.APPLIED, migrations)

    @staticmethod
    def refused(reason: str) -> EventResult:
        return EventResult(Outcome.REFUSED, (), reason)

    @staticmethod
    def failure(reason: str) -> EventResult:
        return EventResult(Outcome.FAILED, (), reason)


class Policy(Protocol):
    """A GPU placement policy on ``n_nodes`` nodes of ``capacity`` GPUs."""

    name: str
    n_nodes: int
    capacity: int

    def arrive(self, job: Job) -> EventResult:
        """Admit ``job`` (all its instances or none)."""
        ...

    def depart(self, job_id: int) -> EventResult:
        """Release every instance of a running job."""
        ...

    def placement(self) -> Placement:
        """Which instances sit on which node (what the metrics read)."""
        ...

    def clone(self) -> Policy:
        """An independent copy with the same state and options."""
        ...

    def state_key(self) -> StateKey:
        """The whole scheduler state (not only the placement), nodes in index order, raw job ids.
        Running jobs are derivable from it. ``proofs_check.gpu.canonical`` turns it into a
        symmetry-reduced key."""
        ...

    def running(self) -> dict[int, Job]:
        """The running jobs by id."""
        ...

    def with_state(self, key: StateKey) -> Policy:
        """A policy of the same kind and options whose state is ``key`` (a ``state_key()`` value,
        possibly renumbered by ``proofs_check.gpu.canonical``); the explorer expands from it.
        A key of another policy kind's type raises ``TypeError``."""
        ...
