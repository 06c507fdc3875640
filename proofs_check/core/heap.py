"""The search's long-lived heap, kept out of the cyclic garbage collector's full collections.

A breadth-first search only adds to what it keeps: the seen-set, the frontier, the memos of
canonical forms. CPython's collector runs a full collection whenever the objects that survived
grew by a quarter, and each one scans every tracked object again, so a search spends a growing
share of its time in collections that free nothing (``python benchmarks/bench_gc.py``: 12 full
collections, 2.1 s of a symmetric run's 8.5 CPU s; frozen, 6 and 0.5 s). Inside :func:`long_lived`, what is alive after each level is moved to the permanent
generation (``gc.freeze``, the documented use: "prevent … from ever being collected" for objects
that live as long as the process); at its end it is given back (``gc.unfreeze``), so cyclic
garbage made of frozen objects is collected then. Only memory changes: a cycle of frozen objects
that dies during the exploration lives until its end. Shard processes forked inside it (the
``--workers`` pool) inherit it and freeze their own heaps, which also keeps the pages they share
with the coordinator copy-on-write untouched. Elsewhere (a Dask worker) nothing is frozen.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

_active = False


@contextmanager
def long_lived() -> Iterator[None]:
    """Freeze after each :func:`settle` within the block; unfreeze at its end. Nested, or when
    something else froze objects already, the block leaves the collector as it is."""
    global _active
    if _active or gc.get_freeze_count():
        yield
        return
    _active = True
    try:
        yield
    finally:
        _active = False
        gc.unfreeze()


def settle() -> None:
    """Everything alive now lives as long as the exploration (inside :func:`long_lived` only)."""
    if _active:
        gc.freeze()
