"""MCG (seeds/000 §5.4, ref. [48]: Wu et al., "MCG-Sched", IEEE TPDS 36(12), 2025) as a whole-GPU,
non-migrating baseline.

What seeds/000 says of it, all of it:

* §5.4: "builds on FGD's fragmentation-gradient principle and additionally estimates the demand
  distribution of pending jobs to reorder scheduling priorities";
* §8: "MCG incorporated load balance into the fragmentation metric"; FGD, CAFGD and MCG "scheduled
  jobs based on their respective fragmentation measures, preferring placements that minimize the
  increase between pre- and post-scheduling fragmentation".

The MCG-Sched paper itself could not be consulted (no public text was found); the readings below
are ours and docs/baselines_cafgd_mcg.md lists them with the alternatives.

1. **Demand estimate.** The distribution p of FGD's measure is the per-instance demand share of
   the running instances *and the pending jobs* (the wait queue, the arriving job included): FGD's
   current distribution (``heuristics.gpu.baselines``) extended by the queue. The simulator hands
   the queue over through ``prioritise(queue)`` before each scheduling pass; without it (``verify``,
   the state machine) the queue is just the arriving job, i.e. FGD's distribution.

2. **Node score** of an instance of g GPUs on a node with f free (u = c − f used) GPUs:

       S = ΔF / c + β · ((u + g)² − u²) / c²        (β = ``balance_weight``, default 1)

   ΔF is FGD's fragmentation gradient, c the node's capacity (G = 8 on one capacity; its own on a
   mixed cluster, natively: no placeholder stands for a small node's missing GPUs); the second
   term is the node's share of the increase of Σ_n (u_n / c_n)², i.e. of the variance of node loads (the mean's change is the same for every
   node, so it drops out) — the load-balance term, which prefers less loaded nodes. Both terms are
   fractions of a node, weighted equally by default. MCG-Sched balances load across clusters; one
   cluster of N nodes is what seeds/000 simulates, so the balance is across its nodes. Ties: fewer
   free GPUs, then lowest index (FGD's).

3. **Priority.** ``prioritise`` orders the queue by the fragmentation gradient per GPU of each
   job's placement, ΣΔF / (g·w) along the nodes the score picks for its instances (the least
   fragmenting job first); jobs that do not fit now go last; ties keep submission order. The
   queue discipline (FIFO by default) then runs on that order, so the head is the least
   fragmenting job that fits. Priorities are recomputed once per scheduling pass.

Ties (``ties``, issue 13): every node of least S for each instance is a choice (fewer free GPUs and
the node index are our tie-breaks; ``NodeRulePolicy``). The priority reads the gradient along the
default choices (``greedy_gradient``).
"""
from __future__ import annotations

from typing import Iterable, Sequence

from heuristics.gpu.baselines import NodeRule, NodeRulePolicy, fgd_delta, greedy_gradient
from heuristics.gpu.cluster import Job
from heuristics.gpu.policy import EventResult

DEFAULT_BALANCE_WEIGHT = 1.0


def mcg_rule(balance_weight: float) -> NodeRule:
    """MCG's node key: (ΔF/c + β·((u+g)² − u²)/c², free GPUs, node index); c = the node's own
    capacity (G on one capacity; on a mixed cluster an empty 2-GPU node is empty, not 6/8 used)."""

    def key(f: int, idx: int, g: int, p: Sequence[float], cap: int) -> tuple:
        used = cap - f
        balance = ((used + g) ** 2 - used ** 2) / cap ** 2
        return (fgd_delta(f, g, p) / cap + balance_weight * balance, f, idx)

    return key


class MCG(NodeRulePolicy):
    """FGD's gradient plus a load-balance term, over a demand estimate that includes the queue,
    with a fragmentation-gradient priority on the queue (module docstring)."""

    def __init__(self, n_nodes: int, capacity: int = 8, balance_weight: float = DEFAULT_BALANCE_WEIGHT) -> None:
        if not balance_weight >= 0:
            raise ValueError(f"balance_weight={balance_weight} must be >= 0")
        super().__init__("fgd", n_nodes, capacity)
        self.name = "mcg"
        self.balance_weight = balance_weight
        self._rule = mcg_rule(balance_weight)
        self._pending: dict[int, Job] = {}  # the queue of the last scheduling pass, minus admitted jobs

    def prioritise(self, queue: Sequence[Job]) -> list[Job]:
        """The waiting jobs in the order to try them: least fragmentation gradient per GPU first,
        those that do not fit last, ties in queue order. Also records the queue as the pending
        demand the next arrivals are placed against."""
        self._pending = {j.id: j for j in queue}
        p = self._shares(self._pending.values())
        levels = self.class_levels()
        keys: dict[tuple[int, int], float] = {}
        for j in queue:
            if (j.g, j.w) not in keys:
                grad = greedy_gradient(levels, j.g, j.w, self._rule, p)
                keys[j.g, j.w] = float("inf") if grad is None else grad / (j.g * j.w)
        return sorted(queue, key=lambda j: keys[j.g, j.w])

    def arrive(self, job: Job) -> EventResult:
        res = super().arrive(job)
        if res.ok:
            self._pending.pop(job.id, None)
        return res

    def clone(self) -> MCG:
        """A copy with the same placement, option and pending queue."""
        other = self.with_state(self.placement())
        assert isinstance(other, MCG)
        other._pending = dict(self._pending)
        return other

    # -- internals ------------------------------------------------------------------------------
    def _fresh(self) -> MCG:
        return MCG(self.n_nodes, self.capacity, self.balance_weight)

    def _dist(self, job: Job) -> Sequence[float]:
        pending = {**self._pending, job.id: job}
        return self._shares(pending.values())

    def _shares(self, pending: Iterable[Job]) -> list[float]:
        """Per-instance demand shares of the running instances plus ``pending``."""
        counts = list(self._inst_counts)
        for j in pending:
            counts[j.g - 1] += j.w
        total = sum(counts)
        return [c / total for c in counts] if total else [0.0] * self.capacity
