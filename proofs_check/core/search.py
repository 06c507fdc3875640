"""The one breadth-first search (TLC-style) over any :class:`~proofs_check.core.model.StateModel`.

For every model of a size sequence (e.g. N = 1..6 nodes) the search starts from the model's
initial states and applies every allowed action to every reached state, level by level, up to
``depth`` actions. States are stored as their symmetry representatives. It reports what TLC
reports: states generated, distinct states, depth reached, states at the depth bound, queue left.

**One code path, K shards.** A representative is owned by shard ``crc32(repr(state)) mod K`` (a
hash that is the same in every process and on every host). Each shard keeps the seen-set and
frontier of the states it owns. Per level every shard expands its owned frontier (forked shards
share the level's frontiers: one done early expands what another has not reached,
``proofs_check.core.work_board``), evaluates the transition properties and operator failures where
the transition happens, and routes each successor to its owner; owners keep the successors they
have not seen and evaluate the state properties on them. K = 1 runs in this process (serial); K > 1 runs on forked processes or Dask
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

import copy
import pickle
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Generic, Hashable, Iterable, Sequence

from proofs_check.core import heap, interrupt
from proofs_check.core.engine import SERIAL, Engine, WorkerLost
from proofs_check.core.interrupt import INTERRUPTED
from proofs_check.core.records import Exploration, Finding, Limits, PropertyOutcome, SizeStats
from proofs_check.core.recovery import MAX_RECOVERIES, Resumable, Saver, Shards, shard_checkpoint, shard_restore
from proofs_check.core.model import A, Described, Numbers, On, Outcome, Property, S, StateModel, Step, codec, \
    transitions
from proofs_check.core.successors import Shipped, owner, successors
from proofs_check.core.tally import Rank, Tally
from proofs_check.core.work_board import WorkBoard, tail

OUT_OF_MEMORY = "out of memory"  # a level that could not be held in memory: the exploration stops there
Progress = Callable[[str], None]
COUNTS = ("generated", "refused", "failures", "pruned")
SHIPPED_LIMIT = 250_000  # keys a shard remembers having sent to others (``Shard._remember_shipped``)


def stderr_progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


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
    """What every shard of one search shares: the model and the properties checked."""

    model: StateModel[S, A]
    properties: tuple[Property[S, A], ...]


class Shard(Generic[S, A]):
    """The states owned by one worker: its seen-set, its frontier (rank, state), one level's work.

    States are held as the model's packed keys (``core.model.codec``: compact bytes for the GPU
    models, the state itself otherwise); a frontier state is unpacked when it is expanded."""

    def __init__(self, index: int, count: int, spec: _Spec[S, A]) -> None:
        self.index, self.count, self.spec = index, count, spec
        self.seen: set[Hashable] = set()
        self.frontier: list[tuple[Rank, Hashable]] = []
        self.expanded: list[_Expanded] = []
        self.own: dict[Hashable, Shipped] = {}  # this level's successors owned here
        self.new_parents: list[Rank] = []
        self.peers: list[Any] | None = None  # Dask actor handles: batches go to peers directly
        self.inbox: list[bytes] = []
        self.shipped: set[Hashable] = set()  # keys sent to other shards in earlier levels (``_remember_shipped``)
        self.board: WorkBoard | None = None  # forked shards: the level's frontiers shared out (``work_board``)

    def set_peers(self, peers: list[Any]) -> None:
        self.peers = peers

    @staticmethod
    def work_board(count: int) -> WorkBoard:
        """The board on which ``count`` forked shards share each level's frontier
        (``engine.LocalPool`` makes it before forking, then hands it to each shard)."""
        return WorkBoard(count)

    def set_board(self, board: WorkBoard) -> None:
        self.board = board

    async def receive(self, blob: bytes) -> None:
        """A batch from a peer shard (Dask: awaited on the worker's event loop, so a shard busy in
        ``expand`` can still receive)."""
        self.inbox.append(blob)

    def seed(self, roots: list[tuple[Rank, Hashable]]) -> None:
        """Own these initial states (packed keys)."""
        self.seen.update(s for _, s in roots)
        self.frontier = list(roots)

    def _props(self, open_names: list[str], on: On) -> list[Property[S, A]]:
        return [p for p in self.spec.properties if p.name in open_names and p.on is on]

    def expand(self, wall_deadline: float | None, open_names: list[str],
               tails: dict[int, tuple[int, list[tuple[Rank, Hashable]]]] | None = None
               ) -> tuple[list[bytes | None], dict[str, Any]]:
        """Expand the owned frontier (with a work board, and the other shards' frontier ``tails``
        of ``absorb``, also what they have not taken of theirs once this one's is done); returns
        one pickled batch per other owner and the level report."""
        model = self.spec.model
        props = self._props(open_names, On.TRANSITION)
        failure_props = [p for p in self.spec.properties if p.failure_breaks and p.name in open_names]
        tally = Tally()
        out: list[dict[Hashable, Shipped]] = [{} for _ in range(self.count)]
        self.expanded = []
        timed_out = False
        pack, unpack = codec(model)
        transition = transitions(model)
        shard, seen, expanded = (self.index, self.count), self.seen, self.expanded
        work = self.frontier if self.board is None or not tails else self.board.share(self.index, self.frontier, tails)
        for path, key in work:
            state = unpack(key)
            if wall_deadline is not None and time.time() > wall_deadline:
                timed_out = True
                break
            ex = _Expanded(path)
            expanded.append(ex)
            acts = model.actions(state)
            if not isinstance(acts, (list, tuple)):
                acts = list(acts)
            ex.generated = len(acts)
            c = successors(transition, state, key, path, acts, props, failure_props, tally, pack, shard, seen,
                           self.shipped, out)
            ex.refused, ex.failures, ex.pruned = c.refused, c.failures, c.pruned
        self.own = out[self.index]
        self._remember_shipped(out)
        batches: list[bytes | None] = [
            None if j == self.index or not box else pickle.dumps(list(box.values()), pickle.HIGHEST_PROTOCOL)
            for j, box in enumerate(out)]
        if self.peers is not None:  # deliver before returning: the level's absorb starts after every expand
            for sent in [self.peers[j].receive(b) for j, b in enumerate(batches) if b is not None]:
                sent.result()
            batches = [None] * self.count
        report: dict[str, Any] = {c: sum(getattr(e, c) for e in self.expanded) for c in COUNTS}
        # with a work board a shard may expand more states than it owns: the sum over shards is exact
        report.update(tally=tally, timed_out=timed_out, unexpanded=len(self.frontier) - len(self.expanded))
        return batches, report

    def _remember_shipped(self, out: list[dict[Hashable, Shipped]]) -> None:
        """Keep the keys this level sends to other shards: every key a shard receives is in its
        seen-set once it has absorbed the level, so a later level need not send it again (most
        successors of a deep level are states seen before, and half of them belong to another
        shard). A cache, bounded by ``SHIPPED_LIMIT`` (cleared when full) and never checkpointed:
        a shard restored from a checkpoint or rebuilt after a lost worker starts without it."""
        if self.count == 1:
            return
        if len(self.shipped) > SHIPPED_LIMIT:
            self.shipped.clear()
        for j, box in enumerate(out):
            if j != self.index:
                self.shipped.update(box)

    def absorb(self, batches: list[bytes | None], open_names: list[str]) -> dict[str, Any]:
        """Keep the unseen successors routed here (minimum-rank discoverer each); state properties.

        Most shipped successors were seen before: a step is rebuilt (its states unpacked) only
        for a state that is new."""
        best = self.own
        seen = self.seen
        for blob in batches + self.inbox:
            for entry in pickle.loads(blob) if blob else ():
                key = entry[0]
                if key in seen:
                    continue
                prev = best.get(key)
                if prev is None or entry[1] < prev[1]:
                    best[key] = entry
        props = self._props(open_names, On.STATE)
        rebuild = _Rebuilder(codec(self.spec.model)[1])
        tally = Tally()
        frontier = []
        self.own, self.inbox = {}, []
        for key in list(best):  # each entry let go once evaluated: its rebuilt states die with it
            entry = best.pop(key)
            if key in seen:
                continue
            seen.add(key)
            rank = entry[1]
            frontier.append((rank, key))
            if props:
                tally.evaluate(props, rebuild(entry), True, rank)
        self.frontier = frontier
        self.new_parents = sorted(r[:-1] for r, _ in frontier)
        heap.settle()
        out = {"new": len(frontier), "tally": tally}
        if self.board is not None:  # what the other shards may take of this frontier in the next level
            out["tail"] = tail(frontier)
        return out

    def smallest_parents(self, c: int) -> list[Rank]:
        """The parent ranks of this level's ``c`` first new states (rank order)."""
        return self.new_parents[:c]

    def upto(self, limit: Rank) -> dict[str, int]:
        """This level's figures restricted to frontier states ranked ≤ ``limit``."""
        done = [e for e in self.expanded if e.rank <= limit]
        out = {c: sum(getattr(e, c) for e in done) for c in COUNTS}
        out.update(new=sum(1 for r in self.new_parents if r <= limit), after=len(self.expanded) - len(done))
        return out


Shard.checkpoint = shard_checkpoint  # type: ignore[attr-defined]
Shard.restore = shard_restore  # type: ignore[attr-defined]


class _Rebuilder:
    """The step of a stored successor, rebuilt equal to the one made (siblings share the parent's
    unpacked state)."""

    def __init__(self, unpack: Callable[[Any], Any]) -> None:
        self.unpack = unpack
        self.parent: tuple[Any, Any] = (None, None)  # (packed, unpacked) of the last parent

    def __call__(self, entry: Shipped) -> Step[Any, Any]:
        key, _, prev, action, outcome, detail, reason, memo = entry
        if prev is not self.parent[0]:
            self.parent = (prev, self.unpack(prev))
        return Step(self.parent[1], action, outcome, self.unpack(key), detail, reason, memo)


# --------------------------------------------------------------------------- the coordinator
def explore(models: Iterable[StateModel[S, A]], properties: Sequence[Property[S, A]], limits: Limits,
            engine: Engine = SERIAL, deadline: float | None = None, progress: Progress | None = None,
            label: str = "") -> Exploration[S, A]:
    """Explore each model in turn (sizes grow); stop once every property has a finding, or when a
    size's exploration is incomplete (a budget hit: larger sizes would not be covered either).

    An interrupt (SIGINT/SIGTERM, :mod:`~proofs_check.core.interrupt`) or the loss of every Dask
    worker stops the size in progress (or, before it starts, the first size) with that reason.
    A :class:`~proofs_check.core.budget.Budget` deadline gives this exploration its share of the
    time left. Under a :mod:`~proofs_check.core.checkpoint` session a finished exploration is
    returned from the checkpoint and an unfinished one continues at its last level boundary."""
    run = Resumable(label, deadline, progress)
    done: Exploration[S, A] | None = run.finished()
    if done is not None:
        return done
    point = run.point()
    result: Exploration[S, A] = Exploration(outcomes={p.name: PropertyOutcome() for p in properties})
    resume: dict[str, Any] | None = None
    if point is not None:
        result, resume = point["exploration"], point.get("size")
    done_sizes = {s.size for s in result.sizes}
    for model in models:
        if model.size in done_sizes:
            continue
        stopped = interrupt.requested() or engine.lost
        if stopped:
            result.sizes.append(SizeStats(model.size, complete=False, stop_reason=stopped))
            break
        open_props = [p for p in properties if result.outcomes[p.name].finding is None]
        if not open_props:
            break
        here = resume if resume is not None and resume["stats"].size == model.size else None
        saver = run.saver(result)
        with heap.long_lived():
            stats = _explore_size(model, open_props, result.outcomes, limits, engine, run.deadline, progress, label,
                                  here, saver)
        resume = None
        result.sizes.append(stats)
        if not stats.complete:
            break
        if saver is not None:
            saver.size_done()
    run.end(result, result.complete, "" if result.complete else result.sizes[-1].stop_reason)
    return result


def _explore_size(model: StateModel[S, A], props: list[Property[S, A]], outcomes: dict[str, PropertyOutcome[S, A]],
                  limits: Limits, engine: Engine, deadline: float | None, progress: Progress | None,
                  label: str, resume: dict[str, Any] | None = None, saver: Saver | None = None) -> SizeStats:
    t0 = time.perf_counter()
    k = engine.shard_count
    seeds: list[tuple[Any, ...]] | None = None
    if resume is None:
        stats = SizeStats(model.size, notes=model.describe() if isinstance(model, Described) else {})
        roots = _roots(model)
        stats.distinct = len(roots)
        tally = Tally()
        for i, root in enumerate(roots):
            tally.evaluate(props, Step(None, None, Outcome.APPLIED, root), True, (i,))
        _apply(tally, props, outcomes, model)
        pack = codec(model)[0]
        keys = [pack(r) for r in roots]
        seeds = [([((i,), key) for i, key in enumerate(keys) if owner(key, k) == j],) for j in range(k)]
        depth, frontier, snapshot = 0, stats.distinct, None
    else:
        stats = copy.deepcopy(resume["stats"])
        depth, frontier, snapshot = resume["depth"], resume["frontier"], resume["shards"]
        t0 -= stats.seconds
    shards = Shards(engine, Shard, _Spec(model, tuple(props)))
    keep = engine.backend == "dask" or saver is not None
    aborted = False
    try:
        with interrupt.armed():
            snapshot = shards.start(seeds, snapshot, keep)
        _levels(shards, k, stats, props, outcomes, limits, model, deadline, progress, label, t0, depth, frontier,
                saver, snapshot)
    except interrupt.Interrupted:  # before the first level started
        aborted = True
        _stop(stats, INTERRUPTED, frontier)
    except WorkerLost as e:
        aborted = True
        engine.lost = f"workers lost: {e}"
        _stop(stats, engine.lost, frontier)
    finally:
        aborted = aborted or stats.stop_reason == INTERRUPTED or bool(engine.lost)
        try:
            shards.finish(aborted)
        except Exception:
            pass
    stats.seconds = time.perf_counter() - t0
    if progress is not None:
        where = f" ({k} {engine.backend} shards)" if engine.partitioned else ""
        progress(f"[{label} N={model.size}] {'done' if stats.complete else stats.stop_reason}{where}: "
                 f"{stats.distinct} distinct, {stats.generated} generated, "
                 f"depth {stats.depth_reached}, {stats.seconds:.1f}s ({stats.rate:,.0f} distinct/s)")
    return stats


def _roots(model: StateModel[S, A]) -> list[S]:
    out: list[S] = []
    for s in model.init_states():
        r = model.representative(s)
        if r not in out:
            out.append(r)
    return out


def _levels(shards: Shards, k: int, stats: SizeStats, props: list[Property[S, A]],
            outcomes: dict[str, PropertyOutcome[S, A]], limits: Limits, model: StateModel[S, A],
            deadline: float | None, progress: Progress | None, label: str, t0: float, depth: int = 0,
            frontier: int | None = None, saver: Saver | None = None, snapshot: list[Any] | None = None) -> None:
    """Level by level from ``depth`` (``frontier`` states queued). With a ``snapshot`` (the shards'
    state at the start of the level) every level also returns the shards' state at its end: kept
    on the coordinator, it is where a level a lost worker interrupted is recomputed from (on the
    workers left), and it is what the checkpoint holds."""
    frontier = stats.distinct if frontier is None else frontier
    keep = snapshot is not None
    where = f"{label} N={model.size}"
    tails: list[Any] = []  # each shard's frontier tail, for the others to take from (``work_board``)
    while frontier:
        if depth >= limits.depth:
            stats.at_depth_bound = frontier
            return
        if saver is not None and snapshot is not None:
            stats.seconds = time.perf_counter() - t0
            saver.level(stats, depth, frontier, snapshot)
        now = time.perf_counter()
        left = limits.max_states - stats.distinct
        if (deadline is not None and now > deadline) or left <= 0:
            _stop(stats, "time limit" if deadline is not None and now > deadline else
                  f"max-states {limits.max_states}", frontier)
            return
        if interrupt.requested():
            _stop(stats, INTERRUPTED, frontier)
            return
        open_names = [p.name for p in props if outcomes[p.name].finding is None]
        wall = None if deadline is None else time.time() + (deadline - now)
        for attempt in range(MAX_RECOVERIES + 1):
            try:
                with interrupt.armed():
                    done = _level(shards, k, open_names, wall, left, keep, tails)
                break
            except interrupt.Interrupted:
                _stop(stats, INTERRUPTED, frontier)
                return
            except MemoryError:  # the level's new states are dropped (freed); what was explored is kept
                _stop(stats, OUT_OF_MEMORY, frontier)
                return
            except WorkerLost as e:
                if snapshot is None or attempt == MAX_RECOVERIES:
                    raise
                shards.recover(snapshot, str(e), progress, where)
        reports, tally, new, cut, snapshot, tails = done
        timed_out = any(r["timed_out"] for r in reports)
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
            progress(f"[{where}] level {depth}: {stats.distinct:,} distinct, "
                     f"{stats.generated:,} generated, {new:,} new, {stats.distinct / elapsed:,.0f} distinct/s")
        if all(outcomes[p.name].finding is not None for p in props):
            stats.stop_reason = "every probe decided"
            stats.queue_left = frontier
            return


def _level(shards: Shards, k: int, open_names: list[str], wall: float | None, left: int, keep: bool,
           tails: list[Any]) -> tuple[list[dict[str, Any]], Tally, int, tuple[Rank, dict[str, int]] | None,
                                      list[Any] | None, list[Any]]:
    """One level on every shard: expand, absorb, where the state budget ends inside it the cut, and
    with ``keep`` the shards' state at its end; and the new frontiers' ``tails`` when the shards
    share work (forked shards, ``work_board``): each shard gets the others' to expand what their
    owners have not reached. Nothing is applied before all of it succeeded, so a level a lost
    worker broke is recomputed from the start."""
    expanded = shards.call("expand", [(wall, open_names, {i: t for i, t in enumerate(tails) if i != j and t})
                                      if tails else (wall, open_names) for j in range(k)])
    absorbed = shards.call("absorb", [([b[j] for b, _ in expanded], open_names) for j in range(k)])
    reports = [r for _, r in expanded]
    tally = Tally()
    for r in reports + absorbed:
        tally.merge(r["tally"])
    new = sum(a["new"] for a in absorbed)
    timed_out = any(r["timed_out"] for r in reports)
    cut = _budget_cut(shards, k, left) if new >= left and not timed_out else None
    after = shards.call("checkpoint", [()] * k) if keep and cut is None and not timed_out else None
    return reports, tally, new, cut, after, [a.get("tail") for a in absorbed]


def _stop(stats: SizeStats, reason: str, queue_left: int) -> None:
    stats.complete = False
    stats.stop_reason = reason
    stats.queue_left = queue_left


def _add(stats: SizeStats, figures: dict[str, int]) -> None:
    for c in COUNTS:
        setattr(stats, c, getattr(stats, c) + figures[c])


def _budget_cut(pool: Any, k: int, left: int) -> tuple[Rank, dict[str, int]] | None:
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
        for label, _ in p.coverage:
            out.covered[label] = out.covered.get(label, 0) + tally.covered.get((p.name, label), 0)
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
