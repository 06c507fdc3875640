"""A GPU placement as plain data, and turning per-node target counts into concrete moves.

The minimum-migration oracle (``oracle.gpu.min_migration``, seeds/000 §5.4 and Appendix C) takes
placements from any scheduler or snapshot as plain data: a list of nodes, each a list of
``(job_id, g)`` items. This module checks such input, reads the facts the models need (node
patterns, partial and empty nodes, instance counts, the migrations a pattern change costs) and
realises a solution — one target pattern per node — as the moves that reach it with the fewest
migrations (:func:`realise_target`), or assigns a fixed multiset of patterns to the nodes at
least cost (:func:`assign_patterns`).
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import NamedTuple, Sequence

from oracle.gpu.patterns import Pattern

Item = tuple[int, int]  # (job id, g)
Nodes = tuple[tuple[Item, ...], ...]
# GPUs per node: one capacity G for every node, or one per node (mixed capacities,
# docs/heterogeneous.md: a node of c_n GPUs is partial when non-empty and using fewer than c_n).
Capacity = int | Sequence[int]


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


# --------------------------------------------------------------------------------------------
# Input checking and small helpers


def node_capacities(capacity: Capacity, n_nodes: int) -> tuple[int, ...]:
    """Each of ``n_nodes`` nodes' GPUs (``capacity`` for all when it is one integer)."""
    return (capacity,) * n_nodes if isinstance(capacity, int) else tuple(capacity)


def normalise(current: Sequence[Sequence[Item]], capacity: Capacity, n_nodes: int | None = None) -> Nodes:
    """Validate a placement given as plain data and pad it to ``n_nodes`` nodes.

    ``capacity`` is G, or one capacity per node (then the cluster has that many nodes and the
    placement may list fewer: the rest are empty; ``n_nodes``, if given, must agree).
    Raises ValueError naming the node and item at fault: g outside 1..G (1..c_n), a node over
    capacity, a job whose instances have different g, or ``n_nodes`` smaller than the placement.
    """
    nodes = tuple(tuple((int(j), int(g)) for j, g in node) for node in current)
    if isinstance(capacity, int):
        if capacity < 1:
            raise ValueError(f"capacity={capacity!r} must be a positive integer")
    elif not isinstance(capacity, Sequence) or not capacity:
        raise ValueError(f"capacity={capacity!r} must be a positive integer or a non-empty list of them")
    else:
        for n, c in enumerate(capacity):
            if isinstance(c, bool) or not isinstance(c, int) or c < 1:
                raise ValueError(f"capacities[{n}]={c!r} must be a positive integer")
        if n_nodes is not None and n_nodes != len(capacity):
            raise ValueError(f"n_nodes={n_nodes} but {len(capacity)} node capacities")
        n_nodes = len(capacity)
    caps = node_capacities(capacity, max(len(nodes), n_nodes or 0))
    job_g: dict[int, int] = {}
    for n, (node, cap) in enumerate(zip(nodes, caps)):
        for j, g in node:
            if not 1 <= g <= cap:
                raise ValueError(f"node {n}: job {j} has g={g} outside 1..{cap}")
            if job_g.setdefault(j, g) != g:
                raise ValueError(f"node {n}: job {j} has g={g} but g={job_g[j]} elsewhere")
        if sum(g for _, g in node) > cap:
            raise ValueError(f"node {n}: {sum(g for _, g in node)} GPUs used > capacity {cap}")
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


def partial_count(nodes: Sequence[Sequence[Item]], capacity: Capacity) -> int:
    """Nodes that are non-empty and not full (each against its own capacity)."""
    caps = node_capacities(capacity, len(nodes))
    return sum(1 for node, cap in zip(nodes, caps) if 0 < sum(g for _, g in node) < cap)


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
