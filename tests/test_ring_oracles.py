"""Exact oracles (oracle/rack/ring_tour.py, oracle/rack/rack_subset.py) against brute force on small tori."""
import itertools

import numpy as np
import pytest

from heuristics.rack.racks import FragmentationPenalty, RackCluster, ring_cost
from oracle.rack.rack_subset import lex_optimal_subset, min_fragmentation
from oracle.rack.ring_tour import cp_sat_tour, held_karp, tour_length
from oracle.result import Status


def brute_tour(d):
    k = len(d)
    return min(tour_length((0,) + p, d) for p in itertools.permutations(range(1, k))) if k > 1 else 0


@pytest.mark.parametrize("seed", range(6))
def test_held_karp_cp_sat_and_brute_force_agree(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 8))
    if seed % 2:
        cluster = RackCluster.torus((3, 4, 5))
        racks = rng.choice(cluster.n, size=k, replace=False)
        d = cluster.dist[np.ix_(racks, racks)]
    else:  # a non-torus metric-free matrix: the methods must not rely on torus structure
        a = rng.integers(0, 20, (k, k))
        d = np.triu(a, 1) + np.triu(a, 1).T
    hk_cost, hk_order = held_karp(d)
    cert = cp_sat_tour(d, time_limit=10)
    assert cert.is_optimal
    assert hk_cost == cert.objective == cert.bound == brute_tour(d)
    assert tour_length(hk_order, d) == hk_cost and tour_length(cert.witness, d) == cert.objective
    assert sorted(hk_order) == sorted(cert.witness) == list(range(k))


def brute_lex(residual, demand, dist, table):
    """Every subset of racks, every allocation with ≥ 1 chip per rack, every tour."""
    best = None
    racks = [i for i, r in enumerate(residual) if r > 0]
    for k in range(1, len(racks) + 1):
        for s in itertools.combinations(racks, k):
            if sum(residual[i] for i in s) < demand or demand < k:
                continue
            tour = brute_tour(dist[np.ix_(s, s)])
            for alloc in itertools.product(*[range(1, residual[i] + 1) for i in s]):
                if sum(alloc) == demand:
                    key = (k, tour, sum(table[residual[i] - a] for i, a in zip(s, alloc)))
                    best = key if best is None or key < best else best
        if best is not None:
            return best
    return None


@pytest.mark.parametrize("penalty", ["linear", "inverse"])
@pytest.mark.parametrize("seed", range(12))
def test_rack_subset_oracle_matches_brute_force(seed, penalty):
    rng = np.random.default_rng(100 + seed)
    dims = [(2, 2, 2), (1, 3, 3), (2, 2, 3)][seed % 3]
    cap = 5
    cluster = RackCluster.torus(dims, capacity=cap)
    residual = [int(x) for x in rng.integers(0, cap + 1, cluster.n)]
    if seed % 3 == 0:  # equal residuals: many ring-cost ties, exercises the fragmentation bound
        residual = [cap - 1 if x else 0 for x in residual]
    demand = int(rng.integers(1, max(2, sum(residual) + 2)))
    table = FragmentationPenalty(penalty).table(cap)
    cert = lex_optimal_subset(residual, demand, cluster.dist, table)
    brute = brute_lex(residual, demand, cluster.dist, table)
    if brute is None:
        assert cert.status is Status.INFEASIBLE and cert.objective is None
        return
    assert cert.is_optimal
    assert cert.objective[:2] == brute[:2] and cert.objective[2] == pytest.approx(brute[2])
    assert cert.bound == cert.objective
    alloc = dict(cert.witness.alloc)
    assert sum(alloc.values()) == demand and all(1 <= c <= residual[r] for r, c in alloc.items())
    ring = cert.witness.ring
    assert sorted(ring) == sorted(alloc) and ring_cost(ring, cluster.dist) == cert.objective[1]
    assert sum(table[residual[r] - c] for r, c in alloc.items()) == pytest.approx(cert.objective[2])


def test_min_fragmentation_matches_enumeration():
    table = FragmentationPenalty("inverse").table(9)
    for res, demand in [((9, 4, 7), 12), ((3, 3), 6), ((9, 9, 9), 3), ((5, 8), 9)]:
        cost, chips = min_fragmentation(res, demand, table)
        brute = min(sum(table[r - a] for r, a in zip(res, alloc))
                    for alloc in itertools.product(*[range(1, r + 1) for r in res]) if sum(alloc) == demand)
        assert cost == pytest.approx(brute) and sum(chips) == demand
        assert sum(table[r - a] for r, a in zip(res, chips)) == pytest.approx(cost)


def test_time_limit_gives_an_unproven_incumbent_not_a_result():
    cluster = RackCluster.torus()
    residual = [63] * cluster.n
    cert = lex_optimal_subset(residual, 5 * 63 + 1, cluster.dist, FragmentationPenalty().table(64), time_limit=0.0)
    assert cert.status is Status.FEASIBLE and cert.bound[1] <= cert.objective[1]


def test_paper_scale_six_racks_proven_optimal():
    cluster = RackCluster.torus()
    rng = np.random.default_rng(7)
    residual = [int(x) for x in rng.integers(0, 64, cluster.n)]
    top = sorted(residual, reverse=True)
    cert = lex_optimal_subset(residual, sum(top[:5]) + 1, cluster.dist, FragmentationPenalty().table(64))
    assert cert.is_optimal and cert.objective[0] == 6
    assert cert.objective[1] >= 6  # six distinct torus cells need at least six unit hops


def test_oracle_bad_input():
    d = RackCluster.torus((2, 2, 2)).dist
    table = FragmentationPenalty().table(8)
    with pytest.raises(ValueError, match="dist"):
        lex_optimal_subset([1, 2], 2, d, table)
    with pytest.raises(ValueError, match="demand"):
        lex_optimal_subset([1] * 8, 0, d, table)
    with pytest.raises(ValueError, match="table"):
        lex_optimal_subset([9] * 8, 3, d, table)
    with pytest.raises(ValueError, match="table"):
        lex_optimal_subset([1] * 8, 3, d, [0.0, -1.0])
    with pytest.raises(ValueError, match="dist"):
        held_karp(np.array([[0, 1], [2, 0]]))


def test_path_dp_matches_enumeration(monkeypatch):
    import oracle.rack.rack_subset as rs
    dist = RackCluster.torus((3, 4, 5)).dist
    members = np.array([0, 7, 13, 22, 31, 45])
    by_enumeration = rs._path_costs(members, dist)
    monkeypatch.setattr(rs, "PERMUTATION_LIMIT", 0)
    assert np.array_equal(rs._path_costs(members, dist), by_enumeration)


def test_many_rack_jobs_match_brute_force_over_subsets():
    """k* = 9 and 10 (one chip per rack): min tour over all 9/10-subsets via Held–Karp."""
    cluster = RackCluster.torus((1, 3, 4), capacity=1)
    table = FragmentationPenalty().table(1)
    residual = [1] * 11 + [0]
    for demand in (9, 10):
        cert = lex_optimal_subset(residual, demand, cluster.dist, table)
        brute = min(held_karp(cluster.dist[np.ix_(s, s)])[0] for s in itertools.combinations(range(11), demand))
        assert cert.is_optimal and cert.objective == (demand, brute, 0.0)
        assert ring_cost(cert.witness.ring, cluster.dist) == brute


def test_node_limit_gives_an_unproven_incumbent_reproducibly():
    cluster = RackCluster.torus()
    residual = [63] * cluster.n
    table = FragmentationPenalty().table(64)
    a = lex_optimal_subset(residual, 5 * 63 + 1, cluster.dist, table, node_limit=3)
    b = lex_optimal_subset(residual, 5 * 63 + 1, cluster.dist, table, node_limit=3)
    assert a.status is Status.FEASIBLE and a.witness == b.witness and a.witness.nodes == 3
    assert a.bound[1] <= a.objective[1] and sum(c for _, c in a.witness.alloc) == 5 * 63 + 1
