"""The cluster state an audit rebuilds from bindings (delta logs, Kubernetes-style binding streams),
kept incrementally so each line costs O(instances it touches), not O(cluster).

Kept up to date on every placement and removal: GPUs used per node, the instance counts n_1..n_G
(all Φ★ needs, COMPASS-ABS §3.2), Φπ = the number of partial nodes (non-empty, below the node's
own capacity, §3.1) and the set of nodes above capacity. A job is its name and its instances
(node, g); instances of one job may have different demands only after a snapshot said so, and
that is reported when it is read.
"""
from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from proofs_check.gpu.audit_tally import Cluster


class Slot(NamedTuple):
    """One instance: the node it is bound to and its GPUs."""

    node: int
    g: int


NodeContents = Counter[tuple[str, int]]  # (job name, g) -> instances on one node


class RebuiltState:
    """The running jobs on ``cluster``, updated one binding at a time."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._cap = cluster.capacities
        self._used = [0] * cluster.n_nodes
        self._counts = [0] * cluster.max_capacity
        self._over: set[int] = set()
        self.jobs: dict[str, tuple[Slot, ...]] = {}
        self.partial = 0  # Φπ

    @property
    def counts(self) -> tuple[int, ...]:
        """n_1..n_G of the running instances (G = the largest node capacity)."""
        return tuple(self._counts)

    def add(self, name: str, slots: tuple[Slot, ...]) -> None:
        """Bind job ``name``'s instances (the job must not be running)."""
        for node, g in slots:
            self._load(node, g)
            self._counts[g - 1] += 1
        self.jobs[name] = slots

    def remove(self, name: str) -> tuple[Slot, ...]:
        """Unbind every instance of the running job ``name``; returns them."""
        slots = self.jobs.pop(name)
        for node, g in slots:
            self._load(node, -g)
            self._counts[g - 1] -= 1
        return slots

    def reset(self, jobs: dict[str, tuple[Slot, ...]]) -> None:
        """Replace the whole state (a snapshot line re-synchronises the audit)."""
        for name in list(self.jobs):
            self.remove(name)
        for name, slots in jobs.items():
            self.add(name, slots)

    def overfull(self) -> list[str]:
        """One problem per node above its capacity (empty when every node fits)."""
        return [f"node {self.cluster.label(n)}: {self._used[n]} GPUs used > capacity {self._cap[n]}"
                for n in sorted(self._over)]

    def contents(self) -> list[NodeContents]:
        """Per node, the (job, g) multiset bound there (O(instances); for snapshot comparisons)."""
        out: list[NodeContents] = [Counter() for _ in self._cap]
        for name, slots in self.jobs.items():
            for node, g in slots:
                out[node][(name, g)] += 1
        return out

    def _load(self, node: int, delta: int) -> None:
        cap, before = self._cap[node], self._used[node]
        after = before + delta
        self._used[node] = after
        self.partial += (0 < after < cap) - (0 < before < cap)
        if after > cap:
            self._over.add(node)
        else:
            self._over.discard(node)
