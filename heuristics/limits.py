"""Bounds on the sizes a run would need, checked before anything is allocated.

A snapshot of ``"nodes": 1000000000``, a trace row with w = 10⁹, ``ringsim --seeds 10**9`` or
``--measure inf`` are well-formed but would make a run grow until memory or patience runs out.
Every reader and command-line program checks the sizes it is given against the limits here
(:func:`within`) and refuses a larger one with one line naming the field and the limit, e.g.::

    snap.json: field 'nodes': 1000000000 > the limit of 100000 nodes (raise it with --limit nodes=N)

Each program that reads such a size takes ``--limit SIZE=N`` (repeatable; ``SIZE`` one of
:class:`Size`) to raise (or lower) a limit for the run; :func:`set_limit` is what it calls.
Non-finite numbers (nan, inf) are refused wherever a finite one is meant (:func:`finite`).
"""
from __future__ import annotations

import math
from enum import Enum
from typing import Callable


class Size(Enum):
    """A size a run allocates in proportion to."""

    NODES = "nodes"            # nodes of a cluster (snapshot, node list, --nodes, N(η) of a trace)
    INSTANCES = "instances"    # instances of one job (w) or of a snapshot (Σ n_g)
    CAPACITY = "capacity"      # GPUs (chips) per node (rack)
    SEEDS = "seeds"            # seeds of a sweep
    RACKS = "racks"            # racks of a torus (X·Y·Z)
    CELLS = "cells"            # runs of a sweep (schedulers × loads × seeds …)
    DURATION = "duration"      # simulated time of a window, in the program's unit
    BYTES = "bytes"            # bytes of an input file read whole (a snapshot, a report)
    LINE = "line"              # bytes of one line of a line-oriented input (a log's JSON line, a trace row)


DEFAULTS: dict[Size, int] = {
    Size.NODES: 100_000,
    Size.INSTANCES: 1_000_000,
    Size.CAPACITY: 4_096,
    Size.SEEDS: 10_000,
    Size.RACKS: 10_000,
    Size.CELLS: 1_000_000,
    Size.DURATION: 10_000_000,
    Size.BYTES: 256 << 20,
    Size.LINE: 16 << 20,
}
_limits: dict[Size, int] = dict(DEFAULTS)

FLAG = "--limit"


class LimitError(ValueError):
    """A size above its limit (or a number that must be finite and is not): one line,
    ``<source>: field '<field>': <problem>`` — the shape of every reader's input error."""

    def __init__(self, source: str | None, field_name: str | None, problem: str) -> None:
        self.source, self.field, self.problem = source, field_name, problem
        where = [] if source is None else [source]
        if field_name is not None:
            where.append(f"field '{field_name}'")
        super().__init__(": ".join([*where, problem]).replace("\r", "\\r").replace("\n", "\\n"))

    def __reduce__(self) -> tuple[type["LimitError"], tuple[str | None, str | None, str]]:
        return LimitError, (self.source, self.field, self.problem)


# An error type a reader raises for its own input: built from (source, field, problem).
ErrorOf = Callable[[str, str | None, str], Exception]


def limit(size: Size) -> int:
    """The current limit on ``size``."""
    return _limits[size]


def set_limit(size: Size, value: int) -> None:
    """Set the limit on ``size`` for the rest of the process (``--limit SIZE=N``)."""
    if value < 1:
        raise LimitError(FLAG, size.value, f"{value} must be >= 1")
    _limits[size] = value


def reset() -> None:
    """Every limit back to its default (a program's parser does this when it is built)."""
    _limits.clear()
    _limits.update(DEFAULTS)


def parse_setting(text: str) -> tuple[Size, int]:
    """``SIZE=N`` → (size, N); N may be written ``1e6``. LimitError naming the flag otherwise."""
    name, eq, raw = text.partition("=")
    known = ", ".join(s.value for s in Size)
    try:
        size = Size(name.strip())
    except ValueError:
        raise LimitError(FLAG, None, f"{text!r}: unknown size {name!r} (known: {known})") from None
    try:
        number = float(raw)
    except ValueError:
        number = math.nan
    if not eq or not math.isfinite(number) or number != int(number) or number < 1:
        raise LimitError(FLAG, size.value, f"{raw!r} is not a whole number >= 1 (write {size.value}=N)")
    return size, int(number)


def message(size: Size, value: float) -> str:
    shown = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{shown} > the limit of {limit(size)} {size.value} (raise it with {FLAG} {size.value}=N)"


def within(size: Size, value: float, source: str | None, field_name: str | None,
           error: ErrorOf | None = None) -> None:
    """Refuse ``value`` above the limit on ``size``: ``error(source, field, problem)`` (a reader's own
    input error; :class:`LimitError` by default)."""
    if value > limit(size):
        problem = message(size, value)
        if error is None:
            raise LimitError(source, field_name, problem)
        raise error(source or "", field_name, problem)


def line_too_long(line: str) -> bool:
    """Whether the line (decoded text) has more UTF-8 bytes than the limit on :attr:`Size.LINE`
    (encoded only when its length alone cannot decide)."""
    cap = limit(Size.LINE)
    return len(line) > cap or (4 * len(line) > cap and len(line.encode("utf-8", "surrogatepass")) > cap)


def line_problem() -> str:
    """What a reader says of a line over the limit."""
    return f"a line of more than {limit(Size.LINE)} bytes (raise it with {FLAG} {Size.LINE.value}=N)"


def finite(value: float, source: str | None, field_name: str | None) -> float:
    """``value`` when it is a finite number; LimitError ("not a finite number") otherwise."""
    if not math.isfinite(value):
        raise LimitError(source, field_name, f"{value!r} is not a finite number")
    return value
