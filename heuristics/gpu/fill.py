"""Fill-until-full: the FGD paper's evaluation (Weng et al., ATC'23 §6; TRACES.md) on a real cluster.

Pods are submitted one after another and never leave. A pod that cannot be placed is skipped (it
is not retried). After every submission the run records the GPUs requested so far and the GPUs
allocated; the curve of the FGD paper is the share of the cluster's GPUs left unallocated against
the share requested so far, read at the submissions that fail.

Readings chosen (docs/heterogeneous.md):

* **Order.** ``shuffled`` (default): the whole-GPU pods in a seeded random order, as the FGD
  simulator samples its workload; ``file``: the list's order. With ``until`` = u the list is
  drawn again (reshuffled) whenever it runs out, until the GPUs requested reach u × the whole
  cluster's GPUs; without it every pod is submitted once. All schedulers see the same sequence.
* **Whole-GPU pods only**; fractional, CPU-only and > 8-GPU pods are filtered and counted by the
  loader (``heuristics.gpu.trace_loaders.load_openb_pods``).
* **Mixed capacities.** Every built-in scheduler runs natively on the node list's
  capacities (``heuristics.gpu.placeholders.mixed_policy``, shared with the event simulator: the
  node rules, FGD, CAFGD, MCG, COMPASS, and SIFOpt, FFT, DRR, which may migrate placed pods); a plugin
  scheduler goes through placeholders. Metrics read the real capacities.
* **FGD's workload distribution.** A scheduler taking ``demand_dist`` (FGD and the node rules)
  gets the pod list's whole-GPU demand shares — FGD's "target workload" — unless given one.
* **Scheduler inputs.** Submission k happens at time k seconds: a scheduler offering
  ``observe_submission(now, job)`` (CAFGD's demand windows) is told of each pod, and one offering
  ``tick(now)`` (FFT's and DRR's rounds) is ticked before it, as the event simulator does; their
  migrations are counted. A scheduler taking ``max_hold`` (CAFGD's wait-for-peak) gets ``max_hold = 0``
  unless given one: in a run where nothing leaves, the peak of free capacity it waits for never
  comes, and a held pod is never retried — holding would only turn fits into failures.
* **Demand estimates.** MCG estimates demand from its running instances and the pending pods
  (real ones only: no placeholder), and its load balance reads each node against its own capacity.
* **GPU models.** A pod with a ``gpu_spec`` may only use nodes of those models (the node rules,
  CAFGD, MCG, SIFOpt, FFT and DRR natively; SIFOpt's and FFT's repacks with models are
  ``heuristics.gpu.model_repack``'s).
* **COMPASS** is defined for nodes of one capacity (seeds/000 §3): on a node list it runs one
  COMPASS-ABS per node class (``heuristics.gpu.compass_mixed``: capacity, and GPU model when pods
  are model-constrained), a pod going whole to the smallest class that admits it.
* **The exact bound** (:func:`bound_points`): for the first k submitted pods, the fewest requested
  GPUs that no packing of the whole cluster can place (``oracle.gpu.mixed_phi.fill_bound``, with
  hindsight and free migration) bounds every scheduler's unallocated share at k from below;
  :func:`oracle_first_failure` is the first k at which even that packing must leave a pod out.
"""
from __future__ import annotations

import itertools
import random
from bisect import bisect_right
from dataclasses import dataclass
from typing import Mapping, NamedTuple, Sequence

from heuristics.gpu.cluster import Job
from heuristics.gpu.node_list import NodeList
from heuristics.gpu.placeholders import PARTITION_ONLY, PlaceholderPolicy, mixed_policy, mixed_refusal, run_cluster
from heuristics.gpu.policy import Policy
from heuristics.gpu.registry import policy_options
from heuristics.gpu.trace_loaders import Pod
from oracle.gpu.mixed_phi import ItemType, fill_bound, node_is_partial, phi_star_mixed
from oracle.result import Unproven

ORDERS = ("shuffled", "file")
DEFAULT_TIME_LIMIT = 10.0


def submission_sequence(pods: Sequence[Pod], order: str, seed: int, until_gpus: int | None) -> tuple[Pod, ...]:
    """The pods in submission order (module docstring, "Order")."""
    if order not in ORDERS:
        raise ValueError(f"order {order!r}: one of {', '.join(ORDERS)}")
    if not pods:
        return ()
    rng = random.Random(seed)
    out: list[Pod] = []
    requested = 0
    while True:
        batch = list(pods)
        if order == "shuffled":
            rng.shuffle(batch)
        for p in batch:
            if until_gpus is not None and requested >= until_gpus:
                return tuple(out)
            out.append(p)
            requested += p.g
        if until_gpus is None:
            return tuple(out)


def demand_shares(pods: Sequence[Pod], capacity: int) -> tuple[float, ...]:
    """Share of pods of each demand 1..capacity (FGD's target workload distribution; a pod larger
    than every node can never be placed and is left out)."""
    counts = [0] * capacity
    for p in pods:
        if p.g <= capacity:
            counts[p.g - 1] += 1
    total = sum(counts) or 1
    return tuple(c / total for c in counts)


def unsupported(scheduler: str, cluster: NodeList, sequence: Sequence[Pod],
                opts: Mapping[str, object] | None = None) -> str | None:
    """Why ``scheduler`` (with options ``opts``) cannot run this fill (None when it can; ``mixed_refusal``)."""
    nodes = run_cluster(scheduler, cluster)
    if not nodes.n_nodes:
        return f"the cluster has no {PARTITION_ONLY.get(scheduler)}-GPU node"
    return mixed_refusal(scheduler, nodes.capacities, any(p.models is not None for p in sequence), opts)


# ------------------------------------------------------------------------------ one run


class EndState(NamedTuple):
    """The cluster after the run: partial nodes, Φ★ of the placed pods (None: unknown) and N."""

    phi_pi: int
    phi_star: int | None
    n_nodes: int

    @property
    def sif(self) -> float | None:
        return None if self.phi_star is None else (self.phi_pi - self.phi_star) / self.n_nodes


@dataclass(frozen=True)
class FillResult:
    """One scheduler's fill run. ``requested[i]`` / ``allocated[i]``: GPUs after submission i;
    ``failed``: the submissions (indexes) that could not be placed."""

    scheduler: str
    cluster: str
    n_nodes: int
    cluster_gpus: int
    requested: tuple[int, ...]
    allocated: tuple[int, ...]
    failed: tuple[int, ...]
    migrations: int
    end: EndState

    def share(self, gpus: int) -> float:
        return gpus / self.cluster_gpus

    def unallocated_at(self, i: int) -> float:
        return 1 - self.allocated[i] / self.cluster_gpus

    def index_at_share(self, x: float) -> int | None:
        """The last submission with requested ≤ x × cluster GPUs (None: none that early)."""
        i = bisect_right(self.requested, x * self.cluster_gpus) - 1
        return None if i < 0 else i

    def failure_points(self) -> list[tuple[float, float]]:
        """(requested share, unallocated share) at every failed submission: the FGD curve."""
        return [(self.share(self.requested[i]), self.unallocated_at(i)) for i in self.failed]


def run_fill(scheduler: str, cluster: NodeList, sequence: Sequence[Pod],
             opts: Mapping[str, object] | None = None, time_limit: float = DEFAULT_TIME_LIMIT) -> FillResult:
    """Submit ``sequence`` to ``scheduler`` on its nodes of ``cluster`` (see ``run_cluster``)."""
    why = unsupported(scheduler, cluster, sequence, opts)
    if why is not None:
        raise ValueError(f"{scheduler}: {why}")
    nodes = run_cluster(scheduler, cluster)
    options = dict(opts or {})
    takes = policy_options(scheduler)
    if "demand_dist" in takes and "demand_dist" not in options:
        options["demand_dist"] = demand_shares(sequence, max(nodes.capacities))
    if "max_hold" in takes and "max_hold" not in options:
        options["max_hold"] = 0.0
    job_models = {i: p.models for i, p in enumerate(sequence) if p.models is not None}
    sched = mixed_policy(scheduler, nodes.capacities, nodes.models, job_models, options)
    observe, tick = getattr(sched, "observe_submission", None), getattr(sched, "tick", None)
    requested, allocated, failed = [], [], []
    req = alloc = moves = 0
    for i, pod in enumerate(sequence):
        req += pod.g
        job = Job(i, pod.g, 1)
        if tick is not None:
            moves += len(tick(float(i)).migrations)
        if observe is not None:
            observe(float(i), job)
        if pod.g > sched.capacity:  # larger than every node: no scheduler can place it
            failed.append(i)
        else:
            res = sched.arrive(job)
            moves += len(res.migrations)
            alloc += pod.g if res.ok else 0
            if not res.ok:
                failed.append(i)
        requested.append(req)
        allocated.append(alloc)
    end = _end_state(sched, nodes, time_limit)
    return FillResult(scheduler, nodes.source, nodes.n_nodes, nodes.total_gpus, tuple(requested),
                      tuple(allocated), tuple(failed), moves, end)


def _end_state(sched: Policy | PlaceholderPolicy, nodes: NodeList, time_limit: float) -> EndState:
    """Φπ of the final placement and the mixed Φ★ of the pods it holds (by demand, any model:
    with model sets the bound would need each pod's set; the final state ignores them)."""
    if isinstance(sched, PlaceholderPolicy):
        sched.check_placeholders()
        used = sched.used()
    else:
        used = tuple(sum(i.g for i in node) for node in sched.placement().nodes)
    phi_pi = sum(node_is_partial(u, c) for u, c in zip(used, nodes.capacities))
    p = sched.placement()
    counts = [0] * sched.capacity
    for node in p.nodes:
        for inst in node:
            if inst.job >= 0:
                counts[inst.g - 1] += 1
    try:
        phi = phi_star_mixed(nodes.capacities, counts, time_limit=time_limit).proven_value("Φ★")
    except Unproven:
        phi = None
    return EndState(phi_pi, phi, nodes.n_nodes)


# ------------------------------------------------------------------------------ the exact bound


class BoundPoint(NamedTuple):
    """After the first ``k`` submissions: GPUs requested, and the fewest GPUs any packing leaves
    unallocated (None: the solve hit its limit)."""

    k: int
    requested: int
    min_unallocated: int | None


def _demand(prefix: Sequence[Pod]) -> dict[ItemType, int]:
    out: dict[ItemType, int] = {}
    for p in prefix:
        t = ItemType(p.g, p.models)
        out[t] = out.get(t, 0) + 1
    return out


def min_unplaced(cluster: NodeList, prefix: Sequence[Pod], time_limit: float = DEFAULT_TIME_LIMIT) -> int | None:
    """Fewest GPUs of ``prefix`` no packing into ``cluster`` can place (None: unproven)."""
    try:
        return fill_bound(cluster.capacities, _demand(prefix), cluster.models, time_limit).proven_value("fill bound")
    except Unproven:
        return None


def bound_points(cluster: NodeList, sequence: Sequence[Pod], ks: Sequence[int],
                 time_limit: float = DEFAULT_TIME_LIMIT) -> list[BoundPoint]:
    """The exact bound after each prefix length in ``ks``: unallocated GPUs ≥ C − (requested − unplaced)."""
    out = []
    for k in sorted(set(ks)):
        req = sum(p.g for p in sequence[:k])
        u = min_unplaced(cluster, sequence[:k], time_limit)
        out.append(BoundPoint(k, req, None if u is None else cluster.total_gpus - (req - u)))
    return out


def oracle_first_failure(cluster: NodeList, sequence: Sequence[Pod], time_limit: float = DEFAULT_TIME_LIMIT) -> int | None:
    """The first submission (index) that no packing of the prefix so far can place (binary search:
    a prefix that does not fit stays unfit when it grows); ``len(sequence)`` when all fit; None
    when a solve hit its limit."""
    lo, hi = 0, len(sequence)  # invariant: prefix lo fits; prefix hi+1 does not (or hi = len)
    u = min_unplaced(cluster, sequence, time_limit)
    if u is None:
        return None
    if u == 0:
        return len(sequence)
    hi = len(sequence) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        u = min_unplaced(cluster, sequence[:mid], time_limit)
        if u is None:
            return None
        if u == 0:
            lo = mid
        else:
            hi = mid - 1
    return lo


# ------------------------------------------------------------------------------ the table

CHECKPOINTS = (0.9, 1.0)  # requested shares at which the unallocated share is tabled
GRID_STEP = 0.01  # the bound is also computed every 1 % of requested GPUs from 90 % (for the plot)


class FillRow(NamedTuple):
    """One line of the fill table (shares in 0..1; None: not reached / not known)."""

    label: str
    cluster: str
    n_nodes: int
    gpus: int
    placed: int | None
    failed: int | None
    first_failure: float | None  # requested share at the first failed submission
    unallocated_first: float | None  # unallocated share then
    unallocated_at: tuple[float | None, ...]  # at each of CHECKPOINTS
    unallocated_end: float | None
    migrations: int | None
    end: EndState | None


def result_row(r: FillResult) -> FillRow:
    first = r.failed[0] if r.failed else None
    at = tuple(None if (i := r.index_at_share(x)) is None else r.unallocated_at(i) for x in CHECKPOINTS)
    last = len(r.requested) - 1
    return FillRow(r.scheduler, r.cluster, r.n_nodes, r.cluster_gpus, len(r.requested) - len(r.failed), len(r.failed),
                   None if first is None else r.share(r.requested[first]),
                   None if first is None else r.unallocated_at(first), at,
                   r.unallocated_at(last) if last >= 0 else None, r.migrations, r.end)


def bound_row(cluster: NodeList, sequence: Sequence[Pod], time_limit: float = DEFAULT_TIME_LIMIT) -> tuple[FillRow, list[BoundPoint]]:
    """The exact bound's line (first failure of the hindsight packing, fewest unallocated GPUs at
    the checkpoints and at the end) and the bound points it rests on."""
    c = cluster.total_gpus
    cum = list(itertools.accumulate(p.g for p in sequence))
    ks = [bisect_right(cum, x * c) for x in CHECKPOINTS] + [len(sequence)]
    grid = [bisect_right(cum, (0.9 + GRID_STEP * i) * c) for i in range(int(0.5 / GRID_STEP) + 1)]
    points = bound_points(cluster, sequence, ks + grid, time_limit)
    by_k = {b.k: b for b in points}
    first = oracle_first_failure(cluster, sequence, time_limit)
    req_first = None if first is None or first == len(sequence) else cum[first] / c
    un_first = None if req_first is None or first is None else 1 - (cum[first] - sequence[first].g) / c

    def share(k: int) -> float | None:
        b = by_k[k]
        return None if b.min_unallocated is None or k == 0 else b.min_unallocated / c

    row = FillRow("exact bound", cluster.source, cluster.n_nodes, c, None, None, req_first, un_first,
                  tuple(share(k) for k in ks[:-1]), share(len(sequence)), None, None)
    return row, points


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}"


HEADER = ("scheduler", "nodes", "GPUs", "placed", "failed", "1st fail@req%", "unalloc%@1st",
          *(f"unalloc%@{int(100 * x)}%" for x in CHECKPOINTS), "unalloc%end", "migr", "Φπ", "Φ★", "SIF")


def render_table(rows: Sequence[FillRow]) -> str:
    """The fill table, one line per row, columns as in ``HEADER``."""
    lines = [" ".join(f"{h:>13}" if i else f"{h:<16}" for i, h in enumerate(HEADER))]
    for r in rows:
        e = r.end
        cells = [r.label, str(r.n_nodes), str(r.gpus), "-" if r.placed is None else str(r.placed),
                 "-" if r.failed is None else str(r.failed), _pct(r.first_failure), _pct(r.unallocated_first),
                 *(_pct(u) for u in r.unallocated_at), _pct(r.unallocated_end),
                 "-" if r.migrations is None else str(r.migrations),
                 "-" if e is None else str(e.phi_pi), "-" if e is None or e.phi_star is None else str(e.phi_star),
                 "-" if e is None or e.sif is None else f"{e.sif:.4f}"]
        lines.append(" ".join(f"{c:>13}" if i else f"{c:<16}" for i, c in enumerate(cells)))
    return "\n".join(lines)
