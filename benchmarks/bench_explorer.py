"""Explorer speed, side by side: this tree against the explorer of commit e0bcca7 (issue 16).

    python benchmarks/bench_explorer.py [--ref e0bcca7] [--cases pool5,thm1n6] [--workers 1,2] [--compiled]
                                        [--ref-compiled] [--repeat K]
    python benchmarks/bench_explorer.py --instructions [--cases pool4] [--compiled] [--ref e0bcca7]

The reference is built from the git history into a temporary directory (``git archive``, removed
at the end) and run there as ``python -m proofs_check.cli …`` (the old CLI
module); this tree runs as ``python -m proofs_check.cli.verify …``. Both run as child processes,
one after the other, on the same bounds:

* ``pool5``  — ``verify --claim thm1.pool --min-nodes 5 --max-nodes 5 --depth 8 --max-jobs 4 --max-w 4``
* ``thm1n6`` — ``verify --theorem 1 --max-nodes 6`` (the README's command)
* ``thm2`` (opt-in) — ``verify --theorem 2``: hierarchical COMPASS at Theorem 2's default bounds
  (since e0bcca7 its search reaches more states, the real ones: compare it with a later ``--ref``)
* ``pool4`` (opt-in; the default of ``--instructions``) — ``verify --claim thm1.pool --min-nodes 4
  --max-nodes 4 --depth 4 --max-jobs 4 --max-w 4``: 9,319 distinct states, about 1.5 s
* ``mem3`` (opt-in) — ``verify --claim thm1.pool --variant repaired --min-nodes 3 --max-nodes 3
  --max-jobs 5 --max-w 8``: 204,815 distinct states, where the peak memory per million states
  is no longer dominated by the interpreter's base

each serial and with ``--workers 2``. With ``--compiled`` this tree also runs as the opt-in compiled
build (``PROOFS_CHECK_COMPILE=1``, setup.py), made in a temporary copy in the same run; with
``--ref-compiled`` the reference is compiled too (a reference that has the opt-in build). Printed per
run: wall time, distinct states (summed over the
report's exploration rows), distinct states per second, the speed-up (reference wall / this
tree's wall; "cpu ×": the same for CPU seconds, steadier on a loaded machine), the child's peak resident memory (``resource`` ru_maxrss of the child, via
``os.wait4``; with ``--workers`` the largest of the child and its reaped workers) and that peak per
million distinct states. "same" says whether the two reports agree on every verdict line and every
exploration row (N, distinct, generated, depth, at-bound, queue, refused, failures, pruned). The
last line counts the rows that meet the speed goal (``GOAL``: ≥ 5× pure, ≥ 10× compiled, with the
same rows and peak MiB per million states not above the reference's).
On a shared machine wall times are noisy: compare ratios from one run, not across runs; ``--repeat
K`` runs every tree K times, alternately, and shows the medians (and "same" only if every run agrees).

``--instructions`` counts instead of timing: every run (serial only) goes under valgrind's
cachegrind without its cache model (``valgrind --tool=cachegrind --cache-sim=no``: instructions
executed, about 20× slower than a plain run), and the row shows the instructions of the reference
and of this tree and their ratio. A count does not move with the machine's load (two runs of one
tree differ by well under 1 %), so it can show a change of a few per cent that wall times on a
shared machine cannot; it is not a time (an instruction that misses the cache costs more than one
that hits), so the timed rows stay the issue's measure. valgrind is a system tool, not a Python
dependency: without it the mode stops with a one-line error.

Every tree is byte-compiled before it is timed (``byte_compiled``), as an installed package is:
where ``PYTHONDONTWRITEBYTECODE`` is set (this machine sets it) a run would otherwise compile every
module it imports from source, about 0.2 s of start-up per run in either tree.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "pool5": ["--claim", "thm1.pool", "--min-nodes", "5", "--max-nodes", "5", "--depth", "8", "--max-jobs", "4",
              "--max-w", "4"],
    "thm1n6": ["--theorem", "1", "--max-nodes", "6"],
    # opt-in (--cases thm2): Theorem 2 at its default bounds, hierarchical COMPASS (hier_compass)
    "thm2": ["--theorem", "2"],
    # opt-in (--cases mem3): 204,815 distinct states, for peak memory per million states
    "pool4": ["--claim", "thm1.pool", "--min-nodes", "4", "--max-nodes", "4", "--depth", "4", "--max-jobs", "4",
              "--max-w", "4"],
    "mem3": ["--claim", "thm1.pool", "--variant", "repaired", "--min-nodes", "3", "--max-nodes", "3", "--max-jobs", "5",
             "--max-w", "8"],
}
DEFAULT_CASES = ("pool5", "thm1n6")
GOAL = {"pure": 5.0, "compiled": 10.0}  # the speed-ups asked of this tree (issue 23), per build
ROW = re.compile(r"^\s+(\d+)\s+([\d,]+)\s+([\d,]+)\s+(\d+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)\s")
VERDICT = re.compile(r"^(\S+): ([A-Z]+)\b")
IREFS = re.compile(r"I\s+refs:\s+([\d,]+)")
COUNTED = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]


@dataclass
class Run:
    wall: float
    cpu: float  # user + system seconds of the child and the workers it reaped
    rc: int
    maxrss_kib: int
    rows: list[tuple[str, ...]]
    verdicts: list[tuple[str, ...]]
    instructions: int | None = None  # with ``counted``: what cachegrind counted

    @property
    def distinct(self) -> int:
        return sum(int(r[1].replace(",", "")) for r in self.rows)


def run(cmd: list[str], cwd: Path, counted: bool = False) -> Run:
    """``cmd`` in ``cwd`` as a child process (``counted``: under cachegrind, module docstring)."""
    env = {**os.environ, "PYTHONPATH": str(cwd), "PYTHONHASHSEED": "0"}
    t0 = time.perf_counter()
    # cachegrind reports on stderr, which is short: read after stdout, it cannot fill its pipe first
    proc = subprocess.Popen(COUNTED + cmd if counted else cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE if counted else subprocess.DEVNULL, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    rows = [m.groups() for m in map(ROW.match, out.splitlines()) if m]
    verdicts = [m.groups() for m in map(VERDICT.match, out.splitlines()) if m and m.group(1) != "summary"]
    refs = IREFS.search(err) if counted else None
    if counted and refs is None:
        raise SystemExit(f"bench_explorer: no instruction count from valgrind for {' '.join(cmd)} in {cwd}: "
                         f"{err.strip()[-300:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, proc.returncode, usage.ru_maxrss, rows, verdicts,
               int(refs.group(1).replace(",", "")) if refs else None)


@contextmanager
def compiled_tree() -> Iterator[Path]:
    """This working tree copied to a temporary directory and compiled there with mypyc (the
    checkout stays pure); removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="bench_explorer_compiled_"))
    try:
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                               capture_output=True).stdout
        tar = subprocess.run(["tar", "-c", "--null", "-T", "-", "-f", "-"], cwd=ROOT, input=files, check=True,
                             capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=tar, check=True)
        compile_in(tmp, "compiled build")
        yield byte_compiled(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def byte_compiled(tree: Path) -> Path:
    """``tree`` with its packages' bytecode written (``compileall``), so the runs import it rather
    than compiling sources; returns ``tree``."""
    packages = [str(tree / d) for d in ("heuristics", "oracle", "proofs_check") if (tree / d).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], check=True, capture_output=True)
    return tree


def compile_in(tree: Path, what: str) -> None:
    """Compile ``tree``'s hot modules in place with mypyc; exit if the build does not load."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree, check=True,
                   capture_output=True, env={**os.environ, "PROOFS_CHECK_COMPILE": "1"})
    status = subprocess.run([sys.executable, "-c", "from heuristics import compiled; print(compiled.status())"],
                            cwd=tree, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
    print(f"{what}: {status.stdout.strip()} in {tree} ({time.perf_counter() - t0:.0f} s to build)")
    if not status.stdout.startswith("compiled"):
        raise SystemExit(f"bench_explorer: the {what} did not load: {status.stdout}{status.stderr}")


@contextmanager
def reference_tree(rev: str, prefix: str) -> Iterator[Path]:
    """The tree of commit ``rev`` in a temporary directory, removed afterwards. ``git archive``
    reads the history without touching the checkout's worktree list (several sessions share the
    checkout; a crashed run must leave nothing registered behind)."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    ref = tmp / "ref"
    ref.mkdir()
    try:
        archive = subprocess.run(["git", "archive", "--format=tar", rev], cwd=ROOT, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(ref)], input=archive.stdout, check=True)
        print(f"reference: {rev} (git archive in {ref}); this tree: {ROOT}; {os.cpu_count()} CPUs")
        yield byte_compiled(ref)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref", default="e0bcca7", help="the reference commit (default e0bcca7)")
    ap.add_argument("--cases", help=f"comma-separated, from {', '.join(CASES)} (default {','.join(DEFAULT_CASES)}; "
                    "with --instructions pool4)")
    ap.add_argument("--workers", help="worker counts to run (1 = serial; default 1,2)")
    ap.add_argument("--compiled", action="store_true", help="also run this tree compiled with mypyc (needs a C "
                    "compiler and mypy; about a minute to build)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each tree per row, alternately (medians shown)")
    ap.add_argument("--ref-compiled", action="store_true", help="compile the reference too (a commit that has the "
                    "opt-in build): what a change does to the compiled build")
    ap.add_argument("--instructions", action="store_true", help="count instructions under valgrind (cachegrind) "
                    "instead of timing, serial only; default case pool4")
    a = ap.parse_args()
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    if a.instructions and (a.workers not in (None, "1") or a.repeat != 1):
        ap.error("--instructions runs each tree once, serially (a count does not vary): drop --workers / --repeat")
    a.workers = a.workers or "1,2"
    if a.instructions and shutil.which("valgrind") is None:
        raise SystemExit("bench_explorer: --instructions needs valgrind on PATH (a system package, e.g. apt install "
                         "valgrind)")
    a.cases = a.cases or ("pool4" if a.instructions else ",".join(DEFAULT_CASES))
    unknown = [c for c in a.cases.split(",") if c not in CASES]
    if unknown:
        ap.error(f"unknown case {unknown[0]!r}: choose from {', '.join(CASES)}")
    with reference_tree(a.ref, "bench_explorer_") as ref:
        if a.ref_compiled:
            compile_in(ref, "reference build")
        if a.compiled:
            with compiled_tree() as comp:
                (count if a.instructions else compare)(ref, a, comp)
        else:
            (count if a.instructions else compare)(ref, a, None)
    if not a.instructions:
        print("MiB/M = peak resident MiB per million distinct states (includes the interpreter's ~100 MiB base)")


def count(ref: Path, a: argparse.Namespace, comp: Path | None) -> None:
    """``--instructions``: one serial run of each tree per case under cachegrind, its count and ratio."""
    print(f"{'case':<7} {'build':<8} {'ref instructions':>17} {'new instructions':>17} {'ratio':>7} {'distinct':>9} same")
    builds = [("pure", byte_compiled(ROOT))] + ([("compiled", comp)] if comp is not None else [])
    for case in a.cases.split(","):
        old = run([sys.executable, "-m", cli_module(ref), *CASES[case], "--quiet"], ref, counted=True)
        for build, tree in builds:
            new = run([sys.executable, "-m", "proofs_check.cli.verify", *CASES[case], "--quiet"], tree, counted=True)
            assert old.instructions is not None and new.instructions is not None  # counted runs
            print(f"{case:<7} {build:<8} {old.instructions:>17,} {new.instructions:>17,} "
                  f"{old.instructions / new.instructions:>6.2f}x {new.distinct:>9,} {'yes' if agree(old, new) else 'NO'}",
                  flush=True)
            show_difference(old, new)


def compare(ref: Path, a: argparse.Namespace, comp: Path | None) -> None:
    """One row per case, mode and build ("pure" = this tree, "compiled" = its mypyc build)."""
    print(f"{'case':<7} {'mode':<9} {'build':<8} {'ref s':>8} {'new s':>8} {'speed-up':>8} {'distinct':>9} "
          f"{'ref st/s':>9} {'new st/s':>9} {'cpu ×':>6} {'ref MiB':>8} {'new MiB':>8} {'ref MiB/M':>9} {'new MiB/M':>9} same")
    builds = [("pure", byte_compiled(ROOT))] + ([("compiled", comp)] if comp is not None else [])
    met: list[bool] = []
    for case in a.cases.split(","):
        for k in (int(x) for x in a.workers.split(",")):
            extra = ["--quiet"] + ([] if k == 1 else ["--workers", str(k)])
            olds: list[Run] = []
            news: dict[str, list[Run]] = {build: [] for build, _ in builds}
            for _ in range(a.repeat):  # alternately, so a busy spell of the machine hits every tree
                olds.append(run([sys.executable, "-m", cli_module(ref), *CASES[case], *extra], ref))
                for build, tree in builds:
                    news[build].append(run([sys.executable, "-m", "proofs_check.cli.verify", *CASES[case], *extra],
                                           tree))
            old = median_of(olds)
            for build, _ in builds:
                new = median_of(news[build])
                same = all(agree(o, n) for o in olds for n in news[build])
                d = new.distinct
                mode = "serial" if k == 1 else f"workers {k}"
                print(f"{case:<7} {mode:<9} {build:<8} {old.wall:>8.1f} {new.wall:>8.1f} {old.wall / new.wall:>7.1f}x "
                      f"{d:>9,} {old.distinct / old.wall:>9,.0f} {d / new.wall:>9,.0f} {old.cpu / new.cpu:>5.1f}x "
                      f"{old.maxrss_kib / 1024:>8.0f} "
                      f"{new.maxrss_kib / 1024:>8.0f} {old.maxrss_kib / 1024 / (old.distinct / 1e6):>9,.0f} "
                      f"{new.maxrss_kib / 1024 / (d / 1e6):>9,.0f} {'yes' if same else 'NO'}", flush=True)
                show_difference(old, new)
                met.append(same and old.wall / new.wall >= GOAL[build]
                           and new.maxrss_kib / d <= old.maxrss_kib / old.distinct)
    print(f"the speed goal (>= {GOAL['pure']:g}x pure, >= {GOAL['compiled']:g}x compiled, same rows, MiB/M not above "
          f"the reference's): met in {sum(met)} of {len(met)} rows")


def cli_module(tree: Path) -> str:
    """The verify program of ``tree``: ``proofs_check.cli.verify``, or before the CLI package
    existed (e0bcca7) the module ``proofs_check.cli``."""
    return "proofs_check.cli.verify" if (tree / "proofs_check" / "cli" / "verify.py").exists() else "proofs_check.cli"


def median_of(runs: list[Run]) -> Run:
    """One run standing for ``runs`` of one command: the median wall and CPU seconds, the largest
    peak memory, the first run's rows, verdicts and exit code (``agree`` is asked of every run)."""
    first = runs[0]
    return Run(statistics.median(r.wall for r in runs), statistics.median(r.cpu for r in runs), first.rc,
               max(r.maxrss_kib for r in runs), first.rows, first.verdicts)


def agree(old: Run, new: Run) -> bool:
    """The two reports agree on every exploration row, verdict line and the exit code."""
    return (old.rows, old.verdicts, old.rc) == (new.rows, new.verdicts, new.rc) and bool(new.rows)


def show_difference(old: Run, new: Run) -> None:
    if not agree(old, new):
        print(f"   reference rows {old.rows} verdicts {old.verdicts} exit {old.rc}")
        print(f"   this tree rows {new.rows} verdicts {new.verdicts} exit {new.rc}")


if __name__ == "__main__":
    main()
