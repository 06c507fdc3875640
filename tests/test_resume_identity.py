"""Issue 27, item 1: a resume is exact or refused. The checkpoint's identity covers every
parameter that can change a verdict (claims, bounds, the scheduler and its parameters, ties,
variant, sampling) and the code; a resume with anything else is one line, exit 2."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from golden_digest import digest
from proofs_check.cli import verify
from proofs_check.core import checkpoint, code_digest

POLICY = ["--policy", "best-fit", "--claim", "policy.sif", "--max-nodes", "2", "--depth", "3"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = verify.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def refused(code: int, err: str) -> bool:
    lines = err.strip().splitlines()
    return code == 2 and len(lines) == 1 and "resume refused" in lines[0] and "Traceback" not in err


@pytest.fixture
def made(tmp_path, capsys) -> Path:
    """A finished checkpoint of best-fit's policy.sif with --bound 5 (it holds)."""
    ck = tmp_path / "ck"
    code, _, err = run(capsys, *POLICY, "--bound", "5", "--quiet", "--checkpoint", str(ck))
    assert code == 0, err
    assert (ck / checkpoint.FILE).is_file()
    return ck


@pytest.mark.parametrize("changed,field", [
    (["--bound", "0"], "policy_params.bound"),  # the case: resumed, it used to hold with exit 0
    (["--bound", "5", "--max-migrations", "1"], "policy_params.max_migrations"),
    (["--bound", "5", "--admission", "repack"], "policy_params.admission"),
    (["--bound", "5", "--demands", "1,2"], "policy_params.demands"),
    (["--bound", "5", "--ties", "all"], "ties"),
    (["--bound", "5", "--depth", "4"], "bounds.depth"),
    (["--bound", "5", "--max-jobs", "2"], "bounds.max_jobs"),
])
def test_resume_with_a_changed_parameter_is_refused_in_one_line(capsys, made, changed, field):
    code, _, err = run(capsys, *POLICY, *changed, "--quiet", "--resume", str(made))
    assert refused(code, err), (code, err)
    assert field in err and str(made / checkpoint.FILE) in err


def test_resume_with_another_scheduler_is_refused(capsys, made):
    argv = ["--policy", "first-fit", *POLICY[2:], "--bound", "5", "--quiet", "--resume", str(made)]
    code, _, err = run(capsys, *argv)
    assert refused(code, err) and "policy: checkpoint 'best-fit', now 'first-fit'" in err, err


def test_resume_of_a_flat_claim_with_other_variant_or_sampling_is_refused(tmp_path, capsys):
    ck = tmp_path / "ck"
    base = ["--claim", "thm1.pool", "--max-nodes", "2", "--depth", "3", "--quiet"]
    assert run(capsys, *base, "--checkpoint", str(ck))[0] == 0
    for changed, field in ((["--variant", "repaired"], "variant"), (["--random", "3"], "random")):
        code, _, err = run(capsys, *base, *changed, "--resume", str(ck))
        assert refused(code, err) and field in err, err


def test_resume_with_identical_parameters_gives_the_uninterrupted_verdict(tmp_path, capsys):
    """The issue's run: with --bound 0 best-fit is violated at N = 2, resumed or not."""
    ref, first, second, ck = tmp_path / "ref.json", tmp_path / "a.json", tmp_path / "b.json", tmp_path / "ck"
    assert run(capsys, *POLICY, "--bound", "0", "--quiet", "--json", str(ref))[0] == 1
    assert run(capsys, *POLICY, "--bound", "0", "--quiet", "--checkpoint", str(ck), "--json", str(first))[0] == 1
    code, _, err = run(capsys, *POLICY, "--bound", "0", "--resume", str(ck), "--json", str(second))
    assert code == 1, err
    assert "finished in the checkpoint" in err
    assert digest(json.loads(second.read_text())) == digest(json.loads(ref.read_text()))


def test_interrupted_then_resumed_with_identical_parameters_equals_uninterrupted(tmp_path, capsys, monkeypatch):
    ref, first, second, ck = tmp_path / "ref.json", tmp_path / "a.json", tmp_path / "b.json", tmp_path / "ck"
    assert run(capsys, *POLICY, "--bound", "5", "--quiet", "--json", str(ref))[0] == 0
    real = verify.stderr_progress
    fired: list[str] = []

    def progress(line: str) -> None:  # a SIGINT in mid-exploration, as a user's ^C
        real(line)
        if not fired and "N=2] level 1" in line:
            fired.append(line)
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(verify, "stderr_progress", progress)
    code, _, err = run(capsys, *POLICY, "--bound", "5", "--checkpoint", str(ck), "--json", str(first))
    assert fired and code == 3, err
    monkeypatch.setattr(verify, "stderr_progress", real)
    code, _, err = run(capsys, *POLICY, "--bound", "5", "--resume", str(ck), "--json", str(second))
    assert code == 0 and "resumed from the checkpoint" in err, err
    assert digest(json.loads(second.read_text())) == digest(json.loads(ref.read_text()))


def test_a_code_change_refuses_the_resume(capsys, made, monkeypatch):
    old = verify.code_identity()
    monkeypatch.setattr(verify, "code_identity", lambda: {**old, "sources": "0" * 64})
    code, _, err = run(capsys, *POLICY, "--bound", "5", "--quiet", "--resume", str(made))
    assert refused(code, err) and "the code changed since the checkpoint was written" in err, err


def test_checkpointer_refuses_another_identity_naming_the_fields(tmp_path):
    ident = {"claims": ["x"], "bounds": {"depth": 3}, "code": {"version": None, "sources": "a"}}
    ck = checkpoint.Checkpointer(tmp_path, ident)
    ck.finish("1:a", {"figures": 1})
    other = {**ident, "bounds": {"depth": 4}, "code": {"version": None, "sources": "b"}}
    with pytest.raises(checkpoint.CheckpointError) as e:
        checkpoint.Checkpointer(tmp_path, other, resume=True)
    msg = str(e.value)
    assert "bounds.depth: checkpoint 3, now 4" in msg and "the code changed since the checkpoint was written" in msg
    assert "claims" not in msg and "\n" not in msg
    assert checkpoint.Checkpointer(tmp_path, ident, resume=True).done("1:a") == {"figures": 1}


def test_the_source_digest_covers_every_source_file_by_path_and_content(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("x = 1\n")
    (pkg / "sub" / "b.json").write_text("{}")
    (pkg / "notes.txt").write_text("ignored")
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "a.cpython-311.py").write_text("ignored")
    first = code_digest.source_digest([pkg])
    assert [rel for rel, _ in code_digest.source_files([pkg])] == ["pkg/a.py", "pkg/sub/b.json"]
    (pkg / "notes.txt").write_text("still ignored")
    assert code_digest.source_digest([pkg]) == first
    (pkg / "sub" / "b.json").write_text("{ }")
    assert code_digest.source_digest([pkg]) != first
    (pkg / "sub" / "b.json").write_text("{}")
    assert code_digest.source_digest([pkg]) == first
    (pkg / "sub" / "b.json").rename(pkg / "b.json")  # same content, other path
    assert code_digest.source_digest([pkg]) != first


def test_the_code_identity_digests_the_three_packages():
    code = verify.code_identity()
    assert len(code["sources"]) == 64 and set(code) == {"version", "sources"}
    files = [rel for rel, _ in code_digest.source_files(Path(p) for m in verify.PACKAGES for p in m.__path__)]
    assert "proofs_check/cli/verify.py" in files and "oracle/__init__.py" in files
    assert "proofs_check/core/trace.schema.json" in files
