"""Claim ``ring-choice`` about RingStitch (seed 004, §IV-C).

ring-choice — "RingStitch's chosen rack set is lexicographically optimal" in the stitching regime
(no single rack fits D, aggregate residual ≥ D), against oracle/rack/rack_subset.py with the same
fragmentation-penalty table. Exhaustive over every residual vector and every stitching demand of
the small tori in ``exhaustive``; ``samples`` random instances and ``sim_samples`` decisions taken
from RingStitch's own simulated runs on the paper's torus (no symmetry reduction: RingStitch breaks ties by rack id, so its
choice is not invariant under torus automorphisms even though the optimum is); sampled on the paper's torus. Reported per
key: how often RingStitch uses more racks than needed, a longer ring with the minimum rack count,
or a higher fragmentation cost with both equal, and by how much. The smallest violating instance
(fewest racks, then fewest chips, then smallest D) is the counterexample, with the smallest one per
violated key under ``smallest_per_key``; it is JSON and :func:`replay_ring_choice` re-runs it.

:func:`rate_on` runs the same comparison on any list of instances of one cluster (the off-optimum
rate per torus size and capacity, benchmarks/ring_table.py), fed by :func:`exhaustive_instances`
and :func:`sampled_instances`.

The check takes ``deadline`` (a ``time.perf_counter()`` value, ``verify --time-limit``), looked at
between instances: once it has passed, the scan stops and the claim is inconclusive ("time limit
hit after K of the N instances"), unless a violation was already found, which stands.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator, Literal, NamedTuple, Sequence, TypedDict

import numpy as np

from heuristics.rack.ocs_sim import WORKLOADS, Windows, generate_trace, simulate
from heuristics.rack.racks import PAPER_CAPACITY, PAPER_DIMS, Coord, FragmentationPenalty, RackCluster
from heuristics.rack.ringstitch import RingStitch
from oracle.rack.rack_subset import MAX_RACKS, LexCost, lex_optimal_subset, min_racks
from proofs_check.core.trace import Record, envelope
from proofs_check.core.verdict import ClaimResult, Verdict
from proofs_check.rack import outcome


# --- ring-choice: one instance ------------------------------------------------------------------

class Choice(TypedDict):
    """A rack choice as recorded: its lexicographic key, ((rack, chips), ...) and ring order."""

    key: list[float]
    alloc: list[list[int]]
    ring: list[int]


class StitchChoice(Choice):
    generator: str  # the candidate generator that produced RingStitch's choice


class ChoiceInstance(TypedDict):
    """A stitching-regime instance on which RingStitch's choice is worse than the optimum."""

    dims: list[int]
    capacity: int
    residual: list[int]
    demand: int
    penalty: str
    ringstitch: StitchChoice
    optimum: Choice


KEYS = ("racks", "ring_cost", "fragmentation")


class Miss(NamedTuple):
    """A suboptimal decision: its record and RingStitch's key minus the optimum's."""

    instance: ChoiceInstance
    gap: LexCost

    @property
    def level(self) -> int:
        """Index in ``KEYS`` of the first key on which RingStitch is worse."""
        return next(i for i, g in enumerate(self.gap) if g != 0)


def _instance_size(ce: ChoiceInstance) -> tuple[int, int, int]:
    return (len(ce["residual"]), sum(ce["residual"]), ce["demand"])


def _compare(cluster: RackCluster, residual: Sequence[int], demand: int, policy: RingStitch,
             time_limit: float) -> outcome.Match | Miss:
    """``outcome.Match.OPTIMAL``, ``outcome.Match.UNDECIDED`` (the oracle hit ``time_limit``), or the :class:`Miss`
    of a suboptimal decision."""
    table = policy.penalty.table(cluster.capacity)
    p = policy.place(cluster, residual, demand)
    cert = lex_optimal_subset(residual, demand, cluster.dist, table, time_limit=time_limit)
    if not cert.is_proven:  # the time limit was hit: feasible or unknown
        return outcome.Match.UNDECIDED
    if cert.objective is None or p is None:
        raise AssertionError(f"stitching-regime instance {residual}, D={demand}: oracle {cert.status}, "
                             f"RingStitch {'deferred' if p is None else 'placed'}")
    mine = p.key
    opt: LexCost = (cert.objective[0], cert.objective[1], round(cert.objective[2], 9))
    if mine <= opt:
        if mine < opt:
            raise AssertionError(f"RingStitch {mine} beats the proven optimum {opt} on {residual}, D={demand}")
        return outcome.Match.OPTIMAL
    record: ChoiceInstance = {
        "dims": list(cluster.dims), "capacity": cluster.capacity, "residual": [int(r) for r in residual],
        "demand": int(demand), "penalty": policy.penalty.name,
        "ringstitch": {"key": list(mine), "alloc": [list(a) for a in p.alloc], "ring": list(p.ring),
                       "generator": p.source},
        "optimum": {"key": list(opt), "alloc": [list(a) for a in cert.witness.alloc],
                    "ring": list(cert.witness.ring)}}
    return Miss(record, (mine[0] - opt[0], mine[1] - opt[1], mine[2] - opt[2]))


# --- ring-choice: the tally ---------------------------------------------------------------------

Source = Literal["exhaustive", "sampled", "simulated"]
SOURCES: tuple[Source, ...] = ("exhaustive", "sampled", "simulated")


@dataclass(frozen=True)
class KeyGaps:
    """How often RingStitch was first worse on one key, the largest and the summed gap."""

    worse: int = 0
    max_gap: float = 0.0
    sum_gap: float = 0.0

    def add(self, gap: float) -> KeyGaps:
        return KeyGaps(self.worse + 1, max(self.max_gap, gap), self.sum_gap + gap)

    @staticmethod
    def merge(parts: Sequence[KeyGaps]) -> KeyGaps:
        return KeyGaps(sum(p.worse for p in parts), max(p.max_gap for p in parts), sum(p.sum_gap for p in parts))

    def to_json(self) -> dict[str, float]:
        return {"worse": self.worse, "max_gap": round(float(self.max_gap), 6),
                "mean_gap": round(self.sum_gap / self.worse, 6) if self.worse else 0.0}


def _keyed(by_key: Sequence[KeyGaps]) -> dict[str, dict[str, float]]:
    return {k: g.to_json() for k, g in zip(KEYS, by_key)}


@dataclass(frozen=True)
class SourceTally:
    """The counts of one instance source; ``by_key`` is aligned with ``KEYS``."""

    instances: int = 0
    suboptimal: int = 0
    by_key: tuple[KeyGaps, ...] = field(default_factory=lambda: tuple(KeyGaps() for _ in KEYS))

    def add(self, miss: Miss | None) -> SourceTally:
        if miss is None:
            return replace(self, instances=self.instances + 1)
        level = miss.level
        by_key = tuple(g.add(miss.gap[level]) if i == level else g for i, g in enumerate(self.by_key))
        return SourceTally(self.instances + 1, self.suboptimal + 1, by_key)

    def to_json(self) -> dict[str, Any]:
        return {"instances": self.instances, "suboptimal": self.suboptimal, "by_key": _keyed(self.by_key)}


class _Tally:
    """Per-source, per-key counts and worst gaps; keeps the smallest violating instance."""

    def __init__(self) -> None:
        self.total = self.suboptimal = self.unknown = 0
        self.sources: dict[Source, SourceTally] = {src: SourceTally() for src in SOURCES}
        self.smallest: ChoiceInstance | None = None
        self.smallest_by_key: dict[str, ChoiceInstance] = {}

    def add(self, source: Source, result: outcome.Match | Miss) -> None:
        self.total += 1
        miss = result if isinstance(result, Miss) else None
        self.sources[source] = self.sources[source].add(miss)
        if result is outcome.Match.UNDECIDED:
            self.unknown += 1
        if miss is None:
            return
        self.suboptimal += 1
        size = _instance_size(miss.instance)
        if self.smallest is None or size < _instance_size(self.smallest):
            self.smallest = miss.instance
        key = KEYS[miss.level]
        held = self.smallest_by_key.get(key)
        if held is None or size < _instance_size(held):
            self.smallest_by_key[key] = miss.instance

    def stats(self) -> dict[str, Any]:
        parts = list(self.sources.values())
        merged = [KeyGaps.merge([s.by_key[i] for s in parts]) for i in range(len(KEYS))]
        return {"instances": self.total, "suboptimal": self.suboptimal,
                "suboptimal_rate": round(self.suboptimal / self.total, 6) if self.total else 0.0,
                "unknown": self.unknown, "by_key": _keyed(merged),
                "by_source": {name: s.to_json() for name, s in self.sources.items()}}


# --- ring-choice: the instances and the check ---------------------------------------------------

def _stitch_demands(residual: Sequence[int]) -> range:
    """Demands in the stitching regime: no rack fits, the aggregate does."""
    return range(max(residual) + 1, sum(residual) + 1)


class _ChoiceInstances:
    """The ring-choice instances in check order — exhaustive, sampled, simulated — drawn lazily (the
    simulated runs happen only when reached). Counts what it will yield, for the time-limit message."""

    def __init__(self, exhaustive: Sequence[tuple[Coord, int]], samples: int, max_racks_sampled: int,
                 sim_samples: int, policy: RingStitch, seed: int, progress: outcome.Progress) -> None:
        self.exhaustive, self.samples, self.max_racks_sampled = exhaustive, samples, max_racks_sampled
        self.sim_samples, self.policy, self.seed, self.progress = sim_samples, policy, seed, progress
        self.sim_seen = self.sim_outside = 0
        self.sim_drawn: int | None = None  # set once the simulated runs have been drawn

    def __iter__(self) -> Iterator[tuple[Source, RackCluster, Sequence[int], int]]:
        done = 0
        for dims, cap in self.exhaustive:
            cluster = RackCluster.torus(dims, capacity=cap)
            for res, demand in exhaustive_instances(cluster):
                yield "exhaustive", cluster, res, demand
                done += 1
            outcome.say(self.progress, f"ring-choice: torus {dims} C={cap} exhaustive done ({done} instances)")
        rng = np.random.default_rng(self.seed)
        paper = RackCluster.torus(PAPER_DIMS, PAPER_CAPACITY)
        for i in range(self.samples):
            res_list, demand = _sample_instance(paper, rng, self.max_racks_sampled)
            yield "sampled", paper, res_list, demand
            if (i + 1) % 50 == 0:
                outcome.say(self.progress, f"ring-choice: {i + 1}/{self.samples} sampled instances on {PAPER_DIMS}")
        simulated, self.sim_seen, self.sim_outside = _simulated_instances(paper, self.policy, self.sim_samples,
                                                                          self.seed)
        self.sim_drawn = len(simulated)
        for sim_res, demand in simulated:
            yield "simulated", paper, list(sim_res), demand
        outcome.say(self.progress, f"ring-choice: {self.sim_samples} stitching decisions from simulated runs checked")

    def planned(self) -> str:
        """'N instances (…)': the instances the bounds cover, by source."""
        exhaustive = sum(max(0, sum(res) - max(res))
                         for dims, cap in self.exhaustive
                         for res in itertools.product(range(cap + 1), repeat=int(np.prod(dims))))
        sim = f"{self.sim_samples} simulated (requested)" if self.sim_drawn is None else f"{self.sim_drawn} simulated"
        total = exhaustive + self.samples + (self.sim_samples if self.sim_drawn is None else self.sim_drawn)
        return f"{total} instances ({exhaustive} exhaustive, {self.samples} sampled, {sim})"


def check_ring_choice(seed: int = 0, samples: int = 200, sim_samples: int = 100, penalty: str = "linear",
                      policy: RingStitch | None = None,
                      exhaustive: Sequence[tuple[Coord, int]] = (((1, 2, 2), 4), ((1, 2, 3), 3),
                                                                 ((2, 2, 2), 1), ((1, 3, 3), 1)),
                      max_racks_sampled: int = 6, time_limit: float = 10.0,
                      progress: outcome.Progress = None, deadline: float | None = None) -> list[ClaimResult]:
    """``policy`` overrides the RingStitch configuration (its penalty then wins over ``penalty``)."""
    policy = policy or RingStitch(penalty=FragmentationPenalty(penalty))
    tally = _Tally()
    instances = _ChoiceInstances(exhaustive, samples, max_racks_sampled, sim_samples, policy, seed, progress)
    timed_out = False
    for source, cluster, residual, demand in instances:
        if outcome.passed(deadline):
            timed_out = True
            break
        tally.add(source, _compare(cluster, residual, demand, policy, time_limit))
    bounds = {"exhaustive": [{"dims": list(d), "capacity": c} for d, c in exhaustive],
              "regime": "max residual < D <= aggregate residual",
              "samples": samples, "sample_dims": list(PAPER_DIMS), "sample_capacity": PAPER_CAPACITY,
              "max_racks_sampled": max_racks_sampled, "sim_samples": sim_samples,
              "sim_max_racks": MAX_RACKS,
              "sim_runs": [f"workload {w}, load {SIM_LOAD}, {SIM_WINDOWS}" for w in SIM_WORKLOADS], "penalty": policy.penalty.name,
              "generators": list(policy.generators), "time_limit": time_limit,
              "seed": seed}
    stats = tally.stats() | {"sim_cross_rack_decisions": instances.sim_seen,
                             "sim_outside_bounds": instances.sim_outside}
    stopped = f"time limit hit after {tally.total} of the {instances.planned()}" if timed_out else ""
    if tally.smallest is not None:
        return [ClaimResult("ring-choice", Verdict.VIOLATED,
                            f"RingStitch's set is not lexicographically optimal on {tally.suboptimal} of "
                            f"{tally.total} instances ({stats['by_key']})", bounds, stats,
                            {**envelope("ring-choice", "ring-choice"), **tally.smallest,
                             "smallest_per_key": tally.smallest_by_key})]
    if tally.unknown:
        unknown = f"{tally.unknown} oracle solves ended unknown (time limit {time_limit} s)"
        return [ClaimResult("ring-choice", Verdict.INCONCLUSIVE, f"{unknown}; {stopped}" if stopped else unknown,
                            bounds, stats)]
    if timed_out:
        return [ClaimResult("ring-choice", Verdict.INCONCLUSIVE, stopped, bounds, stats)]
    return [ClaimResult("ring-choice", Verdict.HOLDS,
                        f"RingStitch's set is lexicographically optimal on all {tally.total} instances",
                        bounds, stats)]


def exhaustive_instances(cluster: RackCluster) -> Iterator[tuple[tuple[int, ...], int]]:
    """Every residual vector of ``cluster`` with every stitching-regime demand, in check order."""
    for res in itertools.product(range(cluster.capacity + 1), repeat=cluster.n):
        for demand in _stitch_demands(res):
            yield res, demand


def sampled_instances(cluster: RackCluster, count: int, seed: int, max_racks: int) -> list[tuple[list[int], int]]:
    """``count`` random stitching-regime instances of ``cluster`` (the claim's sampler, any torus)."""
    rng = np.random.default_rng(seed)
    return [_sample_instance(cluster, rng, max_racks) for _ in range(count)]


def rate_on(cluster: RackCluster, instances: Iterable[tuple[Sequence[int], int]], policy: RingStitch,
            time_limit: float = 10.0) -> tuple[SourceTally, int]:
    """RingStitch against the proven optimum on ``instances`` of one cluster — the off-optimum
    rate per torus size and capacity (issue 15 item 5). Returns the tally of the decided
    instances and how many oracle solves hit ``time_limit`` (left out of the tally)."""
    tally, undecided = SourceTally(), 0
    for residual, demand in instances:
        result = _compare(cluster, residual, demand, policy, time_limit)
        if result is outcome.Match.UNDECIDED:
            undecided += 1
        else:
            tally = tally.add(result if isinstance(result, Miss) else None)
    return tally, undecided


def _sample_instance(cluster: RackCluster, rng: np.random.Generator, max_racks: int) -> tuple[list[int], int]:
    """A random stitching-regime instance: a random share of racks with residual 1..C−1 (the
    rest full or empty), D between the largest residual + 1 and the top-``max_racks`` sum."""
    while True:
        share = rng.choice([0.1, 0.3, 0.6, 1.0])
        res = np.where(rng.random(cluster.n) < share, rng.integers(1, cluster.capacity, cluster.n), 0)
        top = np.sort(res)[::-1]
        hi = int(top[:max_racks].sum())
        if hi > top[0]:
            return [int(r) for r in res], int(rng.integers(top[0] + 1, hi + 1))


SIM_WORKLOADS, SIM_LOAD, SIM_WINDOWS = ("B", "C", "D"), 0.95, Windows(10.0, 40.0, 0.0)


def _simulated_instances(cluster: RackCluster, policy: RingStitch, count: int,
                         seed: int) -> tuple[list[tuple[tuple[int, ...], int]], int, int]:
    """``count`` cross-rack decisions drawn uniformly from RingStitch's own runs of workloads
    B, C, D at 95 % load — the residual states the scheduler actually meets — among those whose
    job needs at most ``MAX_RACKS`` racks (the oracle's range). Also returns the number of
    cross-rack decisions seen and how many of them were outside that bound."""
    if count <= 0:
        return [], 0, 0
    pool: list[tuple[tuple[int, ...], int]] = []
    seen = 0
    for wl in SIM_WORKLOADS:
        jobs = generate_trace(cluster, WORKLOADS[wl], SIM_LOAD, seed, SIM_WINDOWS)
        run = simulate(cluster, policy, jobs, SIM_WINDOWS, keep=True)
        cross = [(d.residual, jobs[d.job].demand) for d in run.decisions if len(d.placement.alloc) > 1]
        seen += len(cross)
        pool += [(res, demand) for res, demand in cross if _within_oracle(res, demand)]
    rng = np.random.default_rng([seed, 1])
    picks = rng.choice(len(pool), size=min(count, len(pool)), replace=False)
    return [pool[i] for i in sorted(picks)], seen, seen - len(pool)


def _within_oracle(residual: Sequence[int], demand: int) -> bool:
    """The job fits on at most ``MAX_RACKS`` racks (a placed job always fits on some racks)."""
    k = min_racks(residual, demand)
    return k is not None and k <= MAX_RACKS


def replay_ring_choice(counterexample: Record) -> tuple[outcome.Match, list[str]]:
    """Re-run a ring-choice counterexample: (match, report lines
    with RingStitch's candidates, its choice and the proven optimum)."""
    cluster = RackCluster.torus(tuple(counterexample["dims"]), counterexample["capacity"])
    policy = RingStitch(penalty=FragmentationPenalty(counterexample.get("penalty", "linear")))
    res, demand = counterexample["residual"], counterexample["demand"]
    result = _compare(cluster, res, demand, policy, time_limit=60.0)
    lines = [f"torus {cluster.dims}, C={cluster.capacity}, D={demand}, residual={res}"]
    for cand in policy.candidates(cluster, res, demand):
        lines.append(f"  candidate {cand.source}: racks={list(cand.racks)} ring={list(cand.ring)} key={cand.key}")
    if isinstance(result, Miss):
        lines.append(f"  RingStitch: {result.instance['ringstitch']}")
        lines.append(f"  optimum:    {result.instance['optimum']}  (gap per key {result.gap})")
        return outcome.Match.SUBOPTIMAL, lines
    lines.append(f"  status: {result.value}")
    return result, lines
