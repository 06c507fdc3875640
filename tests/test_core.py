"""The domain-free model-checking core (proofs_check.core) on a toy state model.

The toy is a pair of counters (a, b), each 0..top, where ``top`` is the model's size: actions
increment or decrement one counter (refused at the ends), and optionally a "boom" action that the
system cannot complete (an operator failure). Swapping the counters is a symmetry: the
representative is the sorted pair. Everything here is counted by hand: the figures of the search,
the shortest traces, the verdict rules, the soundness rule of issue 12 (an operator failure is
decided by the outcome enum, never by a message text), budgets, symmetry reduction, the
partitioned search, the sampler, the record format and the replay.
"""
from __future__ import annotations

import copy
import json
import os
from dataclasses import asdict
from typing import Any, Sequence

import pytest

from proofs_check.core import trace
from proofs_check.core.engine import Engine
from proofs_check.core.model import Expect, On, Outcome, Property, Step, Undecided, failure_numbers
from proofs_check.core.replay import departures, first_firing, replay_steps, replay_verdict
from proofs_check.core.sampler import sample
from proofs_check.core.search import Exploration, Limits, explore, owner
from proofs_check.core.successors import new_step
from proofs_check.core.verdict import Explained, Verdict, explored_verdict

Pair = tuple[int, int]
Act = tuple[str, int]
INC0, INC1, DEC0, DEC1, BOOM = ("inc", 0), ("inc", 1), ("dec", 0), ("dec", 1), ("boom", 0)


class Counters:
    """StateModel[Pair, Act]: two counters 0..size.

    ``boom``: in states with a + b == 2 the action "boom" is offered; it fails (Outcome.FAILED)
    with ``boom_reason`` — or, with ``boom_refused``, is refused with that same text (a refusal
    whose text *looks like* an operator failure). ``cap``: successors with a + b > cap are outside
    the premise filter (pruned). ``symmetric``: the representative is the sorted pair.
    """

    def __init__(self, size: int, symmetric: bool = True, boom: bool = False, boom_reason: str = "kaboom",
                 boom_refused: bool = False, cap: int | None = None) -> None:
        self.size, self.symmetric, self.boom = size, symmetric, boom
        self.boom_reason, self.boom_refused, self.cap = boom_reason, boom_refused, cap

    def init_states(self) -> Sequence[Pair]:
        return [(0, 0)]

    def actions(self, s: Pair) -> Sequence[Act]:
        return [INC0, INC1, DEC0, DEC1] + ([BOOM] if self.boom and sum(s) == 2 else [])

    def step(self, s: Pair, a: Act) -> Step[Pair, Act]:
        op, i = a
        if op == "boom":
            outcome = Outcome.REFUSED if self.boom_refused else Outcome.FAILED
            return Step(s, a, outcome, s, (), self.boom_reason)
        v = s[i] + (1 if op == "inc" else -1)
        if not 0 <= v <= self.size:
            return Step(s, a, Outcome.REFUSED, s, (), "out of range")
        nxt = (v, s[1]) if i == 0 else (s[0], v)
        return Step(s, a, Outcome.APPLIED, nxt, (op,))

    def representative(self, s: Pair) -> Pair:
        return (min(s), max(s)) if self.symmetric else s

    def within(self, st: Step[Pair, Act]) -> bool:
        return self.cap is None or sum(st.state) <= self.cap

    def state_to_json(self, s: Pair) -> dict[str, Any]:
        return {"type": "pair", "a": s[0], "b": s[1]}

    def state_from_json(self, d: dict[str, Any]) -> Pair:
        return int(d["a"]), int(d["b"])

    def action_to_json(self, a: Act) -> dict[str, Any]:
        return {"op": a[0], "i": a[1]}

    def action_from_json(self, d: dict[str, Any]) -> Act:
        return str(d["op"]), int(d["i"])


# ----------------------------------------------------------------------------- properties
def both_at_least_two(st: Step[Pair, Act]) -> dict[str, Any] | None:
    return {"a": st.state[0], "b": st.state[1]} if min(st.state) >= 2 else None


def sum_is_three(st: Step[Pair, Act]) -> dict[str, Any] | None:
    return {"sum": 3} if sum(st.state) == 3 else None


def never(st: Step[Pair, Act]) -> dict[str, Any] | None:
    return None


def sum_at_least_five(st: Step[Pair, Act]) -> bool:
    return sum(st.state) >= 5


def is_dec(a: Act) -> bool:
    return a[0] == "dec"


def after_dec_both_positive(st: Step[Pair, Act]) -> dict[str, Any] | None:
    return {"state": list(st.state)} if min(st.state) >= 1 else None


def undecided_on_odd(st: Step[Pair, Act]) -> dict[str, Any] | None:
    if sum(st.state) % 2:
        raise Undecided(f"cannot decide {st.state}")
    return None


def spread(st: Step[Pair, Act]) -> float:
    return float(min(st.state))


BAD = Property("bad", Expect.ALWAYS, both_at_least_two, score=spread)
WITNESS = Property("witness", Expect.REACHABLE, sum_is_three)
SAYS = Explained(lambda n: f"top={n}", lambda a, b: f"top={a}..{b}", "depth ≤ 10")
BIG = Limits(depth=10, max_states=10_000)


def models(*sizes: int, **kw: Any) -> list[Counters]:
    return [Counters(n, **kw) for n in sizes]


def verdict(exp: Exploration, prop: Property, first: int = 1) -> tuple[Verdict, str]:
    return explored_verdict(prop, exp.outcomes[prop.name], exp, first, SAYS)


# ----------------------------------------------------------------------------- the search
def test_hand_counted_figures_and_symmetry_reduction():
    """top = 2: the sorted pairs 0 ≤ a ≤ b ≤ 2 are 6 representatives (9 raw pairs); (2, 2) is 4
    actions from (0, 0); every state offers the same 4 actions, the ends refuse."""
    reduced = explore(models(2), [Property("p", Expect.ALWAYS, never)], BIG)
    raw = explore(models(2, symmetric=False), [Property("p", Expect.ALWAYS, never)], BIG)
    (s,), (r,) = reduced.sizes, raw.sizes
    assert (s.distinct, s.depth_reached, s.complete, s.stop_reason) == (6, 4, True, "")
    assert (r.distinct, r.depth_reached, r.complete) == (9, 4, True)
    assert (s.generated, r.generated) == (6 * 4, 9 * 4)
    # raw: each counter refuses one inc at 2 and one dec at 0, per state: 3 values × 3 values × 4 / 3
    assert r.refused == 12 and s.failures == r.failures == s.pruned == 0
    # reduced: the refusals from the 6 representatives (a ≤ b): dec0 at a=0 (3), dec1 at b=0 (1),
    # inc0 at a=2 (1), inc1 at b=2 (3)
    assert s.refused == 8


def test_every_stored_state_is_a_representative():
    seen: list[Pair] = []

    def keep(st):
        seen.append(st.state)
        return None

    explore(models(3), [Property("keep", Expect.ALWAYS, keep)], BIG)
    assert len(seen) == len(set(seen)) == 10  # 0 ≤ a ≤ b ≤ 3
    assert all(a <= b for a, b in seen)


def test_shortest_counterexample_at_the_smallest_size():
    """min(a, b) ≥ 2 needs top ≥ 2 and 4 increments; BFS reports exactly that, at top = 2, and the
    minimum-rank trace (always the first action, inc0, of each representative)."""
    exp = explore(models(1, 2, 3), [BAD], BIG)
    f = exp.outcomes["bad"].finding
    assert f is not None and f.size == 2
    assert f.actions == [INC0] * 4
    assert f.states == [(0, 1), (1, 1), (1, 2), (2, 2)]
    assert f.numbers == {"a": 2, "b": 2} and f.failure == ""
    assert [s.size for s in exp.sizes] == [1, 2]  # top = 3 is not explored: every property decided
    assert exp.sizes[-1].stop_reason == "every probe decided"
    v, msg = verdict(exp, BAD)
    assert v is Verdict.VIOLATED and msg == "violated at top=2 after 4 events"


def test_reachable_witness_and_unreached_target():
    exp = explore(models(1, 2), [WITNESS], BIG)
    f = exp.outcomes["witness"].finding
    assert f is not None and f.size == 2 and len(f.actions) == 3 and sum(f.states[-1]) == 3
    assert verdict(exp, WITNESS) == (Verdict.HOLDS, "reached at top=2 after 3 events")
    short = explore(models(1), [WITNESS], BIG)  # a + b ≤ 2 when top = 1
    v, msg = verdict(short, WITNESS)
    assert short.complete and v is Verdict.INCONCLUSIVE and "target not reached" in msg


def test_premise_never_met_is_vacuous_and_met_is_holds():
    prop = Property("p", Expect.ALWAYS, never, premise=sum_at_least_five)
    low = explore(models(1, 2), [prop], BIG)  # a + b ≤ 4
    assert not low.outcomes["p"].premise_met
    assert verdict(low, prop) == (Verdict.VACUOUS, "premise never met (top=1..2)")
    high = explore(models(1, 2, 3), [prop], BIG)
    assert high.outcomes["p"].premise_met
    assert verdict(high, prop) == (Verdict.HOLDS, "holds within bounds (top=1..3, depth ≤ 10)")


def test_transition_property_sees_every_transition_of_its_kind():
    """(1, 1) is first reached by increments; the property on decrements still sees it when a
    decrement leads there again (from (1, 2)), so the trace ends with a decrement."""
    prop = Property("after-dec", Expect.ALWAYS, after_dec_both_positive, on=On.TRANSITION, when=is_dec)
    exp = explore(models(2), [prop], BIG)
    f = exp.outcomes["after-dec"].finding
    assert f is not None and f.actions[-1][0] == "dec" and min(f.states[-1]) >= 1
    assert all(a[0] == "inc" for a in f.actions[:-1])
    assert len(f.actions) == 4  # (0,1) (1,1) (1,2) -dec-> (1,1): the first decrement landing on a ≥ 1


def test_operator_failure_is_decided_by_the_outcome_enum_not_by_its_text():
    """Issue 12's soundness point: a FAILED step breaks exactly the properties with
    failure_breaks, whatever its reason says ('kaboom'); a REFUSED step never does, even when its
    text reads like an operator failure."""
    breaks = Property("breaks", Expect.ALWAYS, never, failure_breaks=True)
    ignores = Property("ignores", Expect.ALWAYS, never)
    exp = explore(models(2, boom=True, boom_reason="kaboom"), [breaks, ignores], BIG)
    f = exp.outcomes["breaks"].finding
    assert f is not None and f.failure == "kaboom" and f.numbers == failure_numbers("kaboom")
    assert f.actions[-1] == BOOM and len(f.actions) == 3  # a + b == 2 after two increments
    assert f.states[-1] == f.states[-2]  # a failed action leaves the state unchanged
    assert exp.outcomes["ignores"].finding is None
    assert exp.sizes[-1].failures > 0
    assert verdict(exp, breaks) == (Verdict.VIOLATED, "violated at top=2 after 3 events (kaboom)")
    assert verdict(exp, ignores)[0] is Verdict.HOLDS

    disguised = explore(models(2, boom=True, boom_reason="operator failure: not really", boom_refused=True),
                        [breaks, ignores], BIG)
    assert disguised.outcomes["breaks"].finding is None
    assert verdict(disguised, breaks)[0] is Verdict.HOLDS
    s = disguised.sizes[-1]
    assert s.failures == 0 and s.refused > explore(models(2), [ignores], BIG).sizes[-1].refused


def test_state_budget_makes_the_search_incomplete_and_inconclusive():
    exp = explore(models(3), [Property("p", Expect.ALWAYS, never), BAD], Limits(depth=10, max_states=4))
    (s,) = exp.sizes
    assert not s.complete and s.stop_reason == "max-states 4" and s.queue_left > 0
    assert s.distinct >= 4
    for prop in (Property("p", Expect.ALWAYS, never), BAD):
        v, msg = verdict(exp, prop)
        assert v is Verdict.INCONCLUSIVE and "max-states 4" in msg  # never "holds" on a partial search


def test_depth_bound_and_premise_filter():
    shallow = explore(models(3), [BAD], Limits(depth=3, max_states=10_000))
    (s,) = shallow.sizes
    assert s.complete and s.depth_reached == 3 and s.at_depth_bound > 0
    assert shallow.outcomes["bad"].finding is None  # 4 increments needed
    capped = explore(models(3, cap=3), [BAD], BIG)  # (2, 2) has a + b = 4: outside the premise
    assert capped.outcomes["bad"].finding is None and capped.sizes[0].pruned > 0
    assert verdict(capped, BAD)[0] is Verdict.HOLDS


def test_undecided_test_makes_the_property_inconclusive():
    prop = Property("u", Expect.ALWAYS, undecided_on_odd)
    exp = explore(models(2), [prop], BIG)
    assert exp.complete and exp.outcomes["u"].undecided.startswith("cannot decide")
    assert verdict(exp, prop)[0] is Verdict.INCONCLUSIVE


def test_time_limit_is_incomplete():
    import time

    exp = explore(models(3), [BAD], BIG, deadline=time.perf_counter() - 1)
    assert exp.sizes[-1].stop_reason == "time limit" and verdict(exp, BAD)[0] is Verdict.INCONCLUSIVE


# ----------------------------------------------------------------------------- partitioned = serial
def _figures(exp: Exploration) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    sizes = [{k: v for k, v in asdict(s).items() if k != "seconds"} for s in exp.sizes]
    outcomes = {name: (o.premise_met, o.undecided, o.covered, None if o.finding is None else
                       (o.finding.size, o.finding.actions, o.finding.states, o.finding.numbers, o.finding.failure))
                for name, o in exp.outcomes.items()}
    return sizes, outcomes


PROPS = [BAD, WITNESS, Property("breaks", Expect.ALWAYS, never, failure_breaks=True),
         Property("after-dec", Expect.ALWAYS, after_dec_both_positive, on=On.TRANSITION, when=is_dec),
         Property("u", Expect.ALWAYS, undecided_on_odd),
         Property("vacuous", Expect.ALWAYS, never, premise=sum_at_least_five),
         Property("covers", Expect.ALWAYS, never, coverage=(("sum ≥ 5", sum_at_least_five),))]


def test_coverage_counts_every_checked_state_and_transition():
    """Coverage situations are counted once per new state (state properties) and once per
    applied transition of the property's kind (transition properties), as enumerating the
    representatives directly counts them."""
    top = 3
    reps = [(a, b) for a in range(top + 1) for b in range(a, top + 1)]
    m = Counters(top)
    decs = [m.step(s, a) for s in reps for a in (DEC0, DEC1)]
    want_states = sum(1 for s in reps if sum(s) >= 3)
    want_decs = sum(1 for st in decs if st.outcome is Outcome.APPLIED and min(st.state) == 0)
    state_p = Property("s", Expect.ALWAYS, never, coverage=(("sum ≥ 3", lambda st: sum(st.state) >= 3),))
    dec_p = Property("d", Expect.ALWAYS, never, on=On.TRANSITION, when=is_dec,
                     coverage=(("a zero after dec", lambda st: min(st.state) == 0),))
    exp = explore(models(top), [state_p, dec_p], BIG)
    assert exp.outcomes["s"].covered == {"sum ≥ 3": want_states} and want_states == 6
    assert exp.outcomes["d"].covered == {"a zero after dec": want_decs} and want_decs > 0


@pytest.mark.parametrize("kw, limits", [
    ({}, Limits(10, 10_000)),
    ({"boom": True}, Limits(10, 10_000)),
    ({"symmetric": False, "cap": 7}, Limits(10, 10_000)),
    ({"symmetric": False}, Limits(10, 7)),  # a budget cut inside a level
    ({"symmetric": False}, Limits(10, 1)),
    ({}, Limits(2, 10_000)),
])
def test_partitioned_search_equals_serial(kw, limits):
    serial = explore(models(1, 2, 3, 4, **kw), PROPS, limits)
    with Engine("local", 2) as engine:
        two = explore(models(1, 2, 3, 4, **kw), PROPS, limits, engine=engine)
    three = explore(models(1, 2, 3, 4, **kw), PROPS, limits, engine=Engine("local", 3))
    assert _figures(two) == _figures(serial)
    assert _figures(three) == _figures(serial)


class _WhereAmI:
    """A shard that tells which process it runs in."""

    def __init__(self, index: int, count: int) -> None:
        self.index = index

    def where(self) -> tuple[int, int]:
        return self.index, os.getpid()


def test_local_pool_runs_shard_zero_here_and_forks_the_others():
    pool = Engine("local", 3).pool(_WhereAmI)
    try:
        got = pool.call("where", [()] * 3)
    finally:
        pool.close()
    assert [i for i, _ in got] == [0, 1, 2]
    pids = [pid for _, pid in got]
    assert pids[0] == os.getpid() and os.getpid() not in pids[1:] and pids[1] != pids[2]


def test_ownership_spreads_states_over_shards():
    states = [(a, b) for a in range(8) for b in range(a, 8)]
    where = [owner(s, 3) for s in states]
    assert where == [owner(s, 3) for s in copy.deepcopy(states)]
    assert min(where.count(i) for i in range(3)) > len(states) / 6


# ----------------------------------------------------------------------------- sampler
def test_sampler_finds_the_bad_state_and_shrinks_it():
    found, runs = sample(lambda n: Counters(n), range(1, 9), BAD, runs=300, seed_value=1)
    assert found is not None and 1 <= runs <= 300
    # shrunk: the smallest size where it exists and the 4 increments (choices shrink toward 0)
    assert found.size == 2 and found.actions == [INC0] * 4
    assert found.states == [(0, 1), (1, 1), (1, 2), (2, 2)] and found.numbers == {"a": 2, "b": 2}
    steps = replay_steps(Counters(found.size), found.actions)
    assert [st.state for st in steps] == found.states


def test_sampler_reports_operator_failures_and_nothing_when_there_is_nothing():
    breaks = Property("breaks", Expect.ALWAYS, never, failure_breaks=True)
    found, _ = sample(lambda n: Counters(n, boom=True), range(1, 5), breaks, runs=200, seed_value=0)
    assert found is not None and found.failure == "kaboom" and found.actions[-1] == BOOM
    none, runs = sample(lambda n: Counters(n), range(1, 5), breaks, runs=25, seed_value=0)
    assert none is None and runs == 25


# ----------------------------------------------------------------------------- replay
def test_replay_reproduces_and_notices_a_changed_system():
    exp = explore(models(1, 2), [BAD], BIG)
    f = exp.outcomes["bad"].finding
    model = Counters(f.size)
    saved = json.loads(json.dumps({"events": [model.action_to_json(a) for a in f.actions],
                                   "states": [model.state_to_json(s) for s in f.states]}))
    actions = [model.action_from_json(d) for d in saved["events"]]
    assert actions == f.actions and [model.state_from_json(d) for d in saved["states"]] == f.states
    steps = replay_steps(model, actions)
    assert [st.state for st in steps] == f.states and departures(model, steps, saved["states"]) == []
    hit = first_firing(BAD, steps)
    assert hit == (3, {"a": 2, "b": 2})
    v, msg = replay_verdict(BAD, hit)
    assert v is Verdict.VIOLATED and "reproduced after event 4" in msg
    # the "fixed" system (no symmetry: the states differ from the recorded representatives)
    raw = Counters(f.size, symmetric=False)
    moved = replay_steps(raw, actions)
    assert departures(raw, moved, saved["states"]) != []
    # a system where the trace no longer breaks the property: it stops at a refused action
    small = Counters(1)
    stopped = replay_steps(small, actions)
    assert len(stopped) < len(actions) and stopped[-1].outcome is Outcome.REFUSED
    assert replay_verdict(BAD, first_firing(BAD, stopped))[0] is Verdict.HOLDS


def test_replay_of_an_operator_failure():
    breaks = Property("breaks", Expect.ALWAYS, never, failure_breaks=True)
    f = explore(models(2, boom=True), [breaks], BIG).outcomes["breaks"].finding
    steps = replay_steps(Counters(2, boom=True), f.actions)
    assert steps[-1].outcome is Outcome.FAILED and steps[-1].reason == "kaboom"
    assert first_firing(breaks, steps) == (len(f.actions) - 1, failure_numbers("kaboom"))
    assert first_firing(Property("x", Expect.ALWAYS, never), steps) is None


# ----------------------------------------------------------------------------- the record format
def _record() -> dict[str, Any]:
    return {"format_version": 1, "kind": "trace", "claim": "thm1.pool", "model": "policy", "variant": "literal",
            "n_nodes": 2, "events": [{"event": "arrive", "job": 0, "g": 1, "w": 1}],
            "states": [{"type": "abs", "capacity": 8, "nodes": []}], "numbers": {}, "failure": ""}


@pytest.mark.parametrize("path, value, field", [
    (("n_nodes",), "2 domain(s) × 3 panel(s)", "n_nodes"),
    (("n_nodes",), 0, "n_nodes"),
    (("events", 0, "event"), "jump", "events/0/event"),
    (("events", 0, "g"), "8", "events/0/g"),
    (("format_version",), 2, "format_version"),
    (("model",), "flat", "model"),
    (("failure",), None, "failure"),
])
def test_validate_rejects_a_bad_field_naming_it(path, value, field):
    trace.validate(_record())  # the unmodified record is valid
    rec = _record()
    target = rec
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(trace.RecordError) as e:
        trace.validate(rec, "r.json: results[0] (thm1.pool)")
    msg = str(e.value)
    assert f"field {field}:" in msg and msg.startswith("r.json: results[0] (thm1.pool)") and "\n" not in msg


@pytest.mark.parametrize("drop", ["format_version", "kind", "claim", "events", "n_nodes"])
def test_validate_rejects_a_missing_field_naming_it(drop):
    rec = _record()
    del rec[drop]
    with pytest.raises(trace.RecordError, match=f"'{drop}' is a required property"):
        trace.validate(rec)


def test_load_records_validates_every_record(tmp_path):
    good, bad = _record(), {**_record(), "n_nodes": "2"}
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"results": [{"claim_id": "thm1.pool", "counterexample": good},
                                            {"claim_id": "thm1.pool", "counterexample": bad}]}))
    with pytest.raises(trace.RecordError, match=r"results\[1\] \(thm1.pool\): field n_nodes"):
        trace.load_records(str(path), lambda c: True)
    path.write_text(json.dumps({"results": [{"claim_id": "thm1.pool", "counterexample": good}]}))
    assert trace.load_records(str(path), lambda c: True) == [good]
    with pytest.raises(trace.RecordError, match="field claim: unknown claim 'thm1.pool'"):
        trace.load_records(str(path), lambda c: False)
    with pytest.raises(trace.RecordError, match="no such file"):
        trace.load_records(str(tmp_path / "missing.json"), lambda c: True)


@pytest.mark.parametrize("args", [
    ((0, 1), "+1", Outcome.APPLIED, (1, 1)),
    ((0, 1), "+1", Outcome.REFUSED, (0, 1), (), "does not fit"),
    (None, None, Outcome.APPLIED, (0,), ("m",), "", {"counts": (1,)}),
])
def test_new_step_builds_the_step_the_constructor_builds(args: tuple[Any, ...]) -> None:
    """The compiled build's constructor of a model's steps (``successors.new_step``) and
    ``Step(...)`` give the same fields, a fresh memo each when none is given."""
    fast, slow = new_step(*args), Step(*args)
    assert type(fast) is Step and vars(fast) == vars(slow)
    assert fast.applied == slow.applied
    if len(args) < 7:
        assert fast.memo == {} and fast.memo is not new_step(*args).memo
