"""The class-aggregated minimum-migration ILP (model in ``oracle.gpu.min_migration``'s docstring),
on CP-SAT or on HiGHS through PuLP.

Column (k, p) counts the nodes of current class k given target pattern p; rows: each
class's nodes get one pattern each, demands met exactly, at most ``target`` partial nodes, and
optionally at most ``budget`` migrations (iterative deepening, ``min_migration._deepening``).
On mixed node capacities (docs/heterogeneous.md) a class is (capacity, current pattern), its target
patterns are those that fit its capacity, and a node is partial against its own capacity; patterns
are count vectors of length G = the largest capacity. With one capacity this is the same model,
column for column.
CP-SAT (one worker, the default) solves in two stages (migrations, then GPUs with the count fixed);
HiGHS (``solver="highs"``, the second opinion) the weighted objective W·migrations + GPUs.
"""
from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Literal, NamedTuple, Sequence

from oracle import highs
from oracle.gpu.patterns import Pattern, fill_patterns, load
from oracle.gpu.plain_nodes import Item, Nodes, instance_counts, node_pattern, outflow
from oracle.result import Certificate, Status, cpsat_status
from oracle import stopping

Solver = Literal["cp-sat", "highs"]


@dataclass(frozen=True)
class RepackModel:
    """The ILP of the module docstring: column (k, p) = nodes of current class k given pattern p."""

    nodes: Nodes
    capacity: int
    new_items: tuple[Item, ...]
    target: int | None
    classes: tuple[tuple[Pattern, tuple[int, ...]], ...]  # (current pattern, member nodes)
    columns: tuple[tuple[int, Pattern], ...]  # (class index, target pattern)
    counts: tuple[int, ...]
    hint: tuple[int, ...] | None = None  # a feasible value per column, for CP-SAT
    # At most this many migrations (columns that alone exceed it are left out); the caller has
    # proven that fewer than ``budget`` migrations cannot reach the target (see _deepening).
    budget: int | None = None
    class_capacities: tuple[int, ...] = ()  # GPUs of each class's nodes (mixed capacities; else G)

    def class_capacity(self, c: int) -> int:
        return self.class_capacities[c] if self.class_capacities else self.capacity

    @property
    def weight(self) -> int:
        """W: one migration outweighs any number of GPUs moved (lexicographic objective)."""
        return self.capacity * sum(self.counts) + 1

    def cost(self, col: tuple[int, Pattern]) -> int:
        mig, gpus = outflow(self.classes[col[0]][0], col[1])
        return self.weight * mig + gpus

    def costs(self) -> list[int]:
        return [self.cost(col) for col in self.columns]

    def migrations(self, values: Sequence[int]) -> int:
        """Migrations of the solution with these column values."""
        return sum(v * outflow(self.classes[c][0], p)[0] for (c, p), v in zip(self.columns, values))


class Columns(NamedTuple):
    """A backend's witness: the value of each column (() without an incumbent), and whether GPUs
    moved is proven minimal among the minimum-migration packings."""

    values: tuple[int, ...]
    gpus_proven: bool


NO_COLUMNS = Columns((), False)


@lru_cache(maxsize=None)
def _targets(room: int, capacity: int) -> tuple[Pattern, ...]:
    """The target patterns of a node of ``room`` GPUs (the empty one included), as vectors of
    length ``capacity``."""
    return fill_patterns(room, capacity)


def build_model(nodes: Nodes, capacity: int, new_items: tuple[Item, ...], target: int | None,
                hint_targets: Sequence[Pattern] | None = None, budget: int | None = None,
                capacities: Sequence[int] | None = None) -> RepackModel:
    """The ILP; ``hint_targets`` (a target pattern per node, e.g. a witness) becomes the hint;
    with a ``budget``, at most that many migrations; ``capacities`` (one per node, at most
    ``capacity``) for mixed node capacities."""
    caps = (capacity,) * len(nodes) if capacities is None else tuple(capacities)
    classes: dict[tuple[int, Pattern], list[int]] = {}
    for n, (node, cap) in enumerate(zip(nodes, caps)):
        classes.setdefault((cap, node_pattern(node, capacity)), []).append(n)
    keys = tuple(classes)
    cls = tuple((k, tuple(m)) for (_, k), m in classes.items())
    cols = tuple((i, p) for i in range(len(cls)) for p in _targets(keys[i][0], capacity)
                 if budget is None or outflow(cls[i][0], p)[0] <= budget)
    hint = None
    if hint_targets is not None:
        pairs = Counter((cap, node_pattern(node, capacity), t) for node, cap, t in zip(nodes, caps, hint_targets))
        hint = tuple(pairs.get((*keys[i], p), 0) for i, p in cols)
    return RepackModel(nodes, capacity, new_items, target, cls, cols,
                       instance_counts(nodes, new_items, capacity), hint, budget,
                       () if capacities is None else tuple(cap for cap, _ in keys))


def _rows(m: RepackModel, x: Sequence[Any], add: Callable[[Any], Any],
          linear: Callable[[list[Any], list[int]], Any]) -> None:
    """Every node of each class gets one pattern; demands met exactly; the partial-node bound.
    ``linear(vars, coefs)`` builds a linear expression in the backend's own (fast) way."""
    per_class: list[list] = [[] for _ in m.classes]
    per_g: list[tuple[list, list]] = [([], []) for _ in range(m.capacity)]
    partial = []
    for (c, p), v in zip(m.columns, x):
        per_class[c].append(v)
        for g, k in enumerate(p):
            if k:
                per_g[g][0].append(v)
                per_g[g][1].append(k)
        if 0 < load(p) < m.class_capacity(c):
            partial.append(v)
    for (_, members), terms in zip(m.classes, per_class):
        add(linear(terms, [1] * len(terms)) == len(members))
    for g, (terms, coefs) in enumerate(per_g):
        add(linear(terms, coefs) == m.counts[g])
    if m.target is not None:
        add(linear(partial, [1] * len(partial)) <= m.target)
    if m.budget is not None:
        add(linear(list(x), [outflow(m.classes[c][0], p)[0] for c, p in m.columns]) <= m.budget)


def solve_cpsat(m: RepackModel, time_limit: float) -> Certificate[int, Columns]:
    """Two stages on one model: fewest migrations; then, with that count fixed and the first
    answer as a hint, fewest GPUs moved (measured faster than one weighted objective)."""
    from ortools import __version__ as ortools_version  # type: ignore[attr-defined]  # not in its stubs
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    model = cp_model.CpModel()
    x = [model.new_int_var(0, len(m.classes[c][1]), "") for c, _ in m.columns]
    weighted = cp_model.LinearExpr.weighted_sum
    _rows(m, x, model.add, weighted)
    out = [outflow(m.classes[c][0], p) for c, p in m.columns]
    migrations = weighted(x, [o[0] for o in out])
    # Within a budget the migration count is settled (fewer are proven impossible): fewest GPUs.
    model.minimize(migrations if m.budget is None else weighted(x, [o[1] for o in out]))

    def hint(values: Sequence[int]) -> None:  # through the proto: add_hint per variable is slow
        model.clear_hints()
        model.proto.solution_hint.vars.extend(v.index for v in x)
        model.proto.solution_hint.values.extend(values)

    if m.hint is not None:
        hint(m.hint)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    # Measured on 90 %-load fragmented placements, N = 12..128 (benchmarks/bench_min_migration.py
    # and docs/sifopt_scheduler.md): probing and symmetry detection cost more than they save on
    # this small transportation-like model, and adding the LP rows up front (not lazily) makes
    # the LP bound available at once; together 2-10x faster.
    solver.parameters.cp_model_probing_level = 0
    solver.parameters.symmetry_level = 0
    solver.parameters.add_lp_constraints_lazily = False
    solver.parameters.max_time_in_seconds = float(time_limit)
    status = cpsat_status(solver.status_name(stopping.solve(solver, model)))
    name = "cp-sat"
    if status is not Status.OPTIMAL and status is not Status.FEASIBLE:
        return Certificate(status, None, None, NO_COLUMNS, name, ortools_version, time.perf_counter() - t0)
    values = tuple(solver.value(v) for v in x)
    if m.budget is not None:
        best = m.migrations(values)
        return Certificate(Status.OPTIMAL, best, best, Columns(values, status is Status.OPTIMAL), name,
                           ortools_version, time.perf_counter() - t0)
    best = int(round(solver.objective_value))
    if status is Status.FEASIBLE:
        return Certificate(status, best, max(0, math.ceil(solver.best_objective_bound - 1e-6)),
                           Columns(values, False), name, ortools_version, time.perf_counter() - t0)
    model.add(migrations == best)
    hint(values)
    model.minimize(weighted(x, [o[1] for o in out]))
    solver.parameters.max_time_in_seconds = max(0.01, float(time_limit) - (time.perf_counter() - t0))
    second = cpsat_status(solver.status_name(stopping.solve(solver, model)))
    if second is Status.OPTIMAL or second is Status.FEASIBLE:
        values = tuple(solver.value(v) for v in x)
    return Certificate(Status.OPTIMAL, best, best, Columns(values, second is Status.OPTIMAL), name,
                       ortools_version, time.perf_counter() - t0)


def solve_milp(m: RepackModel, time_limit: float) -> Certificate[int, Columns]:
    """One weighted objective W·migrations + GPUs moved (lexicographic, see RepackModel.weight)."""
    import pulp

    t0 = time.perf_counter()
    prob = pulp.LpProblem("min_migration", pulp.LpMinimize)
    x = [highs.integer_variable(prob, f"z{i}", len(m.classes[c][1])) for i, (c, _) in enumerate(m.columns)]
    prob += pulp.lpSum(c * v for c, v in zip(m.costs(), x) if c)
    _rows(m, x, prob.addConstraint, lambda vs, cs: pulp.lpSum(c * v for c, v in zip(cs, vs)))
    r = highs.solve(prob, time_limit, t0)
    name, version, wall = r.solver, r.solver_version, r.wall_time
    if r.status is not Status.OPTIMAL and r.status is not Status.FEASIBLE:
        return Certificate(r.status, None, None, NO_COLUMNS, name, version, wall)
    values = tuple(int(round(v.varValue)) for v in x)
    migrations = m.migrations(values)
    if r.status is Status.OPTIMAL or m.budget is not None:  # within a budget the count is settled
        return Certificate(Status.OPTIMAL, migrations, migrations, Columns(values, r.status is Status.OPTIMAL),
                           name, version, wall)
    # Any solution costs W·migrations + GPUs with GPUs < W, so ⌊bound / W⌋ bounds migrations.
    bound = max(0, math.ceil(r.dual_bound - 1e-6)) // m.weight
    return Certificate(r.status, migrations, bound, Columns(values, False), name, version, wall)


BACKENDS: dict[str, Callable[[RepackModel, float], Certificate[int, Columns]]] = {
    "cp-sat": solve_cpsat, "highs": solve_milp}
