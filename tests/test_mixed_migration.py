"""The minimum-migration oracle on mixed node capacities (docs/heterogeneous.md) against the
instance-level brute force: repack to Φ★, to a given target, with new instances, admission."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oracle.gpu.min_migration as min_migration_mod
from oracle.gpu.min_migration import min_migration_repack, min_migrations_to_admit
from oracle.gpu.mixed_phi import phi_star_mixed
from oracle.gpu.plain_nodes import normalise
from oracle.gpu.repack_bruteforce import admit_bruteforce, repack_bruteforce
from oracle.result import Certificate, Status

SIZES = (1, 2, 3, 4, 6, 8)


@st.composite
def mixed_placements(draw, max_nodes: int = 3, max_items: int = 6):
    """(capacities, placement): 1..max_nodes nodes of mixed sizes, a valid tiny placement (jobs
    keyed by g, so a job's instances share their demand)."""
    caps = draw(st.lists(st.sampled_from(SIZES), min_size=1, max_size=max_nodes))
    nodes: list[list[tuple[int, int]]] = [[] for _ in caps]
    for _ in range(draw(st.integers(0, max_items))):
        n = draw(st.integers(0, len(caps) - 1))
        room = caps[n] - sum(g for _, g in nodes[n])
        if room:
            g = draw(st.integers(1, room))
            nodes[n].append((10 * g + draw(st.integers(0, 1)), g))
    return caps, nodes


def partial(nodes, caps) -> int:
    return sum(1 for node, c in zip(nodes, caps) if 0 < sum(g for _, g in node) < c)


def check_certificate(cert, caps, current, new_items=()):
    """The target placement holds exactly the old plus new instances, every node within its own
    capacity; the moves and admissions turn ``current`` into it; the counts are its own."""
    nodes = normalise(current, caps)
    r = cert.witness
    assert r.placement is not None and len(r.placement) == len(caps)
    assert all(sum(g for _, g in node) <= c for node, c in zip(r.placement, caps))
    assert Counter(i for node in r.placement for i in node) == \
        Counter(i for node in nodes for i in node) + Counter(new_items)
    rebuilt = [Counter(node) for node in nodes]
    for m in r.moves:
        rebuilt[m.src][(m.job, m.g)] -= 1
        rebuilt[m.dst][(m.job, m.g)] += 1
    for a in r.admitted:
        rebuilt[a.dst][(a.job, a.g)] += 1
    assert [+c for c in rebuilt] == [Counter(node) for node in r.placement]
    assert (cert.objective, r.gpus_moved) == (len(r.moves), sum(m.g for m in r.moves))
    assert (r.partial_before, r.partial_after) == (partial(nodes, caps), partial(r.placement, caps))


def check_matches(cert, brute, caps, current, new_items=()):
    if brute is None:
        assert cert.status is Status.INFEASIBLE
        return
    assert cert.is_optimal
    check_certificate(cert, caps, current, new_items)
    assert (cert.objective, cert.witness.gpus_moved) == brute


@settings(max_examples=50, deadline=None)
@given(mixed_placements(), st.booleans())
def test_repack_to_phi_star_matches_bruteforce(case, shortcuts):
    caps, current = case
    cert = min_migration_repack(current, caps, shortcuts=shortcuts)
    check_matches(cert, repack_bruteforce(current, caps), caps, current)
    # Φ★ of the target is the mixed Φ★ (oracle.gpu.mixed_phi), each node against its capacity.
    counts = [0] * max(caps)
    for node in current:
        for _, g in node:
            counts[g - 1] += 1
    assert cert.witness.partial_after == phi_star_mixed(caps, counts).objective


@settings(max_examples=50, deadline=None)
@given(mixed_placements(), st.integers(0, 2), st.sampled_from(["cp-sat", "highs"]))
def test_repack_to_a_target_matches_bruteforce(case, target, solver):
    caps, current = case
    cert = min_migration_repack(current, caps, target_partial=target, solver=solver)
    check_matches(cert, repack_bruteforce(current, caps, target_partial=target), caps, current)


@settings(max_examples=50, deadline=None)
@given(mixed_placements(max_items=5), st.integers(1, 8), st.integers(1, 2), st.sampled_from(["cp-sat", "highs"]))
def test_admission_matches_bruteforce(case, g, w, solver):
    caps, current = case
    if g > max(caps):
        with pytest.raises(ValueError, match="outside"):
            min_migrations_to_admit(current, caps, g, w)
        return
    cert = min_migrations_to_admit(current, caps, g, w, job_id=99, solver=solver)
    check_matches(cert, admit_bruteforce(current, caps, g, w), caps, current, [(99, g)] * w)


@settings(max_examples=40, deadline=None)
@given(mixed_placements(max_items=5), st.lists(st.integers(1, 4), max_size=2))
def test_repack_with_new_instances_matches_bruteforce(case, new):
    caps, current = case
    new_items = [(90 + i, min(g, max(caps))) for i, g in enumerate(new)]
    cert = min_migration_repack(current, caps, new_items=new_items)
    check_matches(cert, repack_bruteforce(current, caps, new_items=new_items), caps, current, new_items)


def test_partial_is_against_the_nodes_own_capacity():
    # A full 2-GPU node is not partial: nothing to do. Two half-used 4-GPU nodes: one migration.
    assert min_migration_repack([[(1, 2)], []], [2, 8]).objective == 0
    cert = min_migration_repack([[(1, 2)], [(2, 2)], []], [4, 4, 8])
    assert (cert.objective, cert.witness.partial_before, cert.witness.partial_after) == (1, 2, 0)
    # An 8-GPU job fits only on the 8-GPU node, which a 1-GPU job blocks: move it to the 1-GPU node.
    cert = min_migrations_to_admit([[], [(1, 1)]], [1, 8], 8, 1, job_id=5)
    assert (cert.objective, cert.witness.moves[0][2:], cert.witness.admitted[0].dst) == (1, (1, 0), 1)
    assert min_migrations_to_admit([[], [(1, 1)]], [2, 4], 4, 2).status is Status.INFEASIBLE


def test_one_capacity_as_a_list_is_the_single_capacity_oracle():
    current = [[(1, 3), (2, 1)], [(3, 4), (4, 2)], [(5, 3)], [(6, 1)], []]
    for kw in ({}, {"target_partial": 1}, {"new_items": [(9, 2)]}, {"shortcuts": False}):
        a = min_migration_repack(current, 8, **kw)
        b = min_migration_repack(current, [8] * 5, **kw)
        assert (a.status, a.objective, a.witness) == (b.status, b.objective, b.witness)
    a, b = min_migrations_to_admit(current, 8, 8, 2), min_migrations_to_admit(current, [8] * 5, 8, 2)
    assert (a.status, a.objective, a.witness) == (b.status, b.objective, b.witness)


def test_cp_sat_and_highs_agree_on_a_larger_mixed_cluster():
    caps = [8] * 6 + [4] * 4 + [2] * 4 + [1] * 2
    current = [[(1, 3), (2, 2)], [(3, 5)], [(4, 1), (5, 1), (6, 1)], [(7, 6)], [(8, 4)], [],
               [(9, 3)], [(10, 2)], [(11, 1)], [], [(12, 1)], [(13, 1)], [(14, 2)], [], [(15, 1)], []]
    a = min_migration_repack(current, caps, shortcuts=False)
    b = min_migration_repack(current, caps, solver="highs", shortcuts=False)
    c = min_migration_repack(current, caps)
    assert a.is_optimal and b.is_optimal and c.is_optimal
    assert (a.objective, a.witness.gpus_moved) == (b.objective, b.witness.gpus_moved) == \
        (c.objective, c.witness.gpus_moved)
    check_certificate(a, caps, current)


def test_unproven_phi_star_is_never_an_answer(monkeypatch):
    unknown: Certificate = Certificate(Status.UNKNOWN, None, None, (), "stub", "0", 0.0)
    monkeypatch.setattr(min_migration_mod, "phi_star_mixed", lambda *a, **k: unknown)
    cert = min_migration_repack([[(1, 1)], [(2, 1)]], [4, 2])
    assert cert.status is Status.UNKNOWN and cert.objective is None and cert.witness.placement is None


def test_bad_capacities_are_refused():
    for caps, match in (([4, 0], "capacities"), ([], "non-empty"), ([2, 2], "n_nodes")):
        with pytest.raises(ValueError, match=match):
            min_migration_repack([[(1, 1)]], caps, n_nodes=3 if match == "n_nodes" else None)
    with pytest.raises(ValueError, match="outside 1..2"):
        min_migration_repack([[(1, 4)], []], [2, 8])
    with pytest.raises(ValueError, match="capacity 4"):
        min_migration_repack([[(1, 3), (2, 3)]], [4])
