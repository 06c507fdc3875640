"""Forked shards with and without the work board (``proofs_check.core.work_board``), same run.

    python benchmarks/bench_work_board.py [--repeat K] [--workers W]

Explores the pool5 bounds of ``bench_explorer.py`` (``thm1.pool``, N = 5, depth 8, ≤ 4 jobs,
w ≤ 4) with W forked shards (default 2), alternately with the board and without it (the shards
then expand only the states they own, as before the board), K times each (default 3). Per run it
prints the wall time of the levels (expand and absorb, summed over levels), their *imbalance*
(per level, the slowest shard's CPU seconds minus the fastest's, summed over levels: what the
levels waited for their slowest shard) and the shards' CPU seconds in all. The figures of both
searches are compared (they must be the same). On a shared machine the imbalance grows when
another job takes a core for a while: the board is for that. The runs share this process's
canonical-form memos (the forked shards inherit them), so the first run is the slowest; the
variants alternate, so both meet warm memos alike.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from proofs_check.core import engine, search
from proofs_check.core.engine import Engine
from proofs_check.core.search import Limits, explore
from proofs_check.gpu.flat_claims import FLAT, compass_factory
from proofs_check.gpu.policy_model import EventBounds, PolicyModel

LEVELS: list[tuple[float, list[float]]] = []  # per pool call of one run: (wall, each shard's CPU seconds)


def _timed(method: Any) -> Any:
    """A shard method that also reports the CPU seconds it took (in its own process)."""
    def run(self: search.Shard, *args: Any) -> Any:
        t0 = time.process_time()
        out = method(self, *args)
        report = out[1] if isinstance(out, tuple) else out
        report["cpu"] = time.process_time() - t0
        return out
    return run


def _recorded(call: Any) -> Any:
    def run(self: Any, method: str, args: Any) -> Any:
        t0 = time.perf_counter()
        out = call(self, method, args)
        if method in ("expand", "absorb"):
            LEVELS.append((time.perf_counter() - t0, [(o[1] if method == "expand" else o)["cpu"] for o in out]))
        return out
    return run


def once(workers: int, board: bool) -> tuple[dict[str, float], Any]:
    """One exploration; its timing figures and its exploration figures."""
    claim = FLAT["thm1.pool"]
    events = EventBounds(claim.demands, 4, 4)
    models = [PolicyModel(compass_factory(claim.variant), 5, events, claim.wcc_trajectory)]
    LEVELS.clear()
    saved = search.Shard.__dict__["work_board"]
    if not board:
        delattr(search.Shard, "work_board")  # LocalPool then makes no board
    try:
        t0 = time.perf_counter()
        exp = explore(models, [claim.prop], Limits(8, 2_000_000), Engine("local", workers))
        wall = time.perf_counter() - t0
    finally:
        search.Shard.work_board = saved  # type: ignore[method-assign]
    s = exp.sizes[0]
    figures = (s.distinct, s.generated, s.refused, s.failures, s.pruned, s.depth_reached, s.at_depth_bound)
    return {"wall": wall, "levels": sum(w for w, _ in LEVELS), "imbalance": sum(max(c) - min(c) for _, c in LEVELS),
            "cpu": sum(sum(c) for _, c in LEVELS)}, figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    if a.workers < 2:
        raise SystemExit("bench_work_board: --workers must be at least 2 (the board shares work between shards)")
    search.Shard.expand = _timed(search.Shard.expand)  # type: ignore[method-assign]
    search.Shard.absorb = _timed(search.Shard.absorb)  # type: ignore[method-assign]
    engine.LocalPool.call = _recorded(engine.LocalPool.call)  # type: ignore[method-assign]
    print(f"pool5 bounds, {a.workers} forked shards, {a.repeat} runs each, alternately")
    print(f"{'board':<6} {'run':>3} {'wall s':>7} {'levels s':>9} {'imbalance s':>12} {'shards CPU s':>13}")
    got: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    seen = set()
    for i in range(a.repeat):
        for board in (False, True):
            t, figures = once(a.workers, board)
            seen.add(figures)
            got[board].append(t)
            print(f"{'yes' if board else 'no':<6} {i + 1:>3} {t['wall']:>7.2f} {t['levels']:>9.2f} "
                  f"{t['imbalance']:>12.3f} {t['cpu']:>13.2f}")
    for board in (False, True):
        med = {k: statistics.median(t[k] for t in got[board]) for k in ("wall", "levels", "imbalance", "cpu")}
        print(f"median, board {'yes' if board else 'no'}: wall {med['wall']:.2f} s, levels {med['levels']:.2f} s, "
              f"imbalance {med['imbalance']:.3f} s, shards CPU {med['cpu']:.2f} s")
    print(f"same figures in every run: {'yes' if len(seen) == 1 else 'NO'}")
    if len(seen) != 1:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
