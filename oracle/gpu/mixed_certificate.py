"""Φ★ on mixed node capacities proven without a solver, when a greedy packing meets a lower bound.

The mixed-capacity Φ★ (``oracle.gpu.mixed_phi``, docs/heterogeneous.md): the fewest partial nodes
(non-empty, below their *own* capacity) over the packings of the instances n_1..n_G into the
given nodes. This module is the mixed analogue of ``oracle.gpu.phi_bound`` (the one-capacity
best-fit-decreasing certificate), for instances without GPU-model sets:

* **Lower bound.** If Φ★ = 0 the used nodes are all full, so the total demand T = Σ g·n_g is the
  sum of the capacities of a sub-multiset of the nodes. Hence Φ★ ≥ 1 when T is not such a subset
  sum (:func:`subset_sums`, a bounded-knapsack reachability over the distinct capacities), and
  Φ★ ≥ 0 always.
* **Packing.** Best-fit decreasing in bulk (:func:`greedy_partial`): instances largest first, each
  onto the open node with the least room that fits it; when none fits, a new node is opened —
  one rule prefers the largest capacity, the other the smallest that fits. Run on the histogram of
  open nodes by free GPUs, the work is O(G²) per rule whatever the instance count.
* **Certificate.** When a rule's packing uses only the nodes there are and has as many partial
  nodes as the lower bound, Φ★ equals the bound (proven). Otherwise :func:`certified_mixed_phi_star`
  returns None and the caller asks the exact oracle (``oracle.gpu.mixed_phi.phi_star_mixed``).

Why: on an audited stream of a real mixed cluster nearly every line is a new count vector, and a
CP-SAT solve per vector costs ~12 ms (issue 24: 243 s for 40,000 records on 512 nodes with 128 of
4 GPUs); the certificate settles most of them in microseconds. Exactness is tested against the
exact oracle and the exhaustive search (tests/test_k8s_speed.py).
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from typing import Sequence


def subset_sums(capacities: Sequence[int]) -> frozenset[int]:
    """Every total of the capacities of a sub-multiset of the nodes (0 included)."""
    return _sums(_groups(tuple(capacities)))


@lru_cache(maxsize=64)
def _groups(capacities: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """(capacity, node count) pairs, by capacity (an audit asks again for the same cluster)."""
    return tuple(sorted(Counter(capacities).items()))


@lru_cache(maxsize=64)
def _sums(groups: tuple[tuple[int, int], ...]) -> frozenset[int]:
    reach = {0}
    for c, k in groups:
        reach = {r + c * j for r in reach for j in range(k + 1)}
    return frozenset(reach)


def lower_bound(capacities: Sequence[int], counts: Sequence[int]) -> int:
    """1 when the total demand is no sum of node capacities (some used node is not full), else 0."""
    total = sum(g * n for g, n in enumerate(counts, start=1))
    return int(total not in subset_sums(capacities))


def greedy_partial(capacities: Sequence[int], counts: Sequence[int], largest_first: bool) -> int | None:
    """Partial nodes of the bulk best-fit-decreasing packing (module docstring), opening the
    largest (``largest_first``) or the smallest fitting empty node when no open node fits; None
    when the rule runs out of nodes (the packing exists, this rule did not find it)."""
    groups = _groups(tuple(capacities))
    top = groups[-1][0]
    empty = dict(groups)  # unopened nodes by capacity
    open_free = [0] * (top + 1)  # open (non-empty) nodes by free GPUs
    for g in range(len(counts), 0, -1):
        left = counts[g - 1]
        while left:
            f = next((f for f in range(g, top) if open_free[f]), 0)
            if f:  # the best-fit open node keeps taking g's while they fit
                taken, after, left = fill_nodes(left, g, f, open_free[f])
                open_free[f] -= taken
                open_free[after] += taken
                continue
            fitting = [c for c in empty if c >= g and empty[c]]
            if not fitting:
                return None
            c = max(fitting) if largest_first else min(fitting)
            taken, after, left = fill_nodes(left, g, c, empty[c])
            empty[c] -= taken
            open_free[after] += taken
    return sum(open_free[1:])


def fill_nodes(items: int, g: int, free: int, nodes: int) -> tuple[int, int, int]:
    """``items`` instances of ``g`` GPUs put on some of ``nodes`` nodes with ``free`` free GPUs
    each, each node taking as many as fit (⌊free / g⌋) and, when fewer than that are left, one
    node taking the rest: (nodes used, their free GPUs afterwards, instances left)."""
    per = free // g
    full = min(nodes, items // per)
    if full:
        return full, free - per * g, items - full * per
    return 1, free - items * g, 0


def certified_mixed_phi_star(capacities: Sequence[int], counts: Sequence[int]) -> int | None:
    """Φ★ of ``counts`` (n_1..n_G, any GPU model) on nodes of ``capacities`` when a greedy packing
    attains the lower bound (then it is exact), else None: ask the exact oracle."""
    if not capacities or len(counts) > max(capacities):
        return None
    bound = lower_bound(capacities, counts)
    for largest_first in (True, False):
        partial = greedy_partial(capacities, counts, largest_first)
        if partial is not None and partial == bound:
            return bound
    return None
