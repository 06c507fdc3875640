"""The README's table of what the built-in schedulers do under the policy.* claims.

    python benchmarks/policy_table.py [--schedulers best-fit,fft] [--workers 2]

For each scheduler: ``verify --policy NAME --claim policy --measure sif --json`` with the
``--policy`` defaults (N = 1..3, ≤ 6 events, ≤ 3 jobs, w ≤ 3, g = 1..8, k = 2, m = 0; hier-compass
with K = 2 and its own defaults), each in its own process, ``--workers`` of them at a time. Prints
one Markdown row per scheduler: the largest Φπ − Φ★ and per N, the shortest witness of the largest,
the claims broken with where the shortest counterexample sits, the distinct states explored, the
abstractions the run trusted, and the seconds it took.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from heuristics.gpu.registry import builtin_policy_names

HIER = ["--policy-opt", "hier-compass:panels_per_domain=2"]


def row(name: str, out_dir: Path) -> str:
    path = out_dir / f"{name}.json"
    extra = HIER if name == "hier-compass" else []
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "proofs_check.cli.verify", "--policy", name, *extra, "--claim",
                           "policy", "--measure", "sif", "--quiet", "--json", str(path)],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if not path.is_file():
        return f"| `{name}` | error: {proc.stderr.strip()[-200:]} |"
    results = {r["claim_id"]: r for r in json.loads(path.read_text())["results"]}
    m = results["measure.sif"]
    unit = "D" if name == "hier-compass" else "N"
    per = ", ".join(f"{v}" for v in m["stats"][f"per {unit}"].values())
    w = m["stats"].get("witness")
    witness = f"{unit}={w['n_nodes']}: " + ", ".join(f"`{e['event']}`" for e in w["shown"]) if w else "—"
    broken = []
    for cid, r in results.items():
        if r["verdict"] == "violated" and r.get("counterexample"):
            ce = r["counterexample"]
            broken.append(f"`{cid}` ({unit}={ce['n_nodes']} after {len(ce['events'])} events)")
        elif r["verdict"] not in ("holds", "violated"):
            broken.append(f"`{cid}` {r['verdict']}")
    sizes = m["stats"]["sizes"]
    states = sum(s["distinct"] for s in results["policy.valid"]["stats"]["sizes"])
    trusted = {v["merged by"] for v in results["policy.valid"]["stats"].get("abstractions", {}).values()}
    return (f"| `{name}` | **{m['stats']['max Φπ − Φ★']}** | {per} | {witness} | {'; '.join(broken) or 'none'} | "
            f"{states:,} | {', '.join(sorted(trusted)) or '—'} | {seconds:.0f} |") if sizes else f"| `{name}` | ? |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--schedulers", default=",".join(builtin_policy_names()))
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    names = [n for n in a.schedulers.split(",") if n]
    print("| scheduler | max gap | per N | shortest witness of the max | policy.* claims broken (shortest "
          "counterexample) | states (policy.valid, all N) | states merged by | s |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(a.workers) as pool:
        for line in pool.map(lambda n: row(n, Path(tmp)), names):
            print(line, flush=True)


if __name__ == "__main__":
    main()
