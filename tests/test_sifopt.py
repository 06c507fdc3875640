"""SIFOpt: Φπ = Φ★ after every event, minimum migrations (vs brute force), fallback accounting."""
from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import heuristics.gpu.sifopt as sifopt_mod
from heuristics.gpu.cluster import Instance, Job, Placement, partial_nodes, placement_violations
from heuristics.gpu.registry import make_policy
from heuristics.gpu.sifopt import SIFOpt, heuristic_repack, plain
from oracle.gpu.min_migration import min_migration_repack
from oracle.gpu.repack_bruteforce import repack_bruteforce
from oracle.gpu.phi_star import phi_star, phi_star_bruteforce
from oracle.result import Status

G = 8

# An event: ("arrive", g, w) or ("depart", index into the running jobs).
events = st.lists(st.one_of(
    st.tuples(st.just("arrive"), st.integers(1, G), st.integers(1, 2)),
    st.tuples(st.just("depart"), st.integers(0, 10)),
), min_size=4, max_size=16)


def node_multisets(p: Placement) -> list[Counter]:
    return [Counter(i.job for i in node) for node in p.nodes]


def check_event(before: Placement, after: Placement, res, arrived: Job | None, departed: int | None):
    """``after`` is ``before`` with the departed job removed, the migrations applied and the
    arrived job's instances added somewhere (admissions are not migrations)."""
    nodes = node_multisets(before)
    if departed is not None:
        for c in nodes:
            c.pop(departed, None)
    for m in res.migrations:
        assert m.job != (arrived.id if arrived else None) and m.job != departed
        assert nodes[m.src][m.job] > 0, f"migration {m} from a node without that job"
        nodes[m.src][m.job] -= 1
        nodes[m.dst][m.job] += 1
    got = node_multisets(after)
    new_id = arrived.id if arrived is not None and res.ok else None
    for want, have in zip(nodes, got):
        placed_new = have.pop(new_id, 0) if new_id is not None else 0
        assert placed_new >= 0
        assert +want == have
    if new_id is not None:
        assert sum(c[new_id] for c in node_multisets(after)) == arrived.w


def phi_star_of(p: Placement) -> int | None:
    return phi_star_bruteforce(p.counts(), p.n_nodes, p.capacity).objective


def apply_event(policy, ev, job_id: int):
    """Apply ``ev`` — ("arrive", g, w) as job ``job_id``, or ("depart", k): the k-th running job
    (modulo their number) — and check the transition with :func:`check_event`; a departure must
    succeed. Returns (placement before, result, departed job id or None), or None for a
    departure while nothing runs."""
    before = policy.placement()
    if ev[0] == "arrive":
        job = Job(job_id, ev[1], ev[2])
        res = policy.arrive(job)
        check_event(before, policy.placement(), res, job, None)
        return before, res, None
    running = sorted(policy.running())
    if not running:
        return None
    jid = running[ev[1] % len(running)]
    res = policy.depart(jid)
    assert res.ok
    check_event(before, policy.placement(), res, None, jid)
    return before, res, jid


def replay(policy, evs, tiny_check=None):
    """Run ``evs`` on ``policy`` checking validity and Φπ = Φ★ after each event."""
    next_id = 0
    for ev in evs:
        if ev[0] == "arrive":
            now = policy.placement()
            total = list(now.counts())
            total[ev[1] - 1] += ev[2]
            fits_somewhere = phi_star_bruteforce(tuple(total), now.n_nodes, G).status is not Status.INFEASIBLE
        step = apply_event(policy, ev, next_id)
        if step is None:
            continue
        before, res, departed = step
        if ev[0] == "arrive":
            next_id += 1
            assert res.ok == fits_somewhere  # SIFOpt refuses only what no packing holds
        elif tiny_check is not None:
            tiny_check(before, departed, res)
        after = policy.placement()
        assert placement_violations(after, policy.running().values()) == []
        assert partial_nodes(after) == phi_star_of(after)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), events)
def test_exact_sifopt_keeps_phi_star_after_every_event(n_nodes, evs):
    policy = make_policy("sifopt", n_nodes)
    replay(policy, evs)
    assert policy.stats.heuristic == policy.stats.fallbacks == policy.stats.phi_unknown == 0


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 4), events)
def test_sifopt_on_highs_keeps_phi_star_after_every_event(n_nodes, evs):
    policy = make_policy("sifopt", n_nodes, solver="highs")
    replay(policy, evs)
    assert policy.stats.fallbacks == 0


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), events)
def test_heuristic_sifopt_also_reaches_phi_star(n_nodes, evs):
    policy = SIFOpt(n_nodes, exact_max_nodes=0)
    replay(policy, evs)
    assert policy.stats.exact == 0


def _departure_is_minimal(before: Placement, jid: int, res) -> None:
    """On tiny clusters, a departure's migrations equal the brute-force minimum."""
    rest = [[(i.job, i.g) for i in node if i.job != jid] for node in before.nodes]
    if sum(len(n) for n in rest) <= 6:
        assert (len(res.migrations), res.gpus_moved) == repack_bruteforce(rest, G)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), events)
def test_departure_migrations_are_the_brute_force_minimum(n_nodes, evs):
    replay(SIFOpt(n_nodes), evs, tiny_check=_departure_is_minimal)


def test_arrival_admitted_through_migrations_when_best_fit_refuses():
    p = SIFOpt(2).with_state(Placement(G, ((Instance(1, 4),), (Instance(2, 4),))))
    before = p.placement()
    res = p.arrive(Job(3, 8, 1))  # no node has 8 free GPUs; moving one 4 frees one
    assert res.ok and len(res.migrations) == 1 and res.gpus_moved == 4
    check_event(before, p.placement(), res, Job(3, 8, 1), None)
    assert partial_nodes(p.placement()) == 0
    assert not p.arrive(Job(4, 1, 1)).ok  # the cluster is full: no packing holds it


def test_time_limit_hit_falls_back_to_the_heuristic_and_is_counted(monkeypatch):
    real = sifopt_mod.min_migration_repack

    def limited(*args, **kwargs):
        cert = real(*args, **kwargs)
        # What a solve stopped by its time limit looks like: an incumbent, not proven.
        return replace(cert, status=Status.FEASIBLE) if cert.objective is not None else cert

    monkeypatch.setattr(sifopt_mod, "min_migration_repack", limited)
    p = SIFOpt(3)
    for jid, (g, w) in enumerate([(3, 1), (5, 1), (3, 1), (2, 1), (1, 2)]):
        assert p.arrive(Job(jid, g, w)).ok
        assert partial_nodes(p.placement()) == phi_star_of(p.placement())
    p.depart(1)
    assert partial_nodes(p.placement()) == phi_star_of(p.placement())
    assert p.stats.fallbacks > 0 and p.stats.exact == 0


def test_heuristic_keeps_full_nodes_when_that_still_reaches_phi_star():
    nodes = (((1, 8),), ((2, 4),), ((3, 4),), ((4, 2),))
    status, placement, moves, _ = heuristic_repack(nodes, G)
    assert status == "ok" and placement[0] == ((1, 8),)
    assert len(moves) == 1 and sum(1 for n in placement if 0 < sum(g for _, g in n) < G) == 1


def test_clone_and_with_state_are_independent():
    p = SIFOpt(3)
    p.arrive(Job(1, 4, 1))
    q = p.clone()
    q.arrive(Job(2, 4, 1))
    assert 2 not in p.running() and 2 in q.running()
    r = p.with_state(q.state_key())
    assert r.placement() == q.placement() and r.running() == q.running()
    assert plain(r.placement()) == plain(q.placement())


@pytest.mark.parametrize("opts, msg", [({"exact_max_nodes": -1}, "exact_max_nodes"),
                                       ({"time_limit": 0}, "time_limit"),
                                       ({"solver": "cbc"}, "unknown solver")])
def test_bad_options_are_refused(opts, msg):
    with pytest.raises(ValueError, match=msg):
        make_policy("sifopt", 4, **opts)


def test_consolidate_drains_the_cheapest_partial_node_into_the_fullest():
    nodes = (((1, 4), (2, 2)), ((3, 1),), ((4, 1),), ())
    targets = sifopt_mod.consolidate(nodes, G, (), 0)
    assert targets == [(2, 1, 0, 1, 0, 0, 0, 0), (0,) * G, (0,) * G, (0,) * G]  # both 1s join 4+2


def test_consolidate_gives_up_when_greedy_draining_gets_stuck():
    # Draining the 4 onto the 1+1 node leaves 4+2 and 1+1+4: neither fits into the other,
    # although Φ★ = 1 ([4, 4] + [2, 1, 1]); candidate (c) is then dropped, not forced.
    nodes = (((1, 4), (2, 2)), ((3, 1), (4, 1)), ((5, 4),), ())
    assert sifopt_mod.consolidate(nodes, G, (), 1) is None
    status, placement, _, _ = heuristic_repack(nodes, G)
    assert status == "ok" and sum(1 for n in placement if 0 < sum(g for _, g in n) < G) == 1


def _full_model(*args, **kwargs):
    """The min-migration repack as it was before issue 15: always the unrestricted ILP."""
    return min_migration_repack(*args, **kwargs, shortcuts=False)


@pytest.mark.parametrize("n_nodes, seed", [(6, 0), (10, 1), (12, 2)])
def test_each_event_decides_as_the_unrestricted_model_does(monkeypatch, n_nodes, seed):
    """From the same state, today's SIFOpt (BFD Φ★ certificate, one-move search, budget
    deepening) and SIFOpt on the unrestricted ILP with the ILP/DP Φ★ make the same decision:
    same outcome, same number of migrations, same GPUs moved (both are exact lexicographic
    minimisers)."""
    rng = random.Random(seed)
    policy = SIFOpt(n_nodes)
    for job_id in range(60):
        running = sorted(policy.running())
        reference = policy.clone()
        if running and rng.random() < 0.45:
            jid = rng.choice(running)
            now, ref = policy.depart(jid), None
            with monkeypatch.context() as m:
                m.setattr(sifopt_mod, "min_migration_repack", _full_model)
                m.setattr(sifopt_mod, "phi_star", phi_star)
                ref = reference.depart(jid)
        else:
            job = Job(job_id, rng.choice([1, 1, 1, 2, 3, 4, 6, 8]), rng.choice([1, 1, 2, 3]))
            now = policy.arrive(job)
            with monkeypatch.context() as m:
                m.setattr(sifopt_mod, "min_migration_repack", _full_model)
                m.setattr(sifopt_mod, "phi_star", phi_star)
                ref = reference.arrive(job)
        assert (now.ok, len(now.migrations), now.gpus_moved) == (ref.ok, len(ref.migrations), ref.gpus_moved)
    assert policy.stats.fallbacks == policy.stats.heuristic == policy.stats.phi_unknown == 0
    assert policy.stats.exact > 0


def test_exact_range_covers_512_nodes():
    assert SIFOpt(4).exact_max_nodes == 512 == sifopt_mod.DEFAULT_EXACT_MAX_NODES
