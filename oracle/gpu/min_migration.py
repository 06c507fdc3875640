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

Mixed node capacities (docs/heterogeneous.md): ``capacity`` may be one capacity per node. A node
is then partial when non-empty and below its own capacity, Φ★ is ``oracle.gpu.mixed_phi``'s, and
the model below keys its classes by (capacity, current pattern), class k taking the target
patterns that fit c_k. The argument is unchanged (inside a class, nodes have one capacity and one
content); with equal capacities everything — classes, columns, rows, hint — is the one-capacity
model, so the answers are identical. GPU models are not part of this oracle.

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

Fast paths (issue 15; ``shortcuts=True``, the default for a repack), each exact:

1. Φ★ by the best-fit-decreasing certificate when it meets the parity bound
   (``oracle.gpu.phi_bound``), else the pattern ILP / DP of ``oracle.gpu.phi_star``.
2. Without new instances: zero migrations when the placement already meets the target; else
   every single move is tried (``oracle.gpu.one_move``) — one migration, carrying the fewest
   GPUs, when some move reaches the target.
3. Iterative deepening on a migration budget k (:func:`_deepening`), from the lower bound of
   :func:`_lower_bound`: the same ILP with the row Σ mig·z ≤ k and the columns that alone
   exceed k left out. The first feasible level is the minimum (the levels below were proven
   infeasible), its GPUs-moved objective solved to optimality within the level.
4. Only when every level up to DEEPENING_LEVELS − 1 is infeasible, or a level is not settled in
   LEVEL_TIME_SHARE of the time limit, the unrestricted two-stage model below.

On SIFOpt's events (departures from a Φ★ placement) step 2 settles about five in six repacks and
step 3 nearly all others (measured in benchmarks/bench_sifopt.py, docs/sifopt_scheduler.md);
``shortcuts=False`` is the unrestricted model alone, which the tests compare with the fast paths
(and both with the brute force on tiny clusters).
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
import time
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

from oracle.gpu.mixed_phi import MixedProblem, phi_star_mixed
from oracle.gpu.one_move import best_single_move
from oracle.gpu.patterns import Pattern, from_sizes
# The Φ★ oracle of this module on one capacity: the solver-free certificate when it applies, else
# oracle.gpu.phi_star (tests replace this name to simulate an unproven Φ★).
from oracle.gpu.phi_bound import quick_phi_star as phi_star
from oracle.gpu.plain_nodes import (
    Admission,
    Capacity,
    Item,
    Move,
    Nodes,
    assign_patterns,
    check_new_items,
    empty_count,
    instance_counts,
    node_capacities,
    node_pattern,
    normalise,
    partial_count,
    realise_target,
)
from oracle.gpu.repack_ilp import BACKENDS, Columns, RepackModel, Solver, build_model
from oracle.result import Certificate, Status

DEFAULT_TIME_LIMIT = 10.0


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



class _Cluster(NamedTuple):
    """A normalised placement and its nodes' capacities; ``capacity`` is G, the largest one (the
    length of the pattern vectors). One capacity: exactly the single-capacity model."""

    nodes: Nodes
    capacity: int
    caps: tuple[int, ...]

    @staticmethod
    def of(current: Sequence[Sequence[Item]], capacity: Capacity, n_nodes: int | None) -> _Cluster:
        return _Cluster.on(normalise(current, capacity, n_nodes), capacity)

    @staticmethod
    def on(nodes: Nodes, capacity: Capacity) -> _Cluster:
        """Already normalised ``nodes`` on ``capacity`` (G or one per node)."""
        caps = node_capacities(capacity, len(nodes))
        return _Cluster(nodes, capacity if isinstance(capacity, int) else max(caps), caps)

    @property
    def mixed(self) -> bool:
        return len(set(self.caps)) > 1

    @property
    def model_caps(self) -> tuple[int, ...] | None:
        """Per-node capacities for the ILP (None on one capacity: today's model, column for column)."""
        return self.caps if self.mixed else None


def _unanswered(cl: _Cluster, target: int | None) -> Repack:
    """The witness of a certificate without incumbent: only the question and the start."""
    return Repack(None, False, target, partial_count(cl.nodes, cl.caps), None, empty_count(cl.nodes), None,
                  None, (), ())


def _realised(cl: _Cluster, new_items: tuple[Item, ...], target: int | None,
              targets: Sequence[Pattern], gpus_proven: bool) -> tuple[int, Repack]:
    """(migrations, the witness) of the placement with per-node counts ``targets``."""
    placement, moves, admitted = realise_target(cl.nodes, targets, new_items)
    return len(moves), Repack(sum(mv.g for mv in moves), gpus_proven, target, partial_count(cl.nodes, cl.caps),
                              partial_count(placement, cl.caps), empty_count(cl.nodes), empty_count(placement),
                              placement, moves, admitted)


def _certificate(cl: _Cluster, m: RepackModel, raw: Certificate[int, Columns]) -> Certificate[int, Repack]:
    """A backend's certificate with its column values realised as a placement and moves."""
    if raw.objective is None:
        return Certificate(raw.status, None, raw.bound, _unanswered(cl, m.target),
                           raw.solver, raw.solver_version, raw.wall_time)
    targets: list[Pattern] = [()] * len(m.nodes)
    slots = [iter(members) for _, members in m.classes]
    for (c, p), v in zip(m.columns, raw.witness.values):
        for _ in range(v):
            targets[next(slots[c])] = p
    moves, witness = _realised(cl, m.new_items, m.target, targets, raw.witness.gpus_proven)
    bound = moves if raw.is_optimal else raw.bound
    return Certificate(raw.status, moves, bound, witness, raw.solver, raw.solver_version, raw.wall_time)


SHORTCUT_SOLVER = "one-move search"


def _shortcut(nodes: Nodes, capacity: Capacity, target: int, t0: float) -> Certificate[int, Repack] | None:
    """A repack (no new instances) settled without the ILP (``oracle.gpu.one_move``): zero
    migrations when the placement already meets the target; one, the move carrying the fewest
    GPUs, when some single move does. None when at least two migrations are needed."""
    cl = _Cluster.on(nodes, capacity)
    targets = [node_pattern(node, cl.capacity) for node in cl.nodes]
    partial = partial_count(cl.nodes, cl.caps)
    if partial > target:
        classes: dict[tuple[int, Pattern], list[int]] = {}
        for n, (p, cap) in enumerate(zip(targets, cl.caps)):
            classes.setdefault((cap, p), []).append(n)
        order = list(classes.items())
        move = best_single_move([(p, len(members)) for (_, p), members in order], cl.capacity, partial, target,
                                [cap for (cap, _), _ in order])
        if move is None:
            return None
        src, dst = order[move.src][1][0], order[move.dst][1][-1]
        targets[src] = tuple(c - (g == move.g - 1) for g, c in enumerate(targets[src]))
        targets[dst] = tuple(c + (g == move.g - 1) for g, c in enumerate(targets[dst]))
    moves, witness = _realised(cl, (), target, targets, True)
    return Certificate(Status.OPTIMAL, moves, moves, witness, SHORTCUT_SOLVER, "1", time.perf_counter() - t0)


def cluster_phi_star(counts: Sequence[int], caps: Sequence[int], time_limit: float) -> Certificate[int, Any]:
    """Φ★ of ``counts`` (n_1..n_G) on nodes of ``caps``: every node of G GPUs, ``phi_star`` (the
    BFD certificate, else the pattern ILP / DP); otherwise ``oracle.gpu.mixed_phi`` (witness per
    class)."""
    if any(c != len(counts) for c in caps):
        return phi_star_mixed(caps, tuple(counts), time_limit=time_limit)
    return phi_star(tuple(counts), len(caps), len(counts), time_limit)


def witness_targets(nodes: Sequence[Sequence[Item]], caps: Sequence[int], capacity: int,
                    cert: Certificate[int, Any]) -> list[Pattern]:
    """Φ★'s witness (from :func:`cluster_phi_star` of counts of length ``capacity``) assigned to
    the nodes at least cost (``plain_nodes.assign_patterns``; on mixed capacities class by class,
    each witness class to the nodes of its capacity), as a target pattern per node."""
    if all(c == capacity for c in caps):
        return assign_patterns(nodes, [from_sizes(d, capacity) for d, mult in cert.witness for _ in range(mult)],
                               capacity)
    classes = MixedProblem.of(caps, ()).classes  # without model sets: one class per capacity
    targets: list[Pattern] = [()] * len(nodes)
    for c in sorted(set(caps)):
        members = [n for n, cap in enumerate(caps) if cap == c]
        pats = [from_sizes(d, capacity) for k, d, mult in cert.witness if classes[k].capacity == c
                for _ in range(mult)]
        for n, t in zip(members, assign_patterns([nodes[n] for n in members], pats, capacity)):
            targets[n] = t
    return targets


def _solve(cl: _Cluster, new_items: tuple[Item, ...], target: int | None,
           time_limit: float, solver: Solver, to_phi_star: bool, shortcuts: bool) -> Certificate[int, Repack]:
    """Φ★ first (its certificate settles infeasibility and, with ``to_phi_star``, the target),
    then the ILP, hinted with Φ★'s witness assigned to the nodes at least cost: without the hint
    CP-SAT was seen to find no solution at all in 10 s on some N = 16 instances."""
    if solver not in BACKENDS:
        raise ValueError(f"unknown solver {solver!r}; known: {', '.join(BACKENDS)}")
    t0 = time.perf_counter()
    phi = cluster_phi_star(instance_counts(cl.nodes, new_items, cl.capacity), cl.caps, time_limit)
    phi_value = phi.objective if phi.is_optimal else None
    if phi.status is Status.INFEASIBLE or (to_phi_star and phi_value is None):
        # Without a proven Φ★ there is no target, hence no incumbent: unknown, even when Φ★'s own
        # solve has a feasible incumbent.
        status = Status.INFEASIBLE if phi.status is Status.INFEASIBLE else Status.UNKNOWN
        return Certificate(status, None, None, _unanswered(cl, None), phi.solver,
                           phi.solver_version, time.perf_counter() - t0)
    if to_phi_star:
        target = phi_value
    if shortcuts and target is not None and not new_items:
        quick = _shortcut(cl.nodes, cl.caps, target, t0)
        if quick is not None:
            return quick
    levels_started = time.perf_counter()
    if shortcuts:
        deepened = _deepening(cl, new_items, target, _lower_bound(cl.nodes, cl.caps, new_items, target),
                              time_limit - (levels_started - t0), solver)
        if deepened is not None:
            return dataclasses.replace(deepened, wall_time=time.perf_counter() - t0)
    # The levels' time (at most DEEPENING_LEVELS x LEVEL_TIME_SHARE x time_limit) is not taken from the
    # unrestricted model, which gets what it always had: time_limit less the time Φ★ took.
    clock = t0 + (time.perf_counter() - levels_started)
    hint = None
    if phi_value is not None and (target is None or phi_value <= target):
        hint = witness_targets(cl.nodes, cl.caps, cl.capacity, phi)
    m = build_model(cl.nodes, cl.capacity, new_items, target, hint, capacities=cl.model_caps)
    out = _certificate(cl, m, BACKENDS[solver](m, max(0.01, time_limit - (time.perf_counter() - clock))))
    return dataclasses.replace(out, wall_time=time.perf_counter() - t0)


DEEPENING_LEVELS = 6  # budgets below this are tried before the unrestricted model
# A level not settled within this share of the time limit is left to the unrestricted model. At
# N = 512 a 1 s cap (tried first) left levels unsettled on a loaded machine and the unrestricted
# model then stopped at 170 migrations against a proven bound of 3 (docs/sifopt_scheduler.md §7).
LEVEL_TIME_SHARE = 0.5


def _lower_bound(nodes: Nodes, capacity: Capacity, new_items: tuple[Item, ...], target: int | None) -> int:
    """Migrations proven necessary without a solve. Only nodes whose content changes can change
    status, and m migrations plus a new instances change at most 2m + a nodes, so reaching
    ``target`` from P partial nodes takes at least ⌈(P − target − a) / 2⌉. Without new instances
    the shortcut (which ran first) has ruled out zero and one migration."""
    if target is None:
        return 0
    bound = -(-(partial_count(nodes, capacity) - target - len(new_items)) // 2)
    return max(bound, 0 if new_items else 2)


def _deepening(cl: _Cluster, new_items: tuple[Item, ...], target: int | None, lowest: int,
               time_limit: float, solver: Solver) -> Certificate[int, Repack] | None:
    """Iterative deepening on the migration budget: the ILP with at most k migrations for
    k = lowest, lowest + 1, … < DEEPENING_LEVELS. Each level either is proven infeasible (then
    more than k migrations are needed) or, being the first feasible one, gives the answer with
    both objectives proven; columns that alone exceed the budget drop out, and the tight budget
    row lets the solver prove infeasibility fast (measured ~3x faster than the unrestricted
    two-stage solve on SIFOpt's repacks, docs/sifopt_scheduler.md). None when every level is
    infeasible or one is not settled within LEVEL_TIME_SHARE × ``time_limit``: the
    caller then solves the unrestricted model, which is exact on its own."""
    for k in range(lowest, DEEPENING_LEVELS):
        m = build_model(cl.nodes, cl.capacity, new_items, target, budget=k, capacities=cl.model_caps)
        raw = BACKENDS[solver](m, max(0.01, LEVEL_TIME_SHARE * time_limit))
        if raw.status is Status.INFEASIBLE:
            continue
        if raw.is_optimal and raw.witness.gpus_proven:
            return _certificate(cl, m, raw)
        return None
    return None


def min_migration_repack(current: Sequence[Sequence[Item]], capacity: Capacity = 8,
                         target_partial: int | None = None, n_nodes: int | None = None,
                         new_items: Sequence[Item] = (), time_limit: float = DEFAULT_TIME_LIMIT,
                         solver: Solver = "cp-sat", shortcuts: bool = True) -> Certificate[int, Repack]:
    """Fewest migrations (then fewest GPUs moved) to a packing of the current instances plus
    ``new_items`` with at most ``target_partial`` partial nodes (default: Φ★ with node limit N).

    ``capacity`` is G, or one capacity per node (mixed capacities, docs/heterogeneous.md: a node
    is partial against its own capacity; N is then the list's length and the placement may list
    fewer nodes). Infeasible when the instances do not fit in N nodes, or no packing meets the
    given target. With ``shortcuts`` (the default) a repack without new instances that zero or
    one migration settles is answered by exhaustion (``oracle.gpu.one_move``) instead of the ILP;
    ``False`` always solves the ILP (the tests compare the two).
    """
    cl = _Cluster.of(current, capacity, n_nodes)
    new_items = check_new_items(new_items, cl.capacity)
    if target_partial is not None and target_partial < 0:
        raise ValueError(f"target_partial={target_partial} must be >= 0")
    return _solve(cl, new_items, target_partial, time_limit, solver,
                  to_phi_star=target_partial is None, shortcuts=shortcuts)


def min_migrations_to_admit(current: Sequence[Sequence[Item]], capacity: Capacity, job_g: int, job_w: int,
                            job_id: int = -1, n_nodes: int | None = None,
                            time_limit: float = DEFAULT_TIME_LIMIT,
                            solver: Solver = "cp-sat") -> Certificate[int, Repack]:
    """Fewest migrations (then fewest GPUs moved) after which a gang job of ``job_w`` instances
    of ``job_g`` GPUs fits: 0 when it fits already, infeasible when no packing holds it.
    ``capacity`` as in :func:`min_migration_repack` (g up to the largest node)."""
    cl = _Cluster.of(current, capacity, n_nodes)
    if not 1 <= job_g <= cl.capacity:
        raise ValueError(f"job g={job_g} outside 1..{cl.capacity}")
    if job_w < 1:
        raise ValueError(f"job w={job_w} must be >= 1")
    return _solve(cl, ((job_id, job_g),) * job_w, None, time_limit, solver, to_phi_star=False,
                  shortcuts=False)
