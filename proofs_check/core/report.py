"""How `verify` prints its results: the text report, the JSON file and the JUnit XML file.

JUnit mapping (one ``<testcase>`` per claim part; documented in docs/verify.md): *holds* passes,
*violated* is a ``<failure>`` (its text is the counterexample), *inconclusive* is an ``<error>``
(the check could not finish, so CI must not go green on it), *vacuous* is ``<skipped>`` (the
premise was never exercised). The process exit code (0/1/2/3) is the authoritative signal.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from proofs_check.core.claim import ClaimDoc
from proofs_check.core.verdict import ClaimResult, Verdict, covered, covered_text, exit_code

Docs = Mapping[str, ClaimDoc]

EXIT_MEANING = {0: "all checked claims hold (or were measured) within bounds", 1: "a claim is violated",
                2: "bad usage or input", 3: "inconclusive or vacuous"}


def catalogue_text(docs: Iterable[ClaimDoc]) -> str:
    return "\n".join(d.text() for d in docs)


def results_text(results: list[ClaimResult], docs: Docs) -> str:
    out: list[str] = []
    shown_explorations: set[str] = set()
    for r in results:
        label = r.stats.get("exploration")
        if label and label not in shown_explorations:
            shown_explorations.add(label)
            out.append(exploration_table(label, r.stats["sizes"], r.bounds))
            if "cutoff" in r.stats:
                out.append(cutoff_text(r.stats["cutoff"]))
    out.append("")
    for r in results:
        out.append(claim_text(r, docs))
    return "\n".join(out)


def exploration_table(label: str, sizes: list[dict[str, Any]], bounds: dict[str, Any]) -> str:
    head = (f"exploration [{label}] (premise filter: {bounds.get('premise filter', 'none')})\n"
            f"  {'N':>2} {'distinct':>10} {'generated':>11} {'depth':>5} {'at-bound':>9} {'queue':>6} "
            f"{'refused':>8} {'op-fail':>7} {'pruned':>8} {'time s':>8} {'distinct/s':>10}  stop")
    rows = [head]
    for s in sizes:
        rate = f"{s['distinct/s']:,}" if s.get("distinct/s") is not None else "-"
        rows.append(f"  {s['N']:>2} {s['distinct']:>10,} {s['generated']:>11,} {s['depth']:>5} {s['at depth bound']:>9,} "
                    f"{s['queue left']:>6,} {s['refused']:>8,} {s['operator failures']:>7,} {s['pruned (WCC)']:>8,} "
                    f"{s['seconds']:>8.2f} {rate:>10}  {s['stop'] or ('complete' if s['complete'] else '')}")
    return "\n".join(rows)


def cutoff_text(c: dict[str, Any]) -> str:
    """The cutoff search of a ``--max-nodes all`` exploration (gpu.cutoff): one line per graph."""
    rows = [f"  {c['summary']}"]
    rows += [f"    N={g['N']:>2}: {g['states']:>9,} states {g['seconds']:>7.2f}s  "
             + ("slack in every state" if g["slack"] else g["crowded"] or g["stop"]) for g in c["graphs"]]
    phi = c.get("Φ★ check")
    if phi is not None:
        rows.append(f"  Φ★ at N₀ = Φ★ without a node limit for all {phi['count vectors']:,} reachable count vectors"
                    if phi["stable"] else f"  Φ★ not N-stable: {phi['reason']}")
    return "\n".join(rows)


def verdict_word(r: ClaimResult, docs: Docs) -> str:
    """The verdict as a report prints it: ``HOLDS``, ``VIOLATED``, … — and ``MEASURED`` for a
    measurement that was measured completely (its doc's ``measurement``)."""
    c = docs.get(r.claim_id.split("[")[0])
    return "MEASURED" if r.verdict is Verdict.HOLDS and c is not None and c.measurement else r.verdict.value.upper()


def claim_text(r: ClaimResult, docs: Docs) -> str:
    c = docs.get(r.claim_id.split("[")[0])
    lines = [f"{r.claim_id}: {verdict_word(r, docs)} — {r.message}"]
    cov = covered(r) if r.verdict is Verdict.INCONCLUSIVE else None
    if cov is not None:
        lines.append("    " + covered_text(cov))
    if c is not None:
        lines.append(f"    {c.ref}; property: {c.property}")
    if r.stats.get("coverage"):
        lines.append("    exercised" + (" (until the finding)" if r.counterexample is not None else "") + ": "
                     + "; ".join(f"{n:,} {label}" for label, n in r.stats["coverage"].items()))
    if r.counterexample is not None:
        lines.append("    counterexample:")
        lines.extend("    " + ln for ln in trace_text(r.counterexample))
    witness = r.stats.get("witness")
    if witness is not None:
        lines.append("    witness:")
        lines.extend("    " + ln for ln in trace_text(witness))
    return "\n".join(lines)


def trace_text(rec: dict[str, Any]) -> list[str]:
    if rec.get("kind") != "trace":  # count vectors, audit lines, delegated (RingStitch) records
        return record_text(rec)
    names = "the scheduler's own run: its job ids and node numbers" if rec.get("model") == "policy" else \
        "job and node names are stable: jobs numbered in arrival order"
    lines = [f"  N = {rec['n_nodes']}, {len(rec['events'])} events from the empty cluster ({names})"]
    for k, step in enumerate(rec.get("shown", []), start=1):
        lines.append(f"  {k}. {step['event']}" + (f"  -> NOT APPLIED: {step['failure']}" if step["failure"] else ""))
        lines.extend("       " + row for row in step["state"])
        lines.append("       " + ", ".join(f"{k2}={v}" for k2, v in step["figures"].items()))
    nums = {k: v for k, v in rec["numbers"].items() if k not in ("counts",)}
    lines.append("  breaks/reaches: " + "; ".join(f"{k}: {v}" for k, v in nums.items()))
    return lines


SKIPPED_FIELDS = ("kind", "format_version", "claim")  # said by the line above the record


def record_text(rec: dict[str, Any], indent: str = "  ") -> list[str]:
    """A record that is not an event trace (count vectors, audit lines, RingStitch instances), one
    ``field: value`` line per field, nested objects indented below their field; lists and numbers
    as JSON (``[1, 1, 2]``)."""
    lines = []
    for key, value in rec.items():
        if key in SKIPPED_FIELDS and indent == "  ":
            continue
        if isinstance(value, dict) and value:
            lines.append(f"{indent}{key}:")
            lines.extend(record_text(value, indent + "  "))
        else:
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            lines.append(f"{indent}{key}: {text}")
    return lines


def summary_text(results: list[ClaimResult], docs: Docs | None = None) -> str:
    """``summary: 2 holds, 1 violated; exit 1 (…)``; a complete measurement counts as "measured"."""
    code = exit_code(results)
    words = [verdict_word(r, docs or {}).lower() for r in results]
    parts = ", ".join(f"{words.count(w)} {w}" for w in dict.fromkeys(
        [v.value for v in Verdict if v.value in words] + ["measured"]) if words.count(w))
    return f"summary: {parts}; exit {code} ({EXIT_MEANING[code]})"


# --------------------------------------------------------------------------- files
def to_json(results: list[ClaimResult], argv: list[str], bounds: dict[str, Any] | None,
            extra: dict[str, Any] | None = None) -> str:
    import platform  # here and ElementTree below, not at the top: imported only when a file is written
    doc = {
        "tool": "verify", "argv": argv, "python": platform.python_version(),
        "bounds": bounds,
        "exit_code": exit_code(results),
        "results": [{"claim_id": r.claim_id, "verdict": r.verdict.value, "message": r.message,
                     "bounds": r.bounds, "covered": covered(r), "stats": r.stats,
                     "counterexample": r.counterexample} for r in results],
        **(extra or {}),
    }
    return json.dumps(doc, indent=1, ensure_ascii=False, default=str)


def to_junit(results: list[ClaimResult], elapsed: float, docs: Docs) -> str:
    from xml.etree import ElementTree as ET
    suite = ET.Element("testsuite", name="verify", tests=str(len(results)), time=f"{elapsed:.3f}",
                       failures=str(sum(r.verdict == Verdict.VIOLATED for r in results)),
                       errors=str(sum(r.verdict == Verdict.INCONCLUSIVE for r in results)),
                       skipped=str(sum(r.verdict == Verdict.VACUOUS for r in results)))
    for r in results:
        secs = sum(s.get("seconds", 0) for s in r.stats.get("sizes", [])) or r.stats.get("seconds", 0)
        case = ET.SubElement(suite, "testcase", classname=f"verify.{r.claim_id.split('.')[0]}", name=r.claim_id,
                             time=f"{secs:.3f}")
        if r.verdict == Verdict.VIOLATED:
            el = ET.SubElement(case, "failure", message=r.message, type="violated")
            el.text = claim_text(r, docs)
        elif r.verdict == Verdict.INCONCLUSIVE:
            cov = covered(r)
            el = ET.SubElement(case, "error", message=r.message, type="inconclusive")
            if cov is not None:
                el.text = covered_text(cov)
                props = ET.Element("properties")
                case.insert(0, props)
                ET.SubElement(props, "property", name="covered", value=json.dumps(cov, ensure_ascii=False))
        elif r.verdict == Verdict.VACUOUS:
            ET.SubElement(case, "skipped", message=f"vacuous: {r.message}")
        out = ET.SubElement(case, "system-out")
        out.text = json.dumps(r.bounds, ensure_ascii=False, default=str)
    return ET.tostring(suite, encoding="unicode")
