"""Simulator throughput: events per second on the built-in trace at N(0.9) (issue 6 target:
≥ 20,000 events/s for COMPASS with Φ★ memoised).

    python benchmarks/bench_simulator.py [--schedulers compass-literal,best-fit] [--eta 0.9] [--repeat 3]

For each scheduler three figures, best of ``--repeat`` runs each:

* ``no Φ★``: the event loop and the policy alone (Φ★ not computed);
* ``Φ★ cold``: plus Φ★ of every distinct instance-count vector, the oracle's memo cleared first;
* ``Φ★ warm``: the same run again with the memo filled by the cold run.

Also printed: how many distinct count vectors the BFD certificate settled without a solver, and
which accessor the simulator reads Φπ and empty nodes through (``occupancy()``,
``partial_count()``/``empty_count()``, or a full ``placement()`` per state change). Ratios are against best-fit measured in the same run.
"""
from __future__ import annotations

import argparse
import time

from heuristics.gpu.registry import make_policy
from heuristics.gpu.simulator import SimConfig, bfd_certified_phi_star, oracle_phi_star, simulate
from heuristics.gpu.sizing import cluster_size
from heuristics.gpu.trace_gen import load_builtin
from oracle.gpu.phi_star import clear_cache


def best_of(repeat: int, fn) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--schedulers", default="compass-literal,compass-repaired,best-fit")
    ap.add_argument("--eta", type=float, default=0.9)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    trace = load_builtin()
    n = cluster_size(trace, a.eta)
    print(f"trace {trace.name}: {len(trace)} jobs, N({a.eta}) = {n} nodes")
    print(f"{'scheduler':<18}{'status':<10}{'events':>7}{'no Φ★ ev/s':>13}{'Φ★ cold ev/s':>14}"
          f"{'Φ★ warm ev/s':>14}{'distinct':>9}{'BFD-cert':>9}  node counter")
    rows = {}
    for name in a.schedulers.split(","):
        cfg = SimConfig(name, n)
        t_raw, res = best_of(a.repeat, lambda: simulate(trace.jobs, cfg, phi_star=None))

        def cold():
            clear_cache()
            return simulate(trace.jobs, cfg)

        t_cold, _ = best_of(a.repeat, cold)
        t_warm, _ = best_of(a.repeat, lambda: simulate(trace.jobs, cfg, phi_star=oracle_phi_star))
        distinct = set(res.series.counts)
        certified = sum(1 for c in distinct if bfd_certified_phi_star(c, n, 8) is not None)
        pol = make_policy(name, n)
        fast = ("occupancy()" if hasattr(pol, "occupancy") else
                "partial/empty_count()" if hasattr(pol, "empty_count") and hasattr(pol, "partial_count")
                else "placement()")
        ev = res.events
        rows[name] = ev / t_warm
        print(f"{name:<18}{res.status:<10}{ev:>7}{ev / t_raw:>13,.0f}{ev / t_cold:>14,.0f}"
              f"{ev / t_warm:>14,.0f}{len(distinct):>9}{certified:>9}  {fast}")
    if "best-fit" in rows:
        for name, r in rows.items():
            print(f"{name}: warm events/s = {r / rows['best-fit']:.3f} x best-fit")


if __name__ == "__main__":
    main()
