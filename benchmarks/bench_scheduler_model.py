"""The scheduler model (issue 22) against the explorer before it, side by side in one run.

    python benchmarks/bench_scheduler_model.py [--ref 1b303a9] [--cases thm1n6,ff,sym]

The reference is built from the git history into a temporary directory (``git archive``) and run
there; both trees run ``python -m proofs_check.cli.verify`` as child processes, one after the other,
on the same bounds, with ``examples/`` on the path:

* ``thm1n6`` — ``verify --theorem 1 --max-nodes 6``: COMPASS's paper claims (the search checks the
  pseudocode on canonical states, unchanged): the wall-time ratio, and "same" = identical rows;
* ``ff`` — ``verify --policy first-fit --claim policy.valid --max-nodes 3 --depth 5``: a
  placement-only scheduler without declared symmetry. The reference explored it from canonical
  representatives (another scheduler: an index rule renumbered), this tree explores the real object
  and has more states (the true ones); the figure is distinct states per second, this tree / the
  reference (goal ≥ 0.5);
* ``sym`` — the same bounds for ``symmetric_best_fit:SymmetricBestFit`` (examples/), which declares
  symmetry: the reference rebuilt it from canonical states, this tree checks the declaration and
  merges real successors by canonical form. Both must reach the same distinct states; the figure is
  the wall-time ratio (goal ≈ 1); ``sym6`` the same at depth 6, ``sym4`` on N ≤ 4 at depth 7,
  ``sym5`` on N ≤ 5 at depth 8 (the check's cost is per size: its share falls as bounds grow);
* ``compass`` — ``verify --policy compass-literal`` on the ``ff`` bounds: the reference rebuilt a
  Compass from each canonical AbsView per event; this tree keeps the objects, merged by their
  checked view (more states: the real ones, without node renumbering).

Printed per case: wall times, distinct states, distinct states per second, the ratios (wall and
CPU seconds), whether the rows agree. Wall times on a shared machine are noisy: compare ratios
from one run; ``--repeat K`` runs each tree K times, alternately, and reports the medians.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench_explorer import Run, agree, median_of, reference_tree, run, show_difference

ROOT = Path(__file__).resolve().parent.parent
POLICY_BOUNDS = ["--claim", "policy.valid", "--max-nodes", "3", "--depth", "5"]
CASES = {
    "thm1n6": ["--theorem", "1", "--max-nodes", "6"],
    "ff": ["--policy", "first-fit", *POLICY_BOUNDS],
    "sym": ["--policy", "symmetric_best_fit:SymmetricBestFit", *POLICY_BOUNDS],
    "sym6": ["--policy", "symmetric_best_fit:SymmetricBestFit", "--claim", "policy.valid", "--max-nodes", "3",
             "--depth", "6"],
    "sym4": ["--policy", "symmetric_best_fit:SymmetricBestFit", "--claim", "policy.valid", "--max-nodes", "4",
             "--depth", "7"],
    "sym5": ["--policy", "symmetric_best_fit:SymmetricBestFit", "--claim", "policy.valid", "--max-nodes", "5",
             "--depth", "8"],
    "compass": ["--policy", "compass-literal", *POLICY_BOUNDS],
}


def _run(tree: Path, args: list[str]) -> Run:
    """``verify ARGS`` of ``tree`` with ``examples/`` importable (first on the path: the tree, which
    ``bench_explorer.run`` also puts on PYTHONPATH)."""
    boot = (f"import sys; sys.path[:0] = [{str(tree)!r}, {str(ROOT / 'examples')!r}]; "
            "from proofs_check.cli.verify import main; sys.exit(main())")
    return run([sys.executable, "-c", boot, *args, "--quiet"], tree)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", default="1b303a9", help="the reference commit (default 1b303a9: before the scheduler model)")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, from {', '.join(CASES)}")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each tree per case, alternately (medians shown)")
    a = ap.parse_args()
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    with reference_tree(a.ref, "bench_scheduler_model_") as ref:
        print(f"{'case':<7} {'ref s':>7} {'new s':>7} {'wall ratio':>10} {'cpu ratio':>9} {'ref distinct':>12} "
              f"{'new distinct':>12} {'ref st/s':>9} {'new st/s':>9} {'st/s ratio':>10} same")
        for case in a.cases.split(","):
            compare(ref, case, a.repeat)
    print("wall (cpu) ratio = reference wall (CPU) seconds / this tree's; st/s ratio = this tree's distinct states "
          f"per second / the reference's (wall); medians of {a.repeat} run(s) of each tree")


def compare(ref: Path, case: str, repeat: int) -> None:
    olds, news = [], []
    for _ in range(repeat):
        olds.append(_run(ref, CASES[case]))
        news.append(_run(ROOT, CASES[case]))
    old, new = median_of(olds), median_of(news)
    same = all(agree(o, n) for o, n in zip(olds, news))
    o_wall, n_wall, o_cpu, n_cpu = old.wall, new.wall, old.cpu, new.cpu
    r_rate, n_rate = old.distinct / o_wall, new.distinct / n_wall
    print(f"{case:<7} {o_wall:>7.1f} {n_wall:>7.1f} {o_wall / n_wall:>9.2f}x {o_cpu / n_cpu:>8.2f}x {old.distinct:>12,} "
          f"{new.distinct:>12,} {r_rate:>9,.0f} {n_rate:>9,.0f} {n_rate / r_rate:>9.2f}x "
          f"{'yes' if same else 'no'}", flush=True)
    for o, n in zip(olds, news):
        show_difference(o, n)


if __name__ == "__main__":
    main()
