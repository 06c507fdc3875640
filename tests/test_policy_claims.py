"""The policy.* claims for any scheduler (issue 14): `verify --policy`, check_policy, the state machine."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from heuristics.gpu.cluster import Job
from heuristics.gpu.policy import EventResult
from heuristics.gpu.registry import policy_names, protocol_gaps
from proofs_check.catalogue import DOCS, resolve
from proofs_check.cli.verify import main
from proofs_check.gpu.policy_claims import CLAIM_IDS, PolicyError, PolicyTarget
from proofs_check.testing import check_policy, policy_state_machine

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "buggy_scheduler"


def _example_module():
    """The example's scheduler module, loaded from its file (not put on sys.path, where a build's
    egg-info would register its entry points for every later test)."""
    spec = importlib.util.spec_from_file_location("buggy_scheduler_example", EXAMPLE / "buggy_scheduler" / "scheduler.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # picklable classes (--workers) and dataclass lookups need it
    spec.loader.exec_module(mod)
    return mod


_EXAMPLE_MODULE = _example_module()
BuggyBestFit, FixedBestFit = _EXAMPLE_MODULE.BuggyBestFit, _EXAMPLE_MODULE.FixedBestFit


class TightAdmission(FixedBestFit):
    """Off-by-one admission: refuses a job that exactly uses the room left (room == w)."""

    def arrive(self, job: Job) -> EventResult:
        if sum(f // job.g for f in self._free()) <= job.w:
            return EventResult.refused("no room (off by one)")
        return super().arrive(job)


class LeakyRefusal(FixedBestFit):
    """Places the first instance before finding out the job does not fit, and keeps it."""

    def arrive(self, job: Job) -> EventResult:
        res = super().arrive(job)
        if not res.ok:
            free = self._free()
            n = max(range(len(free)), key=free.__getitem__)
            if free[n] >= job.g:
                self._nodes[n].append(__import__("heuristics.gpu.cluster", fromlist=["Instance"]).Instance(job.id, job.g))
        return res


class Crashes(FixedBestFit):
    def depart(self, job_id: int) -> EventResult:
        if len(self._jobs) > 1:
            raise KeyError(job_id)
        return super().depart(job_id)


class NoWithState:
    name, n_nodes, capacity = "nope", 1, 8

    def __init__(self, n_nodes: int, capacity: int = 8) -> None:
        self.n_nodes = n_nodes

    def arrive(self, job):  # pragma: no cover
        return EventResult.applied()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- the CLI
def test_list_policies_prints_every_registered_name(capsys):
    code, out, _ = run(capsys, "--list-policies")
    assert code == 0 and out.split() == policy_names()
    assert {"best-fit", "first-fit", "worst-fit", "fgd", "sifopt", "fft", "drr", "hier-compass"} <= set(out.split())


def test_policy_claims_are_not_in_all_but_resolve():
    assert not any(c.startswith("policy.") for c in DOCS)  # `verify --all` (the golden run) is unchanged
    assert resolve(["policy"]) == list(CLAIM_IDS)


def test_a_class_missing_protocol_methods_is_one_line_exit_2(capsys):
    code, out, err = run(capsys, "--policy", f"{__name__}:NoWithState")
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert "does not implement the scheduler protocol" in err
    assert "missing depart(), placement()" in err
    assert protocol_gaps(FixedBestFit(1)) == []


@pytest.mark.parametrize("argv,needle", [
    (["--policy", "nope"], "unknown policy 'nope'"),
    (["--policy", "no_such_module:X"], "cannot import module 'no_such_module'"),
    (["--policy", "hier-compass", "--max-nodes", "all"], "are for flat schedulers"),
    (["--policy", "best-fit", "--policy-opt", "hier-compass:panels_per_domain=2"], "options of hier-compass only"),
    (["--claim", "policy.valid"], "give --policy NAME"),
    (["--policy", "best-fit", "--claim", "thm1"], "is a COMPASS claim"),
    (["--policy", "best-fit", "--bound", "2/N"], "an integer k"),
])
def test_policy_usage_errors(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == 2 and needle in err, err


def test_policy_sif_counterexample_is_replayable_with_the_policy_name(capsys, tmp_path):
    out = tmp_path / "r.json"
    code, text, _ = run(capsys, "--policy", "best-fit", "--claim", "policy.sif", "--bound", "1", "--max-nodes", "2",
                        "--quiet", "--json", str(out), "--junit", str(tmp_path / "r.xml"))
    assert code == 1 and "policy.sif: VIOLATED — violated at N=2 after 3 events" in text
    rec = json.loads(out.read_text())["results"][0]["counterexample"]
    assert rec["policy"] == "best-fit" and rec["params"]["bound"] == 1
    assert [e["event"] for e in rec["events"]] == ["arrive", "arrive", "depart"]
    assert "<failure" in (tmp_path / "r.xml").read_text()
    code, text, _ = run(capsys, "--replay", str(out))
    assert code == 1 and "policy.sif: VIOLATED — reproduced after event 3" in text


def test_measure_sif_reports_the_largest_gap_per_n_with_a_witness(capsys, tmp_path):
    out = tmp_path / "m.json"
    code, text, _ = run(capsys, "--policy", "best-fit", "--measure", "sif", "--quiet", "--json", str(out))
    assert code == 0
    r = json.loads(out.read_text())["results"][0]
    assert r["claim_id"] == "measure.sif" and r["stats"]["per N"] == {"1": 0, "2": 2, "3": 3}
    assert r["stats"]["max Φπ − Φ★"] == 3 and len(r["stats"]["witness"]["events"]) == 2
    code, text, _ = run(capsys, "--replay", str(out))
    assert code == 0 and "Φπ − Φ★ ≥ 3 reached on the trace" in text


def test_compass_breaks_admission_and_no_stuck(capsys):
    code, text, _ = run(capsys, "--policy", "compass-literal", "--claim", "policy.admission", "--claim",
                        "policy.no-stuck", "--max-nodes", "1", "--quiet")
    assert code == 1
    assert "policy.no-stuck: VIOLATED — violated at N=1 after 3 events (operator failure" in text
    assert "policy.admission: VIOLATED — violated at N=1 after 2 events" in text
    assert PolicyTarget.named("compass-literal").migrating and not PolicyTarget.named("best-fit").migrating


def test_random_sampling_merges_into_policy_claims(capsys):
    code, text, _ = run(capsys, "--policy", "best-fit", "--claim", "policy.valid", "--max-nodes", "1", "--random",
                        "10", "--random-nodes", "4", "--quiet")
    assert code == 0 and "no counterexample in 10 sampled sequences (N ≤ 4)" in text


# --------------------------------------------------------------------------- check_policy
def test_check_policy_reports_the_shortest_counterexample_of_the_example_bug():
    with pytest.raises(AssertionError) as e:
        check_policy(BuggyBestFit, claims=["policy.valid"], max_nodes=3)
    msg = str(e.value)
    assert msg.startswith("policy.valid violated for ")
    assert "N = 2, 2 events" in msg and "1. +J0 (g=3,w=3)" in msg and "2. -J0 (g=3,w=3)" in msg
    assert "job 0: placed but not running" in msg


def test_check_policy_passes_the_fixed_scheduler():
    results = check_policy(FixedBestFit, max_nodes=2)
    assert [r.claim_id for r in results] == ["policy.valid", "policy.no-stuck", "policy.admission"]


def test_admission_finds_an_off_by_one_refusal():
    with pytest.raises(AssertionError, match=r"(?s)policy.admission violated.*N=1 after 1 events.*\+J0 \(g=3,w=2\)"):
        check_policy(TightAdmission, claims=["policy.admission"], max_nodes=2)


def test_valid_catches_a_refusal_that_changes_the_state():
    with pytest.raises(AssertionError, match="changed the scheduler's placement"):
        check_policy(LeakyRefusal, claims=["policy.valid"], max_nodes=2)


def test_no_stuck_turns_an_exception_into_a_counterexample():
    with pytest.raises(AssertionError, match=r"(?s)policy.no-stuck violated.*raised KeyError"):
        check_policy(Crashes, claims=["policy.no-stuck"], max_nodes=1)


def test_check_policy_refuses_a_non_policy():
    with pytest.raises(PolicyError, match="missing"):
        check_policy(NoWithState)


# --------------------------------------------------------------------------- the state machine
def test_state_machine_passes_the_fixed_scheduler():
    run_state_machine_as_test(policy_state_machine(FixedBestFit, n_nodes=8),
                              settings=settings(max_examples=30, stateful_step_count=20, deadline=None,
                                                database=None))


def test_state_machine_finds_the_example_bug():
    with pytest.raises(AssertionError, match="invalid placement"):
        run_state_machine_as_test(policy_state_machine(BuggyBestFit, n_nodes=8),
                                  settings=settings(max_examples=200, stateful_step_count=20, deadline=None,
                                                    database=None))


def test_state_machine_sif_bound_on_a_registered_name():
    with pytest.raises(AssertionError, match="Φπ − Φ★"):
        run_state_machine_as_test(policy_state_machine("worst-fit", n_nodes=4, sif_bound=0),
                                  settings=settings(max_examples=100, stateful_step_count=10, deadline=None,
                                                    database=None))


def test_workers_give_the_same_policy_results(capsys, tmp_path):
    def results(*extra: str) -> list:
        out = tmp_path / f"w{len(extra)}.json"
        run(capsys, "--policy", "first-fit", "--max-nodes", "2", "--depth", "5", "--bound", "1", "--quiet",
            "--json", str(out), *extra)
        return [(r["claim_id"], r["verdict"], r["counterexample"] and r["counterexample"]["events"],
                 [(s["N"], s["distinct"], s["generated"]) for s in r["stats"]["sizes"]])
                for r in json.loads(out.read_text())["results"]]

    assert results() == results("--workers", "2")
