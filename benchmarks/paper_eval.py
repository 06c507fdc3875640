"""The paper's evaluation (seeds/000 §6.1, §6.2, §6.5) on the built-in trace, and a real trace end
to end, in one command.

    python benchmarks/paper_eval.py [--workers 2] [--schedulers a,b] [--openb PATH] [--out DIR]
                                    [--costs 1,2,...,10] [--etas 0.85,0.9,0.95]

1. Comparison table (Fig. 1–2): AFR, AJCT, AGU of every registered scheduler
   (``heuristics.gpu.registry``: the baselines, the COMPASS variants, FFT, DRR, SIFOpt and any
   scheduler registered later, e.g. CAFGD and MCG; hier-compass, Appendix D, needs an option and
   is skipped and named) at η ∈ {0.85, 0.90, 0.95} on the built-in trace, migration cost c = 8 s.
2. Migration-cost sweep (Fig. 4): c ∈ {1, …, 10} s at η = 0.90 for the schedulers that migrated
   at c = 8 s (a scheduler that never migrates gives the same run for every c, by construction);
   the c = 8 s column is part 1's run, not run again.
3. With ``--openb PATH`` (e.g. data/openb/openb_pod_list_default.csv): the load report and
   the comparison at η = 0.90 on that trace.

Figures go to ``--out`` (default ``paper_eval_out``): ``comparison.png`` (AFR / AJCT / AGU per
scheduler and η), ``cost_sweep.png`` (the three metrics against c), and, through
``simulate``'s writer and ``simulate-plot``, the part-1 results folder (``summary.csv``, per-run
jobs and series) with the time-series plots of Fig. 5–7 per η (``plots/``).

Runs are handed to the ``--workers`` processes longest first (SIFOpt, then FFT, then the other
migrating schedulers, larger clusters first), so no worker idles at the end of a part on one
long run. A run that did not complete (a policy refused a departure, or left the queue stuck) is
shown with its status; its AJCT is NaN and its AFR/AGU cover only the replayed part. Each part's
wall time and CPU time (this process and its workers) are printed, then the total (issue 15:
the whole evaluation within 10 minutes on 2 cores with ``--workers 2``).
"""
from __future__ import annotations

import argparse
import math
import resource
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from heuristics.gpu.registry import policy_migrates
from heuristics.gpu.simulator import SimConfig
from heuristics.gpu.sizing import cluster_size
from heuristics.gpu.trace import Trace
from heuristics.gpu.trace_gen import load_builtin
from heuristics.gpu.trace_loaders import load_trace
from proofs_check.cli.plots import plot_folder, save_figure
from proofs_check.cli.simulate import Progress, RunOutcome, RunSpec, default_schedulers, execute, write_outputs

METRICS = (("afr", "AFR"), ("ajct", "AJCT (s)"), ("agu", "AGU"))
# Measured run times on the built-in trace (docs/sifopt_scheduler.md): SIFOpt and FFT solve
# exact repacks, the other migrating schedulers run operators, the rest only place.
_HEAVY = {"sifopt": 0, "fft": 1}


def _cost_rank(spec: RunSpec) -> tuple[int, int]:
    migrating = policy_migrates(spec.scheduler) or spec.scheduler == "drr"
    return _HEAVY.get(spec.scheduler, 2 if migrating else 3), -spec.config.n_nodes


def sweep(trace: Trace, schedulers: list[str], etas: list[float], costs: list[float],
          workers: int) -> list[RunOutcome]:
    runs = []
    for eta in etas:
        n = cluster_size(trace, eta)
        for c in costs:
            for s in schedulers:
                runs.append((RunSpec(s, eta, c, None, SimConfig(s, n, migration_cost=c)), trace))
    runs.sort(key=lambda r: _cost_rank(r[0]))
    progress = Progress(len(runs))
    out = []
    for o in execute(runs, workers):
        out.append(o)
        progress.step(o.spec.run_id)
    return out


def _cpu() -> float:
    """CPU seconds of this process and of its finished worker processes."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@contextmanager
def part(name: str, times: list[tuple[str, float, float]]) -> Iterator[None]:
    """Record the wall and CPU time of one part of the evaluation."""
    w0, c0 = time.perf_counter(), _cpu()
    yield
    times.append((name, time.perf_counter() - w0, _cpu() - c0))


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
    for o in sorted(outcomes, key=lambda o: o.spec.run_id):
        m = o.metrics
        print(f"{o.spec.run_id:<36}{o.spec.config.n_nodes:>5}{_f(m.migrations_per_job, '.3f'):>9}"
              f"{_f(m.frag_blocking_share, '.3f'):>9}{_f(m.mean_partial, '.2f'):>9}{_f(m.max_nsif, '.0f'):>8}"
              f"{_f(m.wcc_coverage, '.3f'):>7}{o.result.events:>8}{o.wall:>8.1f}")


def figure(outcomes: list[RunOutcome], key: str, keys: list, path: Path, bars: bool) -> Path:
    """AFR, AJCT, AGU against ``key`` (eta: grouped bars, Fig. 1–2; cost: lines, Fig. 4)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {(o.spec.scheduler, getattr(o.spec, key)): o.metrics for o in outcomes}
    schedulers = sorted({o.spec.scheduler for o in outcomes})
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    width = 0.8 / max(1, len(schedulers))
    for ax, (attr, label) in zip(axes, METRICS):
        for i, s in enumerate(schedulers):
            ys = [getattr(by[(s, k)], attr) for k in keys]
            if bars:
                ax.bar([j + i * width for j in range(len(keys))], ys, width, label=s)
            else:
                ax.plot(keys, ys, marker="o", label=s)
        if bars:
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))], [f"η={k:g}" for k in keys])
        else:
            ax.set_xlabel("migration cost c (s)")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=7, ncol=2)
    return save_figure(fig, path)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--schedulers", default=None, help="default: every registered scheduler")
    ap.add_argument("--etas", default="0.85,0.9,0.95")
    ap.add_argument("--costs", default=",".join(str(c) for c in range(1, 11)))
    ap.add_argument("--openb", default=None, help="path of an openb_pod_list CSV")
    ap.add_argument("--out", default="paper_eval_out", help="folder for the figures and result files")
    a = ap.parse_args()
    t0 = time.perf_counter()
    times: list[tuple[str, float, float]] = []
    if a.schedulers:
        schedulers = a.schedulers.split(",")
    else:
        schedulers, skipped = default_schedulers({})
        for name, why in skipped:
            print(f"skipped {name}: {why}")
    etas = [float(x) for x in a.etas.split(",")]
    costs = [float(x) for x in a.costs.split(",")]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    trace = load_builtin()
    print(trace.report.summary())

    print(f"\n== 1. comparison on the built-in trace, c = 8 s, {len(schedulers)} schedulers "
          f"(* = run did not complete) ==")
    with part("1. comparison runs", times):
        main_runs = sweep(trace, schedulers, etas, [8.0], a.workers)
    comparison_table(main_runs, "eta", etas)
    extras_table(main_runs)

    migrating = sorted({o.spec.scheduler for o in main_runs
                        if o.spec.eta == 0.9 and o.metrics.migrations_per_job > 0})
    print(f"\n== 2. migration-cost sweep at η = 0.9 for the migrating schedulers {migrating} ==")
    cost_runs: list[RunOutcome] = []
    if migrating:
        reused = [o for o in main_runs if o.spec.eta == 0.9 and o.spec.scheduler in migrating and o.spec.cost in costs]
        with part("2. cost sweep runs", times):
            cost_runs = reused + sweep(trace, migrating, [0.9], [c for c in costs if not (c == 8.0 and reused)],
                                       a.workers)
        comparison_table(cost_runs, "cost", costs)
    print("non-migrating schedulers are flat in c by construction:",
          ", ".join(sorted(set(schedulers) - set(migrating))))

    with part("figures", times):
        figs = [figure(main_runs, "eta", etas, out / "comparison.png", bars=True)]
        if cost_runs:
            figs.append(figure(cost_runs, "cost", costs, out / "cost_sweep.png", bars=False))
        write_outputs(out, trace, main_runs)
        figs += plot_folder(out)
    print(f"\nfigures: {', '.join(str(p) for p in figs)}")

    if a.openb:
        print(f"\n== 3. real trace {a.openb}, η = 0.9, c = 8 s ==")
        with part("3. openb runs", times):
            real = load_trace(a.openb, "openb")
            print(real.report.summary())
            print(f"N(0.9) = {cluster_size(real, 0.9)} nodes")
            real_runs = sweep(real, schedulers, [0.9], [8.0], a.workers)
        comparison_table(real_runs, "eta", [0.9])
        extras_table(real_runs)
    print(f"\n{'part':<22}{'wall s':>9}{'cpu s':>9}")
    for name, wall, cpu in times:
        print(f"{name:<22}{wall:>9.1f}{cpu:>9.1f}")
    print(f"total wall time {time.perf_counter() - t0:.1f} s with {a.workers} worker(s); "
          f"CPU {_cpu():.1f} s (this process and its workers)")


if __name__ == "__main__":
    main()
