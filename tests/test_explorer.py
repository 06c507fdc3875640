"""The flat scheduler state model on the core's breadth-first search (``proofs_check.gpu.policy_model``
+ ``proofs_check.core.search``): BFS coverage, shortest traces, budgets, WCC pruning, exact replay."""
from heuristics.gpu.abs_space import AbsView, view_placement
from heuristics.gpu.cluster import partial_nodes
from heuristics.gpu.compass import Compass
from heuristics.gpu.registry import make_policy
from oracle.gpu.paper_phi import wcc_holds
from proofs_check.core.engine import Engine
from proofs_check.core.model import Expect, On, Property
from proofs_check.core.replay import replay_steps
from proofs_check.core.search import Limits, explore
from proofs_check.core.verdict import Verdict
from proofs_check.gpu.events import Event, counts_of_state, is_departure, running_jobs, state_from_json, state_to_json
from proofs_check.gpu.facts import exact_phi_star, facts
from proofs_check.gpu.flat_claims import FLAT, Bounds, flat_result
from proofs_check.gpu.policy_model import EventBounds, PolicyModel
from proofs_check.gpu.trace_view import walk


def first_fit(n):
    return make_policy("first-fit", n)


def compass(n):
    return Compass(n)


def never(st):
    return None


NEVER = Property("p", Expect.ALWAYS, never)


def models(factory, demands, b: Bounds, wcc=False):
    return [PolicyModel(factory, n, EventBounds(demands, b.max_jobs, b.max_w), wcc)
            for n in range(b.min_nodes, b.max_nodes + 1)]


def limits(b: Bounds) -> Limits:
    return Limits(b.depth, b.max_states)


def test_hand_counted_space():
    """N=1, only g=8 jobs: the empty node and the full node; 2 transitions, depth 1."""
    b = Bounds(max_nodes=1, depth=5, max_jobs=3, max_w=3)
    exp = explore(models(first_fit, (8,), b), [NEVER], limits(b))
    (s,) = exp.sizes
    assert (s.distinct, s.generated, s.depth_reached, s.complete) == (2, 2, 1, True)


def test_symmetry_reduction_counts_for_two_nodes():
    """N=2, g=8, one instance per job: 0, 1 or 2 full nodes (up to symmetry): 3 states."""
    b = Bounds(max_nodes=2, min_nodes=2, depth=6, max_jobs=3, max_w=1)
    exp = explore(models(first_fit, (8,), b), [NEVER], limits(b))
    assert exp.sizes[0].distinct == 3


def three_jobs(st):
    return {"jobs": 3} if len(running_jobs(st.state)) >= 3 else None


def test_first_violation_is_a_shortest_trace():
    """'Three jobs run' needs exactly three arrivals; BFS must not report a longer trace."""
    b = Bounds(max_nodes=2, depth=6, max_jobs=4, max_w=2)
    exp = explore(models(compass, (1, 2), b), [Property("p", Expect.ALWAYS, three_jobs)], limits(b))
    f = exp.outcomes["p"].finding
    assert f is not None and f.size == 1
    assert len(f.actions) == 3 and all(e.arrive for e in f.actions)


def after_departure(st):
    f = facts(st)
    return {"Φπ": f.phi_pi} if f.phi_pi >= 1 else None


def test_event_kind_probe_sees_every_transition():
    """A state first reached by an arrival and later by a departure is still checked after the
    departure (prop3.departure-style properties run on every transition of their kind)."""
    b = Bounds(max_nodes=1, depth=4, max_jobs=2, max_w=1)
    prop = Property("p", Expect.ALWAYS, after_departure, on=On.TRANSITION, when=is_departure)
    exp = explore(models(compass, (2,), b), [prop], limits(b))
    f = exp.outcomes["p"].finding
    assert f is not None and not f.actions[-1].arrive
    assert [e.arrive for e in f.actions] == [True, True, False]


def test_budget_makes_claim_inconclusive():
    c = FLAT["thm1.pool"]
    b = Bounds(max_nodes=3, depth=6, max_jobs=3, max_w=2, max_states=20)
    exp = explore(models(compass, c.demands, b, True), [c.prop], limits(b))
    assert not exp.complete and exp.sizes[-1].queue_left > 0
    r = flat_result(c, exp, b, "literal", compass, "x")
    assert r.verdict == Verdict.INCONCLUSIVE and "max-states" in r.message


def test_wcc_trajectory_never_keeps_a_wcc_violating_state():
    seen = []

    def record(st):
        seen.append(facts(st).counts)
        return None

    b = Bounds(max_nodes=2, depth=5, max_jobs=3, max_w=2)
    exp = explore(models(compass, (1, 3, 5), b, True), [Property("p", Expect.ALWAYS, record)], limits(b))
    assert seen and all(wcc_holds(c) for c in seen)
    assert sum(s.pruned for s in exp.sizes) > 0
    assert any(c[2] or c[4] for c in seen)  # FUF instances were reached, with enough 1s


def test_counterexample_replays_exactly_and_json_round_trips():
    c = FLAT["thm1.sif"]
    b = Bounds(max_nodes=3, depth=5, max_jobs=3, max_w=2)
    exp = explore(models(compass, c.demands, b, True), [c.prop], limits(b))
    f = exp.outcomes[c.id].finding
    assert f is not None
    events = [Event.from_json(e.to_json()) for e in f.actions]
    assert [s.state for s in walk(compass, f.size, events)] == f.states
    model = PolicyModel(compass, f.size, EventBounds(c.demands, 0, 0), True)
    assert [st.state for st in replay_steps(model, events)] == f.states
    assert [state_from_json(state_to_json(s)) for s in f.states] == f.states
    last = f.states[-1]
    assert isinstance(last, AbsView)
    # the numbers in the finding are those of the final state, recomputed independently
    assert f.numbers["Φπ"] == partial_nodes(view_placement(last))
    assert f.numbers["Φ★"] == exact_phi_star(counts_of_state(last, 8), f.size)
    assert f.numbers["Φπ"] - f.numbers["Φ★"] > 2


def test_parallel_frontier_gives_identical_results():
    c = FLAT["thm1.sif"]
    b = Bounds(max_nodes=3, depth=5, max_jobs=3, max_w=2)
    one = explore(models(compass, c.demands, b, True), [c.prop], limits(b))
    two = explore(models(compass, c.demands, b, True), [c.prop], limits(b), engine=Engine("local", 2))
    assert [(s.distinct, s.generated, s.depth_reached) for s in one.sizes] == \
        [(s.distinct, s.generated, s.depth_reached) for s in two.sizes]
    assert one.outcomes[c.id].finding.actions == two.outcomes[c.id].finding.actions
