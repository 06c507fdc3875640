"""The two migrating baselines of seeds/000 §5.4: an FFT-like round repack and a DRR-like cycle.

The paper gives one sentence each:

* **FFT** [30]: "globally reorganizes the placement of all running jobs by solving an ILP at the
  start of each round, and schedules arriving jobs within each round using a best-fit."
* **DRR** [49]: "periodically migrates the jobs on the lowest-utilization node onto
  high-utilization target nodes at the start of each reschedule cycle, and places arriving jobs
  using a DRL policy trained via imitation learning from a best-fit heuristic."

Both need a notion of time, which the Policy protocol (arrive/depart) does not carry. They offer

    tick(now: float) -> EventResult

which the simulator calls with the current time before each event; when ``now`` has entered a
new round (rounds are [k·R, (k+1)·R), R = ``round_length``, default 300 s) the round-start
reorganisation runs *then* and its migrations are returned in that ``EventResult`` — the caller
must apply (charge) them like an event's migrations. Rounds in which no event happens are
skipped (nothing changes in them anyway); a round's work happens at its first event, not at k·R
exactly. ``tick`` with a time earlier than the last one raises ValueError. Without ticks the
policies are plain best-fit.

Readings chosen:

* FFT's ILP objective is not stated. Reading: reach a packing with Φ★ partial nodes (the
  minimum, like SIFOpt) by the fewest migrations — ``heuristics.gpu.sifopt.repack``: the exact
  min-migration ILP up to ``exact_max_nodes`` nodes, its documented heuristic beyond. Within the
  round: best-fit placement, no migrations on arrivals or departures (``"fft"``).
* On mixed node capacities (``on_capacities``, docs/heterogeneous.md) both run natively: FFT's
  repack is the min-migration oracle on per-node capacities; DRR reads "non-full" and "fits"
  against each node's own capacity. Both honour model-constrained jobs (openb ``gpu_spec``):
  best-fit places them on nodes of their models; FFT's round repack is then
  ``heuristics.gpu.model_repack``'s (the min-migration repack with GPU models), and DRR's drain
  "fits" only on a node of the moved instance's models (a constrained instance with no allowed
  target keeps the whole cycle from moving).
* DRR's "lowest-utilisation node": the non-empty, non-full node with the fewest used GPUs
  (ties: lowest index). "Onto high-utilisation target nodes": its instances, largest first, each
  go to the best-fit node among the *other non-empty* nodes (fewest free GPUs that still fit —
  ``heuristics.gpu.baselines.RULES["best-fit"]``, i.e. the fullest node that fits; an empty node is
  never a "high-utilisation" target, and moving there would free nothing). All or nothing: if
  some instance finds no such node, nothing moves that cycle. One node per cycle. The DRL
  placement policy is replaced by its teacher, best-fit (no learned policy; issue 6 asks for the
  heuristic part only) (``"drr"``).
"""
from __future__ import annotations

import math

from heuristics.gpu.baselines import RULES
from heuristics.gpu.cluster import Job, Placement
from heuristics.gpu.policy import EventResult, Migration
from heuristics.gpu.sifopt import DEFAULT_EXACT_MAX_NODES, DEFAULT_TIME_LIMIT, RepackingPolicy
from oracle.gpu.min_migration import Solver

DEFAULT_ROUND_LENGTH = 300.0


class RoundPolicy(RepackingPolicy):
    """Best-fit placement plus a reorganisation at the start of every round of ``round_length``
    seconds (subclasses define :meth:`reorganise`)."""

    def __init__(self, n_nodes: int, capacity: int = 8, round_length: float = DEFAULT_ROUND_LENGTH,
                 exact_max_nodes: int = DEFAULT_EXACT_MAX_NODES, time_limit: float = DEFAULT_TIME_LIMIT,
                 solver: Solver = "cp-sat") -> None:
        if not round_length > 0:
            raise ValueError(f"round_length={round_length} must be > 0")
        super().__init__(n_nodes, capacity, exact_max_nodes, time_limit, solver)
        self.round_length = float(round_length)
        self._now = -math.inf
        self._round: int | None = None

    def tick(self, now: float) -> EventResult:
        """Advance the clock to ``now``; at the first tick of a new round, reorganise."""
        if now < self._now:
            raise ValueError(f"time went backwards: tick({now}) after tick({self._now})")
        self._now = now
        k = int(now // self.round_length)
        if self._round is not None and k == self._round:
            return EventResult.applied()
        self._round = k
        return EventResult.applied(self.reorganise())

    def next_round(self) -> EventResult:
        """The start of the next round (the explorer's environment input, ``verify --policy``):
        ``tick`` at the first instant of the round after the current one."""
        k = -1 if self._round is None else self._round
        return self.tick((k + 1) * self.round_length)

    def reorganise(self) -> tuple[Migration, ...]:
        """The round-start migrations (already applied to the state)."""
        raise NotImplementedError

    def arrive(self, job: Job) -> EventResult:
        return self._bf.arrive(job)

    def depart(self, job_id: int) -> EventResult:
        return self._bf.depart(job_id)


class FFT(RoundPolicy):
    """FFT-like: at each round start, the min-migration repack to Φ★; best-fit within rounds."""

    name = "fft"

    def reorganise(self) -> tuple[Migration, ...]:
        return self._repack_to_phi_star("fft-round")


class DRR(RoundPolicy):
    """DRR-like: at each cycle start, drain the least-utilised node onto the fullest nodes that
    fit (best-fit), all or nothing; best-fit placement."""

    name = "drr"

    def reorganise(self) -> tuple[Migration, ...]:
        p = self.placement()
        caps = self.capacities  # each node's own capacity (mixed capacities run natively)
        used = [p.used(n) for n in range(p.n_nodes)]
        candidates = [n for n, u in enumerate(used) if 0 < u < caps[n]]
        if not candidates:
            return ()
        src = min(candidates, key=lambda n: (used[n], n))
        best_fit = RULES["best-fit"]
        nodes = [list(node) for node in p.nodes]
        moves: list[Migration] = []
        for inst in sorted(nodes[src], key=lambda i: (-i.g, i.job)):
            fits = [n for n in range(p.n_nodes)
                    if n != src and 0 < used[n] <= caps[n] - inst.g and self.may_use(inst.job, n)]
            if not fits:
                return ()
            dst = min(fits, key=lambda n: best_fit(caps[n] - used[n], n, inst.g, (), caps[n]))
            used[dst] += inst.g
            nodes[dst].append(inst)
            moves.append(Migration(inst.job, inst.g, src, dst, "drr-drain"))
        nodes[src] = []
        self._set_placement(Placement(p.capacity, tuple(tuple(sorted(n)) for n in nodes)))
        return tuple(moves)
