"""Minimum-migration repack to Φ★: solve time, proven-optimal share, and the heuristic's gap.

Usage: python benchmarks/bench_min_migration.py [--nodes 8,16,32,64,128] [--samples 10]
           [--load 0.9] [--mix gfs,uniform] [--time-limit 10] [--highs]

For each N and job mix, ``--samples`` fragmented placements are generated: first-fit
(``heuristics.gpu.baselines``) fills the cluster with random jobs to ``--load``, then 3·N rounds of
"a random running job departs, first-fit refills to the load" scatter the free GPUs. On each
placement it runs

* ``oracle.gpu.min_migration.min_migration_repack`` (CP-SAT; ``--highs`` also times HiGHS on the
  same model and checks both agree) — wall time, status, migrations, GPUs moved;
* ``heuristics.gpu.sifopt.heuristic_repack`` — SIFOpt's fallback beyond ``exact_max_nodes`` — and
  its gap to the exact answer (extra migrations), measured only where the exact solve is proven;
* ``oracle.gpu.min_migration.min_migrations_to_admit`` for an 8x2 job (the ``admit`` question).

Mixes: ``gfs`` draws (g, w) with the GFS-like shares of benchmarks/steady_load.py (mostly 1- and
8-GPU jobs); ``uniform`` draws g uniformly from 1..8 and w from 1..2 (many FUF sizes 3, 5, 6, 7).
"""
from __future__ import annotations

import argparse
import random
import statistics
import time

from heuristics.gpu.cluster import Job
from heuristics.gpu.registry import make_policy
from heuristics.gpu.sifopt import heuristic_repack, plain
from oracle.gpu.min_migration import min_migration_repack, min_migrations_to_admit, normalise, partial_count
from steady_load import GFS_MIX  # benchmarks/ is on sys.path when run as a script

UNIFORM_SHAPES = [((g, w), 1.0) for g in range(1, 9) for w in (1, 2)]
MIXES = {"gfs": GFS_MIX, "uniform": UNIFORM_SHAPES}


def fragmented(n_nodes: int, load: float, mix: str, seed: int):
    """A first-fit placement at ~``load`` after random departures and refills (plain data)."""
    rng = random.Random(seed)
    shapes, weights = zip(*MIXES[mix])
    ff = make_policy("first-fit", n_nodes)
    target = load * 8 * n_nodes
    next_id = 0

    def used() -> int:
        return sum(j.g * j.w for j in ff.running().values())

    def refill() -> None:
        nonlocal next_id
        misses = 0
        while used() < target and misses < 20:
            g, w = rng.choices(shapes, weights)[0]
            misses = 0 if ff.arrive(Job(next_id, g, w)).ok else misses + 1
            next_id += 1

    refill()
    for _ in range(3 * n_nodes):
        ff.depart(rng.choice(sorted(ff.running())))
        refill()
    return plain(ff.placement())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", default="8,16,32,64,128")
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--mix", default="gfs,uniform")
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--highs", action="store_true", help="also solve with HiGHS and compare")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    min_migration_repack([[(0, 1)], [(1, 1)]])  # warm up imports so the first N is not charged

    print(f"load {args.load}, {args.samples} placements per row, time limit {args.time_limit}s, CP-SAT 1 worker")
    print(f"{'mix':8} {'N':>5} {'load':>5} {'Φπ':>6} {'Φ★':>5} {'mig':>6} {'GPUs':>6} {'t mean':>8} "
          f"{'t max':>8} {'proven':>7} {'heur mig':>8} {'gap mean':>8} {'gap max':>7} {'heur t':>8} "
          f"{'admit8x2/ok':>11} {'adm t':>7}" + ("  highs t   max t  proven agree" if args.highs else ""))
    for mix in args.mix.split(","):
        for n in (int(x) for x in args.nodes.split(",")):
            rows = []
            for s in range(args.samples):
                cur = normalise(fragmented(n, args.load, mix, args.seed * 1000 + s), 8)
                cert = min_migration_repack(cur, 8, time_limit=args.time_limit)
                t0 = time.perf_counter()
                _, _, h_moves, _ = heuristic_repack(cur, 8, time_limit=args.time_limit)
                h_time = time.perf_counter() - t0
                adm = min_migrations_to_admit(cur, 8, 8, 2, time_limit=args.time_limit)
                hi = min_migration_repack(cur, 8, time_limit=args.time_limit, solver="highs") if args.highs else None
                rows.append((cur, cert, len(h_moves), h_time, adm, hi))
            proven = [r for r in rows if r[1].is_optimal]
            gaps = [r[2] - r[1].objective for r in proven]
            if any(gap < 0 for gap in gaps):
                raise SystemExit(f"BUG: the heuristic beat a proven minimum at N={n} ({mix}): {gaps}")

            def mean(xs):
                return statistics.fmean(xs) if xs else float("nan")

            used = mean([sum(g for node in r[0] for _, g in node) / (8 * n) for r in rows])
            adm_ok = [r[4] for r in rows if r[4].is_optimal]
            line = (f"{mix:8} {n:>5} {used:>5.2f} {mean([partial_count(r[0], 8) for r in rows]):>6.1f} "
                    f"{mean([r[1].witness.target_partial for r in rows if r[1].witness.target_partial is not None]):>5.2f} "
                    f"{mean([r[1].objective for r in proven]):>6.1f} {mean([r[1].witness.gpus_moved for r in proven]):>6.1f} "
                    f"{mean([r[1].wall_time for r in rows]):>8.3f} {max(r[1].wall_time for r in rows):>8.3f} "
                    f"{len(proven):>3}/{len(rows):<3} {mean([r[2] for r in proven]):>8.1f} {mean(gaps):>8.2f} "
                    f"{max(gaps, default=float('nan')):>7} {mean([r[3] for r in rows]):>8.3f} "
                    f"{mean([a.objective for a in adm_ok]):>5.2f}/{len(adm_ok):<2} "
                    f"{mean([r[4].wall_time for r in rows]):>7.3f}")
            if args.highs:
                both = [r for r in rows if r[1].is_optimal and r[5].is_optimal]
                agree = all((r[5].objective, r[5].witness.gpus_moved) == (r[1].objective, r[1].witness.gpus_moved)
                            for r in both)
                hi_proven = sum(r[5].is_optimal for r in rows)
                line += (f"  {mean([r[5].wall_time for r in rows]):>7.3f} {max(r[5].wall_time for r in rows):>7.3f}"
                         f" {hi_proven:>3}/{len(rows):<3} {agree}")
            print(line, flush=True)
    print("columns: Φπ partial nodes before; Φ★ target; mig/GPUs the exact minimum (proven rows); t the exact "
          "solve incl. Φ★ (s); proven = optimal within the limit; heur mig the heuristic's migrations and its "
          "gap (extra migrations) vs exact on proven rows; admit8x2 fewest migrations to admit an 8x2 job "
          "(mean over the ok = proven-admissible placements; the others cannot hold 16 more GPUs); "
          "highs: the same model on HiGHS, agree = same (migrations, GPUs) wherever both proved optimality.")


if __name__ == "__main__":
    main()
