"""Φ★, min nodes and the fill bound on mixed capacities and models (oracle.gpu.mixed_phi):
CP-SAT, HiGHS and the pattern-free brute force agree; one capacity gives the paper's Φ★."""
from __future__ import annotations

import random

import pytest

from oracle.gpu.mixed_phi import (
    ItemType,
    MixedProblem,
    fill_bound,
    mixed_bruteforce,
    phi_star_mixed,
    solve_mixed,
    witness_partial,
    witness_violations,
)
from oracle.gpu.phi_star import phi_star_bruteforce, phi_star_value
from oracle.result import Status


def _random_problem(rng: random.Random) -> MixedProblem:
    caps = [rng.choice([1, 2, 4, 8]) for _ in range(rng.randint(1, 4))]
    models = [rng.choice("AB") for _ in caps]
    demand: dict[ItemType, int] = {}
    for _ in range(rng.randint(0, 6)):
        t = ItemType(rng.choice([1, 1, 2, 3, 4, 8]), rng.choice([None, frozenset("A"), frozenset("B")]))
        demand[t] = demand.get(t, 0) + 1
    return MixedProblem.of(caps, demand, models)


@pytest.mark.parametrize("objective", ["partial", "nodes", "unplaced"])
def test_solvers_agree_with_bruteforce(objective):
    rng = random.Random(15)
    for _ in range(40):
        p = _random_problem(rng)
        brute = mixed_bruteforce(p, objective)
        for solver in ("cp-sat", "highs"):
            cert = solve_mixed(p, objective, solver=solver)
            assert cert.status == brute.status, (p, solver)
            assert cert.objective == brute.objective, (p, solver)
            if cert.is_optimal:
                assert witness_violations(p, cert.witness) == []
                if objective == "partial":
                    assert witness_partial(p, cert.witness) == cert.objective


def test_one_capacity_is_the_papers_phi_star():
    rng = random.Random(3)
    for _ in range(25):
        n = rng.randint(1, 4)
        counts = [rng.randint(0, 2) for _ in range(8)]
        mixed = phi_star_mixed([8] * n, counts)
        expected = phi_star_value(counts, n)
        assert (mixed.objective if mixed.is_optimal else None) == expected
        if sum(counts) <= 8:
            assert phi_star_bruteforce(counts, n).objective == expected


def test_partial_is_against_the_nodes_own_capacity():
    # a 4 on the 8-GPU node and a 2 on the 2-GPU node: one partial node; a 1-GPU node is never partial
    assert phi_star_mixed([8, 2], [0, 1, 0, 1, 0, 0, 0, 0]).objective == 1
    assert phi_star_mixed([8, 2], [0, 3, 0, 0, 0, 0, 0, 0]).objective == 1  # 2+2 on the 8, 2 on the 2
    assert phi_star_mixed([1, 1, 1], [2]).objective == 0
    assert phi_star_mixed([4, 4, 2], [0, 1, 0, 2]).objective == 0  # 4, 4, 2: every node full


def test_infeasible_and_model_sets():
    assert phi_star_mixed([2, 2], [0, 0, 0, 1]).status is Status.INFEASIBLE  # a 4 on 2-GPU nodes
    only_a = {ItemType(8, frozenset({"A"})): 1}
    assert phi_star_mixed([8, 8], only_a, models=["B", "B"]).status is Status.INFEASIBLE
    cert = phi_star_mixed([8, 8], {**only_a, ItemType(4, frozenset({"B"})): 1}, models=["A", "B"])
    assert cert.objective == 1
    # without model sets, nodes of one capacity form one class whatever their models
    assert len(MixedProblem.of([8, 8, 2], [1], ["A", "B", "C"]).classes) == 2


def test_fill_bound_counts_the_gpus_no_packing_places():
    # three 8-GPU pods on one 8-GPU node and two 4-GPU nodes: only one fits
    assert fill_bound([8, 4, 4], [0, 0, 0, 0, 0, 0, 0, 3]).objective == 16
    assert fill_bound([8, 4, 4], [0, 0, 0, 4]).objective == 0
    assert fill_bound([8, 4, 4], [0, 0, 0, 5]).objective == 4


@pytest.mark.parametrize("bad", [([0], [1]), ([8, "x"], [1]), ([8], [-1])])
def test_bad_input_is_a_value_error(bad):
    caps, counts = bad
    with pytest.raises(ValueError):
        phi_star_mixed(caps, counts)
