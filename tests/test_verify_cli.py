"""The `verify` command line: selection, one-line usage errors (exit 2), exit codes, JSON that
--replay re-runs, JUnit XML, progress on stderr."""
import json
from xml.etree import ElementTree as ET

import pytest

from proofs_check.cli.verify import main

TINY = ["--max-nodes", "2", "--depth", "3", "--max-jobs", "2", "--max-w", "2"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_prints_the_catalogue(capsys):
    code, out, _ = run(capsys, "--list")
    assert code == 0
    for cid in ("thm1.slotted", "thm1.pool", "thm1.sif", "prop1.abs", "prop1.operators", "lemA2", "prop3.tight", "closed-form",
                "alg2.wcc", "alg2.nowcc", "ring-exact"):
        assert cid in out


@pytest.mark.parametrize("argv,needle", [
    (["--claim", "thm7"], "unknown claim id"),
    (["--theorem", "9"], "unknown theorem"),
    (["--theorem", "1", "--max-nodes", "0"], "must be > 0"),
    (["--theorem", "1", "--depth", "x"], "argument --depth: 'x' is not a number"),
    (["--theorem", "1", "--variant", "nope"], "unknown"),
    (["--replay", "/nonexistent/trace.json"], "/nonexistent/trace.json: no such file"),
    (["--audit", "/nonexistent/log.jsonl"], "/nonexistent/log.jsonl: no such file"),
    ([], "nothing to check"),
    (["--theorem", "1", "--json", "/nonexistent/dir/out.json"], "directory does not exist"),
    # a flag the mode would ignore (docs/verify.md: conflicting flags)
    (["--audit", "log.jsonl", "--theorem", "1"], "--theorem does not apply to --audit LOG"),
    (["--audit", "log.jsonl", "--workers", "2", "--max-nodes", "3"], "--max-nodes, --workers do not apply to --audit LOG"),
    (["--replay", "r.json", "--workers", "2"], "--workers does not apply to --replay FILE"),
    (["--replay", "r.json", "--claim", "thm1", "--random", "5"], "--claim, --random do not apply to --replay FILE"),
    (["--list", "--all"], "--all does not apply to --list"),
    (["--list-policies", "--policy", "fgd"], "--policy does not apply to --list-policies"),
    (["--theorem", "1", "--nodes-file", "n.csv"], "--nodes-file does not apply to a claim check (only to --audit LOG)"),
    (["--theorem", "1", "--bound", "3"], "--bound does not apply to a check without --policy NAME"),
    (["--theorem", "1", "--max-migrations", "1"], "--max-migrations does not apply to a check without --policy"),
    (["--theorem", "1", "--json", "x.json", "--junit", "./x.json"], "--json and --junit name the same file"),
])
def test_bad_usage_is_one_line_and_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert needle in err and len(err.strip().splitlines()) == 1


def test_violation_json_junit_and_replay(capsys, tmp_path):
    js, xml = tmp_path / "r.json", tmp_path / "r.xml"
    code, out, err = run(capsys, "--claim", "prop1", "--claim", "thm1.pool", *TINY, "--json", str(js), "--junit", str(xml))
    assert code == 1
    assert "bounds: N = 1..2" in out and "distinct" in out and "counterexample" in out
    assert "done:" in err  # progress on stderr
    doc = json.loads(js.read_text())
    verdicts = {r["claim_id"]: r["verdict"] for r in doc["results"]}
    assert verdicts["prop1.operators"] == "violated" and doc["exit_code"] == 1
    suite = ET.fromstring(xml.read_text())
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["prop1.operators"].find("failure") is not None
    assert cases["thm1.pool"].find("failure") is None
    for r in doc["results"]:  # the versioned record format (core/trace.schema.json)
        ce = r["counterexample"]
        if ce is not None:
            assert (ce["format_version"], ce["kind"], ce["model"]) == (1, "trace", "policy")
            assert isinstance(ce["n_nodes"], int) and ce["claim"] == r["claim_id"]
    code, out, _ = run(capsys, "--replay", str(js))
    assert code == 1 and "reproduced" in out and "replay prop1.operators" in out


def test_replay_validates_records_and_names_the_bad_field(capsys, tmp_path):
    js = tmp_path / "r.json"
    assert run(capsys, "--claim", "prop1.operators", *TINY, "--quiet", "--json", str(js))[0] == 1
    doc = json.loads(js.read_text())
    (i, r), = [(i, r) for i, r in enumerate(doc["results"]) if r["counterexample"]]
    for field, bad in (("n_nodes", "2 domain(s) × 3 panel(s)"), ("format_version", 0), ("events", None)):
        broken = json.loads(json.dumps(doc))
        broken["results"][i]["counterexample"][field] = bad
        path = tmp_path / f"bad-{field}.json"
        path.write_text(json.dumps(broken))
        code, _, err = run(capsys, "--replay", str(path))
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert f"results[{i}] (prop1.operators): field {field}:" in err


def test_budget_exit_3(capsys):
    code, out, _ = run(capsys, "--claim", "thm1.pool", *TINY, "--max-states", "3", "--quiet")
    assert code == 3 and "INCONCLUSIVE" in out


def test_holds_exit_0_and_sampling_is_reported(capsys):
    code, out, _ = run(capsys, "--claim", "thm1.pool", *TINY, "--random", "5", "--seed", "3", "--random-nodes", "8",
                       "--quiet")
    assert code == 0
    assert "no counterexample in" in out and "sampled sequences" in out


def test_a_claim_the_search_decided_says_it_was_not_sampled(capsys):
    """--random samples only what the exhaustive search left open; a decided claim says so."""
    code, out, _ = run(capsys, "--claim", "prop3", "--max-nodes", "2", "--depth", "4", "--random", "3", "--quiet")
    assert code == 1
    lines = {line.split(":")[0]: line for line in out.splitlines() if line.startswith("prop3.")}
    assert lines["prop3.departure"].endswith("; not sampled: the exhaustive search already decided it")
    assert lines["prop3.tight"].startswith("prop3.tight: HOLDS") and "not sampled" in lines["prop3.tight"]
    assert "sampled sequences" in lines["prop3.arrival"] and "not sampled" not in lines["prop3.arrival"]


def test_sampling_finds_and_shrinks_a_violation(capsys, tmp_path):
    """With the exhaustive part too small to see it (depth 1), sampling finds the SIF violation;
    the shrunk trace replays through --replay."""
    js = tmp_path / "s.json"
    code, out, _ = run(capsys, "--claim", "thm1.slotted", "--max-nodes", "1", "--depth", "1", "--random", "300",
                       "--seed", "1", "--random-nodes", "6", "--quiet", "--json", str(js))
    assert code == 1 and "found by sampling" in out
    rec = json.loads(js.read_text())["results"][0]["counterexample"]
    assert rec["sampled"] and len(rec["events"]) <= 6
    code, out, _ = run(capsys, "--replay", str(js))
    assert code == 1


def test_report_prints_records_it_does_not_own():
    from proofs_check.catalogue import DOCS
    from proofs_check.core.report import claim_text, to_junit
    from proofs_check.core.verdict import ClaimResult, Verdict

    r = ClaimResult("ring-choice", Verdict.VIOLATED, "gap", counterexample={
        "format_version": 1, "claim": "ring-choice", "dims": [1, 2, 3], "demand": 5, "optimum": {"ring": [3, 1]}})
    text = claim_text(r, DOCS)  # readable text, one field a line, not a raw JSON object
    assert "\n      dims: [1, 2, 3]\n      demand: 5\n      optimum:\n        ring: [3, 1]" in text
    assert "format_version" not in text and "{" not in text
    assert ET.fromstring(to_junit([r], 0.1, DOCS)).find("testcase/failure") is not None


def test_count_claim_counterexample_replays(capsys, tmp_path):
    js = tmp_path / "c.json"
    code, out, _ = run(capsys, "--claim", "alg2.nowcc", "--max-nodes", "2", "--quiet", "--json", str(js))
    assert code in (0, 1)
    if code == 1:  # whatever Algorithm 2 does, a reported counterexample must replay
        code, out, _ = run(capsys, "--replay", str(js))
        assert code == 1 and "reproduced" in out
