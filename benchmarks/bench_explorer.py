"""Explorer speed: distinct states per second for Theorem 1's exploration (literal COMPASS, WCC
trajectories, arrivals g ∈ 1..8) at N = 3 and N = 4 with fixed bounds, with and without symmetry
reduction, and where the time goes.

    python benchmarks/bench_explorer.py [--depth 8 --max-jobs 4 --max-w 3]

Prints, per N: distinct states, states generated, CPU seconds, distinct/s and generated/s with the
canonical form and with raw state keys (no reduction; capped by --raw-cap distinct states, in
which case the reduction factor is a lower bound), then a cost split of one successor: rebuilding
the policy from a state (``with_state``), applying the event, reading the state back, and the
canonical form.
"""
from __future__ import annotations

import argparse
import time

from heuristics.gpu.compass import Compass
from heuristics.gpu.cluster import Job
from proofs_check.core.model import Expect, Property
from proofs_check.core.search import Limits, explore
from proofs_check.gpu import canonical as canon_mod
from proofs_check.gpu.events import running_jobs
from proofs_check.gpu.flat_claims import ALL_G, Bounds
from proofs_check.gpu.policy_model import EventBounds, PolicyModel


def never(_step):
    return None


def compass(k: int) -> Compass:
    return Compass(k)


def _explore(bounds: Bounds, prop: Property, reduce: bool = True):
    """Theorem 1's exploration (literal COMPASS, WCC trajectories, g ∈ 1..8) on the core's search;
    without reduction every state is its own representative."""
    events = EventBounds(ALL_G, bounds.max_jobs, bounds.max_w)
    canon = canon_mod.canonical if reduce else (lambda s: s)
    models = (PolicyModel(compass, n, events, True, canon) for n in range(bounds.min_nodes, bounds.max_nodes + 1))
    return explore(models, [prop], Limits(bounds.depth, bounds.max_states))


def run(n: int, bounds: Bounds, reduce: bool):
    canon_mod._memo.clear()
    t0 = time.process_time()
    exp = _explore(bounds, Property("none", Expect.ALWAYS, never), reduce)
    cpu = time.process_time() - t0
    s = exp.sizes[-1]
    return s, cpu


def cost_split(n: int, bounds: Bounds, sample: int = 400) -> dict[str, float]:
    """Mean microseconds per successor for each step, over the first ``sample`` states reached."""
    states: list = []

    def keep(st):
        if len(states) < sample:
            states.append(st.state)
        return None

    _explore(bounds, Property("keep", Expect.ALWAYS, keep))
    proto = Compass(n)
    events = []
    for st in states:
        jobs = running_jobs(st)
        events.append((st, Job(len(jobs), 1, 1)))
    t = {}
    t0 = time.process_time()
    pols = [proto.with_state(st) for st, _ in events]
    t["with_state"] = time.process_time() - t0
    t0 = time.process_time()
    for p, (_, job) in zip(pols, events):
        p.arrive(job)
    t["arrive (+Compact)"] = time.process_time() - t0
    t0 = time.process_time()
    keys = [p.state_key() for p in pols]
    t["state_key"] = time.process_time() - t0
    canon_mod._memo.clear()
    t0 = time.process_time()
    for k in keys:
        canon_mod.canonical(k)
    t["canonical (cold memo)"] = time.process_time() - t0
    return {k: v / len(events) * 1e6 for k, v in t.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--max-jobs", type=int, default=4)
    ap.add_argument("--max-w", type=int, default=3)
    ap.add_argument("--raw-cap", type=int, default=60_000)
    a = ap.parse_args()
    print(f"bounds: depth {a.depth}, ≤ {a.max_jobs} jobs, w ≤ {a.max_w}, WCC trajectories, g ∈ 1..8; CPU time")
    print(f"{'N':>2} {'mode':>10} {'distinct':>9} {'generated':>10} {'cpu s':>7} {'distinct/s':>10} {'generated/s':>11}")
    for n in (3, 4):
        b = Bounds(max_nodes=n, min_nodes=n, depth=a.depth, max_jobs=a.max_jobs, max_w=a.max_w)
        red, cpu_r = run(n, b, True)
        raw, cpu_w = run(n, Bounds(**{**b.describe(), "max_states": a.raw_cap}), False)
        for mode, s, cpu in (("canonical", red, cpu_r), ("raw keys", raw, cpu_w)):
            print(f"{n:>2} {mode:>10} {s.distinct:>9,} {s.generated:>10,} {cpu:>7.2f} {s.distinct / cpu:>10,.0f} "
                  f"{s.generated / cpu:>11,.0f}" + ("" if s.complete else f"  (stopped: {s.stop_reason})"))
        bound = "≥ " if not raw.complete else ""
        print(f"   reduction factor (raw / canonical distinct states): {bound}{raw.distinct / red.distinct:.1f}")
    split = cost_split(3, Bounds(max_nodes=3, min_nodes=3, depth=a.depth, max_jobs=a.max_jobs, max_w=a.max_w))
    print("cost of one successor at N=3 (µs, CPU): " + ", ".join(f"{k} {v:.0f}" for k, v in split.items()))


if __name__ == "__main__":
    main()
