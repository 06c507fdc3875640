"""The search's time in the garbage collector, with its long-lived heap frozen per level
(``proofs_check/core/heap.py``) and without, side by side in one run.

    python benchmarks/bench_gc.py [--repeat 3] [-- VERIFY ARGS]

Each variant runs ``verify ARGS --quiet`` in a child process (default: the symmetric example of
docs/policies.md on N ≤ 4, depth 7) with a ``gc.callbacks`` hook that times every collection;
"not frozen" replaces ``heap.settle`` by a no-op, so nothing else differs; "frozen, young 700"
keeps CPython's default threshold for the youngest generation instead of ``heap.YOUNG_THRESHOLD``. Printed per variant
(the run with the least CPU of ``--repeat``): CPU seconds, full (generation 2) collections and
their seconds, younger collections and their seconds, peak resident MiB. Verdicts and state counts
are the same in both (the collector frees memory only), which the script checks.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from proofs_check.core.heap import YOUNG_THRESHOLD

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ["--policy", "symmetric_best_fit:SymmetricBestFit", "--claim", "policy.valid", "--max-nodes", "4",
           "--depth", "7"]

CHILD = """
import gc, json, sys, time
sys.path[:0] = [{root!r}, {examples!r}]
from proofs_check.core import heap
if not {frozen!r}:
    heap.settle = lambda: None
heap.YOUNG_THRESHOLD = {young!r}
spent = {{0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}}
began = [0.0]
def timed(phase, info):
    if phase == "start":
        began[0] = time.perf_counter()
    else:
        spent[info["generation"]][0] += 1
        spent[info["generation"]][1] += time.perf_counter() - began[0]
gc.callbacks.append(timed)
from proofs_check.cli.verify import main
sys.argv = ["verify", *{args!r}, "--quiet", "--json", {report!r}]
rc = main()
gc.callbacks.remove(timed)
print(json.dumps({{"rc": rc, "gc": spent}}))
"""


# (label, frozen per level, the young generation's threshold inside the search)
VARIANTS = (("frozen", True, YOUNG_THRESHOLD), ("frozen, young 700", True, 700), ("not frozen", False, YOUNG_THRESHOLD))


def child(args: list[str], frozen: bool, young: int, report: Path) -> dict[str, Any]:
    """One run of verify in a child process: its exit code, collections, CPU, peak memory, rows."""
    code = CHILD.format(root=str(ROOT), examples=str(ROOT / "examples"), frozen=frozen, young=young, args=args,
                        report=str(report))
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=err, text=True,
                                env={**os.environ, "PYTHONHASHSEED": "0"})
        stdout = proc.stdout.read() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own CPU and peak memory
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            err.seek(0)
            sys.exit(f"bench_gc: verify failed (exit {proc.returncode}):\n{err.read()[-2000:]}")
    out: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    doc = json.loads(report.read_text())
    out["cpu"] = usage.ru_utime + usage.ru_stime
    out["peak_mib"] = usage.ru_maxrss / 1024
    out["rows"] = [(r["claim_id"], r["verdict"], [(s["N"], s["distinct"], s["generated"])
                                                  for s in r.get("stats", {}).get("sizes", [])])
                   for r in doc["results"]]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per variant; the one with least CPU is shown")
    ap.add_argument("args", nargs="*", help="verify's arguments (after --)")
    a = ap.parse_args()
    args = a.args or DEFAULT
    report = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench_gc_{os.getpid()}.json"
    print(f"verify {' '.join(args)}  (least CPU of {a.repeat} runs per variant, alternating)")
    print(f"{'heap':<18} {'CPU s':>6} {'full GCs':>8} {'full s':>7} {'young GCs':>9} {'young s':>8} {'peak MiB':>9}")
    best: dict[str, dict[str, Any]] = {}
    try:
        for _ in range(a.repeat):
            for label, frozen, young in VARIANTS:
                r = child(args, frozen, young, report)
                if label not in best or r["cpu"] < best[label]["cpu"]:
                    best[label] = r
    finally:
        report.unlink(missing_ok=True)
    for label, _, _ in VARIANTS:
        r, g = best[label], best[label]["gc"]
        print(f"{label:<18} {r['cpu']:>6.2f} {g['2'][0]:>8} {g['2'][1]:>7.2f} "
              f"{g['0'][0] + g['1'][0]:>9} {g['0'][1] + g['1'][1]:>8.2f} {r['peak_mib']:>9.0f}")
    same = all((r["rows"], r["rc"]) == (best["frozen"]["rows"], best["frozen"]["rc"]) for r in best.values())
    print(f"same verdicts and state counts: {'yes' if same else 'NO'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
