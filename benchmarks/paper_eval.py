"""The paper's evaluation (seeds/000 §6.1, §6.2, §6.5) on the built-in trace, and a real trace end
to end.

    python benchmarks/paper_eval.py [--workers 2] [--schedulers a,b] [--openb PATH]
                                    [--costs 1,2,...,10] [--etas 0.85,0.9,0.95]

1. Comparison table (Fig. 1–2): AFR, AJCT, AGU of every registered scheduler (that needs no
   options: hier-compass, Appendix D, is skipped and named) at
   η ∈ {0.85, 0.90, 0.95} on the built-in trace, migration cost c = 8 s.
2. Migration-cost sweep (Fig. 4): c ∈ {1, …, 10} s at η = 0.90 for the schedulers that migrated
   at c = 8 s (a scheduler that never migrates gives the same run for every c, by construction).
3. With ``--openb PATH`` (e.g. ../shared/data/openb_pod_list_default.csv): the load report and
   the comparison at η = 0.90 on that trace.

A run that did not complete (a policy refused a departure, or left the queue stuck) is shown with
its status; its AJCT is NaN and its AFR/AGU cover only the replayed part. Total wall time is
printed at the end (issue 6 target: the whole sweep ≤ 10 minutes with ``--workers 2``).
"""
from __future__ import annotations

import argparse
import math
import time

from heuristics.gpu.simulator import SimConfig
from heuristics.gpu.sizing import cluster_size
from heuristics.gpu.trace import Trace
from heuristics.gpu.trace_gen import load_builtin
from heuristics.gpu.trace_loaders import load_trace
from proofs_check.cli.simulate import Progress, RunOutcome, RunSpec, default_schedulers, execute


def sweep(trace: Trace, schedulers: list[str], etas: list[float], costs: list[float],
          workers: int) -> list[RunOutcome]:
    runs = []
    for eta in etas:
        n = cluster_size(trace, eta)
        for c in costs:
            for s in schedulers:
                runs.append((RunSpec(s, eta, c, None, SimConfig(s, n, migration_cost=c)), trace))
    progress = Progress(len(runs))
    out = []
    for o in execute(runs, workers):
        out.append(o)
        progress.step(o.spec.run_id)
    return out


def _f(x: float, spec: str) -> str:
    return "nan" if math.isnan(x) else format(x, spec)


def comparison_table(outcomes: list[RunOutcome], key: str, keys: list) -> None:
    """Rows = schedulers, column groups = values of ``key`` (eta or cost): AFR / AJCT / AGU."""
    by = {(o.spec.scheduler, getattr(o.spec, key)): o for o in outcomes}
    schedulers = sorted({o.spec.scheduler for o in outcomes})
    head = f"{'scheduler':<18}" + "".join(f"| {key}={k:<6g} AFR     AJCT(s)   AGU   " for k in keys)
    print(head)
    for s in schedulers:
        line = f"{s:<18}"
        for k in keys:
            o = by[(s, k)]
            m = o.metrics
            flag = "" if o.result.status == "complete" else "*"
            line += f"| {flag:<8}{_f(m.afr, '.4f'):>7} {_f(m.ajct, '9.0f'):>9} {_f(m.agu, '.4f'):>7} "
        print(line)
    bad = [o for o in outcomes if o.result.status != "complete"]
    for o in bad:
        print(f"  * {o.spec.run_id}: {o.result.status}: {o.result.note}")


def extras_table(outcomes: list[RunOutcome]) -> None:
    print(f"{'run':<36}{'N':>5}{'migr/job':>9}{'fragblk':>9}{'meanPart':>9}{'maxNSIF':>8}{'rho':>7}{'events':>8}{'wall s':>8}")
    for o in outcomes:
        m = o.metrics
        print(f"{o.spec.run_id:<36}{o.spec.config.n_nodes:>5}{_f(m.migrations_per_job, '.3f'):>9}"
              f"{_f(m.frag_blocking_share, '.3f'):>9}{_f(m.mean_partial, '.2f'):>9}{_f(m.max_nsif, '.0f'):>8}"
              f"{_f(m.wcc_coverage, '.3f'):>7}{o.result.events:>8}{o.wall:>8.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--schedulers", default=None, help="default: every registered scheduler")
    ap.add_argument("--etas", default="0.85,0.9,0.95")
    ap.add_argument("--costs", default=",".join(str(c) for c in range(1, 11)))
    ap.add_argument("--openb", default=None, help="path of an openb_pod_list CSV")
    a = ap.parse_args()
    t0 = time.perf_counter()
    if a.schedulers:
        schedulers = a.schedulers.split(",")
    else:
        schedulers, skipped = default_schedulers({})
        for name, why in skipped:
            print(f"skipped {name}: {why}")
    etas = [float(x) for x in a.etas.split(",")]
    costs = [float(x) for x in a.costs.split(",")]
    trace = load_builtin()
    print(trace.report.summary())

    print("\n== 1. comparison on the built-in trace, c = 8 s (* = run did not complete) ==")
    main_runs = sweep(trace, schedulers, etas, [8.0], a.workers)
    comparison_table(main_runs, "eta", etas)
    extras_table(main_runs)

    migrating = sorted({o.spec.scheduler for o in main_runs
                        if o.spec.eta == 0.9 and o.metrics.migrations_per_job > 0})
    print(f"\n== 2. migration-cost sweep at η = 0.9 for the migrating schedulers {migrating} ==")
    if migrating:
        cost_runs = sweep(trace, migrating, [0.9], costs, a.workers)
        comparison_table(cost_runs, "cost", costs)
    print("non-migrating schedulers are flat in c by construction:",
          ", ".join(sorted(set(schedulers) - set(migrating))))

    if a.openb:
        print(f"\n== 3. real trace {a.openb}, η = 0.9, c = 8 s ==")
        real = load_trace(a.openb, "openb")
        print(real.report.summary())
        print(f"N(0.9) = {cluster_size(real, 0.9)} nodes")
        real_runs = sweep(real, schedulers, [0.9], [8.0], a.workers)
        comparison_table(real_runs, "eta", [0.9])
        extras_table(real_runs)
    print(f"\ntotal wall time {time.perf_counter() - t0:.1f} s with {a.workers} worker(s)")


if __name__ == "__main__":
    main()
