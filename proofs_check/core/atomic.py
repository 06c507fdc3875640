"""Atomic file output: every report, CSV, PNG and checkpoint is written through here.

The new content goes to a temporary file in the destination's own directory (so the rename
stays on one file system), is flushed and fsynced, and then replaces the destination with
``os.replace``. A reader therefore sees the old file or the whole new one, never a 0-byte or
truncated file; on any failure (a full disk, a destination that is a directory, an interrupt)
the temporary file is removed, the destination is left as it was, and the error propagates
(an ``OSError`` names the destination: ``error.filename`` is the path asked for). A
destination that exists and is not a regular file (``/dev/stdout``, ``/dev/full``, a pipe) is
written in place: there is nothing to rename over, and renaming over a device would replace it.

The file gets the permissions an ordinary ``open(path, "w")`` would give (0o666 less the umask),
or the existing destination's, rather than ``mkstemp``'s 0o600.
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable

__all__ = ["write_atomic", "replace_atomic"]


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, encoding: str = "utf-8") -> None:
    """Write ``data`` (text is encoded with ``encoding``; newlines are written as given) to ``path``
    atomically."""
    blob = data.encode(encoding) if isinstance(data, str) else data

    def fill(tmp: Path) -> None:
        with open(tmp, "wb") as f:
            f.write(blob)

    replace_atomic(path, fill)


def replace_atomic(path: str | os.PathLike[str], fill: Callable[[Path], None], *, prefix: str | None = None) -> None:
    """Call ``fill(tmp)`` to write the new content to a temporary path ``tmp`` in ``path``'s
    directory (``tmp`` keeps ``path``'s suffix, so e.g. matplotlib's ``savefig(tmp)`` infers the
    format), then fsync it and rename it over ``path``. On failure ``tmp`` is removed and the error
    re-raised."""
    asked = Path(path)
    dest = Path(os.path.realpath(asked)) if asked.is_symlink() else asked  # replace the link's target, not the link
    try:
        st = os.stat(dest)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(asked))
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:  # a device or pipe (/dev/stdout, /dev/full): nothing to rename over, written in place
            fill(dest)
        except OSError as e:
            e.filename, e.filename2 = str(asked), None
            raise
        return
    try:
        fd, name = tempfile.mkstemp(prefix=prefix or f".{dest.name}.", suffix=".tmp" + dest.suffix, dir=dest.parent)
    except OSError as e:
        e.filename, e.filename2 = str(asked), None
        raise
    os.close(fd)
    tmp = Path(name)
    try:
        fill(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, _mode(st))
        os.replace(tmp, dest)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            e.filename, e.filename2 = str(asked), None  # name the file asked for, not the temporary
        raise
    _sync_dir(dest.parent)


def _mode(existing: os.stat_result | None) -> int:
    if existing is not None:
        return stat.S_IMODE(existing.st_mode)
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _sync_dir(directory: Path) -> None:
    """Make the rename itself durable where the platform allows (best effort)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
