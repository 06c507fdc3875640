"""Every command of the README's code blocks, of every docs/*.md page's and of
data/openb/README.md's runs, as pasted, from a fresh clone (or is declared not runnable, with why).

A command is every line of a ``bash`` block, and every line of an unlabelled block that starts with
a program (``verify``, ``simulate``, ``python``, …); a line ending in ``\\`` continues on the next.

:data:`EXAMPLES` declares each README command: the command run here (the README's, or the same at
a smaller size: fewer nodes, a shorter window) and its exit code (docs/cli.md), or why it is not
run (installing, the test suite itself, multi-minute benchmarks, a Dask cluster on other hosts).
A README command missing from the declaration fails :func:`test_every_readme_command_is_declared`,
so a new example cannot go untested. The commands run in a ``git clone`` of this repository (only
committed files: the data they read must be in the repository), in README order, one after the
other in the clone's root (``--replay r.json`` reads what ``--json r.json`` wrote), through
``python -m`` with the clone on ``PYTHONPATH``. The whole list is slow (``--runslow``, ≈ 5 min on the 2-core machine);
:data:`FAST` is a subset that runs by default: a command of each data file and of each docs page.
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
PROGRAM = r"(?:[A-Z_]+=\S+\s+)*(?:cd|verify|sifopt|admit|simulate|simulate-plot|ringsim|python|pip|kubectl|dask)(?:\s|$)"
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
NOT_RUN_KUBECTL = "needs a Kubernetes cluster and kubectl (examples/k8s/ holds such output, audited below)"
SNAPSHOT = "SNAPSHOT.json is the reader's own file: here the example snapshot, examples/data/snapshot.json"

# The verify examples the README and docs/verify.md both show.
VERIFY_BASICS: dict[str, Example] = {
    "verify --list": Example("verify --list"),
    "verify --theorem 1 --max-nodes 6": Example("verify --theorem 1 --max-nodes 2", 1, "N ≤ 2: the same violation"),
    "verify --all --max-nodes 4 --json r.json --junit r.xml":
        Example("verify --all --max-nodes 2 --depth 4 --json r.json --junit r.xml", 1, "N ≤ 2, depth 4"),
    "verify --replay r.json": Example("verify --replay r.json", 1),
}
EXAMPLES: dict[str, Example] = {
    "pip install -e . && verify --theorem 1 --max-nodes 6": Example(None, why=NOT_RUN_INSTALL),
    "pip install -e '.[test]' && python -m pytest -q": Example(None, why="the test suite itself"),
    "python benchmarks/ring_table.py --workers 2": Example(None, why=NOT_RUN_BENCH),
    "python benchmarks/ring_table.py --sections exact --exact-seeds 10 --workers 2": Example(None, why=NOT_RUN_BENCH),
    "python benchmarks/bench_ring_sim.py": Example(None, why=NOT_RUN_BENCH),
    "python benchmarks/paper_eval.py --workers 2 --out docs/figures/data/paper_eval": Example(None, why=NOT_RUN_BENCH),
    "python benchmarks/paper_eval.py --quick --workers 2": Example(None, why=NOT_RUN_BENCH),
    "python benchmarks/render_figures.py": Example(None, why=NOT_RUN_BENCH),
    "simulate --generate gfs:0 --eta 0.95 --schedulers compass-repaired,fft,best-fit":
        Example("simulate --generate gfs:0 --eta 0.95 --window 0:4000 --schedulers compass-repaired,fft,best-fit", 0,
                "the first 4,000 s"),
    **VERIFY_BASICS,
    "verify --claim thm1.pool --max-nodes 3 --random 100 --seed 7":
        Example("verify --claim thm1.pool --max-nodes 2 --random 20 --seed 7", 0, "N ≤ 2, 20 samples"),
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
    "PROOFS_CHECK_COMPILE=1 pip install -e .": Example(None, why=NOT_RUN_INSTALL),
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
SMALL = "N ≤ 2, depth 2 (depth 3 where the violation needs it)"
BASELINES_DOC: dict[str, Example] = {
    "python -m proofs_check.cli.verify --policy cafgd --claim policy.valid --max-nodes 3":
        Example("verify --policy cafgd --claim policy.valid --max-nodes 2 --depth 2", 0, SMALL),
    "python -m proofs_check.cli.verify --policy cafgd --claim policy --max-nodes 3":
        Example("verify --policy cafgd --claim policy --max-nodes 2 --depth 3", 1, SMALL),
    "python -m proofs_check.cli.verify --policy cafgd --measure sif --max-nodes 3":
        Example("verify --policy cafgd --measure sif --max-nodes 2 --depth 2", 0, SMALL),
    "python -m proofs_check.cli.verify --policy mcg --claim policy --max-nodes 3":
        Example("verify --policy mcg --claim policy --max-nodes 2 --depth 2", 0, SMALL),
    "python -m proofs_check.cli.verify --policy mcg --measure sif --max-nodes 3":
        Example("verify --policy mcg --measure sif --max-nodes 2 --depth 2", 0, SMALL),
}
HETEROGENEOUS_DOC: dict[str, Example] = {
    "simulate data/openb/openb_pod_list_default.csv --format openb --nodes-file data/openb/openb_node_list_gpu_node.csv "
    "--schedulers best-fit,fgd,cafgd,mcg,compass-repaired":
        Example("simulate data/openb/openb_pod_list_default.csv --format openb --nodes-file "
                "data/openb/openb_node_list_gpu_node.csv --schedulers best-fit,fgd,cafgd,mcg,compass-repaired --day 0",
                0, "day 0"),
    "PYTHONPATH=. python -m proofs_check.cli.simulate data/openb/openb_pod_list_default.csv --format openb "
    "--nodes-file data/openb/openb_node_list_gpu_node.csv --schedulers sifopt,fft,drr,best-fit [--policy-opt "
    "sifopt:exact_max_nodes=2000 --policy-opt fft:exact_max_nodes=2000]":
        Example("simulate data/openb/openb_pod_list_default.csv --format openb --nodes-file "
                "data/openb/openb_node_list_gpu_node.csv --schedulers sifopt,fft,drr,best-fit --day 0", 0,
                "day 0, without the optional [--policy-opt …]"),
}
HIERARCHICAL_DOC: dict[str, Example] = {
    "verify --theorem 2 --max-domains 3 --panels 9 --json out.json":
        Example("verify --theorem 2 --max-domains 1 --panels 9 --json out.json", 1, "one domain"),
    "verify --theorem 2 --max-domains 2 --panels 1,2,3 --random 20":
        Example("verify --theorem 2 --max-domains 1 --panels 1,2 --random 3", 1, "one domain, K = 1, 2, 3 samples"),
    "verify --claim thm2-lifted --claim k1-reduces --max-domains 3 --panels 2,3,9":
        Example("verify --claim thm2-lifted --claim k1-reduces --max-domains 1 --panels 2,3,9", 0, "one domain"),
    "verify --replay out.json": Example("verify --replay out.json", 1),
    "python benchmarks/bench_hier.py --racks 8,32,128,512": Example(None, why=NOT_RUN_BENCH),
    "PYTHONPATH=. python benchmarks/hier_coverage.py --panels 2,3,9": Example(None, why=NOT_RUN_BENCH),
    "simulate --schedulers hier-compass,compass-repaired --nodes 36 --day 0 --policy-opt "
    "hier-compass:panels_per_domain=9 --policy-opt hier-compass:variant=repaired":
        Example("simulate --schedulers hier-compass,compass-repaired --nodes 36 --day 0 --policy-opt "
                "hier-compass:panels_per_domain=9 --policy-opt hier-compass:variant=repaired"),
}
POLICIES_DOC: dict[str, Example] = {
    "cd examples && verify --policy my_sched:FirstFit":
        Example("cd examples && verify --policy my_sched:FirstFit --max-nodes 2 --depth 3", 0, "N ≤ 2, depth 3"),
    "verify --policy fgd --demands 1 --claim policy.sif --max-nodes 3 --ties first":
        Example("verify --policy fgd --demands 1 --claim policy.sif --max-nodes 3 --ties first"),
    "verify --policy fgd --demands 1 --claim policy.sif --max-nodes 3 --ties all":
        Example("verify --policy fgd --demands 1 --claim policy.sif --max-nodes 3 --ties all --depth 6", 1,
                "depth 6: the same violation"),
}
SCALING_DOC: dict[str, Example] = {
    "verify --theorem 1 --max-nodes 6 --workers 2": Example("verify --theorem 1 --max-nodes 2 --workers 2", 1, "N ≤ 2"),
    "verify --theorem 2 --max-domains 3 --workers 2":
        Example("verify --theorem 2 --max-domains 1 --panels 1 --workers 2", 1, "one domain, K = 1"),
    "verify --theorem 1 --max-nodes 7 --backend dask":
        Example(None, why="starts a local Dask cluster (the Dask backend: tests/test_parallel.py)"),
    "verify --theorem 1 --max-nodes 7 --backend dask --address 10.0.0.5:8786 [--workers 16]": Example(None, why=NOT_RUN_DASK),
    "simulate --eta 0.85,0.9,0.95 --migration-cost 1,8,30 --backend dask --address 10.0.0.5:8786 --out runs":
        Example(None, why=NOT_RUN_DASK),
    "ringsim --seeds 50 --backend dask --address 10.0.0.5:8786 --out ring-runs": Example(None, why=NOT_RUN_DASK),
}
SIFOPT_DOC: dict[str, Example] = {
    "sifopt --nodes 8 --counts 1=6,2=1,4=2": Example("sifopt --nodes 8 --counts 1=6,2=1,4=2"),
    "sifopt examples/data/snapshot.json": Example("sifopt examples/data/snapshot.json"),
    "sifopt examples/data/snapshot.json --json --solver milp": Example("sifopt examples/data/snapshot.json --json --solver milp"),
}
SIFOPT_SCHEDULER_DOC: dict[str, Example] = {
    "admit SNAPSHOT.json --job 4x2 [--json]": Example("admit examples/data/snapshot.json --job 4x2 --json", 0, SNAPSHOT),
    "admit SNAPSHOT.json --repack [--target K]": Example("admit examples/data/snapshot.json --repack --target 1", 0, SNAPSHOT),
}
VERIFY_DOC: dict[str, Example] = {
    **VERIFY_BASICS,
    "verify --claim prop3 --random 500 --seed 7":
        Example("verify --claim prop3 --max-nodes 2 --depth 4 --random 10 --seed 7", 1, "N ≤ 2, depth 4, 10 samples"),
    "verify --audit examples/data/placements.jsonl --bound 2": Example("verify --audit examples/data/placements.jsonl --bound 2"),
    "verify --all --variant repaired --max-nodes 6":
        Example("verify --all --variant repaired --max-nodes 2 --depth 4", 0, "N ≤ 2, depth 4"),
    "kubectl get nodes -o json > nodes.json": Example(None, why=NOT_RUN_KUBECTL),
    "kubectl get pods -A -w -o json --output-watch-events > pods.watch.jsonl": Example(None, why=NOT_RUN_KUBECTL),
    "kubectl get events -A -o json > events.json": Example(None, why=NOT_RUN_KUBECTL),
    "verify --audit pods.watch.jsonl --nodes-file nodes.json --k8s-events events.json --bound 0.05":
        Example("verify --audit examples/k8s/pods.watch.jsonl --nodes-file examples/k8s/nodes.json --k8s-events "
                "examples/k8s/events.json --bound 0.05", 1, "kubectl's output: the files of examples/k8s/"),
    "verify --audit examples/k8s/pods.watch.jsonl --nodes-file examples/k8s/nodes.json --k8s-events "
    "examples/k8s/events.json --bound 0.25 --json audit.json --junit audit.xml":
        Example("verify --audit examples/k8s/pods.watch.jsonl --nodes-file examples/k8s/nodes.json --k8s-events "
                "examples/k8s/events.json --bound 0.25 --json audit.json --junit audit.xml", 1),
}
DECLARED: dict[str, dict[str, Example]] = {
    "README.md": EXAMPLES, "data/openb/README.md": OPENB_README, "docs/baselines_cafgd_mcg.md": BASELINES_DOC,
    "docs/heterogeneous.md": HETEROGENEOUS_DOC, "docs/hierarchical.md": HIERARCHICAL_DOC,
    "docs/policies.md": POLICIES_DOC, "docs/scaling.md": SCALING_DOC, "docs/sifopt.md": SIFOPT_DOC,
    "docs/sifopt_scheduler.md": SIFOPT_SCHEDULER_DOC, "docs/simulator.md": SIMULATOR_DOC, "docs/verify.md": VERIFY_DOC}
# Run by default (a few seconds each): one per command, data file and docs page, as (file, command).
FAST = tuple(("README.md", c) for c in (
    "verify --list", "sifopt examples/data/snapshot.json", "admit examples/data/snapshot.json --job 4x2",
    "verify --audit examples/data/binds.csv --nodes-file examples/data/nodes.csv",
    "sifopt --nodes-file data/openb/openb_node_list_gpu_node.csv --counts 1=3911,2=16,4=15,8=44",
    "simulate data/openb/openb_pod_list_default.csv --format openb --mode fill --nodes-file "
    "data/openb/openb_node_list_gpu_node.csv")) + (
    ("docs/baselines_cafgd_mcg.md", "python -m proofs_check.cli.verify --policy cafgd --measure sif --max-nodes 3"),
    ("docs/heterogeneous.md", next(iter(HETEROGENEOUS_DOC))),
    ("docs/policies.md", "verify --policy fgd --demands 1 --claim policy.sif --max-nodes 3 --ties first"),
    ("docs/scaling.md", "verify --theorem 1 --max-nodes 6 --workers 2"),
    ("docs/sifopt.md", "sifopt examples/data/snapshot.json --json --solver milp"),
    ("docs/sifopt_scheduler.md", "admit SNAPSHOT.json --repack [--target K]"),
    ("docs/verify.md", "verify --audit pods.watch.jsonl --nodes-file nodes.json --k8s-events events.json --bound 0.05"),
)


def readme_commands(text: str) -> list[str]:
    """Every command line of the ``bash`` code blocks and every line of an unlabelled block that
    starts with a program (:data:`PROGRAM`), continuation lines joined, without its ``# comment``."""
    out = []
    for lang, block in re.findall(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M):
        if lang not in ("bash", ""):
            continue
        for line in re.sub(r"\\\n\s*", "", block).splitlines():
            command = re.split(r"\s+#\s", line, maxsplit=1)[0].strip()
            if command and not command.startswith("#") and (lang == "bash" or re.match(PROGRAM, command)):
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
    assert all(command in DECLARED[file] and DECLARED[file][command].run for file, command in FAST)


def test_every_docs_page_with_commands_is_declared() -> None:
    """A docs page that gains its first command must be declared too."""
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md") if readme_commands(p.read_text())}
    assert pages <= set(DECLARED), f"docs pages with commands, not declared: {sorted(pages - set(DECLARED))}"


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
    while "=" in argv[0]:  # `PYTHONPATH=. …`: the clone is on PYTHONPATH already
        argv = argv[1:]
    if argv[:2] == ["python", "-m"]:  # `python -m proofs_check.cli.verify …` is `verify …`
        argv = [next(p for p, m in MODULES.items() if m == argv[2]), *argv[3:]]
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


@pytest.mark.parametrize("doc, command", FAST)
def test_fast_readme_examples_run_from_a_fresh_clone(doc: str, command: str, clone: Path) -> None:
    check(command, clone, DECLARED[doc])


@pytest.mark.slow
@pytest.mark.parametrize("doc", sorted(DECLARED))
def test_every_readme_example_runs_from_a_fresh_clone(clone: Path, doc: str) -> None:
    """In the file's order: ``--replay r.json`` needs the ``--json r.json`` of the line before."""
    for command in readme_commands((ROOT / doc).read_text()):
        if DECLARED[doc][command].run is not None:
            check(command, clone, DECLARED[doc])
