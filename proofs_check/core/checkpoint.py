"""Checkpoints of the search (`verify --checkpoint DIR`, `verify --resume DIR`).

One file, ``DIR/checkpoint.pkl``, rewritten at every level boundary of every exploration:

* the run's *identity* (for ``verify``: claims, bounds, scheduler and its parameters, ties,
  variant, sampling, shard count and a digest of the code, built by the caller): a resume with
  any other identity is refused (:class:`CheckpointError`, a usage error: exit 2), naming the
  fields that differ;
* every finished exploration (its :class:`~proofs_check.core.search.Exploration`), keyed by the
  exploration's position in the run and its label;
* for each unfinished exploration, where it stands: the completed sizes, the property outcomes,
  and for the size in progress its figures, its depth and every shard's seen-set and frontier at
  the start of the level being expanded.

A resumed run returns finished explorations as they were and continues an unfinished one at
its last level boundary, replaying the interrupted level: the search is deterministic (rank
order), so it reaches exactly the result of an uninterrupted run.

The file is written atomically (:func:`proofs_check.core.atomic.write_atomic`): the new content
goes to a temporary file in DIR, is flushed to disk, and replaces the old file with
``os.replace``, so a crash mid-write leaves the previous checkpoint intact. A write that fails
(an ``OSError``: a full disk, a read-only DIR) raises, unless the run gave ``on_error``: then
``on_error`` gets one line, checkpointing stops for the rest of the run (the previous
checkpoint, if any, stays on disk and resumable) and the run goes on. It starts with a magic line, the format version and the SHA-256 of the
payload; a truncated or altered file is refused with one line. The payload is a pickle: resume
only checkpoints you wrote.
"""
from __future__ import annotations

import os
import pickle
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from proofs_check.core.atomic import write_atomic

MAGIC = b"placement-oracles checkpoint\n"
FORMAT_VERSION = 1
FILE = "checkpoint.pkl"


def _checksum(payload: bytes) -> str:
    """SHA-256 (hex) of a checkpoint's payload."""
    import hashlib  # here, not at the top: only a checkpointed run hashes, and hashlib loads OpenSSL at import
    return hashlib.sha256(payload).hexdigest()


class CheckpointError(Exception):
    """A checkpoint cannot be used (missing, corrupted, or made by another run): exit 2."""


class Checkpointer:
    """The checkpoint of one run. ``identity`` is what a resume must match exactly."""

    def __init__(self, directory: str | os.PathLike[str], identity: dict[str, Any], resume: bool = False,
                 on_error: Callable[[str], None] | None = None) -> None:
        self.dir = Path(directory)
        self.on_error = on_error
        self.failed: str | None = None  # why checkpointing stopped (a write failed), if it did
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
            if _checksum(payload) != digest:
                raise ValueError("checksum mismatch (truncated or altered)")
            doc = pickle.loads(payload)
        except Exception as e:  # any damage: one clear line, never a traceback
            raise CheckpointError(f"{self.path}: corrupted checkpoint ({' '.join(str(e).split())[:160]})") from None
        if doc["identity"] != self.identity:
            raise CheckpointError(f"{self.path}: {identity_mismatch(doc['identity'], self.identity)}")
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
        if self.failed is not None:
            return
        self.partial[key] = pickle.dumps(point, pickle.HIGHEST_PROTOCOL)
        self._write()

    def finish(self, key: str, exploration: Any) -> None:
        self.partial.pop(key, None)
        if self.failed is not None:
            return
        self.finished[key] = pickle.dumps(exploration, pickle.HIGHEST_PROTOCOL)
        self._write()

    def _write(self) -> None:
        payload = pickle.dumps({"identity": self.identity, "finished": self.finished, "partial": self.partial},
                               pickle.HIGHEST_PROTOCOL)
        head = MAGIC + f"{FORMAT_VERSION} {_checksum(payload)}\n".encode("ascii")
        try:
            write_atomic(self.path, head + payload)
        except OSError as e:
            if self.on_error is None:
                raise
            self.failed = f"{self.path}: {e.strerror or e}"
            kept = "the file keeps its previous checkpoint" if self.path.is_file() else "no checkpoint was written"
            self.on_error(f"cannot write the checkpoint {self.failed}; checkpointing stopped, the run goes on ({kept})")
            return
        self.writes += 1


NAMES = {"code": "the code changed since the checkpoint was written"}


def identity_mismatch(saved: dict[str, Any], now: dict[str, Any]) -> str:
    """One line naming every field in which a checkpoint's identity differs from this run's (a
    field holding a dict is compared key by key: ``policy_params.bound: checkpoint 5, now 0``)."""
    shown = []
    for k in sorted(set(saved) | set(now)):
        a, b = saved.get(k), now.get(k)
        if a == b:
            continue
        if k in NAMES:
            shown.append(NAMES[k])
        elif isinstance(a, dict) and isinstance(b, dict):
            shown += [f"{k}.{sub}: checkpoint {_short(a.get(sub))}, now {_short(b.get(sub))}"
                      for sub in sorted(set(a) | set(b), key=str) if a.get(sub) != b.get(sub)]
        else:
            shown.append(f"{k}: checkpoint {_short(a)}, now {_short(b)}")
    return f"made by another run, resume refused ({'; '.join(shown)})"


def _short(value: Any, limit: int = 120) -> str:
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
