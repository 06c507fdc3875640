"""Φ★ proven without a solver when a best-fit-decreasing packing meets the parity bound.

COMPASS-ABS §3.2: Φ★ = min partial nodes over packings of the active instances into N nodes.
If the total demand T is not a multiple of G, some used node is not full, so Φ★ ≥ 1[T mod G ≠ 0]
(the bound of Appendix C, eq. 21, which holds with or without WCC). Best-fit decreasing (BFD),
run on count vectors, gives a packing; when it uses at most N nodes and has exactly that many
partial nodes, the bound is attained and Φ★ is proven equal to it — a certificate with its
witness, like every other Φ★ certificate (status optimal, solver ``bfd-bound``). Otherwise the
caller asks the exact oracle (:func:`phi_star`, the pattern ILP / DP of ``oracle.gpu.phi_star``).

The converse question — the instances fit in no packing into N nodes (an arrival SIFOpt must
refuse) — is settled the same way when Martello and Toth's lower bound L2 on the number of bins
exceeds N (status infeasible, solver ``bfd-bound``).

SIFOpt asks for Φ★ at every arrival and departure; on GFS-like mixes (plenty of 1-GPU fillers)
the certificate settles nearly all of them in microseconds, where a cold CP-SAT solve takes
10–20 ms (benchmarks/bench_sifopt.py). The BFD runs in bulk: a node keeps taking g-GPU items
while it has room for them (it stays the best fit), so the work is O(G²) node groups whatever
the instance count.
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Sequence

from oracle.gpu.patterns import PackingWitness, Pattern, load, sizes
from oracle.gpu.phi_star import DEFAULT_TIME_LIMIT, check_counts, phi_star
from oracle.result import Certificate, Status

SOLVER = "bfd-bound"


def bfd_packing(counts: Sequence[int], capacity: int) -> Counter[Pattern]:
    """Best-fit decreasing on counts: node patterns with multiplicities (the used nodes only)."""
    by_free: list[Counter[Pattern]] = [Counter() for _ in range(capacity + 1)]  # open nodes by free GPUs
    for g in range(capacity, 0, -1):
        left = counts[g - 1]
        while left:
            f = next((f for f in range(g, capacity) if by_free[f]), capacity)
            per = min(f // g, left)  # the best-fit node keeps taking g's while they fit
            pattern = next(iter(by_free[f])) if f < capacity else (0,) * capacity
            nodes = min(left // per, by_free[f][pattern]) if f < capacity else left // per
            if f < capacity:
                by_free[f][pattern] -= nodes
                if not by_free[f][pattern]:
                    del by_free[f][pattern]
            grown = tuple(c + per if i == g - 1 else c for i, c in enumerate(pattern))
            by_free[capacity - load(grown)][grown] += nodes
            left -= nodes * per
    out: Counter[Pattern] = Counter()
    for group in by_free:
        out.update(group)
    return out


def nodes_lower_bound(counts: Sequence[int], capacity: int) -> int:
    """Martello–Toth L2: for each α ≤ G/2, items larger than G − α need a node each, items in
    (G/2, G − α] too (no two share one), and the items in [α, G/2] not fitting in the room those
    leave need at least ⌈rest / G⌉ more nodes. A valid lower bound on the nodes of any packing."""
    best = -(-sum(g * c for g, c in enumerate(counts, 1)) // capacity)
    for alpha in range(1, capacity // 2 + 1):
        big = sum(counts[g - 1] for g in range(capacity - alpha + 1, capacity + 1))
        mid = [(g, counts[g - 1]) for g in range(capacity // 2 + 1, capacity - alpha + 1)]
        room = sum(c * (capacity - g) for g, c in mid)
        small = sum(g * counts[g - 1] for g in range(alpha, capacity // 2 + 1))
        best = max(best, big + sum(c for _, c in mid) + max(0, -(-(small - room) // capacity)))
    return best


def certified_phi_star(counts: Sequence[int], n_nodes: int | None,
                       capacity: int = 8) -> Certificate[int, PackingWitness] | None:
    """Φ★'s certificate when BFD attains the parity bound within ``n_nodes`` nodes, or an
    infeasibility certificate when the L2 bound exceeds ``n_nodes``; else None."""
    t0 = time.perf_counter()
    counts = check_counts(counts, n_nodes, capacity)
    if n_nodes is not None and nodes_lower_bound(counts, capacity) > n_nodes:
        return Certificate(Status.INFEASIBLE, None, None, (), SOLVER, "1", time.perf_counter() - t0)
    packing = bfd_packing(counts, capacity)
    bound = int(sum(g * c for g, c in enumerate(counts, 1)) % capacity != 0)
    partial = sum(m for p, m in packing.items() if load(p) < capacity)
    if partial != bound or (n_nodes is not None and sum(packing.values()) > n_nodes):
        return None
    witness = tuple(sorted(((sizes(p), m) for p, m in packing.items()), reverse=True))
    return Certificate(Status.OPTIMAL, bound, bound, witness, SOLVER, "1", time.perf_counter() - t0)


def quick_phi_star(counts: Sequence[int], n_nodes: int | None, capacity: int = 8,
                   time_limit: float = DEFAULT_TIME_LIMIT) -> Certificate[int, PackingWitness]:
    """Φ★: the BFD certificate when it applies, else the exact oracle (memoised there)."""
    return certified_phi_star(counts, n_nodes, capacity) or phi_star(counts, n_nodes, capacity, time_limit)
