"""A small best-fit GPU scheduler, written the way a scheduler author would, in two versions.

``FixedBestFit`` is correct. ``BuggyBestFit`` carries ONE deliberate bug, in :meth:`depart`:

    THE BUG: a departing job's instances are removed from the first node that holds any of them,
    and the loop then stops (``break``). A job whose instances were spread over two nodes leaves
    its instances on the other node behind: their GPUs stay allocated forever.

Every test that only submits jobs, or only uses jobs that fit on one node, passes. ``verify
--policy buggy-best-fit`` finds it with the shortest counterexample: on N = 2 nodes, a job of
three 3-GPU instances (9 GPUs, so it spans two nodes) arrives and departs; ``policy.valid``
reports the instances still placed after the departure.

The scheduler implements the protocol of ``heuristics.gpu.policy.Policy``; its whole state is its
placement (``state_key`` returns a ``Placement``), so ``with_state`` can rebuild it from one.
"""
from __future__ import annotations

from collections import Counter

from heuristics.gpu.cluster import Instance, Job, Placement
from heuristics.gpu.policy import EventResult


class FixedBestFit:
    """Best-fit: each instance goes to the node with the fewest free GPUs that still fit it
    (ties: the lowest node index). Gang admission: all w instances or none."""

    name = "fixed-best-fit"
    migrates = False  # it never moves a running instance
    _buggy = False

    def __init__(self, n_nodes: int, capacity: int = 8) -> None:
        self.n_nodes, self.capacity = n_nodes, capacity
        self._nodes: list[list[Instance]] = [[] for _ in range(n_nodes)]
        self._jobs: dict[int, Job] = {}

    def _free(self) -> list[int]:
        return [self.capacity - sum(i.g for i in node) for node in self._nodes]

    def arrive(self, job: Job) -> EventResult:
        if job.id in self._jobs:
            raise ValueError(f"job {job.id} is already running")
        free = self._free()
        if sum(f // job.g for f in free) < job.w:  # exact for w identical instances
            return EventResult.refused(f"job {job.id} ({job.w}x{job.g}) does not fit the free GPUs")
        for _ in range(job.w):
            _, n = min((f, i) for i, f in enumerate(free) if f >= job.g)
            self._nodes[n].append(Instance(job.id, job.g))
            free[n] -= job.g
        self._jobs[job.id] = job
        return EventResult.applied()

    def depart(self, job_id: int) -> EventResult:
        if job_id not in self._jobs:
            raise ValueError(f"job {job_id} is not running")
        del self._jobs[job_id]
        for node in self._nodes:
            if any(i.job == job_id for i in node):
                node[:] = [i for i in node if i.job != job_id]
                if self._buggy:
                    break  # THE BUG: the job's instances on later nodes stay placed
        return EventResult.applied()

    def placement(self) -> Placement:
        return Placement(self.capacity, tuple(tuple(node) for node in self._nodes))

    def state_key(self) -> Placement:
        return self.placement()

    def running(self) -> dict[int, Job]:
        return dict(self._jobs)

    def clone(self) -> "FixedBestFit":
        return self.with_state(self.placement())

    def with_state(self, key: object) -> "FixedBestFit":
        if not isinstance(key, Placement):
            raise TypeError(f"{type(self).__name__} state is a Placement, got {type(key).__name__}")
        other = type(self)(len(key.nodes), key.capacity)
        other._nodes = [list(node) for node in key.nodes]
        width = Counter(i.job for node in key.nodes for i in node)
        demand = {i.job: i.g for node in key.nodes for i in node}
        other._jobs = {j: Job(j, demand[j], w) for j, w in width.items()}
        return other


class BuggyBestFit(FixedBestFit):
    """:class:`FixedBestFit` with the documented departure bug."""

    name = "buggy-best-fit"
    _buggy = True
