"""Load a real openb trace and print its load report, cluster sizes N(η) (eq. 13) and the
demand-side WCC coverage ρ (§6.4), for the whole trace and per day.

Usage: python benchmarks/bench_traces.py [openb_pod_list.csv]
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from heuristics.gpu.sizing import cluster_size, day_window, percentile_demand, wcc_coverage
from heuristics.gpu.trace import TraceError
from heuristics.gpu.trace_gen import load_builtin
from heuristics.gpu.trace_loaders import load_openb

DEFAULT = str(Path(__file__).resolve().parent.parent / "data" / "openb" / "openb_pod_list_default.csv")
ETAS = (0.85, 0.90, 0.95)


def describe(trace) -> None:
    t0 = time.perf_counter()
    sizes = [(eta, percentile_demand(trace, eta), cluster_size(trace, eta)) for eta in ETAS]
    rho = wcc_coverage(trace)
    elapsed = time.perf_counter() - t0
    print(f"{trace.name}: {len(trace)} jobs, span {trace.end / 86400:.1f} days")
    for eta, p, n in sizes:
        print(f"  eta={eta:.2f}  p_eta={p:6d} GPUs  N(eta)={n:5d} nodes")
    print(f"  demand-side WCC coverage rho = {rho:.4f}   (sizing + rho in {elapsed:.3f} s)")


def per_day(trace) -> None:
    days = [day_window(trace, d) for d in range(int(trace.jobs[-1].submit // 86400) + 1)]
    days = [d for d in days if len(d)]
    rhos = [wcc_coverage(d) for d in days]
    n90 = [cluster_size(d, 0.9) for d in days]
    print(f"  per day ({len(days)} days with submissions): rho = 1 on {sum(r == 1 for r in rhos)} days, "
          f"min rho {min(rhos):.4f}; N(0.90) median {statistics.median(n90)}, max {max(n90)}")


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    try:
        t0 = time.perf_counter()
        trace = load_openb(path)
        load_s = time.perf_counter() - t0
    except TraceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(trace.report.summary())
    print(f"  loaded in {load_s:.3f} s")
    describe(trace)
    per_day(trace)
    print()
    describe(load_builtin())
    return 0


if __name__ == "__main__":
    sys.exit(main())
