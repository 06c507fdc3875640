"""Minimum closed tour (ring) over a small set of racks — two independent exact methods.

Used as ground truth for RingStitch's ring ordering (seed 004, §IV-C: exact for ≤ 8 racks,
nearest neighbour beyond). The input is a symmetric non-negative distance matrix over the racks of
the set (index i of the matrix = i-th rack); a one-rack ring costs 0, a two-rack ring counts the
link in both directions (§III-C closed-tour convention).

- :func:`held_karp`: Held–Karp dynamic programme over subsets, O(2^k k²), exact;
- :func:`cp_sat_tour`: a CP-SAT model with one ``AddCircuit`` constraint, returning a certificate
  (status optimal / feasible / unknown, objective, proven bound, wall time).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np

HELD_KARP_LIMIT = 16  # 2^16·16² states: still well under a second in numpy


def _matrix(dist: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    d = np.asarray(dist)
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] == 0:
        raise ValueError(f"dist: need a non-empty square matrix, got shape {d.shape}")
    if (d < 0).any() or not np.array_equal(d, d.T):
        raise ValueError("dist: need a symmetric non-negative matrix")
    return d


def tour_length(order: Sequence[int], dist: np.ndarray) -> float:
    """Closed-tour length visiting ``order`` (0 for one rack, 2·d for two)."""
    if len(order) < 2:
        return 0
    idx = np.asarray(order)
    return dist[idx, np.roll(idx, -1)].sum().item()


def held_karp(dist: Sequence[Sequence[float]] | np.ndarray) -> tuple[float, tuple[int, ...]]:
    """Exact minimum closed tour by the Held–Karp DP; returns (cost, order starting at 0)."""
    d = _matrix(dist)
    k = len(d)
    if k > HELD_KARP_LIMIT:
        raise ValueError(f"dist: Held–Karp limited to {HELD_KARP_LIMIT} racks, got {k}")
    if k < 3:
        return tour_length(range(k), d), tuple(range(k))
    # best[S, j]: shortest path from 0 through the set S (of racks 1..k−1, bitmask) ending at j.
    m = k - 1
    inf = np.inf
    best = np.full((1 << m, m), inf)
    parent = np.full((1 << m, m), -1, dtype=np.int64)
    for j in range(m):
        best[1 << j, j] = d[0, j + 1]
    inner = d[1:, 1:]
    bits = 1 << np.arange(m)
    cols = np.arange(m)
    for s in range(1, 1 << m):
        row = best[s]
        if not np.isfinite(row).any():
            continue
        via = row[:, None] + inner  # via[i, j]: path ending at i, extended to j
        arg = np.argmin(via, axis=0)
        val = via[arg, cols]
        out = (s & bits) == 0
        js = cols[out]
        targets = s | bits[js]
        better = val[js] < best[targets, js]
        best[targets[better], js[better]] = val[js][better]
        parent[targets[better], js[better]] = arg[js][better]
    full = (1 << m) - 1
    closing = best[full] + d[1:, 0]
    j = int(np.argmin(closing))
    cost = closing[j].item()
    order = []
    s = full
    while j >= 0:
        order.append(j + 1)
        s, j = s & ~(1 << j), int(parent[s, j])
    return cost, (0,) + tuple(reversed(order))


@dataclass(frozen=True)
class TourCertificate:
    """Result of an exact tour solve: ``status`` optimal / feasible / unknown, the incumbent
    ``cost`` and ``order`` (None when unknown without incumbent), the proven lower ``bound``."""

    status: str
    cost: float | None
    order: tuple[int, ...] | None
    bound: float
    wall_time: float
    solver: str


def cp_sat_tour(dist: Sequence[Sequence[int]] | np.ndarray, time_limit: float = 10.0,
                workers: int = 1) -> TourCertificate:
    """Minimum closed tour as a CP-SAT circuit model (integer distances)."""
    from ortools.sat.python import cp_model
    import ortools

    d = _matrix(dist)
    if not np.array_equal(d, np.round(d)):
        raise ValueError("dist: CP-SAT tour needs integer distances")
    solver_name = f"ortools-cp-sat {ortools.__version__}"
    k = len(d)
    start = time.perf_counter()
    if k < 3:
        cost = tour_length(range(k), d)
        return TourCertificate("optimal", cost, tuple(range(k)), cost, time.perf_counter() - start, "closed form")
    model = cp_model.CpModel()
    arcs, lits = [], {}
    for i in range(k):
        for j in range(k):
            if i != j:
                lit = model.NewBoolVar(f"x{i}_{j}")
                lits[i, j] = lit
                arcs.append((i, j, lit))
    model.AddCircuit(arcs)
    model.Minimize(sum(int(d[i, j]) * lit for (i, j), lit in lits.items()))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    status = solver.Solve(model)
    wall = time.perf_counter() - start
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return TourCertificate("unknown", None, None, solver.BestObjectiveBound(), wall, solver_name)
    succ = {i: j for (i, j), lit in lits.items() if solver.Value(lit)}
    order = [0]
    while len(order) < k:
        order.append(succ[order[-1]])
    return TourCertificate("optimal" if status == cp_model.OPTIMAL else "feasible",
                           solver.ObjectiveValue(), tuple(order), solver.BestObjectiveBound(), wall,
                           solver_name)
