"""Independent brute force for the minimum-migration questions (tiny clusters only).

Enumerates every instance-to-node assignment and computes Φ★ by itself, sharing nothing with the
ILP, the one-move search or the Φ★ oracles of ``oracle.gpu``; the tests cross-check
``oracle.gpu.min_migration`` against it. ``capacity`` may be one capacity per node (mixed
capacities, docs/heterogeneous.md): a node holds at most its own c_n GPUs and is partial when
non-empty and below c_n.
"""
from __future__ import annotations

import itertools
from typing import Literal, Sequence

from oracle.gpu.plain_nodes import Capacity, Item, Nodes, node_capacities, normalise


def _bruteforce(nodes: Nodes, caps: tuple[int, ...], new_items: Sequence[Item],
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
        if any(u > c for u, c in zip(used, caps)):
            continue
        partial = sum(1 for u, c in zip(used, caps) if 0 < u < c)
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


def repack_bruteforce(current: Sequence[Sequence[Item]], capacity: Capacity = 8, target_partial: int | None = None,
                      n_nodes: int | None = None, new_items: Sequence[Item] = ()) -> tuple[int, int] | None:
    """(migrations, GPUs moved) of :func:`min_migration_repack` by exhaustive enumeration; None
    when infeasible. Exponential: for ≤ ~7 instances on ≤ 3 nodes."""
    nodes = normalise(current, capacity, n_nodes)
    target: int | Literal["phi"] = "phi" if target_partial is None else target_partial
    out = _bruteforce(nodes, node_capacities(capacity, len(nodes)), new_items, target)
    return None if out is None else out[:2]


def admit_bruteforce(current: Sequence[Sequence[Item]], capacity: Capacity, job_g: int, job_w: int,
                     n_nodes: int | None = None) -> tuple[int, int] | None:
    """(migrations, GPUs moved) of :func:`min_migrations_to_admit` by exhaustive enumeration."""
    nodes = normalise(current, capacity, n_nodes)
    out = _bruteforce(nodes, node_capacities(capacity, len(nodes)), ((-1, job_g),) * job_w, None)
    return None if out is None else out[:2]
