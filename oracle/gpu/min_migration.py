"""Minimum-migration repacking: the fewest instance moves that reach Φ★ or admit a waiting job.

Two questions, both exact, both answered with a :class:`~oracle.result.Certificate` whose
objective is the number of migrations and whose witness is a :class:`Repack`:

* :func:`min_migration_repack` — the SIFOpt question (seeds/000 §5.4, Appendix C: "the SIFOpt
  oracle scheduler ... migrates towards" a packing with Φ★ partial nodes): from the current
  placement, what is the fewest instance migrations (then the fewest GPUs moved) that reaches a
  packing of the same instances with at most ``target_partial`` partial nodes (default Φ★)?
* :func:`min_migrations_to_admit` — the Volcano / KAI-Scheduler users' question (SPEC, "What users
  of other schedulers ask for"): "would migrating running jobs make room for this job?", i.e. the
  fewest migrations after which a waiting gang job of w instances of g GPUs can be placed.

Input is plain data, so any scheduler (or a recorded snapshot) can ask: ``current`` is a list of
nodes, each a list of ``(job_id, g)`` items; ``capacity`` is G; ``n_nodes`` (optional) pads the
cluster with empty nodes up to that count.

The model, and why it is exact although it never names an instance
------------------------------------------------------------------
Let c[n][g] be the number of g-GPU instances on node n now and y[n][g] the number in the target.
At most min(c, y) of node n's g-GPU instances can stay, so every target with counts y costs at
least Σ_{n,g} max(0, c[n][g] − y[n][g]) migrations; and that many suffice, because every node
either only loses or only gains g-GPU instances, and a gained instance can be *any* moved (or
new) instance of size g — the job it belongs to matters to neither capacity nor Φ. So job
identities drop out, and only the count vector (pattern) of each node matters. Nodes whose current
patterns are equal are interchangeable, so the ILP has one integer variable per
(current pattern class k, target pattern p):

    z[k,p] ≥ 0;   Σ_p z[k,p] = |class k|;   Σ_{k,p} p_g·z[k,p] = n_g (+ new instances);
    Σ_{k, p partial} z[k,p] ≤ target_partial (repack only);
    lexicographically minimise  (Σ z[k,p]·mig(k,p),  Σ z[k,p]·gpu(k,p)),
    mig(k,p) = Σ_g max(0, c_k,g − p_g),   gpu(k,p) = Σ_g g·max(0, c_k,g − p_g).

At most 67 × 67 variables for G = 8 (current classes × target patterns, the empty one included)
whatever N: symmetry between nodes is removed by construction rather than by symmetry-breaking
constraints. :func:`realise_target` turns the per-node target counts back into concrete moves.
Solvers: CP-SAT (one worker, the default) in two stages (migrations, then GPUs with the count
fixed), or HiGHS through PuLP (``solver="highs"``, a second opinion) on the weighted objective
W·migrations + GPUs, W = G·(instances) + 1. The brute force (:func:`repack_bruteforce`,
:func:`admit_bruteforce`) enumerates instance-to-node assignments and shares nothing with the
model (not even Φ★); the tests cross-check the two.

Readings chosen
---------------
* ``target_partial`` is an upper bound ("at most t partial nodes"); with the default t = Φ★ that
  is "exactly Φ★". Φ★ is computed with the node limit N (``oracle.gpu.phi_star.phi_star``).
* A migration moves one instance; GPUs moved is its g. New (waiting) instances are placed by the
  model wherever it likes and are not migrations.
* Status (:class:`oracle.result.Status`): ``optimal`` (proven), ``feasible`` (an incumbent, not
  proven optimal: the time limit was hit), ``infeasible`` (no packing: the instances do not fit
  in N nodes), ``unknown`` (limit hit without an incumbent, or Φ★ itself not proven). Only
  ``optimal`` is ever a result.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Literal, NamedTuple, Sequence

from oracle import highs
from oracle.gpu.patterns import Pattern, fill_patterns, from_sizes, load
from oracle.gpu.phi_star import phi_star
from oracle.result import Certificate, Status, cpsat_status

Item = tuple[int, int]  # (job id, g)
Nodes = tuple[tuple[Item, ...], ...]

DEFAULT_TIME_LIMIT = 10.0


class Move(NamedTuple):
    """One instance of ``job`` (``g`` GPUs) migrated from node ``src`` to node ``dst``."""

    job: int
    g: int
    src: int
    dst: int


class Admission(NamedTuple):
    """One new (waiting) instance of ``job`` placed on node ``dst``; not a migration."""

    job: int
    g: int
    dst: int


@dataclass(frozen=True)
class Repack:
    """The witness of a min-migration certificate (whose objective is the migration count and
    whose bound a proven lower bound on it; its status is about that primary objective).

    ``target_partial`` is the partial-node bound the repack aimed at (None for an admission
    question, or when Φ★ was not proven); ``partial_before`` / ``empty_before`` describe the
    current placement. The rest describes the incumbent (None / () without one): ``placement``
    the target placement (per node, items sorted), ``moves`` the migrations that reach it,
    ``admitted`` where each new instance goes, ``gpus_moved`` the GPUs the moves carry, and
    ``gpus_proven`` whether that is proven minimal among the minimum-migration packings (the
    secondary objective).
    """

    gpus_moved: int | None
    gpus_proven: bool
    target_partial: int | None
    partial_before: int
    partial_after: int | None
    empty_before: int
    empty_after: int | None
    placement: Nodes | None
    moves: tuple[Move, ...]
    admitted: tuple[Admission, ...]


# --------------------------------------------------------------------------------------------
# Input checking and small helpers


def normalise(current: Sequence[Sequence[Item]], capacity: int, n_nodes: int | None = None) -> Nodes:
    """Validate a placement given as plain data and pad it to ``n_nodes`` nodes.

    Raises ValueError naming the node and item at fault: g outside 1..G, a node over capacity, a
    job whose instances have different g, or ``n_nodes`` smaller than the placement.
    """
    if not isinstance(capacity, int) or capacity < 1:
        raise ValueError(f"capacity={capacity!r} must be a positive integer")
    nodes = tuple(tuple((int(j), int(g)) for j, g in node) for node in current)
    job_g: dict[int, int] = {}
    for n, node in enumerate(nodes):
        for j, g in node:
            if not 1 <= g <= capacity:
                raise ValueError(f"node {n}: job {j} has g={g} outside 1..{capacity}")
            if job_g.setdefault(j, g) != g:
                raise ValueError(f"node {n}: job {j} has g={g} but g={job_g[j]} elsewhere")
        if sum(g for _, g in node) > capacity:
            raise ValueError(f"node {n}: {sum(g for _, g in node)} GPUs used > capacity {capacity}")
    if n_nodes is not None:
        if n_nodes < len(nodes):
            raise ValueError(f"n_nodes={n_nodes} < {len(nodes)} nodes in the placement")
        nodes += ((),) * (n_nodes - len(nodes))
    return nodes


def check_new_items(new_items: Sequence[Item], capacity: int) -> tuple[Item, ...]:
    """Validate waiting instances given as (job id, g) pairs."""
    out = tuple((int(j), int(g)) for j, g in new_items)
    for j, g in out:
        if not 1 <= g <= capacity:
            raise ValueError(f"new instance of job {j} has g={g} outside 1..{capacity}")
    return out


def node_pattern(node: Sequence[Item], capacity: int) -> Pattern:
    """Count vector (index g-1 holds how many g's) of one node's content."""
    out = [0] * capacity
    for _, g in node:
        out[g - 1] += 1
    return tuple(out)


def partial_count(nodes: Sequence[Sequence[Item]], capacity: int) -> int:
    return sum(1 for node in nodes if 0 < sum(g for _, g in node) < capacity)


def empty_count(nodes: Sequence[Sequence[Item]]) -> int:
    return sum(1 for node in nodes if not node)


def instance_counts(nodes: Sequence[Sequence[Item]], new_items: Sequence[Item], capacity: int) -> tuple[int, ...]:
    out = [0] * capacity
    for node in nodes:
        for _, g in node:
            out[g - 1] += 1
    for _, g in new_items:
        out[g - 1] += 1
    return tuple(out)


@lru_cache(maxsize=1 << 16)
def outflow(now: Pattern, target: Pattern) -> tuple[int, int]:
    """(migrations, GPUs moved) leaving a node whose pattern goes from ``now`` to ``target``."""
    out = [max(0, c - t) for c, t in zip(now, target)]
    return sum(out), sum((g + 1) * k for g, k in enumerate(out))


# --------------------------------------------------------------------------------------------
# From per-node target counts to concrete moves


def realise_target(nodes: Nodes, targets: Sequence[Pattern], new_items: Sequence[Item] = ()
                   ) -> tuple[Nodes, tuple[Move, ...], tuple[Admission, ...]]:
    """The placement with per-node counts ``targets`` that moves the fewest instances, with its
    migrations and the destinations of ``new_items``.

    On each node and size g the first min(c, y) instances (in their listed order) stay; the rest
    of the g-instances, then the new g-instances, fill the nodes that gain g-instances in node
    order. The totals of ``targets`` must equal those of ``nodes`` plus ``new_items``.
    """
    capacity = len(targets[0]) if targets else 0
    kept: list[list[Item]] = []
    pool: dict[int, list[tuple[Item, int | None]]] = {g: [] for g in range(1, capacity + 1)}
    for n, (node, tgt) in enumerate(zip(nodes, targets)):
        room = list(tgt)
        stay = []
        for item in node:
            if room[item[1] - 1] > 0:
                room[item[1] - 1] -= 1
                stay.append(item)
            else:
                pool[item[1]].append((item, n))
        kept.append(stay)
    for item in new_items:
        pool[item[1]].append((item, None))
    moves: list[Move] = []
    admitted: list[Admission] = []
    for n, tgt in enumerate(targets):
        have = node_pattern(kept[n], capacity)
        for g in range(1, capacity + 1):
            for _ in range(tgt[g - 1] - have[g - 1]):
                if not pool[g]:
                    raise ValueError(f"targets ask for more {g}-GPU instances than exist")
                (j, _g), src = pool[g].pop(0)
                kept[n].append((j, g))
                if src is None:
                    admitted.append(Admission(j, g, n))
                else:
                    moves.append(Move(j, g, src, n))
    if any(pool.values()):
        raise ValueError("targets leave instances unplaced")
    return tuple(tuple(sorted(k)) for k in kept), tuple(moves), tuple(admitted)


def assign_patterns(nodes: Sequence[Sequence[Item]], patterns: Sequence[Pattern], capacity: int) -> list[Pattern]:
    """The cheapest assignment of a fixed multiset of target patterns to the nodes (nodes beyond
    ``len(patterns)`` become empty): fewest migrations, then fewest GPUs moved. A min-cost flow
    from current node classes to target pattern types (networkx network simplex): optimal for
    *these* patterns, not over all Φ★ packings."""
    import networkx as nx

    classes: dict[Pattern, list[int]] = {}
    for n, node in enumerate(nodes):
        classes.setdefault(node_pattern(node, capacity), []).append(n)
    need = Counter(patterns)
    need[(0,) * capacity] += len(nodes) - len(patterns)
    weight = capacity * sum(len(node) for node in nodes) + 1  # one migration > any GPU count
    graph = nx.DiGraph()
    for k, members in classes.items():
        graph.add_node(("now", k), demand=-len(members))
    for p, c in need.items():
        graph.add_node(("target", p), demand=c)
        for k in classes:
            mig, gpus = outflow(k, p)
            graph.add_edge(("now", k), ("target", p), weight=weight * mig + gpus)
    flow = nx.min_cost_flow(graph)
    targets: list[Pattern] = [()] * len(nodes)
    for k, members in classes.items():
        it = iter(members)
        for (_, p), f in sorted(flow[("now", k)].items()):
            for _ in range(f):
                targets[next(it)] = p
    return targets


# --------------------------------------------------------------------------------------------
# The class-aggregated ILP, on CP-SAT or on HiGHS (through PuLP)

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


def build_model(nodes: Nodes, capacity: int, new_items: tuple[Item, ...], target: int | None,
                hint_targets: Sequence[Pattern] | None = None) -> RepackModel:
    """The ILP; ``hint_targets`` (a target pattern per node, e.g. a witness) becomes the hint."""
    classes: dict[Pattern, list[int]] = {}
    for n, node in enumerate(nodes):
        classes.setdefault(node_pattern(node, capacity), []).append(n)
    patterns = fill_patterns(capacity, capacity)  # the empty pattern included
    cls = tuple((k, tuple(m)) for k, m in classes.items())
    cols = tuple((i, p) for i in range(len(cls)) for p in patterns)
    hint = None
    if hint_targets is not None:
        pairs = Counter((node_pattern(node, capacity), t) for node, t in zip(nodes, hint_targets))
        hint = tuple(pairs.get((cls[i][0], p), 0) for i, p in cols)
    return RepackModel(nodes, capacity, new_items, target, cls, cols,
                       instance_counts(nodes, new_items, capacity), hint)


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
        if 0 < load(p) < m.capacity:
            partial.append(v)
    for (_, members), terms in zip(m.classes, per_class):
        add(linear(terms, [1] * len(terms)) == len(members))
    for g, (terms, coefs) in enumerate(per_g):
        add(linear(terms, coefs) == m.counts[g])
    if m.target is not None:
        add(linear(partial, [1] * len(partial)) <= m.target)


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
    model.minimize(migrations)

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
    status = cpsat_status(solver.status_name(solver.solve(model)))
    name = "cp-sat"
    if status is not Status.OPTIMAL and status is not Status.FEASIBLE:
        return Certificate(status, None, None, NO_COLUMNS, name, ortools_version, time.perf_counter() - t0)
    values = tuple(solver.value(v) for v in x)
    best = int(round(solver.objective_value))
    if status is Status.FEASIBLE:
        return Certificate(status, best, max(0, math.ceil(solver.best_objective_bound - 1e-6)),
                           Columns(values, False), name, ortools_version, time.perf_counter() - t0)
    model.add(migrations == best)
    hint(values)
    model.minimize(weighted(x, [o[1] for o in out]))
    solver.parameters.max_time_in_seconds = max(0.01, float(time_limit) - (time.perf_counter() - t0))
    second = cpsat_status(solver.status_name(solver.solve(model)))
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
    if r.status is Status.OPTIMAL:
        return Certificate(r.status, migrations, migrations, Columns(values, True), name, version, wall)
    # Any solution costs W·migrations + GPUs with GPUs < W, so ⌊bound / W⌋ bounds migrations.
    bound = max(0, math.ceil(r.dual_bound - 1e-6)) // m.weight
    return Certificate(r.status, migrations, bound, Columns(values, False), name, version, wall)


BACKENDS: dict[str, Callable[[RepackModel, float], Certificate[int, Columns]]] = {
    "cp-sat": solve_cpsat, "highs": solve_milp}


def _unanswered(nodes: Nodes, capacity: int, target: int | None) -> Repack:
    """The witness of a certificate without incumbent: only the question and the start."""
    return Repack(None, False, target, partial_count(nodes, capacity), None, empty_count(nodes), None,
                  None, (), ())


def _certificate(m: RepackModel, raw: Certificate[int, Columns]) -> Certificate[int, Repack]:
    """A backend's certificate with its column values realised as a placement and moves."""
    if raw.objective is None:
        return Certificate(raw.status, None, raw.bound, _unanswered(m.nodes, m.capacity, m.target),
                           raw.solver, raw.solver_version, raw.wall_time)
    targets: list[Pattern] = [()] * len(m.nodes)
    slots = [iter(members) for _, members in m.classes]
    for (c, p), v in zip(m.columns, raw.witness.values):
        for _ in range(v):
            targets[next(slots[c])] = p
    placement, moves, admitted = realise_target(m.nodes, targets, m.new_items)
    witness = Repack(sum(mv.g for mv in moves), raw.witness.gpus_proven, m.target,
                     partial_count(m.nodes, m.capacity), partial_count(placement, m.capacity),
                     empty_count(m.nodes), empty_count(placement), placement, moves, admitted)
    bound = len(moves) if raw.is_optimal else raw.bound
    return Certificate(raw.status, len(moves), bound, witness, raw.solver, raw.solver_version, raw.wall_time)


def _solve(nodes: Nodes, capacity: int, new_items: tuple[Item, ...], target: int | None,
           time_limit: float, solver: Solver, to_phi_star: bool) -> Certificate[int, Repack]:
    """Φ★ first (its certificate settles infeasibility and, with ``to_phi_star``, the target),
    then the ILP, hinted with Φ★'s witness assigned to the nodes at least cost: without the hint
    CP-SAT was seen to find no solution at all in 10 s on some N = 16 instances."""
    if solver not in BACKENDS:
        raise ValueError(f"unknown solver {solver!r}; known: {', '.join(BACKENDS)}")
    t0 = time.perf_counter()
    phi = phi_star(instance_counts(nodes, new_items, capacity), len(nodes), capacity, time_limit)
    phi_value = phi.objective if phi.is_optimal else None
    if phi.status is Status.INFEASIBLE or (to_phi_star and phi_value is None):
        # Without a proven Φ★ there is no target, hence no incumbent: unknown, even when Φ★'s own
        # solve has a feasible incumbent.
        status = Status.INFEASIBLE if phi.status is Status.INFEASIBLE else Status.UNKNOWN
        return Certificate(status, None, None, _unanswered(nodes, capacity, None), phi.solver,
                           phi.solver_version, time.perf_counter() - t0)
    if to_phi_star:
        target = phi_value
    hint = None
    if phi_value is not None and (target is None or phi_value <= target):
        witness = [from_sizes(d, capacity) for d, mult in phi.witness for _ in range(mult)]
        hint = assign_patterns(nodes, witness, capacity)
    m = build_model(nodes, capacity, new_items, target, hint)
    out = _certificate(m, BACKENDS[solver](m, max(0.01, time_limit - (time.perf_counter() - t0))))
    return dataclasses.replace(out, wall_time=time.perf_counter() - t0)


def min_migration_repack(current: Sequence[Sequence[Item]], capacity: int = 8,
                         target_partial: int | None = None, n_nodes: int | None = None,
                         new_items: Sequence[Item] = (), time_limit: float = DEFAULT_TIME_LIMIT,
                         solver: Solver = "cp-sat") -> Certificate[int, Repack]:
    """Fewest migrations (then fewest GPUs moved) to a packing of the current instances plus
    ``new_items`` with at most ``target_partial`` partial nodes (default: Φ★ with node limit N).

    Infeasible when the instances do not fit in N nodes, or no packing meets the given target.
    """
    nodes = normalise(current, capacity, n_nodes)
    new_items = check_new_items(new_items, capacity)
    if target_partial is not None and target_partial < 0:
        raise ValueError(f"target_partial={target_partial} must be >= 0")
    return _solve(nodes, capacity, new_items, target_partial, time_limit, solver,
                  to_phi_star=target_partial is None)


def min_migrations_to_admit(current: Sequence[Sequence[Item]], capacity: int, job_g: int, job_w: int,
                            job_id: int = -1, n_nodes: int | None = None,
                            time_limit: float = DEFAULT_TIME_LIMIT,
                            solver: Solver = "cp-sat") -> Certificate[int, Repack]:
    """Fewest migrations (then fewest GPUs moved) after which a gang job of ``job_w`` instances
    of ``job_g`` GPUs fits: 0 when it fits already, infeasible when no packing holds it."""
    if not 1 <= job_g <= capacity:
        raise ValueError(f"job g={job_g} outside 1..{capacity}")
    if job_w < 1:
        raise ValueError(f"job w={job_w} must be >= 1")
    nodes = normalise(current, capacity, n_nodes)
    return _solve(nodes, capacity, ((job_id, job_g),) * job_w, None, time_limit, solver, to_phi_star=False)


# --------------------------------------------------------------------------------------------
# Independent brute force over instance-to-node assignments (tiny clusters only)


def _bruteforce(nodes: Nodes, capacity: int, new_items: Sequence[Item],
                target: int | None | Literal["phi"]) -> tuple[int, int, int] | None:
    """(migrations, GPUs moved, partial nodes) of the lexicographically best assignment of every
    instance to a node, among those meeting ``target`` ("phi": the fewest partial nodes any
    assignment reaches, found by the same enumeration); None when nothing fits."""
    items = [(g, n) for n, node in enumerate(nodes) for _, g in node] + [(g, None) for _, g in new_items]
    best: dict[int, tuple[int, int]] = {}  # partial count -> best (migrations, gpus)
    for assign in itertools.product(range(len(nodes)), repeat=len(items)):
        used = [0] * len(nodes)
        for (g, _), dst in zip(items, assign):
            used[dst] += g
        if max(used, default=0) > capacity:
            continue
        partial = sum(1 for u in used if 0 < u < capacity)
        moved = [g for (g, src), dst in zip(items, assign) if src is not None and src != dst]
        cost = (len(moved), sum(moved))
        if cost < best.get(partial, (len(items) + 1, 0)):
            best[partial] = cost
    if not best:
        return None
    limit = min(best) if target == "phi" else (len(nodes) if target is None else target)
    ok = [(cost, p) for p, cost in best.items() if p <= limit]
    if not ok:
        return None
    cost, p = min(ok)
    return cost[0], cost[1], p


def repack_bruteforce(current: Sequence[Sequence[Item]], capacity: int = 8, target_partial: int | None = None,
                      n_nodes: int | None = None, new_items: Sequence[Item] = ()) -> tuple[int, int] | None:
    """(migrations, GPUs moved) of :func:`min_migration_repack` by exhaustive enumeration; None
    when infeasible. Exponential: for ≤ ~7 instances on ≤ 3 nodes."""
    nodes = normalise(current, capacity, n_nodes)
    out = _bruteforce(nodes, capacity, new_items, "phi" if target_partial is None else target_partial)
    return None if out is None else out[:2]


def admit_bruteforce(current: Sequence[Sequence[Item]], capacity: int, job_g: int, job_w: int,
                     n_nodes: int | None = None) -> tuple[int, int] | None:
    """(migrations, GPUs moved) of :func:`min_migrations_to_admit` by exhaustive enumeration."""
    nodes = normalise(current, capacity, n_nodes)
    out = _bruteforce(nodes, capacity, ((-1, job_g),) * job_w, None)
    return None if out is None else out[:2]
