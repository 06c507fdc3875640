"""How fast could the explorer be with this COMPASS? A floor for issue 16's 10× goal.

    python benchmarks/explorer_ceiling.py [--ref e0bcca7] [--nodes 5] [--depth 8] [--max-jobs 4] [--max-w 4]

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
  (their state counts must equal the walk's).

Any explorer that runs this COMPASS implementation once per transition needs at least the event
time, however its search, canonical form, undo and storage are built. "10× budget" is the
reference's wall time over ten: when the events alone exceed it, the goal cannot be met on the
search side and needs a faster scheduler implementation (or fewer transitions).
"""
from __future__ import annotations

import argparse
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
from bench_explorer import run  # noqa: E402




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


def _timed(f: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def time_scheduler(proto: Compass, work: list[tuple[AbsView, list[Event]]]) -> dict[str, float]:
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

    rebuilt = _timed(lambda: built_per_transition(False))
    return {"with_state": _timed(built_per_state),
            "events": _timed(lambda: built_per_transition(True)) - rebuilt,
            "undo": _timed(lambda: undone(False)),
            "view": _timed(lambda: undone(True))}


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


def time_canonical(views: list[AbsView]) -> float:
    for memo in memos(canonical_module):
        memo.clear()
    canon = canonical_module.canonical
    t0 = time.perf_counter()
    for v in views:
        canon(v)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", default="e0bcca7", help="the reference commit (default e0bcca7)")
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--max-jobs", type=int, default=4)
    ap.add_argument("--max-w", type=int, default=4)
    a = ap.parse_args()
    bounds = ["--claim", "thm1.pool", "--min-nodes", str(a.nodes), "--max-nodes", str(a.nodes), "--depth",
              str(a.depth), "--max-jobs", str(a.max_jobs), "--max-w", str(a.max_w), "--quiet"]
    model = PolicyModel(compass_factory("literal"), a.nodes, EventBounds(tuple(range(1, 9)), a.max_jobs, a.max_w), True)
    work, distinct = transitions(model, a.depth)
    n_trans = sum(len(acts) for _, acts in work)
    t = time_scheduler(model.proto, work)
    views = successors(model.proto, work)
    t_canon = time_canonical(views)

    tmp = Path(tempfile.mkdtemp(prefix="explorer_ceiling_"))
    try:
        archive = subprocess.run(["git", "archive", "--format=tar", a.ref], cwd=HERE.parent, check=True,
                                 capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        ref = run([sys.executable, "-m", "proofs_check.cli", *bounds], tmp)
        new = run([sys.executable, "-m", "proofs_check.cli.verify", *bounds], HERE.parent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if ref.distinct != distinct or new.distinct != distinct:
        raise SystemExit(f"state counts differ: walk {distinct}, reference {ref.distinct}, this tree {new.distinct}")

    budget = ref.wall / 10
    print(f"N={a.nodes}, depth {a.depth}, ≤ {a.max_jobs} jobs, w ≤ {a.max_w}, WCC: {distinct:,} distinct states, "
          f"{len(work):,} expanded, {n_trans:,} transitions, {len(views):,} applied")
    rows = [(f"verify at {a.ref} (reference)", ref.wall), ("verify, this tree", new.wall),
            ("10× budget (reference / 10)", budget),
            ("COMPASS events alone (Algorithm 1's work)", t["events"]),
            ("with_state, once per expanded state", t["with_state"]),
            ("apply and undo (with_state, trial, event, rollback)", t["undo"]),
            ("  the same + view_after (the successor read out)", t["view"]),
            ("canonical form of every successor (cold memos)", t_canon)]
    for name, secs in rows:
        print(f"  {name:<52} {secs:8.2f} s  {secs / budget:5.2f}× budget  {1e6 * secs / n_trans:7.1f} µs/transition")
    verdict = "exceeds" if t["events"] > budget else "fits within"
    print(f"COMPASS's event code alone {verdict} the 10× budget ({t['events']:.2f} s vs {budget:.2f} s; "
          f"scheduler set-up, undo, canonical form, search and storage excluded)")


if __name__ == "__main__":
    main()
