"""proofs_check.gpu.hier_check: the abstraction `verify --policy hier-compass` explores by (a rebuild
from HierView states, by default their canonical forms) is checked on states the real scheduler
reaches before it is trusted."""
from __future__ import annotations

import json

import pytest

from heuristics.gpu.hier_compass import HierCompass
from heuristics.gpu.policy import EventResult
from proofs_check.cli.verify import main
from proofs_check.gpu import hier_check
from proofs_check.gpu.hier_check import check_hier_abstraction, trust
from proofs_check.gpu.hier_model import legal_demands
from proofs_check.gpu.hier_policy import HierFactory, HierPolicyModel
from proofs_check.gpu.policy_checks import PolicyError


def model(k: int, d: int, ties: bool = False, factory=None) -> HierPolicyModel:
    return HierPolicyModel(factory or HierFactory((("panels_per_domain", k),)), d, legal_demands(k), 3, 2, ties)


def test_lowest_index_ties_are_not_symmetric_every_tie_break_is():
    """With its default (lowest-index) ties, hier-compass renumbered decides otherwise; its rebuild
    is faithful; under every tie-break the sets of results agree."""
    found = check_hier_abstraction(model(2, 2))
    assert found.rebuild is None and found.symmetry is not None
    assert found.symmetry.startswith("symmetry refused: after [")
    assert check_hier_abstraction(model(2, 2, ties=True)) == (None, None, hier_check.SAMPLE_STATES)
    assert check_hier_abstraction(model(1, 1)).symmetry is None  # one panel: nothing to renumber


class _Counting(HierCompass):
    """Refuses every second arrival: a counter its HierView does not hold (and with_state drops)."""

    arrivals = 0

    def arrive(self, job):
        self.arrivals += 1
        return EventResult.refused("every second arrival") if self.arrivals % 2 == 0 else super().arrive(job)


class _CountingFactory(HierFactory):
    def __call__(self, n_panels: int) -> HierCompass:
        return _Counting(n_panels // self.k, self.k)


def test_hidden_state_refuses_the_rebuild_and_the_run(capsys):
    m = model(2, 1, factory=_CountingFactory((("panels_per_domain", 2),)))
    found = check_hier_abstraction(m)
    assert found.rebuild is not None and found.rebuild.startswith("rebuild refused: after [")
    with pytest.raises(PolicyError, match="rebuild refused"):
        trust(m, strict=False)
    assert "rebuild refused" in capsys.readouterr().err


def test_a_refused_symmetry_explores_the_real_states_and_strict_stops():
    m = model(2, 2)
    trust(m, strict=False)
    assert not m.symmetric and m.checked["merged by"] == "view" and m.checked["refused"]
    view = m.init_states()[0]
    assert m.representative(view) is view
    with pytest.raises(PolicyError, match=r"\(--strict\)"):
        trust(model(2, 2), strict=True)


def test_records_say_how_they_were_explored_and_replay_so(capsys, tmp_path):
    out = tmp_path / "r.json"
    argv = ["--policy", "hier-compass", "--policy-opt", "hier-compass:panels_per_domain=2", "--claim", "policy.sif",
            "--max-nodes", "2", "--quiet", "--json", str(out)]
    assert main(argv) == 1
    report = json.loads(out.read_text())["results"][0]
    assert report["stats"]["abstractions"]["D=2"]["merged by"] == "view"
    assert report["counterexample"]["symmetric"] is False
    capsys.readouterr()
    assert main(["--replay", str(out)]) == 1
    assert "policy.sif: VIOLATED — reproduced" in capsys.readouterr().out
