"""The architecture of docs/architecture.md, enforced: import-linter's contracts (pyproject.toml:
layers oracle ← heuristics ← proofs_check, a domain-free core, GPU and rack domains apart, the
programs on top) and no import cycle anywhere (lazy imports inside functions included)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("oracle", "heuristics", "proofs_check")


def test_import_contracts_are_kept() -> None:
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports not installed: pip install -e '.[test]'")
    proc = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_no_import_cycles() -> None:
    graph = grimp.build_graph(*PACKAGES)
    g = nx.DiGraph()
    for m in graph.modules:
        for dep in graph.find_modules_directly_imported_by(m):
            g.add_edge(m, dep)
    # a package's __init__ importing its own submodules is not a design cycle; ours are empty
    cycles = [c for c in nx.simple_cycles(g) if len(c) > 1]
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c + [c[0]]) for c in cycles[:10])


def test_core_stays_small_and_single() -> None:
    """One concept per module: no module of the verifier over ~500 lines."""
    big = [(p.relative_to(ROOT), n) for p in (ROOT / "proofs_check").rglob("*.py")
           if (n := len(p.read_text().splitlines())) > 520]
    assert not big, f"modules over 520 lines: {big}"


def test_the_catalogue_starts_without_numpy() -> None:
    """`verify` imports the whole catalogue at every start; only the RingStitch checks need numpy
    (and the rack heuristics), so they are imported when a ring claim runs (``ring_claims._on_call``)."""
    code = "import sys, proofs_check.cli.verify; print(sorted(m for m in ('numpy', 'heuristics.rack') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
