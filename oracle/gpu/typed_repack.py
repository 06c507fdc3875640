"""Minimum-migration repacking with GPU models: ``min_migration_repack`` for model-constrained jobs.

The question is :func:`oracle.gpu.min_migration.min_migration_repack`'s (seeds/000 §5.4: the
fewest instance migrations, then the fewest GPUs moved, that reach a packing of the running
instances, plus ``new_items``, with at most ``target_partial`` partial nodes; default Φ★) on a
cluster whose node n has ``capacities[n]`` GPUs of model ``models[n]``, where a job in
``job_models`` may only use nodes of those models (openb ``gpu_spec``; docs/heterogeneous.md).

The model is that module's, with instance *types* in place of sizes. A type is
``mixed_phi.ItemType(g, models)`` (``models`` None: any node). Two instances of one type are
interchangeable for capacity, models and Φ, so job identities drop out as before: with c[n][t]
instances of type t on node n now and y[n][t] in the target, every target costs at least
Σ max(0, c − y) migrations and that many suffice (a node only loses or only gains instances of
each type, and a gained one can be any moved or new instance of that type). Nodes with equal
capacity, model and current type counts are interchangeable, so one integer variable per (class k,
target type-pattern p), p ranging over the type counts allowed on the class's nodes that fit
its capacity:

    z[k,p] ≥ 0;  Σ_p z[k,p] = |k|;  Σ_{k,p} p_t·z[k,p] = n_t (+ new instances of type t);
    Σ_{k, p partial} z[k,p] ≤ target;   minimise Σ z[k,p]·(W·mig(k,p) + gpu(k,p)),

with W = G·(instances) + 1, so one migration outweighs any number of GPUs (the lexicographic
objective in one stage). Φ★ is ``oracle.gpu.mixed_phi``'s with the model sets. Solver: CP-SAT (one
worker) with a time limit; a limit hit is ``feasible`` / ``unknown``, never optimal. The tests
compare it with :func:`typed_repack_bruteforce` (every instance-to-node assignment; shares
nothing with the model) and, without model sets, with ``min_migration_repack``.
"""
from __future__ import annotations

import dataclasses
import time
from collections import Counter
from typing import Iterator, Mapping, Sequence

from oracle import stopping
from oracle.gpu.min_migration import DEFAULT_TIME_LIMIT, Repack
from oracle.gpu.mixed_phi import ItemType, phi_star_mixed
from oracle.gpu.plain_nodes import Admission, Item, Move, Nodes, empty_count, normalise, partial_count
from oracle.result import Certificate, Status, cpsat_status

TypeCounts = tuple[int, ...]  # instances per type, in the order of the problem's types


def item_types(nodes: Sequence[Sequence[Item]], new_items: Sequence[Item],
               job_models: Mapping[int, frozenset[str]]) -> tuple[ItemType, ...]:
    """The instance types present, in a fixed order (by g, then model set; any model last)."""
    found = {ItemType(g, job_models.get(j)) for node in nodes for j, g in node} | \
        {ItemType(g, job_models.get(j)) for j, g in new_items}
    return tuple(sorted(found, key=lambda t: (t.g, sorted(t.models or ()), t.models is None)))


def type_counts(items: Sequence[Item], types: tuple[ItemType, ...], job_models: Mapping[int, frozenset[str]]) -> TypeCounts:
    """Instances of each of ``types`` among ``items``."""
    index = {t: i for i, t in enumerate(types)}
    out = [0] * len(types)
    for j, g in items:
        out[index[ItemType(g, job_models.get(j))]] += 1
    return tuple(out)


def _patterns(allowed: tuple[int, ...], sizes: tuple[int, ...], room: int, width: int) -> Iterator[TypeCounts]:
    """Every count vector over the types ``allowed`` (indices) whose GPUs fit in ``room``."""
    if not allowed:
        yield (0,) * width
        return
    t, rest = allowed[0], allowed[1:]
    for k in range(room // sizes[t] + 1):
        for p in _patterns(rest, sizes, room - k * sizes[t], width):
            yield p[:t] + (k,) + p[t + 1:] if k else p


def _outflow(now: TypeCounts, target: TypeCounts, sizes: tuple[int, ...]) -> tuple[int, int]:
    """(migrations, GPUs moved) of a node going from ``now`` to ``target``."""
    out = [max(0, c - y) for c, y in zip(now, target)]
    return sum(out), sum(k * g for k, g in zip(out, sizes))


def realise_types(nodes: Nodes, targets: Sequence[TypeCounts], new_items: Sequence[Item], types: tuple[ItemType, ...],
                  job_models: Mapping[int, frozenset[str]]) -> tuple[Nodes, tuple[Move, ...], tuple[Admission, ...]]:
    """The placement with per-node type counts ``targets`` that moves the fewest instances
    (``plain_nodes.realise_target`` by type): on each node and type the first min(c, y)
    instances stay; the others, then the new ones, fill the nodes that gain that type."""
    index = {t: i for i, t in enumerate(types)}
    kept: list[list[Item]] = []
    pool: list[list[tuple[Item, int | None]]] = [[] for _ in types]
    for n, (node, tgt) in enumerate(zip(nodes, targets)):
        room, stay = list(tgt), []
        for item in node:
            t = index[ItemType(item[1], job_models.get(item[0]))]
            if room[t] > 0:
                room[t] -= 1
                stay.append(item)
            else:
                pool[t].append((item, n))
        kept.append(stay)
    for item in new_items:
        pool[index[ItemType(item[1], job_models.get(item[0]))]].append((item, None))
    moves: list[Move] = []
    admitted: list[Admission] = []
    for n, tgt in enumerate(targets):
        have = type_counts(kept[n], types, job_models)
        for t, (want, got) in enumerate(zip(tgt, have)):
            for _ in range(want - got):
                (j, g), src = pool[t].pop(0)
                kept[n].append((j, g))
                if src is None:
                    admitted.append(Admission(j, g, n))
                else:
                    moves.append(Move(j, g, src, n))
    assert not any(pool), "the targets leave instances unplaced"
    return tuple(tuple(sorted(k)) for k in kept), tuple(moves), tuple(admitted)


def typed_repack(current: Sequence[Sequence[Item]], capacities: Sequence[int], models: Sequence[str],
                 job_models: Mapping[int, frozenset[str]], new_items: Sequence[Item] = (),
                 target_partial: int | None = None, time_limit: float = DEFAULT_TIME_LIMIT) -> Certificate[int, Repack]:
    """Fewest migrations (then GPUs moved) to a packing with at most ``target_partial`` partial
    nodes (default: Φ★ with the model sets), every instance on a node of its job's models.
    ValueError when a current instance sits where its models or the node's capacity forbid."""
    t0 = time.perf_counter()
    caps, mods = tuple(capacities), tuple(models)
    if len(caps) != len(mods):
        raise ValueError(f"models: {len(mods)} entries for {len(caps)} nodes")
    nodes = normalise(current, list(caps), len(caps))
    new = tuple(new_items)
    types = item_types(nodes, new, job_models)
    sizes = tuple(t.g for t in types)
    now = [type_counts(node, types, job_models) for node in nodes]
    for n, (c, cap, m) in enumerate(zip(now, caps, mods)):
        if any(k and not types[t].allows(cap, m) for t, k in enumerate(c)):
            raise ValueError(f"node {n} ({cap} GPUs, model {m!r}) holds an instance its job's models forbid")
    demand = [sum(c[t] for c in now) + k for t, k in enumerate(type_counts(new, types, job_models))]
    start = Repack(None, False, None, partial_count(nodes, list(caps)), None, empty_count(nodes), None, None, (), ())
    target = target_partial
    if target is None:
        phi = phi_star_mixed(caps, Counter(dict(zip(types, demand))), mods, time_limit)
        if not phi.is_optimal:
            status = Status.INFEASIBLE if phi.status is Status.INFEASIBLE else Status.UNKNOWN
            return Certificate(status, None, None, start, phi.solver, phi.solver_version, time.perf_counter() - t0)
        target = phi.objective
    return _solve(nodes, caps, mods, job_models, new, types, now, demand, target, start, t0,
                  time_limit - (time.perf_counter() - t0))


def _solve(nodes: Nodes, caps: tuple[int, ...], mods: tuple[str, ...], job_models: Mapping[int, frozenset[str]],
           new: tuple[Item, ...], types: tuple[ItemType, ...], now: list[TypeCounts], demand: list[int],
           target: int | None, start: Repack, t0: float, time_limit: float) -> Certificate[int, Repack]:
    """The class ILP of the module docstring on CP-SAT, its answer realised as moves."""
    from ortools import __version__ as version  # type: ignore[attr-defined]  # not in its stubs
    from ortools.sat.python import cp_model

    sizes = tuple(t.g for t in types)
    classes: dict[tuple[int, str, TypeCounts], list[int]] = {}
    for n, (c, cap, m) in enumerate(zip(now, caps, mods)):
        classes.setdefault((cap, m, c), []).append(n)
    weight = max(caps) * sum(demand) + 1
    model = cp_model.CpModel()
    columns: list[tuple[int, TypeCounts, cp_model.IntVar]] = []
    for k, ((cap, m, c), members) in enumerate(classes.items()):
        allowed = tuple(t for t, ty in enumerate(types) if ty.allows(cap, m))
        col = [(k, p, model.new_int_var(0, len(members), "")) for p in _patterns(allowed, sizes, cap, len(types))]
        model.add(sum(v for _, _, v in col) == len(members))
        columns += col
    for t, n_t in enumerate(demand):
        model.add(sum(p[t] * v for _, p, v in columns if p[t]) == n_t)
    keys = list(classes)
    if target is not None:
        model.add(sum(v for k, p, v in columns if 0 < sum(a * g for a, g in zip(p, sizes)) < keys[k][0]) <= target)
    model.minimize(sum((weight * mig + gpus) * v for k, p, v in columns
                       for mig, gpus in [_outflow(keys[k][2], p, sizes)] if mig))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = max(0.01, time_limit)
    status = cpsat_status(solver.status_name(stopping.solve(solver, model)))
    wall = time.perf_counter() - t0
    if status not in (Status.OPTIMAL, Status.FEASIBLE):
        return Certificate(status, None, None, dataclasses.replace(start, target_partial=target), "cp-sat", version,
                           wall)
    targets: list[TypeCounts] = [()] * len(nodes)
    slots = {k: iter(members) for k, members in enumerate(classes.values())}
    for k, p, v in columns:
        for _ in range(solver.value(v)):
            targets[next(slots[k])] = p
    placement, moves, admitted = realise_types(nodes, targets, new, types, job_models)
    optimal = status is Status.OPTIMAL
    witness = Repack(sum(mv.g for mv in moves), optimal, target, start.partial_before, partial_count(placement, list(caps)),
                     start.empty_before, empty_count(placement), placement, moves, admitted)
    return Certificate(status, len(moves), len(moves) if optimal else None, witness, "cp-sat", version, wall)


def typed_repack_bruteforce(current: Sequence[Sequence[Item]], capacities: Sequence[int], models: Sequence[str],
                            job_models: Mapping[int, frozenset[str]], new_items: Sequence[Item] = (),
                            target_partial: int | None = None) -> tuple[int, int] | None:
    """(migrations, GPUs moved) of the best assignment of every instance to a node, by exhaustion
    (tiny cases only; ``target_partial`` None: the fewest partial nodes any assignment reaches);
    None when no assignment fits."""
    caps = list(capacities)
    placed = [(item, n) for n, node in enumerate(current) for item in node] + [(item, None) for item in new_items]
    best: dict[int, tuple[int, int]] = {}  # partial nodes -> the best cost reaching exactly that many

    def go(i: int, used: list[int], mig: int, gpus: int) -> None:
        if i == len(placed):
            partial = sum(1 for u, c in zip(used, caps) if 0 < u < c)
            if partial not in best or (mig, gpus) < best[partial]:
                best[partial] = (mig, gpus)
            return
        (j, g), src = placed[i]
        allowed = job_models.get(j)
        for n, cap in enumerate(caps):
            if used[n] + g <= cap and (allowed is None or models[n] in allowed):
                used[n] += g
                moved = src is not None and n != src
                go(i + 1, used, mig + moved, gpus + g * moved)
                used[n] -= g

    go(0, [0] * len(caps), 0, 0)
    if not best:
        return None
    limit = min(best) if target_partial is None else target_partial
    ok = [cost for partial, cost in best.items() if partial <= limit]
    return min(ok) if ok else None
