"""Non-migrating baseline placement policies: first-fit, best-fit (GFS), worst-fit and FGD.

seeds/000 §5.4 compares COMPASS-ABS with, among others,

* **GFS** [7]: "places each job's instances on the nodes whose remaining GPU capacity most closely
  matches the per-instance demand, following a best-fit policy";
* **FGD** [45] (Weng et al., ATC'23): "selects the placement that minimizes the resulting increase
  in fragmentation they define".

All four policies here share one class, :class:`NodeRulePolicy`; they differ only in the
:class:`NodeRule` that picks the node for the next instance. Instances of a job are placed one by
one (as Algorithm 1 places COMPASS instances), several instances of a job may share a node, and a
job is admitted only when all its instances fit (gang); otherwise the state is left unchanged.

Readings chosen (the paper gives one sentence per baseline):

* Node choice is made per instance, with the cluster state updated after each instance.
* Ties are broken by the lowest node index (first-fit's rule), so every policy is deterministic.
  With a chooser in ``ties`` (``heuristics.gpu.ties``, issue 13) every tie is a choice instead:
  for each instance, every node whose score equals the least one (up to float rounding: scores
  are rational, computed in floats), in the order of the default tie-breaks (option 0 = the node
  the default picks). A rule's score is its key without its trailing tie-breaks (``TIE_BREAKS``):
  best-fit's free GPUs, worst-fit's −free, FGD's ΔF (fewer free GPUs and the node index are our
  tie-breaks, not FGD's); first-fit's lowest index is its rule, so it has no ties.
* best-fit: the node with the fewest free GPUs that still fit the instance (leaves the fewest idle
  GPUs, as §7 describes GFS/ElasticFlow/Synergy). worst-fit: the most free GPUs.
* FGD, whole-GPU version. FGD's node fragmentation for a task m is the GPU capacity of the node that
  m cannot use: all free GPUs when m does not fit, otherwise only partially-allocated GPUs —
  which do not exist when every task takes whole GPUs. With f free GPUs and a per-instance
  demand distribution p, the expected fragmentation is therefore

      F(f) = Σ_m p_m · f · 1[m > f],

  and an instance of demand g goes to the node minimising ΔF = F(f − g) − F(f) (ties: fewer free
  GPUs, then lowest index). p is, by default, the "current" distribution: the per-instance demand
  shares of the running instances plus the arriving job (FGD uses a target workload distribution;
  pass ``demand_dist`` — eight shares for g = 1..8 — to fix one, e.g. the trace's).

Admission is decided exactly before any instance moves: a job (g, w) fits iff
Σ_n ⌊free_n / g⌋ ≥ w, and then placing instances one at a time on any node with free ≥ g always
succeeds, because each placement lowers that sum by exactly one.

**Mixed clusters natively** (:meth:`NodeRulePolicy.on_capacities`, docs/heterogeneous.md): node n
has its own capacity c_n (a node is partial below c_n, and free_n = c_n − used_n) and, optionally, a
GPU model; a job given a model set (openb ``gpu_spec``) may only use nodes of those models, both
for admission and for every instance's node. The rules read a node's free GPUs, its index and —
MCG's balance term only — its own capacity (a rule gets ``cap`` as its fifth argument). Nothing
stands in for the missing GPUs of a small node, so the running instances are the real ones.
"""
from __future__ import annotations

import math
from bisect import insort
from typing import Callable, Iterable, Mapping, Self, Sequence

from heuristics.gpu.cluster import Instance, Job, Placement, check_job_shape
from heuristics.gpu.policy import EventResult, StateKey
from heuristics.gpu.ties import Chooser, pick

# A node rule ranks a candidate bucket: (free GPUs f, lowest node index in that bucket, demand g,
# demand distribution p, the bucket's node capacity) -> sort key; the bucket with the smallest key
# receives the instance.
NodeRule = Callable[[int, int, int, Sequence[float], int], tuple]
# Free nodes per (node capacity, free GPUs) bucket: what ``greedy_gradient`` simulates.
Levels = Mapping[tuple[int, int], int]


def _first_fit(f: int, idx: int, g: int, p: Sequence[float], cap: int) -> tuple:
    return (idx,)


def _best_fit(f: int, idx: int, g: int, p: Sequence[float], cap: int) -> tuple:
    return (f, idx)


def _worst_fit(f: int, idx: int, g: int, p: Sequence[float], cap: int) -> tuple:
    return (-f, idx)


def fgd_fragmentation(f: int, p: Sequence[float]) -> float:
    """FGD's expected fragmentation of a node with ``f`` free whole GPUs: Σ_m p_m·f·1[m > f]
    (``p[m-1]`` is the share of demand m)."""
    return f * sum(p[f:])


def fgd_delta(f: int, g: int, p: Sequence[float]) -> float:
    """FGD's fragmentation gradient of one instance of ``g`` GPUs on a node with ``f`` free:
    ΔF = F(f − g) − F(f)."""
    return fgd_fragmentation(f - g, p) - fgd_fragmentation(f, p)


def _fgd(f: int, idx: int, g: int, p: Sequence[float], cap: int) -> tuple:
    return (fgd_delta(f, g, p), f, idx)


def greedy_gradient(levels: Levels, g: int, w: int, rule: NodeRule, p: Sequence[float]) -> float | None:
    """The total fragmentation gradient Σ ΔF (under ``p``) of placing ``w`` instances of ``g`` GPUs
    one by one where ``rule`` puts them, from ``levels[c, f]`` nodes of capacity ``c`` with ``f``
    free GPUs (:meth:`NodeRulePolicy.class_levels`); None when they do not all fit. The state is
    not touched (used by CAFGD's hold and MCG's priority). A job's model set is not read: on a
    cluster with GPU models the gradient is that of the whole cluster (docs/heterogeneous.md).

    Only levels are tracked, not node indices: exact for rules whose key orders by the free
    level before the node index (``fgd`` and MCG's), as :meth:`NodeRulePolicy._choose` then picks
    the same level whichever node of it comes first.
    """
    left = dict(levels)
    total = 0.0
    for _ in range(w):
        fits = [cf for cf, k in left.items() if k and cf[1] >= g]
        if not fits:
            return None
        c, f = min(fits, key=lambda cf: rule(cf[1], 0, g, p, cf[0]))
        total += fgd_delta(f, g, p)
        left[c, f] -= 1
        left[c, f - g] = left.get((c, f - g), 0) + 1
    return total


RULES: dict[str, NodeRule] = {
    "first-fit": _first_fit,
    "best-fit": _best_fit,
    "worst-fit": _worst_fit,
    "fgd": _fgd,
}
# How many trailing elements of each rule's key only break ties (the rest is the score).
TIE_BREAKS: dict[str, int] = {"first-fit": 0, "best-fit": 1, "worst-fit": 1, "fgd": 2}


def same_score(a: tuple, b: tuple) -> bool:
    """Equal scores, up to the rounding of the float arithmetic that computes them."""
    return all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(a, b))


class NodeRulePolicy:
    """A whole-GPU, non-migrating placement policy whose node choice is ``RULES[rule]``.

    Free GPUs are kept in buckets (one sorted list of node indices per node capacity and free
    level), so a node choice inspects at most (distinct capacities) × (G + 1) buckets whatever the
    cluster size; a model-constrained job scans the buckets for its first allowed node.
    """

    # Model-constrained jobs are honoured natively (``on_capacities(..., models, job_models)``).
    honours_models = True

    def __init__(self, rule: str, n_nodes: int, capacity: int = 8,
                 demand_dist: Sequence[float] | None = None) -> None:
        if rule not in RULES:
            raise ValueError(f"unknown node rule {rule!r}; known: {', '.join(RULES)}")
        if demand_dist is not None and len(demand_dist) != capacity:
            raise ValueError(f"demand_dist needs {capacity} shares, got {len(demand_dist)}")
        self.name = rule
        self.n_nodes = n_nodes
        self.capacity = capacity
        self._rule = RULES[rule]
        self._tie_breaks = TIE_BREAKS[rule]
        self.ties: Chooser | None = None  # None: every tie to the lowest node index (module docstring)
        self._fixed_dist = tuple(demand_dist) if demand_dist is not None else None
        self._jobs: dict[int, Job] = {}
        self._hosts: dict[int, list[int]] = {}
        self._inst_counts = [0] * capacity  # running instances per demand g (index g-1)
        self._set_cluster((capacity,) * n_nodes, None, {})

    def _set_cluster(self, capacities: tuple[int, ...], models: tuple[str, ...] | None,
                     job_models: Mapping[int, frozenset[str]]) -> None:
        """Empty nodes of ``capacities`` (and ``models``); ``job_models``: job id -> allowed models."""
        self.capacities = capacities
        self.models = models
        self.job_models = dict(job_models)
        self._classes = tuple(sorted(set(capacities), reverse=True))
        index = {c: k for k, c in enumerate(self._classes)}
        self._cls = [index[c] for c in capacities]
        self._nodes: list[list[Instance]] = [[] for _ in capacities]
        self._free = list(capacities)
        self._buckets: list[list[list[int]]] = [[[] for _ in range(c + 1)] for c in self._classes]
        for n, c in enumerate(capacities):
            self._buckets[index[c]][c].append(n)

    def on_capacities(self, capacities: Sequence[int], models: Sequence[str] | None = None,
                      job_models: Mapping[int, frozenset[str]] | None = None) -> Self:
        """This policy, with the same options and an empty cluster, on nodes of ``capacities``
        (one per node, each ≤ ``capacity``) of GPU ``models``; a job in ``job_models`` may only use
        nodes of its models (module docstring, "Mixed clusters natively")."""
        caps = tuple(capacities)
        if not caps or any(isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= self.capacity for c in caps):
            raise ValueError(f"capacities={capacities!r} must be a non-empty list of integers in 1..{self.capacity}")
        if models is not None and len(models) != len(caps):
            raise ValueError(f"models: {len(models)} entries for {len(caps)} nodes")
        if self._jobs:
            raise ValueError("on_capacities needs an empty cluster")
        other = self._fresh()
        other.n_nodes, other.capacity = len(caps), max(caps) if len(set(caps)) > 1 else self.capacity
        other._set_cluster(caps, None if models is None else tuple(models), job_models or {})
        return other

    # -- Policy protocol ---------------------------------------------------------------------
    def arrive(self, job: Job) -> EventResult:
        check_job_shape(job.g, job.w, self.capacity)
        if job.id in self._jobs:
            raise ValueError(f"job {job.id} is already running")
        allowed = self._allowed(job.id)
        room = self._room(job.g, allowed)
        if room < job.w:
            return EventResult.refused(f"job {job.id} ({job.w}x{job.g}) needs {job.w} slots "
                                       f"of {job.g} GPUs, cluster offers {room}")
        p = self._dist(job)
        hosts = []
        for i in range(job.w):
            n = self._choose(job.g, p, allowed) if self.ties is None else pick(
                self.ties, f"{self.name}: node of least score, instance {i + 1} of {job.w}",
                self._tied(job.g, p, allowed))
            self._move(n, -job.g)
            self._nodes[n].append(Instance(job.id, job.g))
            hosts.append(n)
        self._jobs[job.id] = job
        self._hosts[job.id] = hosts
        self._inst_counts[job.g - 1] += job.w
        return EventResult.applied()

    def depart(self, job_id: int) -> EventResult:
        job = self._jobs.pop(job_id, None)
        if job is None:
            raise ValueError(f"job {job_id} is not running")
        for n in self._hosts.pop(job_id):
            self._nodes[n].remove(Instance(job_id, job.g))
            self._move(n, job.g)
        self._inst_counts[job.g - 1] -= job.w
        return EventResult.applied()

    def placement(self) -> Placement:
        return Placement(self.capacity, tuple(tuple(sorted(node)) for node in self._nodes))

    def state_key(self) -> Placement:
        return self.placement()

    def running(self) -> dict[int, Job]:
        return dict(self._jobs)

    def clone(self) -> Self:
        return self.with_state(self.placement())

    def with_state(self, key: StateKey) -> Self:
        if not isinstance(key, Placement):
            raise TypeError(f"{self.name} state keys are Placements, got {type(key).__name__}")
        if key.n_nodes != self.n_nodes or key.capacity != self.capacity:
            raise ValueError("placement does not match this policy's cluster size or capacity")
        other = self._fresh()
        if self.capacities != other.capacities or self.models is not None:  # a mixed cluster
            other.capacity = self.capacity
            other._set_cluster(self.capacities, self.models, self.job_models)
        width: dict[int, int] = {}
        for n, node in enumerate(key.nodes):
            for inst in node:
                if inst.g > other._free[n]:
                    raise ValueError(f"node {n}: {node} exceeds its {self.capacities[n]} GPUs")
                other._move(n, -inst.g)
                other._nodes[n].append(inst)
                other._hosts.setdefault(inst.job, []).append(n)
                width[inst.job] = width.get(inst.job, 0) + 1
                other._jobs[inst.job] = Job(inst.job, inst.g, width[inst.job])
                other._inst_counts[inst.g - 1] += 1
        return other

    # -- fast accessors used by the simulator ----------------------------------------------------
    def occupancy(self) -> tuple[int, ...]:
        """Number of nodes at each used-GPU level 0..G (a histogram; O(G) per node capacity)."""
        out = [0] * (self.capacity + 1)
        for c, levels in zip(self._classes, self._buckets):
            for f, bucket in enumerate(levels):
                out[c - f] += len(bucket)
        return tuple(out)

    def partial_empty(self) -> tuple[int, int]:
        """(partial nodes Φπ, empty nodes), each node against its own capacity (O(G) per capacity)."""
        partial = empty = 0
        for c, levels in zip(self._classes, self._buckets):
            empty += len(levels[c])
            partial += sum(len(levels[f]) for f in range(1, c))
        return partial, empty

    def free_levels(self) -> tuple[int, ...]:
        """Number of nodes at each free-GPU level 0..G, whatever their capacity."""
        out = [0] * (self.capacity + 1)
        for levels in self._buckets:
            for f, bucket in enumerate(levels):
                out[f] += len(bucket)
        return tuple(out)

    def class_levels(self) -> dict[tuple[int, int], int]:
        """Nodes per (capacity, free GPUs): the input of ``greedy_gradient``."""
        return {(c, f): len(b) for c, levels in zip(self._classes, self._buckets) for f, b in enumerate(levels) if b}

    # -- internals --------------------------------------------------------------------------
    def _fresh(self) -> Self:
        """An empty policy of the same kind and options (subclasses with options override it)."""
        return type(self)(self.name, self.n_nodes, self.capacity, self._fixed_dist)  # type: ignore[call-arg]

    def _allowed(self, job_id: int) -> frozenset[str] | None:
        """The models a job may use (None: any node)."""
        return None if self.models is None else self.job_models.get(job_id)

    def _candidates(self, bucket: list[int], allowed: frozenset[str] | None) -> Iterable[int]:
        if allowed is None:
            return bucket
        models = self.models
        assert models is not None
        return (n for n in bucket if models[n] in allowed)

    def _room(self, g: int, allowed: frozenset[str] | None = None) -> int:
        """How many instances of ``g`` GPUs the free GPUs (of nodes of ``allowed`` models) host."""
        if allowed is None:
            return sum(len(b) * (f // g) for levels in self._buckets for f, b in enumerate(levels) if f >= g)
        return sum(f // g * sum(1 for _ in self._candidates(b, allowed))
                   for levels in self._buckets for f, b in enumerate(levels) if f >= g)

    def _dist(self, job: Job) -> Sequence[float]:
        if self._fixed_dist is not None:
            return self._fixed_dist
        counts = list(self._inst_counts)
        counts[job.g - 1] += job.w
        total = sum(counts)
        return [c / total for c in counts]

    def _choose(self, g: int, p: Sequence[float], allowed: frozenset[str] | None = None) -> int:
        best_key, best_node = None, -1
        for c, levels in zip(self._classes, self._buckets):
            for f in range(g, c + 1):
                first = next(iter(self._candidates(levels[f], allowed)), None)
                if first is not None:
                    key = self._rule(f, first, g, p, c)
                    if best_key is None or key < best_key:
                        best_key, best_node = key, first
        return best_node

    def _tied(self, g: int, p: Sequence[float], allowed: frozenset[str] | None = None) -> list[int]:
        """The nodes that fit an instance of ``g`` GPUs with the least score, ordered by the full
        key (so the first is ``_choose``'s pick), one per distinct node content and capacity: two
        such nodes are swapped by an automorphism of the state, and every later tie is a choice
        too, so which of them is taken changes no behaviour up to renaming (as COMPASS's "any
        empty node"); this keeps ``--ties all`` from branching over every empty node."""
        keyed = sorted((self._rule(f, n, g, p, c), n) for c, levels in zip(self._classes, self._buckets)
                       for f in range(g, c + 1) for n in self._candidates(levels[f], allowed))
        best = keyed[0][0]
        cut = len(best) - self._tie_breaks
        out: dict[tuple, int] = {}
        for key, n in keyed:
            if same_score(key[:cut], best[:cut]):
                out.setdefault((self.capacities[n], self.models and self.models[n], tuple(sorted(self._nodes[n]))), n)
        return list(out.values())

    def _move(self, n: int, delta_free: int) -> None:
        f = self._free[n]
        levels = self._buckets[self._cls[n]]
        levels[f].remove(n)
        self._free[n] = f + delta_free
        insort(levels[f + delta_free], n)
