"""proofs_check.explorer: BFS coverage, shortest traces, budgets, WCC pruning, exact replay."""
from heuristics.gpu.abs_space import AbsView
from heuristics.gpu.cluster import partial_nodes
from heuristics.gpu.compass import Compass
from heuristics.gpu.registry import make_policy
from oracle.gpu.paper_phi import wcc_holds
from proofs_check.gpu.claims import CLAIMS, exact_phi_star, state_result
from proofs_check.explorer import (
    Bounds,
    Event,
    Probe,
    counts_of_state,
    explore,
    running_jobs,
    state_from_json,
    state_to_json,
)
from proofs_check.replay import walk
from proofs_check.core.verdict import Verdict


def first_fit(n):
    return make_policy("first-fit", n)


def compass(n):
    return Compass(n)


def never(f):
    return None


def test_hand_counted_space():
    """N=1, only g=8 jobs: the empty node and the full node; 2 transitions, depth 1."""
    exp = explore(first_fit, (8,), Bounds(max_nodes=1, depth=5, max_jobs=3, max_w=3),
                  [Probe("p", "invariant", never)], exact_phi_star)
    (s,) = exp.sizes
    assert (s.distinct, s.generated, s.depth_reached, s.complete) == (2, 2, 1, True)


def test_symmetry_reduction_counts_for_two_nodes():
    """N=2, g=8, one instance per job: 0, 1 or 2 full nodes (up to symmetry): 3 states."""
    exp = explore(first_fit, (8,), Bounds(max_nodes=2, min_nodes=2, depth=6, max_jobs=3, max_w=1),
                  [Probe("p", "invariant", never)], exact_phi_star)
    assert exp.sizes[0].distinct == 3


def test_first_violation_is_a_shortest_trace():
    """'Three jobs run' needs exactly three arrivals; BFS must not report a longer trace."""
    def three_jobs(f):
        return {"jobs": 3} if len(running_jobs(f.key)) >= 3 else None

    exp = explore(compass, (1, 2), Bounds(max_nodes=2, depth=6, max_jobs=4, max_w=2),
                  [Probe("p", "invariant", three_jobs)], exact_phi_star)
    f = exp.outcomes["p"].finding
    assert f is not None and f.n_nodes == 1
    assert len(f.events) == 3 and all(e.arrive for e in f.events)


def test_event_kind_probe_sees_every_transition():
    """A state first reached by an arrival and later by a departure is still checked after the
    departure (prop3.departure-style probes run on every transition of their kind)."""
    def after_departure(f):
        return {"Φπ": f.phi_pi} if f.phi_pi >= 1 else None

    exp = explore(compass, (2,), Bounds(max_nodes=1, depth=4, max_jobs=2, max_w=1),
                  [Probe("p", "invariant", after_departure, after="departure")], exact_phi_star)
    f = exp.outcomes["p"].finding
    assert f is not None and not f.events[-1].arrive
    assert [e.arrive for e in f.events] == [True, True, False]


def test_budget_makes_claim_inconclusive():
    c = CLAIMS["thm1.pool"]
    b = Bounds(max_nodes=3, depth=6, max_jobs=3, max_w=2, max_states=20)
    exp = explore(compass, c.demands, b, [c.probe], exact_phi_star, wcc_trajectory=True)
    assert not exp.complete and exp.sizes[-1].queue_left > 0
    r = state_result(c, exp, b, "literal", True, compass, "x")
    assert r.verdict == Verdict.INCONCLUSIVE and "max-states" in r.message


def test_wcc_trajectory_never_keeps_a_wcc_violating_state():
    seen = []

    def record(f):
        seen.append(f.counts)
        return None

    exp = explore(compass, (1, 3, 5), Bounds(max_nodes=2, depth=5, max_jobs=3, max_w=2),
                  [Probe("p", "invariant", record)], exact_phi_star, wcc_trajectory=True)
    assert seen and all(wcc_holds(c) for c in seen)
    assert sum(s.pruned_wcc for s in exp.sizes) > 0
    assert any(c[2] or c[4] for c in seen)  # FUF instances were reached, with enough 1s


def test_counterexample_replays_exactly_and_json_round_trips():
    c = CLAIMS["thm1.sif"]
    b = Bounds(max_nodes=3, depth=5, max_jobs=3, max_w=2)
    exp = explore(compass, c.demands, b, [c.probe], exact_phi_star, wcc_trajectory=True)
    f = exp.outcomes[c.id].finding
    assert f is not None
    steps = walk(compass, f.n_nodes, [Event.from_json(e.to_json()) for e in f.events])
    assert [s.state for s in steps] == f.states
    assert [state_from_json(state_to_json(s)) for s in f.states] == f.states
    last = f.states[-1]
    assert isinstance(last, AbsView)
    # the numbers in the finding are those of the final state, recomputed independently
    from heuristics.gpu.abs_space import view_placement
    assert f.numbers["Φπ"] == partial_nodes(view_placement(last))
    assert f.numbers["Φ★"] == exact_phi_star(counts_of_state(last, 8), f.n_nodes)
    assert f.numbers["Φπ"] - f.numbers["Φ★"] > 2


def test_parallel_frontier_gives_identical_results():
    c = CLAIMS["thm1.sif"]
    b = Bounds(max_nodes=3, depth=5, max_jobs=3, max_w=2)
    one = explore(compass, c.demands, b, [c.probe], exact_phi_star, wcc_trajectory=True)
    two = explore(compass, c.demands, b, [c.probe], exact_phi_star, wcc_trajectory=True, workers=2)
    assert [(s.distinct, s.generated, s.depth_reached) for s in one.sizes] == \
        [(s.distinct, s.generated, s.depth_reached) for s in two.sizes]
    assert one.outcomes[c.id].finding.events == two.outcomes[c.id].finding.events
