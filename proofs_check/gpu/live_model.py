"""Any flat GPU scheduler as a state model whose state is the scheduler object (issue 22).

A state is a :class:`~proofs_check.gpu.live.Live`: the user's object with everything it keeps,
plus the environment's running jobs. A state is expanded by reviving a fresh copy of it and
running one action on that copy, so every successor, every shortest counterexample and every
replay is a real run of the real object, with the real job ids and node numbers. Which states are
merged is decided by :class:`Trust` (``proofs_check.gpu.abstraction``): by default the whole
object; a declared view or symmetry only once it passed its check on this run.

Actions: an arrival of (g, w) for every g of the event family, 1 ≤ w ≤ max_w and w·g ≤ free GPUs
while fewer than max_jobs jobs run (the job id is the smallest one not running), the departure of
every running job, and for a scheduler with ``next_round()`` the start of its next round
(:class:`~proofs_check.gpu.events.Round`: an environment input like a clock, so FFT and DRR are
checked as themselves). With ``EventBounds.all_ties`` each event comes once per distinct result
of the scheduler's tie points.

**Refusals are transitions here.** Two ``policy.*`` claims are about refusals, so a refused
arrival is an applied step whose :class:`Detail` says it was refused; its state is the scheduler
after the refusal (the same state, unless the refusal changed something the scheduler keeps), so
the explored space is that of the plain model and a refusal can be judged. Any exception from the
scheduler (``SystemExit`` and ``KeyboardInterrupt`` included) or a result that is not an
``EventResult`` is an operator failure naming it: a counterexample of ``policy.no-stuck``, never a
crash of the checker. A scheduler that never returns is stopped by a watchdog (:class:`Watch`).
"""
from __future__ import annotations

import signal
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterator, NamedTuple, Sequence

from heuristics.gpu.cluster import Job, Placement
from heuristics.gpu.policy import EventResult, Migration
from heuristics.gpu.policy import Outcome as PolicyOutcome
from heuristics.gpu.ties import Chooser, Script
from proofs_check.core.model import Outcome, Step
from proofs_check.gpu.abstraction import NONE, Trust, key_of
from proofs_check.gpu.events import Action, Round, action_from_json, job_events, state_to_json
from proofs_check.gpu.live import Live, snapshot
from proofs_check.gpu.policy_model import EventBounds, answering
from proofs_check.gpu.tie_expansion import ReadySteps, drawn_step, every_tie

LiveStep = Step[Live, Action]


@dataclass(frozen=True)
class Detail:
    """What one event did besides the state: its migrations, or that it was refused (and, when
    the refusal changed the scheduler's placement anyway, that placement)."""

    migrations: tuple[Migration, ...] = ()
    refused: bool = False
    changed_to: Placement | None = None


_PLAIN = Detail()  # most events: no migration, not refused (frozen, so one value serves them all)


def describe(a: Action) -> str:
    """The call an action makes, as a failure names it."""
    if isinstance(a, Round):
        return "next_round()"
    return f"arrive(J{a.job}, g={a.g}, w={a.w})" if a.arrive else f"depart(J{a.job})"


def call(obj: Any, a: Action) -> Any:
    """Run action ``a`` on the scheduler object (what it returns, unchecked)."""
    if isinstance(a, Round):
        return obj.next_round()
    return obj.arrive(Job(a.job, a.g, a.w)) if a.arrive else obj.depart(a.job)


def jobs_after(jobs: tuple[Job, ...], a: Action, applied: bool) -> tuple[Job, ...]:
    """The environment's running jobs after ``a`` (sorted by id)."""
    if not applied or isinstance(a, Round):
        return jobs
    if a.arrive:
        return tuple(sorted((*jobs, Job(a.job, a.g, a.w))))
    return tuple(j for j in jobs if j.id != a.job)


class Watch(NamedTuple):
    """How long one event of the scheduler may run: ``event_seconds`` (``--event-time-limit``: an
    event still running then is an operator failure, a ``policy.no-stuck`` finding) and the run's
    ``deadline`` (``--time-limit``, a ``time.perf_counter()`` value: an event still running then is
    abandoned and the exploration stops there, inconclusive)."""

    event_seconds: float | None = None
    deadline: float | None = None

    def seconds(self) -> tuple[float, bool] | None:
        """The time the next event may take and whether the event limit (not the deadline) sets it."""
        left = None if self.deadline is None else self.deadline - time.perf_counter()
        if self.event_seconds is None and left is None:
            return None
        if left is None or self.event_seconds is not None and self.event_seconds <= left:
            return float(self.event_seconds or 0.0), True
        return max(left, 1e-3), False


class _OutOfTime(BaseException):
    """Raised in the scheduler's code by the watchdog (never caught by its ``except Exception``)."""


def _alarm(signum: int, frame: Any) -> None:
    raise _OutOfTime


@contextmanager
def watchdog(seconds: float | None) -> Iterator[None]:
    """Raise :class:`_OutOfTime` in the block after ``seconds`` (SIGALRM; the main thread of a
    process only: elsewhere, e.g. a Dask worker thread, the block is not timed)."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


class LiveModel:
    """StateModel[Live, Action] of the scheduler ``factory(n)`` on ``n`` nodes."""

    def __init__(self, factory: Callable[[int], Any], n: int, events: EventBounds, trust: Trust = NONE,
                 watch: Watch = Watch()) -> None:
        self.factory, self.size, self.events, self.trust, self.watch = factory, n, events, trust, watch
        self._late = False  # the run's deadline passed inside an event (said once)
        self._checked: dict[str, Any] | None = None
        self._views = False  # keep each state's view with it (``keeping_views``)
        proto = factory(n)
        self.capacity: int = proto.capacity
        self.rounds = callable(getattr(proto, "next_round", None))
        self._root = self.live(proto, ())
        self._ready: ReadySteps[Live] = ReadySteps()

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_ready"}

    def __setstate__(self, d: dict[str, Any]) -> None:
        self.__dict__.update(d)
        self._ready = ReadySteps()

    def live(self, obj: Any, jobs: tuple[Job, ...]) -> Live:
        """The state of ``obj`` (its tie chooser cleared: not part of the state)."""
        if getattr(obj, "ties", None) is not None:
            obj.ties = None
        if self.trust == NONE:  # the key is the whole object: its pickle
            blob = snapshot(obj)
            return Live((jobs, blob), obj.placement(), jobs, blob=blob, view=obj.state_key() if self._views else None)
        view = obj.state_key()
        key = key_of(self.trust, view, jobs)
        # a view declared as the placement itself (``state_key = placement``) is not computed twice
        placement = view if getattr(type(obj), "state_key", None) is getattr(type(obj), "placement", ()) \
            else obj.placement()
        if self.trust.rebuild:  # checked: the state is its view, expanded through the rebuild
            return Live(key, placement, jobs, view=view, rebuild=self.rebuilt)
        return Live(key, placement, jobs, obj=obj)

    def rebuilt(self, view: Any) -> Any:
        """A fresh scheduler rebuilt from ``view`` (``with_state`` on a new ``factory(n)``: what the
        rebuild check runs, and what a trusted rebuild expands)."""
        return self.factory(self.size).with_state(view)

    def with_trust(self, trust: Trust, checked: dict[str, Any] | None = None) -> "LiveModel":
        """This model with states merged by ``trust`` instead; ``checked`` says how that trust was
        earned (``abstraction.Checked.describe``), kept in the exploration's figures of this size."""
        m = LiveModel.__new__(LiveModel)
        m.__dict__.update(self.__dict__)
        m.trust, m._ready, m._checked = trust, ReadySteps(), checked
        m._root = m.live(self._root.obj(), ())
        return m

    def keeping_views(self) -> "LiveModel":
        """This model (states merged by the whole object) with each state's view taken from the
        object that made it and kept with it: the abstraction checks compare views of states
        they hold as pickles, which then need not be revived for it."""
        m = self.with_trust(self.trust, self._checked)
        m._views = True
        m._root = m.live(self._root.obj(), ())
        return m

    def describe(self) -> dict[str, Any]:
        """``core.model.Described``: the abstraction check of this size, if one ran."""
        return {} if self._checked is None else {"abstractions": self._checked}

    # --------------------------------------------------------------------- the protocol
    def init_states(self) -> Sequence[Live]:
        return [self._root]

    def actions(self, s: Live) -> Sequence[Action]:
        e = self.events
        # The environment's free GPUs, not the placement's: a scheduler that lost track of its
        # GPUs must still be offered the jobs that fit (and be caught refusing them).
        free = self.size * self.capacity - sum(j.g * j.w for j in s.jobs)
        acts: list[Action] = list(job_events(s.running(), free, e.demands, e.max_jobs, e.max_w))
        if self.rounds:
            acts.append(Round())
        if not e.all_ties:
            return acts
        ready = every_tie(acts, lambda ev, script: self._run(s, ev, script), self._result_key)
        self._ready.keep(s, ready)
        return list(ready)

    def step(self, s: Live, a: Action) -> LiveStep:
        kept = self._ready.take(s, a)
        if kept is not None:
            return kept
        return self._run(s, a, Script(a.choices) if a.choices else None)

    def step_drawing(self, s: Live, a: Action, draw: Callable[[int], int]) -> LiveStep:
        """``a`` with a drawn option at every tie point (``--random K --ties all``)."""
        return drawn_step(lambda ev, chooser: self._run(s, ev, chooser), a, draw)

    def _result_key(self, st: LiveStep) -> Hashable:
        d: Detail = st.detail
        return st.state, len(d.migrations), d.refused, d.changed_to

    def _run(self, s: Live, a: Action, ties: Chooser | None) -> LiveStep:
        obj = s.obj()
        limit = self.watch.seconds()
        try:
            if ties is not None and not hasattr(obj, "ties"):
                raise TypeError(f"{getattr(obj, 'name', type(obj).__name__)} exposes no tie points (a ``ties`` "
                                f"chooser attribute)")
            if ties is None and limit is None:  # most events: no chooser to answer, no clock to set
                res = call(obj, a)
            else:
                with answering(obj, ties), watchdog(None if limit is None else limit[0]):
                    res = call(obj, a)
            if not isinstance(res, EventResult):
                return Step(s, a, Outcome.FAILED, s, Detail(),
                            f"{describe(a)} returned {type(res).__name__} {res!r:.60}, not an EventResult")
            if res.outcome is PolicyOutcome.FAILED:
                return Step(s, a, Outcome.FAILED, s, Detail(), res.reason or f"{describe(a)}: operator failure")
            after = self.live(obj, jobs_after(s.jobs, a, res.ok))
        except _OutOfTime:
            assert limit is not None
            if limit[1]:
                return Step(s, a, Outcome.FAILED, s, Detail(), f"{describe(a)} did not return within {limit[0]:g} s "
                                                               f"(--event-time-limit)")
            if not self._late:  # once: every event after the deadline is cut short too
                self._late = True
                print(f"verify: the time limit ran out inside {describe(a)} on N={self.size}; the exploration stops "
                      f"there (inconclusive)", file=sys.stderr)
            return Step(s, a, Outcome.REFUSED, s, Detail(), f"{describe(a)}: the run's time limit ran out")
        # The scheduler's own failure, never the checker's: SystemExit and KeyboardInterrupt too
        # (a real SIGINT raises interrupt.Interrupted, which is not caught here).
        except (Exception, SystemExit, KeyboardInterrupt) as e:
            return Step(s, a, Outcome.FAILED, s, Detail(), f"{describe(a)} raised {type(e).__name__}: {e}")
        if res.outcome is PolicyOutcome.REFUSED:
            changed = None if after.placement == s.placement else after.placement
            return Step(s, a, Outcome.APPLIED, after, Detail(refused=True, changed_to=changed), res.reason)
        return Step(s, a, Outcome.APPLIED, after, Detail(tuple(res.migrations)) if res.migrations else _PLAIN,
                    res.reason)

    def representative(self, s: Live) -> Live:
        return s  # the key already is the class: the search keeps and expands the real object

    def within(self, st: LiveStep) -> bool:
        return True

    def state_to_json(self, s: Live) -> dict[str, Any]:
        return {**state_to_json(s.placement), "jobs": [[j.id, j.g, j.w] for j in s.jobs]}

    def state_from_json(self, d: dict[str, Any]) -> Live:
        raise ValueError("a scheduler's state is the object itself: replay its events from the empty cluster")

    def action_to_json(self, a: Action) -> dict[str, Any]:
        return a.to_json()

    def action_from_json(self, d: dict[str, Any]) -> Action:
        return action_from_json(d)

