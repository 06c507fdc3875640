"""The repack of SIFOpt and FFT when jobs are model-constrained (openb ``gpu_spec``; docs/heterogeneous.md).

``heuristics.gpu.sifopt.repack`` moves the running instances (plus an arriving job's) to Φ★
partial nodes by the fewest migrations; its oracle packs by size only. With model sets the same
question is asked of ``oracle.gpu.typed_repack`` (instance types (g, models) in the class ILP,
Φ★ that of ``oracle.gpu.mixed_phi`` with the model sets), exact up to ``exact_max_nodes`` nodes as
before. Beyond that, or when the solve is not proven within its time limit, the heuristic is the
drain of ``sifopt.consolidate`` with models (reading: SIFOpt's candidates (a) and (b) need Φ★
witnesses per node that the model-aware Φ★ does not assign, so only candidate (c) is kept): new
instances go best-fit, largest first, to nodes of their models — one that fits on none of them
gets the node of its models that the fewest migrations free for it (its instances, largest first,
each to the fullest other node of its models with room: unconstrained pods make way for a
constrained one); then, while Φπ > Φ★, the partial
node with the fewest instances that can be emptied is, each of its instances to the fullest other
non-empty node of its models with room (a node that cannot be emptied is passed over until
another one's drain changes the others). When no partial node can be emptied the drain stops
short of Φ★ and its placement is used as it is (reading: a heuristic that cannot reach Φ★ still
places the arrival when best-fit can); 'stuck' says so, and the policy counts it
(``RepackStats.stuck``).
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping, Sequence

from oracle.gpu.mixed_phi import ItemType, phi_star_mixed
from oracle.gpu.plain_nodes import Item, Move, Nodes
from oracle.gpu.typed_repack import item_types, realise_types, type_counts, typed_repack
from oracle.result import Certificate, Status

Outcome = tuple[str, Nodes | None, tuple[Move, ...]]  # (how, placement or None, migrations)


def typed_demand(items: Iterable[tuple[int, int, int]], job_models: Mapping[int, frozenset[str]]) -> Counter[ItemType]:
    """Instances per type of jobs given as (id, g, w)."""
    out: Counter[ItemType] = Counter()
    for j, g, w in items:
        out[ItemType(g, job_models.get(j))] += w
    return out


def phi_star_with_models(items: Iterable[tuple[int, int, int]], caps: Sequence[int], models: Sequence[str],
                         job_models: Mapping[int, frozenset[str]], time_limit: float) -> Certificate[int, object]:
    """Φ★ of jobs (id, g, w) on nodes of ``caps`` / ``models``, each job on nodes of its models."""
    return phi_star_mixed(caps, typed_demand(items, job_models), models, time_limit)  # type: ignore[return-value]


def repack_with_models(nodes: Nodes, caps: Sequence[int], models: Sequence[str],
                       job_models: Mapping[int, frozenset[str]], new_items: Sequence[Item], exact_max_nodes: int,
                       time_limit: float) -> Outcome:
    """``sifopt.repack`` with GPU models (module docstring). ``how``: 'exact', 'heuristic' (by
    design: N > exact_max_nodes), 'fallback' (the exact solve was not proven), 'stuck' (the drain
    stopped short of Φ★), 'infeasible' or 'unknown' (Φ★ not proven)."""
    phi = phi_star_with_models(_jobs_of(nodes, new_items), caps, models, job_models, time_limit)
    if phi.status is Status.INFEASIBLE:
        return "infeasible", None, ()
    if not phi.is_optimal or phi.objective is None:
        return "unknown", None, ()
    how = "heuristic"
    if len(nodes) <= exact_max_nodes:
        cert = typed_repack(nodes, caps, models, job_models, new_items, phi.objective, time_limit)
        if cert.is_optimal and cert.witness.placement is not None:
            return "exact", cert.witness.placement, cert.witness.moves
        if cert.status is Status.INFEASIBLE:
            return "infeasible", None, ()
        how = "fallback"
    drained, reached = drain_with_models(nodes, caps, models, job_models, new_items, phi.objective)
    if drained is None:  # a packing exists (Φ★ is proven), but not one the drain finds
        return "stuck", None, ()
    placement, moves, _ = drained
    return (how if reached else "stuck"), placement, moves


def _jobs_of(nodes: Nodes, new_items: Sequence[Item]) -> list[tuple[int, int, int]]:
    shape: dict[int, list[int]] = {}
    for node in nodes:
        for j, g in node:
            shape.setdefault(j, [g, 0])[1] += 1
    for j, g in new_items:
        shape.setdefault(j, [g, 0])[1] += 1
    return [(j, g, w) for j, (g, w) in shape.items()]


def drain_with_models(nodes: Nodes, caps: Sequence[int], models: Sequence[str],
                      job_models: Mapping[int, frozenset[str]], new_items: Sequence[Item], phi: int
                      ) -> tuple[tuple[Nodes, tuple[Move, ...], tuple[object, ...]] | None, bool]:
    """(the placement, its migrations and admissions; whether Φ★ was reached) of the drain of the
    module docstring; (None, False) when a new instance fits on no node of its models."""
    def may_use(j: int, n: int) -> bool:
        allowed = job_models.get(j)
        return allowed is None or models[n] in allowed

    content = [list(node) for node in nodes]
    used = [sum(g for _, g in node) for node in nodes]

    def fullest_fit(item: Item, allowed: Iterable[int]) -> int | None:
        fits = [n for n in allowed if used[n] + item[1] <= caps[n] and may_use(item[0], n)]
        return max(fits, key=lambda n: (used[n], -n)) if fits else None

    def make_room(item: Item) -> int | None:
        """A node of ``item``'s models made to fit it by moving the fewest instances off it, each
        to the fullest other node of its models with room (None when no node of its models can)."""
        best: tuple[int, int, list[tuple[Item, int]]] | None = None
        for n in range(len(nodes)):
            if caps[n] < item[1] or not may_use(item[0], n):
                continue
            need, plan, room = used[n] + item[1] - caps[n], [], list(used)
            for other in sorted(content[n], key=lambda it: -it[1]):
                if need <= 0:
                    break
                fits = [m for m in range(len(nodes)) if m != n and room[m] + other[1] <= caps[m]
                        and may_use(other[0], m)]
                if fits:
                    m = max(fits, key=lambda m: (room[m], -m))
                    room[m] += other[1]
                    need -= other[1]
                    plan.append((other, m))
            if need <= 0 and (best is None or len(plan) < best[0]):
                best = (len(plan), n, plan)
        if best is None:
            return None
        _, n, plan = best
        for other, m in plan:
            content[n].remove(other)
            content[m].append(other)
            used[n] -= other[1]
            used[m] += other[1]
        return n

    for item in sorted(new_items, key=lambda it: -it[1]):
        n = fullest_fit(item, range(len(nodes)))
        if n is None:
            n = make_room(item)
        if n is None:
            return None, False
        content[n].append(item)
        used[n] += item[1]
    blocked: set[int] = set()  # partial nodes that cannot be emptied (from the current state)
    while sum(1 for u, cap in zip(used, caps) if 0 < u < cap) > phi:
        partial = [n for n, u in enumerate(used) if 0 < u < caps[n] and n not in blocked]
        if not partial:
            break
        donor = min(partial, key=lambda n: (len(content[n]), used[n], n))
        plan, room = [], list(used)
        for item in sorted(content[donor], key=lambda it: -it[1]):
            fits = [m for m in range(len(nodes)) if m != donor and room[m] > 0 and room[m] + item[1] <= caps[m]
                    and may_use(item[0], m)]
            if not fits:
                break
            m = max(fits, key=lambda m: (room[m], -m))
            room[m] += item[1]
            plan.append((item, m))
        if len(plan) < len(content[donor]):
            blocked.add(donor)
            continue
        for item, m in plan:
            content[m].append(item)
        used, content[donor] = room, []
        used[donor] = 0
        blocked.clear()  # the nodes it filled may now take what a blocked node holds
    reached = sum(1 for u, cap in zip(used, caps) if 0 < u < cap) <= phi
    types = item_types(content, (), job_models)
    targets = [type_counts(node, types, job_models) for node in content]
    return realise_types(nodes, targets, new_items, types, job_models), reached
