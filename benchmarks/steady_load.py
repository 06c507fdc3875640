"""The job mix and the steady-load event driver shared by the per-event benchmarks.

A cluster is first filled to a target load with jobs drawn from a (g, w) mix, then a steady stream
alternates departures of a random running job (while the load is at or above the target) and
arrivals of new jobs, keeping the load near the target. Only the policy's own ``arrive`` /
``depart`` call is timed (drawing the job is not).
"""
from __future__ import annotations

import random
import statistics
import time
from typing import Callable, Hashable, NamedTuple

from heuristics.gpu.cluster import Job

Mix = list[tuple[tuple[int, int], float]]  # ((g, w), relative weight)

# Job shapes and weights shaped like the published GFS shares (TRACES.md).
GFS_MIX: Mix = [((1, 1), 60.0), ((1, 2), 4.0), ((2, 1), 4.9), ((4, 1), 3.9), ((8, 1), 10.0),
                ((8, 2), 2.0), ((8, 4), 1.1), ((3, 1), 0.04), ((5, 1), 0.02), ((6, 1), 0.01), ((7, 1), 0.01)]


class SteadyTimes(NamedTuple):
    """Mean seconds per steady arrival and per steady departure, and how many steady events
    changed the watched state."""

    arrival: float
    departure: float
    changed: int


def steady_load(policy, mix: Mix, n_gpus: int, events: int, load: float, seed: int,
                state: Callable[[object], Hashable] = lambda policy: None) -> SteadyTimes:
    """Fill ``policy`` to ``load`` × ``n_gpus`` GPUs, then time ``events`` steady events.

    ``state(policy)`` is read after the fill and after every steady event (outside the timing);
    ``changed`` counts the events after which it differs from before the event."""
    rng = random.Random(seed)
    shapes, weights = zip(*mix)
    target = load * n_gpus
    used, next_id = 0, 0
    running: list[Job] = []

    def arrive() -> float:
        nonlocal used, next_id
        g, w = rng.choices(shapes, weights)[0]
        job = Job(next_id, g, w)
        next_id += 1
        t0 = time.perf_counter()
        ok = policy.arrive(job).ok
        dt = time.perf_counter() - t0
        if ok:
            running.append(job)
            used += g * w
        return dt

    def depart() -> float:
        nonlocal used
        job = running.pop(rng.randrange(len(running)))
        t0 = time.perf_counter()
        policy.depart(job.id)
        dt = time.perf_counter() - t0
        used -= job.g * job.w
        return dt

    while used < target:
        before = used
        arrive()
        if used == before and not rng.random() < 0.9:  # a refused job: avoid spinning on a full cluster
            break
    t_arr: list[float] = []
    t_dep: list[float] = []
    changed, last = 0, state(policy)
    for _ in range(events):
        if used >= target and running:
            t_dep.append(depart())
        else:
            t_arr.append(arrive())
        now = state(policy)
        changed += now != last
        last = now
    return SteadyTimes(statistics.fmean(t_arr), statistics.fmean(t_dep), changed)
