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
def _tours(k: int) -> tuple[np.ndarray, np.ndarray]:
    """All closed tours over positions 0..k−1 starting at 0, as a ((k−1)!, k) index array, and
    each tour's k legs as indices into a flattened k×k distance matrix (position·k + successor)."""
    rest = np.array(list(permutations(range(1, k))), dtype=np.int64).reshape(-1, k - 1)
    tours = np.hstack([np.zeros((len(rest), 1), dtype=np.int64), rest])
    return tours, tours * k + np.roll(tours, -1, axis=1)


def enumerate_ring(racks: Sequence[int], dist: np.ndarray) -> tuple[tuple[int, ...], int]:
    """Exact minimum closed tour by enumerating every permutation (first minimum wins)."""
    if len(racks) < 4:  # every order of ≤ 3 racks is the same closed tour: the first, the sorted one
        order = tuple(sorted(int(r) for r in racks))
        return order, sum(int(dist[a, b]) for a, b in zip(order, order[1:] + order[:1])) if len(order) > 1 else 0
    ids = np.array(sorted(racks), dtype=np.int64)
    tours, legs = _tours(len(ids))
    costs = dist[ids[:, None], ids].ravel()[legs].sum(axis=1)
    best = int(np.argmin(costs))
    return tuple(int(r) for r in ids[tours[best]]), int(costs[best])


def nearest_neighbour_ring(racks: Sequence[int], dist: np.ndarray) -> tuple[tuple[int, ...], int]:
    """Nearest-neighbour tour from the smallest rack id (ties to the smaller id)."""
    ids = sorted(int(r) for r in racks)
    sub = dist[np.ix_(ids, ids)].tolist()
    left = list(range(1, len(ids)))
    order, cost = [0], 0
    while left:
        row = sub[order[-1]]
        nxt = min(left, key=row.__getitem__)  # left ascends: the first minimum is the smaller id
        cost += row[nxt]
        left.remove(nxt)
        order.append(nxt)
    if len(ids) > 1:
        cost += sub[order[-1]][0]
    return tuple(ids[i] for i in order), int(cost)


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
