"""Faults lose nothing (issue 16): an interrupt writes the report so far, a lost Dask worker is
recovered from, a checkpointed run resumes to exactly the uninterrupted result, a damaged
checkpoint is one clear line; a budget stop says what it covered and how the time was split."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from golden_digest import digest

VERIFY = [sys.executable, "-m", "proofs_check.cli.verify"]
SMALL = ["--claim", "thm1.pool", "--claim", "prop1.abs", "--max-nodes", "3", "--depth", "8"]


def start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(VERIFY + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def run_until(proc: subprocess.Popen[str], marker: str, action, timeout: float = 240) -> tuple[str, str, bool]:
    """Read the child's progress; the first time a line contains ``marker`` call ``action()``.
    Returns (stdout, stderr, whether the action ran)."""
    err: list[str] = []
    fired = threading.Event()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err.append(line)
            if not fired.is_set() and marker in line:
                fired.set()
                action()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    out = proc.stdout.read() if proc.stdout is not None else ""
    proc.wait(timeout=timeout)
    reader.join(timeout=10)
    return out, "".join(err), fired.is_set()


def results(path: Path) -> dict[str, dict]:
    return {r["claim_id"]: r for r in json.loads(path.read_text())["results"]}


# --------------------------------------------------------------------------- interrupts
def test_sigint_mid_run_writes_the_report_so_far_and_exits_1_for_the_violation(tmp_path):
    js, xml = tmp_path / "r.json", tmp_path / "r.xml"
    proc = start(["--theorem", "1", "--max-nodes", "6", "--json", str(js), "--junit", str(xml)])
    out, err, fired = run_until(proc, "N=3] level 2", lambda: proc.send_signal(signal.SIGINT))
    assert fired, err[-2000:]
    assert proc.returncode == 1, err[-2000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "verify: interrupted" in err
    got = results(js)
    assert got["thm1.slotted"]["verdict"] == "violated"  # found at N = 2, before the interrupt
    for cid in ("thm1.pool", "thm1.sif"):
        r = got[cid]
        assert r["verdict"] == "inconclusive" and r["message"].startswith("interrupted at N=3"), r["message"]
        assert "holds for N=1..2 within the bounds" in r["message"]
        assert r["covered"]["sizes covered"] == [1, 2] and r["covered"]["stopped"]["reason"] == "interrupted"
    assert json.loads(js.read_text())["interrupted"] is True
    assert 'type="inconclusive"' in xml.read_text() and "N = 1..2 completely" in xml.read_text()
    assert "covered: N = 1..2 completely; N = 3 to depth" in out


def test_sigterm_with_no_violation_exits_3_and_marks_unstarted_claims_interrupted(tmp_path):
    js = tmp_path / "r.json"
    proc = start(["--claim", "thm1.pool", "--claim", "prop1.abs", "--max-nodes", "6", "--json", str(js)])
    out, err, fired = run_until(proc, "N=3] level 2", lambda: proc.send_signal(signal.SIGTERM))
    assert fired and proc.returncode == 3, err[-2000:]
    assert "Traceback" not in err
    got = results(js)
    assert got["thm1.pool"]["verdict"] == "inconclusive"
    # prop1.abs is a separate exploration that had not started: inconclusive, "interrupted"
    assert got["prop1.abs"]["verdict"] == "inconclusive"
    assert got["prop1.abs"]["message"].startswith("interrupted before N=1"), got["prop1.abs"]["message"]
    assert got["prop1.abs"]["covered"]["sizes covered"] == []


def test_sigint_with_forked_shards_ends_them(tmp_path):
    js = tmp_path / "r.json"
    proc = start(["--claim", "thm1.pool", "--max-nodes", "6", "--workers", "2", "--json", str(js)])
    children: list[int] = []

    def interrupt() -> None:
        children.extend(int(p) for p in subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                                      text=True).stdout.split())
        proc.send_signal(signal.SIGINT)

    out, err, fired = run_until(proc, "N=3] level 2", interrupt)
    assert fired and proc.returncode == 3, err[-2000:]
    assert "Traceback" not in err and results(js)["thm1.pool"]["verdict"] == "inconclusive"
    assert children
    time.sleep(0.5)
    for pid in children:  # reaped, or at least no longer running
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


# --------------------------------------------------------------------------- checkpoints
@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> list[dict]:
    js = tmp_path_factory.mktemp("ref") / "r.json"
    proc = subprocess.run(VERIFY + SMALL + ["--quiet", "--json", str(js)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode in (0, 1, 3), proc.stderr[-2000:]
    return digest(json.loads(js.read_text()))


def test_interrupt_then_resume_equals_an_uninterrupted_run(tmp_path, uninterrupted):
    ck, first, second = tmp_path / "ck", tmp_path / "a.json", tmp_path / "b.json"
    proc = start(SMALL + ["--checkpoint", str(ck), "--json", str(first)])
    # the second exploration (prop1.abs, no premise filter) is interrupted mid-size
    out, err, fired = run_until(proc, "g∈{1,2,3,4,5,6,7,8} N=2] level 3", lambda: proc.send_signal(signal.SIGINT))
    assert fired and proc.returncode == 3, err[-2000:]
    assert (ck / "checkpoint.pkl").is_file()
    assert any(r["verdict"] == "inconclusive" for r in json.loads(first.read_text())["results"])
    done = subprocess.run(VERIFY + SMALL + ["--resume", str(ck), "--json", str(second)], capture_output=True,
                          text=True, timeout=300)
    assert "resumed from the checkpoint" in done.stderr and "finished in the checkpoint" in done.stderr
    assert digest(json.loads(second.read_text())) == uninterrupted
    assert done.returncode == json.loads(second.read_text())["exit_code"]


def test_resume_refuses_other_bounds_and_damaged_checkpoints(tmp_path):
    ck = tmp_path / "ck"
    made = subprocess.run(VERIFY + ["--claim", "thm1.pool", "--max-nodes", "2", "--quiet", "--checkpoint", str(ck)],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    other = subprocess.run(VERIFY + ["--claim", "thm1.pool", "--max-nodes", "3", "--quiet", "--resume", str(ck)],
                           capture_output=True, text=True, timeout=120)
    assert other.returncode == 2 and "resume refused" in other.stderr and "bounds.max_nodes" in other.stderr
    assert len(other.stderr.strip().splitlines()) == 1 and "Traceback" not in other.stderr
    same = subprocess.run(VERIFY + ["--claim", "thm1.pool", "--max-nodes", "2", "--quiet", "--resume", str(ck)],
                          capture_output=True, text=True, timeout=120)
    assert same.returncode == 0, same.stderr
    blob = (ck / "checkpoint.pkl").read_bytes()
    for damaged in (blob[: len(blob) // 2], blob[:-1] + bytes([blob[-1] ^ 1]), b"garbage"):
        (ck / "checkpoint.pkl").write_bytes(damaged)
        bad = subprocess.run(VERIFY + ["--claim", "thm1.pool", "--max-nodes", "2", "--quiet", "--resume", str(ck)],
                             capture_output=True, text=True, timeout=120)
        assert bad.returncode == 2 and "corrupted checkpoint" in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr
    missing = subprocess.run(VERIFY + ["--claim", "thm1.pool", "--quiet", "--resume", str(tmp_path / "nope")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "no checkpoint" in missing.stderr


def test_checkpoint_write_is_atomic(tmp_path, monkeypatch):
    """A crash while writing leaves the previous checkpoint intact and readable."""
    from proofs_check.core import checkpoint

    ident = {"claims": ["x"]}
    ck = checkpoint.Checkpointer(tmp_path, ident)
    ck.finish("1:a", {"figures": 1})
    before = (tmp_path / checkpoint.FILE).read_bytes()

    def crash(*a: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint.os, "replace", crash)
    with pytest.raises(OSError):
        ck.finish("2:b", {"figures": 2})
    assert (tmp_path / checkpoint.FILE).read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name != checkpoint.FILE]  # no temporary left behind
    again = checkpoint.Checkpointer(tmp_path, ident, resume=True)
    assert again.done("1:a") == {"figures": 1} and again.done("2:b") is None


# --------------------------------------------------------------------------- budget stops
def test_time_budget_is_split_and_each_claim_says_what_it_covered(tmp_path):
    js = tmp_path / "r.json"
    proc = subprocess.run(VERIFY + ["--claim", "thm1.pool", "--claim", "prop1.abs", "--max-nodes", "6",
                                    "--time-limit", "6", "--quiet", "--json", str(js)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    doc = json.loads(js.read_text())
    split = doc["time_budget"]["split"]
    assert [s["stop"] for s in split] == ["time limit", "time limit"] and doc["time_budget"]["explorations"] == 2
    assert split[0]["allotted s"] == pytest.approx(3, abs=0.5)  # half of the budget each: none starved
    for r in doc["results"]:
        assert r["verdict"] == "inconclusive" and r["covered"]["sizes covered"], r
        assert r["covered"]["stopped"]["reason"] == "time limit"
    assert "time budget 6s over 2 exploration(s)" in proc.stdout


# --------------------------------------------------------------------------- lost Dask workers
@pytest.fixture()
def dask_cluster():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(cluster)
    try:
        yield cluster, client
    finally:
        client.close()
        cluster.close()


def test_lost_dask_worker_is_recovered_with_serial_results(tmp_path, dask_cluster):
    cluster, client = dask_cluster
    args = ["--claim", "thm1", "--max-nodes", "3", "--depth", "8"]
    ref = tmp_path / "serial.json"
    subprocess.run(VERIFY + args + ["--quiet", "--json", str(ref)], capture_output=True, timeout=300)
    pids = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    js = tmp_path / "d.json"
    proc = start(args + ["--backend", "dask", "--address", cluster.scheduler_address, "--json", str(js)])
    out, err, fired = run_until(proc, "N=3] level 3", lambda: os.kill(victim, signal.SIGKILL))
    assert fired, err[-3000:]
    assert proc.returncode == 1, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert "recomputing the level" in err
    assert digest(json.loads(js.read_text())) == digest(json.loads(ref.read_text()))


def test_no_dask_worker_left_is_inconclusive_in_one_line(tmp_path, dask_cluster):
    cluster, client = dask_cluster
    js = tmp_path / "d.json"
    proc = start(["--claim", "thm1.pool", "--max-nodes", "4", "--backend", "dask", "--address",
                  cluster.scheduler_address, "--json", str(js)], env={"PLACEMENT_ORACLES_WORKER_WAIT": "3"})
    out, err, fired = run_until(proc, "N=3] level 3", lambda: cluster.scale(0))
    assert fired, err[-3000:]
    assert proc.returncode == 3, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.startswith("verify: cannot recover")]
    assert len(lines) == 1 and "no Dask worker left" in lines[0]
    r = results(js)["thm1.pool"]
    assert r["verdict"] == "inconclusive" and r["covered"]["sizes covered"] == [1, 2]
