"""The README's findings, said precisely (issue 13, item 5), each pinned to the trace it cites."""
from __future__ import annotations

import pytest

from heuristics.gpu.cluster import Job
from heuristics.gpu.compass import VARIANTS, Compass, make_variant
from heuristics.gpu.policy import Outcome
from proofs_check import catalogue
from proofs_check.core.verdict import Verdict
from proofs_check.gpu.flat_claims import Bounds


def _events(record: dict) -> list[tuple[str, int, int, int]]:
    return [(e["event"], e["job"], e["g"], e["w"]) for e in record["events"]]


def test_lemma_a2_needs_the_prose_refill_rule() -> None:
    """Lemma A.2 holds for literal COMPASS (which refills a departed filler's seat from the pool,
    as the prose of §4.3.3 says) and fails under the Remove pseudocode's bare detach: shortest
    counterexample N = 2, +J0(g=1) +J1(g=1) +J2(g=3) −J0 — J2's FUF slot loses its filler
    while J1 waits in the pool."""
    (bare,) = catalogue.run(["lemA2"], catalogue.RunOptions(bounds=Bounds(max_nodes=2), variant="bare-detach"))
    assert bare.verdict is Verdict.VIOLATED and bare.counterexample is not None
    assert bare.counterexample["n_nodes"] == 2
    # job ids in a record are the representative's labels; the departing one is a 1-GPU job
    assert [(e, g, w) for e, _, g, w in _events(bare.counterexample)] == [
        ("arrive", 1, 1), ("arrive", 1, 1), ("arrive", 3, 1), ("depart", 1, 1)]
    (prose,) = catalogue.run(["lemA2"], catalogue.RunOptions(bounds=Bounds(max_nodes=2, depth=6)))
    assert prose.verdict is Verdict.HOLDS


@pytest.mark.parametrize("dissolve_first", [False, True])
def test_proposition_1_fails_under_both_dissolve_orders(dissolve_first: bool) -> None:
    """+J0(g=3,w=2) +J1(g=1,w=2) −J0 on one node: each of J0's two w4 slots holds one J1 filler;
    removing the first slot leaves its filler no seat whether the seat is chosen before the
    slot is dissolved (the pseudocode, lines 4–8) or after (the other reading): the other slot
    is full and a slotted node offers no pool seat."""
    pol = Compass(1, variant=make_variant("literal", "order", dissolve_first=dissolve_first))
    assert pol.arrive(Job(0, 3, 2)).ok and pol.arrive(Job(1, 1, 2)).ok
    res = pol.depart(0)
    assert res.outcome is Outcome.FAILED and "no slot vacancy, pool seat or empty node" in (res.reason or "")


def test_proposition_1_shortest_trace_is_the_pseudocode_order_only() -> None:
    """The shortest operator failure, +J0(g=3) +J1(g=1) −J0, is one of the pseudocode's order:
    dissolving first re-seats the filler on the freed GPUs."""
    for dissolve_first, ok in ((False, False), (True, True)):
        pol = Compass(1, variant=make_variant("literal", "order", dissolve_first=dissolve_first))
        assert pol.arrive(Job(0, 3, 1)).ok and pol.arrive(Job(1, 1, 1)).ok
        assert pol.depart(0).ok is ok


def test_bare_detach_is_literal_but_for_the_refill() -> None:
    bare, literal = VARIANTS["bare-detach"], VARIANTS["literal"]
    assert make_variant("literal", "bare-detach", replace_departed_filler=False, doc=bare.doc) == bare
    assert literal.replace_departed_filler and not bare.replace_departed_filler
