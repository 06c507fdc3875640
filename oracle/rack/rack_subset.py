"""Lexicographically optimal rack subset + ring + allocation for one job (seed 004, §IV-C).

Given residual capacities r_i, a demand D, a symmetric metric ``dist`` between racks and a
fragmentation-penalty table f (f[l] = penalty of a selected rack left with l chips; the same table
RingStitch scores with), find the placement minimising, in this order,

1. the number of racks k (each selected rack gets ≥ 1 chip),
2. the closed-tour ring cost of the selected racks (two racks count both directions),
3. the fragmentation cost Σ_i f(r_i − a_i) over the selected racks.

Method (exact, exploits the structure):
- level 1 is closed form: k* = the smallest k whose k largest residuals reach D; only racks with
  positive residual matter;
- level 2+3 is a depth-first branch and bound over k*-subsets, racks taken in decreasing-residual
  order (each subset enumerated once). A partial set P is extended by rack q only if
  (a) capacity: r(P) + r_q + the next largest residuals can still reach D, and
  (b) the exact tour of P ∪ {q} (computed for all q at once from the Hamiltonian paths of P) is
      ≤ the incumbent's ring cost — a valid bound because a closed tour of a superset is never
      shorter than one of a subset under a metric (shortcutting);
  (c) on ring-cost ties, fragmentation: a set with excess E = Σr − D > 0 leaves some rack with
      1..E chips, so it costs at least min f[1..E] (E ranges between the smallest and largest
      completions' excess);
- level 3 for a fixed set is a min-plus knapsack over leftovers l_i ∈ [0, r_i − 1] with
  Σ l_i = Σ r_i − D (so every selected rack gets at least one chip).
The initial incumbent is the k* largest residuals (always feasible). The answer is a
:class:`~oracle.result.Certificate` whose objective and bound are :data:`LexCost` triples and whose
witness is a :class:`RackChoice`. If the time limit is hit the certificate says ``feasible`` and
reports the incumbent and the best proven lower bound (likewise after ``node_limit`` expanded
nodes); a job needing more than ``MAX_RACKS`` racks
is ``unknown`` outright.
"""
from __future__ import annotations

import time
from functools import lru_cache
from itertools import permutations
from typing import NamedTuple, Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from oracle.rack.ring_tour import held_karp
from oracle.result import Certificate, Status

SOLVER = "rack_subset branch-and-bound"
SOLVER_VERSION = "1"
MAX_RACKS = 12  # beyond this the per-node subset DP (m·2^m·m) gets too large: answer unknown


LexCost = tuple[int, float, float]  # (racks, ring cost, fragmentation cost), compared lexicographically


class RackChoice(NamedTuple):
    """The witness of a rack-subset certificate: the incumbent's ``alloc`` = ((rack, chips), ...)
    and ``ring`` = closed-tour order (both () without an incumbent), and ``nodes``, how many
    branch-and-bound nodes the search expanded (its cost, not part of the evidence)."""

    alloc: tuple[tuple[int, int], ...]
    ring: tuple[int, ...]
    nodes: int


def min_racks(residual: Sequence[int] | np.ndarray, demand: int) -> int | None:
    """Level 1: the fewest racks whose residuals can reach ``demand`` (None if none can)."""
    cum = np.cumsum(np.sort(np.asarray(residual, dtype=np.int64))[::-1])
    if len(cum) == 0 or cum[-1] < demand:
        return None
    return int(np.searchsorted(cum, demand)) + 1


def min_fragmentation(res: Sequence[int], demand: int, table: Sequence[float]) -> tuple[float, tuple[int, ...]]:
    """Level 3 for a fixed rack set: min Σ f(l_i) s.t. Σ (r_i − l_i) = D, 0 ≤ l_i ≤ r_i − 1.
    Returns (cost, chips per rack). Min-plus convolution over racks (exact)."""
    excess = int(sum(res)) - demand
    if excess < 0 or demand < len(res):
        raise ValueError(f"racks with residuals {tuple(res)} cannot give {demand} chips, ≥1 each")
    f = np.asarray(table, dtype=float)
    # best[e] = min cost of leftovers summing to e over the racks so far; picks[i][e] = l_i.
    best = np.full(excess + 1, np.inf)
    best[0] = 0.0
    picks = []
    for r in res:
        width = min(int(r) - 1, excess)
        padded = np.concatenate([np.full(width, np.inf), best])
        # window[e, l] = best[e − l] + f[l]
        window = sliding_window_view(padded, width + 1)[:, ::-1] + f[: width + 1]
        pick = np.argmin(window, axis=1)
        best = window[np.arange(excess + 1), pick]
        picks.append(pick)
    if not np.isfinite(best[excess]):
        raise ValueError(f"no allocation of {demand} chips over residuals {tuple(res)}")
    leftovers = []
    e = excess
    for pick in reversed(picks):
        l = int(pick[e])
        leftovers.append(l)
        e -= l
    leftovers.reverse()
    return float(best[excess]), tuple(int(r) - l for r, l in zip(res, leftovers))


@lru_cache(maxsize=None)
def _paths(m: int) -> np.ndarray:
    """All orderings of m positions (open paths), as an (m!, m) index array."""
    return np.array(list(permutations(range(m))), dtype=np.int64).reshape(-1, m)


PERMUTATION_LIMIT = 6  # up to 6! = 720 orders enumerate faster than the subset DP runs


def _path_costs(members: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """H[a, b] = shortest path from members[a] to members[b] visiting every member once
    (inf on the diagonal). Enumeration for small sets, a Held–Karp DP over subsets beyond."""
    m = len(members)
    h = np.full((m, m), np.inf)
    if m <= PERMUTATION_LIMIT:
        order = _paths(m)
        paths = members[order]
        cost = dist[paths[:, :-1], paths[:, 1:]].sum(axis=1)
        np.minimum.at(h, (order[:, 0], order[:, -1]), cost)
    else:
        dd = dist[np.ix_(members, members)].astype(float)
        best = np.full((m, 1 << m, m), np.inf)  # [start, visited set, end]
        best[np.arange(m), 1 << np.arange(m), np.arange(m)] = 0.0
        bits = 1 << np.arange(m)
        for s in range(1, 1 << m):
            ext = (best[:, s, :, None] + dd[None, :, :]).min(axis=1)  # [start, next]
            for j in np.flatnonzero((s & bits) == 0):
                t = s | int(bits[j])
                best[:, t, j] = np.minimum(best[:, t, j], ext[:, j])
        h = best[:, (1 << m) - 1, :]
    if m > 1:
        np.fill_diagonal(h, np.inf)
    return h


def _tours_with(members: np.ndarray, cands: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Exact min closed tour of members ∪ {c} for every candidate c at once: close the best
    Hamiltonian path of ``members`` through c."""
    if len(members) == 1:
        return 2 * dist[members[0], cands]
    h = _path_costs(members, dist)
    to_c = dist[np.ix_(members, cands)]
    return (h[:, :, None] + to_c[:, None, :] + to_c[None, :, :]).min(axis=(0, 1))


def lex_optimal_subset(residual: Sequence[int] | np.ndarray, demand: int, dist: Sequence[Sequence[float]] | np.ndarray,
                       table: Sequence[float], time_limit: float = 10.0,
                       node_limit: int | None = None) -> Certificate[LexCost, RackChoice]:
    """The lexicographic optimum (racks, ring cost, fragmentation cost); see the module doc.
    ``node_limit`` stops the search like ``time_limit`` but after a fixed number of expanded
    nodes, so a caller that must be reproducible (a scheduler in a simulation) gets the same
    answer on every machine."""
    start = time.perf_counter()
    d = np.asarray(dist)
    res_all = np.asarray(residual, dtype=np.int64)
    if d.shape != (len(res_all), len(res_all)):
        raise ValueError(f"dist: shape {d.shape} does not match {len(res_all)} residuals")
    if (res_all < 0).any():
        raise ValueError("residual: negative value")
    if demand < 1:
        raise ValueError(f"demand: {demand!r} is not a positive integer")
    if len(table) <= int(res_all.max(initial=0)):
        raise ValueError(f"table: needs an entry for every leftover 0..{int(res_all.max())}")
    if min(table) < 0:
        raise ValueError("table: penalties must be non-negative (the fragmentation bound relies on it)")

    def done(status: Status, objective: LexCost | None, bound: LexCost | None, alloc: tuple[tuple[int, int], ...] = (),
             ring: tuple[int, ...] = (), nodes: int = 0) -> Certificate[LexCost, RackChoice]:
        return Certificate(status, objective, bound, RackChoice(alloc, ring, nodes), SOLVER, SOLVER_VERSION,
                           time.perf_counter() - start)

    k = min_racks(res_all, demand)
    if k is None:
        return done(Status.INFEASIBLE, None, None)
    if k > MAX_RACKS:
        return done(Status.UNKNOWN, None, (k, 0.0, 0.0))
    pos = np.flatnonzero(res_all > 0)
    order = pos[np.lexsort((pos, -res_all[pos]))]  # decreasing residual, ties by id
    r = res_all[order]
    n = len(order)
    prefix = np.concatenate([[0], np.cumsum(r)])

    def finish(members: tuple[int, ...], ring: tuple[int, ...], cost: float
               ) -> tuple[LexCost, tuple[tuple[int, int], ...], tuple[int, ...]]:
        """A candidate (its lexicographic cost, allocation, ring) with its best allocation."""
        frag, chips = min_fragmentation(tuple(int(res_all[m]) for m in members), demand, table)
        return (k, cost, frag), tuple(zip(members, chips)), ring

    if k == 1:
        fits = [int(i) for i in order if res_all[i] >= demand]
        best = min((finish((i,), (i,), 0) for i in fits), key=lambda t: (t[0], t[1]))
        return done(Status.OPTIMAL, best[0], best[0], best[1], best[2], len(fits))

    first = tuple(int(i) for i in order[:k])
    inc_cost = _tour_exact(np.array(first), d)
    incumbent = finish(first, inc_cost[0], inc_cost[1])
    # g[e] = min penalty of one rack left with 1..e chips: with a non-negative table, a set whose
    # excess E = Σr − D is positive has some rack with leftover in 1..E, so its cost is ≥ g[E].
    f = np.asarray(table, dtype=float)
    g = np.concatenate([[0.0], np.minimum.accumulate(f[1:])])
    tail = prefix[n] - prefix[n - np.arange(k + 1)]  # tail[m] = sum of the m smallest residuals

    def frag_bound(excess_min: np.ndarray, excess_max: np.ndarray) -> np.ndarray:
        return np.where(excess_min <= 0, 0.0, g[np.minimum(excess_max, len(g) - 1)])

    def hopeless(tour_lb: float, frag_lb: float) -> bool:
        """No completion can beat the incumbent lexicographically on (ring, fragmentation)."""
        inc_tour, inc_frag = incumbent[0][1], round(incumbent[0][2], 9)
        return tour_lb > inc_tour or (tour_lb == inc_tour and round(frag_lb, 9) >= inc_frag)

    # Each stack entry: (ring lower bound, fragmentation lower bound, positions chosen, increasing).
    stack: list[tuple[float, float, tuple[int, ...]]] = [(0.0, 0.0, (p,)) for p in reversed(range(n - k + 1))]
    nodes = 0
    while stack:
        if time.perf_counter() - start > time_limit or (node_limit is not None and nodes >= node_limit):
            low = min([incumbent[0][1]] + [b for b, _, _ in stack])
            return done(Status.FEASIBLE, incumbent[0], (k, low, 0.0), incumbent[1], incumbent[2], nodes)
        lb, flb, chosen = stack.pop()
        nodes += 1
        if hopeless(lb, flb):
            continue
        need_after = k - len(chosen) - 1  # racks still to pick after the next one
        cands = np.arange(chosen[-1] + 1, n - need_after)
        if len(cands) == 0:
            continue
        base = int(r[list(chosen)].sum())
        cap = prefix[cands + need_after + 1] - prefix[cands] + base
        cands, cap = cands[cap >= demand], cap[cap >= demand]
        if len(cands) == 0:
            continue
        members = order[list(chosen)]
        tours = _tours_with(members, order[cands], d)
        flbs = frag_bound(base + r[cands] + tail[need_after] - demand, cap - demand)
        keep = np.array([not hopeless(t, fl) for t, fl in zip(tours.tolist(), flbs.tolist())], dtype=bool)
        cands, tours, flbs = cands[keep], tours[keep], flbs[keep]
        if need_after == 0:
            for q, t, fl in sorted(zip(cands.tolist(), tours.tolist(), flbs.tolist()), key=lambda x: x[1]):
                if hopeless(t, fl):
                    continue
                rack_set = tuple(int(i) for i in order[list(chosen) + [q]])
                ring, cost = _tour_exact(np.array(rack_set), d)
                cand = finish(rack_set, ring, cost)
                if (cand[0][1], round(cand[0][2], 9)) < (incumbent[0][1], round(incumbent[0][2], 9)):
                    incumbent = cand
            continue
        for i in np.argsort(-tours, kind="stable"):
            stack.append((float(tours[i]), float(flbs[i]), chosen + (int(cands[i]),)))
    return done(Status.OPTIMAL, incumbent[0], incumbent[0], incumbent[1], incumbent[2], nodes)


def _tour_exact(members: np.ndarray, dist: np.ndarray) -> tuple[tuple[int, ...], float]:
    """Exact min closed tour of a small set: every order of the rest after the first member up
    to 8 racks, Held–Karp beyond."""
    if len(members) < 3:
        return tuple(int(m) for m in members), (2 * dist[members[0], members[-1]]).item() if len(members) == 2 else 0
    if len(members) > 8:
        cost, order = held_karp(dist[np.ix_(members, members)])
        return tuple(int(members[i]) for i in order), dist.dtype.type(cost).item()
    rest = members[1:]
    paths = rest[_paths(len(rest))]
    total = (dist[members[0], paths[:, 0]] + dist[paths[:, :-1], paths[:, 1:]].sum(axis=1)
             + dist[paths[:, -1], members[0]])
    arg = int(np.argmin(total))
    return (int(members[0]),) + tuple(int(m) for m in paths[arg]), total[arg].item()
