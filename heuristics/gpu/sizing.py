"""Cluster sizing N(η) (COMPASS-ABS §5.2, eqs. 12–13) and demand-side WCC coverage ρ (§6.4).

Everything here looks at the *offered* load: job j is active on [a_j, a_j + τ_j) as if it started
at its submit time, independent of any scheduler (that is what eq. 12 defines).

Readings chosen where the paper is not explicit:

* "support" of D in "D stays below ℓ for at least an η fraction of its support" is read as the
  mathematical support {t : D(t) > 0}, measured in time (Lebesgue measure), so idle gaps between
  bursts neither raise nor lower p_η. "Stays below ℓ" is read as D(t) ≤ ℓ (a cluster of ℓ GPUs
  hosts demand ℓ). Hence p_η = min{ℓ : |{t : 0 < D(t) ≤ ℓ}| ≥ η · |{t : D(t) > 0}|}, the
  time-weighted η-quantile of D over its support; the comparison allows a relative slack of 1e-9
  so that exact fractions computed in floating point are not missed.
* N_maxjob of a window is the largest per-job minimum node count, with a job (g, w) needing
  ⌈w / ⌊G/g⌋⌉ nodes (at most ⌊G/g⌋ instances fit on a node; gang = all w at once). This is the
  smallest N on which every single job of the window can run alone.
* ρ (demand side) = |{t in support of D : WCC holds for the active instance counts}| / |support|,
  with WCC n1 ≥ n3 + 3n5 + 2n6 + n7 (Theorem 1 multiplied by n_total; identical for n_total > 0).
  It is ρ of the offered running set; a simulator measures the scheduler-side ρ on its own
  running set with ``wcc_holds`` (``oracle.gpu.paper_phi``, re-exported here). An empty support
  gives ρ = 1 (WCC holds vacuously).
"""
from __future__ import annotations

import math
from typing import Iterable, Iterator, NamedTuple

from heuristics.gpu.cluster import G_DEFAULT, Gang
from heuristics.gpu.trace import LoadReport, Trace, TraceJob, rebased
from oracle.gpu.paper_phi import wcc_holds  # the one WCC definition (count form of Theorem 1)

_SLACK = 1e-9


class Segment(NamedTuple):
    """Offered load on [start, end): instance counts n_1..n_8 (index g-1) and D = Σ g·n_g."""

    start: float
    end: float
    counts: tuple[int, ...]

    @property
    def length(self) -> float:
        return self.end - self.start

    @property
    def demand(self) -> int:
        return sum(g * n for g, n in enumerate(self.counts, start=1))


def segments(jobs: Iterable[TraceJob], capacity: int = G_DEFAULT) -> Iterator[Segment]:
    """Maximal-by-event intervals of constant offered load, in time order, covering
    [first submit, last end). Intervals where nothing is active are included (counts all 0)."""
    deltas: dict[float, list[int]] = {}
    for j in jobs:
        for t, sign in ((j.submit, 1), (j.submit + j.duration, -1)):
            deltas.setdefault(t, [0] * capacity)[j.g - 1] += sign * j.w
    times = sorted(deltas)
    counts = [0] * capacity
    for t0, t1 in zip(times, times[1:]):
        counts = [c + d for c, d in zip(counts, deltas[t0])]
        yield Segment(t0, t1, tuple(counts))


def demand_profile(trace: Trace) -> tuple[tuple[float, float, int], ...]:
    """D(t) of eq. (12) as (start, end, D) steps covering the trace's active span."""
    return tuple((s.start, s.end, s.demand) for s in segments(trace.jobs))


def percentile_demand(trace: Trace, eta: float) -> int:
    """p_η: smallest ℓ with D(t) ≤ ℓ for at least an η fraction of the support of D (see module
    docstring). 0 for an empty trace."""
    if not 0 < eta <= 1:
        raise ValueError(f"eta={eta} outside (0, 1]")
    time_at: dict[int, float] = {}
    for s in segments(trace.jobs):
        if s.demand > 0:
            time_at[s.demand] = time_at.get(s.demand, 0.0) + s.length
    support = math.fsum(time_at.values())
    below = 0.0
    for level in sorted(time_at):
        below += time_at[level]
        if below >= eta * support * (1 - _SLACK):
            return level
    return 0


def n_maxjob(job: Gang, capacity: int = G_DEFAULT) -> int:
    """Fewest nodes of ``capacity`` GPUs that host the whole gang of ``job`` (intra-node
    constraint: one instance never spans nodes)."""
    if not 1 <= job.g <= capacity:
        raise ValueError(f"job {job.id}: g={job.g} outside 1..{capacity}")
    return -(-job.w // (capacity // job.g))


def cluster_size(trace: Trace, eta: float, capacity: int = G_DEFAULT) -> int:
    """N(η) = max(⌈p_η / G⌉, N_maxjob) of eq. (13)."""
    n_max = max((n_maxjob(j, capacity) for j in trace.jobs), default=0)
    return max(-(-percentile_demand(trace, eta) // capacity), n_max)


def wcc_coverage(trace: Trace) -> float:
    """Demand-side ρ: share of the support of D during which WCC holds for the offered
    running set (see module docstring)."""
    held = total = 0.0
    for s in segments(trace.jobs):
        if s.demand > 0:
            total += s.length
            held += s.length if wcc_holds(s.counts) else 0.0
    return held / total if total > 0 else 1.0


def window(trace: Trace, t0: float, t1: float) -> Trace:
    """J[t0, t1]: the jobs submitted in [t0, t1), times rebased so that t0 becomes 0 (jobs keep
    their full durations, as in eq. 12). Jobs outside are counted in the report as dropped
    ("submitted outside window")."""
    if t1 <= t0:
        raise ValueError(f"empty window [{t0}, {t1})")
    inside = [j for j in trace.jobs if t0 <= j.submit < t1]
    r = trace.report
    dropped = dict(r.dropped)
    outside = len(trace.jobs) - len(inside)
    if outside:
        dropped["submitted outside window"] = dropped.get("submitted outside window", 0) + outside
    report = LoadReport(r.source, r.rows, len(inside), dropped, dict(r.altered), r.jobs_read)
    return Trace(f"{trace.name}[{t0:g},{t1:g})", rebased(inside, t0), report)


def day_window(trace: Trace, day: int) -> Trace:
    """Window of day ``day`` (0-based, days of 86,400 s from the trace's first submit)."""
    return window(trace, day * 86400.0, (day + 1) * 86400.0)

