"""setuptools' build backend, asking for mypy (which ships mypyc) only when the compiled build
is switched on (``PROOFS_CHECK_COMPILE=1``, see setup.py): a plain install needs nothing more."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F401,F403  (the whole PEP 517/660 interface)


def _extra() -> list[str]:
    path = Path(__file__).resolve().parent.parent / "heuristics" / "compiled.py"
    spec = importlib.util.spec_from_file_location("_hot_modules", path)
    assert spec is not None and spec.loader is not None
    hot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hot)
    return ["mypy>=1.10"] if hot.requested(os.environ) else []


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    return [*build_meta.get_requires_for_build_wheel(config_settings), *_extra()]


def get_requires_for_build_editable(config_settings: Any = None) -> list[str]:
    return [*build_meta.get_requires_for_build_editable(config_settings), *_extra()]
