"""Proposition 2, measured: mean time per COMPASS event at steady ~90 % load as N grows.

Usage: python benchmarks/bench_compass.py [--nodes 64,256,1024,4096,16384] [--events 4000]

For each N the cluster is first filled to the target load with jobs drawn from a GFS-like mix
(TRACES.md shares), then a steady stream alternates departures of a random running job and
arrivals of new jobs, keeping the load near the target (benchmarks/steady_load.py). Arrival and
departure events are timed separately (each event = Algorithm 1's Place/Remove calls plus its Compact pass) and reported with
the ratio to the smallest N measured in the same run. Proposition 2 says Place is O(log N),
Remove O(1), Compact O(N) in the worst case.
"""
from __future__ import annotations

import argparse

from heuristics.gpu.compass import Compass
from steady_load import GFS_MIX, steady_load  # benchmarks/ is on sys.path when run as a script


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
        arr, dep, _ = steady_load(Compass(n, variant=a.variant), GFS_MIX, 8 * n, a.events, a.load, a.seed)
        base = base or (arr, dep)
        print(f"{n:>7} {arr * 1e6:>11.1f} {arr / base[0]:>6.2f} {dep * 1e6:>13.1f} {dep / base[1]:>6.2f}")
    print("target (issue 3): <= 3x growth from the smallest to the largest N")


if __name__ == "__main__":
    main()
