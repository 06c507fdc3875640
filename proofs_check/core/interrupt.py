"""SIGINT / SIGTERM during a run: stop at once, keep what was proved, report it.

:func:`handling` installs handlers for the duration of a run. The first signal sets the stop flag
(:func:`requested` then names it) and, when the main thread is inside an :func:`armed` region
(the search's level work, a claim family's scan), raises :class:`Interrupted` there; outside such
a region the flag alone is checked at the next level or exploration boundary. Later signals only
set the flag, so the report of the interrupted run is always written.

``Interrupted`` derives from BaseException (as KeyboardInterrupt does) so that no ``except
Exception`` in a claim's code swallows it. Forked shard processes ignore both signals
(:func:`shield_child`): the coordinator ends them.
"""
from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Any, Iterator

INTERRUPTED = "interrupted"


class Interrupted(BaseException):
    """Raised in the main thread by the first SIGINT/SIGTERM inside an armed region."""


_state: dict[str, Any] = {"reason": "", "armed": 0, "installed": False}


def requested() -> str:
    """"interrupted" once a signal arrived during the run, else ""."""
    return str(_state["reason"])


def reset() -> None:
    _state.update(reason="", armed=0)


def _handler(signum: int, frame: Any) -> None:
    first = not _state["reason"]
    _state["reason"] = INTERRUPTED
    if first and _state["armed"] > 0:
        raise Interrupted(signal.Signals(signum).name)


@contextmanager
def handling() -> Iterator[None]:
    """Catch SIGINT and SIGTERM for the block (main thread only), restoring the old handlers."""
    reset()
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in old:
        signal.signal(s, _handler)
    _state["installed"] = True
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        reset()
        _state["installed"] = False


@contextmanager
def armed() -> Iterator[None]:
    """A region a signal may abandon at once (raises Interrupted inside; a flag already set raises
    on entry)."""
    if _state["reason"]:
        raise Interrupted(str(_state["reason"]))
    _state["armed"] += 1
    try:
        yield
    finally:
        _state["armed"] -= 1


def shield_child() -> None:
    """In a forked shard process: ignore SIGINT/SIGTERM from the terminal's process group (the
    coordinator terminates the process) and forget the coordinator's stop state."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _state.update(reason="", armed=0, installed=False)
