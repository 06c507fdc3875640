"""A program's run under SIGINT/SIGTERM: stop promptly, keep what was done, exit 130.

``verify`` has its own (its search keeps a report of every claim, ``proofs_check.core.interrupt``);
``simulate`` and ``ringsim`` run their work inside :func:`interruptible` (``sifopt`` with
``armed=False``: its solves are stopped and it prints the unproven answer)::

    with interruptible() as stop:
        for result in work():      # a signal abandons the loop at once (serial or --workers)
            done.append(result)
    if stop.signal:                # the work so far is written (marked incomplete), then exit 130
        ...

The first signal raises ``Interrupted`` in the block (later ones only set the flag, so what is
written after the block is written whole), a CP-SAT solve in progress is stopped from the signal
watcher thread (``oracle.stopping``: the solver returns control within milliseconds, not at its
time limit), and worker processes are ended (``proofs_check.core.children``) as the block unwinds.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Iterator

from oracle import stopping
from proofs_check.core import interrupt

EXIT_INTERRUPTED = interrupt.EXIT_INTERRUPTED
_registered: list[bool] = []


@dataclass
class Stop:
    """What stopped the block: "" (nothing, it finished), or the signal's name ("SIGINT")."""

    signal: str = ""

    def note(self, prog: str, what: str) -> None:
        """One line on stderr: ``PROG: interrupted (SIGINT); <what>``."""
        print(f"{prog}: interrupted ({self.signal}); {what}", file=sys.stderr)


@contextmanager
def interruptible(armed: bool = True) -> Iterator[Stop]:
    """Run the block under SIGINT/SIGTERM handling; an interrupt ends the block (not the program)
    and is recorded in the yielded :class:`Stop`. ``armed=False``: the block is not abandoned,
    only its solver calls are stopped (they return unproven), so it ends with what it has."""
    if not _registered:
        interrupt.on_signal(stopping.stop_all)
        _registered.append(True)
    stopping.watch()
    stop = Stop()
    try:
        with interrupt.handling():
            try:
                with interrupt.armed() if armed else nullcontext():
                    yield stop
            except interrupt.Interrupted as e:
                stop.signal = interrupt.signal_name() or str(e) or "SIGINT"
            else:
                if interrupt.requested():  # a signal while the block was ending (or in C code)
                    stop.signal = interrupt.signal_name() or "SIGINT"
    finally:
        stopping.reset()
