"""CAFGD and MCG (heuristics.gpu.cafgd, heuristics.gpu.mcg; docs/baselines_cafgd_mcg.md): each score
term's effect on hand-built states, the shared gradient against real placements, their reduction
to FGD when their extra terms are off, the simulator hooks, and the scheduler contract."""
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test

import heuristics.gpu.simulator as sim
from heuristics.gpu.baselines import NodeRulePolicy, fgd_fragmentation, greedy_gradient
from heuristics.gpu.cafgd import CAFGD
from heuristics.gpu.cluster import Instance, Job, Placement
from heuristics.gpu.mcg import mcg_rule
from heuristics.gpu.policy import Outcome
from heuristics.gpu.registry import make_policy, policy_migrates, policy_names, policy_options, protocol_gaps
from heuristics.gpu.simulator import SimConfig, simulate
from heuristics.gpu.trace import TraceJob
from proofs_check.testing import check_policy, policy_state_machine


def _state(*nodes: tuple[tuple[int, int], ...]) -> Placement:
    """Placement from per-node (job, g) lists."""
    return Placement(8, tuple(tuple(Instance(j, g) for j, g in node) for node in nodes))


def _node_of(policy, job_id: int) -> list[int]:
    return [n for n, node in enumerate(policy.placement().nodes) for i in node if i.job == job_id]


def tj(i, submit, duration, g, w):
    return TraceJob(i, float(submit), float(duration), g, w)


# nodes with 2 / 4 / 8 free GPUs
FREE_2_4_8 = _state(((10, 6),), ((11, 4),), ())


# --------------------------------------------------------------------------- registry / protocol
@pytest.mark.parametrize("name", ["cafgd", "mcg"])
def test_registered_non_migrating_and_protocol_complete(name):
    assert name in policy_names()
    p = make_policy(name, 3)
    assert protocol_gaps(p) == [] and p.name == name and not policy_migrates(name, p)


def test_options_are_the_documented_ones():
    assert policy_options("cafgd") == ["long_weight", "short_window", "long_window", "hold_threshold", "max_hold"]
    assert policy_options("mcg") == ["balance_weight"]
    with pytest.raises(ValueError, match="long_weight"):
        make_policy("cafgd", 2, long_weight=1.5)
    with pytest.raises(ValueError, match="balance_weight"):
        make_policy("mcg", 2, balance_weight=-1)


@pytest.mark.parametrize("name, opts", [("cafgd", {"long_weight": 0.25, "max_hold": 7.0}),
                                        ("mcg", {"balance_weight": 0.5})])
def test_state_round_trip_keeps_options(name, opts):
    p = make_policy(name, 3, **opts)
    assert p.arrive(Job(1, 2, 2)).ok
    q = p.with_state(p.state_key())
    assert q.state_key() == p.state_key() and q.running() == p.running()
    assert type(q) is type(p) and vars(q)["name"] == name
    assert {k: getattr(q, k) for k in opts} == opts
    c = p.clone()
    assert c.arrive(Job(2, 1, 1)).ok and 2 not in p.running()


# --------------------------------------------------------------------------- shared gradient
def _placement_gradient(before: Placement, after: Placement, p) -> float:
    """Σ_n F(free_n after) − F(free_n before): the gradient read off two real placements."""
    return sum(fgd_fragmentation(8 - after.used(n), p) - fgd_fragmentation(8 - before.used(n), p)
               for n in range(before.n_nodes))


@settings(max_examples=150, deadline=None, database=None)
@given(used=st.lists(st.integers(0, 8), min_size=1, max_size=5), g=st.integers(1, 8), w=st.integers(1, 4),
       raw=st.lists(st.integers(0, 5), min_size=8, max_size=8), beta=st.sampled_from([0.0, 1.0]))
def test_greedy_gradient_equals_the_real_placements_gradient(used, g, w, raw, beta):
    if not any(raw):
        raw[0] = 1
    dist = [r / sum(raw) for r in raw]
    start = _state(*(((100 + n, u),) if u else () for n, u in enumerate(used)))
    policy = NodeRulePolicy("fgd", len(used), demand_dist=dist).with_state(start)
    policy._rule = mcg_rule(beta)  # the placement engine under MCG's key (beta 0: FGD's order)
    predicted = greedy_gradient(policy.class_levels(), g, w, policy._rule, dist)
    res = policy.arrive(Job(1, g, w))
    assert (predicted is None) == (not res.ok)
    if res.ok:
        assert predicted == pytest.approx(_placement_gradient(start, policy.placement(), dist))


# --------------------------------------------------------------------------- CAFGD terms
def _windows(policy: CAFGD) -> CAFGD:
    """Old 2-GPU jobs (only in the long window), recent 4-GPU ones (in both)."""
    policy.tick(0.0)
    policy.observe_submission(0.0, Job(100, 2, 3))
    policy.tick(7200.0)
    policy.observe_submission(7200.0, Job(101, 4, 1))
    return policy


@pytest.mark.parametrize("alpha, node", [
    # long term {2: 3/4, 4: 1/4}: keep the 2-free node for a 2-GPU job, take the empty node (ΔF 0)
    (1.0, 2),
    # short term {4: 1}: the 2-free node is useless to 4-GPU jobs, fill it (ΔF = −1)
    (0.0, 0),
    (0.5, 0),  # {2: 3/8, 4: 5/8}: ΔF −0.25 on the 2-free node, 0 on the empty one
])
def test_cafgd_long_short_weight_moves_the_instance(alpha, node):
    p = _windows(make_policy("cafgd", 3, long_weight=alpha).with_state(FREE_2_4_8))
    assert p.arrive(Job(1, 1, 1)).ok
    assert _node_of(p, 1) == [node]


def test_cafgd_windows_forget_old_submissions():
    p = _windows(make_policy("cafgd", 3).with_state(FREE_2_4_8))
    assert p._short.counts == [0, 0, 0, 1, 0, 0, 0, 0] and p._long.counts == [0, 3, 0, 1, 0, 0, 0, 0]
    p.tick(7200.0 + 3600.0)
    assert p._short.shares() is None and p._long.counts == [0, 3, 0, 1, 0, 0, 0, 0]
    with pytest.raises(ValueError, match="backwards"):
        p.tick(0.0)


def test_cafgd_holds_a_fragmenting_job_while_something_runs():
    # running 8x1; a 1-GPU job on the empty node would strand 7·P(m > 7) = 3.5 GPUs per GPU used
    p = make_policy("cafgd", 2)
    assert p.arrive(Job(1, 8, 1)).ok
    before = p.state_key()
    res = p.arrive(Job(2, 1, 1))
    assert res.outcome is Outcome.REFUSED and "held" in res.reason and "3.500" in res.reason
    assert p.state_key() == before
    assert make_policy("cafgd", 2, hold_threshold=3.5).with_state(before).arrive(Job(2, 1, 1)).ok
    assert p.depart(1).ok and p.arrive(Job(2, 1, 1)).ok  # nothing running: never held


def test_cafgd_never_holds_on_an_idle_cluster():
    p = make_policy("cafgd", 2)
    p.tick(0.0)
    p.observe_submission(0.0, Job(100, 8, 5))  # the windows expect 8-GPU jobs: ΔF = 7·5/6 per GPU
    p.observe_submission(0.0, Job(1, 1, 1))
    assert p.arrive(Job(1, 1, 1)).ok


def test_cafgd_admits_a_held_job_after_max_hold_seconds():
    p = make_policy("cafgd", 2, max_hold=600.0)
    p.tick(0.0)
    for job in (Job(1, 8, 1), Job(2, 1, 1)):  # windows {8: 1/2, 1: 1/2}: job 2 strands 3.5 per GPU
        p.observe_submission(0.0, job)
    assert p.arrive(Job(1, 8, 1)).ok
    p.tick(599.0)
    assert p.arrive(Job(2, 1, 1)).outcome is Outcome.REFUSED
    p.tick(600.0)
    assert p.arrive(Job(2, 1, 1)).ok


@pytest.mark.parametrize("opts, start", [({}, 100.0), ({"hold_threshold": math.inf}, 1.0)])
def test_cafgd_in_the_simulator_waits_for_the_next_release(opts, start):
    jobs = [tj(0, 0, 100, 8, 1), tj(1, 1, 10, 1, 1)]
    res = simulate(jobs, SimConfig("cafgd", 2, policy_opts=tuple(opts.items())), phi_star=None)
    assert res.status == "complete" and res.jobs[1].start == start


@settings(max_examples=40, deadline=None, database=None)
@given(events=st.lists(st.tuples(st.integers(1, 8), st.integers(1, 3), st.integers(0, 9)), max_size=14))
def test_cafgd_without_history_or_hold_is_fgd(events):
    """No submissions observed and hold_threshold = inf: exactly FGD's decisions."""
    a, b = make_policy("cafgd", 3, hold_threshold=math.inf), make_policy("fgd", 3)
    _same_decisions(a, b, events)


# --------------------------------------------------------------------------- MCG terms
def test_mcg_balance_term_spreads_where_fragmentation_is_indifferent():
    # only 1-GPU demand: ΔF = 0 everywhere; FGD packs onto the used node, MCG's balance term
    # ((u+1)² − u²)/64 prefers the empty node
    start = _state(((10, 1),), ())
    fgd, mcg = make_policy("fgd", 2).with_state(start), make_policy("mcg", 2).with_state(start)
    flat = make_policy("mcg", 2, balance_weight=0.0).with_state(start)
    for p in (fgd, mcg, flat):
        assert p.arrive(Job(1, 1, 1)).ok
    assert (_node_of(fgd, 1), _node_of(flat, 1), _node_of(mcg, 1)) == ([0], [0], [1])


def test_mcg_pending_demand_steers_placement():
    # running 4x1 on node 0. Alone, a 1-GPU job goes to the empty node (ΔF 0 there, 1.5 on node 0);
    # with two 8-GPU jobs pending, breaking the empty node costs 7·2/4 = 3.5 and node 0 only 0.25
    start = _state(((10, 4),), ())
    alone = make_policy("mcg", 2).with_state(start)
    assert alone.arrive(Job(1, 1, 1)).ok and _node_of(alone, 1) == [1]
    queued = make_policy("mcg", 2).with_state(start)
    big, small = Job(2, 8, 2), Job(1, 1, 1)
    queued.prioritise([big, small])
    assert queued.arrive(small).ok and _node_of(queued, 1) == [0]


def test_mcg_priority_least_fragmenting_first_unfit_last():
    # running 4x1 on node 0, node 1 empty; pending {8: 2, 1: 1, 4: 1} + running {4: 1}
    # 4x1 goes to the empty node (balance): gradient +1.6 / 4 GPUs = 0.4; 1x1 to node 0: 0.8;
    # 8x2 does not fit
    p = make_policy("mcg", 2).with_state(_state(((10, 4),), ()))
    a, b, c = Job(1, 8, 2), Job(2, 1, 1), Job(3, 4, 1)
    assert p.prioritise([a, b, c]) == [c, b, a]
    assert p.prioritise([b, Job(4, 1, 1)]) == [b, Job(4, 1, 1)]  # ties keep queue order


def test_mcg_reorders_the_simulator_queue():
    # N = 1: 4x1 runs; the 8x1 head cannot fit, the 1x1 behind it can. FIFO blocks FGD; MCG's
    # priority puts the fitting job first
    jobs = [tj(0, 0, 10, 4, 1), tj(1, 1, 5, 8, 1), tj(2, 2, 5, 1, 1)]
    fgd = simulate(jobs, SimConfig("fgd", 1), phi_star=None)
    mcg = simulate(jobs, SimConfig("mcg", 1), phi_star=None)
    assert [r.start for r in fgd.jobs] == [0, 10, 15]
    assert [r.start for r in mcg.jobs] == [0, 10, 2]


def test_a_priority_that_is_not_a_permutation_aborts_the_run(monkeypatch):
    class Dropper:
        def __init__(self, inner):
            self.inner = inner

        def prioritise(self, queue):
            return list(queue)[1:]

        def __getattr__(self, name):
            return getattr(self.inner, name)

    monkeypatch.setattr(sim, "make_policy", lambda name, n, cap, **o: Dropper(make_policy(name, n, cap)))
    res = simulate([tj(0, 0, 5, 8, 1), tj(1, 1, 5, 8, 1)], SimConfig("best-fit", 1), phi_star=None)
    assert res.status == "aborted" and "permutation" in res.note


@settings(max_examples=40, deadline=None, database=None)
@given(events=st.lists(st.tuples(st.integers(1, 8), st.integers(1, 3), st.integers(0, 9)), max_size=14))
def test_mcg_without_queue_or_balance_is_fgd(events):
    a, b = make_policy("mcg", 3, balance_weight=0.0), make_policy("fgd", 3)
    _same_decisions(a, b, events)


def _same_decisions(a, b, events) -> None:
    """Drive two schedulers through the same arrivals (g, w) / departures (pick ≥ 8) and compare."""
    jid = 0
    for g, w, pick in events:
        if pick >= 8 and a.running():
            victim = sorted(a.running())[pick % len(a.running())]
            assert a.depart(victim).ok and b.depart(victim).ok
        else:
            jid += 1
            ra, rb = a.arrive(Job(jid, g, w)), b.arrive(Job(jid, g, w))
            assert ra.outcome is rb.outcome
        assert a.placement() == b.placement()


# --------------------------------------------------------------------------- contract
def test_scheduler_contract_exhaustive():
    # MCG's three claims in one exploration (the search checks every claim on each state once)
    check_policy("mcg", claims=["policy.valid", "policy.no-stuck", "policy.admission"], max_nodes=2)
    check_policy("cafgd", claims=["policy.valid", "policy.no-stuck"], max_nodes=2)


def test_cafgd_hold_is_an_admission_finding():
    with pytest.raises(AssertionError, match=r"policy.admission violated[\s\S]*held"):
        check_policy("cafgd", claims=["policy.admission"], max_nodes=1)


@pytest.mark.parametrize("name", ["cafgd", "mcg"])
def test_state_machine(name):
    # CAFGD holds jobs that fit on purpose (its wait-for-peak rule): policy.admission is violated
    # by design (test above), so the machine checks it for MCG only.
    run_state_machine_as_test(policy_state_machine(name, n_nodes=8, admission=name != "cafgd"),
                              settings=settings(max_examples=25, stateful_step_count=20, deadline=None,
                                                database=None))
