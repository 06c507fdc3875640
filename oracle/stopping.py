"""Stopping a CP-SAT or HiGHS solve from another thread (an interrupt arriving while the solver runs).

A CP-SAT solve runs in C++ with the GIL released, so a Python signal handler only runs when it
returns — up to its whole time limit later — and CP-SAT's own SIGINT handler (on by default) turns
Ctrl-C into "stop this one solve" and hides it from the program. A program that handles its own
signals calls :func:`watch` once: from then on every solve made through :func:`solve` leaves SIGINT
to the program, and :func:`stop_all` (called from the program's signal watcher thread) stops every
solve in progress and makes later ones return at once (status unknown: not proven), so the program
gets back control within milliseconds and reports what it has.

A HiGHS solve (``oracle.highs``, through PuLP) is made stoppable the same way with :func:`running`:
HiGHS polls a user-interrupt callback during simplex, IPM and branch-and-bound, and
``Highs.cancelSolve`` makes it answer "stop" (model status ``kInterrupt``: not proven).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

_lock = threading.Lock()
_running: set[Callable[[], None]] = set()  # how to stop each solve in progress
_state = {"watched": False, "stopped": False}


def watch() -> None:
    """The program handles SIGINT/SIGTERM itself (and calls :func:`stop_all` on one)."""
    _state.update(watched=True, stopped=False)


def reset() -> None:
    _state.update(watched=False, stopped=False)


def stopped() -> bool:
    return bool(_state["stopped"])


def stop_all() -> None:
    """Stop every solve in progress, and every later one at its start (thread-safe)."""
    with _lock:
        _state["stopped"] = True
        for stop in list(_running):
            stop()


@contextmanager
def running(stop: Callable[[], None]) -> Iterator[bool]:
    """A solve runs in the block; :func:`stop_all` calls ``stop`` (which must make it return soon,
    unproven). Yields whether everything was stopped already (the solve should then not search)."""
    with _lock:
        _running.add(stop)
        already = bool(_state["stopped"])
    try:
        yield already
    finally:
        with _lock:
            _running.discard(stop)


def solve(solver: Any, model: Any) -> Any:
    """``solver.solve(model)`` on CP-SAT, stoppable by :func:`stop_all`; its status code."""
    if _state["watched"]:
        solver.parameters.catch_sigint_signal = False
    with running(solver.stop_search) as stopped:
        if stopped:
            solver.parameters.max_time_in_seconds = 0.0
        return solver.solve(model)
