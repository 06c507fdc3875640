"""examples/buggy_scheduler: a separate package, installed with pip, registered through the entry
point, checked by `verify --policy` in a subprocess (issue 14, item 4).

The package is installed with ``pip install --target`` into a folder private to this test (not
into the shared environment, so other tests never see its names); the verify subprocess gets that
folder on PYTHONPATH, where importlib.metadata finds the package's entry points. When pip cannot
build it (no network and no local setuptools wheel), the test is skipped with pip's last line.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "buggy_scheduler"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("buggy_site")
    source = tmp_path_factory.mktemp("buggy_src") / "buggy_scheduler"
    # build from a copy: a build writes egg-info next to the sources, which would register the
    # example's entry points for any process that has examples/buggy_scheduler on sys.path
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--disable-pip-version-check",
                           "--target", str(target), str(source)],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        pytest.skip(f"pip cannot install examples/buggy_scheduler here (offline?): {last}")
    return target


def verify(site: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    return subprocess.run([sys.executable, "-m", "proofs_check.cli.verify", *argv], capture_output=True, text=True,
                          timeout=600, env=env, cwd=site)


def test_the_entry_point_registers_both_schedulers(site: Path) -> None:
    proc = verify(site, "--list-policies")
    assert proc.returncode == 0, proc.stderr
    names = proc.stdout.split()
    assert "buggy-best-fit" in names and "fixed-best-fit" in names and "best-fit" in names


def test_verify_finds_the_bug_with_the_shortest_counterexample(site: Path, tmp_path: Path) -> None:
    out = tmp_path / "bug.json"
    proc = verify(site, "--policy", "buggy-best-fit", "--claim", "policy.valid", "--quiet", "--json", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "policy.valid: VIOLATED — violated at N=2 after 2 events" in proc.stdout
    rec = json.loads(out.read_text())["results"][0]["counterexample"]
    assert rec["policy"] == "buggy-best-fit" and rec["n_nodes"] == 2
    assert rec["events"] == [{"event": "arrive", "job": 0, "g": 3, "w": 3}, {"event": "depart", "job": 0, "g": 3, "w": 3}]
    assert [s["event"] for s in rec["shown"]] == ["+J0 (g=3,w=3)", "-J0 (g=3,w=3)"]
    replay = verify(site, "--replay", str(out))
    assert replay.returncode == 1 and "reproduced after event 2" in replay.stdout


def test_the_fixed_scheduler_passes(site: Path) -> None:
    proc = verify(site, "--policy", "fixed-best-fit", "--claim", "policy.valid", "--claim", "policy.no-stuck",
                  "--claim", "policy.admission", "--claim", "policy.migrations", "--max-nodes", "2", "--quiet")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "summary: 4 holds; exit 0" in proc.stdout
