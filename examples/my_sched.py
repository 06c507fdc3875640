"""A 15-line scheduler, verified as it is (docs/policies.md): `cd examples && verify --policy my_sched:FirstFit`."""
from heuristics.gpu.cluster import Instance, Job, Placement
from heuristics.gpu.policy import EventResult


class FirstFit:
    def __init__(self, n_nodes: int, capacity: int = 8) -> None:
        self.n_nodes, self.capacity = n_nodes, capacity
        self.nodes: list[list[Instance]] = [[] for _ in range(n_nodes)]

    def arrive(self, job: Job) -> EventResult:
        free = [self.capacity - sum(i.g for i in n) for n in self.nodes]
        if sum(f // job.g for f in free) < job.w:
            return EventResult.refused("does not fit")
        for _ in range(job.w):
            k = next(i for i, f in enumerate(free) if f >= job.g)
            self.nodes[k].append(Instance(job.id, job.g))
            free[k] -= job.g
        return EventResult.applied()

    def depart(self, job_id: int) -> EventResult:
        self.nodes = [[i for i in n if i.job != job_id] for n in self.nodes]
        return EventResult.applied()

    def placement(self) -> Placement:
        return Placement(self.capacity, tuple(tuple(n) for n in self.nodes))
