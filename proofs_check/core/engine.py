"""Where work runs: forked local processes or a Dask distributed cluster.

Two services, both domain-free:

* :meth:`Engine.pool` starts ``workers`` stateful *shards* — instances of any class, built in
  their own process (forked locally; Dask actors pinned one per cluster worker) — and calls a
  method on all of them at once (:meth:`Pool.call`), results in shard order. The partitioned
  breadth-first search (``proofs_check.core.search``) runs on it.
* :meth:`Engine.starmap` runs independent jobs (simulator runs) and yields results in input order.

Dask rather than Ray: a pure-Python wheel with no runtime of its own to install, a
``LocalCluster`` of real worker processes on loopback for tests, stateful actors for the shards
and plain futures for sweeps. The package must be importable on the workers (same environment);
functions travel with cloudpickle. Design and measurements: docs/scaling.md.
"""
from __future__ import annotations

import os
import traceback
from typing import Any, Callable, Iterator, Protocol, Sequence

BACKENDS = ("local", "dask")
MISSING_DASK = "--backend dask needs Dask distributed: pip install 'placement-oracles[dist]'"


class EngineError(RuntimeError):
    """The engine cannot run (missing package, unreachable cluster): a usage error, exit 2."""


class Pool(Protocol):
    """Shards started by :meth:`Engine.pool`."""

    def call(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]: ...

    def close(self) -> None: ...


class InProcessPool:
    """One shard in this process (the serial search: no process, no pickling)."""

    def __init__(self, factory: Callable[..., Any], count: int, args: tuple[Any, ...]) -> None:
        self.shards = [factory(i, count, *args) for i in range(count)]

    def call(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]:
        return [getattr(s, method)(*a) for s, a in zip(self.shards, args)]

    def close(self) -> None:
        self.shards = []


def _serve(conn: Any, factory: Callable[..., Any], index: int, count: int, args: tuple[Any, ...]) -> None:
    """A forked worker: run the shard's methods on command until told to stop."""
    shard = factory(index, count, *args)
    while True:
        msg = conn.recv()
        if msg is None:
            return
        method, margs = msg
        try:
            conn.send(("ok", getattr(shard, method)(*margs)))
        except BaseException:  # reported to the coordinator, which raises it
            conn.send(("error", traceback.format_exc()))


class LocalPool:
    """Shards in forked processes (their arguments reach them through fork, never pickled)."""

    def __init__(self, factory: Callable[..., Any], count: int, args: tuple[Any, ...]) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        for i in range(count):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(theirs, factory, i, count, args), daemon=True)
            proc.start()
            theirs.close()
            self.conns.append(mine)
            self.procs.append(proc)

    def call(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]:
        for conn, a in zip(self.conns, args):
            conn.send((method, a))
        replies = [conn.recv() for conn in self.conns]
        for status, value in replies:
            if status == "error":
                raise RuntimeError(f"shard failed in {method}:\n{value}")
        return [value for _, value in replies]

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


class DaskPool:
    """Shards as Dask actors, placed round-robin on the cluster's workers. Each shard gets the
    handles of all shards (``set_peers``) so it can deliver batches to the others directly."""

    def __init__(self, client: Any, factory: Callable[..., Any], count: int, args: tuple[Any, ...]) -> None:
        workers = sorted(client.scheduler_info()["workers"])
        self.futures = [client.submit(factory, i, count, *args, actor=True, pure=False,
                                      workers=[workers[i % len(workers)]]) for i in range(count)]
        self.actors = [f.result() for f in self.futures]
        self.call("set_peers", [(self.actors,)] * count)

    def call(self, method: str, args: Sequence[tuple[Any, ...]]) -> list[Any]:
        pending = [getattr(actor, method)(*a) for actor, a in zip(self.actors, args)]
        return [p.result() for p in pending]

    def close(self) -> None:
        self.actors = []
        for f in self.futures:
            f.cancel()


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
            for f in futures:
                yield f.result()
            return
        if self.shard_count <= 1:
            for a in arg_tuples:
                yield fn(*a)
            return
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(self.shard_count) as pool:
            yield from pool.map(fn, *zip(*arg_tuples)) if arg_tuples else ()


SERIAL = Engine()
