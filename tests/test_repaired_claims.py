"""The repaired COMPASS variant's claims (issue 8) and the ABS limit claim abs.phi1."""
from __future__ import annotations

from heuristics.gpu.abs_space import AbsView, NodeView
from heuristics.gpu.policy import Migration
from proofs_check.catalogue import VARIANT_CLAIMS, resolve
from proofs_check.cli.verify import main
from proofs_check.core.model import Outcome, Step
from proofs_check.core.verdict import Verdict
from proofs_check.gpu.events import Event
from proofs_check.gpu.flat_claims import FLAT, Bounds, run_flat


def _step(w: int, moves: int) -> Step:
    view = AbsView(8, (NodeView("empty"),))
    migrations = tuple(Migration(0, 1, 0, 0, "compact-pool") for _ in range(moves))
    return Step(view, Event(False, 0, 1, w), Outcome.APPLIED, view, migrations)


def test_migration_probe_uses_the_event_width():
    prop = FLAT["migr"].prop
    assert prop.test(_step(1, 22)) is None
    breach = prop.test(_step(1, 23))
    assert breach["migrations"] == 23 and breach["bound"].endswith("= 22")
    assert prop.test(_step(2, 31)) is None and prop.test(_step(2, 32))["bound"].endswith("= 31")


def test_repaired_makes_and_keeps_its_claims_at_small_bounds():
    claims = [FLAT[c] for c in resolve(list(VARIANT_CLAIMS["repaired"]))]
    assert {c.id for c in claims} >= {"thm1.slotted", "thm1.pool", "thm1.sif", "prop1.abs", "lemA2", "migr"}
    results = run_flat(claims, Bounds(max_nodes=2, depth=6, max_jobs=3, max_w=3), "repaired")
    assert {r.claim_id: r.verdict for r in results} == {c.id: Verdict.HOLDS for c in claims}


def test_literal_breaks_what_repaired_keeps_at_the_same_bounds():
    results = run_flat([FLAT[c] for c in resolve(["thm1"])], Bounds(max_nodes=3, depth=6, max_jobs=4, max_w=2),
                       "literal")
    verdicts = {r.claim_id: r.verdict for r in results}
    assert verdicts["thm1.slotted"] == Verdict.VIOLATED and verdicts["thm1.sif"] == Verdict.VIOLATED


def test_phi_star_plus_one_is_out_of_reach_for_any_abs_state(capsys):
    # a partial pool node and a partial slotted node can never share a node in ABS
    assert main(["--claim", "abs.phi1", "--max-nodes", "2", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "violated at N=2 after 2 events" in out


def test_all_with_variant_runs_the_variants_claims(capsys):
    assert main(["--all", "--variant", "repaired", "--max-nodes", "2", "--depth", "6", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "migr: HOLDS" in out and "ring" not in out
