"""Every legal tie-break of an event as the state model's successors (issue 13, ``--ties all``),
and one random legal tie-break (``--random K --ties all``), for any model of a scheduler that
exposes its tie points (``heuristics.gpu.ties``): the flat ``PolicyModel`` and the hierarchical
``HierModel`` share these.

A model supplies ``run(event, chooser) -> Step``: the event from a fixed state with the scheduler's
tie points answered by ``chooser``. :func:`every_tie` runs every event under every legal choice
sequence (``heuristics.gpu.ties.every_script``: lexicographic, the default tie-breaking first) and
keeps one step per distinct result; the kept steps' events carry the choices taken
(``Event.choices``), so stepping such an event again (a replay) re-takes them.
"""
from __future__ import annotations

from typing import Any, Callable, Generic, Hashable, Iterable

from heuristics.gpu.ties import Drawn, Script, every_script
from proofs_check.core.model import Outcome, S, Step
from proofs_check.gpu.events import Event

Run = Callable[[Any, Script], Step[S, Any]]  # an Event, or another action with ``choices``


def every_tie(events: Iterable[Any], run: Run[S],
              result_key: Callable[[Step[S, Any]], Hashable]) -> dict[Any, Step[S, Any]]:
    """Each event once per distinct result over all its choice sequences: ``result_key`` of an
    applied step (the successor and whatever a transition claim reads of it), else the outcome
    (refused / failed). The steps by their choice-carrying events, in the order found."""
    ready: dict[Any, Step[S, Any]] = {}
    for ev in events:
        results: set[Hashable] = set()
        for made, st in every_script(lambda script: run(ev, script)):
            key = result_key(st) if st.outcome is Outcome.APPLIED else st.outcome
            if key in results:
                continue
            results.add(key)
            a = ev._replace(choices=tuple(c.taken for c in made))
            object.__setattr__(st, "action", a)
            ready[a] = st
    return ready


def drawn_step(run: Run[S], a: Any, draw: Callable[[int], int]) -> Step[S, Any]:
    """``a`` with every tie point answered by ``draw(k)`` (an option index below k); the step's
    action carries the options drawn, so a trace of such steps replays."""
    chooser = Drawn(draw)
    st = run(a, chooser)
    object.__setattr__(st, "action", a._replace(choices=chooser.taken()))
    return st


class ReadySteps(Generic[S]):
    """The steps ``actions`` computed from one state (:func:`every_tie`), kept for the ``step``
    calls the search makes next from that state."""

    def __init__(self) -> None:
        self.state: S | None = None
        self.steps: dict[Any, Step[S, Any]] = {}

    def keep(self, s: S, steps: dict[Any, Step[S, Any]]) -> None:
        self.state, self.steps = s, steps

    def take(self, s: S, a: Any) -> Step[S, Any] | None:
        return self.steps.pop(a, None) if s is self.state else None
