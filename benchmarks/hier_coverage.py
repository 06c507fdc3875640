"""How much of Theorem 2's panel level a hierarchical search exercises (issue 13, item 4).

Usage: PYTHONPATH=. python benchmarks/hier_coverage.py [--panels 1,2,3,9] [--max-domains D] [--depth N]
       [--max-jobs J] [--max-w W] [--variant literal|repaired] [--no-wcc]

Defaults are the bounds `verify --theorem 2` uses (``HierBounds``). For each K and D it walks the
same state space as the core's search of the ``thm2.*`` WCC claims (``HierModel``: canonical
states, successors kept only while eq. 24 and 25 hold, ≤ depth events) and counts, over the
distinct states, each situation of ``hier_model.coverage_features`` — a panel-level slot, a
panel-FUF anchor with a 1-panel filler, a non-full panel-slot or panel-pool, two anchored domains,
a multi-panel job of w ≥ 2, both levels in use, and the two that readings H1 / H4 rule out (a
domain shared by both levels, work on the ninth panel beside a width-8 panel-slot). The distinct
count is printed beside the core search's own figure for the same bounds: they must agree (with
--no-wcc only while thm2.abs holds: a violation stops the core's search early).
"""
from __future__ import annotations

import argparse
import time
from collections import Counter

from proofs_check.core.engine import SERIAL
from proofs_check.core.search import Limits, explore
from proofs_check.gpu.hier_claims import HIER_CLAIMS, HierBounds
from proofs_check.gpu.hier_model import COVERAGE, HierModel, coverage_features, legal_demands


def walk(model: HierModel, depth: int) -> tuple[int, Counter]:
    """Breadth-first over the model's canonical states to ``depth`` events; (distinct, feature counts)."""
    root = model.representative(model.init_states()[0])
    seen, frontier, counts = {root}, [root], Counter(coverage_features(root))
    for _ in range(depth):
        nxt = []
        for s in frontier:
            for a in model.actions(s):
                st = model.step(s, a)
                if not st.applied or not model.within(st):
                    continue
                rep = model.representative(st.state)
                if rep not in seen:
                    seen.add(rep)
                    nxt.append(rep)
                    counts.update(coverage_features(rep))
        frontier = nxt
    return len(seen), counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    b = HierBounds()
    ap.add_argument("--panels", default=",".join(map(str, b.panels)))
    ap.add_argument("--max-domains", type=int, default=b.max_domains)
    ap.add_argument("--depth", type=int, default=b.depth)
    ap.add_argument("--max-jobs", type=int, default=b.max_jobs)
    ap.add_argument("--max-w", type=int, default=b.max_w)
    ap.add_argument("--variant", default=b.variant)
    ap.add_argument("--no-wcc", action="store_true", help="every trajectory (the thm2.abs search)")
    args = ap.parse_args()
    wcc = not args.no_wcc
    print(f"bounds: depth ≤ {args.depth}, ≤ {args.max_jobs} jobs, w ≤ {args.max_w}, variant {args.variant}, "
          f"{'WCC trajectories' if wcc else 'every trajectory'}")
    for k in (int(x) for x in args.panels.split(",")):
        for d in range(1, args.max_domains + 1):
            model = HierModel(d, k, args.variant, legal_demands(k), args.max_jobs, args.max_w, wcc)
            t0 = time.perf_counter()
            distinct, counts = walk(model, args.depth)
            secs = time.perf_counter() - t0
            prop = HIER_CLAIMS["thm2.gpu-pool" if wcc else "thm2.abs"].prop
            exp = explore([model], [prop], Limits(args.depth, 10**7), SERIAL, None, None, "coverage")
            core = exp.sizes[0].distinct
            print(f"K={k} D={d}: {distinct:,} distinct states (core search: {core:,}"
                  f"{'' if core == distinct else ' — DIFFERS'}; {secs:.1f}s)")
            for name in COVERAGE:
                print(f"    {name:45s} {counts.get(name, 0):>8,}  ({counts.get(name, 0) / distinct:.1%})")


if __name__ == "__main__":
    main()
