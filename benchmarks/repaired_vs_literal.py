"""Literal vs repaired COMPASS side by side in the simulator: what the repair costs (issue 8).

    python benchmarks/repaired_vs_literal.py [--openb PATH] [--eta 0.9] [--cost 8] [--workers 2]

One table: for the built-in trace and (with ``--openb``, e.g.
data/openb/openb_pod_list_default.csv) the real openb trace, each COMPASS variant
(literal, prop3, repaired) and, as references, best-fit (no migration) and SIFOpt (the
minimum-migration oracle scheduler), at N(η): run status, AFR, AJCT, AGU, migrations per job,
fragmentation-induced blocking share and WCC coverage ρ. A literal run that hits an operator
failure is shown as ``aborted`` with the event that stopped it: its AFR/AGU cover only the
replayed part and its AJCT is undefined (NaN), never a made-up number.
"""
from __future__ import annotations

import argparse
import time

from heuristics.gpu.simulator import SimConfig
from heuristics.gpu.sizing import cluster_size
from heuristics.gpu.trace import Trace
from heuristics.gpu.trace_gen import load_builtin
from heuristics.gpu.trace_loaders import load_trace
from proofs_check.cli.simulate import RunSpec, execute, print_table

SCHEDULERS = ("compass-literal", "compass-prop3", "compass-repaired", "best-fit", "sifopt")


def compare(trace: Trace, eta: float, cost: float, workers: int, schedulers=SCHEDULERS):
    n = cluster_size(trace, eta)
    runs = [(RunSpec(s, eta, cost, None, SimConfig(s, n, migration_cost=cost)), trace) for s in schedulers]
    return list(execute(runs, workers))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--openb", help="path of an openb pod list (PAI 2023 format)")
    ap.add_argument("--eta", type=float, default=0.9)
    ap.add_argument("--cost", type=float, default=8.0)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    t0 = time.perf_counter()
    traces = [load_builtin()] + ([load_trace(a.openb, "openb")] if a.openb else [])
    for trace in traces:
        print(f"\n== {trace.name}: {trace.report.summary()}")
        print_table(compare(trace, a.eta, a.cost, a.workers))
    print(f"\ncommand: python benchmarks/repaired_vs_literal.py{' --openb ' + a.openb if a.openb else ''}"
          f" --eta {a.eta:g} --cost {a.cost:g}  [{time.perf_counter() - t0:.0f}s]")


if __name__ == "__main__":
    main()
