"""The cheapest repack by at most one migration, proven by exhaustion (no solver).

SIFOpt (seeds/000 §5.4, Appendix C) repacks to Φ★ after every departure. Right after a departure
the placement was at Φ★ a moment before, so the fewest migrations is very often one (a filler
moved into the hole the job left). That case needs no ILP: with the current placement above the
target (so zero migrations do not reach it), every single move is tried in node-class space —
source class, size g of an instance on it, destination class with room — and the partial-node
count after it follows from the two nodes' loads alone. If some move reaches the target, one
migration is the proven minimum, and the move carrying the fewest GPUs among all of them is the
proven minimum of the secondary objective too (the same lexicographic objective as
``oracle.gpu.min_migration``). If none does, the caller solves the ILP.

O(K²·G) for K node classes (K ≤ 67 for G = 8), whatever the number of nodes. On mixed node
capacities a class also has a capacity (``capacities``): room and partial status are read against
it (docs/heterogeneous.md).
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from oracle.gpu.patterns import Pattern, load


class OneMove(NamedTuple):
    """Move one instance of ``g`` GPUs from a node of class ``src`` to one of class ``dst``
    (indices into the class list given to :func:`best_single_move`)."""

    g: int
    src: int
    dst: int


def _partial(used: int, capacity: int) -> int:
    return int(0 < used < capacity)


def best_single_move(classes: Sequence[tuple[Pattern, int]], capacity: int, partial_now: int,
                     target: int, capacities: Sequence[int] | None = None) -> OneMove | None:
    """The single move with the fewest GPUs after which at most ``target`` nodes are partial
    (ties: the first in class order), or None when no single move gets there.

    ``classes`` are (node pattern, number of nodes with it); ``partial_now`` the partial nodes now;
    ``capacities`` each class's node capacity (default: ``capacity`` for all).
    """
    best: OneMove | None = None
    loads = [load(p) for p, _ in classes]
    caps = [capacity] * len(classes) if capacities is None else list(capacities)
    for a, (pattern, members) in enumerate(classes):
        for g in range(1, capacity + 1):
            if not pattern[g - 1] or (best is not None and g >= best.g):
                continue
            src_delta = _partial(loads[a] - g, caps[a]) - _partial(loads[a], caps[a])
            for b, (_, others) in enumerate(classes):
                if loads[b] + g > caps[b] or (a == b and members < 2):
                    continue
                dst_delta = _partial(loads[b] + g, caps[b]) - _partial(loads[b], caps[b])
                if partial_now + src_delta + dst_delta <= target:
                    best = OneMove(g, a, b)
                    break
    return best
