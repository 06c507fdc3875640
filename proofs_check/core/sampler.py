"""Property-based sampling of a state model beyond the exhaustive range (Hypothesis).

Hypothesis draws a size from ``sizes`` and a list of action choices; choice c picks action
``c mod len(actions)`` of the current representative, so every drawn sequence is a legal trace of
the model and replays exactly with ``verify --replay``. Refused actions are skipped; successors
outside the premise filter (``model.within``) are skipped too. ``hypothesis.target`` pushes toward
the property's ``score`` (e.g. Φπ − Φ★). A failure is shrunk by Hypothesis (seeded, no database):
shrinking moves choices toward 0, i.e. toward the first actions of each state.

Sampling never proves anything about the unsampled space: it can only add a counterexample
(violated) or a reachability witness.
"""
from __future__ import annotations

from typing import Callable, Sequence

from hypothesis import HealthCheck, Phase, given, seed, settings, target
from hypothesis import strategies as st

from proofs_check.core.model import A, Outcome, Property, S, StateModel, Step, failure_numbers
from proofs_check.core.replay import fires
from proofs_check.core.search import Finding

MAX_ACTIONS = 30


class _Found(AssertionError):
    pass


def sample(model_of: Callable[[int], StateModel[S, A]], sizes: Sequence[int], prop: Property[S, A], runs: int,
           seed_value: int, max_actions: int = MAX_ACTIONS) -> tuple[Finding[S, A] | None, int]:
    """Run ``runs`` sampled sequences; returns (the shrunk finding or None, sequences run)."""
    count = [0]
    found: list[Finding[S, A]] = []

    @seed(seed_value)
    @settings(max_examples=runs, database=None, deadline=None, derandomize=False, print_blob=False,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.target, Phase.shrink],
              report_multiple_bugs=False)
    @given(size=st.sampled_from(list(sizes)), choices=st.lists(st.integers(0, 1 << 16), max_size=max_actions))
    def run(size: int, choices: list[int]) -> None:
        count[0] += 1
        model = model_of(size)
        state = model.representative(model.init_states()[0])
        actions: list[A] = []
        states: list[S] = []
        best = 0.0
        for c in choices:
            allowed = model.actions(state)
            if not allowed:
                break
            a = allowed[c % len(allowed)]
            step = model.step(state, a)
            if step.outcome is Outcome.FAILED and prop.failure_breaks:
                found[:] = [Finding(size, actions + [a], states + [state], failure_numbers(step.reason), step.reason)]
                raise _Found(step.reason)
            if not step.applied:
                continue
            step = Step(state, a, step.outcome, model.representative(step.state), step.detail, step.reason)
            if not model.within(step):
                continue
            state = step.state
            actions.append(a)
            states.append(state)
            if prop.score is not None and prop.applies(step, True):
                best = max(best, prop.score(step))
            numbers = fires(prop, step)
            if numbers is not None:
                found[:] = [Finding(size, list(actions), list(states), numbers)]
                raise _Found(str(numbers))
        target(best, label=prop.name)

    try:
        run()
    except _Found:
        pass
    return (found[0] if found else None), count[0]
