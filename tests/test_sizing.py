"""Cluster sizing (eqs. 12–13) and demand-side WCC coverage on hand-computed traces, plus a
brute-force cross-check on random integer traces (sampling every unit interval)."""
from __future__ import annotations

from fractions import Fraction
from math import ceil

import pytest
from hypothesis import given, settings, strategies as st

from heuristics.gpu.trace import LoadReport, Trace, TraceJob, rebased
from heuristics.gpu.sizing import (
    cluster_size, day_window, demand_profile, n_maxjob, percentile_demand, wcc_coverage, wcc_holds,
    window,
)


def trace_of(*jobs: tuple[float, float, int, int]) -> Trace:
    tj = rebased([TraceJob(i, *j) for i, j in enumerate(jobs)], 0.0)
    return Trace("hand", tj, LoadReport("hand", len(tj), len(tj)))


# D: [0,5) 2, [5,10) 6, [10,15) 4, [15,30) 0, [30,40) 8. Support 25 s: level 2 → 5 s, 4 → 5 s,
# 6 → 5 s, 8 → 10 s; cumulative shares 0.2, 0.4, 0.6, 1.0.
HAND = trace_of((0, 10, 1, 2), (5, 10, 4, 1), (30, 10, 8, 1))


def test_demand_profile_eq12():
    assert demand_profile(HAND) == ((0, 5, 2), (5, 10, 6), (10, 15, 4), (15, 30, 0), (30, 40, 8))


@pytest.mark.parametrize("eta,p", [(0.1, 2), (0.2, 2), (0.3, 4), (0.4, 4), (0.5, 6), (0.6, 6),
                                   (0.61, 8), (0.9, 8), (1.0, 8)])
def test_percentile_demand_over_support(eta, p):
    # Over the whole window [0, 40) the idle 15 s would count as level 0 and p_0.5 would be 2.
    assert percentile_demand(HAND, eta) == p


def test_percentile_demand_empty_and_bad_eta():
    assert percentile_demand(trace_of(), 0.9) == 0
    with pytest.raises(ValueError):
        percentile_demand(HAND, 0.0)
    with pytest.raises(ValueError):
        percentile_demand(HAND, 1.5)


@pytest.mark.parametrize("g,w,n", [(1, 8, 1), (1, 9, 2), (3, 2, 1), (3, 3, 2), (5, 1, 1), (5, 2, 2),
                                   (8, 4, 4), (2, 5, 2), (4, 3, 2), (7, 3, 3), (6, 1, 1), (1, 1, 1)])
def test_n_maxjob(g, w, n):
    assert n_maxjob(TraceJob(0, 0, 1, g, w)) == n


@pytest.mark.parametrize("g", range(1, 9))
@pytest.mark.parametrize("w", range(1, 20))
def test_n_maxjob_matches_packing_brute_force(g, w):
    """Smallest node count on which w instances of g GPUs can be placed one by one."""
    nodes = 1
    while True:
        free, left = [8] * nodes, w
        for i in range(nodes):
            while left and free[i] >= g:
                free[i] -= g
                left -= 1
        if not left:
            break
        nodes += 1
    assert n_maxjob(TraceJob(0, 0, 1, g, w)) == nodes


def test_n_maxjob_rejects_bad_g():
    with pytest.raises(ValueError):
        n_maxjob(TraceJob(0, 0, 1, 9, 1))


def test_cluster_size_eq13():
    assert cluster_size(HAND, 0.9) == 1
    # p = 15 GPUs -> 2 nodes, but 5 instances of 3 GPUs need 3 nodes (2 per node).
    assert cluster_size(trace_of((0, 10, 3, 5)), 0.9) == 3
    # p = 40 GPUs -> 5 nodes dominates N_maxjob = 3.
    assert cluster_size(trace_of((0, 10, 8, 3), (0, 10, 8, 2)), 0.9) == 5
    # η decides: 90 % of the support at 8 GPUs, 10 % at 72.
    two_levels = trace_of((0, 100, 8, 1), (90, 10, 8, 8))
    assert cluster_size(two_levels, 0.85) == 8          # N_maxjob of the 8x8 job
    assert percentile_demand(two_levels, 0.85) == 8
    assert percentile_demand(two_levels, 0.95) == 72
    assert cluster_size(two_levels, 0.95) == 9
    assert cluster_size(trace_of(), 0.9) == 0


def test_wcc_holds():
    assert wcc_holds((0,) * 8)
    assert wcc_holds((0, 5, 0, 9, 0, 0, 0, 7))          # FF demands never matter
    assert wcc_holds((4, 0, 1, 0, 1, 0, 0, 0))          # 4 >= 1 + 3: equality holds
    assert not wcc_holds((4, 0, 1, 0, 1, 0, 1, 0))
    assert not wcc_holds((3, 0, 0, 0, 0, 2, 0, 0))
    assert wcc_holds((2, 0, 0, 0, 0, 0, 2, 0))


def test_wcc_coverage_hand_example():
    t = trace_of((0, 10, 1, 2),    # n1 += 2 on [0, 10)
                 (0, 40, 1, 4),    # n1 += 4 on [0, 40)
                 (0, 20, 3, 1),    # n3 = 1 on [0, 20)
                 (5, 10, 5, 1),    # n5 = 1 on [5, 15)
                 (12, 8, 7, 1),    # n7 = 1 on [12, 20)
                 (50, 10, 6, 2))   # n6 = 2 on [50, 60): 0 >= 4 fails
    # WCC fails on [12, 15) (4 < 1 + 3 + 1) and [50, 60); [40, 50) is idle, outside the support.
    assert wcc_coverage(t) == pytest.approx(37 / 50)


def test_wcc_coverage_trivial_cases():
    assert wcc_coverage(trace_of()) == 1.0
    assert wcc_coverage(trace_of((0, 10, 8, 2), (3, 4, 2, 1))) == 1.0
    assert wcc_coverage(trace_of((0, 10, 5, 1))) == 0.0


def test_window_cuts_rebases_and_counts():
    t = trace_of((0, 10, 1, 1), (100, 10, 2, 1), (86405, 10, 4, 1), (90000, 10, 8, 1))
    w = window(t, 50, 86400)
    assert [(j.id, j.submit, j.g) for j in w.jobs] == [(1, 50.0, 2)]
    assert w.report.kept == 1 and w.report.dropped == {"submitted outside window": 3}
    d1 = day_window(t, 1)
    assert [(j.submit, j.g) for j in d1.jobs] == [(5.0, 4), (3600.0, 8)]
    assert d1.report.jobs_read == d1.report.kept + sum(d1.report.dropped.values())
    with pytest.raises(ValueError):
        window(t, 10, 10)


# --------------------------------------------------------------------- brute-force cross-check
small_jobs = st.lists(st.tuples(st.integers(0, 30), st.integers(1, 15), st.integers(1, 8), st.integers(1, 4)),
                      min_size=1, max_size=8)


def sampled_active(jobs, t: float):
    return [j for j in jobs if j[0] <= t < j[0] + j[1]]


@settings(max_examples=150, deadline=None)
@given(small_jobs, st.sampled_from([0.3, 0.5, 0.85, 0.9, 0.95, 1.0]))
def test_sizing_matches_unit_sampling(jobs, eta):
    trace = trace_of(*jobs)
    horizon = max(s + d for s, d, _, _ in jobs)
    # Integer times: D is constant on every [t, t+1); sample the midpoints.
    samples = [sampled_active(jobs, t + 0.5) for t in range(horizon)]
    levels = sorted(sum(g * w for _, _, g, w in act) for act in samples if act)
    need = ceil(Fraction(str(eta)) * len(levels))
    assert percentile_demand(trace, eta) == levels[need - 1]
    n_max = max(n_maxjob(j) for j in trace.jobs)
    assert cluster_size(trace, eta) == max(ceil(levels[need - 1] / 8), n_max)

    def holds(act):
        n = [sum(w for _, _, g, w in act if g == k) for k in range(1, 9)]
        return n[0] >= n[2] + 3 * n[4] + 2 * n[5] + n[6]
    active = [act for act in samples if act]
    assert wcc_coverage(trace) == pytest.approx(sum(holds(a) for a in active) / len(active))
