"""OCS simulator speed at paper scale (seed 004 §V: 150 racks × 64 chips on a 5×5×6 torus, 50 h
warm-up, 200 h measurement, 50 h drain, 95 % load), against a reference measured in the same run.

The reference is the simulator and policies of commit ``--ref`` (default 7d3f977, before they were
made faster), extracted with ``git archive`` into a temporary directory (removed afterwards) and
imported from there by a child process; the current tree runs in a second child on the same
(workload, seed) trace right after it. Each child simulates the six paper schedulers and reports
the process CPU seconds per scheduler plus every metric and every decision (job, start time,
allocation, ring, ring cost, fragmentation cost, source). Printed per workload: CPU per scheduler
for both trees, the ratio reference / current, and whether every metric and every decision is
identical ("same"). CPU time, not wall time, because the machine is shared; the load average is
printed with each measurement.

    python benchmarks/bench_ring_sim.py [--workloads A,B,C,D] [--seeds 1] [--ref 7d3f977]

The 50-seed Table II comparison with confidence intervals is benchmarks/ring_table.py.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCHEDULERS = ("ringstitch", "local-first-fit", "local-best-fit", "full-rack", "capacity-only",
              "network-unaware-best-fit")


def child(workload: str, seed: int) -> None:
    """Simulate every scheduler on one paper-scale trace with the ``heuristics`` package found on
    sys.path (the reference's or this tree's) and print one JSON line."""
    from heuristics.rack.ocs_sim import WORKLOADS, Windows, generate_trace, simulate
    from heuristics.rack.racks import RackCluster
    from heuristics.rack.ring_baselines import make_ring_policy

    cluster = RackCluster.torus((5, 5, 6), 64)
    jobs = generate_trace(cluster, WORKLOADS[workload], 0.95, seed, Windows())
    out: dict[str, Any] = {}
    for name in SCHEDULERS:
        cpu, wall = time.process_time(), time.perf_counter()
        res = simulate(cluster, make_ring_policy(name), jobs, Windows(), keep=True)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        decisions = [(d.job, d.time.hex(), [(int(r), int(c)) for r, c in d.placement.alloc],
                      [int(r) for r in d.placement.ring], int(d.placement.cost), float(d.placement.frag).hex(),
                      d.placement.source) for d in res.decisions]
        fields = {k: v for k, v in vars(res).items() if k != "decisions"}
        out[name] = {"cpu": cpu, "wall": wall, "result": repr(fields), "decisions": decisions}
    print(json.dumps(out))


def run_child(tree: Path, workload: str, seed: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", workload, str(seed)],
                          cwd=tree, env=env, check=True, capture_output=True, text=True)
    found: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return found


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--ref", default="7d3f977", help="the reference commit (default 7d3f977)")
    ap.add_argument("--workloads", default="A,B,C,D")
    ap.add_argument("--seeds", type=int, default=1, help="traces per workload (seeds 0..n−1)")
    ap.add_argument("--child", nargs=2, metavar=("WORKLOAD", "SEED"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]))
        return
    print(f"# {' '.join(sys.argv)}")
    tmp = Path(tempfile.mkdtemp(prefix="bench_ring_sim_"))
    try:
        # ``git archive`` reads the history without touching the shared checkout's worktree list.
        archive = subprocess.run(["git", "archive", "--format=tar", a.ref, "heuristics", "oracle"], cwd=ROOT,
                                 check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        print(f"reference: {a.ref} (git archive in {tmp}); this tree: {ROOT}; {os.cpu_count()} CPUs")
        totals = {"ref": 0.0, "new": 0.0}
        all_same = True
        for wl in a.workloads.split(","):
            for seed in range(a.seeds):
                before = load()
                ref, new = run_child(tmp, wl, seed), run_child(ROOT, wl, seed)
                print(f"\nworkload {wl} seed {seed} ({before} → {load()}): CPU s per paper-scale run")
                print(f"  {'scheduler':26s} {'reference':>10s} {'current':>10s} {'speed-up':>9s}  same")
                for name in SCHEDULERS:
                    r, n = ref[name], new[name]
                    same = (r["result"], r["decisions"]) == (n["result"], n["decisions"])
                    all_same &= same
                    totals["ref"] += r["cpu"]
                    totals["new"] += n["cpu"]
                    print(f"  {name:26s} {r['cpu']:10.2f} {n['cpu']:10.2f} {r['cpu'] / n['cpu']:8.2f}x  "
                          f"{'yes' if same else 'NO'}")
        print(f"\nall six schedulers, every trace: reference {totals['ref']:.1f} s CPU, current {totals['new']:.1f} s, "
              f"speed-up {totals['ref'] / totals['new']:.2f}x; every metric and decision identical: "
              f"{'yes' if all_same else 'NO'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
