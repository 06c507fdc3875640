"""Work computed ahead on a spare core: ``fn(x)`` for each ``x`` in order, in a forked process.

A serial search leaves the machine's second core idle. What the search will need later and can
compute independently (``verify --policy``'s abstraction checks of the larger cluster sizes, while
it explores the smaller ones) runs there instead, and the search takes each result when it gets
to it (:meth:`Ahead.take`, which waits for it if it is not ready yet).

The results are the ones the search would have computed itself: the child is a fork of this
process, so it runs the same code on the same objects, and the arguments never travel. Whatever
goes wrong there (an exception, a result pickle cannot take, the child killed) makes
:meth:`Ahead.take` return None for that and every later item, and the caller computes it here;
never a different result, never a crash. The child ignores SIGINT (the parent decides), dies
with its parent, and is terminated by :meth:`Ahead.close` when it is no longer wanted.

``multiprocessing`` and ``core.children`` are imported when a child is wanted, not with this
module: a run with nothing to compute ahead (one cluster size) does not pay their 15 ms of
start-up.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Callable, Generic, Hashable, Iterator, Sequence, TypeVar

K = TypeVar("K", bound=Hashable)


def spare_core() -> bool:
    """This process may run work ahead: it can fork, and more than one CPU is available to it."""
    import multiprocessing as mp

    if "fork" not in mp.get_all_start_methods():
        return False
    getaff = getattr(os, "sched_getaffinity", None)
    cpus = len(getaff(0)) if getaff is not None else (os.cpu_count() or 1)
    return cpus > 1


def _serve(conn: Any, fn: Callable[[Any], Any], items: Sequence[Any], parent: int) -> None:
    from proofs_check.core.children import worker_init

    worker_init(parent)
    for x in items:
        try:
            conn.send((x, True, fn(x)))
        except BaseException:  # the parent computes this item and the rest itself
            conn.send((x, False, None))
            return


class Ahead(Generic[K]):
    """``fn(x)`` for each of ``items``, computed in order in a forked child process."""

    def __init__(self, fn: Callable[[K], Any], items: Sequence[K]) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        self._conn, child = ctx.Pipe(duplex=False)
        self._proc: Any = ctx.Process(target=_serve, args=(child, fn, list(items), os.getpid()), daemon=True)
        self._proc.start()
        child.close()  # this process's copy: the read end sees EOF once the child is gone
        self._items = set(items)
        self._got: dict[K, Any] = {}
        self._broken = False

    def take(self, x: K) -> Any:
        """``fn(x)`` as the child computed it, waiting for it if need be; None if the child could
        not (it failed on ``x`` or earlier, or died); None at once if ``x`` is not one of its items
        or was taken before."""
        if x not in self._items:
            return None
        self._items.discard(x)
        while x not in self._got and not self._broken:
            try:
                got, ok, result = self._conn.recv()
            except (EOFError, OSError):
                ok = False
            if not ok:
                self._broken = True
                break
            self._got[got] = result
        return self._got.pop(x, None)

    def close(self) -> None:
        """Stop the child (its unfinished work is dropped) and wait for it."""
        if self._proc.is_alive():
            self._proc.terminate()
        self._proc.join(timeout=5)
        self._conn.close()


def _here(x: Any) -> None:
    return None


@contextmanager
def taken_ahead(fn: Callable[[K], Any], items: Sequence[K]) -> Iterator[Callable[[K], Any]]:
    """A ``take`` for ``fn`` over ``items``: :meth:`Ahead.take` of a child computing them when
    there are items and a spare core (the child is closed when the block ends), else a ``take``
    that answers None, "compute it here", for everything."""
    if not items or not spare_core():
        yield _here
        return
    early = Ahead(fn, items)
    try:
        yield early.take
    finally:
        early.close()
