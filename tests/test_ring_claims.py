"""Claims ring-exact and ring-choice on small bounds (the full runs live in `verify`)."""
import json

from heuristics.rack.ringstitch import RingStitch
from proofs_check.rack.outcome import Match
from proofs_check.rack.ring_choice import check_ring_choice, replay_ring_choice
from proofs_check.rack.ring_exact import check_ring_exact
from proofs_check.core.verdict import Verdict


def test_ring_exact_holds_and_reports_nn_figure():
    [r] = check_ring_exact(seed=1, samples=20, nn_samples=4, exhaustive_dims=((2, 2, 2),))
    assert r.verdict is Verdict.HOLDS and r.stats["rack_sets_checked"] == 255 + 20
    assert r.stats["nn_worst_ratio"] >= 1.0 and r.bounds["nn_samples"] == 4


def test_ring_choice_finds_the_smallest_counterexample_and_replays_it():
    [r] = check_ring_choice(samples=3, sim_samples=5, exhaustive=(((1, 2, 2), 4),))
    assert r.verdict is Verdict.VIOLATED
    ce = json.loads(json.dumps(r.counterexample))
    assert ce["residual"] == [0, 1, 2, 2] and ce["demand"] == 3  # fewest racks, chips, then D
    assert ce["ringstitch"]["key"][:2] == ce["optimum"]["key"][:2] and ce["ringstitch"]["key"][2] > 0
    status, lines = replay_ring_choice(ce)
    assert status is Match.SUBOPTIMAL and any("optimum" in line for line in lines)
    assert set(ce["smallest_per_key"]) <= {"ring_cost", "fragmentation"}
    for key, record in ce["smallest_per_key"].items():
        level = ["racks", "ring_cost", "fragmentation"].index(key)
        assert record["ringstitch"]["key"][:level] == record["optimum"]["key"][:level]
        assert record["ringstitch"]["key"][level] > record["optimum"]["key"][level]
    assert r.stats["by_key"]["racks"]["worse"] == 0  # fewest-racks-first always reaches k*
    assert r.stats["by_source"]["simulated"]["instances"] == 5 and r.bounds["sim_samples"] == 5


def test_ring_choice_sees_a_rack_count_mutant():
    mutant = RingStitch(generators=("small-fragment-first",))
    [r] = check_ring_choice(samples=0, sim_samples=0, exhaustive=(((1, 2, 2), 4),), policy=mutant)
    assert r.verdict is Verdict.VIOLATED and r.stats["by_key"]["racks"]["worse"] > 0


def test_ring_choice_inconclusive_when_the_oracle_runs_out_of_time():
    [r] = check_ring_choice(samples=2, sim_samples=0, exhaustive=(), time_limit=0.0)
    assert r.verdict is Verdict.INCONCLUSIVE and r.stats["unknown"] == 2


def test_verify_replay_reproduces_a_ring_choice_counterexample(tmp_path, capsys):
    from proofs_check.cli.verify import main

    ce = {"format_version": 1, "kind": "ring-choice", "claim": "ring-choice", "dims": [1, 2, 3], "capacity": 3, "residual": [0, 0, 1, 1, 1, 0],
          "demand": 2, "penalty": "linear"}
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"results": [{"claim_id": "ring-choice", "counterexample": ce}]}))
    assert main(["--replay", str(report)]) == 1
    assert "ring-choice: VIOLATED — reproduced" in capsys.readouterr().out


def test_a_passed_deadline_makes_both_ring_claims_inconclusive_at_once():
    import time

    t0 = time.perf_counter()
    [exact] = check_ring_exact(deadline=t0 - 1.0)
    [choice] = check_ring_choice(deadline=t0 - 1.0)
    assert time.perf_counter() - t0 < 5.0  # no instance solved, no simulated run drawn
    assert exact.verdict is Verdict.INCONCLUSIVE and choice.verdict is Verdict.INCONCLUSIVE
    assert exact.message.startswith("time limit hit after 0 of the 1265 instances")  # 255 + 510 + 300 + 200
    assert exact.stats["rack_sets_checked"] == 0 and exact.counterexample is None
    assert choice.message.startswith("time limit hit after 0 of the ") and choice.stats["instances"] == 0


def test_a_deadline_hit_mid_scan_is_inconclusive_but_a_violation_found_stands(monkeypatch):
    import proofs_check.rack.outcome as ring_claims

    calls = iter(range(10**6))
    monkeypatch.setattr(ring_claims, "passed", lambda deadline: next(calls) >= 40)
    [r] = check_ring_choice(samples=0, sim_samples=0, exhaustive=(((1, 2, 2), 4),), deadline=0.0)
    assert r.verdict is Verdict.INCONCLUSIVE and r.stats["instances"] == 40
    assert "time limit hit after 40 of the " in r.message
    calls = iter(range(10**6))  # the first suboptimal instance is the 47th
    monkeypatch.setattr(ring_claims, "passed", lambda deadline: next(calls) >= 60)
    [r] = check_ring_choice(samples=0, sim_samples=0, exhaustive=(((1, 2, 2), 4),), deadline=0.0)
    assert r.verdict is Verdict.VIOLATED and r.stats["instances"] == 60
    assert r.counterexample is not None and r.counterexample["residual"] == [0, 1, 2, 2]


def test_verify_time_limit_applies_to_ring_exact(capsys):
    from proofs_check.cli.verify import main

    assert main(["--claim", "ring-exact", "--time-limit", "0.001"]) == 3
    assert "time limit hit after" in capsys.readouterr().out
