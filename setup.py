"""The opt-in compiled build: ``PROOFS_CHECK_COMPILE=1 pip install -e .`` compiles the explorer's
hot modules (``heuristics.compiled.HOT_MODULES``) with mypyc; everything else is in pyproject.toml.

Without the switch, without mypyc or without a C compiler the install is pure Python and works
the same (each extension is optional: a failed C compile leaves its module pure). The digests of
the compiled sources go to ``heuristics/compiled_build.json``, so an edited source is never
shadowed by its old extension (``heuristics.compiled.guard``).
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Any

from setuptools import setup

ROOT = Path(__file__).resolve().parent


def _compiled_module() -> Any:
    """heuristics/compiled.py without importing the package (its dependencies may be absent)."""
    spec = importlib.util.spec_from_file_location("_hot_modules", ROOT / "heuristics" / "compiled.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _say(text: str) -> None:
    print(f"placement-oracles build: {text}", file=sys.stderr)


def ext_modules() -> list[Any]:
    hot = _compiled_module()
    if not hot.requested(os.environ):
        return []
    cc = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        _say(f"no C compiler ({cc!r} not found): pure Python install")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _say("mypyc (part of mypy) is not installed: pure Python install")
        return []
    paths = [str(hot.source(m, ROOT).relative_to(ROOT)) for m in hot.HOT_MODULES]
    # Imports outside the compiled set are type-checked only as far as the compile needs.
    exts = mypycify(["--ignore-missing-imports", "--follow-imports=silent", *paths], opt_level="3")
    for ext in exts:
        ext.optional = True
    hot.MANIFEST.write_text(json.dumps(hot.manifest(hot.HOT_MODULES, ROOT), indent=1) + "\n")
    _say(f"compiling {len(paths)} modules with mypyc")
    return exts


setup(ext_modules=ext_modules())
