"""Checkpoints of the search (`verify --checkpoint DIR`, `verify --resume DIR`).

One file, ``DIR/checkpoint.pkl``, rewritten at every level boundary of every exploration:

* the run's *identity* (claims, bounds, variant, shard count): a resume with any other identity
  is refused (:class:`CheckpointError`, a usage error: exit 2);
* every finished exploration (its :class:`~proofs_check.core.search.Exploration`), keyed by the
  exploration's position in the run and its label;
* for each unfinished exploration, where it stands: the completed sizes, the property outcomes,
  and for the size in progress its figures, its depth and every shard's seen-set and frontier at
  the start of the level being expanded.

A resumed run returns finished explorations as they were and continues an unfinished one at
its last level boundary, replaying the interrupted level: the search is deterministic (rank
order), so it reaches exactly the result of an uninterrupted run.

The file is written atomically: the new content goes to a temporary file in DIR, is flushed to
disk, and replaces the old file with ``os.replace``, so a crash mid-write leaves the previous
checkpoint intact. It starts with a magic line, the format version and the SHA-256 of the
payload; a truncated or altered file is refused with one line. The payload is a pickle: resume
only checkpoints you wrote.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

MAGIC = b"placement-oracles checkpoint\n"
FORMAT_VERSION = 1
FILE = "checkpoint.pkl"


class CheckpointError(Exception):
    """A checkpoint cannot be used (missing, corrupted, or made by another run): exit 2."""


class Checkpointer:
    """The checkpoint of one run. ``identity`` is what a resume must match exactly."""

    def __init__(self, directory: str | os.PathLike[str], identity: dict[str, Any], resume: bool = False) -> None:
        self.dir = Path(directory)
        self.path = self.dir / FILE
        self.identity = identity
        self.finished: dict[str, bytes] = {}
        self.partial: dict[str, bytes] = {}
        self.calls = 0
        self.writes = 0
        if resume:
            self._load()
        else:
            self.dir.mkdir(parents=True, exist_ok=True)

    # ----------------------------------------------------------------------- reading
    def _load(self) -> None:
        if not self.path.is_file():
            raise CheckpointError(f"{self.path}: no checkpoint to resume (write one with --checkpoint DIR)")
        raw = self.path.read_bytes()
        try:
            if not raw.startswith(MAGIC):
                raise ValueError("not a checkpoint file")
            head, payload = raw[len(MAGIC):].split(b"\n", 1)
            version, digest = head.decode("ascii").split(" ")
            if int(version) != FORMAT_VERSION:
                raise ValueError(f"format version {version}, this program reads {FORMAT_VERSION}")
            if hashlib.sha256(payload).hexdigest() != digest:
                raise ValueError("checksum mismatch (truncated or altered)")
            doc = pickle.loads(payload)
        except Exception as e:  # any damage: one clear line, never a traceback
            raise CheckpointError(f"{self.path}: corrupted checkpoint ({' '.join(str(e).split())[:160]})") from None
        if doc["identity"] != self.identity:
            diff = sorted(k for k in set(doc["identity"]) | set(self.identity)
                          if doc["identity"].get(k) != self.identity.get(k))
            shown = "; ".join(f"{k}: checkpoint {doc['identity'].get(k)!r}, now {self.identity.get(k)!r}" for k in diff)
            raise CheckpointError(f"{self.path}: made with other claims or bounds ({shown})")
        self.finished, self.partial = doc["finished"], doc["partial"]

    # ----------------------------------------------------------------------- the search's side
    def key(self, label: str) -> str:
        """The next exploration's key: its position in the run and its label."""
        self.calls += 1
        return f"{self.calls}:{label}"

    # Entries are kept pickled: a point is frozen when saved, whatever the search mutates later.
    def done(self, key: str) -> Any:
        blob = self.finished.get(key)
        return None if blob is None else pickle.loads(blob)

    def resume_point(self, key: str) -> dict[str, Any] | None:
        blob = self.partial.get(key)
        return None if blob is None else pickle.loads(blob)

    def save_partial(self, key: str, point: dict[str, Any]) -> None:
        self.partial[key] = pickle.dumps(point, pickle.HIGHEST_PROTOCOL)
        self._write()

    def finish(self, key: str, exploration: Any) -> None:
        self.partial.pop(key, None)
        self.finished[key] = pickle.dumps(exploration, pickle.HIGHEST_PROTOCOL)
        self._write()

    def _write(self) -> None:
        payload = pickle.dumps({"identity": self.identity, "finished": self.finished, "partial": self.partial},
                               pickle.HIGHEST_PROTOCOL)
        head = MAGIC + f"{FORMAT_VERSION} {hashlib.sha256(payload).hexdigest()}\n".encode("ascii")
        fd, tmp = tempfile.mkstemp(prefix=".checkpoint-", suffix=".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(head)
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self.writes += 1


_session: dict[str, Checkpointer | None] = {"current": None}


def session() -> Checkpointer | None:
    """The checkpoint of the run in progress, if any (the search consults it)."""
    return _session["current"]


@contextmanager
def using(ckpt: Checkpointer | None) -> Iterator[None]:
    old = _session["current"]
    _session["current"] = ckpt
    try:
        yield
    finally:
        _session["current"] = old
