"""Tie-breaking as an explicit choice (issue 13): every "pick any" and every argmin tie of a
scheduler's pseudocode is a *choice point*.

A scheduler that exposes its ties asks a :class:`Chooser` at each point with k ≥ 2 legal options
(listed in the order its default implementation prefers, so option 0 is the default pick).
:class:`Script` answers from a fixed sequence of option indices and records every point it was
asked about; :func:`every_script` enumerates all legal choice sequences of one event by re-running
it (a stateless depth-first search: run with a prefix, branch at every point past the prefix), so a
verdict over all of them holds for *every* implementation of the pseudocode, not only for the one
whose ties fall to the lowest node index.
"""
from __future__ import annotations

from typing import Callable, Iterator, NamedTuple, Protocol, Sequence, TypeVar

R = TypeVar("R")
T = TypeVar("T")


class Chooser(Protocol):
    def pick(self, point: str, k: int) -> int:
        """The index (0 ≤ i < k) of the option taken at choice point ``point``."""
        ...


class Choice(NamedTuple):
    """One answered choice point: its name, how many options it had, which one was taken."""

    point: str
    options: int
    taken: int


class ScriptError(ValueError):
    """A script names an option a choice point does not have (e.g. a trace replayed on other code)."""


class Script:
    """A :class:`Chooser` that answers from ``script`` and takes option 0 past its end."""

    def __init__(self, script: Sequence[int] = ()) -> None:
        self.script = tuple(script)
        self.made: list[Choice] = []

    def pick(self, point: str, k: int) -> int:
        i = len(self.made)
        taken = self.script[i] if i < len(self.script) else 0
        if not 0 <= taken < k:
            raise ScriptError(f"choice {i + 1} ({point}): option {taken} of {k}")
        self.made.append(Choice(point, k, taken))
        return taken

    def taken(self) -> tuple[int, ...]:
        return tuple(c.taken for c in self.made)


def pick(chooser: Chooser | None, point: str, options: Sequence[T]) -> T:
    """``options[0]`` without a chooser or with one option, else the chooser's pick."""
    if chooser is None or len(options) < 2:
        return options[0]
    return options[chooser.pick(point, len(options))]


def every_script(run: Callable[[Script], R]) -> Iterator[tuple[tuple[Choice, ...], R]]:
    """``run`` under every legal choice sequence, in lexicographic order of the sequences (the
    all-zero one, i.e. the default implementation, first). ``run`` must be deterministic given
    its chooser's answers."""
    stack: list[tuple[int, ...]] = [()]
    while stack:
        script = Script(stack.pop())
        result = run(script)
        made = script.made
        taken = script.taken()
        for i in range(len(script.script), len(made)):  # push so that pops come out in lex order
            for alt in range(made[i].options - 1, 0, -1):
                stack.append(taken[:i] + (alt,))
        yield tuple(made), result


class Drawn(Script):
    """A :class:`Chooser` that answers every point with ``draw(k)`` (e.g. a seeded random source:
    ``verify --random K --ties all`` takes a random legal option at each tie point) and records
    its answers like :class:`Script`, so the sequence it took replays as a script."""

    def __init__(self, draw: Callable[[int], int]) -> None:
        super().__init__()
        self.draw = draw

    def pick(self, point: str, k: int) -> int:
        taken = self.draw(k)
        if not 0 <= taken < k:
            raise ScriptError(f"choice {len(self.made) + 1} ({point}): drew option {taken} of {k}")
        self.made.append(Choice(point, k, taken))
        return taken
