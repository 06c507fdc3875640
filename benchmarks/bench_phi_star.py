"""Φ★ solve times: pattern ILP (CP-SAT, HiGHS via PuLP) vs a naive assignment model, and the
memoised oracle over many small snapshots. Prints tables; all ratios are measured in this run.

    python benchmarks/bench_phi_star.py [--mixes 9] [--assign-mixes 3] [--assign-limit 10]
                                        [--snapshots 100000] [--seed 1]

Instances: random mixes at ~90 % load (total demand ≈ 0.9·8N GPUs), instance sizes drawn from a
production-like distribution (1- and 8-GPU dominant, a few FUF sizes), seeded.
The assignment model (one boolean per instance × node, CP-SAT, one worker, time limit) is run
only where it can be built in reasonable memory; larger N are reported as not attempted.
"""
from __future__ import annotations

import argparse
import random
import statistics
import time

from ortools.sat.python import cp_model

from oracle.gpu.phi_star import DP_STATE_LIMIT, _dp_states, clear_cache, phi_star, phi_star_cpsat, phi_star_milp
from oracle.result import Status, cpsat_status

G = 8
SIZES = (1, 2, 3, 4, 5, 6, 7, 8)
WEIGHTS = (0.40, 0.14, 0.03, 0.14, 0.02, 0.03, 0.02, 0.22)
ASSIGN_MAX_BOOLS = 200_000  # beyond this the naive model is not built (memory/time of building)


def random_mix(rng: random.Random, n_nodes: int, load: float = 0.9) -> tuple[int, ...]:
    target = int(load * G * n_nodes)
    counts, used = [0] * G, 0
    while used < target:
        g = rng.choices(SIZES, WEIGHTS)[0]
        if used + g > target:
            g = target - used  # top up exactly to the target load
        counts[g - 1] += 1
        used += g
    return tuple(counts)


def assignment_model(counts: tuple[int, ...], n_nodes: int, time_limit: float) -> tuple[Status, float]:
    """The naive model: x[i, n] ∈ {0,1}; minimise partial nodes. Returns (status, seconds)."""
    t0 = time.perf_counter()
    items = [g for g in range(1, G + 1) for _ in range(counts[g - 1])]
    m = cp_model.CpModel()
    x = [[m.new_bool_var(f"x{i}_{n}") for n in range(n_nodes)] for i in range(len(items))]
    for i in range(len(items)):
        m.add_exactly_one(x[i])
    partial = []
    for n in range(n_nodes):
        load = sum(items[i] * x[i][n] for i in range(len(items)))
        m.add(load <= G)
        used, full, part = m.new_bool_var(f"u{n}"), m.new_bool_var(f"f{n}"), m.new_bool_var(f"p{n}")
        m.add(load >= 1).only_enforce_if(used)
        m.add(load == 0).only_enforce_if(~used)
        m.add(load == G).only_enforce_if(full)
        m.add(load <= G - 1).only_enforce_if(~full)
        m.add(part >= used - full)
        partial.append(part)
    m.minimize(sum(partial))
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.max_time_in_seconds = time_limit
    status = cpsat_status(s.status_name(s.solve(m)))
    return status, time.perf_counter() - t0


def ms(xs: list[float]) -> str:
    return f"{1000 * statistics.median(xs):9.1f}"


def bench_pattern_vs_assignment(args, rng: random.Random) -> None:
    print(f"== Φ★ median solve time at ~90 % load ({args.mixes} mixes per N; assignment model: "
          f"{args.assign_mixes} mixes, limit {args.assign_limit:g} s) ==")
    print(f"{'N':>6} {'items':>7} {'CP-SAT ms':>10} {'HiGHS ms':>10} {'assign ms':>10} {'assign status':>18} "
          f"{'assign/CP-SAT':>14} {'statuses':>10}")
    for n in (8, 64, 1024, 16384):
        mixes = [random_mix(rng, n) for _ in range(args.mixes)]
        cp, hi, statuses = [], [], set()
        for c in mixes:
            a, b = phi_star_cpsat(c, n), phi_star_milp(c, n)
            if (a.status, a.objective) != (b.status, b.objective):
                raise SystemExit(f"solvers disagree on {c}, N={n}: {a} vs {b}")
            cp.append(a.wall_time)
            hi.append(b.wall_time)
            statuses.add(a.status)
        items = statistics.median(sum(c) for c in mixes)
        bools = int(items * n)
        if args.assign_mixes < 1:
            a_ms, a_st, a_ratio = "   n/a", "not run", "n/a"
        elif bools <= ASSIGN_MAX_BOOLS:
            runs = [assignment_model(c, n, args.assign_limit) for c in mixes[: args.assign_mixes]]
            at = [t for _, t in runs]
            timeouts = sum(1 for s, _ in runs if s is not Status.OPTIMAL and s is not Status.INFEASIBLE)
            ratio = statistics.median(at) / statistics.median(cp)
            a_ms, a_st = ms(at), f"{timeouts}/{len(runs)} timeout"
            # a timed-out run counts as its limit, so the median is only a lower bound once
            # the timeouts reach the middle of the sorted runs
            a_ratio = (">" if timeouts > len(runs) // 2 else "") + f"{ratio:.0f}x"
        else:
            a_ms, a_st, a_ratio = "   n/a", f"not built ({bools:.1e} b)", "n/a"
        print(f"{n:>6} {items:>7.0f} {ms(cp):>10} {ms(hi):>10} {a_ms:>10} {a_st:>18} {a_ratio:>14} "
              f"{'/'.join(sorted(statuses)):>10}")


def random_snapshot(rng: random.Random) -> tuple[tuple[int, ...], int]:
    n = rng.randint(1, 8)
    return random_mix(rng, n, rng.random()), n


def bench_memoised(args, rng: random.Random) -> None:
    snaps = [random_snapshot(rng) for _ in range(args.snapshots)]
    clear_cache()
    t0, c0 = time.perf_counter(), time.process_time()
    statuses: dict[str, int] = {}
    solvers: dict[str, int] = {}
    for c, n in snaps:
        cert = phi_star(c, n)
        statuses[str(cert.status)] = statuses.get(str(cert.status), 0) + 1
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    for c, n in set(snaps):
        s = phi_star(c, n).solver
        solvers[s] = solvers.get(s, 0) + 1
    print(f"\n== memoised phi_star over {len(snaps)} random snapshots (N = 1..8, load U(0,1), cold cache) ==")
    print(f"total {total:.2f} s wall, {cpu:.2f} s CPU ({1e6 * total / len(snaps):.1f} µs/call), distinct (counts, N): "
          f"{len(set(snaps))}, statuses {statuses}, distinct solved by {solvers}")


def bench_dp_crossover(rng: random.Random) -> None:
    """Cold DP vs CP-SAT on small snapshots, bucketed by the DP's state count Π(n_g + 1)."""
    buckets: dict[int, tuple[list[float], list[float]]] = {}
    for _ in range(400):
        c, n = random_snapshot(rng)
        states = _dp_states(c)
        b = next(lim for lim in (64, 512, DP_STATE_LIMIT, 10**9) if states <= lim)
        if len(buckets.setdefault(b, ([], []))[0]) >= 25:
            continue
        clear_cache()
        t0 = time.perf_counter()
        dp = phi_star(c, n) if states <= DP_STATE_LIMIT else None
        t_dp = time.perf_counter() - t0
        cp = phi_star_cpsat(c, n)
        if dp is not None and (dp.status, dp.objective) != (cp.status, cp.objective):
            raise SystemExit(f"DP and CP-SAT disagree on {c}, N={n}")
        if dp is not None:
            buckets[b][0].append(t_dp)
        buckets[b][1].append(cp.wall_time)
    print(f"\n== cold DP vs CP-SAT on small snapshots (DP used up to {DP_STATE_LIMIT} states) ==")
    print(f"{'states <=':>10} {'n':>4} {'DP ms':>9} {'CP-SAT ms':>10}")
    for b in sorted(buckets):
        d, c = buckets[b]
        print(f"{b:>10} {len(c):>4} {ms(d) if d else '      n/a':>9} {ms(c):>10}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mixes", type=int, default=9)
    ap.add_argument("--assign-mixes", type=int, default=3)
    ap.add_argument("--assign-limit", type=float, default=10.0)
    ap.add_argument("--snapshots", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    for warm in (phi_star_cpsat, phi_star_milp):  # imports and solver start-up are not solve time
        warm((1,) + (0,) * (G - 1), 1)
    bench_pattern_vs_assignment(args, rng)
    bench_memoised(args, rng)
    bench_dp_crossover(rng)


if __name__ == "__main__":
    main()
