"""Fill-until-full on the real openb cluster (FGD, ATC'23 §6; issue 15 item 4).

    python benchmarks/fill_openb.py [--data data/openb] [--seeds 0,1,2] [--until 1.2] [--out DIR]

The cluster is the real node list (``openb_node_list_gpu_node.csv``: 1,213 nodes of 8/4/2/1 GPUs).
Workloads: every ``openb_pod_list_*.csv`` found in ``--data`` (either shape; whole-GPU pods, the
filtered ones counted), plus one *derived* workload named ``default+multigpu50-counts``: the
default list's whole-GPU pods with its 2-, 4- and 8-GPU pods drawn again (seeded) until their
counts are the ones TRACES.md gives for ``multigpu50`` (~220, ~210, ~560). It is synthetic and
labelled so: the real 5-column lists are not on these machines; give their folder with ``--data``.
``--schedulers`` and ``--policy-opt SCHED:KEY=VALUE`` (as ``simulate`` takes them) choose the
schedulers and their options, ``--workloads`` (words of file names, e.g. ``spec``) the workloads. ``--spec-share S`` adds ``default+specS``: a seeded share S of the default list's pods constrained to
``V100M16|V100M32`` (synthetic too; model-constrained pods cost two state round trips each).

Per workload and seed, every scheduler runs on the same submission sequence (``--until`` × the
cluster's GPUs requested, the list drawn again when it runs out): best-fit, FGD, CAFGD and MCG
when registered, FFT and DRR (natively, migrating), COMPASS (literal; one COMPASS-ABS per node
class, ``heuristics.gpu.compass_mixed``), all on the whole cluster; then the oracle's exact bound
on it. Printed: one table per workload (means over the seeds; the
first-failure and unallocated shares in %); ``--out`` writes ``simulate --mode fill`` results and
``fill.png`` for the first seed of each workload.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from heuristics.gpu import fill
from heuristics.gpu.node_list import NodeList, load_node_list
from heuristics.gpu.registry import policy_names
from heuristics.gpu.trace_loaders import load_openb_pods
from proofs_check.cli.simulate import FILL_SCHEDULERS, PolicyOpts, parse_policy_opts
from proofs_check.cli.simulate import main as simulate_main

MULTIGPU50 = {2: 220, 4: 210, 8: 560}  # TRACES.md: multigpu50's multi-GPU pod counts


def derived_list(default: Path, out: Path, seed: int = 0) -> Path:
    """The default list's whole-GPU pods, multi-GPU ones redrawn to multigpu50's counts (5 columns)."""
    pods = load_openb_pods(default).pods
    rng = random.Random(seed)
    rows = [p for p in pods if p.g == 1]
    for g, n in MULTIGPU50.items():
        pool = [p for p in pods if p.g == g]
        rows += [rng.choice(pool) for _ in range(n)]
    rng.shuffle(rows)
    out.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                   + "".join(f"{p.name}-{i},0,0,{p.g},1000\n" for i, p in enumerate(rows)))
    return out


def spec_list(default: Path, out: Path, share: float, models: str = "V100M16|V100M32", seed: int = 0) -> Path:
    """The default list's whole-GPU pods, a seeded ``share`` of them constrained to ``models``
    (a ``gpu_spec`` column, as the ``gpuspec*`` lists carry; synthetic)."""
    rng = random.Random(seed)
    out.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n" + "".join(
        f"{p.name},0,0,{p.g},1000,{models if rng.random() < share else ''}\n" for p in load_openb_pods(default).pods))
    return out


def run_workload(path: Path, cluster: NodeList, schedulers: list[str], seeds: list[int], until: float,
                 opts: PolicyOpts | None = None) -> list[list[fill.FillRow]]:
    """Per seed: the schedulers' rows (each with its ``--policy-opt`` options), then the exact bounds' rows."""
    pods = load_openb_pods(path)
    print(pods.report.summary().replace("jobs kept", "whole-GPU pods kept"))
    out = []
    for seed in seeds:
        seq = fill.submission_sequence(pods.pods, "shuffled", seed, int(until * cluster.total_gpus))
        t0 = time.perf_counter()
        why = {s: fill.unsupported(s, cluster, seq, dict((opts or {}).get(s, ()))) for s in schedulers}
        runnable = [s for s in schedulers if why[s] is None]
        for s in sorted(set(schedulers) - set(runnable)):
            print(f"  note: {s} skipped: {why[s]}")
        results = [fill.run_fill(s, cluster, seq, dict((opts or {}).get(s, ()))) for s in runnable]
        t1 = time.perf_counter()
        parts = {r.cluster: fill.run_cluster(r.scheduler, cluster) for r in results}
        solved = {name: fill.bound_row(c, seq) for name, c in {cluster.source: cluster, **parts}.items()}
        bounds = [row._replace(label="exact bound" if name == cluster.source else "exact bound (8-GPU)")
                  for name, (row, _) in solved.items()]
        print(f"  seed {seed}: {len(seq)} pods submitted; schedulers {t1 - t0:.1f} s, bound {time.perf_counter() - t1:.1f} s")
        print("    most GPUs unallocated above the exact bound (over its points): "
              + ", ".join(f"{r.scheduler} {gap_to_bound(r, solved[r.cluster][1])}" for r in results))
        out.append([fill.result_row(r) for r in results] + bounds)
    return out


def gap_to_bound(r: fill.FillResult, points: list[fill.BoundPoint]) -> int | str:
    """Largest excess of the scheduler's unallocated GPUs over the bound ("?" if a solve was unproven)."""
    if any(b.min_unallocated is None for b in points):
        return "?"
    return max(r.cluster_gpus - (r.allocated[b.k - 1] if b.k else 0) - (b.min_unallocated or 0) for b in points)


def mean_rows(per_seed: list[list[fill.FillRow]]) -> list[fill.FillRow]:
    """Field-wise means over seeds (None when any seed has None)."""
    def avg(values: list[float | int | None]) -> float | None:
        return None if any(v is None for v in values) else statistics.fmean(v for v in values if v is not None)

    out = []
    for rows in zip(*per_seed):
        r0 = rows[0]
        at = tuple(avg([r.unallocated_at[i] for r in rows]) for i in range(len(r0.unallocated_at)))
        placed, failed, migr = (avg([getattr(r, f) for r in rows]) for f in ("placed", "failed", "migrations"))
        out.append(r0._replace(
            placed=None if placed is None else round(placed), failed=None if failed is None else round(failed),
            first_failure=avg([r.first_failure for r in rows]), unallocated_first=avg([r.unallocated_first for r in rows]),
            unallocated_at=at, unallocated_end=avg([r.unallocated_end for r in rows]),
            migrations=None if migr is None else round(migr)))  # end state: the first seed's
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(Path(__file__).resolve().parent.parent / "data" / "openb"))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--until", type=float, default=1.2)
    ap.add_argument("--out", default=None)
    ap.add_argument("--spec-share", type=float, default=0.0,
                    help="also run the default list with this share of pods constrained to V100M16|V100M32 (slow)")
    ap.add_argument("--schedulers", default=None, help="comma-separated (default: every fill scheduler registered)")
    ap.add_argument("--workloads", default=None,
                    help="run only the workloads whose file name contains one of these comma-separated words")
    ap.add_argument("--policy-opt", action="append", default=[], metavar="SCHED:KEY=VALUE",
                    help="a scheduler option, as simulate takes it (e.g. fft:exact_max_nodes=2000)")
    a = ap.parse_args()
    data = Path(a.data)
    seeds = [int(s) for s in a.seeds.split(",")]
    cluster = load_node_list(data / "openb_node_list_gpu_node.csv")
    schedulers = a.schedulers.split(",") if a.schedulers else [s for s in FILL_SCHEDULERS if s in policy_names()]
    unknown = [s for s in schedulers if s not in policy_names()]
    if unknown:
        sys.exit(f"fill_openb: --schedulers: unknown {', '.join(unknown)}")
    opts = parse_policy_opts(a.policy_opt, policy_names())
    print(cluster.summary())
    print(f"schedulers: {', '.join(schedulers)}; seeds {seeds}; submitted until {a.until:g} x {cluster.total_gpus} GPUs"
          + "".join(f"; {s} with {', '.join(f'{k}={v}' for k, v in kv)}" for s, kv in opts.items()))
    tmp = Path(tempfile.mkdtemp(prefix="fill_openb_"))
    workloads = sorted(data.glob("openb_pod_list_*.csv"))
    if (data / "openb_pod_list_default.csv").is_file():
        workloads.append(derived_list(data / "openb_pod_list_default.csv", tmp / "default+multigpu50-counts.csv"))
        if a.spec_share > 0:
            name = f"default+spec{round(100 * a.spec_share)}.csv"
            workloads.append(spec_list(data / "openb_pod_list_default.csv", tmp / name, a.spec_share))
    if a.workloads:
        workloads = [p for p in workloads if any(w in p.name for w in a.workloads.split(","))]
        if not workloads:
            sys.exit(f"fill_openb: --workloads {a.workloads}: no workload matches")
    for path in workloads:
        print(f"\n== {path.name} ==")
        per_seed = run_workload(path, cluster, schedulers, seeds, a.until, opts)
        print(f"means over {len(seeds)} seed(s); Φπ/Φ★/SIF of the final placement: seed {seeds[0]}")
        print(fill.render_table(mean_rows(per_seed)))
        if a.out is not None:
            out = Path(a.out) / path.stem
            with contextlib.redirect_stdout(io.StringIO()) as text:  # its table repeats the first seed's
                simulate_main([str(path), "--format", "openb", "--mode", "fill", "--nodes-file",
                               str(data / "openb_node_list_gpu_node.csv"), "--until", str(a.until),
                               "--seed", str(seeds[0]), "--out", str(out), "--plot"])
            print(*(line for line in text.getvalue().splitlines() if line.startswith(("plot:", "results"))), sep="\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
