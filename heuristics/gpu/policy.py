"""The interface every GPU placement policy implements, and the value types it exchanges.

A policy owns its cluster state. The simulators and the verifier only need ``arrive`` /
``depart`` / ``placement`` (the rest is optional: :class:`Policy`), so COMPASS, its baselines, the
oracle scheduler and a user's 15-line class are interchangeable; ``heuristics.gpu.registry`` names them.
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
        return EventResult(Outcome.APPLIED, migrations) if migrations else _APPLIED  # most events move nothing

    @staticmethod
    def refused(reason: str) -> EventResult:
        return EventResult(Outcome.REFUSED, (), reason)

    @staticmethod
    def failure(reason: str) -> EventResult:
        return EventResult(Outcome.FAILED, (), reason)


_APPLIED = EventResult(Outcome.APPLIED)


class Policy(Protocol):
    """A GPU placement policy on ``n_nodes`` nodes of ``capacity`` GPUs: what a scheduler must
    implement to be simulated and checked (``verify --policy``, ``proofs_check.testing``).

    Everything else is optional and found by name: ``name`` (default: the class name),
    ``migrates`` (default False), ``ties`` (a ``heuristics.gpu.ties.Chooser`` asked at each tie
    point: ``--ties all``), ``clone()`` (default: a deep copy), ``next_round()`` (an environment
    input for schedulers with rounds or a clock), and the abstractions the explorer checks before
    it uses them (``proofs_check.gpu.abstraction``): ``state_key()`` (a view: everything its future
    behaviour depends on), ``with_state(view)`` (a rebuild from a view), ``symmetric = True`` (node
    numbers and job ids are labels).
    """

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


class ViewPolicy(Policy, Protocol):
    """A policy with the optional members every built-in scheduler has: a name, a clone, its
    running jobs, a view of its whole state and a rebuild from one (what COMPASS's own claims,
    which check the paper's pseudocode on canonical states, and the placeholder wrappers use)."""

    name: str

    def clone(self) -> "ViewPolicy":
        """An independent copy with the same state and options."""
        ...

    def state_key(self) -> StateKey:
        """The whole scheduler state, nodes in index order, raw job ids."""
        ...

    def running(self) -> dict[int, Job]:
        """The running jobs by id."""
        ...

    def with_state(self, key: StateKey) -> "ViewPolicy":
        """A policy of the same kind and options whose state is ``key`` (a ``state_key()`` value,
        possibly renumbered by ``proofs_check.gpu.canonical``). A key of another policy kind's
        type raises ``TypeError``."""
        ...
