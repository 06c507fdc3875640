"""Discrete-event simulator of an OCS rack cluster under a rack policy (seed 004, §III-D, §V-A/C).

- One event heap of (time, priority, sequence, kind, job); completions (priority 0) are handled
  before arrivals (priority 1) at the same instant, so freed chips are visible to the arrival.
- Online semantics (§III-D): at every arrival or completion the queue is considered in arrival
  order; infeasible jobs stay queued while later feasible ones may start; gang, non-preemptive;
  OCS configuration is instantaneous. Policies are pure functions of the residuals, so at an
  arrival only the new job can have become placeable (nothing was released since the last scan).
- Workloads (§V-A; the paper only sketches them — readings in docs/ringstitch.md): a workload is
  a sequence of phases, each a mix of demand bands (uniform integer sizes in [lo, hi]) with a
  duration multiplier. Durations are log-normal with median ``base_h · (D / C)^alpha`` and shape
  ``sigma``. Poisson arrivals; each phase's rate gives the requested offered load
  ρ = λ·E[D·t] / (N·C).
- Windows (§V-A): arrivals over warm-up + measurement; the run ends after the drain. Metrics count
  jobs arriving in the measurement window: utilisation = busy chip-hours / (N·C·window);
  chip-hour-weighted blocking = Σ D·t of jobs not started by the end of the drain / Σ D·t;
  mean and P95 wait over started jobs; mean ring cost over started cross-rack jobs (§V-C).
- Common random numbers: the arrival trace depends on (seed, workload, load) only, never on the
  scheduler, so every scheduler sees the same jobs.
"""
from __future__ import annotations

import heapq
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Sequence

import numpy as np

from heuristics.rack.racks import RackCluster, RackPlacement, placement_violations
from heuristics.rack.ring_baselines import DemandBound, RackPolicy


class Band(NamedTuple):
    """Demands uniform on the integers lo..hi, drawn with relative ``weight``."""

    lo: int
    hi: int
    weight: float


class Phase(NamedTuple):
    """A workload phase lasting until fraction ``until`` of the arrival period (warm-up +
    measurement); the last phase ends at 1.0."""

    until: float
    bands: tuple[Band, ...]
    duration_scale: float = 1.0


@dataclass(frozen=True)
class DurationModel:
    """Size-dependent log-normal durations: median = base_h·(D/C)^alpha hours, log-sd = sigma."""

    base_h: float = 2.0
    alpha: float = 0.5
    sigma: float = 1.0

    def median(self, demand: np.ndarray | int, capacity: int) -> np.ndarray:
        return self.base_h * (np.asarray(demand, dtype=float) / capacity) ** self.alpha

    def mean(self, demand: np.ndarray | int, capacity: int) -> np.ndarray:
        return self.median(demand, capacity) * np.exp(self.sigma ** 2 / 2)


@dataclass(frozen=True)
class Workload:
    name: str
    phases: tuple[Phase, ...]
    description: str = ""


_SMALL = Band(1, 16, 0.25)
WORKLOADS: dict[str, Workload] = {
    w.name: w for w in (
        Workload("A", (Phase(1.0, (Band(8, 8, .15), Band(16, 16, .20), Band(32, 32, .25),
                                   Band(64, 64, .20), Band(128, 128, .15), Band(256, 256, .05))),),
                 "production-inspired power-of-two slices, up to four racks"),
        Workload("B", (Phase(1.0, (Band(40, 56, .6), _SMALL, Band(128, 128, .15))),),
                 "fragmenting mix: 60 % 40–56-chip jobs, 25 % 1–16-chip jobs, 15 % two-rack slices"),
        Workload("C", (Phase(1.0, (Band(40, 56, .5), _SMALL, Band(65, 80, .25))),),
                 "40–56-chip jobs plus 25 % just-over-one-rack (65–80-chip) jobs"),
        Workload("D", (Phase(0.4, (Band(40, 56, .75), _SMALL), 4.0),
                       Phase(1.0, (Band(65, 192, .6), Band(8, 32, .4)))),
                 "phased: 4×-long 40–56-chip jobs for the first 40 % of the arrival period (hour "
                 "100 of 250 in the paper's windows), then 60 % cross-rack (65–192-chip) jobs"),
    )
}


class Job(NamedTuple):
    id: int
    arrival: float
    demand: int
    duration: float


@dataclass(frozen=True)
class Windows:
    """Hours of warm-up, measurement and drain (§V-A: 50 / 200 / 50)."""

    warmup: float = 50.0
    measure: float = 200.0
    drain: float = 50.0

    @property
    def start(self) -> float:
        return self.warmup

    @property
    def end(self) -> float:
        return self.warmup + self.measure

    @property
    def horizon(self) -> float:
        return self.warmup + self.measure + self.drain


def _band_sizes(phase: Phase) -> tuple[np.ndarray, np.ndarray]:
    """All demand values of a phase and their probabilities."""
    total = sum(b.weight for b in phase.bands)
    sizes, probs = [], []
    for b in phase.bands:
        vals = np.arange(b.lo, b.hi + 1)
        sizes.append(vals)
        probs.append(np.full(len(vals), b.weight / total / len(vals)))
    return np.concatenate(sizes), np.concatenate(probs)


def arrival_rate(phase: Phase, load: float, cluster: RackCluster, durations: DurationModel) -> float:
    """Jobs per hour giving offered load ρ = λ·E[D·t] / (N·C)."""
    sizes, probs = _band_sizes(phase)
    chip_hours = float((probs * sizes * durations.mean(sizes, cluster.capacity)).sum()) * phase.duration_scale
    return load * cluster.total_chips / chip_hours


def check_workload(workload: Workload, cluster: RackCluster) -> None:
    for i, ph in enumerate(workload.phases):
        for b in ph.bands:
            if not 1 <= b.lo <= b.hi or b.weight <= 0:
                raise ValueError(f"workload {workload.name} phase {i}: bad band {b}")
            if b.hi > cluster.total_chips:
                raise ValueError(f"workload {workload.name} phase {i}: jobs of {b.lo}..{b.hi} chips do not fit "
                                 f"the cluster's {cluster.total_chips} chips (a larger --dims or --capacity)")
    ends = [ph.until for ph in workload.phases]
    if ends != sorted(ends) or ends[-1] != 1.0 or ends[0] <= 0:
        raise ValueError(f"workload {workload.name}: phase ends {ends} must increase to 1.0")


def trace_seed(seed: int, workload: str, load: float) -> list[int]:
    """Seed material for one (seed, workload, load) cell — scheduler-independent (CRN)."""
    return [int(seed), zlib.crc32(workload.encode()), int(round(load * 10_000))]


def generate_trace(cluster: RackCluster, workload: Workload, load: float, seed: int,
                   windows: Windows = Windows(), durations: DurationModel = DurationModel()) -> list[Job]:
    """Poisson arrivals over [0, warm-up + measurement) with per-phase rates (memoryless, so the
    gap is simply redrawn from a phase boundary)."""
    if not 0 < load:
        raise ValueError(f"load: {load!r} is not a positive fraction")
    check_workload(workload, cluster)
    rng = np.random.default_rng(trace_seed(seed, workload.name, load))
    jobs: list[Job] = []
    t, begin = 0.0, 0.0
    for ph in workload.phases:
        end = ph.until * windows.end
        rate = arrival_rate(ph, load, cluster, durations)
        sizes, probs = _band_sizes(ph)
        t = begin
        while True:
            t += rng.exponential(1.0 / rate)
            if t >= end:
                break
            d = int(rng.choice(sizes, p=probs))
            med = float(durations.median(d, cluster.capacity)) * ph.duration_scale
            jobs.append(Job(len(jobs), t, d, float(rng.lognormal(np.log(med), durations.sigma))))
        begin = end
    return jobs


class Decision(NamedTuple):
    """A started job: its id, start time, the residuals the policy saw, and its placement."""

    job: int
    time: float
    residual: tuple[int, ...]
    placement: RackPlacement


@dataclass(frozen=True)
class SimResult:
    """Metrics over jobs arriving in the measurement window, plus conservation counts."""

    utilisation: float
    blocking: float
    mean_wait: float
    p95_wait: float
    mean_ring_cost: float  # nan when no cross-rack job was admitted
    jobs: int
    started: int
    cross_rack: int
    arrived_total: int
    started_total: int
    completed_total: int
    queued_at_end: int
    running_at_end: int
    busy_at_end: int
    # started cross-rack jobs of the window by the rule that placed them (RackPlacement.source)
    sources: tuple[tuple[str, int], ...] = ()
    decisions: tuple["Decision", ...] = field(default=(), repr=False)

    METRICS = ("utilisation", "blocking", "mean_wait", "p95_wait", "mean_ring_cost")


COMPLETE, ARRIVE = 0, 1


def simulate(cluster: RackCluster, policy: RackPolicy, jobs: Sequence[Job],
             windows: Windows = Windows(), validate: bool = False, keep: bool = False) -> SimResult:
    """Run ``policy`` on ``jobs``; ``validate`` checks every placement and chip conservation after
    every event (raises AssertionError), ``keep`` records a :class:`Decision` per started job."""
    for i, j in enumerate(jobs):
        if j.id != i or not 1 <= j.demand or j.duration < 0 or j.arrival < 0:
            raise ValueError(f"jobs[{i}]: {j} (ids must be 0..n−1 in order, demand ≥ 1, times ≥ 0)")
    residual = np.array(cluster.empty_residual(), dtype=np.int64)
    free = cluster.total_chips
    heap: list[tuple[float, int, int, int]] = []
    seq = 0
    for j in jobs:
        heapq.heappush(heap, (j.arrival, ARRIVE, seq, j.id))
        seq += 1
    queue = np.zeros(0, dtype=np.int64)  # waiting job ids in arrival order
    late: list[int] = []  # deferred arrivals since the last scan, appended to ``queue`` before it
    demand_of = np.array([j.demand for j in jobs], dtype=np.int64)
    bound = policy.max_demand if isinstance(policy, DemandBound) else None

    def limit() -> int:
        """The largest demand worth offering the policy now."""
        return free if bound is None else min(free, bound(cluster, residual))

    running: dict[int, RackPlacement] = {}
    start_at: dict[int, float] = {}
    ring_cost_of: dict[int, int] = {}  # cross-rack jobs only (§V-C)
    source_of: dict[int, str] = {}
    kept: list[Decision] = []
    busy_integral, last_t = 0.0, 0.0
    completed = 0

    def try_start(jid: int, now: float) -> bool:
        """Offer job ``jid`` to the policy (the caller checked its demand against ``limit()``)."""
        nonlocal free, seq
        job = jobs[jid]
        p = policy.place(cluster, residual, job.demand)
        if p is None:
            return False
        if validate:
            errs = placement_violations(cluster, residual, job.demand, p)
            assert not errs, f"{policy.name} job {jid}: {errs}"
        if keep:
            kept.append(Decision(jid, now, tuple(residual.tolist()), p))
        for r, c in p.alloc:
            residual[r] -= c
        free -= job.demand
        running[jid] = p
        start_at[jid] = now
        if len(p.alloc) > 1:
            ring_cost_of[jid] = p.cost
            source_of[jid] = p.source
        heapq.heappush(heap, (now + job.duration, COMPLETE, seq, jid))
        seq += 1
        return True

    horizon, w_start, w_end, chips = windows.horizon, windows.start, windows.end, cluster.total_chips
    while heap and heap[0][0] <= horizon:
        now, kind, _, jid = heapq.heappop(heap)
        lo, hi = max(last_t, w_start), min(now, w_end)
        if hi > lo:
            busy_integral += (chips - free) * (hi - lo)
        last_t = now
        if kind == COMPLETE:
            for r, c in running.pop(jid).alloc:
                residual[r] += c
            free += jobs[jid].demand
            completed += 1
            if late:
                queue, late = np.concatenate([queue, np.asarray(late, dtype=np.int64)]), []
            queue = _scan(queue, demand_of, limit, lambda q: try_start(q, now))
        elif jobs[jid].demand > limit() or not try_start(jid, now):
            late.append(jid)
        if validate:
            held = np.zeros(cluster.n, dtype=np.int64)
            for p in running.values():
                for r, c in p.alloc:
                    held[r] += c
            assert (residual >= 0).all() and (residual + held == cluster.capacity).all(), "chips not conserved"
            assert free == int(residual.sum()), "free-chip counter drifted"
    lo, hi = max(last_t, windows.start), windows.end
    if hi > lo:
        busy_integral += (cluster.total_chips - free) * (hi - lo)
    return _metrics(cluster, jobs, windows, start_at, ring_cost_of, source_of, kept, busy_integral, completed,
                    len(queue) + len(late), running, free)


def _scan(queue: np.ndarray, demand_of: np.ndarray, limit: Callable[[], int],
          start: Callable[[int], bool]) -> np.ndarray:
    """One pass over the queue (job ids in arrival order); returns the ids still waiting.

    Skips a job whose demand is ≥ one that already failed since the last start, or exceeds
    ``limit()`` (the free chips, or the policy's :class:`DemandBound`; re-read after each start):
    every shipped policy's feasibility is a demand threshold on fixed residuals (local fit,
    aggregate residual, free-rack capacity), so it would fail too. The next job worth trying is
    found with one vectorised comparison, so long queues of never-placeable jobs (cross-rack jobs
    under a local-only policy) cost C-speed work per completion, not a Python loop.
    """
    if not len(queue):
        return queue
    dem = demand_of[queue]
    waiting = np.ones(len(queue), dtype=bool)
    below_limit = limit() + 1  # only demands < below_limit are tried
    pos = 0
    while pos < len(queue):
        below = dem[pos:] < below_limit
        if not below.any():
            break
        pos += int(below.argmax())
        d = int(dem[pos])
        if start(int(queue[pos])):
            waiting[pos] = False
            below_limit = limit() + 1
        else:
            below_limit = d
        pos += 1
    return queue[waiting]


def _metrics(cluster: RackCluster, jobs: Sequence[Job], windows: Windows, start_at: dict[int, float],
             ring_cost_of: dict[int, int], source_of: dict[int, str], kept: list[Decision], busy_integral: float, completed: int,
             queued: int, running: dict[int, RackPlacement], free: int) -> SimResult:
    measured = [j for j in jobs if windows.start <= j.arrival < windows.end]
    weight = sum(j.demand * j.duration for j in measured)
    blocked = sum(j.demand * j.duration for j in measured if j.id not in start_at)
    waits = np.array([start_at[j.id] - j.arrival for j in measured if j.id in start_at])
    in_window = [jid for jid in ring_cost_of if windows.start <= jobs[jid].arrival < windows.end]
    ring_costs = [ring_cost_of[jid] for jid in in_window]
    sources = Counter(source_of[jid] for jid in in_window)
    return SimResult(
        utilisation=busy_integral / (cluster.total_chips * windows.measure),
        blocking=blocked / weight if weight else float("nan"),
        mean_wait=float(waits.mean()) if len(waits) else float("nan"),
        p95_wait=float(np.percentile(waits, 95)) if len(waits) else float("nan"),
        mean_ring_cost=float(np.mean(ring_costs)) if ring_costs else float("nan"),
        jobs=len(measured),
        started=len(waits),
        cross_rack=len(ring_costs),
        arrived_total=len(jobs),
        started_total=len(start_at),
        completed_total=completed,
        queued_at_end=queued,
        running_at_end=len(running),
        busy_at_end=cluster.total_chips - free,
        sources=tuple(sorted(sources.items())),
        decisions=tuple(kept),
    )
