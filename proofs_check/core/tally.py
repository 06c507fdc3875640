"""What one level of the search found, per property, by rank (see ``proofs_check.core.search``)."""
from __future__ import annotations

from typing import Any, Iterable

from proofs_check.core.model import Numbers, Property, Step, Undecided

Rank = tuple[int, ...]


class Tally:
    """Per property, the minimum-rank finding, premise met and undecided test of one level, and
    how many checked steps showed each of its coverage situations.

    Each rank table maps a property name to (rank, payload): a finding's payload is (numbers,
    failure reason or ""), an undecided test's its message, a premise's None. ``covered`` maps
    (property, situation) to a count over every step the property was evaluated on (a level
    cut by a budget still counts the steps it checked).
    """

    def __init__(self) -> None:
        self.finding: dict[str, tuple[Rank, tuple[Numbers, str]]] = {}
        self.premise: dict[str, tuple[Rank, None]] = {}
        self.undecided: dict[str, tuple[Rank, str]] = {}
        self.covered: dict[tuple[str, str], int] = {}

    @staticmethod
    def _lower(table: dict[str, Any], name: str, rank: Rank, payload: Any) -> None:
        if name not in table or rank < table[name][0]:
            table[name] = (rank, payload)

    def found(self, name: str, rank: Rank, numbers: Numbers, failure: str = "") -> None:
        self._lower(self.finding, name, rank, (numbers, failure))

    def evaluate(self, props: Iterable[Property[Any, Any]], st: Step[Any, Any], new: bool, rank: Rank) -> None:
        for p in props:
            if not p.applies(st, new):
                continue
            if p.premise is not None and (p.name not in self.premise or rank < self.premise[p.name][0]) \
                    and p.premise(st):
                self.premise[p.name] = (rank, None)
            for label, seen in p.coverage:
                if seen(st):
                    key = (p.name, label)
                    self.covered[key] = self.covered.get(key, 0) + 1
            try:
                numbers = p.test(st)
            except Undecided as e:
                self._lower(self.undecided, p.name, rank, str(e))
                continue
            if numbers is not None:
                self.found(p.name, rank, numbers)

    def merge(self, other: "Tally") -> None:
        for mine, theirs in ((self.finding, other.finding), (self.premise, other.premise),
                             (self.undecided, other.undecided)):
            for name, (rank, payload) in theirs.items():
                self._lower(mine, name, rank, payload)
        for key, n in other.covered.items():
            self.covered[key] = self.covered.get(key, 0) + n

    def upto(self, limit: Rank) -> "Tally":
        """Only what transitions from parents ranked ≤ ``limit`` produced (a budget cut)."""
        out = Tally()
        out.finding = {c: v for c, v in self.finding.items() if v[0][:-1] <= limit}
        out.premise = {c: v for c, v in self.premise.items() if v[0][:-1] <= limit}
        out.undecided = {c: v for c, v in self.undecided.items() if v[0][:-1] <= limit}
        out.covered = dict(self.covered)
        return out
