"""Wait-queue disciplines of the GPU-cluster simulator, chosen by name from ``DISCIPLINES``.

seeds/000 §5.3 only says jobs wait in a queue Q(t) and that fragmentation causes "queue blocking"
with a head-of-line job (§6.6), so the default is strict FIFO with head-of-line blocking; FIFO
with backfill is the usual alternative of peer simulators.

A discipline is ``schedule(queue, fresh_from, try_admit) -> admitted job ids``. ``queue`` is the
list of waiting jobs in submission order and is edited in place; ``try_admit(job)`` asks the
placement policy (which leaves its state unchanged on refusal); ``fresh_from`` is the index of the
first job not yet tried against the current cluster state (0 after the state changed) — jobs
before it were refused by this very state, so trying them again would only cost time.

Backfill here has no reservation for the head (no runtime estimates are assumed): every waiting
job is tried in submission order and admitted when it fits. After any admission the scan is
repeated from the head, since a migrating policy may have made room for a job refused earlier; the
discipline ends when one whole scan admits nothing, so every waiting job was refused by the final
state.
"""
from __future__ import annotations

from typing import Callable

from heuristics.gpu.cluster import Job

TryAdmit = Callable[[Job], bool]
Discipline = Callable[[list[Job], int, TryAdmit], list[int]]


def fifo(queue: list[Job], fresh_from: int, try_admit: TryAdmit) -> list[int]:
    """Strict FIFO: admit from the head until the head does not fit (head-of-line blocking)."""
    admitted: list[int] = []
    if fresh_from > 0:  # the head was already refused by this state
        return admitted
    while queue and try_admit(queue[0]):
        admitted.append(queue.pop(0).id)
    return admitted


def backfill(queue: list[Job], fresh_from: int, try_admit: TryAdmit) -> list[int]:
    """FIFO with backfill (no reservation): any waiting job that fits is admitted, in order."""
    admitted: list[int] = []
    start = fresh_from
    while True:
        kept = queue[:start]
        progressed = False
        for job in queue[start:]:
            if try_admit(job):
                admitted.append(job.id)
                progressed = True
            else:
                kept.append(job)
        queue[:] = kept
        if not progressed or not queue:
            return admitted
        start = 0


DISCIPLINES: dict[str, Discipline] = {"fifo": fifo, "backfill": backfill}


def get_discipline(name: str) -> Discipline:
    try:
        return DISCIPLINES[name]
    except KeyError:
        raise ValueError(f"unknown queue discipline {name!r}; known: {', '.join(DISCIPLINES)}") from None
