"""Every legal tie-break (issue 13): choice points, their enumeration, and `verify --ties all`."""
from __future__ import annotations

import random

import pytest

from heuristics.gpu.compass import Compass
from heuristics.gpu.ties import Choice, Script, ScriptError, every_script, pick
from proofs_check.core.model import Outcome
from proofs_check.gpu.canonical import canonical
from proofs_check.gpu.events import Event, apply_event, job_events, running_jobs, used_per_node
from proofs_check.gpu.flat_claims import compass_factory
from proofs_check.gpu.policy_model import EventBounds, PolicyModel
from reach import reachable

ALL_G = (1, 2, 3, 4, 5, 6, 7, 8)


def test_every_script_enumerates_every_sequence_in_lexicographic_order() -> None:
    def run(ch: Script) -> tuple[str, ...]:
        a = pick(ch, "a", ["x", "y"])
        b = pick(ch, "b", ["p", "q", "r"]) if a == "x" else "-"
        return a, b

    got = [(tuple(c.taken for c in made), res) for made, res in every_script(run)]
    assert got == [((0, 0), ("x", "p")), ((0, 1), ("x", "q")), ((0, 2), ("x", "r")), ((1,), ("y", "-"))]


def test_a_script_past_its_end_takes_option_zero_and_rejects_missing_options() -> None:
    s = Script((1,))
    assert pick(s, "a", "xy") == "y" and pick(s, "b", "xyz") == "x"
    assert s.made == [Choice("a", 2, 1), Choice("b", 3, 0)]
    with pytest.raises(ScriptError, match="option 3 of 2"):
        Script((3,)).pick("a", 2)


class RandomChooser:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, point: str, k: int) -> int:
        return self.rng.randrange(k)


def _walk(rng: random.Random, n: int, depth: int, bounds: EventBounds, chooser: object | None,
          variant: str = "literal") -> list:
    """A random event sequence on COMPASS; returns the abs views after each applied event."""
    pol = Compass(n, variant=variant)
    views = []
    for _ in range(depth):
        view = canonical(pol.abs_view())
        pol = pol.with_state(view)
        free = n * 8 - sum(used_per_node(view))
        evs = job_events(running_jobs(view), free, bounds.demands, bounds.max_jobs, bounds.max_w)
        ev = rng.choice(evs)
        pol.ties = chooser  # type: ignore[assignment]
        pol.trial()  # inside a trial an operator failure is an outcome, and rollback undoes it
        res = apply_event(pol, ev)
        if not res.ok:
            pol.rollback()
            continue
        views.append(canonical(pol.abs_view()))
    return views


def _reachable(n: int, depth: int, bounds: EventBounds) -> set:
    return reachable(PolicyModel(compass_factory("literal"), n, bounds), depth)


def test_default_ties_are_option_zero() -> None:
    """A Script of zeros makes exactly the choices of the default (no chooser) COMPASS."""
    bounds = EventBounds(ALL_G, 4, 3)
    for seed in range(20):
        a = _walk(random.Random(seed), 3, 12, bounds, None)
        b = _walk(random.Random(seed), 3, 12, bounds, Script(()))
        assert a == b


def test_random_tie_breaks_stay_inside_the_all_ties_state_space() -> None:
    """Independent of the enumeration: COMPASS run with random choices at its tie points never
    reaches a state the ``--ties all`` search did not reach; and that search reaches states the
    default tie-breaking does not."""
    n, depth = 2, 6
    bounds_all = EventBounds(ALL_G, 3, 2, all_ties=True)
    every = _reachable(n, depth, bounds_all)
    first = _reachable(n, depth, EventBounds(ALL_G, 3, 2))
    assert first < every
    rng = random.Random(7)
    for _ in range(150):
        for view in _walk(rng, n, depth, bounds_all, RandomChooser(rng)):
            assert view in every


def test_a_tie_choice_replays_from_its_event() -> None:
    """``actions`` under all ties returns events that carry their choices; stepping such an
    event afresh (a replay) gives the same successor."""
    m = PolicyModel(compass_factory("literal"), 2, EventBounds(ALL_G, 3, 2, all_ties=True))
    s = m.representative(m.init_states()[0])
    chosen = 0
    for depth in range(4):
        acts = m.actions(s)
        steps = {a: m.step(s, a) for a in acts}
        fresh = PolicyModel(compass_factory("literal"), 2, EventBounds(ALL_G, 3, 2))
        for a, st in steps.items():
            again = fresh.step(s, a)
            assert again.outcome is st.outcome and canonical(again.state) == canonical(st.state)
            chosen += bool(a.choices)
        s = m.representative(next(st.state for st in steps.values() if st.outcome is Outcome.APPLIED))
    assert chosen > 0
    assert Event.from_json(Event(True, 0, 1, 2, (1, 0)).to_json()) == Event(True, 0, 1, 2, (1, 0))


def test_the_trace_view_replays_an_events_choices() -> None:
    """What a counterexample shows (``trace_view.walk``) follows the recorded choices: a path of
    non-default tie-breaks found by the all-ties model is rendered in the state it reached."""
    from proofs_check.gpu.trace_view import walk

    m = PolicyModel(compass_factory("literal"), 2, EventBounds(ALL_G, 3, 2, all_ties=True))
    s = m.representative(m.init_states()[0])
    path: list[Event] = []
    for _ in range(4):
        steps = [(a, m.step(s, a)) for a in m.actions(s)]
        applied = [(a, st) for a, st in steps if st.outcome is Outcome.APPLIED]
        a, st = next(((a, st) for a, st in applied if a.choices), applied[0])
        path.append(a)
        s = m.representative(st.state)
    assert any(a.choices for a in path)
    shown = walk(compass_factory("literal"), 2, path)
    assert canonical(shown[-1].state) == s
    assert any(" ties " in x.shown for x in shown)
