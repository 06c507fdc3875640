"""The opt-in compiled build: which modules it compiles, and the guard against stale ones.

``PROOFS_CHECK_COMPILE=1 pip install -e .`` compiles :data:`HOT_MODULES` with mypyc (``setup.py``)
and records the digest of each compiled source in :data:`MANIFEST`. Without the switch, without
mypyc or without a C compiler the same install is pure Python.

An editable install keeps the extension files beside the sources, and Python imports an
extension before a source of the same name: after an edit the old compiled code would run.
:func:`guard` (run when ``heuristics`` or ``proofs_check`` is first imported) compares each source
with the manifest; if any compiled module's source changed (or the manifest is missing), every
hot module is imported from its source, never a mix (compiled modules of one build call each
other's native code directly), and one line on stderr says so. Pure functions of plain files;
stdlib only (``setup.py`` loads this file without importing the package).
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Mapping, Sequence

# The explorer's hot path (benchmarks/explorer_ceiling.py shows the split).
HOT_MODULES: tuple[str, ...] = (
    "heuristics.gpu.abs_space",
    "heuristics.gpu.abs_store",
    "heuristics.gpu.compass",
    "heuristics.gpu.hier_compass",
    "proofs_check.gpu.canonical",
    "proofs_check.gpu.component_code",
    "proofs_check.gpu.tie_orders",
    "proofs_check.gpu.events",
    "proofs_check.gpu.packed",
    "proofs_check.gpu.policy_model",
    "proofs_check.core.successors",
    "proofs_check.core.tally",
    "proofs_check.gpu.facts",
)
ROOT = Path(__file__).resolve().parent.parent  # the directory holding the packages


def manifest_path(root: Path = ROOT) -> Path:
    return root / "heuristics" / "compiled_build.json"


MANIFEST = manifest_path()
SWITCH = "PROOFS_CHECK_COMPILE"


def requested(environ: Mapping[str, str]) -> bool:
    """The compiled build is switched on (``PROOFS_CHECK_COMPILE=1``)."""
    return environ.get(SWITCH, "").strip().lower() in ("1", "yes", "true", "on")


def source(module: str, root: Path = ROOT) -> Path:
    return root.joinpath(*module.split(".")).with_suffix(".py")


def digest(path: Path) -> str:
    import hashlib  # here, not at the top: a pure install never hashes, and hashlib loads OpenSSL (4 ms)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def extension(module: str, root: Path = ROOT) -> Path | None:
    """The compiled extension file of ``module`` beside its source, if there is one."""
    base = source(module, root).with_suffix("")
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = base.with_name(base.name + suffix)
        if candidate.exists():
            return candidate
    return None


def manifest(modules: Sequence[str] = HOT_MODULES, root: Path = ROOT) -> dict[str, str]:
    """What ``setup.py`` writes when it compiles: module → digest of the compiled source."""
    return {m: digest(source(m, root)) for m in modules}


def stale(root: Path = ROOT, modules: Sequence[str] = HOT_MODULES) -> list[str]:
    """The compiled modules whose source differs from the one compiled (all of them when the
    manifest is missing or unreadable)."""
    present = [m for m in modules if extension(m, root) is not None]
    if not present:
        return []
    import json  # as hashlib in ``digest``: only a compiled install reads its manifest
    try:
        recorded = json.loads(manifest_path(root).read_text())
    except (OSError, ValueError):
        recorded = {}
    return [m for m in present if not isinstance(recorded, dict) or recorded.get(m) != digest(source(m, root))]


class _SourcesFirst(importlib.abc.MetaPathFinder):
    """Imports the hot modules from their sources, ahead of any extension file."""

    def __init__(self, modules: Sequence[str], root: Path) -> None:
        self.modules, self.root = frozenset(modules), root

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.modules:
            return None
        return importlib.util.spec_from_file_location(fullname, source(fullname, self.root))


def guard(root: Path = ROOT) -> str:
    """Make sure no stale compiled module runs; returns the build in words (``status``)."""
    if any(isinstance(f, _SourcesFirst) for f in sys.meta_path):
        return status(root)
    old = stale(root)
    if old:
        sys.meta_path.insert(0, _SourcesFirst(HOT_MODULES, root))
        print(f"placement-oracles: the compiled {', '.join(old)} is older than its source: every hot module "
              f"runs from source (rebuild: {SWITCH}=1 pip install -e .)", file=sys.stderr)
    return status(root)


def status(root: Path = ROOT) -> str:
    """``pure Python``, ``compiled (k modules)`` or ``pure Python (stale compiled build ignored)``."""
    if any(isinstance(f, _SourcesFirst) for f in sys.meta_path):
        return "pure Python (stale compiled build ignored)"
    k = sum(extension(m, root) is not None for m in HOT_MODULES)
    return f"compiled ({k} of {len(HOT_MODULES)} hot modules, mypyc)" if k else "pure Python"
