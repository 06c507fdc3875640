"""How fast could the explorer be with this COMPASS? A floor for issue 16's 10× goal.

    python benchmarks/explorer_ceiling.py [--ref e0bcca7] [--nodes 5] [--depth 8] [--max-jobs 4] [--max-w 4] [--compiled]
                                          [--repeat K]

On the pool5 bounds of ``bench_explorer.py`` (literal COMPASS under WCC, g ∈ 1..8) this walks the
state space breadth-first once to collect every transition the explorer computes (each expanded
representative with its actions), then times, in this process, the parts of that work separately:

* COMPASS's events alone: per transition a scheduler built by ``with_state`` and the event run
  on it, minus the same builds without the event — Algorithm 1's own work;
* ``with_state`` once per expanded state, and the explorer's apply-and-undo path (``with_state``
  per state, per action ``trial`` + event + ``rollback``), with and without ``view_after``;
* the canonical form of every applied successor, memos cleared first (as a fresh search meets
  them);
* and, as child processes, ``verify`` of the reference commit and of this tree on the same bounds
  (their state counts must equal the walk's), each tree byte-compiled first
  (``bench_explorer.byte_compiled``).

With ``--compiled`` the same parts (and ``verify``) are also timed in this tree's opt-in mypyc
build, made in a temporary copy in the same run (``bench_explorer.compiled_tree``). With ``--repeat
K`` each in-process part is its best of K runs (on a shared machine interference only adds time,
so the minimum is the steadiest figure; a single run can read twice the time).

Any explorer that runs this COMPASS implementation once per transition needs at least the event
time, however its search, canonical form, undo and storage are built. "10× budget" is the
reference's wall time over ten: when the events alone exceed it, the goal cannot be met on the
search side and needs a faster scheduler implementation (or fewer transitions).
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
from typing import Callable

from heuristics.gpu.abs_space import AbsView
from heuristics.gpu.compass import Compass
from proofs_check.core.model import Outcome
from proofs_check.gpu import canonical as canonical_module
from proofs_check.gpu.events import Event, apply_event
from proofs_check.gpu.flat_claims import compass_factory
from proofs_check.gpu.policy_model import EventBounds, PolicyModel

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the sibling benchmarks (benchmarks/ is no package)
from bench_canonical import memos  # noqa: E402
from bench_explorer import byte_compiled, run  # noqa: E402




def transitions(model: PolicyModel, depth: int) -> tuple[list[tuple[AbsView, list[Event]]], int]:
    """Every expanded representative with its actions, breadth-first to ``depth``; distinct states."""
    front = [model.representative(s) for s in model.init_states()]
    seen = set(front)
    work: list[tuple[AbsView, list[Event]]] = []
    for _ in range(depth):
        nxt = []
        for s in front:
            acts = list(model.actions(s))
            work.append((s, acts))
            for ev in acts:
                st = model.step(s, ev)
                if st.outcome is Outcome.APPLIED and model.within(st):
                    rep = model.representative(st.state)
                    if rep not in seen:
                        seen.add(rep)
                        nxt.append(rep)
        front = nxt
    return work, len(seen)


def _timed(f: Callable[[], object], repeat: int = 1) -> float:
    """The best wall time of ``repeat`` calls of ``f``."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def time_scheduler(proto: Compass, work: list[tuple[AbsView, list[Event]]], repeat: int = 1) -> dict[str, float]:
    """Wall times of the scheduler's parts over ``work`` (see the module docstring)."""

    def built_per_state() -> None:
        for s, _ in work:
            proto.with_state(s)

    def built_per_transition(run: bool) -> None:
        for s, acts in work:
            for ev in acts:
                pol = proto.with_state(s)
                if run:
                    apply_event(pol, ev)

    def undone(view: bool) -> None:
        for s, acts in work:
            pol = proto.with_state(s)
            for ev in acts:
                pol.trial()
                if apply_event(pol, ev).ok and view:
                    pol.view_after(s)
                pol.rollback()

    rebuilt = _timed(lambda: built_per_transition(False), repeat)
    return {"with_state": _timed(built_per_state, repeat),
            "events": _timed(lambda: built_per_transition(True), repeat) - rebuilt,
            "undo": _timed(lambda: undone(False), repeat),
            "view": _timed(lambda: undone(True), repeat)}


def successors(proto: Compass, work: list[tuple[AbsView, list[Event]]]) -> list[AbsView]:
    out = []
    for s, acts in work:
        pol = proto.with_state(s)
        for ev in acts:
            pol.trial()
            if apply_event(pol, ev).ok:
                out.append(pol.view_after(s))
            pol.rollback()
    return out


def time_canonical(views: list[AbsView], repeat: int = 1) -> float:
    """The best of ``repeat`` passes over ``views``, each with the memos cleared first."""
    canon = canonical_module.canonical

    def cold() -> None:
        for memo in memos(canonical_module):
            memo.clear()
        for v in views:
            canon(v)

    return _timed(cold, repeat)


def parts(a: argparse.Namespace) -> tuple[dict[str, float], int, int, int, int]:
    """The parts' seconds in this process, the distinct and expanded states, the transitions and
    the applied successors of the walk."""
    model = PolicyModel(compass_factory("literal"), a.nodes, EventBounds(tuple(range(1, 9)), a.max_jobs, a.max_w), True)
    work, distinct = transitions(model, a.depth)
    t = time_scheduler(model.proto, work, a.repeat)
    views = successors(model.proto, work)
    t["canonical"] = time_canonical(views, a.repeat)
    return t, distinct, len(work), sum(len(acts) for _, acts in work), len(views)


def compiled_parts(a: argparse.Namespace, bounds: list[str]) -> tuple[dict[str, float], float]:
    """The parts and ``verify``'s wall time in the compiled build of this tree."""
    from bench_explorer import compiled_tree

    with compiled_tree() as comp:
        args = ["--nodes", str(a.nodes), "--depth", str(a.depth), "--max-jobs", str(a.max_jobs), "--max-w",
                str(a.max_w), "--repeat", str(a.repeat), "--parts-only"]
        out = subprocess.run([sys.executable, str(comp / "benchmarks" / "explorer_ceiling.py"), *args], cwd=comp,
                             check=True, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(comp)})
        verify = run([sys.executable, "-m", "proofs_check.cli.verify", *bounds], comp)
    return json.loads(out.stdout.strip().splitlines()[-1]), verify.wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", default="e0bcca7", help="the reference commit (default e0bcca7)")
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--max-jobs", type=int, default=4)
    ap.add_argument("--max-w", type=int, default=4)
    ap.add_argument("--compiled", action="store_true", help="also time the parts in the opt-in compiled build")
    ap.add_argument("--repeat", type=int, default=1, help="each in-process part: the best of K runs")
    ap.add_argument("--parts-only", action="store_true", help=argparse.SUPPRESS)  # the compiled child's mode
    a = ap.parse_args()
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    if a.parts_only:
        print(json.dumps(parts(a)[0]))
        return
    bounds = ["--claim", "thm1.pool", "--min-nodes", str(a.nodes), "--max-nodes", str(a.nodes), "--depth",
              str(a.depth), "--max-jobs", str(a.max_jobs), "--max-w", str(a.max_w), "--quiet"]
    t, distinct, expanded, n_trans, applied = parts(a)
    comp = compiled_parts(a, bounds) if a.compiled else None

    tmp = Path(tempfile.mkdtemp(prefix="explorer_ceiling_"))
    try:
        archive = subprocess.run(["git", "archive", "--format=tar", a.ref], cwd=HERE.parent, check=True,
                                 capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        ref = run([sys.executable, "-m", "proofs_check.cli", *bounds], byte_compiled(tmp))
        new = run([sys.executable, "-m", "proofs_check.cli.verify", *bounds], byte_compiled(HERE.parent))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if ref.distinct != distinct or new.distinct != distinct:
        raise SystemExit(f"state counts differ: walk {distinct}, reference {ref.distinct}, this tree {new.distinct}")

    budget = ref.wall / 10
    print(f"N={a.nodes}, depth {a.depth}, ≤ {a.max_jobs} jobs, w ≤ {a.max_w}, WCC: {distinct:,} distinct states, "
          f"{expanded:,} expanded, {n_trans:,} transitions, {applied:,} applied")
    rows = [(f"verify at {a.ref} (reference)", ref.wall), ("verify, this tree", new.wall),
            ("10× budget (reference / 10)", budget)] + _part_rows(t, "")
    if comp is not None:
        rows += [("verify, this tree compiled", comp[1])] + _part_rows(comp[0], "compiled: ")
    for name, secs in rows:
        print(f"  {name:<62} {secs:8.2f} s  {secs / budget:5.2f}× budget  {1e6 * secs / n_trans:7.1f} µs/transition")
    verdict = "exceeds" if t["events"] > budget else "fits within"
    print(f"COMPASS's event code alone {verdict} the 10× budget ({t['events']:.2f} s vs {budget:.2f} s; "
          f"scheduler set-up, undo, canonical form, search and storage excluded)")


def _part_rows(t: dict[str, float], prefix: str) -> list[tuple[str, float]]:
    return [(prefix + "COMPASS events alone (Algorithm 1's work)", t["events"]),
            (prefix + "with_state, once per expanded state", t["with_state"]),
            (prefix + "apply and undo (with_state, trial, event, rollback)", t["undo"]),
            (prefix + "  the same + view_after (the successor read out)", t["view"]),
            (prefix + "canonical form of every successor (cold memos)", t["canonical"])]


if __name__ == "__main__":
    main()
