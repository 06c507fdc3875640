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

Printed per case: wall times, distinct states, distinct states per second, the ratios, whether the
rows agree. Wall times on a shared machine are noisy: compare ratios from one run.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench_explorer import Run, agree, reference_tree, run, show_difference

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
    a = ap.parse_args()
    with reference_tree(a.ref, "bench_scheduler_model_") as ref:
        print(f"{'case':<7} {'ref s':>7} {'new s':>7} {'wall ratio':>10} {'ref distinct':>12} {'new distinct':>12} "
              f"{'ref st/s':>9} {'new st/s':>9} {'st/s ratio':>10} same")
        for case in a.cases.split(","):
            compare(ref, case)
    print("wall ratio = reference wall / this tree's; st/s ratio = this tree's distinct states per second / the "
          "reference's")


def compare(ref: Path, case: str) -> None:
    old, new = _run(ref, CASES[case]), _run(ROOT, CASES[case])
    r_rate, n_rate = old.distinct / old.wall, new.distinct / new.wall
    print(f"{case:<7} {old.wall:>7.1f} {new.wall:>7.1f} {old.wall / new.wall:>9.2f}x {old.distinct:>12,} "
          f"{new.distinct:>12,} {r_rate:>9,.0f} {n_rate:>9,.0f} {n_rate / r_rate:>9.2f}x "
          f"{'yes' if agree(old, new) else 'no'}", flush=True)
    show_difference(old, new)


if __name__ == "__main__":
    main()
