"""A digest of the program's own code, for the identity of a checkpoint (`verify --resume`).

A checkpoint written by one version of the code and resumed by another would mix two programs'
results in one verdict, so the checkpoint records :func:`source_digest` of the package roots and
a resume after any change to them is refused. The core imports no domain: the caller passes the
package directories in (``proofs_check.cli.verify`` passes ``oracle/``, ``heuristics/`` and
``proofs_check/``).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

SUFFIXES = (".py", ".json")


def source_files(roots: Iterable[str | os.PathLike[str]], suffixes: tuple[str, ...] = SUFFIXES) -> list[tuple[str, Path]]:
    """Every file ending in one of ``suffixes`` under each root, as (path relative to the root's
    parent, e.g. ``oracle/gpu/phi_star.py``, with ``/`` separators; the path), sorted by the relative
    path. ``__pycache__`` folders are skipped."""
    out: list[tuple[str, Path]] = []
    for root in roots:
        base = Path(root)
        for path in base.rglob("*"):
            if path.suffix in suffixes and path.is_file() and "__pycache__" not in path.parts:
                out.append((path.relative_to(base.parent).as_posix(), path))
    return sorted(out)


def source_digest(roots: Iterable[str | os.PathLike[str]], suffixes: tuple[str, ...] = SUFFIXES) -> str:
    """SHA-256 (hex) over every source file of ``roots``: each file's relative path and content,
    length-prefixed, in sorted order, so renaming, adding, removing or editing any file changes it."""
    import hashlib  # here, not at the top: only a checkpointed run asks, and hashlib loads OpenSSL at import
    h = hashlib.sha256()
    for rel, path in source_files(roots, suffixes):
        name, data = rel.encode("utf-8"), path.read_bytes()
        h.update(len(name).to_bytes(8, "big") + name)
        h.update(len(data).to_bytes(8, "big") + data)
    return h.hexdigest()
