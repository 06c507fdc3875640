"""RingStitch (seed 004, §IV), variant ``literal``.

Per job of D chips (§IV-A, Figure 2):
1. rack-local best-fit: the rack with the smallest residual ≥ D (ties: smaller id);
2. defer if the aggregate residual is < D;
3. otherwise four greedy candidate generators over racks with positive residual (§IV-B), each
   stopping once its selected capacity reaches D: small-fragment-first, fewest-racks-first,
   best-fit, local-neighbour-first; infeasible and duplicate rack sets are dropped;
4. each candidate gets a fragment-first allocation (racks in increasing residual, §IV-C) and the
   shared ring order (heuristics/rack/ring_order.py);
5. the candidate with the lexicographically smallest (racks, ring cost, fragmentation cost) wins;
   a full tie goes to the earlier generator in the order above.

Ambiguities and the readings chosen are listed in docs/ringstitch.md; the open definitions
(fragmentation penalty, ring-order exact limit, generator set) are constructor parameters.
The candidate machinery is shared with the baselines (heuristics/rack/ring_baselines.py), which differ
only in which racks are eligible, which generators run and what the score is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Iterable, Iterator, Sequence

import numpy as np

from heuristics.rack.racks import (FragmentationPenalty, RackCluster, RackPlacement, Residual, check_demand,
                                   fragmentation_cost)
from heuristics.rack.ring_order import EXACT_LIMIT, ring_order

Generator = Callable[[np.ndarray, int, np.ndarray, np.ndarray], "tuple[int, ...] | None"]


def _take_until(order: np.ndarray, residual: np.ndarray, demand: int) -> tuple[int, ...] | None:
    """Shortest prefix of ``order`` whose residuals reach ``demand`` (None if the whole order
    does not)."""
    cum = np.cumsum(residual[order])
    if len(cum) == 0 or cum[-1] < demand:
        return None
    stop = int(np.searchsorted(cum, demand)) + 1
    return tuple(order[:stop].tolist())


def _by_residual(residual: np.ndarray, eligible: np.ndarray, descending: bool) -> np.ndarray:
    """Positions in ``eligible`` (ascending rack ids) by residual, ties to the smaller id: a
    stable sort keeps the ids' order among equal residuals."""
    res = residual[eligible]
    return np.argsort(-res if descending else res, kind="stable")


def small_fragment_first(residual: np.ndarray, demand: int, eligible: np.ndarray,
                         dist: np.ndarray) -> tuple[int, ...] | None:
    """Smallest residual blocks first (ties: smaller id)."""
    return _take_until(eligible[_by_residual(residual, eligible, False)], residual, demand)


def fewest_racks_first(residual: np.ndarray, demand: int, eligible: np.ndarray,
                       dist: np.ndarray) -> tuple[int, ...] | None:
    """Largest residual blocks first (ties: smaller id)."""
    return _take_until(eligible[_by_residual(residual, eligible, True)], residual, demand)


def best_fit(residual: np.ndarray, demand: int, eligible: np.ndarray,
             dist: np.ndarray) -> tuple[int, ...] | None:
    """Greedy close fit to the remaining need R: the smallest residual ≥ R if one exists (done),
    else the largest residual (the closest fit from below); ties to the smaller id. Not a
    subset-sum solve (§IV-B)."""
    # The loop takes the largest residual (ties: smaller id) while none fits the remaining need,
    # then the smallest fitting one; so the picks before the last are a prefix of the
    # descending order, and only the last pick needs a search.
    desc = eligible[_by_residual(residual, eligible, True)]
    res = residual[desc]
    need = demand - (np.cumsum(res) - res)  # need before pick t
    fits = res >= need
    if not fits.any():
        return None
    t = int(fits.argmax())
    rest, left = desc[t:], res[t:]
    ok = np.flatnonzero(left >= need[t])
    last = ok[np.lexsort((rest[ok], left[ok]))[0]]
    return tuple(desc[:t].tolist()) + (int(rest[last]),)


def local_neighbour_first(residual: np.ndarray, demand: int, eligible: np.ndarray,
                          dist: np.ndarray) -> tuple[int, ...] | None:
    """Seed at the largest residual (ties: smaller id), then repeatedly add the eligible rack
    nearest (in hops) to any selected rack; ties to larger residual, then smaller id."""
    if len(eligible) == 0:
        return None
    m = len(eligible)
    # one integer key per rack: hops first, then the (larger residual, smaller id) rank; the key
    # of min(hops) is the min of the keys, so each pick updates it with one row
    by_rank = _by_residual(residual, eligible, True)
    rank = np.empty(m, dtype=np.int64)
    rank[by_rank] = np.arange(m)
    seed = int(by_rank[0])
    res = residual[eligible].tolist()
    chosen = [seed]
    key = dist[eligible[seed], eligible] * m + rank
    key[seed] = _TAKEN
    got = res[seed]
    while got < demand and len(chosen) < m:
        j = int(key.argmin())
        chosen.append(j)
        got += res[j]
        np.minimum(key, dist[eligible[j], eligible] * m + rank, out=key)
        key[chosen] = _TAKEN
    return tuple(eligible[chosen].tolist()) if got >= demand else None


_TAKEN = np.iinfo(np.int64).max


GENERATORS: dict[str, Generator] = {
    "small-fragment-first": small_fragment_first,
    "fewest-racks-first": fewest_racks_first,
    "best-fit": best_fit,
    "local-neighbour-first": local_neighbour_first,
}
GENERATOR_NAMES = tuple(GENERATORS)


def fill_in_order(residual: np.ndarray, order: Sequence[int] | np.ndarray, demand: int
                  ) -> tuple[tuple[int, int], ...] | None:
    """Take chips from the racks in ``order`` until D is met; racks past that point receive no
    chip and are not part of the allocation. None if the racks hold fewer than D chips."""
    ids = np.asarray(order, dtype=np.int64)
    room = residual[ids]
    cum = np.cumsum(room)
    if len(cum) == 0 or cum[-1] < demand:
        return None
    stop = int(np.searchsorted(cum, demand)) + 1  # the prefix the loop in _fill walks
    return _fill(zip(ids[:stop].tolist(), room[:stop].tolist()), demand)


def _fill(room: Iterable[tuple[int, int]], demand: int) -> tuple[tuple[int, int], ...] | None:
    """:func:`fill_in_order` over (rack, residual) pairs as plain ints."""
    alloc = []
    need = demand
    for r, free in room:
        if need == 0:
            break
        take = min(free, need)
        alloc.append((r, take))
        need -= take
    return None if need else tuple(alloc)


def fragment_first(residual: np.ndarray | list[int], racks: Sequence[int], demand: int
                   ) -> tuple[tuple[int, int], ...]:
    """Fill racks in increasing residual (ties: smaller id) until D is met (§IV-C)."""
    ids = [int(r) for r in racks]
    alloc = _fill(((r, v) for v, r in sorted((int(residual[r]), r) for r in ids)), demand)
    if alloc is None:
        raise ValueError(f"racks {tuple(racks)} hold fewer than {demand} chips")
    return alloc


def placed(cluster: RackCluster, residual: np.ndarray, alloc: tuple[tuple[int, int], ...],
           table: Sequence[float], exact_limit: int, source: str) -> RackPlacement:
    """An allocation with the shared ring order over its racks and its two costs."""
    ring, cost = ring_order([r for r, _ in alloc], cluster.dist, exact_limit)
    return RackPlacement(alloc, ring, cost, fragmentation_cost(residual, alloc, table), source)


def evaluate(cluster: RackCluster, residual: np.ndarray, demand: int, racks: Sequence[int],
             table: Sequence[float], exact_limit: int, source: str) -> RackPlacement:
    """Fragment-first allocation + shared ring order + costs of one candidate rack set."""
    return placed(cluster, residual, fragment_first(residual, racks, demand), table, exact_limit, source)


def _one_rack(residual: np.ndarray, demand: int, table: Sequence[float], r: int) -> RackPlacement | None:
    """All D chips on rack ``r``, or None if it does not hold D (then no rack does: callers pick
    ``r`` among the racks with the most room first)."""
    if residual[r] < demand:
        return None
    return RackPlacement(((r, demand),), (r,), 0, float(table[int(residual[r]) - demand]), "local")


def local_best_fit(residual: np.ndarray, demand: int, table: Sequence[float]) -> RackPlacement | None:
    """The rack with the smallest residual ≥ D (ties: smaller id), or None."""
    # Racks below D are lifted above every residual, so argmin (first minimum: smaller id) is the
    # best fit whenever one rack holds D, and a rack that does not hold D otherwise.
    return _one_rack(residual, demand, table, int(np.argmin(np.where(residual >= demand, residual, _ABOVE))))


def local_first_fit(residual: np.ndarray, demand: int, table: Sequence[float]) -> RackPlacement | None:
    """The smallest-id rack with residual ≥ D, or None."""
    return _one_rack(residual, demand, table, int(np.argmax(residual >= demand)))


_ABOVE = np.iinfo(np.int64).max


def _rack_sets(residual: np.ndarray, demand: int, eligible: np.ndarray, generators: Sequence[str],
               dist: np.ndarray) -> Iterator[tuple[str, tuple[int, ...]]]:
    """(generator name, rack set) of the named generators in order, infeasible and repeated rack
    sets dropped (the earlier generator keeps a set)."""
    seen: set[frozenset[int]] = set()
    for name in generators:
        racks = GENERATORS[name](residual, demand, eligible, dist)
        if racks is None or frozenset(racks) in seen:
            continue
        seen.add(frozenset(racks))
        yield name, racks


def stitch_candidates(cluster: RackCluster, residual: np.ndarray, demand: int,
                      eligible: np.ndarray, generators: Sequence[str], table: Sequence[float],
                      exact_limit: int) -> list[RackPlacement]:
    """Evaluated, de-duplicated candidates of the named generators, in generator order."""
    return [evaluate(cluster, residual, demand, racks, table, exact_limit, name)
            for name, racks in _rack_sets(residual, demand, eligible, generators, cluster.dist)]


def best_candidate(cluster: RackCluster, residual: np.ndarray, demand: int, eligible: np.ndarray,
                   generators: Sequence[str], table: Sequence[float], exact_limit: int) -> RackPlacement | None:
    """The lexicographically smallest of :func:`stitch_candidates` (a full tie: the earlier
    generator), or None if there is none. Only the candidates allocating the fewest racks get a
    ring order: any other loses on the key's first element whatever its ring cost (§IV-C step 5),
    so skipping its ring search changes no decision and saves the most expensive step."""
    room = residual.tolist()  # plain ints: the allocations index it a few times per rack
    allocs = [(fragment_first(room, racks, demand), name)
              for name, racks in _rack_sets(residual, demand, eligible, generators, cluster.dist)]
    if not allocs:
        return None
    fewest = min(len(alloc) for alloc, _ in allocs)
    return min((placed(cluster, residual, alloc, table, exact_limit, name)
                for alloc, name in allocs if len(alloc) == fewest), key=lambda p: p.key)


def as_residual(cluster: RackCluster, residual: Residual, demand: int) -> np.ndarray:
    """The residuals as an int array, after the cheap input checks every policy call makes (shape
    and demand; the per-rack range check is ``racks.check_residual``, too slow per event)."""
    check_demand(demand)
    arr = np.asarray(residual, dtype=np.int64)
    if arr.shape != (cluster.n,):
        raise ValueError(f"residual: {arr.shape} values for {cluster.n} racks")
    return arr


Stitch = Callable[[np.ndarray, Sequence[float]], "RackPlacement | None"]


def local_else_stitch(cluster: RackCluster, residual: Residual, demand: int,
                      penalty: FragmentationPenalty, stitch: Stitch) -> RackPlacement | None:
    """Steps 1-2 of §IV-A, shared by RingStitch and the stitching baselines: the rack-local
    best-fit if one rack holds D; defer if the aggregate residual is < D; otherwise
    ``stitch(residuals, penalty table)`` (the policy's own multi-rack rule)."""
    res = as_residual(cluster, residual, demand)
    table = penalty.table(cluster.capacity)
    local = local_best_fit(res, demand, table)
    if local is not None:
        return local
    if int(res.sum()) < demand:
        return None
    return stitch(res, table)


@dataclass(frozen=True)
class RingStitch:
    """The paper's scheduler; ``place`` is a pure function of the residuals."""

    penalty: FragmentationPenalty = FragmentationPenalty()
    exact_limit: int = EXACT_LIMIT
    generators: tuple[str, ...] = GENERATOR_NAMES
    name: ClassVar[str] = "ringstitch"

    def __post_init__(self) -> None:
        unknown = [g for g in self.generators if g not in GENERATORS]
        if unknown or not self.generators:
            raise ValueError(f"generators: unknown {unknown!r}; known: {', '.join(GENERATOR_NAMES)}")

    def candidates(self, cluster: RackCluster, residual: Residual, demand: int) -> list[RackPlacement]:
        res = as_residual(cluster, residual, demand)
        return stitch_candidates(cluster, res, demand, np.flatnonzero(res > 0), self.generators,
                                 self.penalty.table(cluster.capacity), self.exact_limit)

    def place(self, cluster: RackCluster, residual: Residual, demand: int) -> RackPlacement | None:
        def stitch(res: np.ndarray, table: Sequence[float]) -> RackPlacement | None:
            return best_candidate(cluster, res, demand, np.flatnonzero(res > 0), self.generators, table,
                                  self.exact_limit)

        return local_else_stitch(cluster, residual, demand, self.penalty, stitch)
