"""Trace-driven, event-driven simulator of a shared GPU cluster (seeds/000 §5.1–5.3).

One event heap of ``(time, priority, sequence, kind, job, version)``, as SimPy keeps it: no ticks,
no re-sorting. Three event kinds — job completion, migration completion, job arrival, in that
priority order at equal times (capacity freed at t is usable by a job arriving at t). The swappable
parts are chosen by name, each from one registry:

* placement policy — any name of ``heuristics.gpu.registry.policy_names()`` (COMPASS variants, the
  baselines, SIFOpt, FFT, DRR ...);
* queue discipline — ``heuristics.gpu.queueing.DISCIPLINES`` ("fifo" default, "backfill");
* migration charging — ``CHARGING`` below.

Migration cost (§5.1, §6.5): a migration is a checkpoint-and-restart of the migrated job, which
delays that job's completion by c seconds (default 8 s, the paper's measured latency). Readings:

* ``per-event`` (default): a job some of whose instances move during one scheduler event is
  delayed c once for that event — the job checkpoints once and all its moved instances restart
  together; a job moved in k different events is delayed k·c.
* ``per-instance``: every moved instance costs c (a job with k instances moved in one event is
  delayed k·c) — the pessimistic reading.

A departure may move instances of the departing job itself (e.g. COMPASS's Remove draws a
1-GPU replacement filler that is the job's own next instance, removed a moment later); such moves
are counted in ``SimResult.departing_moves`` and charged to nobody.

During the delay the job keeps its GPUs (at its destination); a *migration completion* event
marks the end of the delay so the time series can show migrations in flight.

Determinism: the simulator itself draws no random numbers; ties are broken by event priority and
then by trace order. ``SimConfig.seed`` is recorded in the results and handed to policies that
take a ``seed`` option (through ``policy_opts``), so a (trace, config) pair replays identically.

Recorded (piecewise constant between events, one sample per distinct event time): partial nodes
Φπ, fully empty nodes, used GPUs, queue length, running jobs, migrations in flight, whether the
head of the queue is blocked although the idle GPUs cover its total demand (fragmentation-induced
blocking, §6.6), whether WCC holds on the running instances, and the instance counts n_1..n_G from
which Φ★ (and N·SIF = Φπ − Φ★) is computed after the run, once per distinct count vector.

Round-based policies (FFT-like, DRR-like: ``heuristics.gpu.repack_baselines``) offer
``tick(now) -> EventResult``; the simulator calls it with the current time before every event it
processes and applies (charges) the returned round-start migrations like an event's; the queue is
then retried, since a reorganisation can make room.

Two more optional policy hooks, for the baselines whose decisions read the workload rather than
only the placement (``heuristics.gpu.cafgd``, ``heuristics.gpu.mcg``):
``observe_submission(now, job)`` is called when a job is submitted (before it is queued for
admission), and ``prioritise(queue) -> jobs`` returns the waiting jobs in the order the queue
discipline should try them, before each scheduling pass (a reordering makes the whole queue
fresh; anything but a permutation of the queue aborts the run).

Mixed clusters (``SimConfig.capacities`` / ``node_models`` / ``job_models``; docs/heterogeneous.md):
the policy is built by ``heuristics.gpu.placeholders.mixed_policy``: natively (``on_capacities``,
with ``partial_empty()``) for every built-in scheduler but COMPASS, which runs on the 8-GPU
partition; through placeholders for a plugin scheduler. Φπ counts each node against its own capacity, used GPUs and the blocking test are over the real GPU total, Φ★ is the
mixed one (:func:`mixed_phi_star`), jobs that can never run are refused (filter them with
:func:`split_placeable`; :func:`on_node_list` builds a scheduler's config from a node list).

Φπ and the empty-node count are read through the cheapest accessor a policy offers:
``occupancy() -> tuple`` (number of nodes at each used level 0..G), else ``partial_count()`` plus
``empty_count()`` (O(1) counters), else ``placement()`` (O(cluster)) — and only after events that
changed the policy state. Used GPUs come from the simulator's own instance counts.
"""
from __future__ import annotations

import heapq
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Callable, Iterable, Mapping, NamedTuple, Protocol, Sequence, TypeVar

from heuristics.gpu.cluster import Gang, Job
from heuristics.gpu.node_list import NodeList
from heuristics.gpu.placeholders import (PARTITION_ONLY, PlaceholderError, PlaceholderPolicy, mixed_policy,
                                         mixed_refusal, run_cluster)
from heuristics.gpu.policy import Migration, Policy
from heuristics.gpu.queueing import get_discipline
from heuristics.gpu.registry import make_policy
from heuristics.gpu.sizing import n_maxjob, wcc_holds
from oracle.gpu.mixed_certificate import fill_nodes
from oracle.gpu.mixed_phi import ItemType

COMPLETION, MIGRATION_DONE, ARRIVAL = 0, 1, 2  # heap priorities at equal times


class SimJob(Gang, Protocol):
    """What the simulator needs of a trace job (``heuristics.gpu.trace.TraceJob`` has it)."""

    @property
    def submit(self) -> float: ...

    @property
    def duration(self) -> float: ...


# A charging rule maps (migration cost c, the migrations of one job in one event) to its delay.
Charging = Callable[[float, Sequence[Migration]], float]
CHARGING: dict[str, Charging] = {
    "per-event": lambda c, moves: c,
    "per-instance": lambda c, moves: c * len(moves),
}


@dataclass(frozen=True)
class SimConfig:
    """One simulation run's parameters (everything that, with the trace, determines the run)."""

    policy: str
    n_nodes: int
    capacity: int = 8
    queue: str = "fifo"
    charging: str = "per-event"
    migration_cost: float = 8.0
    seed: int = 0
    policy_opts: tuple[tuple[str, object], ...] = ()
    # A mixed cluster (docs/heterogeneous.md): node n has ``capacities[n]`` GPUs (then ``capacity``
    # is their maximum) and model ``node_models[n]``; job j may only use the models
    # ``dict(job_models)[j]``. All empty: ``n_nodes`` nodes of ``capacity`` GPUs, any job anywhere.
    capacities: tuple[int, ...] = ()
    node_models: tuple[str, ...] = ()
    job_models: tuple[tuple[int, frozenset[str]], ...] = ()

    @property
    def is_mixed(self) -> bool:
        """Node capacities differ or jobs are model-constrained: the run goes through placeholders."""
        return bool(self.capacities) or bool(self.job_models)

    @property
    def node_capacities(self) -> tuple[int, ...]:
        return self.capacities or (self.capacity,) * self.n_nodes

    @property
    def gpus(self) -> int:
        """The cluster's real GPUs (the denominator of GU, eq. 17)."""
        return sum(self.node_capacities)


class JobRecord(NamedTuple):
    """Per-job outcome; ``start``/``end`` are NaN for a job the run never started/finished."""

    id: int
    g: int
    w: int
    submit: float
    duration: float
    start: float
    end: float
    migrations: int  # instance moves
    migration_events: int  # scheduler events in which the job moved
    migration_delay: float

    @property
    def queueing(self) -> float:
        return self.start - self.submit

    @property
    def jct(self) -> float:
        """Completion time C_i = queueing + running + migration delay (§5.3, eq. 15)."""
        return self.end - self.submit


SERIES_COLUMNS = ("t", "partial", "empty", "used_gpus", "queue_len", "running", "migrating",
                  "hol_frag_blocked", "wcc", "phi_star")


@dataclass(frozen=True)
class Series:
    """Columnar time series; sample i holds on [t[i], t[i+1]) (the last one has zero length)."""

    t: tuple[float, ...]
    partial: tuple[int, ...]
    empty: tuple[int, ...]
    used_gpus: tuple[int, ...]
    queue_len: tuple[int, ...]
    running: tuple[int, ...]
    migrating: tuple[int, ...]
    hol_frag_blocked: tuple[int, ...]
    wcc: tuple[int, ...]
    counts: tuple[tuple[int, ...], ...]
    phi_star: tuple[float, ...]  # NaN where Φ★ is unknown or was not computed

    def rows(self) -> Iterable[tuple]:
        return zip(*(getattr(self, c) for c in SERIES_COLUMNS))


@dataclass(frozen=True)
class SimResult:
    config: SimConfig
    jobs: tuple[JobRecord, ...]
    series: Series
    events: int  # heap events processed (stale completions excluded)
    status: str  # "complete" | "stuck" (queue left, nothing running) | "aborted" (policy error)
    note: str = ""
    phi_star_unknown: int = 0  # distinct count vectors whose Φ★ solve was not optimal
    policy_refusals: int = 0
    departing_moves: int = 0  # moves of a job's own instances during its departure (not charged)


PhiStar = Callable[[tuple[int, ...], int, int], float]


def bfd_certified_phi_star(counts: Sequence[int], n_nodes: int, capacity: int) -> int | None:
    """Φ★ when a best-fit-decreasing packing proves it, else None (then ask the exact oracle).

    Φ★ ≥ 1[T mod G ≠ 0] (T = total GPUs: if T is not a multiple of G some used node is not full).
    Best-fit decreasing, run in counts space on the histogram of opened nodes by free GPUs (O(G²)
    per call, whatever the instance count), gives a packing; when it uses at most N nodes and has
    exactly that many partial nodes, the bound is attained and Φ★ is proven equal to it.
    """
    free = [0] * (capacity + 1)  # opened nodes by free GPUs
    opened = 0
    for g in range(capacity, 0, -1):
        k = counts[g - 1]
        per_new = capacity // g
        while k > 0:
            f = next((f for f in range(g, capacity) if free[f]), 0)
            if not f:  # no opened node fits g: open new ones, filled per_new at a time
                full, rest = divmod(k, per_new)
                opened += full + (1 if rest else 0)
                free[capacity - per_new * g] += full
                if rest:
                    free[capacity - rest * g] += 1
                break
            # a best-fit node keeps taking g until fewer than g GPUs are free
            taken, after, k = fill_nodes(k, g, f, free[f])
            free[f] -= taken
            free[after] += taken
    bound = 1 if sum(g * c for g, c in enumerate(counts, 1)) % capacity else 0
    partial = sum(free[1:capacity])
    return bound if opened <= n_nodes and partial == bound else None


def oracle_phi_star(counts: tuple[int, ...], n_nodes: int, capacity: int) -> float:
    """Exact Φ★: the BFD certificate when it applies, else ``oracle.gpu.phi_star`` (memoised there);
    NaN when the exact solve is not optimal."""
    quick = bfd_certified_phi_star(counts, n_nodes, capacity)
    if quick is not None:
        return float(quick)
    from oracle.gpu.phi_star import phi_star  # late import: the oracle is optional for pure speed runs

    cert = phi_star(counts, n_nodes, capacity)
    value = cert.objective if cert.is_optimal else None
    return math.nan if value is None else float(value)


def greedy_zero_partial(capacities: Sequence[int], counts: Sequence[int]) -> bool:
    """Whether a greedy packing of ``counts`` (n_1..n_G, any model) into nodes of ``capacities``
    leaves no node partial — then Φ★ = 0 is proven (Φ★ ≥ 0), with no solve. Node by node: the
    largest free capacity not above the GPUs still to place, filled largest instance first."""
    left = list(counts)
    free = Counter(capacities)  # unused nodes by capacity
    remaining = sum(g * c for g, c in enumerate(left, 1))
    while remaining:
        c = max((c for c in free if free[c] and c <= remaining), default=None)
        if c is None:  # what is left is smaller than every free node: one stays partial
            return False
        g = max((g for g in range(1, min(c, len(left)) + 1) if left[g - 1]), default=0)
        whole = min(free[c], left[g - 1] // (c // g), remaining // c) if g and c % g == 0 else 0
        if whole:  # many nodes filled by the largest instances alone, at once
            free[c] -= whole
            left[g - 1] -= whole * (c // g)
            remaining -= whole * c
            continue
        free[c] -= 1
        room = c
        for g in range(min(c, len(left)), 0, -1):
            k = min(left[g - 1], room // g)
            left[g - 1] -= k
            room -= k * g
        if room:
            return False
        remaining -= c
    return True


DemandKey = tuple  # a count vector n_1..n_G, or (counts, constrained (ItemType, count) pairs)


def mixed_phi_star(config: SimConfig, time_limit: float = 10.0) -> Callable[[DemandKey], float]:
    """Exact Φ★ of a mixed cluster per demand key (``oracle.gpu.mixed_phi``; each node partial
    against its own capacity); NaN when the solve is not optimal. Without constrained jobs the
    greedy certificate of :func:`greedy_zero_partial` answers first."""
    from oracle.gpu.mixed_phi import phi_star_mixed  # late import, as oracle_phi_star
    from oracle.result import Unproven

    caps, models = config.node_capacities, config.node_models or None

    def phi(key: DemandKey) -> float:
        if not config.job_models:
            if greedy_zero_partial(caps, key):
                return 0.0
            demand: dict[ItemType, int] | tuple[int, ...] = key
        else:
            counts, typed = key
            demand = dict(typed)
            for g, n in enumerate(counts, 1):
                free = n - sum(c for t, c in typed if t.g == g)
                if free:
                    demand[ItemType(g)] = free
        try:
            value = phi_star_mixed(caps, demand, models, time_limit).proven_value("Φ★")
        except Unproven:
            return math.nan
        return math.nan if value is None else float(value)
    return phi


class Unplaceable(Enum):
    """Why a job can never run on a cluster, whatever runs it (counted, never dropped silently)."""

    NO_MODEL = "gpu_spec matches no node"
    TOO_BIG = "g exceeds every node's capacity"
    TOO_WIDE = "more instances than the nodes can hold"


def unplaceable(job: Gang, config: SimConfig) -> Unplaceable | None:
    """Why ``job`` (w instances of g GPUs, at most one per node slot) never fits ``config``'s
    nodes of its allowed models, or None."""
    allowed = dict(config.job_models).get(job.id)
    models = config.node_models or ("",) * config.n_nodes
    caps = [c for c, m in zip(config.node_capacities, models) if allowed is None or m in allowed]
    if not caps:
        return Unplaceable.NO_MODEL
    if job.g > max(caps):
        return Unplaceable.TOO_BIG
    return Unplaceable.TOO_WIDE if sum(c // job.g for c in caps) < job.w else None


J = TypeVar("J", bound=Gang)


def split_placeable(jobs: Sequence[J], config: SimConfig) -> tuple[list[J], dict[Unplaceable, int]]:
    """The jobs that can run on ``config``'s cluster, and how many cannot, by reason."""
    kept: list[J] = []
    out: dict[Unplaceable, int] = {}
    for j in jobs:
        why = unplaceable(j, config)
        if why is None:
            kept.append(j)
        else:
            out[why] = out.get(why, 0) + 1
    return kept, out


def on_node_list(base: SimConfig, cluster: NodeList, job_models: Mapping[int, frozenset[str]],
                 jobs: Sequence[J]) -> tuple[SimConfig, list[J], dict[Unplaceable, int]]:
    """``base`` (its policy, queue, options) on its nodes of ``cluster`` (COMPASS: the 8-GPU
    partition, ``placeholders.run_cluster``): the config, the jobs that can run there and how many
    cannot, by reason. ValueError saying why the policy cannot run there."""
    nodes = run_cluster(base.policy, cluster)
    if not nodes.n_nodes:
        raise ValueError(f"the cluster has no {PARTITION_ONLY.get(base.policy)}-GPU node")
    jm = tuple((j.id, job_models[j.id]) for j in jobs if j.id in job_models)
    why = mixed_refusal(base.policy, nodes.capacities, bool(jm), dict(base.policy_opts))
    if why is not None:
        raise ValueError(why)
    cfg = replace(base, n_nodes=nodes.n_nodes, capacity=max(nodes.capacities), job_models=jm,
                  capacities=() if nodes.is_uniform else nodes.capacities, node_models=nodes.models if jm else ())
    kept, left_out = split_placeable(jobs, cfg)
    return cfg, kept, left_out


def validate_jobs(jobs: Sequence[SimJob], n_nodes: int, capacity: int, max_demand: int | None = None) -> None:
    """Raise ValueError naming the first job that cannot be simulated on this cluster.

    ``max_demand`` (a policy's ``max_demand`` attribute, e.g. the hierarchical scheduler's 8K)
    admits multi-node instances: g a multiple of ``capacity`` up to it, each on g/capacity whole
    nodes."""
    seen: set[int] = set()
    for j in jobs:
        if j.id in seen:
            raise ValueError(f"job {j.id}: duplicate id")
        seen.add(j.id)
        multi = max_demand is not None and capacity < j.g <= max_demand
        if multi and j.g % capacity:
            raise ValueError(f"job {j.id}: g={j.g} above {capacity} must be a multiple of {capacity}")
        if not multi and not 1 <= j.g <= capacity:
            raise ValueError(f"job {j.id}: g={j.g} outside 1..{max_demand or capacity}")
        if j.w < 1:
            raise ValueError(f"job {j.id}: w={j.w} must be >= 1")
        if not (math.isfinite(j.submit) and math.isfinite(j.duration)) or j.duration < 0:
            raise ValueError(f"job {j.id}: submit={j.submit}, duration={j.duration} not usable")
        if multi:
            if j.w * (j.g // capacity) > n_nodes:
                raise ValueError(f"job {j.id}: {j.w}x{j.g} GPUs needs {j.w * (j.g // capacity)} nodes, "
                                 f"cluster has {n_nodes}")
        elif n_maxjob(j, capacity) > n_nodes:
            raise ValueError(f"job {j.id}: {j.w}x{j.g} GPUs needs {n_maxjob(j, capacity)} nodes, "
                             f"cluster has {n_nodes}")


def count_slot(job: Job, capacity: int) -> tuple[int, int]:
    """(index into n_1..n_G, amount) of a running job: a multi-node instance (g > G) counts as
    g/G instances of G GPUs, each filling one node, so Φ★, WCC (no n_G term) and the used GPUs
    read the counts unchanged."""
    if job.g <= capacity:
        return job.g - 1, job.w
    return capacity - 1, job.w * (job.g // capacity)


Scheduler = Policy | PlaceholderPolicy  # what the simulator drives (a registered policy, or one on mixed nodes)
Observer = Callable[[float, Scheduler, dict[int, Job]], None]


@dataclass
class _Running:
    job: Job
    end: float
    version: int = 0
    migrations: int = 0
    migration_events: int = 0
    delay: float = 0.0


@dataclass
class _Recorder:
    capacity: int
    cols: dict[str, list] = field(default_factory=lambda: {c: [] for c in SERIES_COLUMNS[:-1]})
    counts: list = field(default_factory=list)
    keys: list = field(default_factory=list)  # what Φ★ is computed of (the counts, or with model sets)

    def sample(self, t: float, partial_empty: tuple[int, int], counts: tuple[int, ...], gpus: int,
               queue: list[Job], running: int, migrating: int, key: DemandKey | None = None) -> None:
        used = sum(g * c for g, c in enumerate(counts, 1))
        idle = gpus - used
        head = queue[0] if queue else None
        values = (t, *partial_empty, used, len(queue), running, migrating,
                  int(head is not None and idle >= head.g * head.w), int(wcc_holds(counts)))
        cols = self.cols
        if cols["t"] and cols["t"][-1] == t:  # same instant: the later state is what holds
            for c in cols.values():
                c.pop()
            self.counts.pop()
            self.keys.pop()
        for name, v in zip(SERIES_COLUMNS, values):
            cols[name].append(v)
        self.counts.append(counts)
        self.keys.append(counts if key is None else key)

    def series(self, phi: Callable[[DemandKey], float] | None) -> tuple[Series, int]:
        memo: dict[DemandKey, float] = {}
        if phi is not None:
            for c in self.keys:
                if c not in memo:
                    memo[c] = phi(c)
        phis = tuple(memo.get(c, math.nan) for c in self.keys)
        unknown = sum(1 for v in memo.values() if math.isnan(v))
        cols = {k: tuple(v) for k, v in self.cols.items()}
        return Series(counts=tuple(self.counts), phi_star=phis, **cols), unknown


def node_counter(policy: Scheduler) -> Callable[[], tuple[int, int]]:
    """A reader of (partial nodes Φπ, fully empty nodes) using the policy's cheapest accessor
    (on a mixed cluster, each node against its own capacity: ``PlaceholderPolicy.partial_empty``)."""
    partial_empty = getattr(policy, "partial_empty", None)  # placeholders, or a native mixed policy
    if partial_empty is not None:
        return partial_empty  # type: ignore[no-any-return]
    if hasattr(policy, "occupancy"):
        def from_histogram() -> tuple[int, int]:
            occ = policy.occupancy()
            return sum(occ[1:-1]), occ[0]
        return from_histogram
    if hasattr(policy, "partial_count") and hasattr(policy, "empty_count"):
        return lambda: (policy.partial_count(), policy.empty_count())

    def from_placement() -> tuple[int, int]:
        p = policy.placement()
        used = [p.used(n) for n in range(p.n_nodes)]
        return sum(1 for u in used if 0 < u < p.capacity), used.count(0)
    return from_placement


def build_policy(config: SimConfig) -> Scheduler:
    """``config.policy`` on ``config``'s cluster: on a mixed one natively or through placeholders
    (``mixed_policy``; ValueError naming why a scheduler cannot run there)."""
    if not config.is_mixed:
        return make_policy(config.policy, config.n_nodes, config.capacity, **dict(config.policy_opts))
    caps = config.node_capacities
    if len(caps) != config.n_nodes or max(caps) != config.capacity:
        raise ValueError(f"capacities: {len(caps)} nodes of at most {max(caps)} GPUs, config says "
                         f"{config.n_nodes} of {config.capacity}")
    if config.node_models and len(config.node_models) != config.n_nodes:
        raise ValueError(f"node_models: {len(config.node_models)} entries for {config.n_nodes} nodes")
    return mixed_policy(config.policy, caps, config.node_models or None, dict(config.job_models),
                        dict(config.policy_opts))


def simulate(jobs: Sequence[SimJob], config: SimConfig, *, phi_star: PhiStar | None = oracle_phi_star,
             observer: Observer | None = None) -> SimResult:
    """Replay ``jobs`` on a cluster run by ``config.policy``; see the module docstring.

    ``phi_star`` computes Φ★ per distinct instance-count vector after the run (None skips it:
    Φ★ and SIF become NaN); on a mixed cluster (``config.is_mixed``) Φ★ is always the mixed one
    (:func:`mixed_phi_star`) and ``phi_star`` only says whether to compute it. A job that can
    never run on a mixed cluster (:func:`unplaceable`) is a ValueError: filter with
    :func:`split_placeable`. ``observer(time, policy, running_jobs)`` is called after every event.
    """
    cap, n_nodes = config.capacity, config.n_nodes
    policy = build_policy(config)
    if config.is_mixed:
        bad = next((j for j in jobs if unplaceable(j, config) is not None), None)
        if bad is not None:
            raise ValueError(f"job {bad.id}: {unplaceable(bad, config).value}")  # type: ignore[union-attr]
    validate_jobs(jobs, n_nodes, cap, getattr(policy, "max_demand", None))
    if config.charging not in CHARGING:
        raise ValueError(f"unknown migration charging {config.charging!r}; known: {', '.join(CHARGING)}")
    if config.migration_cost < 0:
        raise ValueError(f"migration cost {config.migration_cost} must be >= 0")
    charge = CHARGING[config.charging]
    discipline = get_discipline(config.queue)
    cost = float(config.migration_cost)
    tick = getattr(policy, "tick", None)
    observe_submission = getattr(policy, "observe_submission", None)
    prioritise = getattr(policy, "prioritise", None)

    by_id = {j.id: j for j in jobs}
    heap: list[tuple] = []
    seq = 0
    for j in sorted(jobs, key=lambda j: j.submit):  # stable: trace order breaks submit ties
        heap.append((float(j.submit), ARRIVAL, seq, j.id, 0))
        seq += 1
    heapq.heapify(heap)

    running: dict[int, _Running] = {}
    running_jobs: dict[int, Job] = {}
    starts: dict[int, float] = {}
    done: dict[int, _Running] = {}
    counts = [0] * cap
    job_models = dict(config.job_models)
    typed: dict[ItemType, int] = {}  # running instances of model-constrained jobs, by type
    queue: list[Job] = []
    tried = 0  # queue[:tried] were refused by the current cluster state
    migrating = 0
    refusals = 0
    departing_moves = 0
    events = 0
    status, note = "complete", ""
    rec = _Recorder(cap)
    now = 0.0
    read_nodes = node_counter(policy)
    nodes = read_nodes()
    changed = False  # the policy state changed since ``nodes`` was read

    def push(t: float, prio: int, jid: int, version: int) -> None:
        nonlocal seq
        heapq.heappush(heap, (t, prio, seq, jid, version))
        seq += 1

    def apply_migrations(moves: Sequence[Migration], departing: int | None = None) -> None:
        nonlocal migrating, departing_moves
        per_job: dict[int, list[Migration]] = {}
        for m in moves:
            if m.job == departing:  # moved, then removed in the same event: nothing to charge
                departing_moves += 1
            else:
                per_job.setdefault(m.job, []).append(m)
        for jid, ms in per_job.items():
            r = running.get(jid)
            if r is None:
                raise _PolicyError(f"policy migrated job {jid}, which is not running")
            d = charge(cost, ms)
            r.migrations += len(ms)
            r.migration_events += 1
            r.delay += d
            r.end += d
            r.version += 1
            push(r.end, COMPLETION, jid, r.version)
            push(now + d, MIGRATION_DONE, jid, 0)
            migrating += 1

    def try_admit(job: Job) -> bool:
        nonlocal refusals, changed
        res = policy.arrive(job)
        if not res.ok:
            refusals += 1
            return False
        changed = True
        tj = by_id[job.id]
        r = _Running(job, now + float(tj.duration))
        running[job.id] = r
        running_jobs[job.id] = job
        starts[job.id] = now
        index, amount = count_slot(job, cap)
        counts[index] += amount
        if job.id in job_models:
            t = ItemType(job.g, job_models[job.id])
            typed[t] = typed.get(t, 0) + amount
        push(r.end, COMPLETION, job.id, 0)
        apply_migrations(res.migrations)
        return True

    try:
        while heap:
            t, kind, _, jid, version = heapq.heappop(heap)
            if kind == COMPLETION and (jid not in running or running[jid].version != version):
                continue  # superseded by a migration delay
            now = t
            events += 1
            if tick is not None:  # round-based policies reorganise at their first event of a round
                res = tick(now)
                if not res.ok:
                    raise _PolicyError(f"round-start reorganisation not applied ({res.outcome.value}): {res.reason}")
                if res.migrations:
                    apply_migrations(res.migrations)
                    changed, tried = True, 0
            if kind == ARRIVAL:
                tj = by_id[jid]
                queue.append(Job(jid, tj.g, tj.w))
                if observe_submission is not None:
                    observe_submission(now, queue[-1])
            elif kind == MIGRATION_DONE:
                migrating -= 1
            else:
                res = policy.depart(jid)
                if not res.ok:
                    why = res.reason.removeprefix(f"{res.outcome.value}: ")  # COMPASS's reasons name it already
                    raise _PolicyError(f"departure of job {jid} not applied ({res.outcome.value}): {why}")
                r = running.pop(jid)
                del running_jobs[jid]
                index, amount = count_slot(r.job, cap)
                counts[index] -= amount
                if jid in job_models:
                    t = ItemType(r.job.g, job_models[jid])
                    typed[t] -= amount
                done[jid] = r
                tried = 0
                changed = True
                apply_migrations(res.migrations, departing=jid)
            if len(queue) > tried:
                if prioritise is not None:
                    tried = reorder(queue, tried, prioritise)
                discipline(queue, tried, try_admit)
                tried = len(queue)  # a discipline returns only when every waiting job was refused
            if changed:  # reading the policy may cost O(cluster): only when its state changed
                nodes, changed = read_nodes(), False
            key = (tuple(counts), tuple(sorted(((t, c) for t, c in typed.items() if c), key=_type_order))) \
                if job_models else None
            rec.sample(now, nodes, tuple(counts), config.gpus, queue, len(running), migrating, key)
            if observer is not None:
                observer(now, policy, running_jobs)
        if isinstance(policy, PlaceholderPolicy):
            policy.check_placeholders()
        if queue:
            status = "stuck"
            note = (f"{len(queue)} job(s) never started: head job {queue[0].id} "
                    f"({queue[0].w}x{queue[0].g}) refused with an idle cluster")
    except (_PolicyError, PlaceholderError) as e:
        status, note = "aborted", f"t={now}: {e}"

    records = []
    for j in jobs:
        ran = done.get(j.id) or running.get(j.id)
        start = starts.get(j.id, math.nan)
        end = done[j.id].end if j.id in done else math.nan
        records.append(JobRecord(j.id, j.g, j.w, float(j.submit), float(j.duration), start, end,
                                 ran.migrations if ran else 0, ran.migration_events if ran else 0,
                                 ran.delay if ran else 0.0))
    phi: Callable[[DemandKey], float] | None = None
    if phi_star is not None:
        phi = mixed_phi_star(config) if config.is_mixed else (lambda c: phi_star(c, n_nodes, cap))
    series, unknown = rec.series(phi)
    return SimResult(config, tuple(records), series, events, status, note, unknown, refusals,
                     departing_moves)


def _type_order(item: tuple[ItemType, int]) -> tuple[int, list[str]]:
    """A total order of constrained instance types (frozensets alone are only partially ordered)."""
    return item[0].g, sorted(item[0].models or ())


def reorder(queue: list[Job], tried: int, prioritise: Callable[[Sequence[Job]], Sequence[Job]]) -> int:
    """Put ``queue`` in the policy's priority order, in place; the new count of leading jobs known
    to be refused by the current state (0 when the order changed)."""
    order = list(prioritise(tuple(queue)))
    if sorted(j.id for j in order) != sorted(j.id for j in queue) or len(set(order)) != len(order):
        raise _PolicyError("prioritise() did not return a permutation of the waiting jobs")
    if order == queue:
        return tried
    queue[:] = order
    return 0


class _PolicyError(Exception):
    """A policy broke the simulator's contract (refused a departure, moved a non-running job)."""
