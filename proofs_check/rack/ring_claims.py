"""The RingStitch claims (RingStitch, arXiv:2609.37627v1, §IV-C) in the catalogue: ``ring-exact`` (``ring_exact.py``: the
ring order is a minimum tour for ≤ 8 racks) and ``ring-choice`` (``ring_choice.py``: the chosen
rack set against the lexicographic optimum). Both are scans checked against exact oracles; their
records replay by re-solving the instance."""
from __future__ import annotations

from importlib import import_module
from typing import Any, Callable

from proofs_check.core.claim import ClaimDoc
from proofs_check.core.trace import Record
from proofs_check.core.verdict import ClaimResult, Verdict
from proofs_check.rack.outcome import Match

_SMALL = "small instances"
RING_CLAIMS: tuple[ClaimDoc, ...] = (
    ClaimDoc("ring-exact", "RingStitch ring order (arXiv:2609.37627v1 §IV-C)", "≤ 8 racks",
             "the ring order is optimal (9–12 racks: worst nearest-neighbour/optimal ratio reported)",
             "RingStitch (proofs_check.rack.ring_claims)"),
    ClaimDoc("ring-choice", "RingStitch rack choice (arXiv:2609.37627v1 §IV-C)", _SMALL,
             "distance of the chosen rack set from the lexicographic optimum (racks, ring cost, fragmentation)",
             "RingStitch (proofs_check.rack.ring_claims)"),
)


def _on_call(module: str, name: str) -> Callable[..., Any]:
    """``proofs_check.rack.<module>.<name>``, imported when called: the ring checks need numpy and
    the rack heuristics, which a `verify` of other claims would otherwise import at every start."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(import_module(f"proofs_check.rack.{module}"), name)(*args, **kwargs)
    call.__name__ = name
    return call


CHECKS: dict[str, Callable[..., list[ClaimResult]]] = {"ring-exact": _on_call("ring_exact", "check_ring_exact"),
                                                       "ring-choice": _on_call("ring_choice", "check_ring_choice")}
REPLAYS: dict[str, Callable[[Record], tuple[Match, list[str]]]] = {
    "ring-exact": _on_call("ring_exact", "replay_ring_exact"), "ring-choice": _on_call("ring_choice", "replay_ring_choice")}


def replay_ring(rec: Record) -> tuple[ClaimResult, list[str]]:
    """Re-run a RingStitch record by re-solving the instance exactly: 'suboptimal' reproduces the
    violation, 'optimal' means it no longer does."""
    cid = rec["claim"]
    status, shown = REPLAYS[cid](rec)
    lines = [f"replay {cid}"] + list(shown)
    b = {"record": "ring"}
    if status is Match.SUBOPTIMAL:
        return ClaimResult(cid, Verdict.VIOLATED, "reproduced", b, counterexample=rec), lines
    if status is Match.OPTIMAL:
        return ClaimResult(cid, Verdict.HOLDS, "no longer reproduces (RingStitch now picks the optimum)", b), lines
    return ClaimResult(cid, Verdict.INCONCLUSIVE, "the exact oracle did not finish (time limit)", b), lines
