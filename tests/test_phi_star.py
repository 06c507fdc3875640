"""Exact Φ★ and min-nodes: the pattern ILP on CP-SAT and on HiGHS, the memoised DP and the
independent brute force must agree, and every witness must re-validate."""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oracle.gpu.patterns import (
    PackingWitness,
    bin_patterns,
    from_sizes,
    load,
    sizes,
    witness_nodes,
    witness_partial_nodes,
    witness_violations,
)
from oracle.gpu.phi_star import (
    min_nodes,
    min_nodes_bruteforce,
    min_nodes_cpsat,
    min_nodes_milp,
    min_nodes_value,
    phi_star,
    phi_star_bruteforce,
    phi_star_cpsat,
    phi_star_milp,
    phi_star_value,
)
from oracle.result import Certificate, Status

G = 8


def _partitions(n: int, largest: int) -> int:
    return 1 if n == 0 else sum(_partitions(n - k, k) for k in range(1, min(n, largest) + 1))


@pytest.mark.parametrize("cap", range(1, 9))
def test_patterns_are_all_multisets_that_fit(cap):
    pats = bin_patterns(cap)
    assert len(set(pats)) == len(pats)
    assert all(0 < load(p) <= cap for p in pats)
    assert len(pats) == sum(_partitions(k, cap) for k in range(1, cap + 1))
    assert all(from_sizes(sizes(p), cap) == p for p in pats)


def test_66_patterns_for_g8():
    assert len(bin_patterns(8)) == 66


@st.composite
def instances(draw, max_items: int = 14):
    """(counts, N): small multisets, N drawn around the bin-packing number so that infeasible
    (N = need - 1), exactly tight (N = need) and slack cases all occur, plus no limit."""
    items = draw(st.lists(st.integers(1, G), max_size=max_items))
    counts = tuple(items.count(g) for g in range(1, G + 1))
    need = min_nodes_bruteforce(counts, None).objective
    n = draw(st.one_of(st.sampled_from([need, need, max(need - 1, 0)]), st.integers(0, need + 3), st.none()))
    return counts, n


def _check(cert: Certificate[int, PackingWitness], counts, n, objective: str) -> None:
    assert cert.is_proven, cert
    if cert.is_optimal:
        assert cert.bound == cert.objective
        assert witness_violations(cert.witness, counts, n if n is not None else 10**9) == []
        claimed = witness_partial_nodes(cert.witness) if objective == "partial" else witness_nodes(cert.witness)
        assert claimed == cert.objective
    else:
        assert cert.objective is None and cert.witness == ()


def _check_agree(certs: list[Certificate[int, PackingWitness]], counts, n, objective: str) -> None:
    """Every method's certificate is valid and all report the same (status, objective)."""
    for c in certs:
        _check(c, counts, n, objective)
    assert len({(c.status, c.objective) for c in certs}) == 1, certs


def _phi_star_methods_agree(inst):
    counts, n = inst
    certs = [phi_star_cpsat(counts, n), phi_star_milp(counts, n), phi_star_bruteforce(counts, n), phi_star(counts, n)]
    _check_agree(certs, counts, n, "partial")
    need = min_nodes_bruteforce(counts, None).objective
    assert (certs[0].status is Status.INFEASIBLE) == (n is not None and n < need)


def _min_nodes_methods_agree(inst):
    counts, n = inst
    _check_agree([min_nodes_cpsat(counts, n), min_nodes_milp(counts, n), min_nodes_bruteforce(counts, n),
                  min_nodes(counts, n)], counts, n, "nodes")


def _cases(check, examples: int):
    # derandomize: the same cases on every CI run (a new disagreement would otherwise surface as
    # a flaky failure); run with --hypothesis-seed=K and derandomize off to explore more.
    return settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])(given(instances())(check))


# The default suite cross-checks 500 / 200 instances (about a quarter of the time); ``--runslow``
# runs the full 2,000 / 600 as well.
test_phi_star_methods_agree = _cases(_phi_star_methods_agree, 500)
test_min_nodes_methods_agree = _cases(_min_nodes_methods_agree, 200)
test_phi_star_methods_agree_on_2000_instances = pytest.mark.slow(_cases(_phi_star_methods_agree, 2000))
test_min_nodes_methods_agree_on_600_instances = pytest.mark.slow(_cases(_min_nodes_methods_agree, 600))


def test_known_values():
    # 3+3+2 fills a node, 2+2 does not: one partial node is forced (T = 12 is not a multiple of 8)
    assert phi_star_value((0, 3, 2, 0, 0, 0, 0, 0), 2) == 1
    assert phi_star_value((0, 3, 2, 0, 0, 0, 0, 0), 1) is None  # 12 GPUs never fit in one node
    assert phi_star_value((6, 1, 0, 2, 0, 0, 0, 0), 8) == 0
    assert phi_star_value((0, 0, 0, 0, 2, 0, 0, 0), 5) == 2  # two 5s can share no node
    assert min_nodes_value((0, 0, 0, 0, 2, 0, 0, 0)) == 2
    assert phi_star_value((0,) * 8, 0) == 0


def test_large_instances_solvers_agree_and_use_cpsat():
    """Beyond the DP's range the memoised entry point goes to CP-SAT; HiGHS must agree."""
    rng = random.Random(7)
    for n in (64, 1024):
        items = [rng.choice([1, 1, 1, 2, 2, 3, 4, 4, 5, 6, 7, 8, 8]) for _ in range(n * 2)]
        counts = tuple(items.count(g) for g in range(1, G + 1))
        need = min_nodes_cpsat(counts, None).objective
        for N in (need, n * 2):
            a, b = phi_star(counts, N), phi_star_milp(counts, N)
            assert a.solver == "cp-sat"
            assert (a.status, a.objective) == (b.status, b.objective) and a.is_optimal
            _check(a, counts, N, "partial")
            _check(b, counts, N, "partial")
        assert phi_star(counts, need - 1).status is Status.INFEASIBLE


def test_memoised_result_is_the_same_object():
    counts = (2, 1, 1, 1, 0, 0, 0, 0)
    assert phi_star(counts, 3) is phi_star(counts, 3)


@pytest.mark.parametrize("bad", [((1,) * 7, 2), ((-1,) + (0,) * 7, 2), ((0,) * 8, -1), ((1.5,) + (0,) * 7, 2)])
def test_bad_input_is_rejected(bad):
    counts, n = bad
    with pytest.raises(ValueError):
        phi_star(counts, n)
