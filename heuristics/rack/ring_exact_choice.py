"""``ring-exact-choice``: RingStitch with its candidate generators replaced by the exact oracle
(seed 004, §IV; issue 15 item 6 — "is the heuristic needed at all?").

Steps 1–2 are RingStitch's (§IV-A): the rack-local best-fit when one rack holds D, defer when the
aggregate residual is < D. Every other (cross-rack) job takes the lexicographic optimum of
oracle/rack/rack_subset.py — fewest racks, then minimum closed-tour ring cost, then minimum
fragmentation cost with the same penalty table — i.e. the best rack subset, ring and allocation
for *this* job. Whether that per-job optimum also helps over time is what the comparison measures.

Readings (docs/ringstitch.md):
- local jobs keep the local best-fit: the oracle's k = 1 optimum would minimise f(leftover), which
  for the ``linear`` table is a worst-fit, and the item asks about cross-rack jobs only;
- the oracle is bounded by expanded nodes (``node_limit``), never by wall time, so a simulation
  is reproducible; on hitting the bound the proven-so-far incumbent is placed (source
  ``exact-incumbent``);
- a job needing more than ``MAX_RACKS`` racks is beyond the oracle (``unknown``): RingStitch's own
  choice is placed (source ``fallback:<generator>``). Sources are counted by the simulator.
Admission is unchanged: the policy places a job iff one rack holds D or the aggregate residual
reaches D (the simulator's queue-scan shortcut relies on exactly this threshold).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np

from heuristics.rack.racks import FragmentationPenalty, RackCluster, RackPlacement, Residual
from heuristics.rack.ringstitch import RingStitch, local_else_stitch
from oracle.rack.rack_subset import lex_optimal_subset
from oracle.result import Status

# A reproducible guard against a runaway search, far above the paper-scale medians of
# bench_ring_oracle.py; hitting it is counted (``exact-incumbent``). It bounds nodes, not time: a
# node at 10–12 racks costs a Held–Karp pass, so single decisions still reach seconds.
NODE_LIMIT = 20_000

EXACT, INCUMBENT, FALLBACK = "exact", "exact-incumbent", "fallback"


@dataclass(frozen=True)
class RingExactChoice:
    """Local best-fit, else the exact lexicographic optimum; ``place`` is a pure function of the
    residuals."""

    penalty: FragmentationPenalty = FragmentationPenalty()
    node_limit: int = NODE_LIMIT
    name: ClassVar[str] = "ring-exact-choice"

    def __post_init__(self) -> None:
        if self.node_limit < 1:
            raise ValueError(f"node_limit: need >= 1, got {self.node_limit!r}")

    def place(self, cluster: RackCluster, residual: Residual, demand: int) -> RackPlacement | None:
        def stitch(res: np.ndarray, table: Sequence[float]) -> RackPlacement | None:
            cert = lex_optimal_subset(res, demand, cluster.dist, table, time_limit=float("inf"),
                                      node_limit=self.node_limit)
            if cert.status is Status.UNKNOWN:  # more racks than the oracle handles
                p = RingStitch(self.penalty).place(cluster, res, demand)
                return None if p is None else p._replace(source=f"{FALLBACK}:{p.source}")
            if cert.objective is None:
                raise AssertionError(f"oracle {cert.status} on a stitching-regime job (D={demand})")
            source = EXACT if cert.status is Status.OPTIMAL else INCUMBENT
            _, cost, frag = cert.objective
            return RackPlacement(cert.witness.alloc, cert.witness.ring, int(cost), frag, source)

        return local_else_stitch(cluster, residual, demand, self.penalty, stitch)
