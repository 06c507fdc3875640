"""Exact rack-subset oracle at paper scale (150 racks, 5×5×6 torus, C = 64; seed 004 §V-A).

For k = 2, 3, 4, 6 (the minimum rack count of the job), solves ``--instances`` random
stitching-regime instances per residual family with oracle/rack/rack_subset.py and prints the median /
max wall time and how many were proven optimal within ``--time-limit``. RingStitch's own decision
time on the same instances is the reference measured in the same run (ratio = oracle / RingStitch).

Families: ``random`` (a random share of racks with residual 1..63, the rest 0), ``dense`` (every
rack 40..63 free), ``equal`` (every rack 63 free — maximal symmetry, the B&B's worst case).
D is drawn uniformly from (sum of the k−1 largest residuals, sum of the k largest].

    python benchmarks/bench_ring_oracle.py [--instances 10] [--seed 0] [--time-limit 10]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from heuristics.rack.racks import FragmentationPenalty, RackCluster
from heuristics.rack.ringstitch import RingStitch
from oracle.rack.rack_subset import lex_optimal_subset


def instance(family: str, k: int, n: int, rng: np.random.Generator) -> tuple[list[int], int]:
    if family == "random":
        share = rng.choice([0.2, 0.5, 1.0])
        res = np.where(rng.random(n) < share, rng.integers(1, 64, n), 0)
    elif family == "dense":
        res = rng.integers(40, 64, n)
    else:
        res = np.full(n, 63)
    top = np.sort(res)[::-1]
    return [int(r) for r in res], int(rng.integers(top[:k - 1].sum() + 1, top[:k].sum() + 1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--instances", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=10.0)
    args = ap.parse_args()
    cluster = RackCluster.torus()
    policy = RingStitch()
    table = FragmentationPenalty().table(cluster.capacity)
    rng = np.random.default_rng(args.seed)
    print(f"# {' '.join(sys.argv)}")
    print(f"{'family':8s} {'k':>2s} {'n':>3s} {'median s':>9s} {'max s':>8s} {'optimal':>8s} "
          f"{'med nodes':>9s} {'RS med ms':>9s} {'ratio':>7s}")
    all_times = {}
    for family in ("random", "dense", "equal"):
        for k in (2, 3, 4, 6):
            times, nodes, rs_times, optimal = [], [], [], 0
            for _ in range(args.instances if family != "equal" else 1):
                res, demand = instance(family, k, cluster.n, rng)
                start = time.perf_counter()
                policy.place(cluster, res, demand)
                rs_times.append(time.perf_counter() - start)
                cert = lex_optimal_subset(res, demand, cluster.dist, table, time_limit=args.time_limit)
                times.append(cert.wall_time)
                nodes.append(cert.witness.nodes)
                optimal += cert.is_optimal and cert.objective is not None and cert.objective[0] == k
            all_times.setdefault(k, []).extend(times)
            med, rs = statistics.median(times), statistics.median(rs_times)
            print(f"{family:8s} {k:2d} {len(times):3d} {med:9.3f} {max(times):8.3f} {optimal:4d}/{len(times):<3d} "
                  f"{statistics.median(nodes):9.0f} {rs * 1e3:9.2f} {med / rs:7.1f}")
    for k, ts in all_times.items():
        print(f"k={k}: median over all families {statistics.median(ts):.3f} s, max {max(ts):.3f} s")


if __name__ == "__main__":
    main()
