"""Claims about Φ★ formulas (Appendix C), checked over instance-count vectors, not a scheduler.

Every non-empty count vector n_1..n_8 with total demand T = Σ g·n_g ≤ 8·max_nodes is scanned in
order of increasing T; those meeting the claim's WCC premise (holding, or failing for
``alg2.nowcc``) are compared with the exact Φ★ on N nodes, N = the smallest feasible .. max_nodes.
The first disagreement is the counterexample (smallest T first), replayable with ``--replay``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from oracle.gpu.paper_phi import algorithm2, closed_form_phi, total_demand, wcc_holds
from oracle.gpu.phi_star import phi_star as oracle_phi_star
from oracle.result import Status
from proofs_check.core.claim import ClaimDoc
from proofs_check.core.search import Progress
from proofs_check.core.trace import Record, envelope
from proofs_check.core.verdict import ClaimResult, Verdict

Compare = Callable[[tuple[int, ...], int], "tuple[bool, dict[str, Any]] | None"]


@dataclass(frozen=True)
class CountClaim:
    """``compare(counts, N)`` returns None when it could not decide (solver limit), else
    (agrees, figures); ``want_wcc`` selects the vectors where WCC holds (True) or fails (False);
    with ``every_n`` False only the smallest feasible N is checked."""

    doc: ClaimDoc
    compare: Compare
    want_wcc: bool = True
    every_n: bool = True

    @property
    def id(self) -> str:
        return self.doc.id


def count_vectors(max_total: int, capacity: int = 8) -> Iterator[tuple[int, ...]]:
    """Every non-empty n_1..n_G with T = Σ g·n_g ≤ max_total, by increasing T."""
    def rec(g: int, rem: int) -> Iterator[tuple[int, ...]]:
        if g == 0:
            if rem == 0:
                yield ()
            return
        for k in range(rem // g + 1):
            for rest in rec(g - 1, rem - k * g):
                yield rest + (k,)

    for t in range(1, max_total + 1):
        yield from rec(capacity, t)


def _min_feasible_nodes(counts: tuple[int, ...], max_nodes: int) -> int | None:
    for n in range(max(1, -(-total_demand(counts) // 8)), max_nodes + 1):
        if oracle_phi_star(counts, n).status is not Status.INFEASIBLE:
            return n
    return None


def _counts_result(claim: CountClaim, max_nodes: int, checked: int, skipped: int, seconds: float,
                   breach: dict | None, unknown: str, timed_out: bool) -> ClaimResult:
    b = {"max_total_gpus": 8 * max_nodes, "N": f"1..{max_nodes}"}
    stats = {"checked": checked, "not packable in max_nodes nodes": skipped, "seconds": round(seconds, 2)}
    if breach is not None:
        return ClaimResult(claim.id, Verdict.VIOLATED, breach.pop("message"), b, stats,
                           {**envelope("counts", claim.id), **breach})
    if timed_out:
        return ClaimResult(claim.id, Verdict.INCONCLUSIVE, f"time limit hit after {checked} checks", b, stats)
    if unknown:
        return ClaimResult(claim.id, Verdict.INCONCLUSIVE, unknown, b, stats)
    if checked == 0:
        return ClaimResult(claim.id, Verdict.VACUOUS, "no count vector met the premise", b, stats)
    return ClaimResult(claim.id, Verdict.HOLDS, f"holds for all {checked} (counts, N) checks", b, stats)


def check_counts(claim: CountClaim, max_nodes: int, deadline: float | None = None,
                 progress: Progress | None = None) -> ClaimResult:
    """Scan count vectors (WCC holding or failing as ``claim.want_wcc``) and N values.

    ``claim.compare(counts, N)`` returns None when it could not decide (solver limit), else
    (ok, figures). With ``every_n`` False only the smallest feasible N is checked: Φ★ never
    increases with N while eq. (21) ignores N and is a lower bound (a partial node is unavoidable
    when T mod 8 ≠ 0), so agreement at the smallest feasible N implies agreement at every N.
    """
    t0 = time.perf_counter()
    checked = skipped = 0
    unknown = ""
    next_report = t0 + 2.0
    for counts in count_vectors(8 * max_nodes):
        if wcc_holds(counts) != claim.want_wcc:
            continue
        now = time.perf_counter()
        if deadline is not None and now > deadline:
            return _counts_result(claim, max_nodes, checked, skipped, now - t0, None, unknown, True)
        if progress is not None and now > next_report:
            next_report = now + 2.0
            progress(f"[{claim.id}] T={total_demand(counts)}: {checked:,} checks, {checked / (now - t0):,.0f}/s")
        n_min = _min_feasible_nodes(counts, max_nodes)
        if n_min is None:
            skipped += 1
            continue
        for n in range(n_min, max_nodes + 1 if claim.every_n else n_min + 1):
            verdict = claim.compare(counts, n)
            checked += 1
            if verdict is None:
                unknown = unknown or f"solver limit hit at counts {counts}, N={n}"
                continue
            ok, figures = verdict
            if not ok:
                return _counts_result(claim, max_nodes, checked, skipped, time.perf_counter() - t0,
                                      figures, unknown, False)
    return _counts_result(claim, max_nodes, checked, skipped, time.perf_counter() - t0, None, unknown, False)


def _exact(counts: tuple[int, ...], n: int):
    cert = oracle_phi_star(counts, n)
    return cert if cert.is_optimal else None


def _figures(counts, n, cert, **more) -> dict:
    return {"counts": list(counts), "T": total_demand(counts), "N": n, "Φ★": cert.objective,
            "Φ★ witness": [[list(p), m] for p, m in cert.witness], **more}


def closed_form_compare(counts: tuple[int, ...], n: int):
    """Eq. (21) against the exact Φ★ on N nodes."""
    cert = _exact(counts, n)
    if cert is None:
        return None
    cf = closed_form_phi(counts)
    return cf == cert.objective, _figures(counts, n, cert, **{
        "eq. 21": cf, "message": f"eq. 21 gives {cf}, exact Φ★ = {cert.objective} for counts {counts} on N={n}"})


def alg2_compare(counts: tuple[int, ...], n: int):
    """Algorithm 2 (oracle.gpu.paper_phi, literal) against the exact Φ★ on N nodes."""
    cert = _exact(counts, n)
    if cert is None:
        return None
    res = algorithm2(counts, n)
    if res.status == "unknown":
        return None
    ok = res.status == "ok" and res.phi == cert.objective
    got = res.phi if res.status == "ok" else res.status
    return ok, _figures(counts, n, cert, **{
        "Algorithm 2": got, "branch": res.branch, "Algorithm 2 packing": [list(b) for b in res.packing],
        "packing fits N": res.fits,
        "message": f"Algorithm 2 ({res.branch}) gives {got}, exact Φ★ = {cert.objective} for counts {counts} on N={n}"})


_WCC_COUNTS = "WCC holds for the counts"
_SCAN = "all instance-count vectors with T ≤ 8·max_nodes (no scheduler)"

COUNT_CLAIMS: tuple[CountClaim, ...] = (
    CountClaim(ClaimDoc("closed-form", "Appendix C.2, eq. 21", _WCC_COUNTS,
                        "Φ★ = 1[T mod 8 ≠ 0], T = Σ g·n_g (exact Φ★ on N nodes, N = smallest feasible .. max_nodes)",
                        _SCAN), closed_form_compare, every_n=False),
    CountClaim(ClaimDoc("alg2.wcc", "Appendix C.3–C.4, Algorithm 2", _WCC_COUNTS,
                        "Algorithm 2 returns the exact Φ★ (every feasible N ≤ max_nodes)", _SCAN), alg2_compare),
    CountClaim(ClaimDoc("alg2.nowcc", "Appendix C.3–C.4, Algorithm 2 (residual ILP)", "WCC fails for the counts",
                        "Algorithm 2 returns the exact Φ★ (every feasible N ≤ max_nodes)", _SCAN), alg2_compare,
               want_wcc=False),
)
COUNTS: dict[str, CountClaim] = {c.id: c for c in COUNT_CLAIMS}


def replay_counts(claim: CountClaim, rec: Record) -> tuple[ClaimResult, list[str]]:
    """Re-check a saved count-vector record with the exact Φ★."""
    counts, n = tuple(int(x) for x in rec["counts"]), int(rec["N"])
    verdict = claim.compare(counts, n)
    b = {"counts": list(counts), "N": n}
    lines = [f"replay {claim.id}: counts n_1..n_8 = {list(counts)} on N={n}"]
    if verdict is None:
        return ClaimResult(claim.id, Verdict.INCONCLUSIVE, "solver limit hit", b), lines
    ok, figures = verdict
    lines.append("     " + figures.pop("message"))
    if ok:
        return ClaimResult(claim.id, Verdict.HOLDS, "no longer reproduces", b), lines
    return ClaimResult(claim.id, Verdict.VIOLATED, "reproduced", b, counterexample=rec), lines
