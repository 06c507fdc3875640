"""OCS simulator: chip and job conservation, common random numbers, metric sanity, bad input."""
import pytest

from heuristics.rack.ocs_sim import (WORKLOADS, Band, DurationModel, Job, Phase, Windows, Workload,
                                arrival_rate, generate_trace, simulate)
from heuristics.rack.racks import RackCluster
from heuristics.rack.ring_baselines import RING_POLICIES, make_ring_policy

SMALL = RackCluster.torus((2, 2, 3), capacity=64)
SHORT = Windows(warmup=5, measure=20, drain=5)


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
@pytest.mark.parametrize("name", sorted(RING_POLICIES))
def test_simulator_conserves_chips_and_jobs(name, workload):
    jobs = generate_trace(SMALL, WORKLOADS[workload], 0.9, seed=1, windows=SHORT)
    r = simulate(SMALL, make_ring_policy(name), jobs, SHORT, validate=True)  # asserts per event
    assert r.arrived_total == len(jobs) == r.started_total + r.queued_at_end
    assert r.started_total == r.completed_total + r.running_at_end
    assert 0 <= r.utilisation <= 1 and 0 <= r.blocking <= 1
    assert r.started <= r.jobs
    if name.startswith("local"):
        assert r.cross_rack == 0


def test_common_random_numbers_and_reproducibility():
    a = generate_trace(SMALL, WORKLOADS["C"], 0.8, seed=4, windows=SHORT)
    assert a == generate_trace(SMALL, WORKLOADS["C"], 0.8, seed=4, windows=SHORT)
    assert a != generate_trace(SMALL, WORKLOADS["C"], 0.8, seed=5, windows=SHORT)
    r1 = simulate(SMALL, make_ring_policy("ringstitch"), a, SHORT)
    r2 = simulate(SMALL, make_ring_policy("ringstitch"), a, SHORT)
    assert r1 == r2


def test_offered_load_matches_the_trace():
    cluster = RackCluster.torus()
    w = Windows(warmup=0, measure=400, drain=0)
    dm = DurationModel()
    jobs = generate_trace(cluster, WORKLOADS["B"], 0.7, seed=0, windows=w, durations=dm)
    offered = sum(j.demand * j.duration for j in jobs) / (cluster.total_chips * w.measure)
    assert offered == pytest.approx(0.7, rel=0.08)
    rate = arrival_rate(WORKLOADS["B"].phases[0], 0.7, cluster, dm)
    assert len(jobs) / w.measure == pytest.approx(rate, rel=0.05)


def test_hand_made_trace_metrics():
    cluster = RackCluster.torus((1, 1, 2), capacity=8)
    w = Windows(warmup=0, measure=10, drain=2)
    jobs = [Job(0, 0.0, 8, 4.0), Job(1, 1.0, 12, 2.0), Job(2, 2.0, 4, 1.0)]
    r = simulate(cluster, make_ring_policy("local-best-fit"), jobs, w, validate=True)
    # job 1 (12 chips) never fits one rack: blocked, weight 24 of 32 + 24 + 4
    assert r.blocking == pytest.approx(24 / 60) and r.started == 2 and r.mean_wait == 0
    assert r.utilisation == pytest.approx((8 * 4 + 4 * 1) / (16 * 10))
    r = simulate(cluster, make_ring_policy("ringstitch"), jobs, w, validate=True)
    # job 2 takes rack 1 at t=2; job 1 waits until job 0 ends at t=4, then stitches both racks
    assert r.blocking == 0 and r.cross_rack == 1 and r.mean_ring_cost == 2


def test_bad_input():
    with pytest.raises(ValueError, match="load"):
        generate_trace(SMALL, WORKLOADS["A"], 0.0, seed=0)
    bad = Workload("X", (Phase(1.0, (Band(1, 10_000, 1.0),)),))
    with pytest.raises(ValueError, match=r"jobs of 1..10000 chips do not fit"):
        generate_trace(SMALL, bad, 0.5, seed=0)
    with pytest.raises(ValueError, match="phase ends"):
        generate_trace(SMALL, Workload("Y", (Phase(0.5, (Band(1, 8, 1.0),)),)), 0.5, seed=0)
    with pytest.raises(ValueError, match=r"jobs\[0\]"):
        simulate(SMALL, make_ring_policy("ringstitch"), [Job(3, 0.0, 1, 1.0)])
