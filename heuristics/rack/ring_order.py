"""Ring ordering shared by every cross-rack policy (seed 004, §IV-C and §V-B).

"For up to eight racks, RingStitch enumerates ring permutations for an exact minimum; larger sets
use a feasible nearest-neighbor order that is not necessarily optimal."

Readings (docs/ringstitch.md):
- enumeration fixes the smallest rack id first (a closed tour has no start) and scans the other
  (k−1)! orders in lexicographic order; the first minimum wins;
- nearest neighbour starts at the smallest rack id and always moves to the closest unvisited rack,
  ties to the smaller id.
The enumeration is literal (all permutations, vectorised with numpy), deliberately *not* a DP, so
the ring-exact claim compares it with an independent method (oracle/rack/ring_tour.py).
"""
from __future__ import annotations

from functools import lru_cache
from itertools import permutations
from typing import Sequence

import numpy as np

EXACT_LIMIT = 8  # §IV-C: exact enumeration up to eight racks


@lru_cache(maxsize=None)
def _tours(k: int) -> np.ndarray:
    """All closed tours over positions 0..k−1 starting at 0, as a ((k−1)!, k) index array."""
    rest = np.array(list(permutations(range(1, k))), dtype=np.int64).reshape(-1, k - 1)
    return np.hstack([np.zeros((len(rest), 1), dtype=np.int64), rest])


def enumerate_ring(racks: Sequence[int], dist: np.ndarray) -> tuple[tuple[int, ...], int]:
    """Exact minimum closed tour by enumerating every permutation (first minimum wins)."""
    ids = np.array(sorted(racks), dtype=np.int64)
    if len(ids) < 3:
        order = tuple(int(r) for r in ids)
        return order, int(2 * dist[ids[0], ids[-1]]) if len(ids) == 2 else 0
    tours = ids[_tours(len(ids))]
    costs = dist[tours, np.roll(tours, -1, axis=1)].sum(axis=1)
    best = int(np.argmin(costs))
    return tuple(int(r) for r in tours[best]), int(costs[best])


def nearest_neighbour_ring(racks: Sequence[int], dist: np.ndarray) -> tuple[tuple[int, ...], int]:
    """Nearest-neighbour tour from the smallest rack id (ties to the smaller id)."""
    left = sorted(racks)
    order = [left.pop(0)]
    while left:
        here = order[-1]
        nxt = min(left, key=lambda r: (dist[here, r], r))
        left.remove(nxt)
        order.append(nxt)
    idx = np.asarray(order)
    return tuple(order), int(dist[idx, np.roll(idx, -1)].sum()) if len(order) > 1 else 0


def ring_order(racks: Sequence[int], dist: np.ndarray,
               exact_limit: int = EXACT_LIMIT) -> tuple[tuple[int, ...], int]:
    """The shared procedure: exact for ≤ ``exact_limit`` racks, nearest neighbour beyond."""
    if not racks:
        raise ValueError("racks: a ring needs at least one rack")
    if len(set(racks)) != len(racks):
        raise ValueError(f"racks: repeated rack in {tuple(racks)}")
    if len(racks) <= exact_limit:
        return enumerate_ring(racks, dist)
    return nearest_neighbour_ring(racks, dist)
