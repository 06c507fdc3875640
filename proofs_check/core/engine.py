"""Where work runs: forked local processes or a Dask distributed cluster.

Two services, both domain-free:

* :meth:`Engine.pool` starts ``workers`` stateful *shards* — instances of any class, built in
  their own process (locally shard 0 in this one and the others forked; Dask actors pinned one
  per cluster worker) — and calls a
  method on all of them at once (:meth:`Pool.call`), results in shard order. The partitioned
  breadth-first search (``proofs_check.core.search``) runs on it.
* :meth:`Engine.starmap` runs independent jobs (simulator runs) and yields results in input order.

Dask rather than Ray: a pure-Python wheel with no runtime of its own to install, a
``LocalCluster`` of real worker processes on loopback for tests, stateful actors for the shards
and plain futures for sweeps. The package must be importable on the workers (same environment);
functions travel with cloudpickle. Design and measurements: docs/scaling.md.
"""
from __future__ import annotations

import inspect
import os
import traceback
from typing import Any, Callable, Iterator, Protocol, Sequence

BACKENDS = ("local", "dask")
MISSING_DASK = "--backend dask needs Dask distributed: pip install 'placement-oracles[dist]'"


class EngineError(RuntimeError):
    """The engine cannot run (missing package, unreachable cluster): a usage error, exit 2."""


class WorkerLost(RuntimeError):
    """A shard's process or Dask worker is gone (killed, connection closed). The search recovers
    by rebuilding its shards on the workers that remain; with none left the exploration stops
    (inconclusive), never with a traceback."""


class Pool(Protocol):
    """Shards started by :meth:`Engine.pool`."""

    def call(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


class InProcessPool:
    """One shard in this process (the serial search: no process, no pickling)."""

    def __init__(self, factory: Callable[..., Any], count: int, args: tuple[Any, ...]) -> None:
        self.shards = [factory(i, count, *args) for i in range(count)]

    def call(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]:
        return [getattr(s, method)(*a) for s, a in zip(self.shards, args)]

    def close(self) -> None:
        self.shards = []

    def abort(self) -> None:
        self.shards = []


def _on_board(shard: Any, board: Any) -> Any:
    """``shard``, given the pool's work board, if any (``LocalPool``)."""
    if board is not None:
        shard.set_board(board)
    return shard


def _serve(conn: Any, factory: Callable[..., Any], index: int, count: int, args: tuple[Any, ...],
           board: Any) -> None:
    """A forked worker: run the shard's methods on command until told to stop."""
    from proofs_check.core.children import die_with_parent
    from proofs_check.core.interrupt import shield_child

    shield_child()
    die_with_parent()  # a killed coordinator leaves no shard behind
    shard = _on_board(factory(index, count, *args), board)
    while True:
        msg = conn.recv()
        if msg is None:
            return
        method, margs = msg
        try:
            conn.send(("ok", getattr(shard, method)(*margs)))
        except MemoryError:  # raised again as MemoryError by the coordinator (no traceback: memory is short)
            conn.send(("memory", method))
        except BaseException:  # reported to the coordinator, which raises it
            conn.send(("error", traceback.format_exc()))


class LocalPool:
    """Shard 0 in this process and shards 1..K-1 in forked processes (their arguments reach them
    through fork, never pickled).

    The coordinator runs shard 0 while the forked shards run theirs, instead of waiting idle for
    K forked shards: one process fewer, shard 0's replies are not pickled, and, since a size's
    workers are forked from this process, they start with what shard 0 of the sizes before left
    in this process's memos (the canonical form's classes: a fresh fork per size otherwise
    computes them again)."""

    def __init__(self, factory: Callable[..., Any], count: int, args: tuple[Any, ...]) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        # shared memory for the shards to share each call's work, made before the forks, which
        # inherit it: a factory with ``work_board(count)`` makes it (``proofs_check.core.search``)
        board = factory.work_board(count) if hasattr(factory, "work_board") else None
        for i in range(1, count):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(theirs, factory, i, count, args, board), daemon=True)
            proc.start()
            theirs.close()
            self.conns.append(mine)
            self.procs.append(proc)
        self.local: Any = _on_board(factory(0, count, *args), board)

    def call(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]:
        for conn, a in zip(self.conns, args[1:]):
            conn.send((method, a))
        mine = getattr(self.local, method)(*args[0])  # meanwhile the forked shards run theirs
        try:
            replies = [conn.recv() for conn in self.conns]
        except (EOFError, OSError) as e:
            raise WorkerLost(f"a shard process ended during {method} ({type(e).__name__})") from None
        for status, value in replies:
            if status == "memory":  # the search stops that level as it does a serial one (out of memory)
                raise MemoryError(f"a shard process ran out of memory in {method}")
            if status == "error":
                raise RuntimeError(f"shard failed in {method}:\n{value}")
        return [mine] + [value for _, value in replies]

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
        self.local = None

    def abort(self) -> None:
        """End the shard processes now (an interrupt: they may be busy in a level)."""
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
        for conn in self.conns:
            conn.close()
        self.procs, self.conns, self.local = [], [], None


class DaskPool:
    """Shards as Dask actors, placed round-robin on the cluster's workers. Each shard gets the
    handles of all shards (``set_peers``) so it can deliver batches to the others directly."""

    def __init__(self, client: Any, factory: Callable[..., Any], count: int, args: tuple[Any, ...]) -> None:
        self.client, self.futures, self.actors, self.placed = client, [], [], []
        workers = live_workers(client)
        try:
            self.placed = [workers[i % len(workers)] for i in range(count)]
            self.futures = [client.submit(factory, i, count, *args, actor=True, pure=False, workers=[w])
                            for i, w in enumerate(self.placed)]
            self.actors = [f.result(timeout=LOST_AFTER) for f in self.futures]
        except Exception as e:
            self.close()
            raise WorkerLost(f"no Dask worker left that starts the shards ({_why(e)})") from None
        self.call("set_peers", [([_Peer(a) for a in self.actors],)] * count)

    def call(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]:
        try:
            pending = [getattr(actor, method)(*a) for actor, a in zip(self.actors, args)]
            return [self._wait(p, method) for p in pending]
        except WorkerLost:
            raise
        except Exception as e:
            if _is_loss(e):
                raise WorkerLost(f"a Dask worker was lost during {method} ({_why(e)})") from None
            raise

    def _wait(self, pending: Any, method: str) -> Any:
        """The call's result; WorkerLost as soon as a worker holding a shard has left the cluster
        (a call to a killed worker's actor would otherwise wait for ever)."""
        while True:
            try:
                return pending.result(timeout=POLL)
            except TimeoutError:
                gone = set(self.placed) - set(self.client.scheduler_info()["workers"])
                if gone:
                    raise WorkerLost(f"Dask worker {sorted(gone)[0]} was lost during {method}") from None

    def close(self) -> None:
        self.actors = []
        for f in self.futures:
            f.cancel()

    def abort(self) -> None:
        self.close()


class _Peer:
    """A shard's handle on another shard's actor. Dask hands an actor on the *same* worker back as
    the bare method, so an ``async`` method then returns a coroutine instead of a future (two
    shards share a worker when there are fewer workers than shards, e.g. after one was lost): it
    is run to completion here and wrapped so that ``.result()`` works either way."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("__") or name == "actor":  # pickling looks these up before __init__ ran
            raise AttributeError(name)
        attr = getattr(self.actor, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            return _Done(_finish(out)) if inspect.iscoroutine(out) else out
        return call


class _Done:
    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self, timeout: Any = None) -> Any:
        return self.value


def _finish(coro: Any) -> Any:
    """Run a coroutine that never suspends (a shard's ``receive``) to its value."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("a peer method suspended; it must complete without awaiting")


POLL = 1.0  # seconds between checks that the shards' workers are still there
# seconds to wait for an actor to start, or for a worker to (re)appear (a nanny restarting it)
LOST_AFTER = float(os.environ.get("PLACEMENT_ORACLES_WORKER_WAIT", "30"))


def live_workers(client: Any) -> list[str]:
    """The cluster's workers now (waiting up to LOST_AFTER for one, e.g. a nanny restarting a
    killed worker); WorkerLost when none appears."""
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        try:
            client.wait_for_workers(1, timeout=LOST_AFTER)
        except Exception:
            raise WorkerLost("no Dask worker left") from None
        workers = sorted(client.scheduler_info()["workers"])
    return workers


def _is_loss(e: BaseException) -> bool:
    """A lost worker or connection (rather than an error in the shard's own code)."""
    if isinstance(e, (OSError, EOFError, TimeoutError)):
        return True
    return type(e).__name__ in ("KilledWorker", "CommClosedError", "CancelledError", "FutureCancelledError")


def _why(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text[:200]


class Engine:
    """Where partitioned searches and sweeps run: ``local`` processes or a Dask cluster.

    Use as a context manager (the Dask client, and a LocalCluster when no address is given, live
    for the ``with`` block). ``workers`` is the number of shards / processes; with Dask and
    ``workers`` None, one shard per worker of the cluster.
    """

    def __init__(self, backend: str = "local", workers: int | None = None, address: str | None = None) -> None:
        if backend not in BACKENDS:
            raise EngineError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
        if address is not None and backend != "dask":
            raise EngineError("--address needs --backend dask")
        self.backend, self.address = backend, address
        self.workers = workers if workers is not None else (1 if backend == "local" else None)
        self.client: Any = None
        self.cluster: Any = None
        self.lost = ""  # why the engine can no longer run shards (every Dask worker gone), once it happened

    def __enter__(self) -> "Engine":
        if self.backend == "dask":
            try:
                from distributed import Client, LocalCluster
            except ImportError:
                raise EngineError(MISSING_DASK) from None
            if self.address is None:
                self.cluster = LocalCluster(n_workers=self.workers or os.cpu_count() or 1, threads_per_worker=1,
                                            processes=True, dashboard_address=None)
                self.client = Client(self.cluster)
            else:
                try:
                    self.client = Client(self.address, timeout=10)
                except OSError as e:
                    raise EngineError(f"--address {self.address}: cannot reach the Dask scheduler ({e})") from None
            if self.workers is None:
                self.workers = max(1, len(self.client.scheduler_info()["workers"]))
        return self

    def __exit__(self, *exc: object) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None

    @property
    def shard_count(self) -> int:
        return self.workers or 1

    @property
    def partitioned(self) -> bool:
        """Whether searches run on separate processes (not for one local worker)."""
        return self.backend == "dask" or self.shard_count > 1

    def pool(self, factory: Callable[..., Any], *args: Any) -> Pool:
        """``shard_count`` shards ``factory(index, count, *args)``, in this process when serial."""
        if self.backend == "dask":
            if self.client is None:
                raise EngineError("the Dask engine is used outside its 'with' block")
            return DaskPool(self.client, factory, self.shard_count, args)
        if self.shard_count > 1:
            return LocalPool(factory, self.shard_count, args)
        return InProcessPool(factory, 1, args)

    def starmap(self, fn: Callable[..., Any], arg_tuples: list[tuple[Any, ...]]) -> Iterator[Any]:
        """``fn(*args)`` for every tuple, results in input order, on this engine's processes."""
        if self.backend == "dask":
            futures = [self.client.submit(fn, *a, pure=False) for a in arg_tuples]
            try:
                for f in futures:
                    yield f.result()
            finally:  # an interrupt: the jobs not yet run are cancelled, not left on the cluster
                for f in futures:
                    f.cancel()
            return
        if self.shard_count <= 1:
            for a in arg_tuples:
                yield fn(*a)
            return
        from proofs_check.core.children import end_pool, pool as worker_pool

        executor = worker_pool(self.shard_count)  # workers die with this process
        try:  # not executor.map: on an interrupt it cancels the futures before the workers are ended,
            # and the pool's manager thread then fails on them (InvalidStateError, Python 3.11)
            futures = [executor.submit(fn, *a) for a in arg_tuples]
            for f in futures:
                yield f.result()
        except BaseException:  # an interrupt (or a failed job): end the workers now, never wait for them
            end_pool(executor)
            raise
        executor.shutdown(wait=True)


SERIAL = Engine()
