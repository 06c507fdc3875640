"""ring-exact-choice (heuristics/rack/ring_exact_choice.py): the oracle's optimum on every
cross-rack job, RingStitch's admission, reproducible fallbacks; the simulator's queue scan."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from heuristics.rack.ocs_sim import WORKLOADS, Windows, _scan, generate_trace, simulate
from heuristics.rack.racks import FragmentationPenalty, RackCluster, placement_violations
from heuristics.rack.ring_exact_choice import EXACT, FALLBACK, INCUMBENT, RingExactChoice
from heuristics.rack.ringstitch import RingStitch
from oracle.rack.rack_subset import MAX_RACKS, lex_optimal_subset

CLUSTERS = [RackCluster.torus((2, 2, 2), capacity=8), RackCluster.torus((1, 3, 3), capacity=6)]


@settings(max_examples=120, deadline=None)
@given(data=st.data(), penalty=st.sampled_from(["linear", "inverse"]))
def test_cross_rack_jobs_get_the_proven_optimum_never_worse_than_ringstitch(data, penalty):
    cluster = data.draw(st.sampled_from(CLUSTERS))
    residual = data.draw(st.lists(st.integers(0, cluster.capacity), min_size=cluster.n, max_size=cluster.n))
    demand = data.draw(st.integers(1, cluster.total_chips))
    pen = FragmentationPenalty(penalty)
    p = RingExactChoice(pen).place(cluster, residual, demand)
    rs = RingStitch(pen).place(cluster, residual, demand)
    assert (p is None) == (rs is None)  # RingStitch's admission exactly
    if p is None:
        return
    assert placement_violations(cluster, residual, demand, p, pen.table(cluster.capacity)) == []
    if rs.source == "local":
        assert p == rs
        return
    cert = lex_optimal_subset(residual, demand, cluster.dist, pen.table(cluster.capacity))
    assert p.source == EXACT and p.key == (cert.objective[0], cert.objective[1], round(cert.objective[2], 9))
    assert p.key <= rs.key


def test_the_smallest_ring_choice_counterexample_is_repaired():
    cluster = RackCluster.torus((1, 2, 2), capacity=4)
    p = RingExactChoice().place(cluster, [0, 1, 2, 2], 3)
    assert sorted(p.racks) == [1, 3] and p.cost == 2 and p.frag == 0
    assert RingStitch().place(cluster, [0, 1, 2, 2], 3).frag > 0


def test_beyond_the_oracle_range_ringstitch_decides_and_says_so():
    cluster = RackCluster.torus((1, 4, 4), capacity=4)
    residual = [1] * cluster.n
    p = RingExactChoice().place(cluster, residual, MAX_RACKS + 2)
    assert p.source.startswith(FALLBACK + ":") and len(p.alloc) == MAX_RACKS + 2
    assert p._replace(source="") == RingStitch().place(cluster, residual, MAX_RACKS + 2)._replace(source="")


def test_node_limit_places_the_incumbent():
    cluster = RackCluster.torus()
    p = RingExactChoice(node_limit=1).place(cluster, [63] * cluster.n, 5 * 63 + 1)
    assert p.source == INCUMBENT and placement_violations(cluster, [63] * cluster.n, 5 * 63 + 1, p) == []
    with pytest.raises(ValueError, match="node_limit"):
        RingExactChoice(node_limit=0)


def test_same_admission_as_ringstitch_in_the_simulator():
    cluster = RackCluster.torus((2, 2, 3), capacity=16)
    w = Windows(warmup=5, measure=30, drain=5)
    jobs = generate_trace(cluster, WORKLOADS["C"], 0.95, seed=3, windows=w)
    a = simulate(cluster, RingStitch(), jobs, w)
    b = simulate(cluster, RingExactChoice(), jobs, w, validate=True)
    assert (a.utilisation, a.blocking, a.mean_wait, a.p95_wait) == (b.utilisation, b.blocking, b.mean_wait, b.p95_wait)
    assert b.cross_rack == sum(n for _, n in b.sources) and {s for s, _ in b.sources} <= {EXACT, INCUMBENT} | {
        s for s, _ in b.sources if s.startswith(FALLBACK)}
    assert sum(n for _, n in a.sources) == a.cross_rack


def _plain_scan(queue, demand_of, free, start):
    """The literal scan: try every job in arrival order, skipping one whose demand is ≥ a demand
    that failed since the last start."""
    waiting, failed = [], None
    for q in queue:
        d = int(demand_of[q])
        if failed is not None and d >= failed:
            waiting.append(q)
        elif d <= free and start(q):
            free -= d
            failed = None
        else:
            failed = d if failed is None else min(failed, d)
            waiting.append(q)
    return waiting


@settings(max_examples=200, deadline=None)
@given(demands=st.lists(st.integers(1, 20), min_size=0, max_size=30), free=st.integers(0, 60),
       local=st.integers(1, 20), bounded=st.booleans())
def test_vectorised_scan_matches_the_literal_scan(demands, free, local, bounded):
    """A threshold policy (starts a job iff its demand ≤ ``local`` and ≤ the free chips): the
    same jobs start, in the same order, whether the scan's limit is the free chips or the
    policy's bound min(free, local)."""
    demand_of = np.array(demands, dtype=np.int64)
    queue = list(range(len(demands)))

    def policy(started, left):
        def start(q):
            if demand_of[q] > left[0] or demand_of[q] > local:
                return False
            left[0] -= int(demand_of[q])
            started.append(q)
            return True
        return start

    got, want, left = [], [], [free]
    limit = (lambda: min(left[0], local)) if bounded else (lambda: left[0])
    waiting = _scan(np.array(queue, dtype=np.int64), demand_of, limit, policy(got, left))
    assert waiting.tolist() == _plain_scan(queue, demand_of, free, policy(want, [free]))
    assert got == want
