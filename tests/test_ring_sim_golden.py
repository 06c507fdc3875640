"""The OCS simulator's decisions are pinned: every policy on every workload of a small cluster
reproduces, decision by decision, what the simulator and policies did before they were made faster
(values recorded from commit 7d3f977 with the code of that commit; benchmarks/bench_ring_sim.py
checks the same at paper scale against a ``git archive`` of it)."""
import hashlib
import json

import pytest

from heuristics.rack.ocs_sim import WORKLOADS, SimResult, Windows, generate_trace, simulate
from heuristics.rack.racks import RackCluster
from heuristics.rack.ring_baselines import RING_POLICIES, make_ring_policy

CLUSTER = RackCluster.torus((2, 3, 3), capacity=64)
WINDOWS = Windows(warmup=10, measure=40, drain=10)

# (workload, policy) -> (digest of every decision, jobs started, cross-rack jobs in the window,
# their mean ring cost rounded to 1e-6 or None)
RECORDED = {
    ("A", "capacity-only"): ('11b8db8f8d9ba6b2', 227, 70, 6.385714),
    ("A", "full-rack"): ('abf288119ea8d0eb', 227, 42, 3.666667),
    ("A", "local-best-fit"): ('10f716c7db090380', 176, 0, None),
    ("A", "local-first-fit"): ('469ac1814b496363', 176, 0, None),
    ("A", "network-unaware-best-fit"): ('8c8d32b53581a34c', 227, 65, 5.369231),
    ("A", "ring-exact-choice"): ('37bde9f6ebab6681', 227, 61, 4.0),
    ("A", "ringstitch"): ('362baf2fc17f7bc3', 227, 60, 4.366667),
    ("B", "capacity-only"): ('0b8d0bec402fee47', 321, 133, 6.315789),
    ("B", "full-rack"): ('e5f259c31ffcb1d9', 321, 36, 3.5),
    ("B", "local-best-fit"): ('14e39cb542878f79', 277, 0, None),
    ("B", "local-first-fit"): ('0598babb2b9f4b5f', 277, 0, None),
    ("B", "network-unaware-best-fit"): ('325343e8f006918c', 321, 124, 4.822581),
    ("B", "ring-exact-choice"): ('8d6e64f650d58f6b', 321, 127, 4.267717),
    ("B", "ringstitch"): ('96aa4e26a59186ec', 321, 123, 4.739837),
    ("C", "capacity-only"): ('a14fadaa3e9a500f', 416, 272, 7.551471),
    ("C", "full-rack"): ('7477b065fb3baa89', 385, 60, 3.966667),
    ("C", "local-best-fit"): ('993771050d772f3d', 302, 0, None),
    ("C", "local-first-fit"): ('bf428d180d337a0d', 302, 0, None),
    ("C", "network-unaware-best-fit"): ('81b4ee048e1d9f5f', 416, 266, 6.112782),
    ("C", "ring-exact-choice"): ('08bd7831d666046f', 416, 263, 5.756654),
    ("C", "ringstitch"): ('86120967d479019f', 416, 273, 5.622711),
    ("D", "capacity-only"): ('9a271e344949537b', 131, 57, 6.807018),
    ("D", "full-rack"): ('7c2bad4fc07ce588', 131, 49, 4.387755),
    ("D", "local-best-fit"): ('66801f81c06cfe7d', 82, 0, None),
    ("D", "local-first-fit"): ('f144192513ebbc7a', 82, 0, None),
    ("D", "network-unaware-best-fit"): ('3e10087998a39fe6', 131, 59, 6.288136),
    ("D", "ring-exact-choice"): ('f800ec383d2c6724', 131, 56, 5.589286),
    ("D", "ringstitch"): ('beb4d4f26070bdb4', 131, 58, 5.637931),
}


def decision_digest(result: SimResult) -> str:
    """sha256 prefix over every started job's id, start time, the residuals seen and the placement
    (rack allocation, ring, ring cost, fragmentation cost, source), all as plain numbers."""
    rows = [(d.job, d.time.hex(), [int(x) for x in d.residual],
             [(int(a), int(b)) for a, b in d.placement.alloc], [int(x) for x in d.placement.ring],
             int(d.placement.cost), float(d.placement.frag).hex(), d.placement.source) for d in result.decisions]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


def test_every_policy_and_workload_is_recorded():
    assert set(RECORDED) == {(w, p) for w in WORKLOADS for p in RING_POLICIES}


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_decisions_match_the_recorded_run(workload):
    jobs = generate_trace(CLUSTER, WORKLOADS[workload], 0.95, seed=3, windows=WINDOWS)
    for name in sorted(RING_POLICIES):
        r = simulate(CLUSTER, make_ring_policy(name), jobs, WINDOWS, keep=True)
        ring = round(r.mean_ring_cost, 6) if r.cross_rack else None
        assert (decision_digest(r), r.started_total, r.cross_rack, ring) == RECORDED[(workload, name)], name
