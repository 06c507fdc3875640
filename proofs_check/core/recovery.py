"""Where a search survives faults: the shards of one size's exploration, rebuilt on the workers
that remain when one is lost (:class:`Shards`), and the checkpoint of an unfinished exploration at
each level boundary (:class:`Saver`). Used by ``proofs_check.core.search``; domain-free."""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from proofs_check.core import checkpoint
from proofs_check.core.budget import Budget
from proofs_check.core.engine import Engine, Pool, WorkerLost

Progress = Callable[[str], None]
MAX_RECOVERIES = 3  # per level: then the size stops ("workers lost"), inconclusive

# Shard state that a checkpoint carries: everything but the shard's identity and wiring (its
# peers, its work board), and its cache of the keys it sent to other shards (a restored shard
# starts without it: always exact).
_NOT_STATE = frozenset({"index", "count", "spec", "peers", "shipped", "board"})


def shard_checkpoint(self: Any) -> dict[str, Any]:
    """The shard's state at a level boundary (seen-set, frontier, …), for a checkpoint or for
    recomputing a level on another worker; whatever representation the shard keeps."""
    return {name: value for name, value in vars(self).items() if name not in _NOT_STATE}


def shard_restore(self: Any, state: dict[str, Any]) -> None:
    vars(self).update(state)




class Saver:
    """Writes an unfinished exploration's resume point at each level boundary."""

    def __init__(self, ckpt: checkpoint.Checkpointer, key: str, result: Any) -> None:
        self.ckpt, self.key, self.result = ckpt, key, result

    def level(self, stats: Any, depth: int, frontier: int, shards: list[Any]) -> None:
        self.ckpt.save_partial(self.key, {"exploration": self.result, "size": {
            "stats": stats, "depth": depth, "frontier": frontier, "shards": shards}})

    def size_done(self) -> None:
        self.ckpt.save_partial(self.key, {"exploration": self.result, "size": None})


class Shards:
    """The shards of one size's exploration; rebuilt on the workers that remain when one is lost."""

    def __init__(self, engine: Engine, factory: Callable[..., Any], spec: Any) -> None:
        self.engine, self.factory, self.spec, self.k = engine, factory, spec, engine.shard_count
        self.pool: Pool | None = None

    def start(self, seeds: list[tuple[Any, ...]] | None, snapshot: list[Any] | None, keep: bool = False) -> list[Any] | None:
        """Seed (or restore) the shards; with ``keep``, return their state (the first recovery point)."""
        for attempt in range(MAX_RECOVERIES + 1):
            try:
                self.pool = self.engine.pool(self.factory, self.spec)
                if snapshot is not None:
                    self.pool.call("restore", [(s,) for s in snapshot])
                    return snapshot
                self.pool.call("seed", seeds or [])
                return self.pool.call("checkpoint", [()] * self.k) if keep else None
            except WorkerLost:
                if self.pool is not None:
                    self.pool.abort()
                    self.pool = None
                if attempt == MAX_RECOVERIES:
                    raise
        return None

    def call(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]:
        assert self.pool is not None
        return self.pool.call(method, args)

    def recover(self, snapshot: list[Any], why: str, progress: Progress | None, where: str) -> None:
        """Restart every shard from the last completed level on the workers that remain."""
        if self.pool is not None:
            self.pool.abort()
            self.pool = None
        if progress is not None:
            progress(f"[{where}] {why}; recomputing the level from the last completed one on the workers left")
        self.pool = self.engine.pool(self.factory, self.spec)
        self.pool.call("restore", [(s,) for s in snapshot])

    def finish(self, aborted: bool) -> None:
        if self.pool is not None:
            (self.pool.abort if aborted else self.pool.close)()
            self.pool = None


class Resumable:
    """One exploration's run under the checkpoint session and the time budget, if any: its key in
    the checkpoint, its share of the budget (``deadline``), and the record of both at its end."""

    def __init__(self, label: str, deadline: float | None, progress: Progress | None) -> None:
        self.label, self.progress, self.t0 = label, progress, time.perf_counter()
        self.ckpt = checkpoint.session()
        self.key = self.ckpt.key(label) if self.ckpt is not None else label
        self.done = self.ckpt.done(self.key) if self.ckpt is not None else None
        self.deadline, self.share = deadline, None
        if isinstance(deadline, Budget) and self.done is None:
            self.deadline, self.share = deadline.share(label)

    def finished(self) -> Any:
        """The exploration as the checkpoint holds it when it finished there, else None."""
        if self.done is not None and self.progress is not None:
            self.progress(f"[{self.label}] finished in the checkpoint: not explored again")
        return self.done

    def point(self) -> dict[str, Any] | None:
        """Where the checkpoint left this exploration unfinished, else None."""
        point = self.ckpt.resume_point(self.key) if self.ckpt is not None else None
        if point is not None and self.progress is not None:
            size = point.get("size")
            self.progress(f"[{self.label}] resumed from the checkpoint at " + (
                f"N={size['stats'].size}, level {size['depth'] + 1}" if size else "the next size"))
        return point

    def saver(self, result: Any) -> Saver | None:
        return Saver(self.ckpt, self.key, result) if self.ckpt is not None else None

    def end(self, result: Any, complete: bool, stop: str) -> None:
        if self.ckpt is not None and (complete or stop.startswith("max-states")):
            self.ckpt.finish(self.key, result)  # deterministic: a resume would reach the same
        if self.share is not None:
            self.share.used, self.share.stop = time.perf_counter() - self.t0, stop
