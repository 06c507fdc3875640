"""The records of an exploration: its limits, per-size TLC-style figures, per-property outcomes
and findings (re-exported by ``proofs_check.core.search``)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic

from proofs_check.core.model import A, Numbers, S


@dataclass(frozen=True)
class Limits:
    """The search's own bounds (the model's actions carry the rest)."""

    depth: int
    max_states: int  # distinct states per size; more → incomplete


@dataclass
class Finding(Generic[S, A]):
    """The first step where a property fired, with its shortest trace from the initial state."""

    size: int
    actions: list[A]
    states: list[S]  # the representative after each action (unchanged after a failed one)
    numbers: Numbers
    failure: str = ""  # the system's reason when the last action failed


@dataclass
class PropertyOutcome(Generic[S, A]):
    """What an exploration found for one property: its first finding, whether its premise was
    met, a test it could not decide, and the coverage situations it saw."""

    finding: Finding[S, A] | None = None
    premise_met: bool = False
    undecided: str = ""  # a test could not decide (solver limit)
    covered: dict[str, int] = field(default_factory=dict)  # coverage situation -> checked steps showing it


@dataclass
class SizeStats:
    """TLC-style figures of one size's exploration."""

    size: int
    generated: int = 0
    distinct: int = 0
    refused: int = 0  # actions the system did not admit (state unchanged)
    failures: int = 0  # operator failures
    pruned: int = 0  # successors outside the premise filter (``model.within``)
    depth_reached: int = 0
    at_depth_bound: int = 0  # states not expanded because they sit at the depth bound
    queue_left: int = 0  # states still queued when a budget stopped the search
    seconds: float = 0.0
    complete: bool = True
    stop_reason: str = ""
    notes: dict[str, Any] = field(default_factory=dict)  # the model's ``describe()``, if any

    @property
    def rate(self) -> float:
        return self.distinct / self.seconds if self.seconds > 0 else float("inf")


@dataclass
class Exploration(Generic[S, A]):
    """One exploration's figures per cluster size and its outcome per property."""

    sizes: list[SizeStats] = field(default_factory=list)
    outcomes: dict[str, PropertyOutcome[S, A]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return all(s.complete for s in self.sizes)
