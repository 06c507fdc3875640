"""Proposition 2, measured: mean time per COMPASS event at steady ~90 % load as N grows.

Usage: python benchmarks/bench_compass.py [--nodes 64,256,1024,4096,16384] [--events 4000]

For each N the cluster is first filled to the target load with jobs drawn from a GFS-like mix
(TRACES.md shares), then a steady stream alternates departures of a random running job and
arrivals of new jobs, keeping the load near the target. Arrival and departure events are timed
separately (each event = Algorithm 1's Place/Remove calls plus its Compact pass) and reported with
the ratio to the smallest N measured in the same run. Proposition 2 says Place is O(log N),
Remove O(1), Compact O(N) in the worst case.
"""
from __future__ import annotations

import argparse
import random
import statistics
import time

from heuristics.cluster import Job
from heuristics.compass import Compass

# Job shapes and weights shaped like the published GFS shares (TRACES.md).
SHAPES = [((1, 1), 60.0), ((1, 2), 4.0), ((2, 1), 4.9), ((4, 1), 3.9), ((8, 1), 10.0),
          ((8, 2), 2.0), ((8, 4), 1.1), ((3, 1), 0.04), ((5, 1), 0.02), ((6, 1), 0.01), ((7, 1), 0.01)]


def measure(n_nodes: int, events: int, load: float, seed: int, variant: str) -> tuple[float, float]:
    """Mean seconds per arrival event and per departure event at steady ``load``."""
    rng = random.Random(seed)
    shapes, weights = zip(*SHAPES)
    c = Compass(n_nodes, variant=variant)
    target = load * 8 * n_nodes
    used = 0
    running: list[Job] = []
    next_id = 0

    def arrive() -> float:
        nonlocal used, next_id
        g, w = rng.choices(shapes, weights)[0]
        job = Job(next_id, g, w)
        next_id += 1
        t0 = time.perf_counter()
        ok = c.arrive(job).ok
        dt = time.perf_counter() - t0
        if ok:
            running.append(job)
            used += g * w
        return dt

    def depart() -> float:
        nonlocal used
        job = running.pop(rng.randrange(len(running)))
        t0 = time.perf_counter()
        c.depart(job.id)
        dt = time.perf_counter() - t0
        used -= job.g * job.w
        return dt

    while used < target:
        arrive()
    t_arr: list[float] = []
    t_dep: list[float] = []
    for _ in range(events):
        if used >= target and running:
            t_dep.append(depart())
        else:
            t_arr.append(arrive())
    return statistics.fmean(t_arr), statistics.fmean(t_dep)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="64,256,1024,4096,16384")
    ap.add_argument("--events", type=int, default=4000)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--variant", default="literal")
    a = ap.parse_args()
    sizes = [int(x) for x in a.nodes.split(",")]
    print(f"COMPASS-{a.variant}: mean time per event at {a.load:.0%} load, {a.events} steady events")
    print(f"{'N':>7} {'arrival us':>11} {'x N0':>6} {'departure us':>13} {'x N0':>6}")
    base = None
    for n in sizes:
        arr, dep = measure(n, a.events, a.load, a.seed, a.variant)
        base = base or (arr, dep)
        print(f"{n:>7} {arr * 1e6:>11.1f} {arr / base[0]:>6.2f} {dep * 1e6:>13.1f} {dep / base[1]:>6.2f}")
    print("target (issue 3): <= 3x growth from the smallest to the largest N")


if __name__ == "__main__":
    main()
