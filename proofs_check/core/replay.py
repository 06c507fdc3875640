"""Re-running a saved trace through its state model and re-checking its property.

The actions are applied from the model's initial state exactly as the search applied them
(from the representative, which is stored after each action), so a recorded trace replays state
for state; where it departs from the record (the system changed), the replay says so.
"""
from __future__ import annotations

from typing import Any

from proofs_check.core.model import A, Expect, Numbers, Outcome, Property, S, StateModel, Step, Undecided, \
    failure_numbers
from proofs_check.core.verdict import Verdict


def replay_steps(model: StateModel[S, A], actions: list[A]) -> list[Step[S, A]]:
    """One step per action, each with the representative as its state; stops after an action that
    was not applied (refused or failed: the state is then unchanged)."""
    state = model.representative(model.init_states()[0])
    steps: list[Step[S, A]] = []
    for a in actions:
        st = model.step(state, a)
        if not st.applied:
            steps.append(st)
            break
        state = model.representative(st.state)
        steps.append(Step(st.prev, a, st.outcome, state, st.detail, st.reason))
    return steps


def fires(prop: Property[S, A], st: Step[S, A]) -> Numbers | None:
    """What ``prop`` reports on ``st`` (None: passes / misses the target, or cannot decide)."""
    if st.outcome is Outcome.FAILED:
        return failure_numbers(st.reason) if prop.failure_breaks else None
    if st.outcome is Outcome.REFUSED or not prop.applies(st, True):
        return None
    try:
        return prop.test(st)
    except Undecided:
        return None


def first_firing(prop: Property[S, A], steps: list[Step[S, A]]) -> tuple[int, Numbers] | None:
    for i, st in enumerate(steps):
        numbers = fires(prop, st)
        if numbers is not None:
            return i, numbers
    return None


def replay_verdict(prop: Property[S, A], hit: tuple[int, Numbers] | None) -> tuple[Verdict, str]:
    """The verdict about this one trace: a counterexample that still breaks is violated, one that
    no longer does holds; a witness that still reaches its target holds."""
    if prop.expect is Expect.REACHABLE:
        return (Verdict.HOLDS, "target reached on the trace") if hit else \
            (Verdict.INCONCLUSIVE, "target not reached on the trace")
    if hit is None:
        return Verdict.HOLDS, "the claim holds on every state of this trace (no longer reproduces)"
    return Verdict.VIOLATED, f"reproduced after event {hit[0] + 1}: {hit[1]}"


def departures(model: StateModel[S, A], steps: list[Step[S, A]], recorded: list[dict[str, Any]]) -> list[int]:
    """Indices of the steps whose state differs from the recorded one."""
    return [i for i, st in enumerate(steps) if i < len(recorded) and model.state_to_json(st.state) != recorded[i]]
