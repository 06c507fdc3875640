"""`verify --max-nodes all`: the node-count cutoff (issue 13 item 2; docs/verify.md "Every N")."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from heuristics.gpu.baselines import NodeRulePolicy
from heuristics.gpu.cluster import Instance, Job, Placement
from heuristics.gpu.policy import EventResult
from proofs_check.cli.verify import main
from proofs_check.core.model import Expect, Property
from proofs_check.core.verdict import ClaimResult, Verdict
from proofs_check.gpu import cutoff
from proofs_check.gpu.cutoff import (
    ALL,
    CutoffStatus,
    EveryN,
    core,
    empty_nodes,
    every_n_result,
    find_cutoff,
    phi_star_stable,
    reach_graph,
)
from proofs_check.gpu.flat_claims import ALL_G, FLAT, Bounds, compass_factory, every_n_bounds, run_flat
from proofs_check.gpu.policy_model import EventBounds, PolicyModel

REPAIRED = compass_factory("repaired")
SMALL = EventBounds(ALL_G, 2, 2)  # ≤ 2 jobs of w ≤ 2: at most 4 non-empty nodes


def _repaired(n: int) -> PolicyModel:
    return PolicyModel(REPAIRED, n, SMALL, wcc_trajectory=True)


class ParityBestFit(NodeRulePolicy):
    """Best-fit that reads N: on an odd number of nodes it refuses every 8-GPU job (not
    empty-node symmetric, so no N may stand for the larger ones)."""

    def __init__(self, n_nodes: int) -> None:
        super().__init__("best-fit", n_nodes)

    def _fresh(self) -> "ParityBestFit":
        return ParityBestFit(self.n_nodes)

    def arrive(self, job: Job) -> EventResult:
        if job.g == 8 and self.n_nodes % 2:
            return EventResult.refused("8-GPU jobs only on an even number of nodes")
        return super().arrive(job)


def test_core_deletes_empty_nodes_wherever_they_are() -> None:
    a = Placement(8, ((Instance(0, 2),), (), (Instance(1, 8),)))
    b = Placement(8, ((), (Instance(5, 8),), (), (Instance(3, 2),), ()))
    assert empty_nodes(a) == 1 and empty_nodes(b) == 3
    assert core(a)[0] == core(b)[0]
    assert len(core(b)[0].nodes) == 2
    assert core(a)[0] != core(Placement(8, ((Instance(0, 2), Instance(1, 2)), ())))[0]


def test_repaired_compass_has_a_cutoff_and_larger_n_adds_only_empty_nodes() -> None:
    cut = find_cutoff(_repaired, 1, 6, 10, 2, 100_000)
    assert cut.status is CutoffStatus.CONFIRMED and cut.n0 == 5
    rows = {r["N"]: r for r in cut.rows}
    assert not rows[4]["slack"] and rows[5]["slack"] and rows[6]["padding of N-1"]
    # The argument says every larger N only pads: check it independently three sizes further.
    far = reach_graph(_repaired(8), 10, 2, 100_000)
    at_n0 = reach_graph(_repaired(5), 10, 2, 100_000)
    assert far.complete and far.cores == at_n0.cores
    assert all(empty_nodes(s) == empty_nodes(t) - 3 for s, t in zip(sorted(at_n0.states, key=lambda s: core(s)[0]),
                                                                     sorted(far.states, key=lambda s: core(s)[0])))
    assert phi_star_stable(cut).stable


def test_a_policy_that_reads_n_gets_no_cutoff() -> None:
    events = EventBounds((1, 8), 1, 1)
    cut = find_cutoff(lambda n: PolicyModel(ParityBestFit, n, events), 1, 6, 4, 1, 10_000)
    assert cut.status is CutoffStatus.NOT_FOUND and cut.n0 is None
    assert "N = 2, 3, 4, 5" in cut.reason
    holds = ClaimResult("policy.valid", Verdict.HOLDS, "holds within bounds (N=1..6)", {},
                        {"sizes": [{"N": 6, "complete": True, "at depth bound": 0}]})
    prop: Property = Property("policy.valid", Expect.ALWAYS, lambda st: None)
    r = every_n_result(holds, prop, EveryN.CORE, cut, None, 1, "depth ≤ 4")
    assert r.verdict is Verdict.INCONCLUSIVE and "no cutoff" in r.message and r.bounds["nodes"] == "1..6"


def test_only_n_independent_properties_are_covered(monkeypatch: pytest.MonkeyPatch) -> None:
    cut = find_cutoff(_repaired, 1, 6, 10, 2, 100_000)
    holds = ClaimResult("x", Verdict.HOLDS, "holds within bounds (N=1..6)", {},
                        {"sizes": [{"N": 6, "complete": True, "at depth bound": 0}]})
    prop: Property = Property("x", Expect.ALWAYS, lambda st: None)
    covered = every_n_result(holds, prop, EveryN.CORE, cut, None, 1, "depth ≤ 10")
    assert covered.verdict is Verdict.HOLDS and covered.bounds["nodes"] == ALL
    assert covered.message.startswith("holds for every N ≥ 1 and any number of events")
    reads_n = every_n_result(holds, prop, EveryN.READS_N, cut, None, 1, "depth ≤ 10")
    assert reads_n.verdict is Verdict.INCONCLUSIVE and reads_n.bounds["nodes"] == "1..6"
    # Φ★ claims need Φ★ on N₀ nodes to be Φ★ without a node limit (checked only for count vectors
    # of more instances than N₀: fewer fit one per node). A made-up N₀ = 1 with 3 instances, and
    # an oracle that disagrees between the two node limits:
    one = Placement(8, ((Instance(0, 1), Instance(0, 1), Instance(1, 2)),))
    made_up = cutoff.Cutoff(CutoffStatus.CONFIRMED, 1, "", (), (one,))
    assert phi_star_stable(made_up).stable and phi_star_stable(made_up).vectors == 1
    monkeypatch.setattr(cutoff, "exact_phi_star", lambda counts, n: 1 if n == 1 else 0)
    phi = phi_star_stable(made_up)
    assert not phi.stable and "without a node limit" in phi.reason
    sif = every_n_result(holds, prop, EveryN.PHI_STAR, cut, phi, 1, "depth ≤ 10")
    assert sif.verdict is Verdict.INCONCLUSIVE and "Φ★" in sif.message


def test_a_violation_stands_and_names_its_n() -> None:
    """Literal COMPASS breaks thm1.slotted at N = 2 (docs/verify.md findings): with every N asked
    for, the counterexample is reported as it is, at its N, and the claim is not marked "all"."""
    (r,) = run_flat([FLAT["thm1.slotted"]], every_n_bounds(Bounds(max_jobs=2, max_w=2)), variant="literal")
    assert r.verdict is Verdict.VIOLATED and r.message.startswith("violated at N=2")
    assert r.counterexample is not None and r.counterexample["n_nodes"] == 2
    assert r.bounds["nodes"] == f"1..{r.stats['sizes'][-1]['N']}"


def test_cli_theorem_1_repaired_for_every_n(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    code = main(["--theorem", "1", "--variant", "repaired", "--max-nodes", "all", "--max-jobs", "2", "--max-w", "2",
                 "--quiet", "--json", str(out)])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["bounds"]["max_nodes"] == ALL and doc["bounds"]["cutoff cap"] == 6
    for r in doc["results"]:
        assert r["verdict"] == "holds" and r["bounds"]["nodes"] == ALL
        assert r["stats"]["cutoff"]["N0"] == 5 and r["stats"]["sizes"][-1]["N"] == 6
    assert "cutoff N₀ = 5" in capsys.readouterr().out


def test_cli_refuses_every_n_for_claims_not_explored_over_n(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--claim", "closed-form", "--max-nodes", "all"]) == 2
    assert "closed-form" in capsys.readouterr().err
    assert main(["--claim", "thm1.pool", "--max-nodes", "al"]) == 2


def test_measure_sif_for_every_n(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    code = main(["--policy", "best-fit", "--measure", "sif", "--max-nodes", "all", "--max-jobs", "1", "--max-w", "2",
                 "--depth", "2", "--quiet", "--json", str(out)])
    assert code == 0
    (r,) = json.loads(out.read_text())["results"]
    assert r["bounds"]["nodes"] == ALL and r["message"].startswith("over every N ≥ 1")
    assert r["stats"]["cutoff"]["Φ★ check"]["stable"]


def test_policy_claims_for_every_n_admission_reads_n(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    code = main(["--policy", "best-fit", "--claim", "policy.valid", "--claim", "policy.admission", "--claim",
                 "policy.sif", "--bound", "3", "--max-nodes", "all", "--max-jobs", "1", "--max-w", "2", "--depth", "2",
                 "--quiet", "--json", str(out)])
    assert code == 3
    got = {r["claim_id"]: r for r in json.loads(out.read_text())["results"]}
    assert got["policy.valid"]["verdict"] == "holds" and got["policy.valid"]["bounds"]["nodes"] == ALL
    assert got["policy.sif"]["verdict"] == "holds" and got["policy.sif"]["bounds"]["nodes"] == ALL
    admission = got["policy.admission"]
    assert admission["verdict"] == "inconclusive" and "reads N" in admission["message"]
    assert admission["bounds"]["nodes"] == f"1..{admission['stats']['sizes'][-1]['N']}"
