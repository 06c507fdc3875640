"""`verify --audit` on one best-fit run written three ways: the snapshot log (a whole-cluster
placement on every line), the delta log (an `arrive` line with the new job's hosts, a `depart`
line with the job id, a `snapshot` line every --snapshot-every events) and a Kubernetes-style
binding stream (one `bind` / `delete` record per pod, plus the node list). Prints each file's
size in MB, each audit's wall and CPU time, its findings, and the ratios against the snapshot
log, all measured in this run (ratios on CPU time: the machine is shared). At the defaults the
snapshot audit alone takes about 3 CPU minutes and 3 GB; ``--events 2000`` is a quick look.

    python benchmarks/bench_audit.py [--events 20000] [--nodes 256] [--seed 1]
                                     [--snapshot-every 1000] [--load 0.9] [--dir DIR]

The run: best-fit (``heuristics.gpu.baselines``, non-migrating) on N nodes of 8 GPUs; job shapes
drawn from the builtin trace's shares (``heuristics.gpu.trace_gen``: g mostly 1 and 8, w mostly 1);
a job arrives while fewer than --load of the GPUs are used, otherwise (or when best-fit refuses
it) a random running job departs. Refused arrivals are not logged (the scheduler queues them).
Every audit starts from a cold Φ★ memo, so no audit profits from another's solves.
"""
from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Iterator, NamedTuple

from heuristics.gpu.baselines import NodeRulePolicy
from heuristics.gpu.cluster import Job, Placement
from heuristics.gpu.trace_gen import G_SHARES, W_SHARES
from oracle.gpu.phi_star import clear_cache
from proofs_check.gpu import audit_tally
from proofs_check.gpu.audit import audit_path, parse_bound

CAPACITY = 8


class Event(NamedTuple):
    kind: str  # "arrive" | "depart"
    job: int
    g: int
    hosts: tuple[int, ...]  # the nodes of the job's instances (arrive); () for depart
    placement: Placement  # after the event


def _pick(rng: random.Random, shares: dict[int, float]) -> int:
    return rng.choices(list(shares), weights=list(shares.values()))[0]


def best_fit_run(events: int, n_nodes: int, seed: int, load: float) -> Iterator[Event]:
    """``events`` applied events of best-fit on ``n_nodes`` nodes (see the module docstring)."""
    rng = random.Random(seed)
    policy = NodeRulePolicy("best-fit", n_nodes, CAPACITY)
    running: list[Job] = []
    used, next_id = 0, 0
    for _ in range(events):
        job = Job(next_id, _pick(rng, G_SHARES), _pick(rng, W_SHARES))
        if used < load * CAPACITY * n_nodes and policy.arrive(job).ok:
            next_id += 1
            running.append(job)
            used += job.g * job.w
            p = policy.placement()
            hosts = tuple(n for n, node in enumerate(p.nodes) for i in node if i.job == job.id)
            yield Event("arrive", job.id, job.g, hosts, p)
            continue
        gone = running.pop(rng.randrange(len(running)))
        policy.depart(gone.id)
        used -= gone.g * gone.w
        yield Event("depart", gone.id, gone.g, (), policy.placement())


def _placement_json(p: Placement) -> list[list[dict[str, int]]]:
    return [[{"job": i.job, "g": i.g} for i in node] for node in p.nodes]


def write_logs(out: Path, events: int, n_nodes: int, seed: int, load: float, every: int) -> dict[str, Path]:
    """The same run as a snapshot log, a delta log and a binding stream (+ node list)."""
    paths = {"snapshot": out / "snapshot.jsonl", "delta": out / "delta.jsonl",
             "bindings": out / "bindings.csv", "nodes": out / "nodes.csv"}
    paths["nodes"].write_text("node,gpus\n" + "".join(f"node-{n},{CAPACITY}\n" for n in range(n_nodes)))
    widths: dict[int, int] = {}
    with paths["snapshot"].open("w") as snap, paths["delta"].open("w") as delta, \
            paths["bindings"].open("w") as binds:
        delta.write(json.dumps({"format": "delta", "nodes": n_nodes, "capacity": CAPACITY}) + "\n")
        binds.write("time,event,pod,node,gpus\n")
        for k, e in enumerate(best_fit_run(events, n_nodes, seed, load), start=1):
            line: dict[str, object] = {"event": e.kind, "job": e.job}
            if e.kind == "arrive":
                widths[e.job] = len(e.hosts)
                line |= {"g": e.g, "w": len(e.hosts)}
            snap.write(json.dumps(line | {"nodes": n_nodes, "placement": _placement_json(e.placement)}) + "\n")
            delta.write(json.dumps(line | ({"hosts": list(e.hosts)} if e.kind == "arrive" else {})) + "\n")
            if k % every == 0:
                delta.write(json.dumps({"event": "snapshot", "placement": _placement_json(e.placement)}) + "\n")
            for i in range(widths[e.job]):
                if e.kind == "arrive":
                    binds.write(f"{k},bind,job{e.job}-{i},node-{e.hosts[i]},{e.g}\n")
                else:
                    binds.write(f"{k},delete,job{e.job}-{i},,\n")
    return paths


def timed_audit(path: Path, fmt: str, nodes: Path | None) -> tuple[float, float, str]:
    """(wall s, CPU s, verdicts and worst SIF) of one cold audit. The CPU time is what the ratios use: the
    machine is shared, and wall time there measures the neighbours as much as the audit."""
    clear_cache()
    audit_tally.clear_memo()
    t0, c0 = time.perf_counter(), time.process_time()
    results, _ = audit_path(str(path), parse_bound("2"), fmt, None if nodes is None else str(nodes))
    valid, sif = results
    return (time.perf_counter() - t0, time.process_time() - c0,
            f"valid {valid.verdict.value}, sif {sif.verdict.value} (worst SIF {sif.stats['worst SIF']})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--nodes", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--snapshot-every", type=int, default=1000)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--dir", help="keep the generated logs here (default: a temporary directory)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.dir or tmp)
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        paths = write_logs(out, args.events, args.nodes, args.seed, args.load, args.snapshot_every)
        print(f"best-fit, N={args.nodes}, {args.events} events, seed {args.seed}, load {args.load}: "
              f"logs written in {time.perf_counter() - t0:.1f} s (delta log: a snapshot line every "
              f"{args.snapshot_every} events)")
        rows = [(name, paths[name], fmt, paths["nodes"] if fmt == "bindings" else None)
                for name, fmt in (("snapshot", "snapshot"), ("delta", "delta"), ("bindings", "bindings"))]
        measured = [(name, p.stat().st_size / 1e6, *timed_audit(p, fmt, nodes)) for name, p, fmt, nodes in rows]
        ref_mb, ref_cpu = measured[0][1], measured[0][3]
        print(f"{'format':10} {'MB':>9} {'wall s':>8} {'CPU s':>8} {'size ÷':>8} {'CPU speed-up':>13}  findings")
        for name, mb, wall, cpu, verdicts in measured:
            print(f"{name:10} {mb:9.2f} {wall:8.2f} {cpu:8.2f} {ref_mb / mb:7.1f}× {ref_cpu / cpu:12.1f}×  {verdicts}")


if __name__ == "__main__":
    main()
