"""The opt-in compiled build (heuristics/compiled.py, setup.py): the stale-extension guard, the
build switch, and — in .ci/run's compiled stage — that the compiled modules are the ones loaded."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from heuristics import compiled

ROOT = Path(__file__).resolve().parent.parent
MOD = "heuristics.gpu.compass"


def _tree(tmp_path: Path, text: str = "X = 1\n") -> Path:
    src = compiled.source(MOD, tmp_path)
    src.parent.mkdir(parents=True)
    src.write_text(text)
    return src


def _fake_extension(tmp_path: Path) -> Path:
    ext = compiled.source(MOD, tmp_path).with_suffix(importlib.machinery.EXTENSION_SUFFIXES[0])
    ext.write_bytes(b"not really an extension")
    return ext


def test_no_extension_is_never_stale(tmp_path):
    _tree(tmp_path)
    assert compiled.stale(tmp_path) == []


def test_an_extension_without_a_manifest_is_stale(tmp_path):
    _tree(tmp_path)
    _fake_extension(tmp_path)
    assert compiled.stale(tmp_path) == [MOD]


def test_an_edited_source_makes_its_extension_stale(tmp_path):
    src = _tree(tmp_path)
    _fake_extension(tmp_path)
    compiled.manifest_path(tmp_path).write_text(json.dumps(compiled.manifest([MOD], tmp_path)))
    assert compiled.stale(tmp_path) == []
    src.write_text("X = 2\n")
    assert compiled.stale(tmp_path) == [MOD]


def test_a_garbled_manifest_counts_as_missing(tmp_path):
    _tree(tmp_path)
    _fake_extension(tmp_path)
    compiled.manifest_path(tmp_path).write_text("[1, 2")
    assert compiled.stale(tmp_path) == [MOD]


def test_the_guard_imports_every_hot_module_from_source_and_says_so(tmp_path):
    """In a child process (the guard changes the import system): a stale extension sends every
    hot module, not only the stale one, to its source, with one line on stderr."""
    _tree(tmp_path)
    _fake_extension(tmp_path)
    code = (f"import sys; from pathlib import Path; from heuristics import compiled; "
            f"print(compiled.guard(Path({str(tmp_path)!r}))); "
            f"f = sys.meta_path[0]; print(sorted(f.modules) == sorted(compiled.HOT_MODULES)); "
            f"print(f.find_spec({MOD!r}).origin); print(f.find_spec('json'))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert out == ["pure Python (stale compiled build ignored)", "True", str(compiled.source(MOD, tmp_path)), "None"]
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and MOD in err[0] and "older than its source" in err[0] and compiled.SWITCH in err[0]


@pytest.mark.parametrize("value, on", [("1", True), ("yes", True), (" ON ", True), ("", False), ("0", False),
                                       ("no", False)])
def test_the_switch(value, on):
    assert compiled.requested({compiled.SWITCH: value}) is on
    assert compiled.requested({}) is False


def test_the_build_backend_asks_for_mypy_only_when_switched_on(monkeypatch):
    spec = importlib.util.spec_from_file_location("_backend", ROOT / "build_backend" / "compiled_backend.py")
    assert spec is not None and spec.loader is not None
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    # setuptools' own requirements run setup.py (with the switch on: a compile); only ours here
    monkeypatch.setattr(backend.build_meta, "get_requires_for_build_wheel", lambda config_settings=None: ["wheel"])
    monkeypatch.setattr(backend.build_meta, "get_requires_for_build_editable", lambda config_settings=None: [])
    monkeypatch.delenv(compiled.SWITCH, raising=False)
    assert backend.get_requires_for_build_wheel() == ["wheel"]
    assert backend.get_requires_for_build_editable() == []
    monkeypatch.setenv(compiled.SWITCH, "1")
    assert backend.get_requires_for_build_wheel() == ["wheel", "mypy>=1.10"]
    assert backend.get_requires_for_build_editable() == ["mypy>=1.10"]


def test_every_hot_module_exists():
    for m in compiled.HOT_MODULES:
        assert compiled.source(m).exists(), m


@pytest.mark.skipif(os.environ.get("PROOFS_CHECK_EXPECT_COMPILED") != "1",
                    reason="only in .ci/run's compiled stage (PROOFS_CHECK_EXPECT_COMPILED=1)")
def test_the_compiled_stage_runs_compiled_code():
    """.ci/run's compiled stage must not silently test the pure modules."""
    import heuristics.gpu.compass
    import proofs_check.gpu.canonical

    assert compiled.status().startswith(f"compiled ({len(compiled.HOT_MODULES)} of"), compiled.status()
    for mod in (heuristics.gpu.compass, proofs_check.gpu.canonical):
        assert not str(mod.__file__).endswith(".py"), mod.__file__
