"""How much "one departure per orbit of interchangeable jobs" could save (issue 16, a direction).

    python benchmarks/orbit_departures.py [--nodes 5] [--depth 8] [--max-jobs 4] [--max-w 4]

Walks the literal-COMPASS state space under WCC (the pool5 bounds of bench_explorer.py by default)
breadth-first and counts, per expanded state, the departures whose result (outcome, canonical
successor, migration count) equals an earlier sibling departure's: the most an orbit reduction
could skip.
"""
from __future__ import annotations

import argparse

from proofs_check.core.model import Outcome
from proofs_check.gpu.canonical import canonical
from proofs_check.gpu.flat_claims import compass_factory
from proofs_check.gpu.policy_model import EventBounds, PolicyModel


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--max-jobs", type=int, default=4)
    ap.add_argument("--max-w", type=int, default=4)
    a = ap.parse_args()
    model = PolicyModel(compass_factory("literal"), a.nodes, EventBounds(tuple(range(1, 9)), a.max_jobs, a.max_w), True)
    front = [model.representative(s) for s in model.init_states()]
    seen = set(front)
    departures = same = 0
    for _ in range(a.depth):
        nxt = []
        for s in front:
            results = set()
            for ev in model.actions(s):
                st = model.step(s, ev)
                applied = st.outcome is Outcome.APPLIED
                if not ev.arrive:
                    departures += 1
                    key = (st.outcome, canonical(st.state) if applied else None, len(st.detail))
                    same += key in results
                    results.add(key)
                if applied and model.within(st):
                    rep = model.representative(st.state)
                    if rep not in seen:
                        seen.add(rep)
                        nxt.append(rep)
        front = nxt
    print(f"N={a.nodes}, depth {a.depth}, ≤ {a.max_jobs} jobs, w ≤ {a.max_w}: {len(seen):,} states, "
          f"{departures:,} departures, {same:,} ({same / max(departures, 1):.1%}) repeat a sibling's result")


if __name__ == "__main__":
    main()
