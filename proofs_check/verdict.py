"""Verdicts and the result record every claim check returns (shared by all claim families)."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Verdict(str, Enum):
    HOLDS = "holds"  # holds within the stated bounds, which were fully covered
    VIOLATED = "violated"  # a counterexample was found
    VACUOUS = "vacuous"  # the premise was never met in the explored space
    INCONCLUSIVE = "inconclusive"  # a budget or solver limit was hit before the bounds were covered


# Exit codes of `verify` (SPEC): 0 holds, 1 violated, 2 bad usage/input, 3 inconclusive.
EXIT_HOLDS, EXIT_VIOLATED, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3


@dataclass(frozen=True)
class ClaimResult:
    """The outcome of checking one claim (or one part of a claim).

    ``bounds`` are the bounds the check covered (printed in every report), ``stats`` the search
    statistics and reported figures, ``counterexample`` a JSON-able record that ``--replay`` can
    re-run (None unless violated).
    """

    claim_id: str
    verdict: Verdict
    message: str = ""
    bounds: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    counterexample: dict[str, Any] | None = None


def exit_code(results: list[ClaimResult]) -> int:
    """1 if anything is violated, else 3 if anything is inconclusive, else 0.

    A vacuous claim is not a failure of the policy, but it is not evidence either; it maps to 3
    so a CI job cannot go green on a check whose premise was never exercised.
    """
    verdicts = {r.verdict for r in results}
    if Verdict.VIOLATED in verdicts:
        return EXIT_VIOLATED
    if verdicts & {Verdict.INCONCLUSIVE, Verdict.VACUOUS}:
        return EXIT_INCONCLUSIVE
    return EXIT_HOLDS
