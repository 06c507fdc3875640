"""``simulate --mode fill``: the FGD paper's fill-until-full evaluation on a node list (``heuristics.gpu.fill``).

Split from ``proofs_check.cli.simulate`` (which parses the arguments and calls :func:`fill_main`);
the usage is documented there and in docs/heterogeneous.md.
"""
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Iterable, Sequence

from heuristics.gpu import fill
from heuristics.gpu.node_list import NodeList, load_node_list, uniform_node_list
from heuristics.gpu.trace_loaders import PodList, load_openb_pods
from proofs_check.cli.common import EXIT_OK, UsageError, output_dir, replace_output, usage_on, write_output

FILL_SCHEDULERS = ("best-fit", "fgd", "cafgd", "mcg", "compass-literal", "fft", "drr")


def fill_cluster(a: argparse.Namespace) -> NodeList:
    if a.nodes_file is not None:
        return load_node_list(a.nodes_file)
    if a.nodes is None:
        raise UsageError("--mode fill needs the cluster: --nodes-file PATH or --nodes N")
    return uniform_node_list(a.nodes)


def fill_main(a: argparse.Namespace) -> int:
    """``--mode fill``: every scheduler on the same submission sequence, then the exact bound."""
    if a.trace is None or a.format != "openb":
        raise UsageError("--mode fill reads an openb pod list: give TRACE and --format openb")
    pods: PodList = load_openb_pods(a.trace)
    cluster = fill_cluster(a)
    how = "detected: pod list without times" if a.detected else "--mode fill"
    print(f"mode: fill-until-full ({how}); pods never leave, a pod that does not fit is skipped")
    print(pods.report.summary().replace("jobs kept", "whole-GPU pods kept"))
    print(cluster.summary())
    until = None if a.until is None else int(a.until * cluster.total_gpus)
    seq = fill.submission_sequence(pods.pods, a.order, a.seed, until)
    print(f"submitted: {len(seq)} pods, {sum(p.g for p in seq)} GPUs, order {a.order}, seed {a.seed}")
    results = []
    for s in a.schedulers:
        why = fill.unsupported(s, cluster, seq, dict(a.policy_opts.get(s, ())))
        if why is not None and a.named:
            raise UsageError(f"--schedulers: {s}: {why}")
        if why is not None:
            print(f"note: {s} skipped: {why}")
            continue
        if s in fill.PARTITION_ONLY:
            print(f"note: {s} is defined for {fill.PARTITION_ONLY[s]}-GPU nodes: it runs on that partition "
                  "and its shares are of the partition's GPUs")
        with usage_on(ValueError, prefix=s):  # an option the scheduler rejects
            results.append(fill.run_fill(s, cluster, seq, dict(a.policy_opts.get(s, ()))))
    rows = [fill.result_row(r) for r in results]
    clusters = {cluster.source: cluster, **{r.cluster: fill.run_cluster(r.scheduler, cluster) for r in results}}
    bounds = {name: fill.bound_row(c, seq) for name, c in clusters.items()}
    rows += [b[0]._replace(label=f"exact bound{'' if n == cluster.source else ' (part.)'}") for n, b in bounds.items()]
    print(fill.render_table(rows))
    if a.out is not None:
        write_fill(Path(a.out), results, bounds, a)
    return EXIT_OK


def write_fill(out: Path, results: list[fill.FillResult], bounds: dict[str, tuple[fill.FillRow, list[fill.BoundPoint]]],
               a: argparse.Namespace) -> None:
    write_csv(out / "fill_curve.csv", ("scheduler", "cluster", "k", "requested_share", "unallocated_share", "placed"),
               ((r.scheduler, r.cluster, i + 1, r.share(req), r.unallocated_at(i), int(i not in set(r.failed)))
                for r in results for i, req in enumerate(r.requested)))
    write_csv(out / "fill_bound.csv", ("cluster", "k", "requested_share", "min_unallocated_share"),
               ((n, b.k, b.requested / row.gpus, "" if b.min_unallocated is None else b.min_unallocated / row.gpus)
                for n, (row, pts) in bounds.items() for b in pts))
    meta = {"trace": a.trace, "nodes_file": a.nodes_file, "order": a.order, "seed": a.seed, "until": a.until,
            "rows": [r._asdict() for r in map(fill.result_row, results)] + [row._asdict() for row, _ in bounds.values()]}
    write_output(out / "fill_summary.json", json.dumps(meta, indent=1, default=str) + "\n")
    print(f"results written to {out}/")
    if a.plot:
        from proofs_check.cli.plots import plot_fill

        print(f"plot: {plot_fill(out)}")


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """Write a CSV file atomically (its folder created if missing); a failure is OutputError."""
    output_dir(path.parent)

    def fill_file(tmp: Path) -> None:
        with tmp.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)

    replace_output(path, fill_file)
