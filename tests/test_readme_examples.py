"""Every command of the README's ``bash`` code blocks (and of docs/simulator.md's and
data/openb/README.md's) runs, as pasted, from a fresh clone.

:data:`EXAMPLES` declares each README command: the command run here (the README's, or the same at
a smaller size: fewer nodes, a shorter window) and its exit code (docs/cli.md), or why it is not
run (installing, the test suite itself, multi-minute benchmarks, a Dask cluster on other hosts).
A README command missing from the declaration fails :func:`test_every_readme_command_is_declared`,
so a new example cannot go untested. The commands run in a ``git clone`` of this repository (only
committed files: the data they read must be in the repository), in README order, one after the
other in the clone's root (``--replay r.json`` reads what ``--json r.json`` wrote), through
``python -m`` with the clone on ``PYTHONPATH``. The whole list is slow (``--runslow``, ≈ 2.5 min on the 2-core machine);
:data:`FAST` is a subset that runs by default.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = {"verify": "proofs_check.cli.verify", "sifopt": "proofs_check.cli.sifopt", "admit": "proofs_check.cli.admit",
           "simulate": "proofs_check.cli.simulate", "simulate-plot": "proofs_check.cli.plots",
           "ringsim": "proofs_check.cli.ringsim"}


class Example(NamedTuple):
    run: str | None  # the command run (None: not run, see ``why``)
    exit: int = 0
    why: str = ""  # why it is smaller than the README's, or why it is not run


NOT_RUN_INSTALL = "installs the package (the test runs the clone through python -m instead)"
NOT_RUN_BENCH = "a benchmark of minutes (benchmarks/ prints its own figures)"
NOT_RUN_DASK = "needs a Dask scheduler and workers on other hosts (the Dask backend: tests/test_parallel.py)"

EXAMPLES: dict[str, Example] = {
    "pip install -e . && verify --theorem 1 --max-nodes 6": Example(None, why=NOT_RUN_INSTALL),
    "pip install -e '.[test]' && python -m pytest -q": Example(None, why="the test suite itself"),
    "python benchmarks/ring_table.py --workers 2": Example(None, why=NOT_RUN_BENCH),
    "python benchmarks/ring_table.py --sections exact --exact-seeds 10 --workers 2": Example(None, why=NOT_RUN_BENCH),
    "python benchmarks/bench_ring_sim.py": Example(None, why=NOT_RUN_BENCH),
    "verify --list": Example("verify --list"),
    "verify --theorem 1 --max-nodes 6": Example("verify --theorem 1 --max-nodes 2", 1, "N ≤ 2: the same violation"),
    "verify --all --max-nodes 4 --json r.json --junit r.xml":
        Example("verify --all --max-nodes 2 --depth 4 --json r.json --junit r.xml", 1, "N ≤ 2, depth 4"),
    "verify --claim thm1.pool --max-nodes 3 --random 100 --seed 7":
        Example("verify --claim thm1.pool --max-nodes 2 --random 20 --seed 7", 0, "N ≤ 2, 20 samples"),
    "verify --replay r.json": Example("verify --replay r.json", 1),
    "verify --replay r.json --plot figs/": Example("verify --replay r.json --plot figs/", 1),
    "verify --theorem 1 --ties all --max-nodes 3": Example("verify --theorem 1 --ties all --max-nodes 2", 1, "N ≤ 2"),
    "verify --theorem 1 --variant repaired --max-nodes all":
        Example("verify --theorem 1 --variant repaired --max-nodes all --max-jobs 2 --max-w 2", 0, "≤ 2 jobs, w ≤ 2"),
    "verify --audit examples/data/placements.jsonl --bound 2": Example("verify --audit examples/data/placements.jsonl --bound 2"),
    "verify --audit examples/data/binds.csv --nodes-file examples/data/nodes.csv":
        Example("verify --audit examples/data/binds.csv --nodes-file examples/data/nodes.csv"),
    "verify --list-policies": Example("verify --list-policies"),
    "verify --policy best-fit": Example("verify --policy best-fit --max-nodes 2 --depth 3", 0, "N ≤ 2, depth 3"),
    "verify --policy fgd --measure sif --max-nodes 3":
        Example("verify --policy fgd --measure sif --max-nodes 2 --depth 3", 0, "N ≤ 2, depth 3"),
    "cd examples && verify --policy my_sched:FirstFit":
        Example("cd examples && verify --policy my_sched:FirstFit --max-nodes 2 --depth 3", 0, "N ≤ 2, depth 3"),
    "sifopt --nodes 4 --counts 1=1,2=1,3=2": Example("sifopt --nodes 4 --counts 1=1,2=1,3=2"),
    "sifopt examples/data/snapshot.json": Example("sifopt examples/data/snapshot.json"),
    "admit examples/data/snapshot.json --job 4x2": Example("admit examples/data/snapshot.json --job 4x2"),
    "admit examples/data/snapshot.json --repack": Example("admit examples/data/snapshot.json --repack"),
    "verify --audit examples/data/cluster-log.jsonl --bound 2": Example("verify --audit examples/data/cluster-log.jsonl --bound 2"),
    "simulate --schedulers compass-repaired,best-fit,fgd,sifopt --eta 0.85,0.9,0.95 --out runs --workers 2 --plot":
        Example("simulate --schedulers compass-repaired,best-fit,fgd,sifopt --eta 0.9 --window 0:20000 --out runs "
                "--plot", 0, "one η, the first 20,000 s"),
    "simulate data/openb/openb_pod_list_default.csv --format openb --out runs-openb":
        Example("simulate data/openb/openb_pod_list_default.csv --format openb --out runs-openb"),
    "sifopt --nodes-file data/openb/openb_node_list_gpu_node.csv --counts 1=3911,2=16,4=15,8=44":
        Example("sifopt --nodes-file data/openb/openb_node_list_gpu_node.csv --counts 1=3911,2=16,4=15,8=44"),
    "simulate data/openb/openb_pod_list_default.csv --format openb --mode fill --nodes-file data/openb/openb_node_list_gpu_node.csv":
        Example("simulate data/openb/openb_pod_list_default.csv --format openb --mode fill "
                "--nodes-file data/openb/openb_node_list_gpu_node.csv"),
    "ringsim --workloads B,D --loads 0.95 --seeds 3 --out ring-runs":
        Example("ringsim --workloads B,D --loads 0.95 --seeds 1 --dims 2,2,2 --warmup 5 --measure 20 --drain 5 "
                "--out ring-runs", 0, "one seed, 8 racks, 30 simulated hours"),
    "pip install -e '.[dist]'": Example(None, why=NOT_RUN_INSTALL),
    "dask scheduler --port 8786": Example(None, why=NOT_RUN_DASK),
    "dask worker tcp://HOST:8786 --nworkers 8 --nthreads 1": Example(None, why=NOT_RUN_DASK),
    "verify --theorem 1 --max-nodes 7 --backend dask --address HOST:8786": Example(None, why=NOT_RUN_DASK),
    "simulate --eta 0.85,0.9,0.95 --backend dask --address HOST:8786 --out runs": Example(None, why=NOT_RUN_DASK),
    "ringsim --seeds 50 --backend dask --address HOST:8786 --out ring-runs": Example(None, why=NOT_RUN_DASK),
    "verify --theorem 1 --max-nodes 6 --backend dask --workers 2":
        Example(None, why="starts a local Dask cluster (the Dask backend: tests/test_parallel.py)"),
}
# docs/simulator.md's quick start and data/openb/README.md, declared the same way.
SIMULATOR_DOC: dict[str, Example] = {
    "simulate": Example("simulate --window 0:101000", 0,
                        "the first 101,000 s: the literal readings abort in it, reported as findings, exit 0"),
    "simulate --schedulers compass-repaired,best-fit,fgd --eta 0.85,0.9,0.95 --out runs --workers 2 --plot":
        Example("simulate --schedulers compass-repaired,best-fit,fgd --eta 0.85,0.9 --window 0:20000 --out runs "
                "--workers 2 --plot", 0, "two η, the first 20,000 s"),
    "simulate data/openb/openb_pod_list_default.csv --format openb --schedulers best-fit,compass-literal":
        Example("simulate data/openb/openb_pod_list_default.csv --format openb --schedulers best-fit,compass-literal"),
    "simulate --day 0-1 --migration-cost 1,8,10 --out runs":
        Example("simulate --day 0 --migration-cost 1,10 --schedulers best-fit,compass-repaired --out runs", 0,
                "day 0, two costs, two schedulers"),
    "simulate --schedulers hier-compass --policy-opt hier-compass:panels_per_domain=2 --policy-opt "
    "hier-compass:variant=repaired --nodes 62":
        Example("simulate --schedulers hier-compass --policy-opt hier-compass:panels_per_domain=2 --policy-opt "
                "hier-compass:variant=repaired --nodes 62 --window 0:20000", 0, "the first 20,000 s"),
    "simulate --schedulers fft,drr --policy-opt fft:round_length=600 --policy-opt drr:round_length=600":
        Example("simulate --schedulers fft,drr --policy-opt fft:round_length=600 --policy-opt drr:round_length=600 "
                "--window 0:20000", 0, "the first 20,000 s"),
    "simulate-plot runs --t0 75600 --t1 81000": Example("simulate-plot runs --t0 75600 --t1 81000"),
    "python benchmarks/bench_simulator.py": Example(None, why=NOT_RUN_BENCH),
    "python benchmarks/paper_eval.py --workers 2 --openb data/openb/openb_pod_list_default.csv":
        Example(None, why=NOT_RUN_BENCH),
}
OPENB_README: dict[str, Example] = {
    "simulate data/openb/openb_pod_list_default.csv --format openb --day 0 --schedulers best-fit,compass-repaired":
        Example("simulate data/openb/openb_pod_list_default.csv --format openb --day 0 --schedulers "
                "best-fit,compass-repaired"),
    "sifopt --nodes-file data/openb/openb_node_list_gpu_node.csv --counts 1=3911,2=16,4=15,8=44":
        Example("sifopt --nodes-file data/openb/openb_node_list_gpu_node.csv --counts 1=3911,2=16,4=15,8=44"),
}
DECLARED: dict[str, dict[str, Example]] = {"README.md": EXAMPLES, "docs/simulator.md": SIMULATOR_DOC,
                                           "data/openb/README.md": OPENB_README}
# Run by default (a few seconds): one per command and data file.
FAST = ("verify --list", "sifopt examples/data/snapshot.json", "admit examples/data/snapshot.json --job 4x2",
        "verify --audit examples/data/binds.csv --nodes-file examples/data/nodes.csv",
        "sifopt --nodes-file data/openb/openb_node_list_gpu_node.csv --counts 1=3911,2=16,4=15,8=44",
        "simulate data/openb/openb_pod_list_default.csv --format openb --mode fill --nodes-file "
        "data/openb/openb_node_list_gpu_node.csv")


def readme_commands(text: str) -> list[str]:
    """Every command line of the ``bash`` code blocks, without its trailing ``# comment``."""
    out = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        for line in block.splitlines():
            command = re.split(r"\s+#\s", line, maxsplit=1)[0].strip()
            if command and not command.startswith("#"):
                out.append(command)
    return out


@pytest.mark.parametrize("doc", sorted(DECLARED))
def test_every_readme_command_is_declared(doc: str) -> None:
    commands, declared = readme_commands((ROOT / doc).read_text()), DECLARED[doc]
    assert commands, f"no bash code block found in {doc}"
    assert set(commands) == set(declared), (f"{doc}: commands not declared: "
                                            f"{sorted(set(commands) - set(declared))}; declared but gone: "
                                            f"{sorted(set(declared) - set(commands))}")
    assert all(e.run is not None or e.why for e in declared.values())
    assert set(FAST) <= set(EXAMPLES)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone of this repository's committed tree."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    dest = tmp_path_factory.mktemp("fresh") / "placement-oracles"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(dest)], check=True)
    return dest


def run_example(command: str, clone: Path) -> subprocess.CompletedProcess[str]:
    cwd = clone
    if command.startswith("cd "):
        folder, command = command[3:].split(" && ", 1)
        cwd = clone / folder
    argv = shlex.split(command)
    argv = [sys.executable, "-m", MODULES[argv[0]], *argv[1:]]
    env = {**os.environ, "PYTHONPATH": str(clone), "MPLBACKEND": "Agg"}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def check(readme: str, clone: Path, declared: dict[str, Example] = EXAMPLES) -> None:
    example = declared[readme]
    assert example.run is not None
    proc = run_example(example.run, clone)
    assert proc.returncode == example.exit, (f"{example.run}: exit {proc.returncode}, expected {example.exit}\n"
                                             f"{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("readme", FAST)
def test_fast_readme_examples_run_from_a_fresh_clone(readme: str, clone: Path) -> None:
    check(readme, clone)


@pytest.mark.slow
@pytest.mark.parametrize("doc", sorted(DECLARED))
def test_every_readme_example_runs_from_a_fresh_clone(clone: Path, doc: str) -> None:
    """In the file's order: ``--replay r.json`` needs the ``--json r.json`` of the line before."""
    for command in readme_commands((ROOT / doc).read_text()):
        if DECLARED[doc][command].run is not None:
            check(command, clone, DECLARED[doc])
