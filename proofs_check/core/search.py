"""The one breadth-first search (TLC-style) over any :class:`~proofs_check.core.model.StateModel`.

For every model of a size sequence (e.g. N = 1..6 nodes) the search starts from the model's
initial states and applies every allowed action to every reached state, level by level, up to
``depth`` actions. States are stored as their symmetry representatives. It reports what TLC
reports: states generated, distinct states, depth reached, states at the depth bound, queue left.

**One code path, K shards.** A representative is owned by shard ``crc32(repr(state)) mod K`` (a
hash that is the same in every process and on every host). Each shard keeps the seen-set and
frontier of the states it owns. Per level every shard expands its owned frontier, evaluates the
transition properties and operator failures where the transition happens, and routes each
successor to its owner; owners keep the successors they have not seen and evaluate the state
properties on them. K = 1 runs in this process (serial); K > 1 runs on forked processes or Dask
actors (``proofs_check.core.engine``) with exactly the same results.

**Deterministic order.** Every transition has a *rank*: the path of action indices (positions in
``model.actions(state)``) from the initial state. Processing a level in rank order is the serial
breadth-first order, so:

* a new state's parent is its minimum-rank discoverer, and state properties see that transition;
* a property's finding is its minimum-rank firing in the first level with one — a shortest trace,
  at the smallest size where one exists (sizes grow outermost). The trace is rebuilt by replaying
  the rank's action indices from the initial state;
* "premise met" and "undecided" count only ranks ≤ the finding (a decided property is no longer
  evaluated in rank order);
* ``max_states``: after a level is expanded, the budget cut is placed where a rank-order search
  would have stopped — at the c-th smallest parent rank among the level's new states (c = budget
  left) — and every figure and finding is restricted to parents ranked ≤ that point.

A budget (``max_states`` distinct states per size, or the deadline) hit before the bounds are
covered makes the exploration incomplete: nothing that was not found may then be called "holds".
"""
from __future__ import annotations

import pickle
import sys
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Hashable, Iterable, Sequence

from proofs_check.core.engine import SERIAL, Engine, Pool
from proofs_check.core.model import A, Numbers, On, Outcome, Property, S, StateModel, Step, Undecided, failure_numbers

Rank = tuple[int, ...]
Progress = Callable[[str], None]
COUNTS = ("generated", "refused", "failures", "pruned")


def stderr_progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def owner(state: Hashable, count: int) -> int:
    """The shard that owns ``state``: a hash that is the same in every process and on every host."""
    return zlib.crc32(repr(state).encode()) % count


@dataclass(frozen=True)
class Limits:
    """The search's own bounds (the model's actions carry the rest)."""

    depth: int
    max_states: int  # distinct states per size; more → incomplete


@dataclass
class Finding(Generic[S, A]):
    """The first step where a property fired, with its shortest trace from the initial state."""

    size: int
    actions: list[A]
    states: list[S]  # the representative after each action (unchanged after a failed one)
    numbers: Numbers
    failure: str = ""  # the system's reason when the last action failed


@dataclass
class PropertyOutcome(Generic[S, A]):
    finding: Finding[S, A] | None = None
    premise_met: bool = False
    undecided: str = ""  # a test could not decide (solver limit)


@dataclass
class SizeStats:
    """TLC-style figures of one size's exploration."""

    size: int
    generated: int = 0
    distinct: int = 0
    refused: int = 0  # actions the system did not admit (state unchanged)
    failures: int = 0  # operator failures
    pruned: int = 0  # successors outside the premise filter (``model.within``)
    depth_reached: int = 0
    at_depth_bound: int = 0  # states not expanded because they sit at the depth bound
    queue_left: int = 0  # states still queued when a budget stopped the search
    seconds: float = 0.0
    complete: bool = True
    stop_reason: str = ""

    @property
    def rate(self) -> float:
        return self.distinct / self.seconds if self.seconds > 0 else float("inf")


@dataclass
class Exploration(Generic[S, A]):
    sizes: list[SizeStats] = field(default_factory=list)
    outcomes: dict[str, PropertyOutcome[S, A]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return all(s.complete for s in self.sizes)


# --------------------------------------------------------------------------- per-level results by rank
class Tally:
    """Per property, the minimum-rank finding, premise met and undecided test of one level.

    Each table maps a property name to (rank, payload): a finding's payload is (numbers, failure
    reason or ""), an undecided test's its message, a premise's None.
    """

    def __init__(self) -> None:
        self.finding: dict[str, tuple[Rank, tuple[Numbers, str]]] = {}
        self.premise: dict[str, tuple[Rank, None]] = {}
        self.undecided: dict[str, tuple[Rank, str]] = {}

    @staticmethod
    def _lower(table: dict[str, Any], name: str, rank: Rank, payload: Any) -> None:
        if name not in table or rank < table[name][0]:
            table[name] = (rank, payload)

    def found(self, name: str, rank: Rank, numbers: Numbers, failure: str = "") -> None:
        self._lower(self.finding, name, rank, (numbers, failure))

    def evaluate(self, props: Iterable[Property[Any, Any]], st: Step[Any, Any], new: bool, rank: Rank) -> None:
        for p in props:
            if not p.applies(st, new):
                continue
            if p.premise is not None and (p.name not in self.premise or rank < self.premise[p.name][0]) \
                    and p.premise(st):
                self.premise[p.name] = (rank, None)
            try:
                numbers = p.test(st)
            except Undecided as e:
                self._lower(self.undecided, p.name, rank, str(e))
                continue
            if numbers is not None:
                self.found(p.name, rank, numbers)

    def merge(self, other: "Tally") -> None:
        for mine, theirs in ((self.finding, other.finding), (self.premise, other.premise),
                             (self.undecided, other.undecided)):
            for name, (rank, payload) in theirs.items():
                self._lower(mine, name, rank, payload)

    def upto(self, limit: Rank) -> "Tally":
        """Only what transitions from parents ranked ≤ ``limit`` produced (a budget cut)."""
        out = Tally()
        out.finding = {c: v for c, v in self.finding.items() if v[0][:-1] <= limit}
        out.premise = {c: v for c, v in self.premise.items() if v[0][:-1] <= limit}
        out.undecided = {c: v for c, v in self.undecided.items() if v[0][:-1] <= limit}
        return out


@dataclass
class _Expanded:
    """What expanding one frontier state produced (kept by the shard for a budget cut)."""

    rank: Rank
    generated: int = 0
    refused: int = 0
    failures: int = 0
    pruned: int = 0


@dataclass(frozen=True)
class _Spec(Generic[S, A]):
    model: StateModel[S, A]
    properties: tuple[Property[S, A], ...]


class Shard(Generic[S, A]):
    """The states owned by one worker: its seen-set, its frontier (rank, state), one level's work."""

    def __init__(self, index: int, count: int, spec: _Spec[S, A]) -> None:
        self.index, self.count, self.spec = index, count, spec
        self.seen: set[S] = set()
        self.frontier: list[tuple[Rank, S]] = []
        self.expanded: list[_Expanded] = []
        self.own: dict[S, tuple[Rank, Step[S, A]]] = {}
        self.new_parents: list[Rank] = []
        self.peers: list[Any] | None = None  # Dask actor handles: batches go to peers directly
        self.inbox: list[bytes] = []

    def set_peers(self, peers: list[Any]) -> None:
        self.peers = peers

    async def receive(self, blob: bytes) -> None:
        """A batch from a peer shard (Dask: awaited on the worker's event loop, so a shard busy in
        ``expand`` can still receive)."""
        self.inbox.append(blob)

    def seed(self, roots: list[tuple[Rank, S]]) -> None:
        """Own these initial states."""
        self.seen.update(s for _, s in roots)
        self.frontier = list(roots)

    def _props(self, open_names: list[str], on: On) -> list[Property[S, A]]:
        return [p for p in self.spec.properties if p.name in open_names and p.on is on]

    def expand(self, wall_deadline: float | None, open_names: list[str]) -> tuple[list[bytes | None], dict[str, Any]]:
        """Expand the owned frontier; returns one pickled batch per other owner and the level report."""
        model = self.spec.model
        props = self._props(open_names, On.TRANSITION)
        failure_props = [p for p in self.spec.properties if p.failure_breaks and p.name in open_names]
        tally = Tally()
        out: list[dict[S, tuple[Rank, Step[S, A]]]] = [{} for _ in range(self.count)]
        self.expanded = []
        timed_out = False
        for path, state in self.frontier:
            if wall_deadline is not None and time.time() > wall_deadline:
                timed_out = True
                break
            ex = _Expanded(path)
            self.expanded.append(ex)
            for i, action in enumerate(model.actions(state)):
                rank = path + (i,)
                ex.generated += 1
                st = model.step(state, action)
                if st.outcome is Outcome.REFUSED:
                    ex.refused += 1
                    continue
                if st.outcome is Outcome.FAILED:
                    ex.failures += 1
                    for p in failure_props:
                        tally.found(p.name, rank, failure_numbers(st.reason), st.reason)
                    continue
                st = _represented(model, st)
                if not model.within(st):
                    ex.pruned += 1
                    continue
                tally.evaluate(props, st, False, rank)
                dest = owner(st.state, self.count)
                if dest == self.index and st.state in self.seen:
                    continue
                box = out[dest]
                prev = box.get(st.state)
                if prev is None or rank < prev[0]:
                    box[st.state] = (rank, st)
        self.own = out[self.index]
        batches: list[bytes | None] = [
            None if j == self.index or not box else pickle.dumps(list(box.items()), pickle.HIGHEST_PROTOCOL)
            for j, box in enumerate(out)]
        if self.peers is not None:  # deliver before returning: the level's absorb starts after every expand
            for sent in [self.peers[j].receive(b) for j, b in enumerate(batches) if b is not None]:
                sent.result()
            batches = [None] * self.count
        report: dict[str, Any] = {c: sum(getattr(e, c) for e in self.expanded) for c in COUNTS}
        report.update(tally=tally, timed_out=timed_out, unexpanded=len(self.frontier) - len(self.expanded))
        return batches, report

    def absorb(self, batches: list[bytes | None], open_names: list[str]) -> dict[str, Any]:
        """Keep the unseen successors routed here (minimum-rank discoverer each); state properties."""
        best = self.own
        for blob in batches + self.inbox:
            for state, cand in pickle.loads(blob) if blob else ():
                prev = best.get(state)
                if prev is None or cand[0] < prev[0]:
                    best[state] = cand
        props = self._props(open_names, On.STATE)
        tally = Tally()
        frontier = []
        for state, (rank, st) in best.items():
            if state in self.seen:
                continue
            self.seen.add(state)
            frontier.append((rank, state))
            tally.evaluate(props, st, True, rank)
        self.own, self.inbox = {}, []
        self.frontier = frontier
        self.new_parents = sorted(r[:-1] for r, _ in frontier)
        return {"new": len(frontier), "tally": tally}

    def smallest_parents(self, c: int) -> list[Rank]:
        """The parent ranks of this level's ``c`` first new states (rank order)."""
        return self.new_parents[:c]

    def upto(self, limit: Rank) -> dict[str, int]:
        """This level's figures restricted to frontier states ranked ≤ ``limit``."""
        done = [e for e in self.expanded if e.rank <= limit]
        out = {c: sum(getattr(e, c) for e in done) for c in COUNTS}
        out.update(new=sum(1 for r in self.new_parents if r <= limit), after=len(self.expanded) - len(done))
        return out


def _represented(model: StateModel[S, A], st: Step[S, A]) -> Step[S, A]:
    return Step(st.prev, st.action, st.outcome, model.representative(st.state), st.detail, st.reason)


# --------------------------------------------------------------------------- the coordinator
def explore(models: Iterable[StateModel[S, A]], properties: Sequence[Property[S, A]], limits: Limits,
            engine: Engine = SERIAL, deadline: float | None = None, progress: Progress | None = None,
            label: str = "") -> Exploration[S, A]:
    """Explore each model in turn (sizes grow); stop once every property has a finding, or when a
    size's exploration is incomplete (a budget hit: larger sizes would not be covered either)."""
    result: Exploration[S, A] = Exploration(outcomes={p.name: PropertyOutcome() for p in properties})
    for model in models:
        open_props = [p for p in properties if result.outcomes[p.name].finding is None]
        if not open_props:
            break
        stats = _explore_size(model, open_props, result.outcomes, limits, engine, deadline, progress, label)
        result.sizes.append(stats)
        if not stats.complete:
            break
    return result


def _explore_size(model: StateModel[S, A], props: list[Property[S, A]], outcomes: dict[str, PropertyOutcome[S, A]],
                  limits: Limits, engine: Engine, deadline: float | None, progress: Progress | None,
                  label: str) -> SizeStats:
    t0 = time.perf_counter()
    stats = SizeStats(model.size)
    roots = _roots(model)
    stats.distinct = len(roots)
    tally = Tally()
    for i, root in enumerate(roots):
        tally.evaluate(props, Step(None, None, Outcome.APPLIED, root), True, (i,))
    _apply(tally, props, outcomes, model)
    spec = _Spec(model, tuple(props))
    pool = engine.pool(Shard, spec)
    k = engine.shard_count
    try:
        pool.call("seed", [([((i,), r) for i, r in enumerate(roots) if owner(r, k) == j],) for j in range(k)])
        _levels(pool, k, stats, props, outcomes, limits, model, deadline, progress, label, t0)
    finally:
        pool.close()
    stats.seconds = time.perf_counter() - t0
    if progress is not None:
        where = f" ({k} {engine.backend} shards)" if engine.partitioned else ""
        progress(f"[{label} N={model.size}] done{where}: {stats.distinct} distinct, {stats.generated} generated, "
                 f"depth {stats.depth_reached}, {stats.seconds:.1f}s ({stats.rate:,.0f} distinct/s)")
    return stats


def _roots(model: StateModel[S, A]) -> list[S]:
    out: list[S] = []
    for s in model.init_states():
        r = model.representative(s)
        if r not in out:
            out.append(r)
    return out


def _levels(pool: Pool, k: int, stats: SizeStats, props: list[Property[S, A]],
            outcomes: dict[str, PropertyOutcome[S, A]], limits: Limits, model: StateModel[S, A],
            deadline: float | None, progress: Progress | None, label: str, t0: float) -> None:
    frontier, depth = stats.distinct, 0
    while frontier:
        if depth >= limits.depth:
            stats.at_depth_bound = frontier
            return
        now = time.perf_counter()
        left = limits.max_states - stats.distinct
        if (deadline is not None and now > deadline) or left <= 0:
            _stop(stats, "time limit" if deadline is not None and now > deadline else
                  f"max-states {limits.max_states}", frontier)
            return
        open_names = [p.name for p in props if outcomes[p.name].finding is None]
        wall = None if deadline is None else time.time() + (deadline - now)
        expanded = pool.call("expand", [(wall, open_names)] * k)
        absorbed = pool.call("absorb", [([b[j] for b, _ in expanded], open_names) for j in range(k)])
        reports = [r for _, r in expanded]
        tally = Tally()
        for r in reports + absorbed:
            tally.merge(r["tally"])
        new = sum(a["new"] for a in absorbed)
        timed_out = any(r["timed_out"] for r in reports)
        cut = _budget_cut(pool, k, left) if new >= left and not timed_out else None
        if cut is not None:
            limit, figures = cut
            _add(stats, figures)
            stats.distinct += figures["new"]
            _apply(tally.upto(limit), props, outcomes, model)
            _stop(stats, f"max-states {limits.max_states}", figures["after"] + figures["new"])
            return
        _add(stats, {c: sum(r[c] for r in reports) for c in COUNTS})
        stats.distinct += new
        _apply(tally, props, outcomes, model)
        if timed_out:
            _stop(stats, "time limit", sum(r["unexpanded"] for r in reports) + new)
            return
        if new:
            depth += 1
            stats.depth_reached = depth
        frontier = new
        if progress is not None and new:
            elapsed = time.perf_counter() - t0
            progress(f"[{label} N={model.size}] level {depth}: {stats.distinct:,} distinct, "
                     f"{stats.generated:,} generated, {new:,} new, {stats.distinct / elapsed:,.0f} distinct/s")
        if all(outcomes[p.name].finding is not None for p in props):
            stats.stop_reason = "every probe decided"
            stats.queue_left = frontier
            return


def _stop(stats: SizeStats, reason: str, queue_left: int) -> None:
    stats.complete = False
    stats.stop_reason = reason
    stats.queue_left = queue_left


def _add(stats: SizeStats, figures: dict[str, int]) -> None:
    for c in COUNTS:
        setattr(stats, c, getattr(stats, c) + figures[c])


def _budget_cut(pool: Pool, k: int, left: int) -> tuple[Rank, dict[str, int]] | None:
    """Where a rank-order search would stop in this level, and its figures up to there (or None
    when it completes the level: the budget then stops it before the next level, as here)."""
    firsts = sorted(r for part in pool.call("smallest_parents", [(left,)] * k) for r in part)
    limit = firsts[left - 1]
    parts = pool.call("upto", [(limit,)] * k)
    figures = {c: sum(p[c] for p in parts) for c in COUNTS + ("new", "after")}
    return (limit, figures) if figures["after"] else None


def _apply(tally: Tally, props: list[Property[S, A]], outcomes: dict[str, PropertyOutcome[S, A]],
           model: StateModel[S, A]) -> None:
    """Merge one level's results into the outcomes as a rank-order search would have left them."""
    for p in props:
        out = outcomes[p.name]
        if out.finding is not None:
            continue
        found = tally.finding.get(p.name)
        bound = found[0] if found else None
        premise = tally.premise.get(p.name)
        if premise is not None and (bound is None or premise[0] <= bound):
            out.premise_met = True
        undecided = tally.undecided.get(p.name)
        if undecided is not None and not out.undecided and (bound is None or undecided[0] < bound):
            out.undecided = undecided[1]
        if found is not None:
            out.finding = trace_of_rank(model, found[0], *found[1])


def trace_of_rank(model: StateModel[S, A], rank: Rank, numbers: Numbers, failure: str) -> Finding[S, A]:
    """The finding's trace: the actions at the rank's indices from its initial state, and the
    representative after each (for an operator failure the last state is the unchanged one)."""
    state = _roots(model)[rank[0]]
    actions: list[A] = []
    states: list[S] = []
    for i in rank[1:]:
        action = model.actions(state)[i]
        st = model.step(state, action)
        actions.append(action)
        state = model.representative(st.state) if st.applied else state
        states.append(state)
    return Finding(model.size, actions, states, numbers, failure)
