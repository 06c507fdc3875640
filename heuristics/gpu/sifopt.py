"""SIFOpt: the oracle scheduler that keeps Φπ = Φ★ after every event with the fewest migrations.

seeds/000 §5 and Appendix C use "the oracle scheduler SIFOpt", which after every event migrates
towards a packing with Φ★(t) partial nodes (Algorithm 2's witness P★ is "a concrete target to
migrate towards"). The paper does not say how an arrival is placed nor which Φ★ packing is the
target; issue 6 asks for the packing reachable with the **minimum number of migrations**.

Readings chosen (named ``"sifopt"`` in ``heuristics.gpu.registry``):

* **Every event ends at Φ★.** After an arrival or a departure the placement is moved to one with
  Φ★ partial nodes, Φ★ computed over the running instances with the node limit N
  (``oracle.gpu.phi_bound.quick_phi_star``: a BFD certificate, else ``oracle.gpu.phi_star``), by
  the fewest instance migrations, then the fewest GPUs moved
  (``oracle.gpu.min_migration.min_migration_repack``).
* **Arrivals.** The arriving job is first tried by best-fit (GFS's rule, ``heuristics.gpu.baselines``);
  if that already leaves Φ★ partial nodes, it is admitted with no migration (provably optimal:
  zero is a lower bound); otherwise best-fit's placement is undone (its departure restores the
  state exactly). Otherwise its instances are placed *jointly* with the repack: they are
  new instances the model may put anywhere, and they are not counted as migrations. A job that
  does not fit by best-fit but fits after migrations is therefore admitted through them, and a job
  is refused only when no packing of all instances into N nodes exists — SIFOpt never refuses a
  job that any migration could admit.
* **Departures.** The job leaves; if Φπ > Φ★ afterwards, the cluster is repacked.
* **Exact up to ``exact_max_nodes`` nodes** (default 512). The min-migration repack
  (``oracle.gpu.min_migration.min_migration_repack``) settles most of SIFOpt's events without a
  full ILP: Φ★ by a best-fit-decreasing certificate (``oracle.gpu.phi_bound``), a repack that one
  migration settles by exhaustive search (``oracle.gpu.one_move``), the rest by the ILP with a
  migration budget raised level by level from a proven lower bound, and only beyond that by the
  unrestricted ILP — each step proven (status optimal), none a heuristic.
  ``benchmarks/bench_sifopt.py`` measures it against the pre-issue-15 code on the same events
  and runs it at N = 128..512 (figures in ``docs/sifopt_scheduler.md``). Beyond
  ``exact_max_nodes``, or when the exact solve hits ``time_limit`` (counted in
  ``stats.fallbacks``; never claimed optimal), :func:`heuristic_repack` is used.
  ``solver="highs"`` solves the same ILPs with HiGHS instead of CP-SAT.
* **The heuristic** (measured gap in ``docs/sifopt_scheduler.md``) picks target node patterns, then
  assigns them to nodes optimally (min-cost flow, ``oracle.gpu.plain_nodes.assign_patterns``) and
  moves what does not fit (``oracle.gpu.plain_nodes.realise_target``). Three candidate target
  sets, the cheapest wins:
  (a) every full node stays, the other nodes get a Φ★ witness of the remaining instances — when
  that still reaches the global Φ★, else a Φ★ witness of everything; (b) a Φ★ witness that keeps
  as many instances as possible on nodes whose whole content it reuses (a 132-variable pattern
  ILP, :func:`keep_nodes_witness`); (c) no witness: drain the partial node with the fewest
  instances into the fullest non-empty nodes with room, until Φ★ (:func:`consolidate`; dropped
  when it gets stuck). (a) and (b) always reach Φ★ partial nodes, (c) only counts when it does;
  only the migration count may exceed the exact minimum.

* **Mixed node capacities** (:meth:`RepackingPolicy.on_capacities`, docs/heterogeneous.md): SIFOpt
  (and FFT, DRR) run natively — Φ★ is ``oracle.gpu.mixed_phi``'s, the repack is the min-migration
  oracle on per-node capacities, a node is partial below its own capacity; the heuristic keeps
  candidates (a) and (c) (candidate (b)'s ILP is written for one capacity).

Every Φπ = Φ★ claim rests on a Φ★ certificate; if Φ★ itself is unknown (its solve hit the time
limit) the event is done by best-fit without repacking and counted in ``stats.phi_unknown``.
"""
from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, NamedTuple, Self, Sequence

from heuristics.gpu.baselines import NodeRulePolicy
from heuristics.gpu.cluster import Instance, Job, Placement, check_job_shape
from heuristics.gpu.model_repack import phi_star_with_models, repack_with_models
from heuristics.gpu.policy import EventResult, Migration, StateKey
from oracle.gpu.min_migration import cluster_phi_star, min_migration_repack, witness_targets
from oracle.gpu.patterns import Pattern, bin_patterns, from_sizes, load
# The Φ★ oracle: the solver-free BFD certificate when it applies, else oracle.gpu.phi_star (tests
# replace this name to simulate an unproven Φ★).
from oracle.gpu.phi_bound import quick_phi_star as phi_star
from oracle.gpu.plain_nodes import (
    Admission,
    Capacity,
    Item,
    Move,
    Nodes,
    assign_patterns,
    instance_counts,
    node_capacities,
    node_pattern,
    outflow,
    realise_target,
)
from oracle.gpu.repack_ilp import BACKENDS, Solver
from oracle.result import Status
from oracle import stopping

DEFAULT_EXACT_MAX_NODES = 512
DEFAULT_TIME_LIMIT = 10.0


@dataclass
class RepackStats:
    """How each repack was settled (a policy's ``stats``; copied by ``clone``)."""

    trivial: int = 0  # already at Φ★ (after best-fit on arrivals): zero migrations, proven
    exact: int = 0  # the min-migration ILP proved optimality
    heuristic: int = 0  # N > exact_max_nodes: heuristic_repack by design
    fallbacks: int = 0  # the exact solve hit its time limit: heuristic_repack instead
    phi_unknown: int = 0  # Φ★ itself unknown: no repack
    stuck: int = 0  # with GPU models: the drain stopped short of Φ★ (``model_repack``)


class RepackOutcome(NamedTuple):
    """A repack's result. ``how`` is 'exact' (proven minimum), 'heuristic', or 'infeasible' (the
    instances do not fit in N nodes; ``nodes`` is None), or 'unknown' (Φ★ unknown)."""

    how: str
    nodes: Nodes | None
    migrations: tuple[Migration, ...]


def plain(p: Placement) -> Nodes:
    """A Placement as the oracle's plain data: per node, (job id, g) items."""
    return tuple(tuple((i.job, i.g) for i in node) for node in p.nodes)


def to_placement(nodes: Nodes, capacity: int) -> Placement:
    return Placement(capacity, tuple(tuple(sorted(Instance(j, g) for j, g in node)) for node in nodes))


class _Witness(NamedTuple):
    """A proven Φ★ and a packing that attains it, as one target pattern per node (assigned to the
    nodes at least cost)."""

    phi: int
    targets: list[Pattern]


def _witness_targets(nodes: Nodes, caps: tuple[int, ...], capacity: int, new_items: Sequence[Item],
                     time_limit: float) -> tuple[Status, _Witness | None]:
    """(status, the Φ★ witness when the status is optimal) of ``nodes`` plus ``new_items`` on
    nodes of ``caps`` (all of ``capacity`` GPUs: ``phi_star``; else ``oracle.gpu.mixed_phi``)."""
    counts = instance_counts(nodes, new_items, capacity)
    if any(c != capacity for c in caps):  # mixed, or a part of a mixed cluster of smaller nodes
        cert = cluster_phi_star(counts, caps, time_limit)
        if not cert.is_optimal or cert.objective is None:
            return cert.status, None
        return Status.OPTIMAL, _Witness(cert.objective, witness_targets(nodes, caps, capacity, cert))
    cert = phi_star(counts, len(nodes), capacity, time_limit)
    if not cert.is_optimal or cert.objective is None:
        return cert.status, None
    pats = [from_sizes(d, capacity) for d, m in cert.witness for _ in range(m)]
    return Status.OPTIMAL, _Witness(cert.objective, assign_patterns(nodes, pats, capacity))


def keep_nodes_witness(nodes: Nodes, capacity: int, new_items: Sequence[Item], phi: int,
                       time_limit: float) -> list[Pattern] | None:
    """A Φ★ packing (as node patterns) that reuses as many current node contents as possible:
    the pattern ILP of ``oracle.gpu.phi_star`` with Φ ≤ Φ★ as a constraint and, as objective, the
    instances on current nodes whose whole content is kept (k_p ≤ x_p, k_p ≤ nodes now holding
    exactly p). 2·66 variables for G = 8; None when the solve does not finish in time."""
    from ortools.sat.python import cp_model

    counts = instance_counts(nodes, new_items, capacity)
    now = Counter(node_pattern(node, capacity) for node in nodes if node)
    pats = bin_patterns(capacity)
    model = cp_model.CpModel()
    x = [model.new_int_var(0, len(nodes), "") for _ in pats]
    keep = [model.new_int_var(0, min(now.get(p, 0), len(nodes)), "") for p in pats]
    for g in range(capacity):
        model.add(sum(p[g] * v for p, v in zip(pats, x) if p[g]) == counts[g])
    model.add(sum(x) <= len(nodes))
    model.add(sum(v for p, v in zip(pats, x) if load(p) < capacity) <= phi)
    for k, v in zip(keep, x):
        model.add(k <= v)
    model.maximize(sum(sum(p) * k for p, k in zip(pats, keep)))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = float(time_limit)
    if stopping.solve(solver, model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return [p for p, v in zip(pats, x) for _ in range(solver.value(v))]


def consolidate(nodes: Nodes, capacity: Capacity, new_items: Sequence[Item], phi: int) -> list[Pattern] | None:
    """Drain partial nodes until Φ★ is reached: new instances first go best-fit (largest first);
    then, repeatedly, the partial node with the fewest instances (ties: fewest GPUs, lowest
    index) is emptied, its instances (largest first) each going to the fullest *other non-empty*
    node with room (best-fit). Each round empties a partial node without making an empty node
    partial, so Φπ falls every round. Returns the per-node target patterns, or None when an
    instance finds no room (the strategy is stuck short of Φ★). ``capacity`` may be one per node
    (room and partial status against each node's own)."""
    caps = node_capacities(capacity, len(nodes))
    top = capacity if isinstance(capacity, int) else max(caps)
    content = [[g for _, g in node] for node in nodes]
    used = [sum(c) for c in content]

    def fullest_fit(g: int, allowed: Iterable[int]) -> int | None:
        fits = [n for n in allowed if used[n] + g <= caps[n]]
        return max(fits, key=lambda n: (used[n], -n)) if fits else None

    for g in sorted((g for _, g in new_items), reverse=True):
        n = fullest_fit(g, range(len(nodes)))
        if n is None:
            return None
        content[n].append(g)
        used[n] += g
    while sum(1 for u, cap in zip(used, caps) if 0 < u < cap) > phi:
        partial = [n for n, u in enumerate(used) if 0 < u < caps[n]]
        donor = min(partial, key=lambda n: (len(content[n]), used[n], n))
        for g in sorted(content[donor], reverse=True):
            n = fullest_fit(g, (m for m in range(len(nodes)) if m != donor and used[m] > 0))
            if n is None:
                return None
            content[n].append(g)
            used[n] += g
        content[donor], used[donor] = [], 0
    return [node_pattern([(0, g) for g in c], top) for c in content]


def _cost(nodes: Nodes, targets: Sequence[Pattern], capacity: int) -> tuple[int, int]:
    mig = [outflow(node_pattern(node, capacity), t) for node, t in zip(nodes, targets)]
    return sum(m for m, _ in mig), sum(g for _, g in mig)


def heuristic_repack(nodes: Nodes, capacity: Capacity, new_items: Sequence[Item] = (),
                     time_limit: float = DEFAULT_TIME_LIMIT
                     ) -> tuple[str, Nodes | None, tuple[Move, ...], tuple[Admission, ...]]:
    """Reach Φ★ partial nodes without the min-migration ILP (module docstring, "The heuristic").
    ``capacity`` may be one per node (mixed capacities: candidates (a) and (c) only, see
    docs/heterogeneous.md).

    Returns (status, placement, moves, admissions); status 'ok', else Φ★'s status when Φ★ was not
    proven (infeasible, feasible or unknown) and placement None.
    """
    caps = node_capacities(capacity, len(nodes))
    top = capacity if isinstance(capacity, int) else max(caps)
    status, total = _witness_targets(nodes, caps, top, new_items, time_limit)
    if total is None:
        return status, None, (), ()
    phi = total.phi
    # Candidate (a): full nodes stay, the rest is repacked to a Φ★ witness of what remains.
    full = {n for n, node in enumerate(nodes) if sum(g for _, g in node) == caps[n]}
    rest = [n for n in range(len(nodes)) if n not in full]
    _, part = _witness_targets(tuple(nodes[n] for n in rest), tuple(caps[n] for n in rest), top, new_items,
                               time_limit)
    if part is not None and part.phi == phi:
        a = [node_pattern(node, top) for node in nodes]
        for n, p in zip(rest, part.targets):
            a[n] = p
    else:
        a = total.targets
    candidates = [a]
    # Candidate (b): a Φ★ witness that keeps as many whole current nodes as possible (its pattern
    # ILP is written for one capacity).
    if len(set(caps)) <= 1:
        kept = keep_nodes_witness(nodes, top, new_items, phi, time_limit)
        if kept is not None:
            candidates.append(assign_patterns(nodes, kept, top))
    # Candidate (c): drain the cheapest partial nodes into the fullest ones (no witness).
    drained = consolidate(nodes, capacity, new_items, phi)
    if drained is not None:
        candidates.append(drained)
    targets = min(candidates, key=lambda t: _cost(nodes, t, top))
    placement, moves, admitted = realise_target(nodes, targets, new_items)
    return "ok", placement, moves, admitted


def repack(nodes: Nodes, capacity: Capacity, new_items: Sequence[Item], exact_max_nodes: int,
           time_limit: float, stats: RepackStats, kind: str, solver: Solver = "cp-sat") -> RepackOutcome:
    """Move ``nodes`` (plus ``new_items``) to Φ★ partial nodes: exact when N ≤ exact_max_nodes and
    the solve proves optimality, else by :func:`heuristic_repack`; ``stats`` records which.
    ``capacity``: G, or one capacity per node."""
    if len(nodes) <= exact_max_nodes:
        cert = min_migration_repack(nodes, capacity, new_items=new_items, time_limit=time_limit, solver=solver)
        if cert.is_optimal:
            stats.exact += 1
            return RepackOutcome("exact", cert.witness.placement, _migrations(cert.witness.moves, kind))
        if cert.status is Status.INFEASIBLE:
            return RepackOutcome("infeasible", None, ())
        if cert.witness.target_partial is None:  # Φ★ itself not proven
            stats.phi_unknown += 1
            return RepackOutcome("unknown", None, ())
        stats.fallbacks += 1
    else:
        stats.heuristic += 1
    status, placement, moves, _ = heuristic_repack(nodes, capacity, new_items, time_limit)
    if status == Status.INFEASIBLE:
        return RepackOutcome("infeasible", None, ())
    if status != "ok":
        stats.phi_unknown += 1
        return RepackOutcome("unknown", None, ())
    return RepackOutcome("heuristic", placement, _migrations(moves, kind))


def _migrations(moves: Iterable[Move], kind: str) -> tuple[Migration, ...]:
    return tuple(Migration(m.job, m.g, m.src, m.dst, kind) for m in moves)


class RepackingPolicy:
    """Shared state of the migrating policies (SIFOpt, FFT, DRR): a best-fit cluster
    (``heuristics.gpu.baselines.NodeRulePolicy``) whose placement a repack may replace.

    On mixed node capacities (:meth:`on_capacities`, docs/heterogeneous.md) the policy runs
    natively: every repack, Φ★ and Φπ reads each node's own capacity (the min-migration oracle
    and Φ★ of ``oracle.gpu`` take per-node capacities). Only the best-fit bookkeeping runs on
    G = the largest capacity with a fixed *filler* of G − c_n GPUs on node n, so that its free
    GPUs per node are the real ones (best-fit then decides exactly as on the real nodes); fillers
    are internal: ``placement``, ``state_key``, ``running`` and every repack see real instances
    only, and no migration can name one (repacks are computed on the real placement).
    """

    name = "repacking"
    # Model-constrained jobs (openb ``gpu_spec``, ``on_capacities``'s ``job_models``): best-fit
    # places them on nodes of their models, and a repack with one of them running (or arriving)
    # is ``heuristics.gpu.model_repack``'s.
    honours_models = True

    def __init__(self, n_nodes: int, capacity: int = 8, exact_max_nodes: int = DEFAULT_EXACT_MAX_NODES,
                 time_limit: float = DEFAULT_TIME_LIMIT, solver: Solver = "cp-sat") -> None:
        if solver not in BACKENDS:  # the options come from users (``--policy-opt``), unchecked
            raise ValueError(f"unknown solver {solver!r}; known: {', '.join(BACKENDS)}")
        if exact_max_nodes < 0:
            raise ValueError(f"exact_max_nodes={exact_max_nodes} must be >= 0")
        if time_limit <= 0:
            raise ValueError(f"time_limit={time_limit} must be > 0")
        self.n_nodes = n_nodes
        self.capacity = capacity
        self.capacities: tuple[int, ...] = (capacity,) * n_nodes
        self.exact_max_nodes = exact_max_nodes
        self.time_limit = time_limit
        self.solver = solver
        self.stats = RepackStats()
        self._fillers: tuple[tuple[Instance, ...], ...] = ()  # per node; () on one capacity
        self.models: tuple[str, ...] | None = None  # node models (None: no job is model-constrained)
        self.job_models: dict[int, frozenset[str]] = {}  # job id -> the models it may use
        self._bf = NodeRulePolicy("best-fit", n_nodes, capacity)

    def on_capacities(self, capacities: Sequence[int], models: Sequence[str] | None = None,
                      job_models: Mapping[int, frozenset[str]] | None = None) -> Self:
        """This policy, with the same options and an empty cluster, on nodes of ``capacities``
        (one per node; mixed capacities run natively, see the class docstring) of GPU ``models``;
        a job in ``job_models`` may only use nodes of its models (``honours_models`` policies
        only: ValueError for the others)."""
        caps = tuple(capacities)
        if not caps or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in caps):
            raise ValueError(f"capacities={capacities!r} must be a non-empty list of integers >= 1")
        if models is not None and len(models) != len(caps):
            raise ValueError(f"models: {len(models)} entries for {len(caps)} nodes")
        if self.running():
            raise ValueError("on_capacities needs an empty cluster")
        other = copy.copy(self)
        other.n_nodes, other.capacity, other.capacities = len(caps), max(caps), caps
        other.stats = RepackStats()
        # Job ids of fillers are negative (real jobs must have ids >= 0 on mixed nodes).
        other._fillers = tuple(() if c == other.capacity else (Instance(-(n + 1), other.capacity - c),)
                               for n, c in enumerate(caps)) if len(set(caps)) > 1 else ()
        other._bf = NodeRulePolicy("best-fit", other.n_nodes, other.capacity)
        other.models, other.job_models = None, {}
        if job_models:  # best-fit places each constrained job on nodes of its models (fillers: any)
            other.models, other.job_models = tuple(models or ("",) * len(caps)), dict(job_models)
            other._bf = other._bf.on_capacities((other.capacity,) * len(caps), other.models, other.job_models)
        return other.with_state(Placement(other.capacity, ((),) * other.n_nodes))

    def may_use(self, job_id: int, n: int) -> bool:
        """Whether job ``job_id`` may have instances on node ``n`` (its ``gpu_spec``, if any)."""
        if self.models is None:
            return True
        allowed = self.job_models.get(job_id)
        return allowed is None or self.models[n] in allowed

    # -- Policy protocol (arrive / depart are the subclasses') ----------------------------------
    def placement(self) -> Placement:
        p = self._bf.placement()
        if not self._fillers:
            return p
        return Placement(p.capacity, tuple(tuple(i for i in node if i.job >= 0) for node in p.nodes))

    def state_key(self) -> Placement:
        return self.placement()

    def running(self) -> dict[int, Job]:
        jobs = self._bf.running()
        return {j: job for j, job in jobs.items() if j >= 0} if self._fillers else jobs

    def clone(self) -> Self:
        return self.with_state(self.placement())

    def with_state(self, key: StateKey) -> Self:
        # A shallow copy keeps every option and, in subclasses, their own scalar state (a round
        # policy's clock); only the mutable parts are replaced.
        other = copy.copy(self)
        other._bf = self._bf.with_state(self._filled(key))
        other.stats = replace(self.stats)
        return other

    def occupancy(self) -> tuple[int, ...]:
        """Number of nodes at each used-GPU level 0..G (real instances)."""
        if not self._fillers:
            return self._bf.occupancy()
        out = [0] * (self.capacity + 1)
        for node in self.placement().nodes:
            out[sum(i.g for i in node)] += 1
        return tuple(out)

    def partial_empty(self) -> tuple[int, int]:
        """(partial nodes Φπ, empty nodes), each node against its own capacity."""
        if not self._fillers:
            occ = self._bf.occupancy()
            return self.n_nodes - occ[0] - occ[-1], occ[0]
        used = [sum(i.g for i in node) for node in self.placement().nodes]
        return sum(1 for u, c in zip(used, self.capacities) if 0 < u < c), used.count(0)

    def _partial(self) -> int:
        """Φπ (from the occupancy histogram on one capacity: O(G), no placement built)."""
        return self.partial_empty()[0]

    # -- helpers -------------------------------------------------------------------------------
    def _filled(self, key: StateKey) -> StateKey:
        """A real placement plus the fillers (mixed capacities; ValueError for a node over its
        own capacity or a negative job id); ``key`` itself on one capacity."""
        if not self._fillers or not isinstance(key, Placement):
            return key
        if key.n_nodes != self.n_nodes:
            raise ValueError(f"placement has {key.n_nodes} nodes, the cluster {self.n_nodes}")
        for n, (node, c) in enumerate(zip(key.nodes, self.capacities)):
            if sum(i.g for i in node) > c or any(i.job < 0 for i in node):
                raise ValueError(f"node {n}: {node} exceeds its {c} GPUs or has a negative job id")
        return Placement(key.capacity, tuple(node + f for node, f in zip(key.nodes, self._fillers)))

    def _node_capacity(self) -> Capacity:
        """What the oracles take: G on one capacity, else the per-node capacities."""
        return self.capacities if self._fillers else self.capacity

    def _check_job(self, job: Job) -> None:
        check_job_shape(job.g, job.w, self.capacity)
        if self._fillers and job.id < 0:
            raise ValueError(f"job {job.id}: ids must be >= 0 on mixed capacities (fillers use negative ids)")
        if job.id in self._bf.running():
            raise ValueError(f"job {job.id} is already running")

    def _constrained(self, extra: Iterable[int] = ()) -> bool:
        """Whether a running job (or one of ``extra``) is model-constrained."""
        return bool(self.job_models) and any(j in self.job_models for j in (*self._bf.running(), *extra))

    def _phi_star(self, extra: Job | None = None) -> tuple[Status, int | None]:
        """(status, Φ★) of the running instances, plus ``extra``'s, on this cluster's N nodes;
        Φ★ is None unless the status is optimal (an unproven incumbent is not Φ★)."""
        if self._constrained(() if extra is None else (extra.id,)):
            assert self.models is not None
            jobs = [(j.id, j.g, j.w) for j in (*self.running().values(), *(() if extra is None else (extra,)))]
            c = phi_star_with_models(jobs, self.capacities, self.models, self.job_models, self.time_limit)
            return c.status, c.objective if c.is_optimal else None
        counts = [0] * self.capacity
        for job in self.running().values():
            counts[job.g - 1] += job.w
        if extra is not None:
            counts[extra.g - 1] += extra.w
        if self._fillers:
            cert = cluster_phi_star(counts, self.capacities, self.time_limit)
        else:
            cert = phi_star(tuple(counts), self.n_nodes, self.capacity, self.time_limit)
        return cert.status, cert.objective if cert.is_optimal else None

    def _repack_to_phi_star(self, kind: str) -> tuple[Migration, ...]:
        """Repack the running instances to Φ★ partial nodes unless already there (then zero
        migrations is proven optimal without a solve)."""
        status, phi = self._phi_star()
        if status is not Status.OPTIMAL:
            self.stats.phi_unknown += 1
            return ()
        if self._partial() == phi:
            self.stats.trivial += 1
            return ()
        return self._repack((), kind).migrations

    def _repack(self, new_items: Sequence[Item], kind: str) -> RepackOutcome:
        if self._constrained(j for j, _ in new_items):
            assert self.models is not None
            how, nodes, moves = repack_with_models(plain(self.placement()), self.capacities, self.models,
                                                   self.job_models, new_items, self.exact_max_nodes, self.time_limit)
            field = {"exact": "exact", "heuristic": "heuristic", "fallback": "fallbacks", "stuck": "stuck",
                     "unknown": "phi_unknown"}.get(how)
            if field is not None:
                setattr(self.stats, field, getattr(self.stats, field) + 1)
            if nodes is not None:
                self._set_placement(to_placement(nodes, self.capacity))
            return RepackOutcome(how, nodes, _migrations(moves, kind))
        out = repack(plain(self.placement()), self._node_capacity(), new_items, self.exact_max_nodes,
                     self.time_limit, self.stats, kind, self.solver)
        if out.nodes is not None:
            self._set_placement(to_placement(out.nodes, self.capacity))
        return out

    def _set_placement(self, p: Placement) -> None:
        """Replace the cluster's (real) placement."""
        self._bf = self._bf.with_state(self._filled(p))


class SIFOpt(RepackingPolicy):
    """The oracle scheduler: Φπ = Φ★ after every event, reached with the fewest migrations."""

    name = "sifopt"

    def arrive(self, job: Job) -> EventResult:
        self._check_job(job)
        status, phi = self._phi_star(job)
        if status is Status.INFEASIBLE:
            return EventResult.refused(f"job {job.id} ({job.w}x{job.g}) does not fit in "
                                          f"{self.n_nodes} nodes in any packing")
        # Best-fit in place; undone by the job's departure when it misses Φ★ (best-fit's depart
        # restores the exact state its arrive changed, without copying the cluster).
        fits = self._bf.arrive(job).ok
        if status is not Status.OPTIMAL:  # feasible or unknown: Φ★ not proven
            self.stats.phi_unknown += 1
            return EventResult.applied() if fits else EventResult.refused(f"job {job.id}: Φ★ unknown, best-fit refused")
        if fits and self._partial() == phi:
            self.stats.trivial += 1
            return EventResult.applied()
        if fits:
            self._bf.depart(job.id)
        out = self._repack(((job.id, job.g),) * job.w, "sifopt-repack")
        if out.nodes is None:
            return EventResult.refused(f"job {job.id} ({job.w}x{job.g}) does not fit in "
                                          f"{self.n_nodes} nodes even after repacking ({out.how})")
        return EventResult.applied(out.migrations)

    def depart(self, job_id: int) -> EventResult:
        self._bf.depart(job_id)
        return EventResult.applied(self._repack_to_phi_star("sifopt-repack"))
