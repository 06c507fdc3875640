"""The state-model protocol every checked system implements, and the property record.

The shape follows Stateright's ``Model`` / ``Property`` and Hypothesis's rule-based machines: a
model says where a system starts, which actions are allowed within the bounds, what one action
does, which states are interchangeable (symmetry), and which transitions are inside the claim's
premise. The search (``proofs_check.core.search``), the sampler (``core.sampler``) and the replay
(``core.replay``) only ever talk to a system through this protocol; nothing here knows about GPUs,
racks or schedulers.

A *property* is a named test on the transitions a search reaches:

* ``expect = ALWAYS``: every evaluated step passes; the first failing step (breadth-first, so a
  shortest trace) is a counterexample;
* ``expect = REACHABLE``: some evaluated step hits the target; the first one is a witness.

``on = STATE`` evaluates the test once per distinct state (when the search first reaches it);
``on = TRANSITION`` evaluates it on every applied transition that passes ``when`` (e.g. arrivals
only, or every event for a per-event migration bound). ``premise`` is Stateright's "sometimes"
check: a claim whose premise was never met is *vacuous*, not *holds*. ``failure_breaks`` makes an
operator failure (an action the system could not complete) a violation of the property.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import partial
from typing import Any, Callable, Final, Generic, Hashable, Protocol, Sequence, TypeVar, runtime_checkable

S = TypeVar("S", bound=Hashable)
A = TypeVar("A", bound=Hashable)

Numbers = dict[str, Any]


class Outcome(Enum):
    """What one action did to a state."""

    APPLIED = "applied"
    REFUSED = "refused"  # the action is not admitted (e.g. the job does not fit): state unchanged
    FAILED = "operator failure"  # the system could not complete an admitted action: no state produced


@dataclass(frozen=True, eq=False, init=False)
class Step(Generic[S, A]):
    """One transition: ``prev`` --``action``--> ``state``.

    For the initial state ``prev`` and ``action`` are None. When the action was not applied
    ``state`` is ``prev``. ``detail`` is the model's payload for the transition (e.g. the
    migrations an event caused), ``reason`` the system's text for a refusal or a failure (shown to
    people, never parsed). ``memo`` caches quantities that several properties derive from the step.
    """

    prev: S | None
    action: A | None
    outcome: Outcome
    state: S
    detail: Any = ()
    reason: str = ""
    memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def __init__(self, prev: S | None, action: A | None, outcome: Outcome, state: S, detail: Any = (),
                 reason: str = "", memo: dict[str, Any] | None = None) -> None:
        # The generated __init__ of a frozen dataclass sets each field through object.__setattr__;
        # writing the instance dict item by item does the same at a third of the cost (and a
        # quarter less than one update with keywords), and a search makes one Step per transition.
        # ``successors.new_step`` writes the same fields for compiled callers (tests/test_core.py
        # checks that both build equal steps).
        d = self.__dict__
        d["prev"] = prev
        d["action"] = action
        d["outcome"] = outcome
        d["state"] = state
        d["detail"] = detail
        d["reason"] = reason
        d["memo"] = {} if memo is None else memo

    @property
    def applied(self) -> bool:
        return self.outcome is Outcome.APPLIED


class StateModel(Protocol[S, A]):
    """A bounded transition system of one size (e.g. one cluster size N).

    ``actions`` must return the same sequence, in the same order, every time it is called on the
    same state: a transition's position in it is part of the search's deterministic order.
    ``step`` returns the raw successor; the search stores ``representative(step.state)``, so
    ``step`` must accept representatives as input (a representative is a state of the same type).
    """

    size: int

    def init_states(self) -> Sequence[S]: ...

    def actions(self, s: S) -> Sequence[A]: ...

    def step(self, s: S, a: A) -> Step[S, A]: ...

    def representative(self, s: S) -> S: ...

    def within(self, st: Step[S, A]) -> bool:
        """The premise filter on trajectories: False drops the successor (counted as pruned).

        Called on the step as ``step`` returned it, before ``representative``: the premise must
        be invariant under the equivalence (it then costs no canonical form when it fails)."""
        ...

    def state_to_json(self, s: S) -> dict[str, Any]: ...

    def state_from_json(self, d: dict[str, Any]) -> S: ...

    def action_to_json(self, a: A) -> dict[str, Any]: ...

    def action_from_json(self, d: dict[str, Any]) -> A: ...


@runtime_checkable
class Packing(Protocol):
    """Optional for a model: a lossless compact encoding of its representatives.

    The search keeps every distinct representative (seen-set) and a level's frontier as
    ``pack(rep)`` and expands ``unpack(key)``; ``unpack(pack(s)) == s`` and equal states have equal
    keys. A model without it is stored as it is."""

    def pack(self, s: Any) -> Hashable: ...

    def unpack(self, key: Any) -> Any: ...


# One action as the search takes it (``transition``): (outcome, state, detail, reason, memo), the
# step's fields with ``state`` the successor's representative (``prev`` when the action was not
# applied); the outcome None when the successor is outside the premise (``within``: pruned).
Transition = tuple[Outcome | None, Any, Any, str, dict[str, Any] | None]
PRUNED: Final[Transition] = (None, None, (), "", None)


def stepped(model: Any, s: Any, a: Any) -> Transition:
    """The transition of action ``a`` from ``s``, by definition: ``step``, then ``within`` on an
    applied step, then ``representative`` of its state."""
    st = model.step(s, a)
    if st.outcome is not Outcome.APPLIED:
        return st.outcome, st.state, st.detail, st.reason, st.memo
    if not model.within(st):
        return PRUNED
    return Outcome.APPLIED, model.representative(st.state), st.detail, st.reason, st.memo


@runtime_checkable
class Transitions(Protocol):
    """Optional for a model: ``transition(s, a)``, equal to ``stepped(model, s, a)`` in one call
    and without a :class:`Step` (the search's inner loop runs it once per transition)."""

    def transition(self, s: Any, a: Any) -> Transition: ...


def transitions(model: Any) -> Callable[[Any, Any], Transition]:
    """The transition function of ``model``: its :class:`Transitions` method, or ``stepped``."""
    if isinstance(model, Transitions):
        return model.transition
    return partial(stepped, model)


@runtime_checkable
class Described(Protocol):
    """Optional for a model: what it says about itself on its size (e.g. which abstractions it
    checked and trusted). Kept in the size's :class:`~proofs_check.core.records.SizeStats`, so the
    report travels with the exploration, through a checkpoint and a resume."""

    def describe(self) -> dict[str, Any]: ...


def _same(x: Any) -> Any:
    return x


def codec(model: Any) -> tuple[Callable[[Any], Hashable], Callable[[Any], Any]]:
    """(pack, unpack) of ``model``: its :class:`Packing` methods, or the identity."""
    if isinstance(model, Packing):
        return model.pack, model.unpack
    return _same, _same


class Expect(Enum):
    ALWAYS = "always"
    REACHABLE = "reachable"


class On(Enum):
    STATE = "state"  # once per distinct state, when first reached
    TRANSITION = "transition"  # on every applied transition that passes ``when``


class Undecided(RuntimeError):
    """Raised by a property test that could not decide (an exact solve hit its limit): the step
    makes the property inconclusive, never holds or violated."""


@dataclass(frozen=True)
class Property(Generic[S, A]):
    """One claim part as the search sees it. ``test`` returns None when the step passes (ALWAYS)
    or misses the target (REACHABLE), else the numbers that matter (a breach or a witness)."""

    name: str
    expect: Expect
    test: Callable[[Step[S, A]], Numbers | None]
    on: On = On.STATE
    when: Callable[[A], bool] | None = None
    premise: Callable[[Step[S, A]], bool] | None = None
    failure_breaks: bool = False
    score: Callable[[Step[S, A]], float] | None = None  # what guided sampling maximises
    # Named situations counted over the steps the property is checked on, so a report shows
    # whether the premise was really exercised (e.g. "≥ 2 pool nodes' worth of 1-GPU instances").
    coverage: tuple[tuple[str, Callable[[Step[S, A]], bool]], ...] = ()

    def applies(self, st: Step[S, A], new: bool) -> bool:
        """Whether this property is evaluated on ``st`` (``new``: its state was not seen before)."""
        if self.on is On.STATE:
            return new
        return st.action is not None and (self.when is None or self.when(st.action))


def failure_numbers(reason: str) -> Numbers:
    """The numbers an operator failure reports to the properties it breaks."""
    return {"operator failure": reason}
