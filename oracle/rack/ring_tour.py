"""Minimum closed tour (ring) over a small set of racks — two independent exact methods.

Used as ground truth for RingStitch's ring ordering (seed 004, §IV-C: exact for ≤ 8 racks,
nearest neighbour beyond). The input is a symmetric non-negative distance matrix over the racks of
the set (index i of the matrix = i-th rack); a one-rack ring costs 0, a two-rack ring counts the
link in both directions (§III-C closed-tour convention).

- :func:`held_karp`: Held–Karp dynamic programme over subsets, O(2^k k²), exact;
- :func:`cp_sat_tour`: a CP-SAT model with one ``AddCircuit`` constraint, returning a
  :class:`~oracle.result.Certificate` (objective the tour length, witness the :data:`Tour`).
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from oracle.result import Certificate, Status, cpsat_status
from oracle import stopping

Tour = tuple[int, ...]  # a closed tour: the racks in visiting order, starting at 0; () for none

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


def cp_sat_tour(dist: Sequence[Sequence[int]] | np.ndarray, time_limit: float = 10.0,
                workers: int = 1) -> Certificate[float, Tour]:
    """Minimum closed tour as a CP-SAT circuit model (integer distances). The certificate's
    witness is the incumbent tour (() without one); its bound is CP-SAT's proven lower bound."""
    from ortools import __version__ as ortools_version  # type: ignore[attr-defined]  # not in its stubs
    from ortools.sat.python import cp_model

    d = _matrix(dist)
    if not np.array_equal(d, np.round(d)):
        raise ValueError("dist: CP-SAT tour needs integer distances")
    k = len(d)
    start = time.perf_counter()
    if k < 3:
        cost = tour_length(range(k), d)
        return Certificate(Status.OPTIMAL, cost, cost, tuple(range(k)), "closed form", "1",
                           time.perf_counter() - start)
    model = cp_model.CpModel()
    lits = {(i, j): model.new_bool_var(f"x{i}_{j}") for i in range(k) for j in range(k) if i != j}
    model.add_circuit([(i, j, lit) for (i, j), lit in lits.items()])
    model.minimize(sum(int(d[i, j]) * lit for (i, j), lit in lits.items()))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    status = cpsat_status(solver.status_name(stopping.solve(solver, model)))
    wall = time.perf_counter() - start
    if status is Status.INFEASIBLE:
        return Certificate(status, None, None, (), "cp-sat", ortools_version, wall)
    if status is Status.UNKNOWN:
        return Certificate(status, None, solver.best_objective_bound, (), "cp-sat", ortools_version, wall)
    succ = {i: j for (i, j), lit in lits.items() if solver.value(lit)}
    order = [0]
    while len(order) < k:
        order.append(succ[order[-1]])
    return Certificate(status, solver.objective_value, solver.best_objective_bound, tuple(order), "cp-sat",
                       ortools_version, wall)
