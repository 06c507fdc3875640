"""Rack model: hop distance vs networkx, ring cost convention, validity checker, bad input."""
import itertools

import networkx as nx
import numpy as np
import pytest

from heuristics.rack.racks import (FragmentationPenalty, RackCluster, RackPlacement, check_residual,
                              hop_distance, placement_violations, ring_cost)
from heuristics.rack.ring_order import enumerate_ring, nearest_neighbour_ring, ring_order


@pytest.mark.parametrize("dims", [(5, 5, 6), (2, 3, 4), (1, 1, 7), (3, 1, 1)])
def test_closed_form_distance_matches_networkx_torus(dims):
    cluster = RackCluster.torus(dims)
    graph = nx.grid_graph(dim=list(reversed(dims)), periodic=True)  # nodes are (x, y, z)
    lengths = dict(nx.all_pairs_shortest_path_length(graph))
    for i, a in enumerate(cluster.coords):
        for j, b in enumerate(cluster.coords):
            assert cluster.dist[i, j] == lengths[a][b] == hop_distance(a, b, dims)


def test_ring_cost_closed_tour_convention():
    cluster = RackCluster.torus((5, 5, 6))
    d = cluster.dist
    assert ring_cost([7], d) == 0
    assert ring_cost([0, 1], d) == 2 * d[0, 1] == 2
    assert ring_cost([0, 1, 7], d) == d[0, 1] + d[1, 7] + d[7, 0]


def test_ring_order_exact_matches_brute_force_and_nn_is_a_tour():
    cluster = RackCluster.torus((3, 3, 3))
    rng = np.random.default_rng(3)
    for _ in range(20):
        racks = [int(r) for r in rng.choice(cluster.n, size=int(rng.integers(1, 7)), replace=False)]
        order, cost = ring_order(racks, cluster.dist)
        brute = min(ring_cost(p, cluster.dist) for p in itertools.permutations(racks))
        assert cost == brute == ring_cost(order, cluster.dist) and sorted(order) == sorted(racks)
        nn_order, nn_cost = nearest_neighbour_ring(racks, cluster.dist)
        assert nn_cost == ring_cost(nn_order, cluster.dist) >= brute


def test_ring_order_switches_to_nearest_neighbour_above_limit():
    cluster = RackCluster.torus((3, 3, 3))
    racks = list(range(0, 27, 3))  # nine racks
    assert ring_order(racks, cluster.dist) == nearest_neighbour_ring(racks, cluster.dist)
    assert ring_order(racks, cluster.dist, exact_limit=9) == enumerate_ring(racks, cluster.dist)


def test_validity_checker_catches_each_fault():
    cluster = RackCluster.torus((2, 2, 2), capacity=8)
    res = [8, 3, 0, 5, 8, 8, 8, 8]
    table = FragmentationPenalty().table(8)
    good = RackPlacement(((1, 3), (3, 4)), (1, 3), ring_cost((1, 3), cluster.dist), table[0] + table[1], "x")
    assert placement_violations(cluster, res, 7, good, table) == []
    assert placement_violations(cluster, res, 8, good)  # wrong sum
    assert placement_violations(cluster, res, 7, good._replace(alloc=((1, 4), (3, 3))))  # over residual
    assert placement_violations(cluster, res, 7, good._replace(ring=(1,)))  # ring misses a rack
    assert placement_violations(cluster, res, 7, good._replace(cost=good.cost + 1))  # cost lie
    assert placement_violations(cluster, res, 7, good._replace(frag=99.0), table)  # frag lie
    assert placement_violations(cluster, res, 7, good._replace(alloc=((1, 3), (1, 4))))  # repeated
    assert placement_violations(cluster, res, 3, good._replace(alloc=((1, 3), (3, 0))))  # zero chips


def test_bad_input_errors_name_the_field():
    with pytest.raises(ValueError, match="dims"):
        RackCluster.torus((0, 2, 2))
    with pytest.raises(ValueError, match="coords"):
        RackCluster((2, 2, 2), 8, ((0, 0, 0), (0, 0, 0)))
    with pytest.raises(ValueError, match="capacity"):
        RackCluster.torus((2, 2, 2), capacity=0)
    with pytest.raises(ValueError, match=r"residual\[1\]"):
        check_residual(RackCluster.torus((1, 1, 2), capacity=8), [8, 9])
    with pytest.raises(ValueError, match="penalty"):
        FragmentationPenalty("quadratic")
    with pytest.raises(ValueError, match="racks"):
        ring_order([1, 1], RackCluster.torus((2, 2, 2)).dist)


def test_penalty_tables_follow_the_paper_shape():
    for name in ("linear", "inverse"):
        f = FragmentationPenalty(name).table(64)
        assert f[0] == 0 and all(f[l] > f[l + 1] > 0 for l in range(1, 63))
