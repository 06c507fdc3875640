"""SIGINT / SIGTERM during a run: stop at once, keep what was proved, report it.

:func:`handling` installs handlers for the duration of a run. The first signal sets the stop flag
(:func:`requested` then names it) and, when the main thread is inside an :func:`armed` region
(the search's level work, a claim family's scan), raises :class:`Interrupted` there; outside such
a region the flag alone is checked at the next level or exploration boundary. Later signals only
set the flag, so the report of the interrupted run is always written.

``Interrupted`` derives from BaseException (as KeyboardInterrupt does) so that no ``except
Exception`` in a claim's code swallows it. Forked shard processes ignore both signals
(:func:`shield_child`): the coordinator ends them.

From the program's first moment (:func:`install_early`, before its heavy imports): a signal
before the run began ends the program at once with one line and exit 130 (nothing was computed,
nothing is lost); one after the run (its report being written) only sets the flag.

Code that runs in C with the GIL released (a CP-SAT solve) never lets a Python handler run until
it returns: :func:`on_signal` registers a callback run by a watcher thread as soon as a signal
arrives (``signal.set_wakeup_fd``), e.g. one that stops the solver.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator

INTERRUPTED = "interrupted"
EXIT_INTERRUPTED = 130  # 128 + SIGINT (docs/cli.md)
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """Raised in the main thread by the first SIGINT/SIGTERM inside an armed region."""


_state: dict[str, Any] = {"reason": "", "armed": 0, "installed": False, "began": False, "signal": "", "prog": ""}
_callbacks: list[Callable[[], None]] = []


def requested() -> str:
    """"interrupted" once a signal arrived during the run, else ""."""
    return str(_state["reason"])


def signal_name() -> str:
    """The name of the first signal of the run ("SIGINT", "SIGTERM"), "" when none came."""
    return str(_state["signal"])


def reset() -> None:
    _state.update(reason="", armed=0, signal="")


def _handler(signum: int, frame: Any) -> None:
    first = not _state["reason"]
    _state["reason"] = INTERRUPTED
    if first:
        _state["signal"] = signal.Signals(signum).name
    if first and _state["armed"] > 0:
        raise Interrupted(signal.Signals(signum).name)


def _early(signum: int, frame: Any) -> None:
    """Before the run began: end the program now (exit 130); after it: only set the flag."""
    if _state["began"]:
        _state["reason"] = _state["reason"] or INTERRUPTED
        return
    name = signal.Signals(signum).name
    os.write(2, f"{_state['prog'] or 'program'}: interrupted ({name}) before the run began; nothing written\n"
             .encode())
    raise SystemExit(EXIT_INTERRUPTED)


def install_early(prog: str) -> None:
    """A program's first act (main thread): SIGINT/SIGTERM before the run began exit 130 at once."""
    _state["prog"] = prog
    if threading.current_thread() is threading.main_thread():
        for s in SIGNALS:
            signal.signal(s, _early)


def ignore_from_now() -> None:
    """In a program's own process (:func:`install_early` ran), once its report is written and its
    exit code decided: ignore SIGINT/SIGTERM, so a late signal (a second Ctrl-C while the
    interpreter shuts down, when Python has put the default action back) cannot turn the exit
    code into 130 after a report that says otherwise."""
    if _state["prog"] and threading.current_thread() is threading.main_thread():
        for s in SIGNALS:
            signal.signal(s, signal.SIG_IGN)


def on_signal(callback: Callable[[], None]) -> None:
    """Run ``callback`` from a watcher thread as soon as a signal arrives during :func:`handling`
    (even while the main thread is inside C code); registered for the rest of the process."""
    _callbacks.append(callback)


def _watch(read_fd: int) -> None:
    while True:
        try:
            data = os.read(read_fd, 64)
        except OSError:
            return
        if not data:
            return
        for cb in list(_callbacks):
            try:
                cb()
            except Exception as e:  # a stopper that fails must not end the watcher
                print(f"interrupt: a stop callback failed: {e}", file=sys.stderr)


@contextmanager
def _wakeup() -> Iterator[None]:
    """Signals also write to a pipe a watcher thread reads, which runs the :func:`on_signal` callbacks."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    try:
        old_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    except ValueError:  # not the main thread
        os.close(read_fd)
        os.close(write_fd)
        yield
        return
    watcher = threading.Thread(target=_watch, args=(read_fd,), daemon=True, name="signal-watch")
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old_fd)
        os.close(write_fd)
        watcher.join(timeout=1)
        os.close(read_fd)


@contextmanager
def handling() -> Iterator[None]:
    """Catch SIGINT and SIGTERM for the block (main thread only), restoring the old handlers.
    Once the block ran, a program's early handler (:func:`install_early`) only sets the flag."""
    reset()
    old = {s: signal.getsignal(s) for s in SIGNALS}
    for s in old:
        signal.signal(s, _handler)
    _state["installed"] = True
    _state["began"] = True
    try:
        with _wakeup():
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
