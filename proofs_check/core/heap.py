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

Inside the block the youngest generation is also collected less often (every
:data:`YOUNG_THRESHOLD` net allocations of tracked objects instead of CPython's 700). A search
allocates and drops millions of short-lived containers (node views, steps, a scheduler per
expanded state), and each young collection walks what was allocated since the last one: at 700
that was 7 % of a compiled pool5 run's CPU and 3 % of a pure one's. At 200,000 a search's young
collections take no measurable time: ``python benchmarks/bench_gc.py -- ARGS`` (this threshold and
700 side by side; 2026-12-06, pure) showed 35 young collections in 0.00 s against 587 in 0.07 s
at 700 for the pool5 bounds of ``bench_explorer.py``, and 34 in 0.00 s against 1,573 in 0.29 s
(and 3 full ones, 0.12 s) for the README command. Only how soon cyclic garbage is freed changes (a
rebuilt scheduler's slots and units refer to each other): at most that many objects wait a little
longer (peak resident memory 58 against 54 MiB, 81 against 71 MiB).
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator

_active = False
YOUNG_THRESHOLD = 200_000  # gc's first threshold inside ``long_lived`` (CPython's default: 700)


@contextmanager
def long_lived() -> Iterator[None]:
    """Freeze after each :func:`settle` within the block; unfreeze at its end. Nested, or when
    something else froze objects already, the block leaves the collector as it is."""
    global _active
    if _active or gc.get_freeze_count():
        yield
        return
    _active = True
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], YOUNG_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        _active = False
        gc.set_threshold(*before)
        gc.unfreeze()


def settle() -> None:
    """Everything alive now lives as long as the exploration (inside :func:`long_lived` only)."""
    if _active:
        gc.freeze()
