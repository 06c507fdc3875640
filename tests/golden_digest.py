"""The part of a `verify --json` report that a refactor must not change.

Per claim: the verdict, every exploration figure (states generated / distinct / refused / failed /
pruned, depth, queue, stop reason) and the counterexample trace (events, states after each event,
the numbers that break the claim). Wall-clock figures differ between any two runs and are
dropped; so are the report's wording (messages, bound descriptions, rendered text), which a
redesign may change.
"""
from __future__ import annotations

from typing import Any

TIMING_KEYS = frozenset({"seconds", "distinct/s"})
TRACE_KEYS = ("events", "states", "numbers")
# The record envelope of the versioned trace format (proofs_check/core/trace.py); the redesign added
# it to count and RingStitch records, which carry the same content inside it.
ENVELOPE_KEYS = frozenset({"format_version", "kind", "claim"})


def strip_timings(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: strip_timings(v) for k, v in x.items() if k not in TIMING_KEYS}
    if isinstance(x, list):
        return [strip_timings(v) for v in x]
    return x


def _counterexample(ce: dict[str, Any] | None) -> Any:
    if ce is None:
        return None
    if ce.get("kind") == "trace":
        return {k: ce.get(k) for k in TRACE_KEYS}
    return strip_timings({k: v for k, v in ce.items() if k not in ENVELOPE_KEYS})


def _stats(stats: dict[str, Any] | None) -> Any:
    kept = {k: v for k, v in (stats or {}).items() if k != "exploration"}
    if "witness" in kept:  # a reached target's trace, recorded like a counterexample
        kept["witness"] = _counterexample(kept["witness"])
    return strip_timings(kept)


def digest(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One comparable record per claim result, in report order."""
    return [{"claim_id": r["claim_id"], "verdict": r["verdict"], "stats": _stats(r.get("stats")),
             "counterexample": _counterexample(r.get("counterexample"))}
            for r in report["results"]]
