"""Bin patterns of the configuration ILP for Φ★ (COMPASS-ABS §3.2, Appendix C).

A *pattern* is the content of one node up to relabelling: a non-empty multiset of demands in
1..G whose sum is at most G. Only the counts n_1..n_G of the active instances matter for Φ★, so
a packing is fully described by how many nodes use each pattern; for G = 8 there are 66 of them,
whatever the cluster size. Patterns are count vectors (index g-1 holds how many g's).

The same description is the witness of every Φ★ / min-nodes certificate (:data:`PackingWitness`:
node contents as demand tuples, with multiplicities), re-checked by :func:`witness_violations`.
"""
from __future__ import annotations

from functools import lru_cache

Pattern = tuple[int, ...]
WitnessEntry = tuple[tuple[int, ...], int]  # (node content as demands sorted descending, multiplicity)
PackingWitness = tuple[WitnessEntry, ...]  # the non-empty nodes of a packing; () when there is none


@lru_cache(maxsize=None)
def fill_patterns(room: int, capacity: int, largest: int | None = None) -> tuple[Pattern, ...]:
    """All multisets (count vectors of length ``capacity``) of demands ≤ ``largest`` summing to
    at most ``room``, the empty multiset included, in a deterministic order."""
    top = min(room, capacity if largest is None else largest)
    if top == 0:
        return ((0,) * capacity,)
    out: list[Pattern] = []
    for k in range(room // top + 1):
        for rest in fill_patterns(room - k * top, capacity, top - 1):
            out.append(tuple(c + k if g == top - 1 else c for g, c in enumerate(rest)))
    return tuple(out)


@lru_cache(maxsize=None)
def bin_patterns(capacity: int = 8) -> tuple[Pattern, ...]:
    """The non-empty patterns of one node of ``capacity`` GPUs (66 for G = 8)."""
    return tuple(p for p in fill_patterns(capacity, capacity) if any(p))


def load(pattern: Pattern) -> int:
    """GPUs used by a pattern."""
    return sum((g + 1) * c for g, c in enumerate(pattern))


def sizes(pattern: Pattern) -> tuple[int, ...]:
    """The pattern as a sorted (descending) tuple of demands, e.g. (4, 2, 1, 1)."""
    return tuple(g + 1 for g in reversed(range(len(pattern))) for _ in range(pattern[g]))


def from_sizes(demands: tuple[int, ...] | list[int], capacity: int = 8) -> Pattern:
    """Count vector of a tuple of demands (inverse of :func:`sizes`)."""
    out = [0] * capacity
    for g in demands:
        out[g - 1] += 1
    return tuple(out)


def witness_counts(witness: PackingWitness, capacity: int = 8) -> tuple[int, ...]:
    """Instance counts n_1..n_G packed by a witness."""
    total = [0] * capacity
    for demands, mult in witness:
        for g in demands:
            total[g - 1] += mult
    return tuple(total)


def witness_nodes(witness: PackingWitness) -> int:
    """Number of non-empty nodes a witness packing uses."""
    return sum(m for _, m in witness)


def witness_partial_nodes(witness: PackingWitness, capacity: int = 8) -> int:
    """Number of partial nodes (non-empty, fewer than G GPUs used) in a witness packing (ν(P),
    COMPASS-ABS §3.2)."""
    return sum(m for demands, m in witness if 0 < sum(demands) < capacity)


def witness_violations(witness: PackingWitness, counts: tuple[int, ...], n_nodes: int,
                       capacity: int = 8) -> list[str]:
    """Every reason ``witness`` is not a packing of ``counts`` into at most ``n_nodes`` nodes."""
    out: list[str] = []
    for demands, mult in witness:
        if mult < 1:
            out.append(f"pattern {demands}: multiplicity {mult} < 1")
        if not demands:
            out.append("empty pattern listed")
        if any(not 1 <= g <= capacity for g in demands):
            out.append(f"pattern {demands}: demand outside 1..{capacity}")
            continue
        if load(from_sizes(demands, capacity)) > capacity:
            out.append(f"pattern {demands}: load {sum(demands)} > capacity {capacity}")
    if not out and witness_counts(witness, capacity) != tuple(counts):
        out.append(f"packs counts {witness_counts(witness, capacity)}, expected {tuple(counts)}")
    used = witness_nodes(witness)
    if used > n_nodes:
        out.append(f"uses {used} nodes > N = {n_nodes}")
    return out
