"""A scheduler cannot end or hang the run (issue 27, item 2): an exit, an interrupt it raises itself
or a wrong return type is an operator failure of that event (a policy.no-stuck counterexample),
and a scheduler that never returns is stopped by the watchdog."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from heuristics.gpu.cluster import Job
from heuristics.gpu.policy import EventResult
from proofs_check.cli.verify import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from my_sched import FirstFit  # noqa: E402


class Exits(FirstFit):
    def arrive(self, job: Job) -> EventResult:
        if job.g == 3:
            sys.exit(0)
        return super().arrive(job)


class RaisesInterrupt(FirstFit):
    def arrive(self, job: Job) -> EventResult:
        if job.g == 3:
            raise KeyboardInterrupt("from the scheduler")
        return super().arrive(job)


class ReturnsText(FirstFit):
    def arrive(self, job: Job) -> EventResult:
        return "ok" if job.g == 3 else super().arrive(job)  # type: ignore[return-value]


class ReturnsNone(FirstFit):
    def depart(self, job_id: int) -> EventResult:
        super().depart(job_id)
        return None  # type: ignore[return-value]


class Hangs(FirstFit):
    def arrive(self, job: Job) -> EventResult:
        if job.g == 3:
            while True:
                time.sleep(0.01)
        return super().arrive(job)


@pytest.mark.parametrize("cls,says", [(Exits, "raised SystemExit"), (RaisesInterrupt, "raised KeyboardInterrupt"),
                                      (ReturnsText, "returned str"), (ReturnsNone, "returned NoneType")])
def test_a_misbehaving_event_is_an_operator_failure(cls: type, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--policy", f"{__name__}:{cls.__name__}", "--claim", "policy.no-stuck", "--max-nodes", "1",
                 "--depth", "2", "--quiet"])
    out = capsys.readouterr().out
    assert code == 1 and "policy.no-stuck: VIOLATED" in out and says in out


def _verify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "proofs_check.cli.verify", "--policy", f"test_misbehaving_plugins:Hangs",
                           "--claim", "policy.no-stuck", "--max-nodes", "1", "--depth", "2", "--quiet", *args],
                          cwd=Path(__file__).parent, capture_output=True, text=True, timeout=120)


def test_an_event_limit_makes_a_hang_a_finding() -> None:
    t0 = time.perf_counter()
    proc = _verify("--event-time-limit", "0.3")
    assert time.perf_counter() - t0 < 60
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "did not return within 0.3 s" in proc.stdout


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]], ids=["serial", "workers"])
def test_the_time_limit_holds_when_the_scheduler_never_returns(workers: list[str]) -> None:
    t0 = time.perf_counter()
    proc = _verify("--time-limit", "3", *workers)
    assert time.perf_counter() - t0 < 60
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "the time limit ran out inside arrive(J0, g=3, w=1)" in proc.stderr
    assert "policy.no-stuck: INCONCLUSIVE" in proc.stdout


def test_policy_sampling_honours_the_time_limit(capsys: pytest.CaptureFixture[str]) -> None:
    t0 = time.perf_counter()
    code = main(["--policy", f"{__name__}:Hangs", "--claim", "policy.valid", "--max-nodes", "1", "--depth", "1",
                 "--demands", "1,2", "--random", "100000", "--time-limit", "3", "--quiet"])
    assert time.perf_counter() - t0 < 60
    out = capsys.readouterr().out
    assert code == 3 and "sampling stopped: time limit" in out


@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_audit_of_deeply_nested_json_is_one_line(opener: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "nested.json"
    log.write_text(opener * 100_000 + "\n")
    assert main(["--audit", str(log)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested too deeply" in err
