"""A best-fit whose ties do not depend on node numbers, so it may declare symmetry
(docs/policies.md, "Abstractions"): `verify --policy symmetric_best_fit:SymmetricBestFit`.

Each instance goes to a node with the fewest free GPUs that still fit it; among those, to the one
whose choice gives the smallest canonical placement (``proofs_check.gpu.canonical``), so two
states that differ only by node numbers and job ids get equivalent successors. The explorer checks
the declaration (``symmetric = True``) on every run before it merges states by canonical form.
"""
from heuristics.gpu.cluster import Instance, Job, Placement
from heuristics.gpu.policy import EventResult
from proofs_check.gpu.canonical import canonical


class SymmetricBestFit:
    name, symmetric = "symmetric-best-fit", True

    def __init__(self, n_nodes: int, capacity: int = 8) -> None:
        self.n_nodes, self.capacity = n_nodes, capacity
        self.nodes: list[list[Instance]] = [[] for _ in range(n_nodes)]

    def arrive(self, job: Job) -> EventResult:
        free = [self.capacity - sum(i.g for i in n) for n in self.nodes]
        if sum(f // job.g for f in free) < job.w:
            return EventResult.refused("does not fit")
        for _ in range(job.w):
            least = min(f for f in free if f >= job.g)
            # nodes of equal content give equivalent placements: one of each content is compared
            tied = list({tuple(sorted(self.nodes[k])): k for k, f in reversed(list(enumerate(free)))
                         if f == least}.values())
            k = tied[0] if len(tied) == 1 else min(tied, key=lambda k: canonical(self._with(k, Instance(job.id, job.g))))
            self.nodes[k].append(Instance(job.id, job.g))
            free[k] -= job.g
        return EventResult.applied()

    def _with(self, k: int, inst: Instance) -> Placement:
        return Placement(self.capacity, tuple(tuple(sorted(n + [inst] if i == k else n))
                                              for i, n in enumerate(self.nodes)))

    def depart(self, job_id: int) -> EventResult:
        self.nodes = [[i for i in n if i.job != job_id] for n in self.nodes]
        return EventResult.applied()

    def placement(self) -> Placement:
        return Placement(self.capacity, tuple(tuple(sorted(n)) for n in self.nodes))

    state_key = placement

    def with_state(self, key: Placement) -> "SymmetricBestFit":
        s = SymmetricBestFit(len(key.nodes), key.capacity)
        s.nodes = [list(n) for n in key.nodes]
        return s

    # Not needed by the explorer; the benchmark's reference (the explorer before the scheduler
    # model, benchmarks/bench_scheduler_model.py) rebuilt schedulers and needed them.
    def running(self) -> dict[int, Job]:
        shape: dict[int, list[int]] = {}
        for n in self.nodes:
            for i in n:
                shape.setdefault(i.job, [i.g, 0])[1] += 1
        return {j: Job(j, g, w) for j, (g, w) in shape.items()}

    def clone(self) -> "SymmetricBestFit":
        return self.with_state(self.placement())
