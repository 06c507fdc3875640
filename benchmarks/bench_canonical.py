"""The canonical form on the explorer's own inputs: this tree against a reference commit (issue 16).

    python benchmarks/bench_canonical.py [--ref HEAD] [--claim thm1.pool] [--nodes 5] [--depth 8]
                                         [--max-jobs 4] [--max-w 4] [--repeat 3] [--no-memory]

1. *Record*: one exploration of ``--claim`` (COMPASS, the claim's variant, demands and WCC filter)
   at exactly N = ``--nodes`` on the core's search, with a ``PolicyModel`` whose ``canon`` records
   every state it is given — the explorer's workload, in the explorer's order (the defaults are
   ``verify --claim thm1.pool --min-nodes 5 --max-nodes 5 --depth 8 --max-jobs 4 --max-w 4``).
2. *Time*: ``canonical`` of the reference (``proofs_check/gpu/canonical.py`` at ``--ref``, read with
   ``git show``) and of this tree, each executed as a fresh module (empty memos) and run on the
   recorded inputs in order: CPU seconds of this process, best of ``--repeat``. Every output of
   this tree must equal the reference's (asserted: the same representative for every input).
3. *Memory*: the same exploration once more per module under ``tracemalloc``: its traced peak,
   and what the module's memos hold at the end (the memory that clearing them frees), also per
   million distinct states.

On a shared machine times are noisy: compare the ratio printed by one run, not across runs.
Run from the repository root with ``PYTHONPATH=.`` if the package is not installed.
"""
from __future__ import annotations

import argparse
import gc
import os
import subprocess
import time
import tracemalloc
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from proofs_check.core.records import Limits
from proofs_check.core.search import explore
from proofs_check.gpu.flat_claims import FLAT, compass_factory
from proofs_check.gpu.policy_model import EventBounds, PolicyModel

ROOT = Path(__file__).resolve().parent.parent


def source(ref: str | None) -> str:
    """``proofs_check/gpu/canonical.py`` at commit ``ref`` (None: this tree's file)."""
    if ref is None:
        return (ROOT / "proofs_check" / "gpu" / "canonical.py").read_text()
    return subprocess.run(["git", "show", f"{ref}:proofs_check/gpu/canonical.py"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout


def fresh(src: str, name: str) -> ModuleType:
    """``src`` executed as a new module: its own, empty memos."""
    mod = ModuleType(name)
    exec(compile(src, f"<{name}>", "exec"), mod.__dict__)
    return mod


def explorer(claim_id: str, n: int, depth: int, max_jobs: int, max_w: int, canon: Callable[[Any], Any]) -> int:
    """One exploration (the verify command's search at N = ``n``) with ``canon`` as its canonical
    form; its distinct states."""
    c = FLAT[claim_id]
    model = PolicyModel(compass_factory(c.variant), n, EventBounds(c.demands, max_jobs, max_w), c.wcc_trajectory,
                        canon=canon)
    return explore([model], [c.prop], Limits(depth, 10_000_000)).sizes[-1].distinct


def record(bounds: tuple[str, int, int, int, int], canon: Callable[[Any], Any]) -> list[Any]:
    """Every state the explorer canonicalises, in order."""
    seen: list[Any] = []

    def recording(state: Any) -> Any:
        seen.append(state)
        return canon(state)

    explorer(*bounds, recording)
    return seen


def timed(src: str, name: str, inputs: list[Any], repeat: int) -> tuple[float, list[Any]]:
    """Best CPU seconds over ``repeat`` runs, each from a fresh module; the outputs."""
    best, out = float("inf"), []
    for _ in range(repeat):
        canon = fresh(src, name).canonical
        gc.collect()
        t0 = time.process_time()
        out = [canon(s) for s in inputs]
        best = min(best, time.process_time() - t0)
    return best, out


def memos(mod: ModuleType) -> list[dict]:
    """The module's memos: its private module-level dicts."""
    return [v for k, v in vars(mod).items() if k.startswith("_") and not k.startswith("__") and isinstance(v, dict)]


def memory(src: str, name: str, bounds: tuple[str, int, int, int, int]) -> tuple[float, float, int]:
    """(peak MiB of the whole exploration, MiB its memos hold at the end, distinct states),
    traced by ``tracemalloc``. The explorer's own memory is the same with either module, so
    the peaks differ by the canonical form's; the memos' share is what clearing them frees."""
    gc.collect()
    tracemalloc.start()
    mod = fresh(src, name)
    distinct = explorer(*bounds, mod.canonical)
    gc.collect()
    before, peak = tracemalloc.get_traced_memory()
    for memo in memos(mod):
        memo.clear()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return peak / 2**20, (before - after) / 2**20, distinct


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", default="HEAD", help="reference commit of canonical.py (default HEAD)")
    ap.add_argument("--claim", default="thm1.pool")
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--max-jobs", type=int, default=4)
    ap.add_argument("--max-w", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-memory", action="store_true", help="skip the two traced explorations")
    a = ap.parse_args()
    bounds = (a.claim, a.nodes, a.depth, a.max_jobs, a.max_w)
    srcs = {"reference": source(a.ref), "this tree": source(None)}
    print(f"reference: canonical.py at {a.ref}; this tree: {ROOT}; load average {os.getloadavg()[0]:.2f} "
          f"(shared machine; times are CPU seconds of this process)")
    t0 = time.perf_counter()
    inputs = record(bounds, fresh(srcs["reference"], "reference").canonical)
    print(f"recorded {len(inputs):,} canonical() inputs ({len(set(inputs)):,} distinct) of {a.claim} at "
          f"N={a.nodes}, depth {a.depth}, ≤ {a.max_jobs} jobs, w ≤ {a.max_w} in {time.perf_counter() - t0:.1f} s")
    times, outs = {}, {}
    for name, src in srcs.items():
        times[name], outs[name] = timed(src, name, inputs, a.repeat)
    bad = sum(x != y for x, y in zip(*outs.values()))
    assert bad == 0, f"{bad} outputs differ from the reference"
    outs.clear()
    print(f"{'':<10} {'cpu s':>7} {'µs/call':>8}" + ("" if a.no_memory else
          f" {'peak MiB':>9} {'memo MiB':>9} {'memo MiB/M':>10}"))
    for name, src in srcs.items():
        line = f"{name:<10} {times[name]:>7.2f} {times[name] * 1e6 / len(inputs):>8.1f}"
        if not a.no_memory:
            peak, held, distinct = memory(src, name, bounds)
            line += f" {peak:>9.1f} {held:>9.1f} {held / (distinct / 1e6):>10.0f}"
        print(line, flush=True)
    print(f"speed-up (reference / this tree, best of {a.repeat}): {times['reference'] / times['this tree']:.2f}x; "
          f"outputs identical on all {len(inputs):,} inputs")
    if not a.no_memory:
        print("peak MiB: traced peak of a whole exploration using that canonical form; memo MiB: what its memos "
              "hold at the end; memo MiB/M: per million distinct states of the exploration")


if __name__ == "__main__":
    main()
