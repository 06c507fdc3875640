"""The certificate every exact Φ★ / min-nodes method returns (SPEC: "a certificate, not a number").

A certificate carries the status, the incumbent objective, the proven lower bound, a witness
packing (pattern → multiplicity), the solver's name and version and the wall time, so a caller
can re-check the answer (:func:`witness_violations`) instead of trusting it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from oracle.gpu.patterns import from_sizes, load

Status = Literal["optimal", "infeasible", "unknown"]
WitnessEntry = tuple[tuple[int, ...], int]  # (pattern as demands sorted descending, multiplicity)


@dataclass(frozen=True)
class Certificate:
    """Outcome of one exact solve.

    ``objective`` is the incumbent's value (for 'unknown' it may be a feasible but unproven value,
    or None when no packing was found in time); ``bound`` is a proven lower bound (equal to the
    objective when 'optimal'; None when nothing was proven). ``witness`` lists the non-empty
    node contents of the incumbent; it is empty for 'infeasible' and for an unknown solve without
    incumbent.
    """

    status: Status
    objective: int | None
    bound: int | None
    witness: tuple[WitnessEntry, ...]
    solver: str
    solver_version: str
    wall_time: float

    @property
    def is_optimal(self) -> bool:
        return self.status == "optimal"

    @property
    def nodes_used(self) -> int:
        return sum(m for _, m in self.witness)


def witness_counts(witness: tuple[WitnessEntry, ...], capacity: int = 8) -> tuple[int, ...]:
    """Instance counts n_1..n_G packed by a witness."""
    total = [0] * capacity
    for demands, mult in witness:
        for g in demands:
            total[g - 1] += mult
    return tuple(total)


def witness_partial_nodes(witness: tuple[WitnessEntry, ...], capacity: int = 8) -> int:
    """Number of partial nodes (non-empty, fewer than G GPUs used) in a witness packing."""
    return sum(m for demands, m in witness if 0 < sum(demands) < capacity)


def witness_violations(
    witness: tuple[WitnessEntry, ...], counts: tuple[int, ...], n_nodes: int, capacity: int = 8
) -> list[str]:
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
    used = sum(m for _, m in witness)
    if used > n_nodes:
        out.append(f"uses {used} nodes > N = {n_nodes}")
    return out
