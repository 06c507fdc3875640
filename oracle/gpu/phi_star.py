"""Exact Φ★ (minimum partial-node count) and the minimum number of nodes in use.

COMPASS-ABS §3.2 defines Φ★(t) = min over feasible packings P of the active instances of ν(P),
the number of partial nodes (non-empty, fewer than G GPUs used). Only the counts n_1..n_G matter,
so Φ★ is a cutting-stock problem with G item types: the configuration (pattern) ILP below has one
integer variable per bin pattern (66 for G = 8) whatever the cluster size N.

    x_p ∈ Z≥0 for every pattern p;   Σ_p p_g x_p = n_g  (g = 1..G);   Σ_p x_p ≤ N
    minimise Σ_{p non-full} x_p      (Φ★)      or      Σ_p x_p      (min nodes in use)

The node limit N is part of the model (the paper's §3 text leaves it implicit; a packing that needs
more than the N nodes of the cluster is not feasible for it). ``n_nodes=None`` drops that row.

Methods (each returns a :class:`~oracle.result.Certificate` whose witness is a
:data:`~oracle.gpu.patterns.PackingWitness`):

* ``*_cpsat``  — the pattern ILP on OR-Tools CP-SAT, one worker, with a greedy packing as a
  hint and the valid cut of :func:`objective_lower_bound`;
* ``*_milp``   — the same model through PuLP's HiGHS interface, with the greedy packing as a MIP
  start (CBC is not used: it was seen to run for minutes on one N = 1024 instance);
* ``*_bruteforce`` — an independent exact search that never looks at patterns: items are placed
  one by one (largest first) into the bins opened so far or a new one, memoised on the multiset of
  bin loads. Exponential; for small multisets only (tests use it as the third opinion);
* :func:`phi_star` / :func:`min_nodes` — memoised fast entry points: an exact dynamic programme
  over count vectors (Pareto front of (nodes used, partial nodes)) for small instances, CP-SAT
  otherwise.

The same generic model (:class:`PackingModel`) also carries *preloaded* bins, whose content is
fixed and which may only receive more items; the paper's residual ILP (Appendix C.3, in
``oracle.gpu.paper_phi``) is this model with the bins of its tentative packing preloaded.

Every solver call has a time limit; a limit that is hit gives status 'feasible' (with the
incumbent and the proven bound) or 'unknown' (no incumbent), never a value passed off as optimal;
where a number is needed, :meth:`~oracle.result.Certificate.proven_value` raises
:class:`~oracle.result.Unproven` instead.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Literal, Sequence

from oracle import highs
from oracle.gpu.patterns import PackingWitness, Pattern, bin_patterns, fill_patterns, load, sizes
from oracle.result import Certificate, Status, cpsat_status
from oracle import stopping

Objective = Literal["partial", "nodes"]

DEFAULT_TIME_LIMIT = 10.0
# The DP is used when the number of sub-multisets Π(n_g + 1) is at most this; measured in
# benchmarks/bench_phi_star.py to stay well below a CP-SAT solve on a cold cache.
DP_STATE_LIMIT = 4096
DP_ITEM_LIMIT = 256  # the DP recurses once per node opened


def check_counts(counts: Sequence[int], n_nodes: int | None, capacity: int) -> tuple[int, ...]:
    """Validate and normalise (counts, N, G); raise ValueError naming the bad field."""
    if capacity < 1:
        raise ValueError(f"capacity={capacity} must be >= 1")
    counts = tuple(counts)
    if len(counts) != capacity:
        raise ValueError(f"counts has {len(counts)} entries, expected n_1..n_{capacity}")
    for g, c in enumerate(counts, start=1):
        if not isinstance(c, int) or c < 0:
            raise ValueError(f"n_{g}={c!r} must be a non-negative integer")
    if n_nodes is not None and (not isinstance(n_nodes, int) or n_nodes < 0):
        raise ValueError(f"n_nodes={n_nodes!r} must be a non-negative integer")
    return counts


def node_cost(used: int, capacity: int, objective: Objective) -> int:
    """Objective contribution of one node using ``used`` GPUs."""
    if objective == "partial":
        return int(0 < used < capacity)
    return int(used > 0)


# --------------------------------------------------------------------------------------------
# The generic pattern model (shared by both solvers and by the paper's residual ILP)


@dataclass(frozen=True)
class PackingModel:
    """Pack ``counts`` into bins: ``preloaded`` bins (load ℓ > 0, multiplicity) that keep their
    content and may receive more items, plus at most ``free_bins`` empty bins (None: no limit)."""

    counts: tuple[int, ...]
    capacity: int
    objective: Objective
    free_bins: int | None = None
    preloaded: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class Column:
    """One variable: how many bins of class ``cls`` (preload ``base``) receive ``addon``."""

    cls: int  # index into PackingModel.preloaded, or -1 for the empty (free) bins
    base: int
    addon: Pattern
    cost: int
    ub: int


ColumnValues = tuple[tuple[Column, int], ...]  # a backend's witness: each column's value; () without one


def model_columns(m: PackingModel) -> tuple[Column, ...]:
    """The integer variables of ``m``: one per (bin class, pattern that fits on top of it)."""
    cols: list[Column] = []
    # Every class and pattern gets a column (upper bound possibly 0) so each demand row has
    # terms and the solver, not this builder, decides infeasibility.
    free_ub = sum(m.counts) if m.free_bins is None else min(m.free_bins, sum(m.counts))
    classes = [(i, base, mult) for i, (base, mult) in enumerate(m.preloaded)] + [(-1, 0, free_ub)]
    for cls, base, mult in classes:
        for addon in fill_patterns(m.capacity - base, m.capacity):
            if cls == -1 and not any(addon):
                continue  # an unused empty bin is not a variable
            ub = min([mult] + [m.counts[g] // c for g, c in enumerate(addon) if c])
            cols.append(Column(cls, base, addon, node_cost(base + load(addon), m.capacity, m.objective), ub))
    return tuple(cols)


def objective_lower_bound(m: PackingModel) -> int:
    """A valid bound, added to the CP-SAT model as a cut: with L GPUs in all, ≥ 1 partial node
    when L mod G ≠ 0, and ≥ ⌈L/G⌉ nodes in use. With it (and the greedy hint) CP-SAT proves
    optimality in a few ms where it otherwise sometimes searched for seconds at N = 16384;
    HiGHS gets slower with it (measured 4x), so the HiGHS model is left without it."""
    total = sum((g + 1) * n for g, n in enumerate(m.counts)) + sum(b * k for b, k in m.preloaded)
    if m.objective == "partial":
        return int(total % m.capacity != 0)
    return -(-total // m.capacity)


def greedy_pattern_counts(counts: tuple[int, ...], capacity: int) -> dict[Pattern, int]:
    """A quick packing used as a solver hint: fill each node largest-demand-first, repeating the
    node's pattern as often as the counts allow (so the loop runs a few dozen times at most)."""
    left = list(counts)
    out: dict[Pattern, int] = {}
    while any(left):
        room, p = capacity, [0] * capacity
        for g in range(capacity, 0, -1):
            p[g - 1] = min(left[g - 1], room // g)
            room -= g * p[g - 1]
        times = min(left[g] // c for g, c in enumerate(p) if c)
        for g, c in enumerate(p):
            left[g] -= times * c
        out[tuple(p)] = out.get(tuple(p), 0) + times
    return out


def _int_or_none(v: float | None, how: str) -> int | None:
    """Round a solver float to an integer: objectives of integral models are integers up to
    the solver's tolerance (HiGHS returns 0.9999999999998863); a bound is rounded up."""
    if v is None or not math.isfinite(v):
        return None
    if how == "nearest":
        return int(round(v))
    return int(math.ceil(v - 1e-6))


def solve_cpsat(m: PackingModel, time_limit: float = DEFAULT_TIME_LIMIT) -> Certificate[int, ColumnValues]:
    """Solve ``m`` on CP-SAT (one worker, the cut of :func:`objective_lower_bound`, the greedy
    packing as a hint when nothing is preloaded)."""
    from ortools import __version__ as ortools_version  # type: ignore[attr-defined]  # not in its stubs
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    cols = model_columns(m)
    model = cp_model.CpModel()
    x = [model.new_int_var(0, c.ub, f"x{i}") for i, c in enumerate(cols)]
    objective = sum(c.cost * v for c, v in zip(cols, x))
    _add_rows(m, cols, x, model.add)
    model.add(objective >= objective_lower_bound(m))
    model.minimize(objective)
    if not m.preloaded:
        hint = greedy_pattern_counts(m.counts, m.capacity)
        for c, v in zip(cols, x):
            model.add_hint(v, hint.get(c.addon, 0))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = float(time_limit)
    status = cpsat_status(solver.status_name(stopping.solve(solver, model)))
    wall = time.perf_counter() - t0
    name, version = "cp-sat", ortools_version
    if status is not Status.OPTIMAL and status is not Status.FEASIBLE:
        return Certificate(status, None, None, (), name, version, wall)
    obj = int(round(solver.objective_value))
    vals = tuple((c, int(solver.value(v))) for c, v in zip(cols, x))
    bound = obj if status is Status.OPTIMAL else _int_or_none(solver.best_objective_bound, "up")
    return Certificate(status, obj, bound, vals, name, version, wall)


def solve_milp(m: PackingModel, time_limit: float = DEFAULT_TIME_LIMIT) -> Certificate[int, ColumnValues]:
    """Solve ``m`` on HiGHS through PuLP (the greedy packing as a MIP start when nothing is
    preloaded)."""
    import pulp

    t0 = time.perf_counter()
    cols = model_columns(m)
    prob = pulp.LpProblem("pattern_ilp", pulp.LpMinimize)
    x = [highs.integer_variable(prob, f"x{i}", c.ub) for i, c in enumerate(cols)]
    prob += pulp.lpSum(c.cost * v for c, v in zip(cols, x))
    _add_rows(m, cols, x, prob.addConstraint)
    start = greedy_pattern_counts(m.counts, m.capacity) if not m.preloaded else {}
    r = highs.solve(prob, time_limit, t0, {v.name: start.get(c.addon, 0) for c, v in zip(cols, x) if c.cls == -1})
    name, version, wall = r.solver, r.solver_version, r.wall_time
    vals = tuple((c, int(round(v.varValue))) for c, v in zip(cols, x)) if r.has_incumbent else ()
    if r.status is Status.INFEASIBLE:
        return Certificate(Status.INFEASIBLE, None, None, (), name, version, wall)
    bound = _int_or_none(r.dual_bound, "up")
    if r.status is Status.OPTIMAL:
        # Report the objective of the rounded integer solution, and only if it is what HiGHS
        # reported up to its tolerance; otherwise the float answer cannot be trusted.
        obj = sum(c.cost * v for c, v in vals)
        if abs(obj - r.objective) < 1e-3:
            return Certificate(Status.OPTIMAL, obj, obj, vals, name, version, wall)
        return Certificate(Status.UNKNOWN, None, bound, (), name, version, wall)
    if r.status is Status.FEASIBLE:
        return Certificate(Status.FEASIBLE, int(round(r.objective)), bound, vals, name, version, wall)
    return Certificate(Status.UNKNOWN, None, bound, (), name, version, wall)


def _add_rows(m: PackingModel, cols: tuple[Column, ...], x: Sequence[Any], add: Callable[[Any], Any]) -> None:
    """Demand rows (counts matched exactly), one row per preloaded class (each of its bins gets
    exactly one add-on, possibly empty) and the free-bin limit."""
    for g in range(m.capacity):
        add(sum(c.addon[g] * v for c, v in zip(cols, x) if c.addon[g]) == m.counts[g])
    for i, (_, mult) in enumerate(m.preloaded):
        add(sum(v for c, v in zip(cols, x) if c.cls == i) == mult)
    if m.free_bins is not None:
        free = [v for c, v in zip(cols, x) if c.cls == -1]
        if free:
            add(sum(free) <= m.free_bins)


# --------------------------------------------------------------------------------------------
# Certificates of Φ★ / min nodes from a backend


Backend = Callable[[PackingModel, float], Certificate[int, ColumnValues]]


def _certificate(sol: Certificate[int, ColumnValues]) -> Certificate[int, PackingWitness]:
    """A backend's certificate with its column values turned into the packing they describe."""
    witness: dict[tuple[int, ...], int] = {}
    for col, v in sol.witness:
        if v and any(col.addon):
            key = sizes(col.addon)
            witness[key] = witness.get(key, 0) + v
    return Certificate(sol.status, sol.objective, sol.bound, tuple(sorted(witness.items(), reverse=True)),
                       sol.solver, sol.solver_version, sol.wall_time)


def _solve(counts: Sequence[int], n_nodes: int | None, capacity: int, time_limit: float,
           objective: Objective, backend: Backend) -> Certificate[int, PackingWitness]:
    m = PackingModel(check_counts(counts, n_nodes, capacity), capacity, objective, free_bins=n_nodes)
    return _certificate(backend(m, time_limit))


def phi_star_cpsat(counts: Sequence[int], n_nodes: int | None, capacity: int = 8,
                   time_limit: float = DEFAULT_TIME_LIMIT) -> Certificate[int, PackingWitness]:
    """Φ★ by the pattern ILP on CP-SAT (one worker)."""
    return _solve(counts, n_nodes, capacity, time_limit, "partial", solve_cpsat)


def phi_star_milp(counts: Sequence[int], n_nodes: int | None, capacity: int = 8,
                  time_limit: float = DEFAULT_TIME_LIMIT) -> Certificate[int, PackingWitness]:
    """Φ★ by the pattern ILP on HiGHS through PuLP."""
    return _solve(counts, n_nodes, capacity, time_limit, "partial", solve_milp)


def min_nodes_cpsat(counts: Sequence[int], n_nodes: int | None = None, capacity: int = 8,
                    time_limit: float = DEFAULT_TIME_LIMIT) -> Certificate[int, PackingWitness]:
    """Minimum number of non-empty nodes (bin-packing number) by the pattern ILP on CP-SAT."""
    return _solve(counts, n_nodes, capacity, time_limit, "nodes", solve_cpsat)


def min_nodes_milp(counts: Sequence[int], n_nodes: int | None = None, capacity: int = 8,
                   time_limit: float = DEFAULT_TIME_LIMIT) -> Certificate[int, PackingWitness]:
    """Minimum number of non-empty nodes by the pattern ILP on HiGHS through PuLP."""
    return _solve(counts, n_nodes, capacity, time_limit, "nodes", solve_milp)


# --------------------------------------------------------------------------------------------
# Independent brute force (no patterns): items one by one into bins, memoised on bin loads


def _bruteforce(counts: Sequence[int], n_nodes: int | None, capacity: int, objective: Objective) -> Certificate[int, PackingWitness]:
    counts = check_counts(counts, n_nodes, capacity)
    t0 = time.perf_counter()
    items = [g for g in range(capacity, 0, -1) for _ in range(counts[g - 1])]
    limit = len(items) if n_nodes is None else n_nodes
    memo: dict[tuple[int, tuple[int, ...]], tuple[float, int]] = {}

    def best(i: int, loads: tuple[int, ...]) -> tuple[float, int]:
        """(min cost to go, load of the bin item i goes into; 0 = a new bin)."""
        if i == len(items):
            return sum(node_cost(x, capacity, objective) for x in loads), -1
        key = (i, loads)
        if key not in memo:
            g = items[i]
            options = [x for x in set(loads) if x + g <= capacity]
            if len(loads) < limit:
                options.append(0)
            out: tuple[float, int] = (math.inf, -1)
            for x in options:
                nxt = list(loads)
                if x:
                    nxt.remove(x)
                cost = best(i + 1, tuple(sorted(nxt + [x + g])))[0]
                if cost < out[0]:
                    out = (cost, x)
            memo[key] = out
        return memo[key]

    value = best(0, ())[0]
    if value == math.inf:
        return Certificate(Status.INFEASIBLE, None, None, (), "bruteforce", "1", time.perf_counter() - t0)
    bins: list[list[int]] = []
    for i, g in enumerate(items):
        x = best(i, tuple(sorted(sum(b) for b in bins)))[1]
        target = next((b for b in bins if sum(b) == x), None) if x else None
        if target is None:
            bins.append([g])
        else:
            target.append(g)
    witness: dict[tuple[int, ...], int] = {}
    for b in bins:
        key = tuple(sorted(b, reverse=True))
        witness[key] = witness.get(key, 0) + 1
    return Certificate(Status.OPTIMAL, int(value), int(value), tuple(sorted(witness.items(), reverse=True)),
                       "bruteforce", "1", time.perf_counter() - t0)


def phi_star_bruteforce(counts: Sequence[int], n_nodes: int | None, capacity: int = 8) -> Certificate[int, PackingWitness]:
    """Φ★ by exhaustive search over item-to-bin assignments (small multisets only)."""
    return _bruteforce(counts, n_nodes, capacity, "partial")


def min_nodes_bruteforce(counts: Sequence[int], n_nodes: int | None = None, capacity: int = 8) -> Certificate[int, PackingWitness]:
    """Minimum nodes in use by exhaustive search (small multisets only)."""
    return _bruteforce(counts, n_nodes, capacity, "nodes")


# --------------------------------------------------------------------------------------------
# Fast exact DP for small instances: Pareto front of (nodes used, partial nodes) per multiset

FrontEntry = tuple[int, int, Pattern | None, int]  # nodes, partial, first pattern, index in child


@lru_cache(maxsize=None)
def _patterns_by_largest(capacity: int) -> tuple[tuple[Pattern, ...], ...]:
    """Non-empty patterns grouped by their largest demand (index g-1)."""
    groups: list[list[Pattern]] = [[] for _ in range(capacity)]
    for p in bin_patterns(capacity):
        groups[max(g for g, c in enumerate(p) if c)].append(p)
    return tuple(tuple(gr) for gr in groups)


@lru_cache(maxsize=1 << 20)
def _front(counts: tuple[int, ...], capacity: int) -> tuple[FrontEntry, ...]:
    """Pareto-minimal (nodes, partial) over all packings of ``counts`` (no node limit).

    Symmetry is broken by always deciding the bin holding one of the largest remaining items.
    """
    if not any(counts):
        return ((0, 0, None, -1),)
    top = max(g for g, c in enumerate(counts) if c)
    cands: list[FrontEntry] = []
    for p in _patterns_by_largest(capacity)[top]:
        if all(c <= n for c, n in zip(p, counts)):
            child = _front(tuple(n - c for c, n in zip(p, counts)), capacity)
            extra = node_cost(load(p), capacity, "partial")
            cands.extend((nodes + 1, part + extra, p, j) for j, (nodes, part, _, _) in enumerate(child))
    cands.sort(key=lambda e: (e[0], e[1]))
    front: list[FrontEntry] = []
    for e in cands:
        if not front or e[1] < front[-1][1]:
            front.append(e)
    return tuple(front)


def _dp(counts: tuple[int, ...], n_nodes: int | None, capacity: int, objective: Objective) -> Certificate[int, PackingWitness]:
    t0 = time.perf_counter()
    front = _front(counts, capacity)
    ok = [j for j, e in enumerate(front) if n_nodes is None or e[0] <= n_nodes]
    if not ok:
        return Certificate(Status.INFEASIBLE, None, None, (), "dp", "1", time.perf_counter() - t0)
    # front is sorted by nodes ascending, partial descending: the fewest nodes is the first
    # feasible entry, the fewest partial nodes the last.
    j = ok[0] if objective == "nodes" else ok[-1]
    value = front[j][0] if objective == "nodes" else front[j][1]
    witness: dict[tuple[int, ...], int] = {}
    state = counts
    while any(state):
        _, _, p, child_j = _front(state, capacity)[j]
        assert p is not None  # only the empty multiset's entry has no first pattern
        witness[sizes(p)] = witness.get(sizes(p), 0) + 1
        state, j = tuple(n - c for c, n in zip(p, state)), child_j
    return Certificate(Status.OPTIMAL, value, value, tuple(sorted(witness.items(), reverse=True)),
                       "dp", "1", time.perf_counter() - t0)


def _dp_states(counts: tuple[int, ...]) -> int:
    return math.prod(c + 1 for c in counts)


_memo: dict[tuple[tuple[int, ...], int | None, int, Objective], Certificate[int, PackingWitness]] = {}


def _fast(counts: Sequence[int], n_nodes: int | None, capacity: int, objective: Objective,
          time_limit: float) -> Certificate[int, PackingWitness]:
    if type(counts) is tuple:  # the hot path: a hit needs no validation (only valid keys are stored)
        cert = _memo.get((counts, n_nodes, capacity, objective))
        if cert is not None:
            return cert
    counts = check_counts(counts, n_nodes, capacity)
    key = (counts, n_nodes, capacity, objective)
    cert = _memo.get(key)
    if cert is None:
        if _dp_states(counts) <= DP_STATE_LIMIT and sum(counts) <= DP_ITEM_LIMIT:
            cert = _dp(counts, n_nodes, capacity, objective)
        else:
            cert = _solve(counts, n_nodes, capacity, time_limit, objective, solve_cpsat)
        if not cert.is_proven:
            return cert  # not memoised: a later call with more time may settle it
        _memo[key] = cert
    return cert


def phi_star(counts: Sequence[int], n_nodes: int | None, capacity: int = 8,
             time_limit: float = DEFAULT_TIME_LIMIT) -> Certificate[int, PackingWitness]:
    """Φ★ (memoised on (counts, N, capacity)): DP for small multisets, CP-SAT otherwise."""
    return _fast(counts, n_nodes, capacity, "partial", time_limit)


def min_nodes(counts: Sequence[int], n_nodes: int | None = None, capacity: int = 8,
              time_limit: float = DEFAULT_TIME_LIMIT) -> Certificate[int, PackingWitness]:
    """Minimum number of nodes in use (memoised): DP for small multisets, CP-SAT otherwise."""
    return _fast(counts, n_nodes, capacity, "nodes", time_limit)


def phi_star_value(counts: Sequence[int], n_nodes: int | None, capacity: int = 8,
                   time_limit: float = DEFAULT_TIME_LIMIT) -> int | None:
    """Φ★ as an int; None when the instances do not fit in N nodes; raises
    :class:`~oracle.result.Unproven` when the solve hit its limit."""
    return phi_star(counts, n_nodes, capacity, time_limit).proven_value("Φ★")


def min_nodes_value(counts: Sequence[int], n_nodes: int | None = None, capacity: int = 8,
                    time_limit: float = DEFAULT_TIME_LIMIT) -> int | None:
    """Minimum nodes in use as an int; None when infeasible; raises
    :class:`~oracle.result.Unproven` when the solve hit its limit."""
    return min_nodes(counts, n_nodes, capacity, time_limit).proven_value("min nodes in use")


def clear_cache() -> None:
    """Forget memoised results (benchmarks use it to measure cold solves)."""
    _memo.clear()
    _front.cache_clear()
