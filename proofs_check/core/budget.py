"""A run's time budget, shared among the explorations that share no state space.

:class:`Budget` *is* the run's deadline (a ``time.perf_counter()`` value, so every check that
compares the clock with the deadline keeps working) and also knows how many explorations are still
to run. Each exploration, when it starts, takes an equal share of the time that is left:
``now + (deadline − now) / explorations left``. An exploration that finishes early leaves its rest
to the ones after it; one that needs more stops at its share (inconclusive, with what it covered),
so no claim is starved by another's long exploration. The split is recorded for the report.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass
class Share:
    """One exploration's part of a run's time budget: seconds allotted, used, and why it stopped."""

    label: str
    allotted: float
    used: float = 0.0
    stop: str = ""


class Budget(float):
    """The deadline (perf_counter seconds) of a run with ``seconds`` of budget over ``parts``
    explorations (set :attr:`parts` once known; 1 = the whole rest to each in turn)."""

    seconds: float
    parts: int
    split: list[Share]

    def __new__(cls, seconds: float, parts: int = 1, start: float | None = None) -> "Budget":
        obj = super().__new__(cls, (time.perf_counter() if start is None else start) + seconds)
        obj.seconds, obj.parts, obj.split = seconds, max(1, parts), []
        return obj

    def share(self, label: str) -> tuple[float, Share]:
        """The deadline of the next exploration, and its record (fill in ``used`` / ``stop``)."""
        now = time.perf_counter()
        left = max(1, self.parts - len(self.split))
        end = now + max(0.0, float(self) - now) / left
        rec = Share(label, end - now)
        self.split.append(rec)
        return end, rec

    def describe(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "explorations": self.parts,
                "rule": "each exploration, when it starts, gets an equal share of the time left",
                "split": [{"exploration": s.label, "allotted s": round(s.allotted, 2), "used s": round(s.used, 2),
                           "stop": s.stop} for s in self.split]}

    def text(self) -> str:
        rows = [f"time budget {self.seconds:g}s over {self.parts} exploration(s); each, when it starts, gets an "
                f"equal share of the time left:"]
        rows += [f"  [{s.label}] {s.allotted:.1f}s allotted, {s.used:.1f}s used" + (f" ({s.stop})" if s.stop else "")
                 for s in self.split]
        return "\n".join(rows)
