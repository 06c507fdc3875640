"""Claims ``ring-exact`` and ``ring-choice`` about RingStitch (seed 004, §IV-C).

ring-exact — RingStitch's ring order (heuristics/rack/ring_order.py) is a minimum closed tour for every
rack set of ≤ 8 racks. Checked against Held–Karp (oracle/rack/ring_tour.py, an independent DP):
exhaustively over every rack set of the small tori in ``exhaustive_dims``, and on ``samples``
random rack sets of the paper's torus. Beyond 8 racks the paper uses nearest neighbour; the worst
nearest-neighbour / optimal ratio found on ``nn_samples`` sets of 9–12 racks is reported as a
figure (``stats['nn_worst_ratio']``), not judged.

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
"""
from __future__ import annotations

import itertools
from enum import Enum
from typing import Any, Callable, Sequence

import numpy as np

from heuristics.rack.ocs_sim import WORKLOADS, Windows, generate_trace, simulate
from heuristics.rack.racks import FragmentationPenalty, RackCluster, PAPER_DIMS, PAPER_CAPACITY
from heuristics.rack.ring_order import EXACT_LIMIT, ring_order
from heuristics.rack.ringstitch import RingStitch
from oracle.rack.rack_subset import MAX_RACKS, lex_optimal_subset, min_racks
from oracle.rack.ring_tour import held_karp
from proofs_check.core.claim import ClaimDoc
from proofs_check.core.trace import Record, envelope
from proofs_check.core.verdict import ClaimResult, Verdict

Progress = Callable[[str], None] | None


def _say(progress: Progress, msg: str) -> None:
    if progress is not None:
        progress(msg)


def check_ring_exact(seed: int = 0, samples: int = 300, nn_samples: int = 200,
                     exhaustive_dims: Sequence[tuple[int, int, int]] = ((2, 2, 2), (1, 3, 3)),
                     progress: Progress = None) -> list[ClaimResult]:
    rng = np.random.default_rng(seed)
    checked, counterexample = 0, None

    def check(dims, racks) -> None:
        nonlocal checked, counterexample
        dist = RackCluster.torus(dims).dist
        _, cost = ring_order(racks, dist)
        opt, _ = held_karp(dist[np.ix_(racks, racks)])
        checked += 1
        if cost != opt:
            ce = {**envelope("ring-order", "ring-exact"), "dims": list(dims), "racks": [int(r) for r in racks],
                  "ring_cost": int(cost), "optimum": int(opt)}
            if counterexample is None or len(racks) < len(counterexample["racks"]):
                counterexample = ce

    for dims in exhaustive_dims:
        n = int(np.prod(dims))
        for k in range(1, min(EXACT_LIMIT, n) + 1):
            for racks in itertools.combinations(range(n), k):
                check(dims, list(racks))
        _say(progress, f"ring-exact: all rack sets of torus {dims} checked ({checked} so far)")
    paper = RackCluster.torus(PAPER_DIMS)
    for _ in range(samples):
        k = int(rng.integers(2, EXACT_LIMIT + 1))
        check(PAPER_DIMS, [int(r) for r in rng.choice(paper.n, size=k, replace=False)])
    _say(progress, f"ring-exact: {samples} sampled sets on {PAPER_DIMS} checked")

    worst = (1.0, None)
    for i in range(nn_samples):
        k = int(rng.integers(EXACT_LIMIT + 1, 13))
        racks = _sample_set(paper, k, rng, compact=bool(i % 2))
        _, nn = ring_order(racks, paper.dist)
        opt, _ = held_karp(paper.dist[np.ix_(racks, racks)])
        if nn / opt > worst[0]:
            worst = (nn / opt, {"dims": list(PAPER_DIMS), "racks": racks, "nn_cost": int(nn), "optimum": int(opt)})
    _say(progress, f"ring-exact: {nn_samples} sets of 9–12 racks, worst NN/optimal {worst[0]:.3f}")

    bounds = {"exhaustive_dims": [list(d) for d in exhaustive_dims], "max_racks_exact": EXACT_LIMIT,
              "samples": samples, "sample_dims": list(PAPER_DIMS), "nn_samples": nn_samples,
              "nn_racks": [EXACT_LIMIT + 1, 12], "seed": seed}
    stats = {"rack_sets_checked": checked, "nn_worst_ratio": round(worst[0], 4), "nn_worst_instance": worst[1]}
    if counterexample is not None:
        return [ClaimResult("ring-exact", Verdict.VIOLATED,
                            f"ring order not optimal on {counterexample['racks']}", bounds, stats, counterexample)]
    return [ClaimResult("ring-exact", Verdict.HOLDS,
                        f"ring order optimal on all {checked} rack sets of ≤ {EXACT_LIMIT} racks; "
                        f"worst nearest-neighbour/optimal for 9–12 racks: {worst[0]:.3f}", bounds, stats)]


def _sample_set(cluster: RackCluster, k: int, rng: np.random.Generator, compact: bool) -> list[int]:
    """k random racks; ``compact`` grows the set from a seed by random nearby racks (the shape a
    locality-aware selector produces), else uniform over the torus."""
    if not compact:
        return sorted(int(r) for r in rng.choice(cluster.n, size=k, replace=False))
    chosen = [int(rng.integers(cluster.n))]
    while len(chosen) < k:
        near = cluster.dist[chosen].min(axis=0)
        pool = np.flatnonzero((near > 0) & (near <= 2))
        chosen.append(int(rng.choice(pool)))
    return sorted(chosen)


def _instance_size(ce: dict) -> tuple[int, int, int]:
    return (len(ce["residual"]), sum(ce["residual"]), ce["demand"])


class Match(Enum):
    """How RingStitch's decision compares with the proven optimum on one instance."""

    OPTIMAL = "optimal"
    SUBOPTIMAL = "suboptimal"
    UNDECIDED = "unknown"  # the exact oracle hit its time limit


def _compare(cluster: RackCluster, residual: Sequence[int], demand: int, policy: RingStitch,
             time_limit: float) -> tuple[Match, dict | None, tuple | None]:
    """(match, instance record, gap per key)."""
    table = policy.penalty.table(cluster.capacity)
    p = policy.place(cluster, residual, demand)
    cert = lex_optimal_subset(residual, demand, cluster.dist, table, time_limit=time_limit)
    if not cert.is_proven:  # the time limit was hit: feasible or unknown
        return Match.UNDECIDED, None, None
    if cert.objective is None or p is None:
        raise AssertionError(f"stitching-regime instance {residual}, D={demand}: oracle {cert.status}, "
                             f"RingStitch {'deferred' if p is None else 'placed'}")
    mine, opt = p.key, (cert.objective[0], cert.objective[1], round(cert.objective[2], 9))
    if mine <= opt:
        if mine < opt:
            raise AssertionError(f"RingStitch {mine} beats the proven optimum {opt} on {residual}, D={demand}")
        return Match.OPTIMAL, None, None
    record = {"dims": list(cluster.dims), "capacity": cluster.capacity, "residual": [int(r) for r in residual],
              "demand": int(demand), "penalty": policy.penalty.name,
              "ringstitch": {"key": list(mine), "alloc": [list(a) for a in p.alloc], "ring": list(p.ring),
                             "generator": p.source},
              "optimum": {"key": list(opt), "alloc": [list(a) for a in cert.witness.alloc],
                          "ring": list(cert.witness.ring)}}
    return Match.SUBOPTIMAL, record, tuple(m - o for m, o in zip(mine, opt))


def _stitch_demands(residual: Sequence[int]) -> range:
    """Demands in the stitching regime: no rack fits, the aggregate does."""
    return range(max(residual) + 1, sum(residual) + 1)


def check_ring_choice(seed: int = 0, samples: int = 200, sim_samples: int = 100, penalty: str = "linear",
                      policy: RingStitch | None = None,
                      exhaustive: Sequence[tuple[tuple[int, int, int], int]] = (((1, 2, 2), 4), ((1, 2, 3), 3),
                                                                  ((2, 2, 2), 1), ((1, 3, 3), 1)),
                      max_racks_sampled: int = 6, time_limit: float = 10.0,
                      progress: Progress = None) -> list[ClaimResult]:
    """``policy`` overrides the RingStitch configuration (its penalty then wins over ``penalty``)."""
    policy = policy or RingStitch(penalty=FragmentationPenalty(penalty))
    tally = _Tally()
    for dims, cap in exhaustive:
        cluster = RackCluster.torus(dims, capacity=cap)
        for res in itertools.product(range(cap + 1), repeat=cluster.n):
            for demand in _stitch_demands(res):
                tally.add("exhaustive", *_compare(cluster, res, demand, policy, time_limit))
        _say(progress, f"ring-choice: torus {dims} C={cap} exhaustive done ({tally.total} instances)")
    rng = np.random.default_rng(seed)
    paper = RackCluster.torus(PAPER_DIMS, PAPER_CAPACITY)
    for i in range(samples):
        res, demand = _sample_instance(paper, rng, max_racks_sampled)
        tally.add("sampled", *_compare(paper, res, demand, policy, time_limit))
        if (i + 1) % 50 == 0:
            _say(progress, f"ring-choice: {i + 1}/{samples} sampled instances on {PAPER_DIMS}")
    simulated, sim_seen, sim_outside = _simulated_instances(paper, policy, sim_samples, seed)
    for res, demand in simulated:
        tally.add("simulated", *_compare(paper, list(res), demand, policy, time_limit))
    _say(progress, f"ring-choice: {sim_samples} stitching decisions from simulated runs checked")
    bounds = {"exhaustive": [{"dims": list(d), "capacity": c} for d, c in exhaustive],
              "regime": "max residual < D <= aggregate residual",
              "samples": samples, "sample_dims": list(PAPER_DIMS), "sample_capacity": PAPER_CAPACITY,
              "max_racks_sampled": max_racks_sampled, "sim_samples": sim_samples,
              "sim_max_racks": MAX_RACKS,
              "sim_runs": [f"workload {w}, load {SIM_LOAD}, {SIM_WINDOWS}" for w in SIM_WORKLOADS], "penalty": policy.penalty.name,
              "generators": list(policy.generators), "time_limit": time_limit,
              "seed": seed}
    stats = tally.stats() | {"sim_cross_rack_decisions": sim_seen, "sim_outside_bounds": sim_outside}
    if tally.unknown:
        return [ClaimResult("ring-choice", Verdict.INCONCLUSIVE,
                            f"{tally.unknown} oracle solves ended unknown (time limit {time_limit} s)",
                            bounds, stats)]
    if tally.smallest is not None:
        return [ClaimResult("ring-choice", Verdict.VIOLATED,
                            f"RingStitch's set is not lexicographically optimal on {tally.suboptimal} of "
                            f"{tally.total} instances ({stats['by_key']})", bounds, stats,
                            envelope("ring-choice", "ring-choice") | tally.smallest
                            | {"smallest_per_key": tally.smallest_by_key})]
    return [ClaimResult("ring-choice", Verdict.HOLDS,
                        f"RingStitch's set is lexicographically optimal on all {tally.total} instances",
                        bounds, stats)]


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


KEYS = ("racks", "ring_cost", "fragmentation")


SIM_WORKLOADS, SIM_LOAD, SIM_WINDOWS = ("B", "C", "D"), 0.95, Windows(10.0, 40.0, 0.0)


def _simulated_instances(cluster: RackCluster, policy: RingStitch, count: int,
                         seed: int) -> tuple[list[tuple[tuple[int, ...], int]], int, int]:
    """``count`` cross-rack decisions drawn uniformly from RingStitch's own runs of workloads
    B, C, D at 95 % load — the residual states the scheduler actually meets — among those whose
    job needs at most ``MAX_RACKS`` racks (the oracle's range). Also returns the number of
    cross-rack decisions seen and how many of them were outside that bound."""
    if count <= 0:
        return [], 0, 0
    pool, seen = [], 0
    for wl in SIM_WORKLOADS:
        jobs = generate_trace(cluster, WORKLOADS[wl], SIM_LOAD, seed, SIM_WINDOWS)
        run = simulate(cluster, policy, jobs, SIM_WINDOWS, keep=True)
        cross = [(d.residual, jobs[d.job].demand) for d in run.decisions if len(d.placement.alloc) > 1]
        seen += len(cross)
        pool += [(res, demand) for res, demand in cross if min_racks(res, demand) <= MAX_RACKS]
    rng = np.random.default_rng([seed, 1])
    picks = rng.choice(len(pool), size=min(count, len(pool)), replace=False)
    return [pool[i] for i in sorted(picks)], seen, seen - len(pool)


class _Tally:
    """Per-source, per-key counts and worst gaps; keeps the smallest violating instance."""

    def __init__(self) -> None:
        self.total = self.suboptimal = self.unknown = 0
        self.sources = {src: {"instances": 0, "suboptimal": 0, "by_key": {k: [0, 0.0, 0.0] for k in KEYS}}
                        for src in ("exhaustive", "sampled", "simulated")}
        self.smallest: dict | None = None
        self.smallest_by_key: dict[str, dict] = {}

    def add(self, source: str, status: Match, record: dict | None, gap: tuple | None) -> None:
        self.total += 1
        src = self.sources[source]
        src["instances"] += 1
        if status is Match.UNDECIDED:
            self.unknown += 1
        elif status is Match.SUBOPTIMAL:
            self.suboptimal += 1
            src["suboptimal"] += 1
            level = next(i for i, g in enumerate(gap) if g != 0)
            entry = src["by_key"][KEYS[level]]
            entry[0] += 1
            entry[1] = max(entry[1], gap[level])
            entry[2] += gap[level]
            if self.smallest is None or _instance_size(record) < _instance_size(self.smallest):
                self.smallest = record
            held = self.smallest_by_key.get(KEYS[level])
            if held is None or _instance_size(record) < _instance_size(held):
                self.smallest_by_key[KEYS[level]] = record

    def stats(self) -> dict[str, Any]:
        def keyed(by_key):
            return {k: {"worse": v[0], "max_gap": round(float(v[1]), 6),
                        "mean_gap": round(v[2] / v[0], 6) if v[0] else 0.0} for k, v in by_key.items()}

        merged = {k: [sum(s["by_key"][k][0] for s in self.sources.values()),
                      max(s["by_key"][k][1] for s in self.sources.values()),
                      sum(s["by_key"][k][2] for s in self.sources.values())] for k in KEYS}
        return {"instances": self.total, "suboptimal": self.suboptimal,
                "suboptimal_rate": round(self.suboptimal / self.total, 6) if self.total else 0.0,
                "unknown": self.unknown, "by_key": keyed(merged),
                "by_source": {name: {"instances": s["instances"], "suboptimal": s["suboptimal"],
                                     "by_key": keyed(s["by_key"])} for name, s in self.sources.items()}}


def replay_ring_choice(counterexample: dict) -> tuple[Match, list[str]]:
    """Re-run a ring-choice counterexample: (match, report lines
    with RingStitch's candidates, its choice and the proven optimum)."""
    cluster = RackCluster.torus(tuple(counterexample["dims"]), counterexample["capacity"])
    policy = RingStitch(penalty=FragmentationPenalty(counterexample.get("penalty", "linear")))
    res, demand = counterexample["residual"], counterexample["demand"]
    status, record, gap = _compare(cluster, res, demand, policy, time_limit=60.0)
    lines = [f"torus {cluster.dims}, C={cluster.capacity}, D={demand}, residual={res}"]
    for cand in policy.candidates(cluster, res, demand):
        lines.append(f"  candidate {cand.source}: racks={list(cand.racks)} ring={list(cand.ring)} key={cand.key}")
    if record is None:
        lines.append(f"  status: {status.value}")
    else:
        lines.append(f"  RingStitch: {record['ringstitch']}")
        lines.append(f"  optimum:    {record['optimum']}  (gap per key {gap})")
    return status, lines


def replay_ring_exact(counterexample: Record) -> tuple[Match, list[str]]:
    """Re-run a ring-exact counterexample: (match, report lines)."""
    dims, racks = tuple(counterexample["dims"]), [int(r) for r in counterexample["racks"]]
    dist = RackCluster.torus(dims).dist
    order, cost = ring_order(racks, dist)
    opt, _ = held_karp(dist[np.ix_(racks, racks)])
    lines = [f"torus {dims}, racks {racks}: ring order {list(order)} costs {cost}, minimum tour {opt}"]
    return (Match.OPTIMAL if cost == opt else Match.SUBOPTIMAL), lines


_SMALL = "small instances"
RING_CLAIMS: tuple[ClaimDoc, ...] = (
    ClaimDoc("ring-exact", "RingStitch ring order (seed 004)", "≤ 8 racks",
             "the ring order is optimal (9–12 racks: worst nearest-neighbour/optimal ratio reported)",
             "RingStitch (proofs_check.rack.ring_claims)"),
    ClaimDoc("ring-choice", "RingStitch rack choice (seed 004)", _SMALL,
             "distance of the chosen rack set from the lexicographic optimum (racks, ring cost, fragmentation)",
             "RingStitch (proofs_check.rack.ring_claims)"),
)
CHECKS: dict[str, Callable[..., list[ClaimResult]]] = {"ring-exact": check_ring_exact, "ring-choice": check_ring_choice}
REPLAYS: dict[str, Callable[[Record], tuple[Match, list[str]]]] = {
    "ring-exact": replay_ring_exact, "ring-choice": replay_ring_choice}


def replay_ring(rec: Record) -> tuple[ClaimResult, list[str]]:
    """Re-run a RingStitch record by re-solving the instance exactly: 'suboptimal' reproduces the
    violation, 'optimal' means it no longer does."""
    cid = rec["claim"]
    status, shown = REPLAYS[cid](rec)
    lines = [f"replay {cid}"] + list(shown)
    b = {"record": "ring"}
    if status is Match.SUBOPTIMAL:
        return ClaimResult(cid, Verdict.VIOLATED, "reproduced", b, counterexample=rec), lines
    if status is Match.OPTIMAL:
        return ClaimResult(cid, Verdict.HOLDS, "no longer reproduces (RingStitch now picks the optimum)", b), lines
    return ClaimResult(cid, Verdict.INCONCLUSIVE, "the exact oracle did not finish (time limit)", b), lines
