"""verify --audit: the JSON-lines placement-log guard (validity and SIF ≤ bound at every line)."""
import json
from fractions import Fraction

import pytest

from proofs_check.gpu.audit import AuditError, audit_file, audit_path, detect_format, parse_bound
from proofs_check.cli.verify import main
from proofs_check.core.verdict import Verdict


def inst(job, g):
    return {"job": job, "g": g}


def write(tmp_path, lines, name="log.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(json.dumps(x) if not isinstance(x, str) else x for x in lines) + "\n")
    return str(p)


GOOD = [
    "# a comment line",
    {"event": "arrive", "job": "a", "g": 4, "w": 2, "nodes": 2, "placement": [[inst("a", 4), inst("a", 4)], []]},
    {"event": "arrive", "job": 7, "g": 2, "w": 1, "nodes": 2, "placement": [[inst("a", 4), inst("a", 4)], [inst(7, 2)]]},
    {"event": "depart", "job": "a", "nodes": 2, "placement": [[], [inst(7, 2)]]},
    {"nodes": 2, "placement": [[], [inst(7, 2)]]},
]


def test_valid_log_holds(tmp_path):
    results, text = audit_file(write(tmp_path, GOOD), parse_bound("2"))
    assert [r.verdict for r in results] == [Verdict.HOLDS, Verdict.HOLDS]
    assert "4 lines" in text


def test_sif_violation_reports_first_line(tmp_path):
    # two half-used nodes hold 4+4: Φπ = 2, Φ★ = 0, SIF = 1 > 1/2 (bound 1 → 1/N)
    log = GOOD[:1] + [{"event": "arrive", "job": "a", "g": 4, "w": 2, "nodes": 2,
                       "placement": [[inst("a", 4)], [inst("a", 4)]]}] + GOOD[2:]
    results, _ = audit_file(write(tmp_path, log), parse_bound("1"))
    sif = results[1]
    assert sif.verdict == Verdict.VIOLATED
    assert sif.counterexample["line"] == 2 and sif.counterexample["Φ★"] == 0 and sif.counterexample["SIF"] == "1"


@pytest.mark.parametrize("placement,problem", [
    ([[inst("a", 4), inst("a", 4), inst("b", 2)], [inst("b", 2), inst("b", 8)]], "capacity"),  # 10 GPUs on node 1
    ([[inst("a", 4)], []], "instances placed"),  # gang: 1 of 2 instances
    ([[inst("a", 4), inst("a", 4)], [inst("a", 4)]], "instances placed"),  # double booking: 3 of 2
])
def test_validity_problems(tmp_path, placement, problem):
    log = [{"event": "arrive", "job": "a", "g": 4, "w": 2, "nodes": 2, "placement": placement}]
    results, _ = audit_file(write(tmp_path, log), parse_bound("2"))
    assert results[0].verdict == Verdict.VIOLATED
    assert any(problem in p for p in results[0].counterexample["problems"])
    assert results[0].counterexample["line"] == 1


@pytest.mark.parametrize("line,field", [
    ("{not json", "invalid JSON"),
    ({"nodes": 1, "placement": [[], []]}, "field 'nodes'"),  # fewer nodes than listed
    ({"nodes": 1, "placement": [[{"job": "a", "g": 9}]]}, r"field 'placement\[0\]\[0\]\.g': 9 outside 1\.\.8"),
    ({"nodes": 1, "placement": [[{"job": "a", "gpus": 2}]]}, r"field 'placement\[0\]\[0\]\.gpus': unknown field"),
    ({"event": "arrive", "nodes": 1, "placement": [[]]}, "field 'job'"),
    ({"event": "arrive", "job": "b", "g": 2, "nodes": 1, "placement": [[]]}, "field 'w'"),
    ({"event": "leave", "nodes": 1, "placement": [[]]}, "field 'event'"),
    ({"nodes": 1, "counts": {"1": 1}}, "field 'counts'"),  # counts only: no Φπ to audit
])
def test_malformed_line_names_line_and_field(tmp_path, line, field):
    path = write(tmp_path, [GOOD[1], line])
    with pytest.raises(AuditError, match=f"log.jsonl:2: .*{field}"):
        audit_file(path, parse_bound("2"))


def test_one_json_object_is_a_one_line_log(tmp_path):
    """A snapshot file written with indentation (by admit --json, or by hand) audits as one line."""
    p = tmp_path / "snap.json"
    p.write_text(json.dumps({"nodes": 2, "placement": [[inst("a", 4), inst("a", 4)], [2, 2]]}, indent=2))
    results, text = audit_file(str(p), parse_bound("2"))
    assert [r.verdict for r in results] == [Verdict.HOLDS, Verdict.HOLDS] and "1 lines" in text


def test_instances_without_job_id_are_jobs_of_their_own(tmp_path):
    """Bare demands (sifopt's old shape) carry no gang: they never break the gang check, also
    when the next line shows other demands at the same positions."""
    log = [{"nodes": 2, "placement": [[4, 4], [2]]}, {"nodes": 2, "placement": [[2], [{"g": 8}]]}]
    results, _ = audit_file(write(tmp_path, log), parse_bound("2"))
    assert results[0].verdict == Verdict.HOLDS


def test_bound_parsing():
    assert parse_bound("2").at(4) == Fraction(1, 2)
    assert parse_bound("1/4").at(100) == Fraction(1, 4)
    assert parse_bound("0.25").at(3) == Fraction(1, 4)
    with pytest.raises(AuditError):
        parse_bound("two")


def test_cli_exit_codes(tmp_path, capsys):
    assert main(["--audit", write(tmp_path, GOOD)]) == 0
    assert main(["--audit", write(tmp_path, [GOOD[1], "{bad"], "bad.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl:2" in err and len(err.strip().splitlines()) == 1


def test_snapshot_log_takes_no_node_list(tmp_path):
    """A snapshot log names its own nodes: a node list with it is a usage error, not ignored."""
    path = write(tmp_path, GOOD)
    assert detect_format(path) == "snapshot"
    with pytest.raises(AuditError, match="--nodes-file"):
        audit_path(path, parse_bound("2"), "auto", str(tmp_path / "nodes.csv"))
    assert main(["--audit", path, "--audit-format", "snapshot"]) == 0
