"""A program's run under SIGINT/SIGTERM: stop promptly, keep what was done, exit 130.

``verify`` has its own (its search keeps a report of every claim, ``proofs_check.core.interrupt``);
``simulate`` and ``ringsim`` run their work inside :func:`interruptible` (``sifopt`` with
``armed=False``: its solves are stopped and it prints the unproven answer)::

    with interruptible() as stop:
        for result in work():      # a signal abandons the loop at once (serial or --workers)
            done.append(result)
    if stop.signal:                # the work so far is written (marked incomplete), then exit 130
        ...

Out of memory in an armed block (a ``MemoryError``, here or from a worker process) ends it the
same way, with :data:`OUT_OF_MEMORY` as the reason: what was done is written, marked incomplete,
and the program exits 3 (inconclusive, :attr:`Stop.code`) instead of 130.

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
from proofs_check.core.verdict import EXIT_INCONCLUSIVE

EXIT_INTERRUPTED = interrupt.EXIT_INTERRUPTED
OUT_OF_MEMORY = "out of memory"  # Stop.signal when a MemoryError ended the block
_registered: list[bool] = []


@dataclass
class Stop:
    """What stopped the block: "" (nothing, it finished), the signal's name ("SIGINT"), or
    :data:`OUT_OF_MEMORY`."""

    signal: str = ""

    def note(self, prog: str, what: str) -> None:
        """One line on stderr: ``PROG: interrupted (SIGINT); <what>`` (``PROG: out of memory; <what>``)."""
        why = OUT_OF_MEMORY if self.signal == OUT_OF_MEMORY else f"interrupted ({self.signal})"
        print(f"{prog}: {why}; {what}", file=sys.stderr)

    @property
    def code(self) -> int:
        """The exit code of a stopped block: 3 (inconclusive) out of memory, 130 on a signal."""
        return EXIT_INCONCLUSIVE if self.signal == OUT_OF_MEMORY else EXIT_INTERRUPTED


@contextmanager
def solvers_watched() -> Iterator[None]:
    """In the block a SIGINT/SIGTERM stops every CP-SAT and HiGHS solve in progress (and later ones
    return at once, unproven), and no solver installs its own SIGINT handler (CP-SAT's would leave
    SIGINT at its default, so a later Ctrl-C would kill the program without its report). After
    it, solves are ordinary again (a stop does not outlive the run: tests run many in one process)."""
    if not _registered:
        interrupt.on_signal(stopping.stop_all)
        _registered.append(True)
    stopping.watch()
    try:
        yield
    finally:
        stopping.reset()


@contextmanager
def interruptible(armed: bool = True) -> Iterator[Stop]:
    """Run the block under SIGINT/SIGTERM handling; an interrupt ends the block (not the program)
    and is recorded in the yielded :class:`Stop`. ``armed=False``: the block is not abandoned,
    only its solver calls are stopped (they return unproven), so it ends with what it has."""
    stop = Stop()
    with solvers_watched(), interrupt.handling():
        try:
            with interrupt.armed() if armed else nullcontext():
                yield stop
        except interrupt.Interrupted as e:
            stop.signal = interrupt.signal_name() or str(e) or "SIGINT"
        except MemoryError:
            if not armed:  # a block that is not abandoned on a signal is not on out of memory either
                raise
            stop.signal = OUT_OF_MEMORY
        else:
            if interrupt.requested():  # a signal while the block was ending (or in C code)
                stop.signal = interrupt.signal_name() or "SIGINT"
