"""A level's frontier shared out among forked shard processes: a shard that finishes its own
states early takes the rest of another's, from the back (work stealing).

Each shard owns one list of items per level (its frontier). The board holds, in shared memory
inherited through ``fork``, two counters per list: the items before ``front`` are taken by the
owner, those from ``back`` on by other processes. The owner takes chunks from the front, any other
process from the back, each under one lock; an item is taken exactly once. Chunks shrink as the
list empties (guided self-scheduling: half of what is left, shared by the processes, at most
``MAX_CHUNK``), so processes finish within about one item of each other.

Why: a level ends when its slowest shard does. Shards own equal numbers of states, but a state's
successors cost more or less, and on a shared machine one process may lose its core for a while;
the other then waits. A thief needs the victim's items: the search ships each shard's frontier
tail (``tail``) to the others with the level before, and a thief takes only from that tail.
Who expands a state changes no result of the search (``proofs_check.core.search``: every figure
is a sum or a minimum over ranks).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence, TypeVar

from proofs_check.core.engine import WorkerLost

T = TypeVar("T")
MAX_CHUNK = 64  # items taken at once at most (a level's first chunks)
TAIL = 2  # a shard ships the last 1/TAIL of its frontier to the others (what they may take)
LOCK_WAIT = 30.0  # seconds: the lock is held for microseconds, unless its holder died holding it


class WorkBoard:
    """Claim counters of ``count`` lists, shared by forked processes (create before forking)."""

    def __init__(self, count: int) -> None:
        # imported here, as in ``core.ahead``: a serial search imports this module and never makes
        # a board, and multiprocessing costs it 5-15 ms of start-up
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        self.count = count
        self._lock = ctx.Lock()
        self._bounds: Any = ctx.RawArray("q", 2 * count)  # front and back of each list

    def post(self, index: int, size: int) -> None:
        """List ``index`` has ``size`` items, none taken (its owner, as a level starts)."""
        with self._held():
            self._bounds[2 * index] = 0
            self._bounds[2 * index + 1] = size

    @contextmanager
    def _held(self) -> Iterator[None]:
        """The lock, held for a few reads and writes. Not released within ``LOCK_WAIT`` seconds:
        a process ended while it held it (killed), and the level is lost with it."""
        if not self._lock.acquire(timeout=LOCK_WAIT):
            raise WorkerLost("a shard process ended while it held the work board's lock")
        try:
            yield
        finally:
            self._lock.release()

    def _chunk(self, left: int) -> int:
        return max(1, min(MAX_CHUNK, left // (2 * self.count)))

    def take_front(self, index: int) -> tuple[int, int] | None:
        """The owner's next chunk [lo, hi) of list ``index``; None when nothing is left."""
        b = self._bounds
        with self._held():
            lo, back = b[2 * index], b[2 * index + 1]
            if lo >= back:
                return None
            hi = b[2 * index] = lo + self._chunk(back - lo)
            return lo, hi

    def take_back(self, index: int, floor: int) -> tuple[int, int] | None:
        """Another process's next chunk [lo, hi) of list ``index``, none below ``floor`` (the
        start of the tail it holds); None when nothing is left there."""
        b = self._bounds
        with self._held():
            front, hi = b[2 * index], b[2 * index + 1]
            bottom = max(front, floor)
            if hi <= bottom:
                return None
            lo = b[2 * index + 1] = max(bottom, hi - self._chunk(hi - front))
            return lo, hi

    def share(self, index: int, own: Sequence[T], tails: Mapping[int, tuple[int, Sequence[T]]]) -> Iterator[T]:
        """The items this process expands: list ``index``'s (``own``, posted here) chunk by chunk
        from the front, then whatever is left of the other lists' ``tails`` ((start, items from
        start on), as their owners shipped them) from the back.

        Each owner posts its list as it starts, so another process may look at a list not yet
        posted for this level: it then reads the last level's counters, which are exhausted (a
        level ends with every list taken to its end, or the search stops there; a new board
        starts at zero), and takes nothing from it."""
        self.post(index, len(own))
        while (got := self.take_front(index)) is not None:
            yield from own[got[0]:got[1]]
        for j, (start, items) in tails.items():
            while (got := self.take_back(j, start)) is not None:
                yield from items[got[0] - start:got[1] - start]


def tail(items: Sequence[T]) -> tuple[int, list[T]]:
    """(start, items[start:]): the part of a list other processes may take (``TAIL``)."""
    start = len(items) - len(items) // TAIL
    return start, list(items[start:])
