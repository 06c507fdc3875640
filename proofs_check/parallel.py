"""Scale-out (issue 9): the explorer's BFS partitioned by state owner, and sweeps on an engine.

**Partitioned breadth-first search.** ``workers`` = K shards; a canonical state is owned by shard
``crc32(repr(state)) mod K`` (a stable hash: Python's ``hash`` of strings differs between
processes, which would break ownership on a cluster). Each shard keeps the seen-set and the
frontier of the states it owns. Per BFS level every shard expands its owned frontier, evaluates
the transition probes (event-kind claims, operator failures) where the transition happens, and
routes each successor to its owner (one pickled batch per owner, deduplicated locally first); each
owner then keeps the successors it has not seen, and evaluates the state probes on them. On Dask
the shards send their batches to each other directly (actor to actor); the local backend relays
them through the coordinator's pipes as opaque bytes (never unpickled there). Either way the
coordinator merges only counts and probe results.

**Identical to the serial search.** Every transition gets a *rank*: the path of event indices
(position of the event in ``explorer.successors``'s list) from the root. Within a level, the
serial search handles transitions exactly in lexicographic rank order: its frontier is ordered by
first discovery, i.e. by (parent's position, event index), which by induction is the rank order.
So the partitioned search reproduces it by minima over ranks:

* a new state's parent is its minimum-rank discoverer (the serial first discoverer), so its rank
  is its serial BFS-tree path, and state probes see that transition's event and migrations;
* a probe's finding is its minimum-rank firing in the first level with one: the serial first
  finding. The coordinator rebuilds the trace by replaying the rank's event indices from the
  root — the serial parent-pointer trace, state for state;
* "premise met" counts premises met at ranks ≤ the finding (the serial search stops evaluating a
  decided probe); an exact-solve limit ("unknown") likewise counts only below the finding;
* ``max_states``: the serial search checks the budget before each frontier state. The partitioned
  search expands the whole level, then finds the serial stopping point: the c-th smallest parent
  rank r among the level's new states (c = budget left); the serial run stops at the first
  frontier state ranked after r, so every figure (distinct, generated, refused, pruned, queue
  left) and finding is restricted to parents ranked ≤ r. Figures and verdicts therefore match the
  serial run exactly, also when the budget stops it; the price is that the level at the budget is
  expanded in full (more time and memory than the serial run spends there).
* the deadline (``--time-limit``) is checked by each shard between states; a run cut by time is
  inconclusive in both searches, with figures that depend on timing in both. A counterexample
  found in the level the deadline cut is still a shortest one (all shallower levels are complete)
  but may be a different trace of that length than the serial run would print.

**Backends.** ``local`` (default, standard library only): K forked processes, commands and batches
over pipes. ``dask``: the shards are Dask *actors* pinned one per worker of a Dask distributed
cluster (``--address HOST:PORT`` of a running ``dask scheduler``, or a ``LocalCluster`` of K
worker processes started for the run). Dask rather than Ray: a pure-Python wheel with no runtime
of its own to install, a ``LocalCluster`` of real worker processes on loopback for tests, stateful
actors for the shards and plain futures for sweeps. The package must be importable on the
workers (same environment); functions travel with cloudpickle.

**Sweeps.** :meth:`Engine.starmap` runs independent jobs (the simulators' runs) on the local
process pool or on the Dask cluster, results in input order.
"""
from __future__ import annotations

import pickle
import time
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, Iterator

from oracle.gpu.paper_phi import wcc_holds
from proofs_check.core.engine import Engine
from proofs_check.explorer import (
    Bounds,
    Event,
    Facts,
    Finding,
    PhiUnknown,
    PolicyFactory,
    Probe,
    ProbeOutcome,
    SizeStats,
    _check,
    applies,
    successors,
)

Rank = tuple[int, ...]
def owner(key: Hashable, count: int) -> int:
    """The shard that owns ``key``: a hash that is the same in every process and on every host."""
    return zlib.crc32(repr(key).encode()) % count


@dataclass(frozen=True)
class SearchSpec:
    """What a shard needs to expand states of one exploration (one N)."""

    factory: PolicyFactory
    n: int
    demands: tuple[int, ...]
    bounds: Bounds
    probes: tuple[Probe, ...]
    phi_star: Callable[[tuple, int], int]
    wcc_trajectory: bool
    canon: Callable[[Hashable], Hashable]


class Tally:
    """Per probe, the minimum-rank finding, premise met and solver limit (ranks of one level).

    Each table maps a claim id to (rank, payload): a finding's payload is (numbers, operator
    failure reason or ""), an unknown's its message, a premise's None.
    """

    def __init__(self) -> None:
        self.finding: dict[str, tuple[Rank, tuple[dict[str, Any], str]]] = {}
        self.premise: dict[str, tuple[Rank, None]] = {}
        self.unknown: dict[str, tuple[Rank, str]] = {}

    @staticmethod
    def _lower(table: dict, cid: str, rank: Rank, payload: Any) -> None:
        if cid not in table or rank < table[cid][0]:
            table[cid] = (rank, payload)

    def found(self, cid: str, rank: Rank, numbers: dict[str, Any], failure: str = "") -> None:
        self._lower(self.finding, cid, rank, (numbers, failure))

    def evaluate(self, probes: Iterable[Probe], facts: Facts, ev: Event | None, new: bool, rank: Rank) -> None:
        """The serial ``explorer._check`` with the probe results kept by rank instead of in order."""
        for p in probes:
            if not applies(p, ev, new):
                continue
            cid = p.claim_id
            if p.premise is not None and (cid not in self.premise or rank < self.premise[cid][0]) and p.premise(facts):
                self.premise[cid] = (rank, None)
            try:
                numbers = p.test(facts)
            except PhiUnknown as e:
                self._lower(self.unknown, cid, rank, str(e))
                continue
            if numbers is not None:
                self.found(cid, rank, numbers)

    def merge(self, other: "Tally") -> None:
        for mine, theirs in ((self.finding, other.finding), (self.premise, other.premise),
                             (self.unknown, other.unknown)):
            for cid, (rank, payload) in theirs.items():
                self._lower(mine, cid, rank, payload)

    def upto(self, limit: Rank) -> "Tally":
        """Only what transitions from parents ranked ≤ ``limit`` produced (a budget cut)."""
        out = Tally()
        out.finding, out.premise, out.unknown = ({c: v for c, v in table.items() if v[0][:-1] <= limit}
                                                 for table in (self.finding, self.premise, self.unknown))
        return out


@dataclass
class KeyCounts:
    """What expanding one frontier state produced (kept by the shard for a budget cut)."""

    rank: Rank
    generated: int = 0
    refused: int = 0
    operator_failures: int = 0
    pruned_wcc: int = 0


COUNTS = ("generated", "refused", "operator_failures", "pruned_wcc")


class Shard:
    """The states owned by one worker: its seen-set, its frontier (rank, state), one level's work."""

    def __init__(self, index: int, count: int, spec: SearchSpec) -> None:
        self.index, self.count, self.spec = index, count, spec
        self.proto = spec.factory(spec.n)
        self.seen: set[Hashable] = set()
        self.frontier: list[tuple[Rank, Hashable]] = []
        self.expanded: list[KeyCounts] = []
        self.own: dict[Hashable, tuple] = {}
        self.new_parents: list[Rank] = []
        self.peers: list | None = None  # Dask actor handles of all shards: batches go to them directly
        self.inbox: list[bytes] = []

    def set_peers(self, peers: list) -> None:
        self.peers = peers

    async def receive(self, blob: bytes) -> None:
        """A batch from a peer shard (Dask: awaited on the worker's event loop, so a shard busy in
        ``expand`` can still receive)."""
        self.inbox.append(blob)

    def seed(self, root: Hashable | None) -> None:
        """Own the initial state (``None``: another shard owns it)."""
        if root is not None:
            self.seen.add(root)
            self.frontier = [((), root)]

    def _probes(self, open_ids: list[str], state: bool) -> list[Probe]:
        return [p for p in self.spec.probes if p.claim_id in open_ids and (p.after == "any") == state]

    def expand(self, wall_deadline: float | None, open_ids: list[str]) -> tuple[list[bytes | None], dict]:
        """Expand the owned frontier; returns one pickled batch per other owner and the level report."""
        s = self.spec
        probes = self._probes(open_ids, state=False)
        failure_probes = [p for p in s.probes if p.failure_breaks and p.claim_id in open_ids]
        tally = Tally()
        out: list[dict[Hashable, tuple]] = [{} for _ in range(self.count)]
        self.expanded = []
        timed_out = False
        for path, key in self.frontier:
            if wall_deadline is not None and time.time() > wall_deadline:
                timed_out = True
                break
            kc = KeyCounts(path)
            self.expanded.append(kc)
            for i, (ev, ok, reason, succ, migrations) in enumerate(
                    successors(self.proto, key, s.n, s.demands, s.bounds, s.canon)):
                rank = path + (i,)
                kc.generated += 1
                if not ok:
                    if reason.startswith("operator failure"):
                        kc.operator_failures += 1
                        for p in failure_probes:
                            tally.found(p.claim_id, rank, {"operator failure": reason}, reason)
                    else:
                        kc.refused += 1
                    continue
                facts = Facts(succ, s.n, self.proto.capacity, s.phi_star, ev, migrations)
                if s.wcc_trajectory and not wcc_holds(facts.counts):
                    kc.pruned_wcc += 1
                    continue
                tally.evaluate(probes, facts, ev, False, rank)
                dest = owner(succ, self.count)
                if dest == self.index and succ in self.seen:
                    continue
                box = out[dest]
                prev = box.get(succ)
                if prev is None or rank < prev[0]:
                    box[succ] = (rank, ev, migrations)
        self.own = out[self.index]
        batches = [None if j == self.index or not box else pickle.dumps(list(box.items()), pickle.HIGHEST_PROTOCOL)
                   for j, box in enumerate(out)]
        if self.peers is not None:  # deliver before returning: the level's absorb starts after every expand
            for sent in [self.peers[j].receive(b) for j, b in enumerate(batches) if b is not None]:
                sent.result()
            batches = [None] * self.count
        report = {c: sum(getattr(k, c) for k in self.expanded) for c in COUNTS}
        report.update(tally=tally, timed_out=timed_out, unexpanded=len(self.frontier) - len(self.expanded))
        return batches, report

    def absorb(self, batches: list[bytes | None], open_ids: list[str]) -> dict:
        """Keep the unseen successors routed here (minimum-rank discoverer each); state probes."""
        s = self.spec
        best = self.own
        for blob in batches + self.inbox:
            for succ, cand in pickle.loads(blob) if blob else ():
                prev = best.get(succ)
                if prev is None or cand[0] < prev[0]:
                    best[succ] = cand
        probes = self._probes(open_ids, state=True)
        tally = Tally()
        frontier = []
        for succ, (rank, ev, migrations) in best.items():
            if succ in self.seen:
                continue
            self.seen.add(succ)
            frontier.append((rank, succ))
            tally.evaluate(probes, Facts(succ, s.n, self.proto.capacity, s.phi_star, ev, migrations), ev, True, rank)
        self.own, self.inbox = {}, []
        self.frontier = frontier
        self.new_parents = sorted(r[:-1] for r, _ in frontier)
        return {"new": len(frontier), "tally": tally}

    def smallest_parents(self, c: int) -> list[Rank]:
        """The parent ranks of this level's ``c`` first new states (serial order)."""
        return self.new_parents[:c]

    def upto(self, limit: Rank) -> dict:
        """This level's figures restricted to frontier states ranked ≤ ``limit``."""
        done = [k for k in self.expanded if k.rank <= limit]
        out = {c: sum(getattr(k, c) for k in done) for c in COUNTS}
        out.update(new=sum(1 for r in self.new_parents if r <= limit), after=len(self.expanded) - len(done))
        return out


# --------------------------------------------------------------------------- the coordinator
def explore_size(engine: Engine, factory, n, demands, bounds, probes, outcomes, phi_star, wcc_trajectory,
                 deadline, progress, label, canon) -> SizeStats:
    """``explorer._explore_size`` on ``engine``'s shards: the same figures and findings."""
    t0 = time.perf_counter()
    stats = SizeStats(n)
    proto = factory(n)
    root = canon(proto.state_key())
    stats.distinct = 1
    _check(Facts(root, n, proto.capacity, phi_star), None, root, None, probes, outcomes, {root: None}, n, True)
    spec = SearchSpec(factory, n, demands, bounds, tuple(probes), phi_star, wcc_trajectory, canon)
    pool = engine.pool(Shard, spec)
    k = engine.workers
    try:
        pool.call("seed", [(root,) if owner(root, k) == i else (None,) for i in range(k)])
        frontier, depth = 1, 0
        while frontier:
            if depth >= bounds.depth:
                stats.at_depth_bound = frontier
                break
            now = time.perf_counter()
            left = bounds.max_states - stats.distinct
            if (deadline is not None and now > deadline) or left <= 0:
                _stop(stats, "time limit" if deadline is not None and now > deadline else
                      f"max-states {bounds.max_states}", frontier)
                break
            open_ids = [p.claim_id for p in probes if outcomes[p.claim_id].finding is None]
            wall = None if deadline is None else time.time() + (deadline - now)
            expanded = pool.call("expand", [(wall, open_ids)] * k)
            absorbed = pool.call("absorb", [([b[j] for b, _ in expanded], open_ids) for j in range(k)])
            reports = [r for _, r in expanded]
            tally = Tally()
            for r in reports + absorbed:
                tally.merge(r["tally"])
            new = sum(a["new"] for a in absorbed)
            cut = _budget_cut(pool, k, left) if new >= left and not any(r["timed_out"] for r in reports) else None
            if cut is not None:
                limit, figures = cut
                _add(stats, figures)
                stats.distinct += figures["new"]
                _apply(tally.upto(limit), probes, outcomes, spec, root)
                _stop(stats, f"max-states {bounds.max_states}", figures["after"] + figures["new"])
                break
            _add(stats, {c: sum(r[c] for r in reports) for c in COUNTS})
            stats.distinct += new
            _apply(tally, probes, outcomes, spec, root)
            if any(r["timed_out"] for r in reports):
                _stop(stats, "time limit", sum(r["unexpanded"] for r in reports) + new)
                break
            if new:
                depth += 1
                stats.depth_reached = depth
            frontier = new
            if progress is not None and new:
                elapsed = time.perf_counter() - t0
                progress(f"[{label} N={n}] level {depth}: {stats.distinct:,} distinct, {stats.generated:,} generated, "
                         f"{new:,} new, {stats.distinct / elapsed:,.0f} distinct/s")
            if all(outcomes[p.claim_id].finding is not None for p in probes):
                stats.stop_reason = "every probe decided"
                stats.queue_left = frontier
                break
    finally:
        pool.close()
    stats.seconds = time.perf_counter() - t0
    if progress is not None:
        progress(f"[{label} N={n}] done ({engine.workers} {engine.backend} shards): {stats.distinct} distinct, "
                 f"{stats.generated} generated, depth {stats.depth_reached}, {stats.seconds:.1f}s "
                 f"({stats.rate:,.0f} distinct/s)")
    return stats


def _stop(stats: SizeStats, reason: str, queue_left: int) -> None:
    stats.complete = False
    stats.stop_reason = reason
    stats.queue_left = queue_left


def _add(stats: SizeStats, figures: dict) -> None:
    for c in COUNTS:
        setattr(stats, c, getattr(stats, c) + figures[c])


def _budget_cut(pool, k: int, left: int) -> tuple[Rank, dict] | None:
    """Where the serial search would stop in this level, and its figures up to there (or None when
    it completes the level: the budget then stops it before the next level, as here)."""
    firsts = sorted(r for part in pool.call("smallest_parents", [(left,)] * k) for r in part)
    limit = firsts[left - 1]
    parts = pool.call("upto", [(limit,)] * k)
    figures = {c: sum(p[c] for p in parts) for c in COUNTS + ("new", "after")}
    return (limit, figures) if figures["after"] else None


def _apply(tally: Tally, probes: list[Probe], outcomes: dict[str, ProbeOutcome], spec: SearchSpec,
           root: Hashable) -> None:
    """Merge one level's results into the outcomes as the serial search would have left them."""
    for p in probes:
        out = outcomes[p.claim_id]
        if out.finding is not None:
            continue
        found = tally.finding.get(p.claim_id)
        bound = found[0] if found else None
        premise = tally.premise.get(p.claim_id)
        if premise is not None and (bound is None or premise[0] <= bound):
            out.premise_met = True
        unknown = tally.unknown.get(p.claim_id)
        if unknown is not None and not out.unknown and (bound is None or unknown[0] < bound):
            out.unknown = unknown[1]
        if found is not None:
            out.finding = replay_rank(spec, root, found[0], *found[1])


def replay_rank(spec: SearchSpec, root: Hashable, rank: Rank, numbers: dict, failure: str) -> Finding:
    """The finding's trace: the events at the rank's indices from the root, and the states after them
    (for an operator failure the last state is the one the failing event left unchanged)."""
    proto = spec.factory(spec.n)
    key = root
    events: list[Event] = []
    states: list[Hashable] = []
    for i in rank:
        ev, ok, _, succ, _ = successors(proto, key, spec.n, spec.demands, spec.bounds, spec.canon)[i]
        events.append(ev)
        key = succ if ok else key
        states.append(key)
    return Finding(spec.n, events, states, numbers, failure)
