"""The part of a `verify --json` report that a refactor must not change.

Per claim: the verdict, every exploration figure (states generated / distinct / refused / failed /
pruned, depth, queue, stop reason) and the counterexample trace (events, states after each event,
the numbers that break the claim). Wall-clock figures differ between any two runs and are
dropped; so are the report's wording (messages, bound descriptions, rendered text), which a
redesign may change.

Deliberate edits of the golden file replace only the rows a change of semantics touched, with
``splice`` (which refuses if any other row differs), and are listed here and in test_golden.py:

* the k1-reduces rows (the core search's refused / at-depth-bound figures; test_golden.py);
* issue 13, item 4 (Appendix D re-read): every ``thm2.*`` and ``thm2-lifted.*`` row. Readings H1
  ("a domain belongs to one level only") and H4 ("no pool on the ninth panel") were replaced by the
  text's (a panel belongs to one level, a domain may hold both; a domain's free panels are its
  panel-pool region), so the hierarchical state space, its verdicts and traces changed; the
  lifted claims now count panels with GPU-level work as used. The flat rows and k1-reduces are
  unchanged (``splice`` checks it). Regenerated with
  ``splice(golden, fresh, HIER_ISSUE_13)`` from `verify --all --max-nodes 3 --json`.
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


# The exploration's label is wording; the coverage counts (issue 13) were added after the golden
# run: new figures, not a change of any figure it has.
UNCOMPARED_STATS = frozenset({"exploration", "coverage"})


def _stats(stats: dict[str, Any] | None) -> Any:
    kept = {k: v for k, v in (stats or {}).items() if k not in UNCOMPARED_STATS}
    if "witness" in kept:  # a reached target's trace, recorded like a counterexample
        kept["witness"] = _counterexample(kept["witness"])
    return strip_timings(kept)


def digest(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One comparable record per claim result, in report order."""
    return [{"claim_id": r["claim_id"], "verdict": r["verdict"], "stats": _stats(r.get("stats")),
             "counterexample": _counterexample(r.get("counterexample"))}
            for r in report["results"]]


HIER_ISSUE_13 = ("thm2.", "thm2-lifted.")


def splice(golden: dict[str, Any], fresh: dict[str, Any], prefixes: tuple[str, ...]) -> dict[str, Any]:
    """``golden`` with the result rows whose claim id starts with one of ``prefixes`` taken from
    ``fresh`` (a report of the same claims); ValueError if any other row's digest differs."""
    old, new = golden["results"], fresh["results"]
    if [r["claim_id"] for r in old] != [r["claim_id"] for r in new]:
        raise ValueError("the two reports list different claims")
    rows = []
    for o, n in zip(old, new):
        if n["claim_id"].startswith(prefixes):
            rows.append(strip_timings(n))
        elif digest({"results": [o]}) != digest({"results": [n]}):
            raise ValueError(f"{o['claim_id']} differs outside the deliberate edit")
        else:
            rows.append(o)
    return {**golden, "results": rows}
