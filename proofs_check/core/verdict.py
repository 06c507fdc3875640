"""Verdicts, the result record every claim check returns, and the verdict rules of an exploration.

Shared by every claim family; imports nothing outside the core.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable

from proofs_check.core.model import Expect

if TYPE_CHECKING:
    from proofs_check.core.model import Property
    from proofs_check.core.search import Exploration, PropertyOutcome, SizeStats


class Verdict(str, Enum):
    HOLDS = "holds"  # holds within the stated bounds, which were fully covered
    VIOLATED = "violated"  # a counterexample was found
    VACUOUS = "vacuous"  # the premise was never met in the explored space
    INCONCLUSIVE = "inconclusive"  # a budget or solver limit was hit before the bounds were covered


# Exit codes of every command (SPEC): 0 ok / holds, 1 violated, 2 bad usage/input, 3 inconclusive.
EXIT_OK, EXIT_VIOLATED, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3


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
    return EXIT_OK


def size_row(s: "SizeStats") -> dict[str, Any]:
    """One row of a report's exploration table (column N is the model's size)."""
    return {"N": s.size, "distinct": s.distinct, "generated": s.generated, "depth": s.depth_reached,
            "at depth bound": s.at_depth_bound, "queue left": s.queue_left, "refused": s.refused,
            "operator failures": s.failures, "pruned (WCC)": s.pruned,
            "seconds": round(s.seconds, 3), "distinct/s": round(s.rate) if s.seconds else None,
            "complete": s.complete, "stop": s.stop_reason}


@dataclass(frozen=True)
class Explained:
    """How a report names the explored sizes: ``where(size)`` for one ("N=3", "D=2, K=3"),
    ``span(first, last)`` for a range ("N=1..3", "D=1..2, K=3"), and the bounds that are not
    sizes ("depth ≤ 10, ≤ 4 jobs, w ≤ 4")."""

    where: Callable[[int], str]
    span: Callable[[int, int], str]
    rest: str


def explored_verdict(prop: "Property[Any, Any]", out: "PropertyOutcome[Any, Any]", exp: "Exploration[Any, Any]",
                     first_size: int, says: Explained) -> tuple[Verdict, str]:
    """The verdict of one explored property (never "holds" for a partial search).

    ALWAYS — violated when a reached step breaks it (shortest trace); else inconclusive when a
    budget or an undecided test stopped the check; else vacuous when its premise ("sometimes")
    was never met; else holds within the stated bounds.
    REACHABLE — holds when the target is reached (the witness is the trace); otherwise
    inconclusive: not reaching it within bounds does not refute reachability.
    """
    covered = says.span(first_size, exp.sizes[-1].size) if exp.sizes else "nothing"
    f = out.finding
    if f is not None:
        at = f"{says.where(f.size)} after {len(f.actions)} events"
        if prop.expect is Expect.REACHABLE:
            return Verdict.HOLDS, f"reached at {at}"
        return Verdict.VIOLATED, f"violated at {at}" + (f" ({f.failure})" if f.failure else "")
    if out.undecided:
        return Verdict.INCONCLUSIVE, out.undecided
    if not exp.complete:
        last = exp.sizes[-1]
        if last.distinct == 0:
            stop = f"{last.stop_reason} before {says.where(last.size)} was explored"
        else:
            stop = f"{last.stop_reason} at {says.where(last.size)} ({last.queue_left:,} states queued)"
        return Verdict.INCONCLUSIVE, f"{stop}; {coverage_text(prop, out, exp, first_size, says)}"
    if prop.expect is Expect.REACHABLE:
        return Verdict.INCONCLUSIVE, f"target not reached within the bounds ({covered})"
    if prop.premise is not None and not out.premise_met:
        return Verdict.VACUOUS, f"premise never met ({covered})"
    return Verdict.HOLDS, f"holds within bounds ({covered}, {says.rest})"


def every_size_verdict(prop: "Property[Any, Any]", verdict: Verdict, message: str, gap: str, every: str,
                       rest: str) -> tuple[Verdict, str]:
    """The verdict of a run asked for every size (``verify --max-nodes all``), from the verdict over
    the sizes it explored. ``gap`` says why those sizes do not stand for every size ('' when a
    cutoff shows they do). Only a holding ALWAYS property changes: it holds for ``every`` size when
    nothing is missing, else it is inconclusive — never "holds" for sizes nobody covered. A
    violation, a reached target, a vacuous premise and an inconclusive check stand as they are."""
    if verdict is not Verdict.HOLDS or prop.expect is not Expect.ALWAYS:
        return verdict, message
    if gap:
        return Verdict.INCONCLUSIVE, f"{message}; not covered for every size: {gap}"
    return Verdict.HOLDS, f"holds for {every} ({rest})"


def coverage_text(prop: "Property[Any, Any]", out: "PropertyOutcome[Any, Any]", exp: "Exploration[Any, Any]",
                  first_size: int, says: Explained) -> str:
    """What an incomplete exploration did prove: the sizes covered completely, and how deep the
    size it stopped in was covered ("holds for N=2..3 within the bounds; N=4 covered to depth 7")."""
    full = [s for s in exp.sizes if s.complete]
    parts: list[str] = []
    if full:
        span = says.span(full[0].size, full[-1].size) if len(full) > 1 else says.where(full[0].size)
        if prop.expect is Expect.REACHABLE:
            parts.append(f"not reached in {span} (fully covered)")
        elif prop.premise is not None and not out.premise_met:
            parts.append(f"no violation in {span} (fully covered; premise not met yet)")
        else:
            parts.append(f"holds for {span} within the bounds ({says.rest})")
    last = exp.sizes[-1] if exp.sizes else None
    if last is not None and not last.complete:
        if last.distinct:
            parts.append(f"{says.where(last.size)} covered to depth {last.depth_reached}")
    return "; ".join(parts) if parts else "no size covered yet"


def covered(r: ClaimResult) -> dict[str, Any] | None:
    """The structured coverage of an explored claim (JSON ``covered``, JUnit): the sizes covered
    completely, and the size a budget or an interrupt stopped in, covered to which depth."""
    sizes = r.stats.get("sizes")
    if not sizes:
        return None
    bound = r.bounds.get("depth")
    full = [s["N"] for s in sizes if s["complete"]]
    out: dict[str, Any] = {"complete": not any(not s["complete"] for s in sizes), "sizes covered": full,
                           "depth bound": bound}
    last = sizes[-1]
    if not last["complete"]:
        out["stopped"] = {"N": last["N"], "reason": last["stop"], "covered to depth": last["depth"],
                          "distinct": last["distinct"], "queue left": last["queue left"],
                          "started": last["distinct"] > 0}
    return out


def covered_text(c: dict[str, Any]) -> str:
    full = c["sizes covered"]
    parts = [f"N = {full[0]}..{full[-1]} completely" if len(full) > 1 else
             f"N = {full[0]} completely" if full else "no size completely"]
    st = c.get("stopped")
    if st is not None:
        parts.append(f"N = {st['N']} to depth {st['covered to depth']} of {c['depth bound']} ({st['reason']})"
                     if st["started"] else f"N = {st['N']} not started ({st['reason']})")
    return "covered: " + "; ".join(parts)
