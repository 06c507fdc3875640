"""FFT-like and DRR-like baselines: valid placements under random timed events, round semantics."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics.gpu.cluster import Instance, Job, Placement, partial_nodes, placement_violations
from heuristics.gpu.registry import make_policy
from oracle.gpu.phi_star import phi_star_bruteforce
from test_sifopt import apply_event, check_event  # tests/ is on sys.path (pytest prepend import mode)

G = 8

timed_events = st.lists(st.tuples(
    st.floats(0, 40),  # time since the previous event
    st.one_of(st.tuples(st.just("arrive"), st.integers(1, G), st.integers(1, 3)),
              st.tuples(st.just("depart"), st.integers(0, 10))),
), min_size=4, max_size=20)


def run_timed(policy, evs) -> int:
    """Replay timed events with a tick before each; check every state; return migrations seen."""
    now, next_id, moved = 0.0, 0, 0
    for dt, ev in evs:
        now += dt
        before = policy.placement()
        res = policy.tick(now)
        assert res.ok
        check_event(before, policy.placement(), res, None, None)
        moved += len(res.migrations)
        step = apply_event(policy, ev, next_id)
        if ev[0] == "arrive":
            next_id += 1
        if step is None:
            continue
        res = step[1]
        assert res.migrations == ()  # within a round both place by best-fit, never migrate
        assert placement_violations(policy.placement(), policy.running().values()) == []
    return moved


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(["fft", "drr"]), st.integers(1, 5), timed_events)
def test_placements_stay_valid_under_random_timed_events(name, n_nodes, evs):
    run_timed(make_policy(name, n_nodes, round_length=30.0), evs)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), timed_events)
def test_fft_is_at_phi_star_right_after_each_round_start(n_nodes, evs):
    policy = make_policy("fft", n_nodes, round_length=30.0)
    now, next_id = 0.0, 0
    for dt, ev in evs:
        before_round = policy._round
        now += dt
        policy.tick(now)
        if policy._round != before_round:
            p = policy.placement()
            assert partial_nodes(p) == phi_star_bruteforce(p.counts(), n_nodes, G).objective
        if ev[0] == "arrive":
            policy.arrive(Job(next_id, ev[1], ev[2]))
            next_id += 1
        elif policy.running():
            running = sorted(policy.running())
            policy.depart(running[ev[1] % len(running)])


def test_fft_repacks_once_per_round():
    p = make_policy("fft", 3, round_length=100.0)
    p.tick(0.0)
    for jid, g in enumerate([4, 4, 2]):
        p.arrive(Job(jid, g, 1))  # best-fit: 4+4 on node 0, 2 on node 1 -> Φπ = 1 already
    p.depart(0)  # node 0 keeps a 4, node 1 a 2: Φπ = 2 > Φ★ = 1
    assert p.tick(50.0).migrations == ()  # same round: nothing happens
    res = p.tick(100.0)
    assert len(res.migrations) == 1 and res.gpus_moved == 2
    assert partial_nodes(p.placement()) == 1
    assert p.tick(150.0).migrations == ()


def test_drr_drains_the_least_utilised_node_onto_the_fullest_that_fit():
    state = Placement(G, ((Instance(1, 6),), (Instance(2, 1), Instance(3, 1)), (Instance(4, 4),), ()))
    p = make_policy("drr", 4).with_state(state)
    res = p.tick(0.0)
    # Node 1 (2 GPUs) is drained; each 1-GPU instance goes to the fullest node with room: node 0.
    assert sorted((m.job, m.src, m.dst) for m in res.migrations) == [(2, 1, 0), (3, 1, 0)]
    assert p.placement().nodes[1] == () and p.placement().used(0) == 8


def test_drr_moves_nothing_unless_everything_fits():
    state = Placement(G, ((Instance(1, 6),), (Instance(2, 4),), ()))
    p = make_policy("drr", 3).with_state(state)
    assert p.tick(0.0).migrations == ()  # the 4 fits on no other non-empty node
    assert p.placement() == state


def test_time_going_backwards_is_refused():
    p = make_policy("drr", 2)
    p.tick(10.0)
    with pytest.raises(ValueError, match="backwards"):
        p.tick(5.0)


@pytest.mark.parametrize("name", ["fft", "drr"])
def test_bad_round_length_is_refused(name):
    with pytest.raises(ValueError, match="round_length"):
        make_policy(name, 2, round_length=0)


@pytest.mark.parametrize("name", ["fft", "drr"])
def test_clone_keeps_options_and_clock(name):
    p = make_policy(name, 3, round_length=60.0)
    p.tick(70.0)
    p.arrive(Job(1, 2, 1))
    q = p.clone()
    assert q.round_length == 60.0 and q.placement() == p.placement()
    assert q.tick(100.0).migrations == ()  # still round 1: no reorganisation
    with pytest.raises(ValueError):
        q.tick(10.0)
