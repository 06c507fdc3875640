"""RingStitch at the paper's statistics (seed 004 §V; issue 15 items 5 and 6).

Sections (``--sections``, comma-separated; default ``table,choice``):

- ``table``: the Table II-style comparison — RingStitch and its five baselines on workloads
  ``--workloads`` at load ``--load``, seeds 0..``--seeds``−1 (the paper: 50), one common arrival
  trace per (workload, seed) for every scheduler. Per cell: mean and the 95 % confidence interval
  of the mean over seeds (Student t, n − 1 df; printed as mean ±half-width) for utilisation,
  chip-hour-weighted blocking, mean and P95 wait, mean ring cost of admitted cross-rack jobs.
- ``choice``: how often RingStitch's rack choice is off the lexicographic optimum
  (oracle/rack/rack_subset.py), per torus size and capacity, paper scale first: decisions taken
  from RingStitch's own full-length runs of each workload, random stitching-regime instances on
  tori from 150 racks down, and the exhaustive tiny tori of the ``ring-choice`` claim. Rates with
  95 % Wilson intervals.
- ``exact``: ``ring-exact-choice`` (the oracle's optimum for every cross-rack job,
  heuristics/rack/ring_exact_choice.py) beside the six paper schedulers on ``--exact-seeds``
  seeds (with the paper's schedulers from the table section on the same seeds, if it runs too),
  with the same CIs, the paired ring-cost difference against RingStitch, the share of cross-rack
  jobs the oracle decided, and the decision time per job (RingStitch's, measured in the same
  cells, is the reference).

Cells are submitted seed-major (every workload's seed 0 first), so a run cut short has the same
seeds for every workload; ``--save FILE`` appends every finished table/exact run as a JSON line and
``--replay FILE[,FILE]`` prints the table/exact reports from such files without simulating (so the
runs of a cut or split run — ``--exact-first-seed`` — can be reported together). The table section
also prints each stitching scheduler's ring cost minus RingStitch's, paired by seed.

    python benchmarks/ring_table.py --workers 2                          # items 5: table + rates
    python benchmarks/ring_table.py --sections exact --exact-seeds 10 --workers 2   # item 6
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from heuristics.rack.ocs_sim import WORKLOADS, SimResult, Windows, generate_trace, simulate
from heuristics.rack.racks import PAPER_CAPACITY, PAPER_DIMS, Coord, RackCluster, RackPlacement, Residual
from heuristics.rack.ring_baselines import PAPER_POLICIES, RackPolicy, make_ring_policy
from heuristics.rack.ring_exact_choice import RingExactChoice
from heuristics.rack.ringstitch import RingStitch
from oracle.rack.rack_subset import MAX_RACKS, min_racks
from proofs_check.figstyle import mean_ci, wilson
from proofs_check.rack.ring_choice import SourceTally, exhaustive_instances, rate_on, sampled_instances

METRICS = SimResult.METRICS
SCALE = {"utilisation": 100, "blocking": 100, "mean_wait": 1, "p95_wait": 1, "mean_ring_cost": 1}
HEAD = ("util %", "blocking %", "wait h", "P95 wait h", "ring cost")
EXACT = RingExactChoice.name


# --- statistics ---------------------------------------------------------------------------------

def fmt(mean: float, half: float, scale: float = 1.0) -> str:
    if math.isnan(mean):
        return "-"
    return f"{mean * scale:.2f}" + ("" if math.isnan(half) else f" ±{half * scale:.2f}")


# --- simulation cells ---------------------------------------------------------------------------

@dataclass
class Timed:
    """A policy that records its wall time per call, split by the number of racks placed on."""

    policy: RackPolicy
    local: list[float] = field(default_factory=list)  # one rack, or deferred
    cross: list[float] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.policy.name

    def place(self, cluster: RackCluster, residual: Residual, demand: int) -> RackPlacement | None:
        start = time.perf_counter()
        p = self.policy.place(cluster, residual, demand)
        (self.cross if p is not None and len(p.alloc) > 1 else self.local).append(time.perf_counter() - start)
        return p


@dataclass(frozen=True)
class Run:
    """One scheduler on one (workload, seed) trace."""

    scheduler: str
    workload: str
    seed: int
    metrics: dict[str, float]
    cross_rack: int
    sources: tuple[tuple[str, int], ...]
    cpu: float  # process CPU seconds of this simulation
    local_times: tuple[float, ...] = ()
    cross_times: tuple[float, ...] = ()


def save_runs(path: str, section: str, runs: Sequence[Run]) -> None:
    """Append runs as JSON lines, so a run cut short still leaves every finished cell."""
    with open(path, "a", encoding="utf-8") as out:
        out.writelines(json.dumps({"section": section, **dataclasses.asdict(r)}) + "\n" for r in runs)


def load_runs(path: str) -> dict[str, list[Run]]:
    """Runs saved by :func:`save_runs`, per section, in file order."""
    found: dict[str, list[Run]] = {}
    with open(path, encoding="utf-8") as src:
        for line in src:
            row = json.loads(line)
            run = Run(row["scheduler"], row["workload"], row["seed"], row["metrics"], row["cross_rack"],
                      tuple((str(k), int(n)) for k, n in row["sources"]), row["cpu"],
                      tuple(row["local_times"]), tuple(row["cross_times"]))
            found.setdefault(row["section"], []).append(run)
    return found


def run_cell(schedulers: tuple[str, ...], workload: str, seed: int, load: float, timed: bool) -> list[Run]:
    """Every scheduler on the (workload, seed) trace of the paper's cluster; ``timed`` records the
    decision time per call."""
    cluster = RackCluster.torus(PAPER_DIMS, PAPER_CAPACITY)
    jobs = generate_trace(cluster, WORKLOADS[workload], load, seed, Windows())
    runs = []
    for name in schedulers:
        policy = make_ring_policy(name)
        clock = Timed(policy) if timed else None
        cpu = time.process_time()
        res = simulate(cluster, clock or policy, jobs, Windows())
        runs.append(Run(name, workload, seed, {m: getattr(res, m) for m in METRICS}, res.cross_rack, res.sources,
                        time.process_time() - cpu, tuple(clock.local) if clock else (),
                        tuple(clock.cross) if clock else ()))
    return runs


def metric_table(runs: Sequence[Run], schedulers: Sequence[str], workloads: Sequence[str]) -> list[str]:
    lines = []
    for wl in workloads:
        seeds = sorted({r.seed for r in runs if r.workload == wl})
        lines.append(f"workload {wl}: {len(seeds)} seeds, mean ±95 % CI half-width")
        lines.append(f"  {'scheduler':26s}" + "".join(f"{h:>16s}" for h in HEAD))
        for s in schedulers:
            mine = [r for r in runs if r.workload == wl and r.scheduler == s]
            if not mine:
                continue
            cells = [fmt(*mean_ci([r.metrics[m] for r in mine])[:2], SCALE[m]) for m in METRICS]
            lines.append(f"  {s:26s}" + "".join(f"{c:>16s}" for c in cells))
    return lines


def paired_ring_lines(runs: Sequence[Run], schedulers: Sequence[str], workloads: Sequence[str]) -> list[str]:
    """Ring cost of every other stitching scheduler minus RingStitch's on the same trace (common
    random numbers make the difference far less noisy than the two separate intervals)."""
    lines = ["", "paired ring-cost difference against RingStitch (same seed), mean ±95 % CI half-width:"]
    for wl in workloads:
        rs = {r.seed: r.metrics["mean_ring_cost"] for r in runs if r.workload == wl and r.scheduler == "ringstitch"}
        cells = []
        for s in schedulers:
            other = {r.seed: r.metrics["mean_ring_cost"] for r in runs if r.workload == wl and r.scheduler == s}
            diffs = [other[k] - rs[k] for k in sorted(set(rs) & set(other))]
            if s != "ringstitch" and diffs and not all(math.isnan(d) for d in diffs):
                cells.append(f"{s} {fmt(*mean_ci(diffs)[:2])}")
        lines.append(f"  {wl}: " + "; ".join(cells))
    return lines


# --- item 6: the exact choice -------------------------------------------------------------------

def exact_report(runs: Sequence[Run], workloads: Sequence[str]) -> list[str]:
    lines = ["", "ring-exact-choice against RingStitch (paired by seed; difference = exact − RingStitch):"]
    head = (f"  {'wl':3s} {'Δ ring cost':>16s} {'Δ cross-rack jobs':>18s} {'same admission':>15s} "
            f"{'oracle-decided':>15s} {'RS ms/job':>10s} {'exact ms/job':>13s} {'cross ms med/P95/max':>24s}")
    lines.append(head)
    for wl in workloads:
        rs = {r.seed: r for r in runs if r.workload == wl and r.scheduler == "ringstitch"}
        ex = {r.seed: r for r in runs if r.workload == wl and r.scheduler == EXACT}
        seeds = sorted(set(rs) & set(ex))
        if not seeds:
            continue
        d_ring = mean_ci([ex[s].metrics["mean_ring_cost"] - rs[s].metrics["mean_ring_cost"] for s in seeds])
        d_cross = mean_ci([float(ex[s].cross_rack - rs[s].cross_rack) for s in seeds])
        same = sum(all(_same(ex[s].metrics[m], rs[s].metrics[m]) for m in METRICS if m != "mean_ring_cost")
                   for s in seeds)
        srcs: dict[str, int] = {}
        for s in seeds:
            for name, n in ex[s].sources:
                srcs[name.split(":")[0]] = srcs.get(name.split(":")[0], 0) + n
        total = sum(srcs.values())
        decided = f"{srcs.get('exact', 0) / total:.1%}" if total else "-"
        per_job = [sum(r.local_times + r.cross_times) / max(1, len(r.local_times + r.cross_times))
                   for r in (rs[s] for s in seeds)]
        per_job_ex = [sum(r.local_times + r.cross_times) / max(1, len(r.local_times + r.cross_times))
                      for r in (ex[s] for s in seeds)]
        cross = np.array([t for s in seeds for t in ex[s].cross_times]) * 1e3
        cross_txt = (f"{np.median(cross):.1f}/{np.percentile(cross, 95):.1f}/{cross.max():.0f}" if len(cross) else "-")
        lines.append(f"  {wl:3s} {fmt(*d_ring[:2]):>16s} {fmt(*d_cross[:2]):>18s} {same:>9d}/{len(seeds):<5d} "
                     f"{decided:>15s} {statistics.fmean(per_job) * 1e3:10.3f} "
                     f"{statistics.fmean(per_job_ex) * 1e3:13.3f} {cross_txt:>24s}")
        fallback = {k: v for k, v in srcs.items() if k != "exact"}
        if fallback:
            lines.append(f"      cross-rack jobs not proven optimal: {fallback} of {total} "
                         f"(fallback = needs > {MAX_RACKS} racks, RingStitch's choice placed)")
    return lines


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


# --- item 5: ring-choice rates per torus ---------------------------------------------------------

@dataclass(frozen=True)
class RateRow:
    label: str
    dims: Coord
    capacity: int
    source: str
    tally: SourceTally
    undecided: int


def simulated_rate(workload: str, count: int, seed: int, load: float) -> RateRow:
    """``count`` cross-rack decisions (within the oracle's ≤ 12 racks) drawn uniformly from
    RingStitch's full-length run of ``workload`` (seed ``seed``) on the paper's cluster."""
    cluster = RackCluster.torus(PAPER_DIMS, PAPER_CAPACITY)
    jobs = generate_trace(cluster, WORKLOADS[workload], load, seed, Windows())
    run = simulate(cluster, RingStitch(), jobs, Windows(), keep=True)
    pool = [(list(d.residual), jobs[d.job].demand) for d in run.decisions if len(d.placement.alloc) > 1]
    inside = [(res, dem) for res, dem in pool if (min_racks(res, dem) or MAX_RACKS + 1) <= MAX_RACKS]
    picks = np.random.default_rng([seed, 2]).choice(len(inside), size=min(count, len(inside)), replace=False)
    tally, undecided = rate_on(cluster, [inside[i] for i in sorted(picks)], RingStitch())
    src = (f"decisions, workload {workload} {load:.0%} seed {seed} ({len(pool)} cross-rack, "
           f"{len(pool) - len(inside)} > {MAX_RACKS} racks left out)")
    return RateRow("paper", PAPER_DIMS, PAPER_CAPACITY, src, tally, undecided)


def sampled_rate(dims: Coord, capacity: int, count: int, seed: int, max_racks: int) -> RateRow:
    cluster = RackCluster.torus(dims, capacity)
    tally, undecided = rate_on(cluster, sampled_instances(cluster, count, seed, max_racks), RingStitch())
    label = "paper" if (dims, capacity) == (PAPER_DIMS, PAPER_CAPACITY) else "sampled"
    return RateRow(label, dims, capacity, f"random, D ≤ top-{max_racks} residuals, seed {seed}", tally, undecided)


def exhaustive_rate(dims: Coord, capacity: int) -> RateRow:
    cluster = RackCluster.torus(dims, capacity)
    tally, undecided = rate_on(cluster, exhaustive_instances(cluster), RingStitch())
    return RateRow("exhaustive", dims, capacity, "every residual vector and stitching demand", tally, undecided)


def rate_lines(rows: Sequence[RateRow]) -> list[str]:
    lines = ["", "RingStitch off the lexicographic optimum, per torus size and capacity (paper scale first):",
             f"  {'torus':7s} {'racks':>5s} {'C':>3s} {'off/instances':>15s} {'rate':>7s} {'95 % CI':>15s} "
             f"{'ring worse':>10s} {'frag worse':>10s}  source"]
    for r in rows:
        t = r.tally
        lo, hi = wilson(t.suboptimal, t.instances)
        rate = t.suboptimal / t.instances if t.instances else float("nan")
        torus = "×".join(map(str, r.dims))
        lines.append(f"  {torus:7s} {int(np.prod(r.dims)):5d} {r.capacity:3d} {t.suboptimal:>6d}/{t.instances:<8d} "
                     f"{rate:7.1%} {f'{lo:.1%}–{hi:.1%}':>15s} {t.by_key[1].worse:10d} {t.by_key[2].worse:10d}  "
                     f"{r.source}" + (f"; {r.undecided} undecided" if r.undecided else ""))
    return lines


# --- main ---------------------------------------------------------------------------------------

EXHAUSTIVE: tuple[tuple[Coord, int], ...] = (((1, 2, 2), 4), ((1, 2, 3), 3), ((2, 2, 2), 1), ((1, 3, 3), 1))
MID_SCALE: tuple[tuple[Coord, int], ...] = (((3, 3, 3), 64), ((2, 2, 3), 64), ((2, 2, 2), 16), ((2, 2, 2), 4))


def report_table(runs: Sequence[Run], workloads: Sequence[str], note: str) -> None:
    seeds = len({r.seed for r in runs})
    cpu = sum(r.cpu for r in runs)
    print(f"\nTable II shape: {len(workloads)} workloads × {seeds} seeds × {len(PAPER_POLICIES)} schedulers, "
          f"150 racks ({note}; simulation CPU {cpu:.0f} s, i.e. {cpu / 2:.0f} s on two free cores)")
    print("\n".join(metric_table(runs, PAPER_POLICIES, workloads)))
    print("\n".join(paired_ring_lines(runs, PAPER_POLICIES, workloads)), flush=True)


def report_exact(exact: Sequence[Run], table: Sequence[Run], workloads: Sequence[str], note: str) -> None:
    """The exact cells beside the table's runs of the same (workload, seed) traces; a scheduler the
    exact cells ran too (RingStitch) is taken from the exact cells only, so no seed counts twice."""
    cells = {(r.workload, r.seed) for r in exact}
    mine = {r.scheduler for r in exact}
    runs = list(exact) + [r for r in table if (r.workload, r.seed) in cells and r.scheduler not in mine]
    per_wl = {wl: len({s for w, s in cells if w == wl}) for wl in workloads}
    print(f"\nring-exact-choice beside the paper's schedulers: seeds per workload {per_wl} ({note})")
    print("\n".join(metric_table(runs, PAPER_POLICIES + (EXACT,), workloads)))
    print("\n".join(exact_report(runs, workloads)), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--sections", default="table,choice", help="table, choice, exact (comma-separated)")
    ap.add_argument("--seeds", type=int, default=50, help="table: seeds per cell (paper: 50)")
    ap.add_argument("--exact-seeds", type=int, default=10, help="exact: seeds per workload")
    ap.add_argument("--exact-first-seed", type=int, default=0,
                    help="exact: first seed (a second run can take seeds another one will not reach)")
    ap.add_argument("--workloads", default="A,B,C,D", help="table")
    ap.add_argument("--exact-workloads", default="A,B,C,D", help="exact")
    ap.add_argument("--load", type=float, default=0.95)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--samples", type=int, default=200, help="choice: random instances per torus")
    ap.add_argument("--decisions", type=int, default=200, help="choice: simulated decisions per workload")
    ap.add_argument("--save", help="append every finished table/exact run to this JSON-lines file")
    ap.add_argument("--replay", help="comma-separated --save files: report their table/exact runs "
                                     "instead of simulating (a cut run reports its finished cells)")
    args = ap.parse_args()
    sections = set(args.sections.split(","))
    workloads = tuple(args.workloads.split(","))
    exact_workloads = tuple(args.exact_workloads.split(","))
    if sections - {"table", "choice", "exact"} or any(w not in WORKLOADS for w in workloads + exact_workloads):
        ap.error(f"--sections {args.sections!r} / --workloads / --exact-workloads: unknown name")
    print(f"# {' '.join(sys.argv)}", flush=True)
    if args.replay:
        saved: dict[str, list[Run]] = {}
        for path in args.replay.split(","):
            for key, found in load_runs(path).items():
                saved.setdefault(key, []).extend(found)
        table = [r for r in saved.get("table", []) if r.workload in workloads]
        if "table" in sections:
            report_table(table, workloads, f"replayed from {args.replay}")
        if "exact" in sections:
            exact = [r for r in saved.get("exact", []) if r.workload in exact_workloads]
            report_exact(exact, table, exact_workloads, f"replayed from {args.replay}")
        return
    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        jobs: dict[str, list[Future[Any]]] = {}

        def submit(key: str, fn: Callable[..., Any], *a: Any) -> None:
            fut = pool.submit(fn, *a)
            if args.save and key != "choice":
                fut.add_done_callback(lambda f: save_runs(args.save, key, f.result()))
            jobs.setdefault(key, []).append(fut)

        # seed-major, so a run cut short has the same seeds for every workload
        if "table" in sections:
            for seed in range(args.seeds):
                for wl in workloads:
                    submit("table", run_cell, PAPER_POLICIES, wl, seed, args.load, False)
        if "choice" in sections:
            for wl in WORKLOADS:
                submit("choice", simulated_rate, wl, args.decisions, 0, args.load)
            submit("choice", sampled_rate, PAPER_DIMS, PAPER_CAPACITY, args.samples, 0, 6)
            for dims, cap in MID_SCALE:
                submit("choice", sampled_rate, dims, cap, args.samples, 0, 6)
            for dims, cap in EXHAUSTIVE:
                submit("choice", exhaustive_rate, dims, cap)
        if "exact" in sections:  # the paper's schedulers on these traces are the table's (same seeds)
            for seed in range(args.exact_first_seed, args.exact_first_seed + args.exact_seeds):
                for wl in exact_workloads:
                    submit("exact", run_cell, ("ringstitch", EXACT), wl, seed, args.load, True)
        table_runs: list[Run] = []
        for key in ("table", "choice", "exact"):
            if key not in jobs:
                continue
            results = []
            for i, f in enumerate(jobs[key], 1):
                results.append(f.result())
                print(f"[{key} {i}/{len(jobs[key])}] {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
            note = f"{time.perf_counter() - start:.0f} s wall since start, {args.workers} worker(s)"
            if key == "table":
                table_runs = [r for cell in results for r in cell]
                report_table(table_runs, workloads, note)
            elif key == "choice":
                print("\n".join(rate_lines(results)) + f"\n  ({note})", flush=True)
            else:
                report_exact([r for cell in results for r in cell], table_runs, exact_workloads, note)
    print(f"\ntotal wall {time.perf_counter() - start:.0f} s, {args.workers} worker(s)")


if __name__ == "__main__":
    main()
