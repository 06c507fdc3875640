"""Scale-out speed (issue 9): distinct states per second of Theorem 1's exploration with 1 and 2
shards, locally (forked processes) and on a Dask LocalCluster, and the wall time of
``verify --theorem 1 --max-nodes 7 --workers 2``.

    python benchmarks/bench_parallel.py [--sizes 4,5] [--depth 10 --max-jobs 4 --max-w 4]
                                        [--verify-limit 1200] [--no-verify]

Each exploration is Theorem 1's (literal COMPASS, WCC trajectories, arrivals g ∈ 1..8, the three
thm1 properties) on the core's search (``proofs_check.core.search.explore``) at exactly one N.
Printed per N and engine: distinct states, wall seconds, distinct/s and the wall speed-up of 2
shards over 1 shard of the same engine (one local worker *is* the serial search: one shard in this
process) and over the serial search, measured in the same run.
Every partitioned run is checked to report the serial figures (distinct, generated, findings).

The machine is shared, so wall times mix in other people's load. The CPU columns do not: "cpu" is
the CPU seconds of the shards' work (expand + absorb, summed over shards; for the serial run the
process's CPU time), "path" the critical path — per BFS level the slowest shard's CPU, summed over
levels — i.e. the wall time the run would take on free cores, without the relaying; "×path" is
the serial CPU time over the path.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from proofs_check.catalogue import THEOREMS
from proofs_check.core import engine as engine_mod
from proofs_check.core import search
from proofs_check.core.engine import SERIAL, Engine
from proofs_check.core.search import Limits, explore
from proofs_check.gpu.flat_claims import FLAT, Bounds, compass_factory
from proofs_check.gpu.policy_model import EventBounds, PolicyModel


class TimedShard(search.Shard):
    """A shard that reports the CPU seconds of each call (pickled by value to Dask workers)."""

    def expand(self, *args):
        t0 = time.process_time()
        batches, report = super().expand(*args)
        return batches, {**report, "cpu": time.process_time() - t0}

    def absorb(self, *args):
        t0 = time.process_time()
        return {**super().absorb(*args), "cpu": time.process_time() - t0}


CPU: list[list[float]] = []  # per expand/absorb call: the CPU seconds of each shard


def _timed(call):
    def wrapper(self, method, args):
        out = call(self, method, args)
        if method in ("expand", "absorb"):
            CPU.append([(r[1] if method == "expand" else r)["cpu"] for r in out])
        return out
    return wrapper


# The search builds its shards by this name (engine.pool(search.Shard, ...): in this process, in
# forked processes or as Dask actors); the partitioned pools report the CPU of each call.
search.Shard = TimedShard
engine_mod.LocalPool.call = _timed(engine_mod.LocalPool.call)
engine_mod.DaskPool.call = _timed(engine_mod.DaskPool.call)


def run(n: int, bounds: Bounds, engine: Engine | None):
    claims = [FLAT[i] for i in THEOREMS[1]]
    c0 = claims[0]
    events = EventBounds(c0.demands, bounds.max_jobs, bounds.max_w)
    models = [PolicyModel(compass_factory(c0.variant), n, events, c0.wcc_trajectory)]
    CPU.clear()
    t0, c0_cpu = time.perf_counter(), time.process_time()
    exp = explore(models, [c.prop for c in claims], Limits(bounds.depth, bounds.max_states),
                  engine=engine if engine is not None else SERIAL)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0_cpu
    s = exp.sizes[-1]
    found = {cid: None if o.finding is None else (o.finding.size, len(o.finding.actions))
             for cid, o in exp.outcomes.items()}
    if engine is not None:
        cpu, path = sum(map(sum, CPU)), sum(map(max, CPU))
    else:
        path = cpu
    return (s.distinct, s.generated, s.complete, found), wall, cpu, path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="4,5")
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--max-jobs", type=int, default=4)
    ap.add_argument("--max-w", type=int, default=4)
    ap.add_argument("--verify-limit", type=float, default=1200.0, help="--time-limit of the N ≤ 7 verify run")
    ap.add_argument("--no-verify", action="store_true")
    a = ap.parse_args()
    bounds = Bounds(depth=a.depth, max_jobs=a.max_jobs, max_w=a.max_w)
    print(f"bounds: depth {a.depth}, ≤ {a.max_jobs} jobs, w ≤ {a.max_w}; {os.cpu_count()} CPUs; "
          f"load average at start {os.getloadavg()[0]:.2f} (shared machine)")
    print(f"{'N':>2} {'engine':<11} {'distinct':>9} {'wall s':>7} {'distinct/s':>10} {'×1 shard':>8} {'×serial':>8} "
          f"{'cpu s':>6} {'path s':>6} {'×path':>6}  same as serial")
    for n in map(int, a.sizes.split(",")):
        ref, t_serial, cpu_serial, _ = run(n, bounds, None)
        print(f"{n:>2} {'serial':<11} {ref[0]:>9,} {t_serial:>7.1f} {ref[0] / t_serial:>10,.0f} {'':>8} {'':>8} "
              f"{cpu_serial:>6.1f} {cpu_serial:>6.1f} {1:>6.2f}  -", flush=True)
        one_shard = {"local": t_serial}  # one local worker is the serial search
        for backend, k in (("local", 2), ("dask", 1), ("dask", 2)):
            with Engine(backend, k) as engine:
                got, wall, cpu, path = run(n, bounds, engine)
            one = one_shard.setdefault(backend, wall)
            print(f"{n:>2} {f'{backend} ×{k}':<11} {got[0]:>9,} {wall:>7.1f} {got[0] / wall:>10,.0f} "
                  f"{one / wall:>8.2f} {t_serial / wall:>8.2f} {cpu:>6.1f} {path:>6.1f} {cpu_serial / path:>6.2f}  "
                  f"{got == ref}", flush=True)
    if a.no_verify:
        return
    cmd = [sys.executable, "-m", "proofs_check.cli.verify", "--theorem", "1", "--max-nodes", "7", "--workers", "2",
           "--time-limit", str(a.verify_limit), "--quiet"]
    print(f"\n$ verify --theorem 1 --max-nodes 7 --workers 2 --time-limit {a.verify_limit:g}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    print("\n".join(line for line in proc.stdout.splitlines() if not line.startswith("    ")))  # no trace bodies
    print(f"exit code {proc.returncode}, wall time {wall:.1f} s, load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
