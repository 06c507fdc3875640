"""The placement-policy interface every GPU scheduler implements, and the registry that names them.

A policy owns its cluster state. The simulators and the verifier only talk to it through
``arrive`` / ``depart`` / ``placement`` / ``clone`` / ``state_key``, so COMPASS, its baselines and
the oracle scheduler are interchangeable by name (``make_policy``).
"""
from __future__ import annotations

from enum import Enum
from typing import Callable, Hashable, NamedTuple, Protocol

from heuristics.gpu.cluster import Job, Placement


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
        return self.outcome is Outcome.APPLIED

    @property
    def failed(self) -> bool:
        return self.outcome is Outcome.FAILED

    @property
    def gpus_moved(self) -> int:
        return sum(m.g for m in self.migrations)

    @staticmethod
    def applied(migrations: tuple[Migration, ...] = ()) -> "EventResult":
        return EventResult(Outcome.APPLIED, migrations)

    @staticmethod
    def refused(reason: str) -> "EventResult":
        return EventResult(Outcome.REFUSED, (), reason)

    @staticmethod
    def failure(reason: str) -> "EventResult":
        return EventResult(Outcome.FAILED, (), reason)


class Policy(Protocol):
    name: str
    n_nodes: int
    capacity: int

    def arrive(self, job: Job) -> EventResult: ...

    def depart(self, job_id: int) -> EventResult: ...

    def placement(self) -> Placement: ...

    def clone(self) -> "Policy": ...

    def state_key(self) -> Hashable:
        """The whole scheduler state (not only the placement), nodes in index order, raw job ids:
        an ``AbsView`` for COMPASS, a ``Placement`` for stateless-placement policies. Running jobs
        are derivable from it. ``proofs_check.gpu.canonical`` turns it into a symmetry-reduced key."""
        ...

    def running(self) -> dict[int, Job]: ...

    def with_state(self, key: Hashable) -> "Policy":
        """A policy of the same kind and options whose state is ``key`` (a ``state_key()`` value,
        possibly renumbered by ``proofs_check.gpu.canonical``); the explorer expands from it."""
        ...


PolicyFactory = Callable[..., Policy]
_REGISTRY: dict[str, PolicyFactory] = {}


def register(name: str) -> Callable[[PolicyFactory], PolicyFactory]:
    def deco(factory: PolicyFactory) -> PolicyFactory:
        if name in _REGISTRY:
            raise ValueError(f"policy {name!r} registered twice")
        _REGISTRY[name] = factory
        return factory

    return deco


def policy_names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def make_policy(name: str, n_nodes: int, capacity: int = 8, **opts) -> Policy:
    """Build the policy registered as ``name`` on an empty cluster of ``n_nodes`` nodes."""
    _load_builtin()
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None
    return factory(n_nodes=n_nodes, capacity=capacity, **opts)


def _load_builtin() -> None:
    # Importing the modules runs their @register decorators; done lazily to avoid import cycles.
    import heuristics.gpu.builtin_policies  # noqa: F401
