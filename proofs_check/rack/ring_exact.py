"""Claim ``ring-exact`` about RingStitch (seed 004, §IV-C).

ring-exact — RingStitch's ring order (heuristics/rack/ring_order.py) is a minimum closed tour for every
rack set of ≤ 8 racks. Checked against Held–Karp (oracle/rack/ring_tour.py, an independent DP):
exhaustively over every rack set of the small tori in ``exhaustive_dims``, and on ``samples``
random rack sets of the paper's torus. Beyond 8 racks the paper uses nearest neighbour; the worst
nearest-neighbour / optimal ratio found on ``nn_samples`` sets of 9–12 racks is reported as a
figure (``stats['nn_worst_ratio']``), not judged.

The check takes ``deadline`` (a ``time.perf_counter()`` value, ``verify --time-limit``), looked at
between instances: once it has passed, the scan stops and the claim is inconclusive ("time limit
hit after K of the N instances"), unless a violation was already found, which stands.
"""
from __future__ import annotations

import itertools
import math
from typing import Iterator, NamedTuple, Sequence, TypedDict

import numpy as np

from heuristics.rack.racks import PAPER_DIMS, Coord, RackCluster
from heuristics.rack.ring_order import EXACT_LIMIT, ring_order
from oracle.rack.ring_tour import held_karp
from proofs_check.core.trace import Record, envelope
from proofs_check.core.verdict import ClaimResult, Verdict
from proofs_check.rack import outcome


# --- ring-exact ---------------------------------------------------------------------------------

class TourMiss(TypedDict):
    """A rack set whose ring order is longer than the minimum tour (the counterexample's fields)."""

    dims: list[int]
    racks: list[int]
    ring_cost: int
    optimum: int


class NNInstance(TypedDict):
    """A 9–12 rack set and its nearest-neighbour and minimum tour lengths."""

    dims: list[int]
    racks: list[int]
    nn_cost: int
    optimum: int


class NNWorst(NamedTuple):
    """The worst nearest-neighbour / optimal ratio seen so far, and where."""

    ratio: float = 1.0
    instance: NNInstance | None = None


def _tour_miss(dims: Coord, dist: np.ndarray, racks: list[int]) -> TourMiss | None:
    """None if the ring order of ``racks`` is a minimum closed tour, else the record saying by how much."""
    _, cost = ring_order(racks, dist)
    opt, _ = held_karp(dist[np.ix_(racks, racks)])
    if cost == opt:
        return None
    return {"dims": list(dims), "racks": [int(r) for r in racks], "ring_cost": int(cost), "optimum": int(opt)}


def _exact_sets(exhaustive_dims: Sequence[Coord], samples: int, paper: RackCluster, rng: np.random.Generator,
                progress: outcome.Progress) -> Iterator[tuple[Coord, np.ndarray, list[int]]]:
    """(dims, distances, racks) of every rack set of ≤ ``EXACT_LIMIT`` racks of the small tori, then
    of ``samples`` random sets of the paper's torus; each is checked before the next is drawn."""
    done = 0
    for dims in exhaustive_dims:
        dist = RackCluster.torus(dims).dist
        n = int(np.prod(dims))
        for k in range(1, min(EXACT_LIMIT, n) + 1):
            for racks in itertools.combinations(range(n), k):
                yield dims, dist, list(racks)
                done += 1
        outcome.say(progress, f"ring-exact: all rack sets of torus {dims} checked ({done} so far)")
    for _ in range(samples):
        k = int(rng.integers(2, EXACT_LIMIT + 1))
        yield PAPER_DIMS, paper.dist, [int(r) for r in rng.choice(paper.n, size=k, replace=False)]
    outcome.say(progress, f"ring-exact: {samples} sampled sets on {PAPER_DIMS} checked")


def check_ring_exact(seed: int = 0, samples: int = 300, nn_samples: int = 200,
                     exhaustive_dims: Sequence[Coord] = ((2, 2, 2), (1, 3, 3)),
                     progress: outcome.Progress = None, deadline: float | None = None) -> list[ClaimResult]:
    rng = np.random.default_rng(seed)
    paper = RackCluster.torus(PAPER_DIMS)
    checked, smallest, timed_out = 0, None, False
    for dims, dist, racks in _exact_sets(exhaustive_dims, samples, paper, rng, progress):
        if outcome.passed(deadline):
            timed_out = True
            break
        miss = _tour_miss(dims, dist, racks)
        checked += 1
        if miss is not None and (smallest is None or len(miss["racks"]) < len(smallest["racks"])):
            smallest = miss

    worst, nn_checked = NNWorst(), 0
    for i in range(0 if timed_out else nn_samples):
        if outcome.passed(deadline):
            timed_out = True
            break
        k = int(rng.integers(EXACT_LIMIT + 1, 13))
        racks = _sample_set(paper, k, rng, compact=bool(i % 2))
        _, nn = ring_order(racks, paper.dist)
        opt, _ = held_karp(paper.dist[np.ix_(racks, racks)])
        nn_checked += 1
        if nn / opt > worst.ratio:
            worst = NNWorst(nn / opt, {"dims": list(PAPER_DIMS), "racks": racks, "nn_cost": int(nn),
                                       "optimum": int(opt)})
    if not timed_out:
        outcome.say(progress, f"ring-exact: {nn_samples} sets of 9–12 racks, worst NN/optimal {worst.ratio:.3f}")

    bounds = {"exhaustive_dims": [list(d) for d in exhaustive_dims], "max_racks_exact": EXACT_LIMIT,
              "samples": samples, "sample_dims": list(PAPER_DIMS), "nn_samples": nn_samples,
              "nn_racks": [EXACT_LIMIT + 1, 12], "seed": seed}
    stats = {"rack_sets_checked": checked, "nn_worst_ratio": round(worst.ratio, 4), "nn_worst_instance": worst.instance}
    if smallest is not None:
        return [ClaimResult("ring-exact", Verdict.VIOLATED, f"ring order not optimal on {smallest['racks']}",
                            bounds, stats, {**envelope("ring-order", "ring-exact"), **smallest})]
    if timed_out:
        exhaustive = sum(math.comb(int(np.prod(d)), k) for d in exhaustive_dims
                         for k in range(1, min(EXACT_LIMIT, int(np.prod(d))) + 1))
        return [ClaimResult("ring-exact", Verdict.INCONCLUSIVE,
                            f"time limit hit after {checked + nn_checked} of the {exhaustive + samples + nn_samples} "
                            f"instances ({exhaustive} exhaustive and {samples} sampled rack sets of ≤ {EXACT_LIMIT} "
                            f"racks, {nn_samples} nearest-neighbour sets of 9–12 racks)", bounds, stats)]
    return [ClaimResult("ring-exact", Verdict.HOLDS,
                        f"ring order optimal on all {checked} rack sets of ≤ {EXACT_LIMIT} racks; "
                        f"worst nearest-neighbour/optimal for 9–12 racks: {worst.ratio:.3f}", bounds, stats)]


def _sample_set(cluster: RackCluster, k: int, rng: np.random.Generator, compact: bool) -> list[int]:
    """k random racks; ``compact`` grows the set from a seed by random nearby racks (the shape a
    locality-aware selector produces), else uniform over the torus."""
    if not compact:
        return sorted(int(r) for r in rng.choice(cluster.n, size=k, replace=False))
    chosen = [int(rng.integers(cluster.n))]
    while len(chosen) < k:
        near = cluster.dist[chosen].min(axis=0)
        pool = np.flatnonzero((near > 0) & (near <= 2))
        chosen.append(int(rng.choice(pool)))
    return sorted(chosen)


def replay_ring_exact(counterexample: Record) -> tuple[outcome.Match, list[str]]:
    """Re-run a ring-exact counterexample: (match, report lines)."""
    dims, racks = tuple(counterexample["dims"]), [int(r) for r in counterexample["racks"]]
    dist = RackCluster.torus(dims).dist
    order, cost = ring_order(racks, dist)
    opt, _ = held_karp(dist[np.ix_(racks, racks)])
    lines = [f"torus {dims}, racks {racks}: ring order {list(order)} costs {cost}, minimum tour {opt}"]
    return (outcome.Match.OPTIMAL if cost == opt else outcome.Match.SUBOPTIMAL), lines
