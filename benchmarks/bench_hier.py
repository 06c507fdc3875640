"""Hierarchical COMPASS on NVL72-like racks (K = 9 panels of 8 GPUs): mean time per event.

Usage: python benchmarks/bench_hier.py [--racks 8,32,128,512] [--events 2000] [--panels 9]

For each cluster size the cluster is filled to the target load and then a steady stream alternates
departures of a random running job and arrivals (benchmarks/steady_load.py). Two mixes:

* ``gfs``  — the GFS-like mix of bench_compass (g ≤ 8), run on the hierarchical scheduler AND on
  the flat COMPASS with one node per panel, in the same run: the ratio hier/flat is the cost of
  the two-level composition (ownership sync, the other level's Compact, index translation);
* ``nvl``  — the same mix with a share of multi-panel jobs (g = 16, 32, 64 and domain-filling
  72), hierarchical only (the flat scheduler cannot place them).

Also printed: how many steady events changed which level holds some domain (reading H1: the
other level then blocks or unblocks that domain's nodes), and the ratio of each figure to the
smallest size measured in the run.
"""
from __future__ import annotations

import argparse

from heuristics.gpu.compass import Compass
from heuristics.gpu.hier_compass import HierCompass
from steady_load import GFS_MIX, Mix, steady_load  # benchmarks/ is on sys.path when run as a script


def nvl_mix(k: int) -> Mix:
    multi = [((16, 1), 2.0), ((32, 1), 1.5), ((64, 1), 1.0), ((8 * k, 1), 0.5)]
    return GFS_MIX + [m for m in multi if m[0][0] <= 8 * k]


def _owners(policy) -> tuple:
    return policy.owned_domains() if isinstance(policy, HierCompass) else ()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--racks", default="8,32,128,512")
    ap.add_argument("--panels", type=int, default=9)
    ap.add_argument("--events", type=int, default=2000)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    k = a.panels
    print(f"hierarchical COMPASS-literal, K = {k} panels per domain, {a.load:.0%} load, {a.events} steady events")
    print(f"{'racks':>6} {'panels':>7} {'mix':>4} {'policy':>6} {'arrival us':>11} {'x R0':>6} "
          f"{'departure us':>13} {'x R0':>6} {'owner chg':>9}")
    base: dict[tuple[str, str], tuple[float, float]] = {}
    for d in (int(x) for x in a.racks.split(",")):
        n = d * k
        runs = [("gfs", "hier", HierCompass(d, k), GFS_MIX), ("gfs", "flat", Compass(n), GFS_MIX),
                ("nvl", "hier", HierCompass(d, k), nvl_mix(k))]
        figures = {}
        for mix, name, pol, shapes in runs:
            arr, dep, rb = steady_load(pol, shapes, 8 * n, a.events, a.load, a.seed, _owners)
            b = base.setdefault((mix, name), (arr, dep))
            figures[(mix, name)] = (arr, dep)
            print(f"{d:>6} {n:>7} {mix:>4} {name:>6} {arr * 1e6:>11.1f} {arr / b[0]:>6.2f} "
                  f"{dep * 1e6:>13.1f} {dep / b[1]:>6.2f} {rb if name == 'hier' else '-':>9}")
        h, f = figures[("gfs", "hier")], figures[("gfs", "flat")]
        print(f"{'':>6} {'':>7} hier/flat on the gfs mix: arrival x{h[0] / f[0]:.2f}, departure x{h[1] / f[1]:.2f}")


if __name__ == "__main__":
    main()
