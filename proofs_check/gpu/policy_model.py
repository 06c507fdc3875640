"""Any flat GPU scheduler as a state model: job arrivals and departures on N nodes of G GPUs.

The state is the scheduler's whole state (``policy.state_key()``: an ``AbsView`` for COMPASS, a
``Placement`` for placement-only policies); its representative is the canonical form
(``proofs_check.gpu.canonical``: nodes are interchangeable, job ids are labels). Successors are
computed from ``policy.with_state(representative)``, so the checked scheduler is the paper's
pseudocode with its "pick any" / argmin ties broken by the representative's node order — a legal
implementation — and a trace replays exactly.

Actions within the bounds: an arrival of (g, w) for every g of the event family, 1 ≤ w ≤ max_w and
w·g ≤ free GPUs while fewer than max_jobs jobs run, and the departure of every running job.
With ``EventBounds.all_ties`` every event comes once per distinct outcome of the scheduler's tie
points (``heuristics.gpu.ties``: every legal choice sequence is run, ``Event.choices`` records the
one taken), so the search covers every implementation of the pseudocode, not only the
representative-order one.
``wcc_trajectory``: successors whose instance counts break the Workload Composition Condition
(count form, Lemma A.1) are outside the premise — Theorem 1 assumes WCC "at every time t", a
premise on the whole trajectory, so only WCC-only paths are explored.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Final, Hashable, Iterator, Sequence

from heuristics.gpu.abs_space import AbsView
from heuristics.gpu.abs_store import AbsStore
from heuristics.gpu.cluster import Job, Placement
from heuristics.gpu.policy import Outcome as PolicyOutcome
from heuristics.gpu.policy import EventResult, StateKey, ViewPolicy
from oracle.gpu.paper_phi import wcc_holds
from heuristics.gpu.ties import Chooser, Script
from proofs_check.core.model import PRUNED, Outcome, Step, Transition, stepped
from proofs_check.core.successors import new_step
from proofs_check.gpu import packed
from proofs_check.gpu.canonical import canonical
from proofs_check.gpu.tie_expansion import drawn_step, every_tie
from proofs_check.gpu.events import Event, FlatState, apply_event, counts_of_state, job_events, running_jobs, state_from_json, \
    state_to_json

OUTCOMES: Final = {PolicyOutcome.APPLIED: Outcome.APPLIED, PolicyOutcome.REFUSED: Outcome.REFUSED,
                   PolicyOutcome.FAILED: Outcome.FAILED}
PolicyFactory = Callable[[int], ViewPolicy]
_APPLIED: Final = PolicyOutcome.APPLIED
_REFUSED: Final = PolicyOutcome.REFUSED
# The step outcomes of the two usual results, as C statics in the compiled build (``Outcome.X`` is
# a look-up on the Enum class each time: two of them per transition)
_STEP_APPLIED: Final = Outcome.APPLIED
_STEP_REFUSED: Final = Outcome.REFUSED


def _step_outcome(outcome: PolicyOutcome) -> Outcome:
    """The step outcome of a scheduler's outcome (the usual refusal without a dict look-up: an
    Enum's hash is a Python-level call)."""
    return _STEP_REFUSED if outcome is _REFUSED else OUTCOMES[outcome]


@dataclass(frozen=True)
class EventBounds:
    """Which events the model allows (the search's depth and state budget are its own)."""

    demands: tuple[int, ...]
    max_jobs: int
    max_w: int
    all_ties: bool = False  # every legal choice at the scheduler's tie points (needs ``ties`` on it)


@contextmanager
def answering(pol: Any, ties: Chooser | None) -> Iterator[None]:
    """The policy's tie points answered by ``ties`` while the block runs (None: its default ties)."""
    if ties is None:
        yield
        return
    if not hasattr(pol, "ties"):
        raise TypeError(f"{pol.name} exposes no tie points (a ``ties`` chooser attribute)")
    pol.ties = ties
    try:
        yield
    finally:
        pol.ties = None


def run_event(pol: Any, a: Event) -> EventResult:
    """Apply ``a`` to the policy, taking ``a.choices`` at its tie points. With choices the event
    runs as a ``trial`` (an operator failure under a choice is then an outcome): the caller
    discards ``pol`` afterwards or rolls it back."""
    if a.choices and hasattr(pol, "trial"):  # schedulers without apply-and-undo (the baselines) cannot fail under a choice
        pol.trial()
    with answering(pol, Script(a.choices) if a.choices else None):
        return apply_event(pol, a)


def flat_key(key: StateKey) -> FlatState:
    """A flat policy's state key (a hierarchical scheduler has its own model, HierModel)."""
    if isinstance(key, (AbsView, Placement)):
        return key
    raise TypeError(f"PolicyModel needs a flat policy; its state key is a {type(key).__name__}")


PACK_MEMO: Final = 100_000  # packed states remembered by identity (``PolicyModel.pack``)


class PolicyModel:
    """StateModel[FlatState, Event] of the scheduler ``factory(n)`` on ``n`` nodes."""

    def __init__(self, factory: PolicyFactory, n: int, events: EventBounds, wcc_trajectory: bool = False,
                 canon: Callable[[FlatState], FlatState] = canonical) -> None:
        self.factory, self.size, self.events = factory, n, events
        self.wcc_trajectory, self.canon = wcc_trajectory, canon
        self.proto = factory(n)
        self.capacity = self.proto.capacity

        self.fast = True  # apply and undo where the scheduler has it (off: rebuilt per event)
        self._base_state: FlatState | None = None  # the state the last scheduler was built from
        # that scheduler when its apply and undo is used (COMPASS's AbsStore: trial / view_after /
        # rollback); typed, so that the compiled build calls those natively, not generically
        self._store: AbsStore | None = None
        self._undo = False  # _store ran an event not rolled back yet (``_apply``)
        self._after: FlatState | None = None  # the successor of _store's event not rolled back yet
        self._ready: dict[Event, Step[FlatState, Event]] = {}  # steps ``actions`` ran (all_ties) ...
        self._ready_state: FlatState | None = None  # ... from this state
        self._packed: dict[int, tuple[FlatState, bytes]] = {}  # id(state) -> (state, pack(state))
        self._unpacked: dict[bytes, FlatState] = {}  # the other way round, for the states in _packed
        self._wcc: dict[tuple[int, ...], bool] = {}  # wcc_holds per instance-count vector (``within``)

    def __getstate__(self) -> dict[str, Any]:  # the prototype and the caches are rebuilt, not shipped
        return {k: v for k, v in self.__dict__.items() if k not in ("proto", "_base_state", "_store", "_undo", "_after",
                                                                    "_ready", "_ready_state", "_packed", "_unpacked",
                                                                    "_wcc")}

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__dict__.update(d)
        self.proto = self.factory(self.size)
        self._base_state, self._store, self._ready, self._ready_state = None, None, {}, None
        self._undo, self._after = False, None
        self._packed, self._unpacked, self._wcc = {}, {}, {}

    def init_states(self) -> Sequence[FlatState]:
        return [flat_key(self.proto.state_key())]

    def actions(self, s: FlatState) -> Sequence[Event]:
        running = self._running(s)
        # every instance of a running job holds g GPUs: one walk of the state, not a second for the
        # free GPUs (a loop, not sum() of a comprehension: a function call in CPython 3.11)
        free = self.size * self.capacity
        for _, g, w in running.values():
            free -= g * w
        e = self.events
        events = job_events(running, free, e.demands, e.max_jobs, e.max_w)
        return self._every_tie(s, events) if e.all_ties else events

    def _running(self, s: FlatState) -> dict[int, Job]:
        """``running_jobs(s)``. With apply and undo, the jobs of the scheduler that ``step`` will
        apply ``s``'s events to, built here (``AbsStore.with_state`` derives them in its own walk
        of the state: one walk per expanded state, not two)."""
        if self.fast and isinstance(self.proto, AbsStore):
            self._scheduler(s)
            jobs = None if self._store is None else self._store.jobs_of(s)
            if jobs is not None:
                return jobs
        return running_jobs(s)

    def _every_tie(self, s: FlatState, events: list[Event]) -> list[Event]:
        """Each event once per distinct result (successor and migration count, or the outcome of
        a refused / failed event) over all its choice sequences (lexicographic: the default
        tie-breaking first); the steps are kept for ``step``."""
        ready = every_tie(events, lambda ev, script: self._run(s, ev, script), self._result_key)
        self._ready, self._ready_state = ready, s
        return list(ready)

    def step_drawing(self, s: FlatState, a: Event, draw: Callable[[int], int]) -> Step[FlatState, Event]:
        """``a`` with a drawn option at every tie point (``--random K --ties all``)."""
        return drawn_step(lambda ev, chooser: self._run(s, ev, chooser), a, draw)

    def _result_key(self, st: Step[FlatState, Event]) -> Hashable:
        """What makes two choices' applied steps different: the successor and, since a transition
        claim reads them too (migr, policy.migrations), the number of migrations."""
        return self.canon(st.state), len(st.detail)

    def step(self, s: FlatState, a: Event) -> Step[FlatState, Event]:
        if s is self._ready_state and a in self._ready:
            return self._ready.pop(a)
        if not a.choices:
            if s is self._base_state and self._store is not None:  # ``_run``'s usual case, one call fewer
                return self._apply(self._store, s, a)
            return self._run(s, a, None)
        return self._run(s, a, Script(a.choices))

    def _run(self, s: FlatState, a: Event, ties: Chooser | None) -> Step[FlatState, Event]:
        # The search steps every action of one state in a row. With apply and undo (COMPASS:
        # ``trial`` / ``view_after`` / ``rollback``) one scheduler is built per state and each
        # event is undone on it before the next (``_apply``); other policies are rebuilt from
        # ``s`` per action.
        pol = self._scheduler(s)
        if ties is None:  # most events: no chooser to install (``answering`` would do nothing)
            return self._apply(pol, s, a)
        with answering(pol, ties):
            return self._apply(pol, s, a)

    def _scheduler(self, s: FlatState) -> Any:
        """The scheduler to apply an event of ``s`` to: a Policy; with apply and undo the one
        built for ``s`` (``_store``, also with trial / view_after / rollback / instance_counts)."""
        if s is not self._base_state:
            pol = self.proto.with_state(s)
            self._base_state = s
            # view_after reads s back
            self._store = pol if self.fast and isinstance(pol, AbsStore) and pol.state_is(s) else None  # type: ignore[arg-type]
            self._undo = False  # the scheduler of the state before is dropped, not undone
            return pol
        store = self._store
        if store is not None:
            if self._undo:
                self._undo = False
                store.rollback()
            return store
        return self.proto.with_state(s)

    def without_fast_path(self) -> None:
        """Rebuild the scheduler for every event from now on (its apply and undo was refused)."""
        self.fast, self._base_state, self._store, self._undo = False, None, None, False

    def fresh_step(self, s: FlatState, a: Event) -> Step[FlatState, Event]:
        """``a`` from ``s`` on a scheduler rebuilt for it alone (no apply and undo): what the fast
        path is checked against (``abstraction.check_fast_path``)."""
        pol = self.proto.with_state(s)
        with answering(pol, Script(a.choices) if a.choices else None):
            res = apply_event(pol, a)
        return Step(s, a, OUTCOMES[res.outcome], flat_key(pol.state_key()) if res.ok else s, res.migrations,
                    res.reason)

    def _apply(self, pol: Any, s: FlatState, a: Event) -> Step[FlatState, Event]:
        store = self._store
        if store is None:
            self._base_state = None  # the event below changes this scheduler
            res = apply_event(pol, a)
            return new_step(s, a, OUTCOMES[res.outcome], flat_key(pol.state_key()) if res.ok else s,
                            res.migrations, res.reason)
        outcome, migrations, reason = self._trial(store, a)
        if outcome is not _APPLIED:
            return new_step(s, a, _step_outcome(outcome), s, migrations, reason)
        # s is the store's own view (``_run``: state_is(s)), so an AbsView; no cast(), a
        # function call per transition in pure Python. The memo: n_1..n_G, maintained by the scheduler.
        after = self._after = store.view_after(s)  # type: ignore[arg-type]
        return new_step(s, a, _STEP_APPLIED, after, migrations, reason, {"counts": store.instance_counts()})

    def _trial(self, store: AbsStore, a: Event) -> tuple[PolicyOutcome, tuple[Any, ...], str]:
        """Event ``a`` run on ``store`` as a trial: (outcome, migrations, reason). The event is
        undone when the scheduler is next asked for (``_scheduler``, or here): the last event of a
        state is never undone, its scheduler dropped for the next state's."""
        if self._undo:
            store.rollback()
        store.trial()
        self._undo, self._after = True, None
        # unpacked once: from compiled code each attribute of the result (a NamedTuple of an
        # interpreted module, ``ok`` a Python property) is a generic attribute look-up
        outcome, migrations, reason = apply_event(store, a)
        return outcome, migrations, reason

    def transition(self, s: FlatState, a: Event) -> Transition:
        """``stepped(self, s, a)`` (``proofs_check.core.model``). With apply and undo, in one
        call: the premise is read from the scheduler's instance counts before the successor's
        view is built, and the view's changed nodes are passed to ``canonical``."""
        store = self._store
        if store is None or s is not self._base_state or a.choices or s is self._ready_state:
            return stepped(self, s, a)
        outcome, migrations, reason = self._trial(store, a)
        if outcome is not _APPLIED:
            return _step_outcome(outcome), s, migrations, reason, None
        counts = store.instance_counts()
        if self.wcc_trajectory and not self._wcc_holds(counts):
            return PRUNED
        after = store.view_after(s)  # type: ignore[arg-type]
        # ``representative(after)``'s changed-nodes path, without its identity tests (one per transition)
        rep = canonical(after, s, store.changed_nodes()) if self.canon is canonical else self.canon(after)
        return _STEP_APPLIED, rep, migrations, reason, {"counts": counts}

    def representative(self, s: FlatState) -> FlatState:
        if self.canon is canonical:  # its hint: a successor shares the untouched nodes of the state expanded
            store = self._store
            if s is self._after and store is not None and self._undo:  # and which nodes its event touched
                return canonical(s, self._base_state, store.changed_nodes())
            return canonical(s, self._base_state)
        return self.canon(s)

    def pack(self, s: FlatState) -> bytes:
        # The canonical form hands out one object per class it remembers, so about half of the
        # successors packed are an object packed before (pool5: 51 %): its bytes are kept by
        # identity (the entry holds the object, so its id is not reused while it is kept).
        hit = self._packed.get(id(s))
        if hit is not None and hit[0] is s:
            return hit[1]
        self._forget_when_full()
        b = self._packed[id(s)] = (s, packed.pack(s))
        self._unpacked[b[1]] = s
        return b[1]

    def unpack(self, key: bytes) -> FlatState:
        # A key packed here is unpacked to the state it was packed from (equal to the decoded
        # one), and a key decoded here is remembered alike: the search unpacks each new state
        # twice, for its properties and to expand it (with --workers, a state from another shard
        # was packed there). Bounded with the packed states (PACK_MEMO).
        s = self._unpacked.get(key)
        if s is None:
            s = packed.unpack(key)
            self._forget_when_full()
            self._unpacked[key] = s
        return s

    def _forget_when_full(self) -> None:
        if len(self._packed) >= PACK_MEMO or len(self._unpacked) >= PACK_MEMO:
            self._packed.clear()
            self._unpacked.clear()

    def within(self, st: Step[FlatState, Event]) -> bool:
        if not self.wcc_trajectory:
            return True
        counts = st.memo.get("counts")
        return self._wcc_holds(counts_of_state(st.state, self.capacity) if counts is None else counts)

    def _wcc_holds(self, counts: tuple[int, ...]) -> bool:
        # WCC is a function of the count vector alone, and a run meets few vectors: remembered,
        # not a call into the interpreted oracle per transition
        held = self._wcc.get(counts)
        if held is None:
            held = self._wcc[counts] = wcc_holds(counts)
        return held

    def state_to_json(self, s: FlatState) -> dict[str, Any]:
        return state_to_json(s)

    def state_from_json(self, d: dict[str, Any]) -> FlatState:
        return state_from_json(d)

    def action_to_json(self, a: Event) -> dict[str, Any]:
        return a.to_json()

    def action_from_json(self, d: dict[str, Any]) -> Event:
        return Event.from_json(d)
