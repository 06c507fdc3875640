"""Exact Φ★, F★ and the fill bound on a cluster of mixed node capacities and GPU models.

COMPASS-ABS §3.2 defines, for N nodes of one capacity G, Φ★ = min over packings of the active
instances into the N nodes of the number of partial nodes. On a real cluster (the openb node
list: nodes of 8, 4, 2 and 1 GPUs; models G2, G3, T4, P100, V100M16, V100M32, A10) the definition
is read node by node (docs/heterogeneous.md):

* a node n has capacity c_n and model m_n; it is *partial* when non-empty and using fewer than
  c_n GPUs (a 1-GPU node is never partial);
* an instance has demand g and, optionally, a set of allowed models (openb ``gpu_spec``,
  ``V100M16|V100M32``; no set = any model); it may sit on node n iff g ≤ c_n and m_n is allowed;
* Φ★ = min over feasible packings of the number of partial nodes; F★ = Φ★/N with N the total node
  count; SIF = (Φπ − Φ★)/N. With one capacity and no model sets this is the paper's Φ★ exactly.

The model stays a pattern ILP of constant size. Nodes are grouped into *classes* — same capacity,
and same answer to "is this model allowed?" for every model set in the demand (so without model
sets there is one class per capacity). For class k with |k| nodes of capacity c_k:

    x[k,p] ∈ Z≥0 per non-empty pattern p of capacity c_k,     Σ_p x[k,p] ≤ |k|
    y[t,k] ∈ Z≥0 per instance type t = (g, models) allowed on k
    Σ_p p_g · x[k,p] = Σ_{t: g_t = g} y[t,k]     (per class and demand)
    Σ_k y[t,k] = n_t                              (every instance placed)
    minimise Σ_{k, p: load(p) < c_k} x[k,p]       (Φ★)

Exact: instances of one demand are interchangeable inside a class (every one of them is allowed
on every node of the class), so a packing is determined by which types go to which class (y) and
how each class's multiset is cut into node patterns (x). Objectives: ``partial`` (Φ★), ``nodes``
(fewest non-empty nodes), ``unplaced`` (the *fill bound*: rows Σ_k y[t,k] ≤ n_t, minimise the
GPUs of the instances left out — the fewest GPUs any placement of a subset must leave
unallocated, the FGD paper's fill-until-full curve's lower envelope).

Solvers: CP-SAT (one worker) and HiGHS through PuLP on the same rows; :func:`mixed_bruteforce`
is an independent exhaustive search over instance-to-node assignments (no patterns, no classes)
for small cases, the tests' third opinion. Every solve has a time limit; a limit hit gives status
``feasible``/``unknown`` (:class:`~oracle.result.Certificate`), never a value passed off as optimal.

Entry point for other modules (e.g. the audit of a recorded log)::

    phi_star_mixed(capacities, counts, models=None, time_limit=10.0, solver="cp-sat")
        -> Certificate[int, MixedWitness]

``capacities[n]`` is node n's GPU count, ``counts[g-1]`` the number of active g-GPU instances
(any model), ``models[n]`` node n's model (only needed with model-constrained instances, see
:class:`MixedProblem`).
"""
from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Literal, Mapping, NamedTuple, Sequence

from oracle import highs
from oracle.gpu.patterns import Pattern, bin_patterns, load, sizes
from oracle.result import Certificate, Status, cpsat_status
from oracle import stopping

Objective = Literal["partial", "nodes", "unplaced"]
Solver = Literal["cp-sat", "highs"]
DEFAULT_TIME_LIMIT = 10.0
ANY_MODEL = ""  # a node whose model is not given


class ItemType(NamedTuple):
    """Instances of demand ``g`` allowed on the models in ``models`` (None: any model)."""

    g: int
    models: frozenset[str] | None = None

    def allows(self, capacity: int, model: str) -> bool:
        return self.g <= capacity and (self.models is None or model in self.models)


class NodeClass(NamedTuple):
    """``count`` interchangeable nodes of ``capacity`` GPUs; ``models`` the node models merged
    into the class (they answer every instance type's model set alike)."""

    capacity: int
    models: tuple[str, ...]
    size: int


# The packing a certificate proves: (class index, node content as demands descending, multiplicity).
MixedWitness = tuple[tuple[int, tuple[int, ...], int], ...]


@dataclass(frozen=True)
class MixedProblem:
    """A cluster (``capacities[n]``, ``models[n]`` per node) and the instances to pack
    (instance type → count). Build it with :meth:`of`; ``classes`` are derived."""

    capacities: tuple[int, ...]
    models: tuple[str, ...]
    demand: tuple[tuple[ItemType, int], ...]

    @staticmethod
    def of(capacities: Sequence[int], demand: Mapping[ItemType, int] | Sequence[int],
           models: Sequence[str] | None = None) -> MixedProblem:
        """Validate and normalise; ``demand`` is a mapping of types to counts or counts n_1..n_G
        (any model). ValueError naming the bad field."""
        caps = tuple(capacities)
        for n, c in enumerate(caps):
            if isinstance(c, bool) or not isinstance(c, int) or c < 1:
                raise ValueError(f"capacities[{n}]={c!r} must be an integer >= 1")
        mods = tuple(ANY_MODEL for _ in caps) if models is None else tuple(models)
        if len(mods) != len(caps):
            raise ValueError(f"models has {len(mods)} entries, capacities {len(caps)}")
        if not isinstance(demand, Mapping):
            demand = {ItemType(g): n for g, n in enumerate(demand, start=1)}
        items: list[tuple[ItemType, int]] = []
        for t, n in demand.items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise ValueError(f"count of {t}={n!r} must be a non-negative integer")
            if t.g < 1:
                raise ValueError(f"demand g={t.g} must be >= 1")
            if n:
                items.append((ItemType(t.g, None if t.models is None else frozenset(t.models)), n))
        return MixedProblem(caps, mods, tuple(sorted(items, key=_type_key)))

    @property
    def n_nodes(self) -> int:
        return len(self.capacities)

    @property
    def types(self) -> tuple[ItemType, ...]:
        return tuple(t for t, _ in self.demand)

    @property
    def classes(self) -> tuple[NodeClass, ...]:
        return _classes(self.capacities, self.models, self.types)

    def node_class(self) -> tuple[int, ...]:
        """Each node's class index."""
        index = {(c.capacity, m): k for k, c in enumerate(self.classes) for m in c.models}
        return tuple(index[(c, m)] for c, m in zip(self.capacities, self.models))


def _type_key(item: tuple[ItemType, int]) -> tuple[int, tuple[str, ...]]:
    t = item[0]
    return (-t.g, () if t.models is None else ("",) + tuple(sorted(t.models)))


def _classes(capacities: tuple[int, ...], models: tuple[str, ...], types: tuple[ItemType, ...]) -> tuple[NodeClass, ...]:
    """Nodes grouped by (capacity, allowed-or-not for every type's model set)."""
    sets = sorted({t.models for t in types if t.models is not None}, key=sorted)
    groups: dict[tuple[int, tuple[bool, ...]], Counter[str]] = {}
    for c, m in zip(capacities, models):
        groups.setdefault((c, tuple(m in s for s in sets)), Counter())[m] += 1
    return tuple(NodeClass(c, tuple(sorted(ms)), sum(ms.values()))
                 for (c, _), ms in sorted(groups.items(), key=lambda kv: (-kv[0][0], kv[0][1])))


def node_is_partial(used: int, capacity: int) -> bool:
    """Partial node of capacity c: non-empty and fewer than c GPUs used (§3.1, node by node)."""
    return 0 < used < capacity


def _cost(used: int, capacity: int, objective: Objective) -> int:
    if objective == "partial":
        return int(node_is_partial(used, capacity))
    if objective == "nodes":
        return int(used > 0)
    return 0


# ------------------------------------------------------------------------------ the model


class Var(NamedTuple):
    """One integer variable: a pattern column x[k,p] (``kind`` "x") or a split y[t,k] ("y")."""

    kind: str
    cls: int
    pattern: Pattern  # x: the pattern; y: ()
    type_index: int  # y: index into problem.types; x: -1
    ub: int
    cost: int


class Row(NamedTuple):
    """Σ coef·var (sense) rhs; sense is "==" or "<="."""

    terms: tuple[tuple[int, int], ...]  # (variable index, coefficient)
    sense: str
    rhs: int


@dataclass(frozen=True)
class LinearModel:
    """The linear model of a mixed Φ★ problem: variables, rows, objective and its constant offset."""

    problem: MixedProblem
    objective: Objective
    variables: tuple[Var, ...]
    rows: tuple[Row, ...]
    constant: int  # objective offset (unplaced: total GPUs demanded)


@lru_cache(maxsize=None)
def _patterns(capacity: int) -> tuple[Pattern, ...]:
    return bin_patterns(capacity)


def build_model(problem: MixedProblem, objective: Objective) -> LinearModel:
    """The pattern ILP of the module docstring (``unplaced``: objective = constant − Σ g·y)."""
    classes, types = problem.classes, problem.types
    total = dict(problem.demand)
    variables: list[Var] = []
    for k, cl in enumerate(classes):
        for p in _patterns(cl.capacity):
            ub = min([cl.size] + [sum(n for t, n in total.items() if t.g == g + 1) // c for g, c in enumerate(p) if c])
            variables.append(Var("x", k, p, -1, ub, _cost(load(p), cl.capacity, objective)))
    for i, t in enumerate(types):
        for k, cl in enumerate(classes):
            if any(t.allows(cl.capacity, m) for m in cl.models):
                variables.append(Var("y", k, (), i, total[t], -t.g if objective == "unplaced" else 0))
    rows: list[Row] = []
    for k, cl in enumerate(classes):
        rows.append(Row(tuple((j, 1) for j, v in enumerate(variables) if v.kind == "x" and v.cls == k), "<=", cl.size))
        for g in range(1, cl.capacity + 1):
            terms = [(j, v.pattern[g - 1]) for j, v in enumerate(variables)
                     if v.kind == "x" and v.cls == k and v.pattern[g - 1]]
            terms += [(j, -1) for j, v in enumerate(variables) if v.kind == "y" and v.cls == k and types[v.type_index].g == g]
            rows.append(Row(tuple(terms), "==", 0))
    sense = "<=" if objective == "unplaced" else "=="
    for i, t in enumerate(types):
        rows.append(Row(tuple((j, 1) for j, v in enumerate(variables) if v.kind == "y" and v.type_index == i), sense, total[t]))
    constant = sum(t.g * n for t, n in problem.demand) if objective == "unplaced" else 0
    return LinearModel(problem, objective, tuple(variables), tuple(rows), constant)


Values = tuple[int, ...]  # one value per model variable; () without an incumbent


def _solve_cpsat(m: LinearModel, time_limit: float) -> Certificate[int, Values]:
    from ortools import __version__ as ortools_version  # type: ignore[attr-defined]  # not in its stubs
    from ortools.sat.python import cp_model

    t0 = time.perf_counter()
    model = cp_model.CpModel()
    x = [model.new_int_var(0, v.ub, f"v{j}") for j, v in enumerate(m.variables)]
    for r in m.rows:
        expr = sum(c * x[j] for j, c in r.terms)
        model.add(expr == r.rhs if r.sense == "==" else expr <= r.rhs)
    model.minimize(sum(v.cost * x[j] for j, v in enumerate(m.variables) if v.cost))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = float(time_limit)
    status = cpsat_status(solver.status_name(stopping.solve(solver, model)))
    wall = time.perf_counter() - t0
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return Certificate(status, None, None, (), "cp-sat", ortools_version, wall)
    obj = m.constant + int(round(solver.objective_value))
    bound = obj if status is Status.OPTIMAL else _ceil(m.constant + solver.best_objective_bound)
    return Certificate(status, obj, bound, tuple(int(solver.value(v)) for v in x), "cp-sat", ortools_version, wall)


def _solve_highs(m: LinearModel, time_limit: float) -> Certificate[int, Values]:
    import pulp

    t0 = time.perf_counter()
    prob = pulp.LpProblem("mixed_pattern_ilp", pulp.LpMinimize)
    x = [highs.integer_variable(prob, f"v{j}", v.ub) for j, v in enumerate(m.variables)]
    prob += pulp.lpSum(v.cost * x[j] for j, v in enumerate(m.variables))
    for r in m.rows:
        expr = pulp.lpSum(c * x[j] for j, c in r.terms)
        prob.addConstraint(expr == r.rhs if r.sense == "==" else expr <= r.rhs)
    res = highs.solve(prob, time_limit, t0)
    name, version, wall = res.solver, res.solver_version, res.wall_time
    if res.status is Status.INFEASIBLE:
        return Certificate(Status.INFEASIBLE, None, None, (), name, version, wall)
    bound = None if not math.isfinite(res.dual_bound) else _ceil(m.constant + res.dual_bound)
    if not res.has_incumbent:
        return Certificate(Status.UNKNOWN, None, bound, (), name, version, wall)
    vals = tuple(int(round(v.varValue)) for v in x)
    obj = m.constant + sum(v.cost * val for v, val in zip(m.variables, vals))
    if res.status is Status.OPTIMAL and abs(obj - m.constant - res.objective) < 1e-3:
        return Certificate(Status.OPTIMAL, obj, obj, vals, name, version, wall)
    # A limit was hit, or HiGHS's float objective does not match its rounded solution.
    return Certificate(Status.FEASIBLE, obj, bound, vals, name, version, wall)


def _ceil(v: float) -> int:
    return int(math.ceil(v - 1e-6))


BACKENDS: dict[Solver, Callable[[LinearModel, float], Certificate[int, Values]]] = {
    "cp-sat": _solve_cpsat,
    "highs": _solve_highs,
}


def _witness(m: LinearModel, values: Values) -> MixedWitness:
    out = [(v.cls, sizes(v.pattern), val) for v, val in zip(m.variables, values) if v.kind == "x" and val]
    return tuple(sorted(out, key=lambda e: (e[0], tuple(-g for g in e[1]))))


_memo: dict[tuple[MixedProblem, Objective, Solver], Certificate[int, MixedWitness]] = {}


def solve_mixed(problem: MixedProblem, objective: Objective = "partial", time_limit: float = DEFAULT_TIME_LIMIT,
                solver: Solver = "cp-sat") -> Certificate[int, MixedWitness]:
    """Solve ``problem`` for ``objective`` on ``solver``; the witness is the packing (per class).
    Proven answers are memoised (an audit asks again for every repeated state); a limit hit is
    not, so a later call with more time may settle it."""
    if solver not in BACKENDS:
        raise ValueError(f"unknown solver {solver!r}; known: {', '.join(BACKENDS)}")
    key = (problem, objective, solver)
    cached = _memo.get(key)
    if cached is not None:
        return cached
    m = build_model(problem, objective)
    raw = BACKENDS[solver](m, time_limit)
    witness = _witness(m, raw.witness) if raw.witness else ()
    cert = Certificate(raw.status, raw.objective, raw.bound, witness, raw.solver, raw.solver_version, raw.wall_time)
    if cert.is_proven:
        _memo[key] = cert
    return cert


def clear_cache() -> None:
    """Forget memoised answers (benchmarks measuring cold solves)."""
    _memo.clear()


def phi_star_mixed(capacities: Sequence[int], counts: Sequence[int] | Mapping[ItemType, int],
                   models: Sequence[str] | None = None, time_limit: float = DEFAULT_TIME_LIMIT,
                   solver: Solver = "cp-sat") -> Certificate[int, MixedWitness]:
    """Φ★ of a mixed cluster: the fewest partial nodes over all packings of the instances.

    ``capacities[n]``: GPUs of node n (any order; N = len(capacities)). ``counts``: n_1..n_G
    (``counts[g-1]`` instances of g GPUs, any model) or a mapping ItemType → count for
    model-constrained instances, with ``models[n]`` node n's model. Status ``infeasible`` when
    the instances do not fit; F★ = objective / len(capacities). ValueError for bad input."""
    return solve_mixed(MixedProblem.of(capacities, counts, models), "partial", time_limit, solver)


def fill_bound(capacities: Sequence[int], counts: Sequence[int] | Mapping[ItemType, int],
               models: Sequence[str] | None = None, time_limit: float = DEFAULT_TIME_LIMIT,
               solver: Solver = "cp-sat") -> Certificate[int, MixedWitness]:
    """The fewest GPUs of the requested instances that no packing can place (0 when all fit):
    any placement of any subset leaves at least this many requested GPUs out, so
    (cluster GPUs − requested + objective) / cluster GPUs bounds the unallocated share from below
    once requested ≥ placed."""
    return solve_mixed(MixedProblem.of(capacities, counts, models), "unplaced", time_limit, solver)


# ------------------------------------------------------------------------------ checks


def witness_violations(problem: MixedProblem, witness: MixedWitness) -> list[str]:
    """Every reason ``witness`` is not a packing of a sub-multiset of the demand into the classes
    (counts are compared per demand g; model sets are checked by the split the model proves)."""
    out: list[str] = []
    classes = problem.classes
    per_class: Counter[int] = Counter()
    placed: Counter[int] = Counter()
    for k, demands, mult in witness:
        if not 0 <= k < len(classes):
            out.append(f"class {k} does not exist")
            continue
        if sum(demands) > classes[k].capacity:
            out.append(f"class {k}: node content {demands} exceeds capacity {classes[k].capacity}")
        per_class[k] += mult
        for g in demands:
            placed[g] += mult
    out += [f"class {k}: {n} nodes used > {classes[k].size}" for k, n in per_class.items()
            if 0 <= k < len(classes) and n > classes[k].size]
    wanted: Counter[int] = Counter()
    for t, n in problem.demand:
        wanted[t.g] += n
    out += [f"{placed[g]} instances of g={g} placed > {wanted[g]} demanded" for g in placed if placed[g] > wanted[g]]
    return out


def witness_partial(problem: MixedProblem, witness: MixedWitness) -> int:
    """Partial nodes of a witness packing."""
    classes = problem.classes
    return sum(m for k, d, m in witness if node_is_partial(sum(d), classes[k].capacity))


def mixed_bruteforce(problem: MixedProblem, objective: Objective = "partial") -> Certificate[int, MixedWitness]:
    """Exact by exhaustive search: instances one by one (largest first) onto every node (or left
    out, for ``unplaced``), memoised on the multiset of (capacity, model, load) over nodes. No
    patterns and no classes; small instances only (the tests' independent opinion)."""
    t0 = time.perf_counter()
    items = [t for t, n in problem.demand for _ in range(n)]
    start = tuple(sorted((c, m, 0) for c, m in zip(problem.capacities, problem.models)))
    memo: dict[tuple[int, tuple[tuple[int, str, int], ...]], float] = {}

    def best(i: int, nodes: tuple[tuple[int, str, int], ...]) -> float:
        if i == len(items):
            return sum(_cost(u, c, objective) for c, _, u in nodes)
        key = (i, nodes)
        if key not in memo:
            t = items[i]
            value = best(i + 1, nodes) + t.g if objective == "unplaced" else math.inf
            for j in sorted({j for j, (c, m, u) in enumerate(nodes) if t.allows(c - u, m)},
                            key=lambda j: nodes[j]):
                if j and nodes[j] == nodes[j - 1]:
                    continue  # an identical node was tried
                c, m, u = nodes[j]
                nxt = tuple(sorted(nodes[:j] + ((c, m, u + t.g),) + nodes[j + 1:]))
                value = min(value, best(i + 1, nxt))
            memo[key] = value
        return memo[key]

    value = best(0, start)
    wall = time.perf_counter() - t0
    if value == math.inf:
        return Certificate(Status.INFEASIBLE, None, None, (), "bruteforce", "1", wall)
    return Certificate(Status.OPTIMAL, int(value), int(value), (), "bruteforce", "1", wall)
