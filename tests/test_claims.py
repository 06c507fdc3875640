"""The claim catalogue (proofs_check.catalogue) and the flat and count claim families: verdict rules
(holds / violated / vacuous / inconclusive), the count-vector claims against an independent brute force."""
from dataclasses import replace

import pytest

from oracle.gpu.paper_phi import closed_form_phi, wcc_holds
from oracle.gpu.phi_star import phi_star_bruteforce
from proofs_check.catalogue import DOCS, THEOREMS, resolve
from proofs_check.core.model import Outcome
from proofs_check.core.replay import replay_steps
from proofs_check.core.verdict import Verdict
from proofs_check.gpu.count_claims import COUNT_CLAIMS, COUNTS, alg2_compare, check_counts, closed_form_compare, \
    count_vectors
from proofs_check.gpu.events import Event
from proofs_check.gpu.flat_claims import FLAT, FLAT_CLAIMS, Bounds, compass_factory, run_flat
from proofs_check.gpu.hier_claims import HIER_CATALOGUE, owns
from proofs_check.gpu.policy_model import EventBounds, PolicyModel
from proofs_check.rack.ring_claims import CHECKS as RING_CHECKS
from proofs_check.rack.ring_claims import RING_CLAIMS

SMALL = Bounds(max_nodes=2, depth=4, max_jobs=3, max_w=2)


def test_catalogue_is_complete_and_unique():
    ids = [*(c.id for c in FLAT_CLAIMS), *(c.id for c in COUNT_CLAIMS), *(d.id for d in RING_CLAIMS),
           *(c.id for c in HIER_CATALOGUE)]
    assert len(ids) == len(set(ids)) and list(DOCS) == ids
    for need in ("thm1.slotted", "thm1.pool", "thm1.sif", "prop1.abs", "prop1.operators", "lemA2", "prop3.arrival",
                 "prop3.departure", "prop3.tight", "closed-form", "alg2.wcc", "alg2.nowcc",
                 "ring-exact", "ring-choice"):
        assert need in DOCS
    for d in DOCS.values():
        assert d.ref and d.premise and d.property and d.checked
    # every claim is checked by exactly one family (so a selected claim is never silently dropped),
    # and a state claim's property is named by its id
    for cid in DOCS:
        assert [cid in FLAT, cid in COUNTS, cid in RING_CHECKS, owns(cid)].count(True) == 1, cid
    assert all(c.prop.name == c.id for c in FLAT_CLAIMS) and all(c.prop.name == c.id for c in HIER_CATALOGUE)
    assert all(callable(c.compare) for c in COUNT_CLAIMS)
    assert resolve(["thm1"]) == list(THEOREMS[1])
    assert set(resolve(["prop3"])) == {"prop3.arrival", "prop3.departure", "prop3.tight"}
    assert set(resolve(["prop1"])) == {"prop1.abs", "prop1.operators"}
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
    r = check_counts(COUNTS["closed-form"], SMALL.max_nodes)
    assert r.verdict in (Verdict.HOLDS, Verdict.VIOLATED)
    assert r.stats["checked"] > 0
    if r.verdict == Verdict.VIOLATED:  # the counterexample really is one (brute force)
        ce = r.counterexample
        counts = tuple(ce["counts"])
        assert wcc_holds(counts)
        assert phi_star_bruteforce(counts, ce["N"]).objective != closed_form_phi(counts)


def test_vacuous_when_premise_never_met():
    """lemA2 needs a FUF anchor; with arrivals restricted to g ∈ {1,2,4} none is ever placed."""
    lem = replace(FLAT["lemA2"], demands=(1, 2, 4))
    r = run_flat([lem], SMALL)[0]
    assert r.verdict == Verdict.VACUOUS and "premise never met" in r.message


def test_reachability_inconclusive_until_reached():
    tight = [FLAT["prop3.tight"]]
    short = run_flat(tight, Bounds(max_nodes=2, depth=1, max_jobs=3, max_w=2))[0]
    assert short.verdict == Verdict.INCONCLUSIVE
    longer = run_flat(tight, Bounds(max_nodes=3, depth=4, max_jobs=3, max_w=3))[0]
    assert longer.verdict == Verdict.HOLDS and longer.counterexample is None
    assert longer.stats["witness"]["numbers"]["Φπ"] == 2


def test_holds_requires_complete_coverage():
    pool = [FLAT["thm1.pool"]]
    assert run_flat(pool, SMALL)[0].verdict == Verdict.HOLDS
    capped = run_flat(pool, replace(SMALL, max_states=10))[0]
    assert capped.verdict == Verdict.INCONCLUSIVE


def test_operator_failure_violates_prop1():
    """Decided by the step's outcome (Outcome.FAILED), not by the text of its reason: the last
    event of the counterexample replays as an operator failure of the same scheduler."""
    r = run_flat([FLAT["prop1.operators"]], Bounds(max_nodes=1, depth=3, max_jobs=2, max_w=1))[0]
    assert r.verdict == Verdict.VIOLATED
    ce = r.counterexample
    assert ce["failure"] and ce["numbers"] == {"operator failure": ce["failure"]}
    assert ce["shown"][-1]["failure"] == ce["failure"]
    assert r.stats["sizes"][-1]["operator failures"] > 0
    model = PolicyModel(compass_factory("literal"), ce["n_nodes"], EventBounds(FLAT["prop1.operators"].demands, 0, 0))
    steps = replay_steps(model, [Event.from_json(e) for e in ce["events"]])
    assert len(steps) == len(ce["events"]) and steps[-1].outcome is Outcome.FAILED
    assert all(st.outcome is Outcome.APPLIED for st in steps[:-1]) and steps[-1].reason == ce["failure"]


def test_a_check_that_cannot_run_is_an_error_not_a_verdict(monkeypatch):
    """A family whose checker fails (here: the RingStitch module cannot be loaded) raises through
    the catalogue: it never turns into an empty result list or a verdict."""
    from proofs_check import catalogue

    def missing(**kw):
        raise ImportError("No module named 'proofs_check.rack.ring_claims'")

    monkeypatch.setitem(catalogue.RING_CHECKS, "ring-exact", missing)
    with pytest.raises(ImportError, match="ring_claims"):
        catalogue.run(["ring-exact"], catalogue.RunOptions(bounds=SMALL, announce=lambda s: None))


def test_facts_pickle_as_what_they_are_computed_from():
    """A step's memo carries its Facts when a shard ships the step to another (``--workers``):
    they pickle as their state, event and migrations, and give the same values there."""
    import pickle

    from heuristics.gpu.abs_space import AbsView, NodeView, SlotView
    from proofs_check.gpu.facts import Facts
    view = AbsView(8, (NodeView("pool", (0, 0, 1), ()), NodeView("slotted", (), (SlotView(4, 2, 2, (1,)),)),
                       NodeView("empty", (), ())))
    f = Facts(view, Event(True, 2, 2, 1, ()), ())
    g = pickle.loads(pickle.dumps(f))
    assert (g.key, g.event, g.migrations) == (f.key, f.event, f.migrations)
    assert (g.n_nodes, g.counts, g.phi_pi, g.n_pool(), g.n_slotted(), g.pool_units()) == \
           (f.n_nodes, f.counts, f.phi_pi, f.n_pool(), f.n_slotted(), f.pool_units())
