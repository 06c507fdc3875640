"""Audit speed on a mixed Kubernetes cluster, side by side with the code of commit 1b303a9 (issue 24, item 3).

    python benchmarks/bench_k8s_audit.py [--ref 1b303a9] [--records 40000] [--nodes 512] [--small 128]
                                         [--seed 1] [--load 0.9] [--dir DIR]

The stream: best-fit placement of pods (g drawn from the builtin trace's shares,
``heuristics.gpu.trace_gen.G_SHARES``) on ``--nodes`` nodes of which ``--small`` have 4 GPUs and
the rest 8; a pod is bound while fewer than --load of the GPUs are used (and some node fits it),
otherwise a random running pod is deleted; --records records in all. It is written twice:

* as the binding stream (``bindings.csv`` + ``nodes.csv``), which the reference reads too;
* as kubectl writes it (``pods.watch.jsonl``: one ADDED event per bound pod, one DELETED per
  deletion, whole Pod objects; ``nodes.json``: a NodeList) — this tree only.

The reference is built from the git history in a temporary directory (``git archive``, as
benchmarks/bench_explorer.py does) and each audit runs as a child process
(``python -m proofs_check.cli.verify --audit …``, cold: no Φ★ memo shared between runs). Printed
per audit: wall and CPU seconds (the child's user + system time from ``os.wait4``; the machine is
shared, so the ratio uses CPU time), the speed-up against the reference and whether the verdict
lines agree (``audit.valid`` and ``audit.sif``: verdict, SIF, N, Φπ and Φ★ of the first
violation; the line number is one apart between the CSV, which has a header row, and the watch
stream, and the worst SIF is left aside: the reference's text report does not print it).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_explorer import ROOT, reference_tree  # noqa: E402

sys.path.insert(0, str(ROOT))
from heuristics.gpu.trace_gen import G_SHARES  # noqa: E402

T0 = 1_777_000_000  # 2026-04-24, the stream's first second


def _ts(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(T0 + t))


def stream(records: int, caps: list[int], seed: int, load: float) -> list[tuple[str, str, int, int]]:
    """(event, pod, node index, gpus) records: best-fit binds while below ``load``, else deletes."""
    rng = random.Random(seed)
    free = caps[:]
    by_free: dict[int, set[int]] = {}
    for n, c in enumerate(caps):
        by_free.setdefault(c, set()).add(n)
    running: dict[str, tuple[int, int]] = {}
    names: list[str] = []
    used, total, k = 0, sum(caps), 0
    out: list[tuple[str, str, int, int]] = []
    gs, ws = list(G_SHARES), list(G_SHARES.values())
    while len(out) < records:
        g = rng.choices(gs, weights=ws)[0]
        if used < load * total:
            f = next((f for f in range(g, max(caps) + 1) if by_free.get(f)), None)
            if f is not None:
                n = min(by_free[f])
                by_free[f].discard(n)
                free[n] -= g
                by_free.setdefault(free[n], set()).add(n)
                used += g
                pod = f"p{k}"
                k += 1
                running[pod] = (n, g)
                names.append(pod)
                out.append(("bind", pod, n, g))
                continue
        i = rng.randrange(len(names))
        names[i], names[-1] = names[-1], names[i]
        pod = names.pop()
        n, g = running.pop(pod)
        by_free[free[n]].discard(n)
        free[n] += g
        by_free.setdefault(free[n], set()).add(n)
        used -= g
        out.append(("delete", pod, n, g))
    return out


def pod_json(pod: str, node: str, g: int, t: int, deleted: bool) -> dict[str, object]:
    meta: dict[str, object] = {"name": pod, "namespace": "train", "uid": f"uid-{pod}", "creationTimestamp": _ts(t)}
    if deleted:
        meta["deletionTimestamp"] = _ts(t)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "train:1", "resources": {
                "limits": {"nvidia.com/gpu": str(g)}, "requests": {"cpu": "2", "nvidia.com/gpu": str(g)}}}]},
            "status": {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True",
                                                           "lastTransitionTime": _ts(t)}]}}


def write(out: Path, records: int, caps: list[int], seed: int, load: float) -> dict[str, Path]:
    paths = {"csv": out / "bindings.csv", "nodes_csv": out / "nodes.csv", "watch": out / "pods.watch.jsonl",
             "nodes_json": out / "nodes.json"}
    recs = stream(records, caps, seed, load)
    paths["nodes_csv"].write_text("node,gpus\n" + "".join(f"node-{n},{c}\n" for n, c in enumerate(caps)))
    paths["nodes_json"].write_text(json.dumps({"apiVersion": "v1", "kind": "NodeList", "items": [
        {"kind": "Node", "metadata": {"name": f"node-{n}"}, "status": {"allocatable": {"nvidia.com/gpu": str(c)}}}
        for n, c in enumerate(caps)]}, indent=2))
    with paths["csv"].open("w") as csv, paths["watch"].open("w") as watch:
        csv.write("time,event,pod,node,gpus\n")
        for t, (ev, pod, n, g) in enumerate(recs):
            csv.write(f"{t},{ev},{pod},node-{n},{g}\n" if ev == "bind" else f"{t},delete,{pod},,\n")
            kind = "ADDED" if ev == "bind" else "DELETED"
            watch.write(json.dumps({"type": kind, "object": pod_json(pod, f"node-{n}", g, t, ev == "delete")}) + "\n")
    return paths


def timed(cwd: Path, args: list[str]) -> tuple[float, float, int, list[str]]:
    """(wall s, CPU s, exit code, verdict lines) of one audit in a child process."""
    env = {**os.environ, "PYTHONPATH": str(cwd), "PYTHONHASHSEED": "0"}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "proofs_check.cli.verify", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    # The verdict and its figures; the line number (the CSV has a header row, the watch stream
    # none) and what the record names (pod, node, time: this tree only) left out.
    verdicts = [re.sub(r"line \d+( \([^)]*\))?: ", "", line.split(";")[0])
                for line in out.splitlines() if line.startswith(("audit.valid:", "audit.sif:"))]
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status), verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", default="1b303a9", help="the reference commit (default 1b303a9)")
    ap.add_argument("--records", type=int, default=40000, help="records in the stream (default 40000)")
    ap.add_argument("--nodes", type=int, default=512, help="nodes (default 512)")
    ap.add_argument("--small", type=int, default=128, help="of which 4-GPU nodes (default 128; the rest 8)")
    ap.add_argument("--seed", type=int, default=1, help="seed (default 1)")
    ap.add_argument("--load", type=float, default=0.9, help="bind while below this share of GPUs used (default 0.9)")
    ap.add_argument("--dir", help="keep the generated files here (default: a temporary directory)")
    a = ap.parse_args()
    caps = [8] * (a.nodes - a.small) + [4] * a.small
    with tempfile.TemporaryDirectory() as tmp, reference_tree(a.ref, "bench_k8s_audit_") as ref:
        out = Path(a.dir or tmp)
        out.mkdir(parents=True, exist_ok=True)
        p = write(out, a.records, caps, a.seed, a.load)
        print(f"{a.records:,} records on {a.nodes} nodes ({a.nodes - a.small}×8, {a.small}×4 GPUs), seed {a.seed}, "
              f"load {a.load}: {p['csv'].stat().st_size / 1e6:.2f} MB CSV, {p['watch'].stat().st_size / 1e6:.1f} MB watch")
        csv_args = ["--audit", str(p["csv"]), "--nodes-file", str(p["nodes_csv"])]
        runs = [("reference, binding stream", ref, csv_args),
                ("this tree, binding stream", ROOT, csv_args + ["--quiet"]),
                ("this tree, kubectl watch", ROOT, ["--audit", str(p["watch"]), "--nodes-file", str(p["nodes_json"]),
                                                    "--quiet"])]
        print(f"{'audit':28} {'wall s':>8} {'CPU s':>8} {'CPU speed-up':>13} {'exit':>5}  same verdicts")
        base: tuple[float, list[str]] | None = None
        for name, cwd, args in runs:
            wall, cpu, rc, verdicts = timed(cwd, args)
            if base is None:
                base = (cpu, verdicts)
            same = "yes" if verdicts == base[1] and verdicts else "NO"
            print(f"{name:28} {wall:8.2f} {cpu:8.2f} {base[0] / cpu:12.1f}× {rc:>5}  {same}", flush=True)
            if same == "NO":
                print(f"   reference: {base[1]}\n   this run:  {verdicts}")


if __name__ == "__main__":
    main()
