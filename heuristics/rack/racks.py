"""TPU/OCS rack model of RingStitch (seed 004, §III-A–C).

N racks of C chips sit at fixed coordinates of an X×Y×Z torus. Residual capacities change as jobs
come and go; coordinates and hop distances never change. A job of D chips is placed as an
*allocation* (rack → chips) plus a *ring order* over its racks; the ring cost is the length of the
closed tour in torus hops (§III-C: "closed-tour convention", so a two-rack ring counts the link in
both directions and a one-rack placement costs 0).

The post-placement fragmentation penalty (§IV-C: "largest for small positive leftovers and zero for
fully consumed residual blocks") is left open by the paper; :class:`FragmentationPenalty` names the
readings we ship (see docs/ringstitch.md). It lives here because RingStitch, its baselines and the
exact oracle must all use the same table for "lexicographic optimum" to be well defined.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import NamedTuple, Sequence

import numpy as np

Coord = tuple[int, int, int]
# Free chips per rack, indexed by rack id: a plain sequence from callers, an int array inside the
# policies and the simulator (which index it the same way).
Residual = Sequence[int] | np.ndarray

PAPER_DIMS: Coord = (5, 5, 6)  # §V-A: 150 racks on a 5×5×6 torus
PAPER_CAPACITY = 64  # §V-A: 64 chips per rack


def hop_distance(a: Coord, b: Coord, dims: Coord) -> int:
    """Wrap-around Manhattan distance on the torus: Σ_axis min(|Δ|, L − |Δ|)."""
    return sum(min(abs(p - q), n - abs(p - q)) for p, q, n in zip(a, b, dims))


def distance_matrix(coords: Sequence[Coord], dims: Coord) -> np.ndarray:
    """All-pairs :func:`hop_distance` (int64 N×N), vectorised over the three axes."""
    xyz = np.asarray(coords, dtype=np.int64).reshape(-1, 3)
    delta = np.abs(xyz[:, None, :] - xyz[None, :, :])
    return np.minimum(delta, np.asarray(dims, dtype=np.int64) - delta).sum(axis=2)


@dataclass(frozen=True)
class RackCluster:
    """Static geometry: torus ``dims``, chips per rack ``capacity``, one coordinate per rack."""

    dims: Coord
    capacity: int
    coords: tuple[Coord, ...]

    def __post_init__(self) -> None:
        if len(self.dims) != 3 or any(int(d) < 1 for d in self.dims):
            raise ValueError(f"dims: need three positive torus sizes, got {self.dims!r}")
        if int(self.capacity) < 1:
            raise ValueError(f"capacity: need C >= 1, got {self.capacity!r}")
        if not self.coords:
            raise ValueError("coords: a cluster needs at least one rack")
        for i, c in enumerate(self.coords):
            if len(c) != 3 or not all(0 <= v < n for v, n in zip(c, self.dims)):
                raise ValueError(f"coords[{i}]: {c!r} is not a cell of torus {self.dims!r}")
        if len(set(self.coords)) != len(self.coords):
            raise ValueError("coords: two racks share a torus cell")

    @classmethod
    def torus(cls, dims: Coord = PAPER_DIMS, capacity: int = PAPER_CAPACITY,
              n_racks: int | None = None) -> "RackCluster":
        """Racks on the first ``n_racks`` cells of the torus in row-major (x, y, z) order
        (default: every cell, i.e. the paper's 150-rack layout for 5×5×6)."""
        if len(dims) != 3 or any(int(d) < 1 for d in dims):
            raise ValueError(f"dims: need three positive torus sizes, got {dims!r}")
        nx, ny, nz = dims  # a list is accepted too; stored as a tuple so the cluster stays hashable
        cells = [(x, y, z) for x in range(nx) for y in range(ny) for z in range(nz)]
        n = len(cells) if n_racks is None else n_racks
        if not 1 <= n <= len(cells):
            raise ValueError(f"n_racks: need 1..{len(cells)} for torus {dims!r}, got {n_racks!r}")
        return cls((nx, ny, nz), capacity, tuple(cells[:n]))

    @property
    def n(self) -> int:
        return len(self.coords)

    @property
    def total_chips(self) -> int:
        return self.n * self.capacity

    @cached_property
    def dist(self) -> np.ndarray:
        return distance_matrix(self.coords, self.dims)

    def empty_residual(self) -> tuple[int, ...]:
        return (self.capacity,) * self.n


def ring_cost(order: Sequence[int], dist: np.ndarray) -> int:
    """Closed-tour length of racks visited in ``order`` (§III-C). One rack: 0; two racks: 2·d."""
    if len(order) < 2:
        return 0
    idx = np.asarray(order)
    return int(dist[idx, np.roll(idx, -1)].sum())


@dataclass(frozen=True)
class FragmentationPenalty:
    """Penalty of one selected rack left with ``l`` residual chips after allocation.

    f(0) = 0 always (§IV-C: "zero for fully consumed residual blocks"); for l ≥ 1 the penalty
    decreases in l ("largest for small positive leftovers"). Readings:

    - ``linear`` (default): f(l) = C − l + 1, integer, so lexicographic ties are exact;
    - ``inverse``: f(l) = 1 / l.

    The fragmentation cost of a placement is Σ over its racks of f(leftover).
    """

    name: str = "linear"

    def __post_init__(self) -> None:
        if self.name not in PENALTY_NAMES:
            raise ValueError(f"penalty: unknown name {self.name!r}; known: {', '.join(PENALTY_NAMES)}")

    @lru_cache(maxsize=None)
    def table(self, capacity: int) -> tuple[float, ...]:
        """f(0..C) as a tuple — the form the exact oracle takes."""
        if self.name == "linear":
            return (0.0,) + tuple(float(capacity - l + 1) for l in range(1, capacity + 1))
        return (0.0,) + tuple(1.0 / l for l in range(1, capacity + 1))


PENALTY_NAMES = ("linear", "inverse")


def score_key(n_racks: int, cost: int, frag: float) -> tuple[int, int, float]:
    """The lexicographic key (racks, ring cost, fragmentation cost); ``frag`` rounded so float
    penalties that agree to 1e-9 tie instead of being ordered by rounding noise."""
    return (n_racks, cost, round(frag, 9))


class RackPlacement(NamedTuple):
    """A placement decision: ``alloc`` = ((rack, chips), ...), ``ring`` = closed-tour order of the
    same racks, ``cost`` = its ring cost, ``frag`` = fragmentation cost, ``source`` = which rule
    produced it (``local`` or a candidate-generator name)."""

    alloc: tuple[tuple[int, int], ...]
    ring: tuple[int, ...]
    cost: int
    frag: float
    source: str

    @property
    def racks(self) -> tuple[int, ...]:
        return tuple(r for r, _ in self.alloc)

    @property
    def chips(self) -> int:
        return sum(c for _, c in self.alloc)

    @property
    def key(self) -> tuple[int, int, float]:
        return score_key(len(self.alloc), self.cost, self.frag)


def fragmentation_cost(residual: Residual, alloc: Sequence[tuple[int, int]],
                       table: Sequence[float]) -> float:
    """Σ over allocated racks of f(residual − chips)."""
    return float(sum(table[residual[r] - c] for r, c in alloc))


def placement_violations(cluster: RackCluster, residual: Residual, demand: int,
                         p: RackPlacement, table: Sequence[float] | None = None) -> list[str]:
    """Everything wrong with ``p`` as a placement of ``demand`` chips on ``residual``; [] if valid.

    Checks: racks exist and are distinct, every rack gets ≥ 1 chip and at most its residual, the
    chips sum to the demand, the ring is a permutation of the allocated racks, the recorded ring
    cost is the ring's closed-tour length, and (if ``table`` is given) the recorded fragmentation
    cost matches.
    """
    errs: list[str] = []
    racks = [r for r, _ in p.alloc]
    if len(set(racks)) != len(racks):
        errs.append(f"rack repeated in allocation {p.alloc}")
    for r, c in p.alloc:
        if not 0 <= r < cluster.n:
            errs.append(f"rack {r} out of range 0..{cluster.n - 1}")
            continue
        if c < 1:
            errs.append(f"rack {r} allocated {c} chips (< 1)")
        if c > residual[r]:
            errs.append(f"rack {r} allocated {c} chips but has residual {residual[r]}")
    if sum(c for _, c in p.alloc) != demand:
        errs.append(f"allocation sums to {sum(c for _, c in p.alloc)}, demand is {demand}")
    if sorted(p.ring) != sorted(racks):
        errs.append(f"ring {p.ring} is not a permutation of allocated racks {tuple(racks)}")
    elif not errs and ring_cost(p.ring, cluster.dist) != p.cost:
        errs.append(f"recorded ring cost {p.cost} != closed-tour length {ring_cost(p.ring, cluster.dist)}")
    if table is not None and not errs:
        frag = fragmentation_cost(residual, p.alloc, table)
        if abs(frag - p.frag) > 1e-9:
            errs.append(f"recorded fragmentation cost {p.frag} != {frag}")
    return errs


def is_valid_placement(cluster: RackCluster, residual: Residual, demand: int,
                       p: RackPlacement, table: Sequence[float] | None = None) -> bool:
    return not placement_violations(cluster, residual, demand, p, table)


def check_residual(cluster: RackCluster, residual: Residual) -> None:
    """Raise ValueError naming the first rack whose residual is not an int in 0..C."""
    if len(residual) != cluster.n:
        raise ValueError(f"residual: {len(residual)} values for {cluster.n} racks")
    for i, r in enumerate(residual):
        if isinstance(r, bool) or not isinstance(r, (int, np.integer)) or not 0 <= r <= cluster.capacity:
            raise ValueError(f"residual[{i}]: {r!r} is not an integer in 0..{cluster.capacity}")


def check_demand(demand: int) -> None:
    if isinstance(demand, bool) or not isinstance(demand, (int, np.integer)) or demand < 1:
        raise ValueError(f"demand: {demand!r} is not a positive integer")
