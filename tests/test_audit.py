"""verify --audit: the JSON-lines placement-log guard (validity and SIF ≤ bound at every line)."""
import json
from fractions import Fraction

import pytest

from proofs_check.gpu.audit import AuditError, audit_file, parse_bound
from proofs_check.cli.verify import main
from proofs_check.verdict import Verdict


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
    ("{not json", "not JSON"),
    ({"nodes": 2, "placement": [[]]}, "'placement'"),
    ({"nodes": 1, "placement": [[{"job": "a", "g": 9}]]}, "'g'=9"),
    ({"event": "arrive", "nodes": 1, "placement": [[]]}, "'job'"),
    ({"event": "leave", "nodes": 1, "placement": [[]]}, "'event'"),
])
def test_malformed_line_names_line_and_field(tmp_path, line, field):
    path = write(tmp_path, [GOOD[1], line])
    with pytest.raises(AuditError, match=f"log.jsonl:2: .*{field}" if field != "not JSON" else "log.jsonl:2: not JSON"):
        audit_file(path, parse_bound("2"))


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
