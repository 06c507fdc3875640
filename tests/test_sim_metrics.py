"""Run metrics (heuristics.gpu.sim_metrics) against hand-computed values on tiny traces (§5.3)."""
import math

import pytest

import heuristics.gpu.simulator as sim
from heuristics.gpu.policy import EventResult
from heuristics.gpu.registry import make_policy
from heuristics.gpu.sim_metrics import compute_metrics
from heuristics.gpu.simulator import SimConfig, simulate
from heuristics.gpu.trace import TraceJob


def tj(i, submit, duration, g, w):
    return TraceJob(i, float(submit), float(duration), g, w)


# Two 4-GPU jobs on 2 nodes; worst-fit spreads them (2 partial nodes, Φ★ = 0: both fit one
# node), so the 8-GPU job arriving at t=1 waits until t=10 although 8 GPUs are idle.
SPREAD = [tj(0, 0, 10, 4, 1), tj(1, 0, 10, 4, 1), tj(2, 1, 5, 8, 1)]


def test_hand_computed_worst_fit():
    m = compute_metrics(simulate(SPREAD, SimConfig("worst-fit", 2)))  # exact Φ★ from the oracle
    assert m.peak_time == 9  # queue non-empty on [1, 10)
    assert m.afr == pytest.approx(1.0)  # SIF = (Φπ − Φ★)/N = (2 − 0)/2 throughout the peak
    assert m.agu == pytest.approx(0.5)  # 8 of 16 GPUs busy during the peak
    assert m.ajct == pytest.approx((10 + 10 + 14) / 3)
    assert m.mean_queueing == pytest.approx(3.0)
    assert m.horizon == 15
    assert m.mean_partial == pytest.approx((1 * 2 + 9 * 2 + 5 * 0) / 15)
    assert m.mean_empty == pytest.approx(5 / 15)
    assert m.max_nsif == 2
    assert m.frag_blocking_time == 9 and m.frag_blocking_share == pytest.approx(1.0)
    assert m.wcc_coverage == 1.0
    assert m.migrations_per_job == 0 and m.unfinished == 0 and m.notes == ()


def test_empty_peak_period_is_nan_with_note():
    m = compute_metrics(simulate(SPREAD, SimConfig("best-fit", 2)))  # packs both 4s: no wait
    assert m.peak_time == 0 and math.isnan(m.afr) and math.isnan(m.agu)
    assert any("peak period empty" in n for n in m.notes)
    assert m.ajct == pytest.approx((10 + 10 + 5) / 3)


def test_unknown_phi_star_makes_afr_nan():
    m = compute_metrics(simulate(SPREAD, SimConfig("worst-fit", 2), phi_star=None))
    assert math.isnan(m.afr) and m.agu == pytest.approx(0.5)
    assert any("Φ★ unknown" in n for n in m.notes)


def test_wcc_coverage():
    # a 3-GPU instance alone breaks WCC on [0, 2); a 1-GPU job from t=2 restores n1 ≥ n3.
    m = compute_metrics(simulate([tj(0, 0, 4, 3, 1), tj(1, 2, 6, 1, 1)], SimConfig("best-fit", 1)))
    assert m.horizon == 8 and m.wcc_coverage == pytest.approx(6 / 8)


def test_unfinished_jobs_make_ajct_nan(monkeypatch):
    class Refuser:
        def __init__(self, inner):
            self.inner = inner

        def arrive(self, job):
            return self.inner.arrive(job) if job.id == 0 else EventResult.refused("never")

        def __getattr__(self, name):
            return getattr(self.inner, name)

    monkeypatch.setattr(sim, "make_policy", lambda name, n, cap, **o: Refuser(make_policy(name, n, cap)))
    m = compute_metrics(simulate([tj(0, 0, 5, 1, 1), tj(1, 1, 5, 1, 1)], SimConfig("best-fit", 1)))
    assert m.unfinished == 1 and math.isnan(m.ajct)
    assert any("stuck" in n for n in m.notes) and any("AJCT undefined" in n for n in m.notes)
