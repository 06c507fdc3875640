"""proofs_check.gpu.claims: the catalogue, verdict rules (holds / violated / vacuous / inconclusive),
the count-vector claims against an independent brute force."""
from dataclasses import replace

import pytest

from oracle.gpu.paper_phi import closed_form_phi, wcc_holds
from oracle.gpu.phi_star import phi_star_bruteforce
from proofs_check.gpu.claims import (
    CATALOGUE,
    CLAIMS,
    THEOREMS,
    alg2_compare,
    check_counts,
    closed_form_compare,
    count_vectors,
    resolve,
    run_claims,
)
from proofs_check.explorer import Bounds
from proofs_check.core.verdict import Verdict

SMALL = Bounds(max_nodes=2, depth=4, max_jobs=3, max_w=2)


def test_catalogue_is_complete_and_unique():
    ids = [c.id for c in CATALOGUE]
    assert len(ids) == len(set(ids))
    for need in ("thm1.slotted", "thm1.pool", "thm1.sif", "prop1.abs", "prop1.operators", "lemA2", "prop3.arrival",
                 "prop3.departure", "prop3.tight", "closed-form", "alg2.wcc", "alg2.nowcc",
                 "ring-exact", "ring-choice"):
        assert need in CLAIMS
    for c in CATALOGUE:
        assert c.ref and c.premise and c.property and c.applies_to
        assert (c.probe is not None) == (c.kind == "state")
    assert [c.id for c in resolve(["thm1"])] == list(THEOREMS[1])
    assert {c.id for c in resolve(["prop3"])} == {"prop3.arrival", "prop3.departure", "prop3.tight"}
    assert {c.id for c in resolve(["prop1"])} == {"prop1.abs", "prop1.operators"}
    with pytest.raises(ValueError, match="unknown claim"):
        resolve(["thm9"])


def test_count_vectors_enumerates_every_vector_once():
    vs = list(count_vectors(8))
    assert len(vs) == len(set(vs)) == 66  # partitions of 1..8: 1+2+3+5+7+11+15+22
    assert all(sum(g * n for g, n in enumerate(v, 1)) <= 8 for v in vs)


def test_compare_functions_agree_with_brute_force():
    for counts in list(count_vectors(12))[::7]:
        cert = phi_star_bruteforce(counts, 2)
        if not cert.is_optimal:
            continue
        ok, fig = closed_form_compare(counts, 2)
        assert ok == (closed_form_phi(counts) == cert.objective)
        assert fig["Φ★"] == cert.objective
        res = alg2_compare(counts, 2)
        assert res is not None and res[1]["Φ★"] == cert.objective


def test_closed_form_small_bound_gives_a_decided_verdict():
    r = check_counts(CLAIMS["closed-form"], SMALL)
    assert r.verdict in (Verdict.HOLDS, Verdict.VIOLATED)
    assert r.stats["checked"] > 0
    if r.verdict == Verdict.VIOLATED:  # the counterexample really is one (brute force)
        ce = r.counterexample
        counts = tuple(ce["counts"])
        assert wcc_holds(counts)
        assert phi_star_bruteforce(counts, ce["N"]).objective != closed_form_phi(counts)


def test_vacuous_when_premise_never_met():
    """lemA2 needs a FUF anchor; with arrivals restricted to g ∈ {1,2,4} none is ever placed."""
    lem = replace(CLAIMS["lemA2"], demands=(1, 2, 4))
    import proofs_check.gpu.claims as cl
    r = cl.run_claims([lem], SMALL)[0]
    assert r.verdict == Verdict.VACUOUS and "premise never met" in r.message


def test_reachability_inconclusive_until_reached():
    tight = [CLAIMS["prop3.tight"]]
    short = run_claims(tight, Bounds(max_nodes=2, depth=1, max_jobs=3, max_w=2))[0]
    assert short.verdict == Verdict.INCONCLUSIVE
    longer = run_claims(tight, Bounds(max_nodes=3, depth=4, max_jobs=3, max_w=3))[0]
    assert longer.verdict == Verdict.HOLDS and longer.counterexample is None
    assert longer.stats["witness"]["numbers"]["Φπ"] == 2


def test_holds_requires_complete_coverage():
    pool = [CLAIMS["thm1.pool"]]
    assert run_claims(pool, SMALL)[0].verdict == Verdict.HOLDS
    capped = run_claims(pool, replace(SMALL, max_states=10))[0]
    assert capped.verdict == Verdict.INCONCLUSIVE


def test_operator_failure_violates_prop1():
    r = run_claims([CLAIMS["prop1.operators"]], Bounds(max_nodes=1, depth=3, max_jobs=2, max_w=1))[0]
    assert r.verdict == Verdict.VIOLATED
    assert r.counterexample["failure"].startswith("operator failure")
    assert r.counterexample["shown"][-1]["failure"]


def test_missing_delegate_is_an_error_not_a_verdict(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "proofs_check.rack.ring_claims", None)  # import fails
    errors: list[str] = []
    assert run_claims([CLAIMS["ring-exact"]], SMALL, errors=errors) == []
    assert errors and "ring-exact" in errors[0]
