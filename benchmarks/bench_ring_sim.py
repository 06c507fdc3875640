"""OCS simulator at paper scale (seed 004 §V): 150 racks × 64 chips, 5×5×6 torus, 50 h warm-up,
200 h measurement, 50 h drain.

1. Wall time of one paper-scale run per scheduler (workload B, 95 % load, seed 0); the reference
   in the same run is the Local Best-Fit run (ratio = scheduler / local-best-fit).
2. The 95 %-load table for workloads B and D across the six schedulers, ``--seeds`` seeds, in the
   shape of the paper's Table II (utilisation, chip-hour-weighted blocking, mean / P95 wait, mean
   ring cost of admitted cross-rack jobs; mean ± sd over seeds). The paper used 50 seeds.

    python benchmarks/bench_ring_sim.py [--seeds 10] [--workers 1]

The 50-seed table with confidence intervals is benchmarks/ring_table.py.
"""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from heuristics.rack.ocs_sim import DurationModel, Windows
from heuristics.rack.ring_baselines import PAPER_POLICIES
from proofs_check.cli.ringsim import Cell, format_table, run_cell


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--skip-table", action="store_true")
    args = ap.parse_args()
    print(f"# {' '.join(sys.argv)}")
    schedulers = PAPER_POLICIES

    def cell(workload: str, seed: int, names=schedulers) -> Cell:
        return Cell(names, workload, 0.95, seed, (5, 5, 6), 64, Windows(), DurationModel(), "linear")

    _, walls = run_cell(cell("B", 0))
    print("one paper-scale run (150 racks, 300 h, workload B, load 95 %, seed 0):")
    for name, wall in walls.items():
        print(f"  {name:26s} {wall:6.2f} s   ratio to local-best-fit {wall / walls['local-best-fit']:5.2f}")
    if args.skip_table:
        return
    cells = [cell(wl, seed) for wl in ("B", "D") for seed in range(args.seeds)]
    start = time.perf_counter()
    pool = ProcessPoolExecutor(args.workers) if args.workers > 1 else None
    results = list(pool.map(run_cell, cells) if pool else map(run_cell, cells))
    rows = [r for cell_rows, _ in results for r in cell_rows]
    print(f"\nTable II shape ({args.seeds} seeds per workload, {time.perf_counter() - start:.0f} s wall):")
    print(format_table(rows, schedulers))


if __name__ == "__main__":
    main()
