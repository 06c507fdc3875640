"""Scheduler-Induced Fragmentation of a placement (COMPASS-ABS §3.2, eqs. 1–2).

Fπ = Φπ/N is the partial-node share of the placement, F★ = Φ★/N the inherent share (the minimum
over all packings of the same instances into the N nodes), and SIF = Fπ − F★ ≥ 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from heuristics.gpu.cluster import Placement, partial_nodes, placement_violations
from oracle.gpu.patterns import PackingWitness
from oracle.gpu.phi_star import DEFAULT_TIME_LIMIT, phi_star
from oracle.result import Certificate


@dataclass(frozen=True)
class SifReport:
    """SIF of one placement with the Φ★ certificate it rests on."""

    n_nodes: int
    counts: tuple[int, ...]
    phi_pi: int
    phi_star: int
    certificate: Certificate[int, PackingWitness]

    @property
    def f_pi(self) -> float:
        return self.phi_pi / self.n_nodes

    @property
    def f_star(self) -> float:
        return self.phi_star / self.n_nodes

    @property
    def sif(self) -> float:
        return (self.phi_pi - self.phi_star) / self.n_nodes


PhiStarMethod = Callable[[tuple[int, ...], int, int], Certificate[int, PackingWitness]]  # (counts, N, capacity)


def sif(p: Placement, method: PhiStarMethod | None = None,
        time_limit: float = DEFAULT_TIME_LIMIT) -> SifReport:
    """SIF of ``p``, Φ★ by ``method`` (default: the memoised ``oracle.gpu.phi_star.phi_star``).

    Raises ValueError for an invalid placement or a cluster of 0 nodes, and
    :class:`~oracle.result.Unproven` when the Φ★ solve hit its limit (no number is made up)."""
    bad = placement_violations(p)
    if bad:
        raise ValueError(f"invalid placement: {bad[0]}")
    if p.n_nodes == 0:
        raise ValueError("SIF is undefined for a cluster of 0 nodes")
    counts = p.counts()
    if method is None:
        cert = phi_star(counts, p.n_nodes, p.capacity, time_limit)
    else:
        cert = method(counts, p.n_nodes, p.capacity)
    value = cert.proven_value("Φ★")
    # The placement itself packs these instances into N nodes, so Φ★ cannot be infeasible;
    # if the oracle says so, the oracle is wrong and must not be papered over.
    if value is None:
        raise RuntimeError(f"Φ★ oracle returned {cert.status} for a placement that exists: {counts}")
    return SifReport(p.n_nodes, counts, partial_nodes(p), value, cert)
