"""What the RingStitch checks share: how a decision compares with the proven optimum, the
deadline test and progress lines."""
from __future__ import annotations

import time
from enum import Enum
from typing import Callable

Progress = Callable[[str], None] | None


def say(progress: Progress, msg: str) -> None:
    if progress is not None:
        progress(msg)


def passed(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() > deadline


class Match(Enum):
    """How RingStitch's decision compares with the proven optimum on one instance."""

    OPTIMAL = "optimal"
    SUBOPTIMAL = "suboptimal"
    UNDECIDED = "unknown"  # the exact oracle hit its time limit
