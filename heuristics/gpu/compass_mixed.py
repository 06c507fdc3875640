"""COMPASS on nodes of mixed capacities and GPU models: one COMPASS-ABS per node class.

COMPASS-ABS (seeds/000 §3–4) is defined for N nodes of one capacity G; the paper has no mixed
cluster. This is the reading used when COMPASS runs on a node list (``Compass.on_capacities``;
docs/heterogeneous.md, "COMPASS on the whole cluster"), not the paper's algorithm:

* **Classes.** Nodes are grouped by capacity, and also by GPU model when some job is
  model-constrained (openb ``gpu_spec``), so a class's nodes are interchangeable for every job.
  Each class runs its own ``Compass(n_c, G_c, variant)`` with G_c its capacity: its Φ★, WCC,
  slots and Compact are the class's. G_c must be 1, 2, 4 or 8: the ABS slot widths w★(g) ∈
  {2, 4, 8} tile such a node (a class of 3, 5, 6 or 7 GPUs is refused with a ValueError).
* **One class per job.** A job's instances all go to one class (an anchor-based space spanning
  capacities is not defined), so a job that fits only across classes is refused.
* **Which class.** The candidates are the classes with G_c ≥ g whose model the job allows; the
  smallest capacity first (best fit across classes: large nodes stay free for large jobs), then
  the fewest free GPUs, then the class whose first node comes first in the list. The first class
  whose COMPASS admits the job places it.
* **Migrations** stay within a class (Compact) and are reported in the cluster's node numbers.
"""
from __future__ import annotations

from typing import Mapping, NamedTuple, Sequence

from heuristics.gpu.cluster import Instance, Job, Placement
from heuristics.gpu.compass import Compass, Variant
from heuristics.gpu.policy import EventResult, Migration, Outcome

CLASS_CAPACITIES = (1, 2, 4, 8)  # capacities an ABS node class may have (module docstring)


class NodeClass(NamedTuple):
    """Nodes of one capacity (and model, when jobs are model-constrained), in list order."""

    capacity: int
    model: str | None  # None: any model (no job is model-constrained)
    nodes: tuple[int, ...]  # the cluster's node numbers; node k of the class is nodes[k]


def node_classes(capacities: Sequence[int], models: Sequence[str] | None, by_model: bool) -> list[NodeClass]:
    """The node classes of a cluster, ordered by their first node (module docstring)."""
    members: dict[tuple[int, str | None], list[int]] = {}
    for n, c in enumerate(capacities):
        model = models[n] if by_model and models is not None else None
        members.setdefault((c, model), []).append(n)
    bad = sorted({c for c in capacities if c not in CLASS_CAPACITIES})
    if bad:
        raise ValueError(f"COMPASS runs node classes of {', '.join(map(str, CLASS_CAPACITIES))} GPUs; "
                         f"this cluster has nodes of {', '.join(map(str, bad))}")
    return [NodeClass(c, m, tuple(ns)) for (c, m), ns in members.items()]


class MixedCompass:
    """COMPASS-ABS (``variant``) on nodes of ``capacities`` / ``models``; a job in ``job_models``
    may use only nodes of those models. Implements ``heuristics.gpu.policy.Policy``."""

    migrates = True

    def __init__(self, variant: str | Variant, capacities: Sequence[int], models: Sequence[str] | None = None,
                 job_models: Mapping[int, frozenset[str]] | None = None) -> None:
        if models is not None and len(models) != len(capacities):
            raise ValueError(f"models: {len(models)} entries for {len(capacities)} nodes")
        self.capacities = tuple(capacities)
        self.models = None if models is None else tuple(models)
        self.job_models = dict(job_models or {})
        self.n_nodes, self.capacity = len(self.capacities), max(self.capacities)
        self.classes = node_classes(self.capacities, self.models, bool(self.job_models))
        self.parts = [Compass(len(k.nodes), k.capacity, variant) for k in self.classes]
        self.name = self.parts[0].name
        self._free = [k.capacity * len(k.nodes) for k in self.classes]
        self._home: dict[int, int] = {}  # job id -> its class

    def _candidates(self, job: Job) -> list[int]:
        allowed = self.job_models.get(job.id)
        ok = [c for c, k in enumerate(self.classes)
              if k.capacity >= job.g and (allowed is None or k.model in allowed)]
        return sorted(ok, key=lambda c: (self.classes[c].capacity, self._free[c], self.classes[c].nodes[0]))

    def arrive(self, job: Job) -> EventResult:
        if job.id in self._home:
            raise ValueError(f"job {job.id} is already running")
        reasons = []
        for c in self._candidates(job):
            res = self.parts[c].arrive(job)
            if res.outcome is Outcome.REFUSED:
                reasons.append(f"{self._label(c)}: {res.reason}")
                continue
            if res.ok:
                self._home[job.id] = c
                self._free[c] -= job.g * job.w
            return self._global(c, res)
        return EventResult.refused("; ".join(reasons) or f"no node of {job.g}+ GPUs of the job's models")

    def depart(self, job_id: int) -> EventResult:
        c = self._home.get(job_id)
        if c is None:
            raise ValueError(f"job {job_id} is not running")
        job = self.parts[c].jobs[job_id]
        res = self.parts[c].depart(job_id)
        if res.ok:
            del self._home[job_id]
            self._free[c] += job.g * job.w
        return self._global(c, res)

    def _global(self, c: int, res: EventResult) -> EventResult:
        """``res`` of class ``c``'s COMPASS with its migrations in the cluster's node numbers."""
        if not res.migrations:
            return res
        nodes = self.classes[c].nodes
        return res._replace(migrations=tuple(Migration(m.job, m.g, nodes[m.src], nodes[m.dst], m.kind)
                                             for m in res.migrations))

    def _label(self, c: int) -> str:
        k = self.classes[c]
        return f"{k.capacity}-GPU nodes" + (f" of {k.model}" if k.model is not None else "")

    def placement(self) -> Placement:
        nodes: list[tuple[Instance, ...]] = [()] * self.n_nodes
        for k, part in zip(self.classes, self.parts):
            for local, insts in enumerate(part.placement().nodes):
                nodes[k.nodes[local]] = insts
        return Placement(self.capacity, tuple(nodes))

    def running(self) -> dict[int, Job]:
        return {j: job for part in self.parts for j, job in part.jobs.items()}

    def partial_empty(self) -> tuple[int, int]:
        """(partial nodes Φπ, empty nodes), each node against its own capacity."""
        return (sum(p.partial_count() for p in self.parts), sum(p.empty_count() for p in self.parts))
