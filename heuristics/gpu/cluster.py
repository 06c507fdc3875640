"""GPU-cluster model: nodes of capacity G, gang jobs of w identical instances, placements.

Definitions follow COMPASS-ABS §3 (seeds/000): a node is *partial* when it is non-empty and uses
fewer than G GPUs; Φπ is the number of partial nodes of a placement. An instance has demand
g ∈ 1..G and lives on exactly one node; a job of shape (g, w) is admitted all-or-nothing.

Everything here is immutable plain data so it can cross module boundaries (simulators, the
verifier, the oracles' SIF computation) without defensive copies.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, NamedTuple, Protocol, Sequence

G_DEFAULT = 8


class Gang(Protocol):
    """Anything with a gang job's shape (``Job``, a trace's ``TraceJob``): read-only, so
    NamedTuples qualify."""

    @property
    def id(self) -> int: ...

    @property
    def g(self) -> int: ...

    @property
    def w(self) -> int: ...


class Job(NamedTuple):
    """A gang job: ``w`` instances of ``g`` GPUs each."""

    id: int
    g: int
    w: int


class Instance(NamedTuple):
    """One instance of a job. Instances of the same job are interchangeable (same demand)."""

    job: int
    g: int


class Placement(NamedTuple):
    """Which instances sit on which node. ``nodes[n]`` is the tuple of instances on node ``n``."""

    capacity: int
    nodes: tuple[tuple[Instance, ...], ...]

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    def used(self, n: int) -> int:
        return sum(i.g for i in self.nodes[n])

    def counts(self) -> tuple[int, ...]:
        """Instance counts n_1..n_G (index g-1 holds n_g)."""
        return counts_of(i.g for node in self.nodes for i in node)


def counts_of(demands: Iterable[int], capacity: int = G_DEFAULT) -> tuple[int, ...]:
    """Counts n_1..n_G of a multiset of demands (index g-1 holds n_g)."""
    c = Counter(demands)
    return tuple(c.get(g, 0) for g in range(1, capacity + 1))


def empty_placement(n_nodes: int, capacity: int = G_DEFAULT) -> Placement:
    return Placement(capacity, ((),) * n_nodes)


def partial_nodes(p: Placement) -> int:
    """Φπ: number of non-empty nodes using fewer than ``capacity`` GPUs (§3.1)."""
    return sum(1 for n in range(p.n_nodes) if 0 < p.used(n) < p.capacity)


def used_nodes(p: Placement) -> int:
    return sum(1 for node in p.nodes if node)


def empty_nodes(p: Placement) -> int:
    return sum(1 for node in p.nodes if not node)


def used_gpus(p: Placement) -> int:
    return sum(p.used(n) for n in range(p.n_nodes))


def job_instance_counts(p: Placement) -> Counter:
    """How many instances of each job id are placed."""
    return Counter(i.job for node in p.nodes for i in node)


def placement_violations(p: Placement, jobs: Iterable[Job] | None = None,
                         capacities: Sequence[int] | None = None) -> list[str]:
    """Every reason ``p`` is not a valid placement (empty list when valid).

    Checked: demands in 1..G, node capacity never exceeded, each job's instances all share the
    job's demand, and (when ``jobs`` is given) every running job has exactly w instances placed
    (whole jobs only, no double booking) and no unknown job appears. ``capacities``: each node's
    own GPUs on a mixed cluster (docs/heterogeneous.md); default ``p.capacity`` for every node.
    """
    out: list[str] = []
    job_g: dict[int, int] = {}
    for n, node in enumerate(p.nodes):
        cap = p.capacity if capacities is None else capacities[n]
        used = 0
        for inst in node:
            used += inst.g
            if not 1 <= inst.g <= cap:
                out.append(f"node {n}: instance of job {inst.job} has g={inst.g} outside 1..{cap}")
            if job_g.setdefault(inst.job, inst.g) != inst.g:
                out.append(f"job {inst.job}: instances with different demands {job_g[inst.job]} and {inst.g}")
        if used > cap:
            out.append(f"node {n}: {used} GPUs used > capacity {cap}")
    if jobs is not None:
        out += gang_violations(job_instance_counts(p), job_g, jobs)
    return out


def gang_violations(placed: Counter, job_g: dict[int, int], jobs: Iterable[Job]) -> list[str]:
    """Whole jobs only: every running job has exactly w instances of its g placed (``placed``:
    instances per job id, ``job_g``: the demand they were placed with) and nothing else is."""
    out: list[str] = []
    expected = {j.id: j for j in jobs}
    for jid, cnt in placed.items():
        if jid not in expected:
            out.append(f"job {jid}: placed but not running")
        elif cnt != expected[jid].w:
            out.append(f"job {jid}: {cnt} instances placed, job has w={expected[jid].w}")
        elif job_g.get(jid) != expected[jid].g:
            out.append(f"job {jid}: placed with g={job_g.get(jid)}, job has g={expected[jid].g}")
    out.extend(f"job {jid}: running but not placed" for jid in expected if jid not in placed)
    return out


def is_valid_placement(p: Placement, jobs: Iterable[Job] | None = None) -> bool:
    return not placement_violations(p, jobs)


def check_job_shape(g: int, w: int, capacity: int = G_DEFAULT) -> None:
    """Raise ValueError when (g, w) is not a legal job shape for nodes of ``capacity`` GPUs."""
    if not 1 <= g <= capacity:
        raise ValueError(f"g={g} outside 1..{capacity}")
    if w < 1:
        raise ValueError(f"w={w} must be >= 1")
