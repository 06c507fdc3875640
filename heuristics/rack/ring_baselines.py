"""RingStitch's five baselines (seed 004, §V-B) and the registry of rack policies by name (plus
``ring-exact-choice``, heuristics/rack/ring_exact_choice.py, which is not in the paper).

Every policy has ``name`` and ``place(cluster, residual, demand) -> RackPlacement | None`` (None =
defer), is a pure function of the residuals, and shares the ring-ordering procedure
(heuristics/rack/ring_order.py) and the candidate machinery of heuristics/rack/ringstitch.py. The paper
names the baselines but does not define them; the readings (docs/ringstitch.md):

- Local First-Fit: smallest-id rack with residual ≥ D; never stitches.
- Local Best-Fit: smallest residual ≥ D; never stitches.
- Full-Rack Stitching: local best-fit, else RingStitch's candidate pipeline restricted to fully
  free racks (residual = C); the last rack may be used partially.
- Capacity-only Stitching: local best-fit, else racks with positive residual in id order until D
  is met (aggregate capacity only; no fragment or topology awareness), filled in that order.
- Network-unaware Best-Fit: local best-fit, else the best-fit generator's rack set with
  fragment-first allocation (fragment-aware, topology-blind).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Protocol, Sequence, runtime_checkable

import numpy as np

from heuristics.rack.racks import FragmentationPenalty, RackCluster, RackPlacement, Residual
from heuristics.rack.ring_exact_choice import RingExactChoice
from heuristics.rack.ring_order import EXACT_LIMIT
from heuristics.rack.ringstitch import (GENERATOR_NAMES, RingStitch, as_residual, best_candidate, fill_in_order,
                                        local_best_fit, local_else_stitch, local_first_fit, placed,
                                        stitch_candidates)


class RackPolicy(Protocol):
    @property
    def name(self) -> str: ...

    def place(self, cluster: RackCluster, residual: Residual, demand: int) -> RackPlacement | None: ...


@runtime_checkable
class DemandBound(Protocol):
    """A policy that can say, without placing, the largest demand it could place on these
    residuals: ``place`` returns None for every larger demand (tested against ``place`` for every
    demand). The simulator then skips the calls that would defer; without it the bound is the
    free-chip count, exact for every policy that stitches whenever the aggregate residual suffices."""

    def max_demand(self, cluster: RackCluster, residual: np.ndarray) -> int: ...


@dataclass(frozen=True)
class LocalFirstFit:
    penalty: FragmentationPenalty = FragmentationPenalty()
    name: ClassVar[str] = "local-first-fit"

    def place(self, cluster: RackCluster, residual: Residual, demand: int) -> RackPlacement | None:
        return local_first_fit(as_residual(cluster, residual, demand), demand, self.penalty.table(cluster.capacity))

    def max_demand(self, cluster: RackCluster, residual: np.ndarray) -> int:
        return int(residual.max())


@dataclass(frozen=True)
class LocalBestFit:
    penalty: FragmentationPenalty = FragmentationPenalty()
    name: ClassVar[str] = "local-best-fit"

    def place(self, cluster: RackCluster, residual: Residual, demand: int) -> RackPlacement | None:
        return local_best_fit(as_residual(cluster, residual, demand), demand, self.penalty.table(cluster.capacity))

    def max_demand(self, cluster: RackCluster, residual: np.ndarray) -> int:
        return int(residual.max())


@dataclass(frozen=True)
class FullRackStitching:
    penalty: FragmentationPenalty = FragmentationPenalty()
    exact_limit: int = EXACT_LIMIT
    name: ClassVar[str] = "full-rack"

    def place(self, cluster: RackCluster, residual: Residual, demand: int) -> RackPlacement | None:
        # The shared aggregate-residual deferral never changes the answer here: the free racks
        # hold no more than the aggregate residual.
        def stitch(res: np.ndarray, table: Sequence[float]) -> RackPlacement | None:
            free = np.flatnonzero(res == cluster.capacity)
            if len(free) * cluster.capacity < demand:
                return None
            return best_candidate(cluster, res, demand, free, GENERATOR_NAMES, table, self.exact_limit)

        return local_else_stitch(cluster, residual, demand, self.penalty, stitch)

    def max_demand(self, cluster: RackCluster, residual: np.ndarray) -> int:
        """One rack's residual, or every fully free rack (fewest-racks-first then always reaches D)."""
        return max(int(residual.max()), int((residual == cluster.capacity).sum()) * cluster.capacity)


@dataclass(frozen=True)
class CapacityOnlyStitching:
    penalty: FragmentationPenalty = FragmentationPenalty()
    exact_limit: int = EXACT_LIMIT
    name: ClassVar[str] = "capacity-only"

    def place(self, cluster: RackCluster, residual: Residual, demand: int) -> RackPlacement | None:
        def stitch(res: np.ndarray, table: Sequence[float]) -> RackPlacement | None:
            alloc = fill_in_order(res, np.flatnonzero(res > 0), demand)
            assert alloc is not None, "local_else_stitch only stitches when the aggregate residual reaches D"
            return placed(cluster, res, alloc, table, self.exact_limit, "id-order")

        return local_else_stitch(cluster, residual, demand, self.penalty, stitch)


@dataclass(frozen=True)
class NetworkUnawareBestFit:
    penalty: FragmentationPenalty = FragmentationPenalty()
    exact_limit: int = EXACT_LIMIT
    name: ClassVar[str] = "network-unaware-best-fit"

    def place(self, cluster: RackCluster, residual: Residual, demand: int) -> RackPlacement | None:
        def stitch(res: np.ndarray, table: Sequence[float]) -> RackPlacement | None:
            return stitch_candidates(cluster, res, demand, np.flatnonzero(res > 0), ("best-fit",),
                                     table, self.exact_limit)[0]

        return local_else_stitch(cluster, residual, demand, self.penalty, stitch)


RING_POLICIES: dict[str, Callable[..., RackPolicy]] = {
    cls.name: cls
    for cls in (RingStitch, LocalFirstFit, LocalBestFit, FullRackStitching,
                CapacityOnlyStitching, NetworkUnawareBestFit, RingExactChoice)
}
# The paper's comparison (§V-B): RingStitch and its five baselines; ring-exact-choice is ours.
PAPER_POLICIES: tuple[str, ...] = tuple(name for name in RING_POLICIES if name != RingExactChoice.name)


def make_ring_policy(name: str, **params: object) -> RackPolicy:
    """The rack policy registered under ``name``, built with ``params`` (e.g. ``penalty``)."""
    try:
        factory = RING_POLICIES[name]
    except KeyError:
        raise ValueError(f"scheduler: unknown name {name!r}; known: {', '.join(RING_POLICIES)}") from None
    return factory(**params)
