"""`simulate`'s exit code (docs/cli.md): 1 when a run aborted because its scheduler failed — when
that scheduler was named; plain `simulate` runs the built-in schedulers only and exits 0, reporting
the literal paper readings' aborts as expected findings."""
from __future__ import annotations

import pytest

from heuristics.gpu.registry import builtin_policy_names
from proofs_check.cli import simulate
from proofs_check.cli.simulate_outcome import PAPER_READINGS, RunKind, classify, sweep_exit


def test_a_literal_reading_that_aborts_is_a_finding_only_when_named():
    assert classify("compass-literal", "complete", named=False) is RunKind.COMPLETE
    assert classify("compass-literal", "aborted", named=False) is RunKind.EXPECTED_FINDING
    assert classify("compass-literal", "aborted", named=True) is RunKind.FINDING
    assert classify("best-fit", "stuck", named=False) is RunKind.FINDING  # not a paper reading: always counts
    assert PAPER_READINGS <= set(builtin_policy_names())


def test_sweep_exit_prints_one_finding_per_run_that_did_not_complete():
    runs = [("a", "best-fit", "complete"), ("b", "compass-literal", "aborted")]
    code, lines = sweep_exit(runs, named=False)
    assert code == 0 and len(lines) == 1 and lines[0].startswith("finding: b: the run did not complete (aborted")
    code, lines = sweep_exit(runs, named=True)
    assert code == 1 and lines == ["finding: b: the run did not complete (aborted; see its note): exit 1"]
    assert sweep_exit([("a", "best-fit", "complete")], named=False) == (0, [])


def test_the_default_set_is_the_built_in_schedulers():
    names, skipped = simulate.default_schedulers({})
    assert set(names) | {n for n, _ in skipped} == set(builtin_policy_names())


def test_a_named_scheduler_that_aborts_exits_1(capsys):
    assert simulate.main(["--window", "0:101000", "--schedulers", "compass-literal,best-fit"]) == 1
    out = capsys.readouterr().out
    assert "finding: compass-literal_eta0.9_c8_all: the run did not complete (aborted; see its note): exit 1" in out


@pytest.mark.slow
def test_plain_simulate_exits_0(capsys):
    """The README's `simulate` with no arguments: every built-in scheduler on the built-in trace (≈ 25 s)."""
    assert simulate.main([]) == 0
    out = capsys.readouterr().out
    assert out.count("finding: ") == len(PAPER_READINGS) and "expected" in out


def test_generate_replays_a_paper_profile_and_refuses_a_bad_one(capsys):
    assert simulate.main(["--generate", "venus-day92:2", "--window", "0:3000", "--schedulers", "best-fit"]) == 0
    assert "paper-venus-day92-s2" in capsys.readouterr().out
    assert simulate.main(["--generate", "nope:1"]) == 2
    assert "--generate" in capsys.readouterr().err
