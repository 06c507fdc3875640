"""Schedulers on nodes of mixed capacities and GPU models (docs/heterogeneous.md).

:func:`mixed_policy` is the one entry point (the event simulator and the fill runs use it). The
built-in schedulers run *natively* (:func:`runs_natively`): the node rules, FGD, CAFGD and MCG
(``heuristics.gpu.baselines``), SIFOpt, FFT and DRR (``heuristics.gpu.sifopt.RepackingPolicy``),
each through its ``on_capacities``, and flat COMPASS as one COMPASS-ABS per node class
(``heuristics.gpu.compass_mixed``), all with capacities and GPU models. Hierarchical COMPASS runs
on the 8-GPU partition (:func:`run_cluster`: one capacity, nothing to stand in for; its
multi-node instances span whole 8-GPU nodes) and is refused with model-constrained jobs. Only a
scheduler without ``on_capacities`` — a plugin whose state is a ``Placement`` — goes through
*placeholders*:

it runs on N nodes of G = max capacity, node n holding a *placeholder* instance of G − c_n GPUs
(job id −(n+1)) that never leaves: free GPUs per node are then exactly the real ones, so a rule
that reads only the free GPUs of each node decides exactly as on the real nodes (one that reads
the running instances or a node's load, as MCG's demand estimate and balance term do, would be
misled: why the built-ins run natively). A job restricted to some GPU models (openb
``gpu_spec``) arrives with *temporary* placeholders filling every node of another model, removed
right after (the state goes through ``state_key``/``with_state``, the whole scheduler state by the
policy protocol). Refused there (:func:`placeholder_refusal`): a scheduler that migrates running
instances (it would move placeholders) or whose state is not a ``Placement`` (it cannot take
them). Every event's migrations are checked: a placeholder that moves anyway is an error.
Metrics read the real capacities, placeholders removed (:meth:`PlaceholderPolicy.used`);
``check_placeholders`` verifies them at the end of a run.
"""
from __future__ import annotations

from typing import Mapping, Sequence, cast

from heuristics.gpu.cluster import Instance, Job, Placement
from heuristics.gpu.compass import VARIANTS
from heuristics.gpu.compass_mixed import MixedCompass
from heuristics.gpu.node_list import NodeList
from heuristics.gpu.policy import EventResult, Policy, ViewPolicy
from heuristics.gpu.registry import make_policy, policy_migrates
from heuristics.gpu.sifopt import RepackingPolicy


# Hierarchical COMPASS is defined for 8-GPU nodes only (seeds/000 Appendix D: an instance of 8K
# GPUs takes K whole nodes).
PARTITION_ONLY = {"hier-compass": 8}
# Flat COMPASS on mixed nodes: one COMPASS-ABS per node class (``compass_mixed``).
MIXED_COMPASS = {f"compass-{v}": v for v in VARIANTS}


def run_cluster(scheduler: str, cluster: NodeList) -> NodeList:
    """The nodes ``scheduler`` runs on: the whole cluster, or the 8-GPU partition for hierarchical
    COMPASS."""
    cap = PARTITION_ONLY.get(scheduler)
    return cluster if cap is None else cluster.partition(cap)


def placeholder_refusal(name: str, capacities: Sequence[int], constrained: bool,
                        opts: Mapping[str, object] | None = None) -> str | None:
    """Why ``name`` cannot run on nodes of ``capacities`` (with model-constrained jobs when
    ``constrained``); None when it can (always on one capacity without constraints)."""
    uniform = len(set(capacities)) <= 1
    if uniform and not constrained:
        return None
    need = "the nodes a model-constrained job may not use" if constrained else "smaller nodes"
    policy = make_policy(name, len(capacities), max(capacities), **dict(opts or {}))
    if not isinstance(getattr(policy, "state_key", lambda: None)(), Placement):
        return f"its state is not a placement, so it cannot take the placeholders that stand for {need}"
    if policy_migrates(name, policy) or isinstance(policy, RepackingPolicy):
        return f"it migrates running instances, so it would move the placeholders that stand for {need}"
    return None


def runs_natively(name: str, capacities: Sequence[int], constrained: bool,
                  opts: Mapping[str, object] | None = None) -> bool:
    """Whether ``name`` runs on nodes of ``capacities`` (with model-constrained jobs when
    ``constrained``) by itself, not through placeholders: flat COMPASS (``compass_mixed``), or a
    policy with ``on_capacities`` and, for model-constrained jobs, ``honours_models`` (the node
    rules, CAFGD, MCG, SIFOpt, FFT, DRR). False on one capacity without constraints (nothing to do)."""
    if len(set(capacities)) <= 1 and not constrained:
        return False
    if name in MIXED_COMPASS:
        return True
    policy = make_policy(name, len(capacities), max(capacities), **dict(opts or {}))
    if not callable(getattr(policy, "on_capacities", None)):
        return False
    return not constrained or bool(getattr(policy, "honours_models", False))


def mixed_policy(name: str, capacities: Sequence[int], models: Sequence[str] | None = None,
                 job_models: Mapping[int, frozenset[str]] | None = None,
                 opts: Mapping[str, object] | None = None) -> Policy | PlaceholderPolicy:
    """Scheduler ``name`` on nodes of ``capacities`` / ``models``, a job in ``job_models`` only on
    nodes of its models: natively when it can (:func:`runs_natively`), else through placeholders
    (:class:`PlaceholderPolicy`; ValueError when neither can, :func:`mixed_refusal`)."""
    constrained = bool(job_models)
    why = mixed_refusal(name, capacities, constrained, opts)
    if why is not None:
        raise ValueError(f"{name} cannot run on this cluster: {why}")
    policy = make_policy(name, len(capacities), max(capacities), **dict(opts or {}))
    native = runs_natively(name, capacities, constrained, opts)
    if native and name in MIXED_COMPASS:
        return MixedCompass(MIXED_COMPASS[name], capacities, models, job_models)
    if not native:
        if len(set(capacities)) <= 1 and not constrained:
            return policy
        return PlaceholderPolicy(name, capacities, models, job_models, opts)
    on_capacities = getattr(policy, "on_capacities")
    if constrained:
        return cast(Policy, on_capacities(tuple(capacities), models, dict(job_models or {})))
    return cast(Policy, on_capacities(tuple(capacities)))


def mixed_refusal(name: str, capacities: Sequence[int], constrained: bool,
                  opts: Mapping[str, object] | None = None) -> str | None:
    """Why ``name`` cannot run on nodes of ``capacities`` (with model-constrained jobs when
    ``constrained``), natively or through placeholders; None when it can."""
    if runs_natively(name, capacities, constrained, opts):
        return None
    return placeholder_refusal(name, capacities, constrained, opts)


class PlaceholderError(RuntimeError):
    """A scheduler moved a placeholder (it must have been refused by ``placeholder_refusal``)."""


class PlaceholderPolicy:
    """Policy ``name`` on nodes of ``capacities`` / ``models`` (module docstring); a job whose id is
    in ``job_models`` may only use nodes of those models. Offers the simulator's optional hooks
    (``tick``, ``observe_submission``, ``prioritise``) by delegating to the wrapped scheduler."""

    def __init__(self, name: str, capacities: Sequence[int], models: Sequence[str] | None = None,
                 job_models: Mapping[int, frozenset[str]] | None = None,
                 opts: Mapping[str, object] | None = None) -> None:
        self.name = name
        self.capacities = tuple(capacities)
        self.models = tuple(models) if models is not None else ("",) * len(self.capacities)
        self.job_models = dict(job_models or {})
        self.n_nodes = len(self.capacities)
        self.capacity = max(self.capacities)
        # only_placements() admitted it: a built-in scheduler whose state is its placement
        self.policy = cast(ViewPolicy, make_policy(name, self.n_nodes, self.capacity, **dict(opts or {})))
        self._temp_tag = -(self.n_nodes + 1)  # temporary placeholders: ids below every fixed one
        self._fixed = tuple(() if c == self.capacity else (Instance(-(n + 1), self.capacity - c),)
                            for n, c in enumerate(self.capacities))
        self._held = tuple(self.capacity - c for c in self.capacities)
        if any(self._fixed):
            self.policy = self._with_state(Placement(self.capacity, self._fixed))

    def _with_state(self, key: Placement) -> ViewPolicy:
        if not isinstance(self.policy.state_key(), Placement):
            raise ValueError(f"{self.name}: its state is not a placement; it cannot take placeholders")
        return self.policy.with_state(key)

    def _masked(self, allowed: frozenset[str]) -> Placement:
        """The state plus, on every node of another model, a temporary placeholder filling it."""
        key = self.policy.state_key()
        assert isinstance(key, Placement)
        nodes = []
        for n, node in enumerate(key.nodes):
            free = key.capacity - sum(i.g for i in node)
            if self.models[n] not in allowed and free:
                node = node + (Instance(self._temp_tag - n, free),)
            nodes.append(node)
        return Placement(key.capacity, tuple(nodes))

    @staticmethod
    def _checked(res: EventResult) -> EventResult:
        moved = [m for m in res.migrations if m.job < 0]
        if moved:
            raise PlaceholderError(f"a placeholder was moved: {moved[0]}")
        return res

    # -- Policy protocol (what the simulator and the fill runs use) -----------------------------
    def arrive(self, job: Job) -> EventResult:
        if job.g > self.capacity:  # larger than every node: no scheduler can place it
            return EventResult.refused(f"job {job.id}: g={job.g} exceeds every node's capacity")
        allowed = self.job_models.get(job.id)
        if allowed is None:
            return self._checked(self.policy.arrive(job))
        self.policy = self._with_state(self._masked(allowed))
        res = self.policy.arrive(job)
        after = self.policy.state_key()
        assert isinstance(after, Placement)
        self.policy = self._with_state(Placement(after.capacity, tuple(
            tuple(i for i in node if i.job > self._temp_tag) for node in after.nodes)))
        return self._checked(res)

    def depart(self, job_id: int) -> EventResult:
        return self._checked(self.policy.depart(job_id))

    def placement(self) -> Placement:
        """The wrapped scheduler's placement (on ``capacity`` GPUs per node, placeholders included)."""
        return self.policy.placement()

    def running(self) -> dict[int, Job]:
        return {j: job for j, job in self.policy.running().items() if j >= 0}

    # -- optional hooks of the simulator --------------------------------------------------------
    def tick(self, now: float) -> EventResult:
        tick = getattr(self.policy, "tick", None)
        return EventResult.applied() if tick is None else self._checked(tick(now))

    def observe_submission(self, now: float, job: Job) -> None:
        observe = getattr(self.policy, "observe_submission", None)
        if observe is not None:
            observe(now, job)

    def prioritise(self, queue: Sequence[Job]) -> Sequence[Job]:
        prioritise = getattr(self.policy, "prioritise", None)
        return queue if prioritise is None else prioritise(queue)

    # -- real capacities ------------------------------------------------------------------------
    def used(self) -> tuple[int, ...]:
        """GPUs used by real instances on each node: its GPUs in use minus its placeholder (which
        only a reported migration could move, and every event's migrations are checked)."""
        return tuple(sum(i.g for i in node) - ph for node, ph in zip(self.placement().nodes, self._held))

    def check_placeholders(self) -> None:
        """PlaceholderError unless every node still holds exactly its own placeholder."""
        for node, fixed in zip(self.placement().nodes, self._fixed):
            if tuple(i for i in node if i.job < 0) != fixed:
                raise PlaceholderError(f"{self.name}: a node's placeholder changed: {node}")

    def partial_empty(self) -> tuple[int, int]:
        """(partial nodes Φπ, empty nodes), each node against its own capacity."""
        partial = empty = 0
        for u, c in zip(self.used(), self.capacities):
            if u == 0:
                empty += 1
            elif u < c:
                partial += 1
        return partial, empty
