"""`verify --random K` grows linearly in K: CPU seconds per 1,000 sequences at several K.

Each K runs in a fresh process (no memo carried over), the same command a user types:
``verify --claim prop1.abs --max-nodes 1 --random K --quiet`` (sampling N ≤ 64). The figure to
read is the last column: CPU per sequence at K relative to the smallest K (1.0 = linear). Before
the canonical form tried twin nodes in one order only, 2,000 sequences ran past 600 s (one
sampled state held 14 tied nodes, 6 of them identical: 6!·6! node orders of one component).

    python benchmarks/bench_sampling.py [--ks 500,1000,2000,4000] [--claim prop1.abs]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


def run(claim: str, k: int) -> tuple[float, float, int]:
    """(wall s, CPU s, exit code) of one fresh ``verify --random k``."""
    before = os.times()
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "proofs_check.cli.verify", "--claim", claim, "--max-nodes", "1",
                           "--random", str(k), "--quiet"], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system), \
        done.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", default="500,1000,2000,4000", help="numbers of sequences, comma-separated")
    ap.add_argument("--claim", default="prop1.abs", help="a flat claim id (default prop1.abs)")
    args = ap.parse_args(argv)
    ks = [int(x) for x in args.ks.split(",")]
    print(f"verify --claim {args.claim} --max-nodes 1 --random K --quiet (fresh process each)")
    print(f"{'K':>6} {'wall s':>8} {'CPU s':>8} {'CPU s/1000':>11} {'vs smallest K':>14} exit")
    base = None
    for k in ks:
        wall, cpu, rc = run(args.claim, k)
        per = cpu / k * 1000
        base = base or per
        print(f"{k:>6,} {wall:>8.1f} {cpu:>8.1f} {per:>11.2f} {per / base:>13.2f}× {rc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
