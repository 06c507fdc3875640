"""Worker processes end with their parent, and a pool ends at once when its run is interrupted.

* :func:`worker_init` is the initializer of every worker process (the sweeps' process pools,
  ``engine``'s forked shards): it ignores SIGINT (Ctrl-C reaches the whole process group; the
  parent decides), keeps SIGTERM's default (the parent ends its workers with it) and arranges for
  the worker to die when its parent does — ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux, a
  thread watching the parent's pid elsewhere — so a killed coordinator leaves no process behind.
* :func:`end_pool` terminates a ``ProcessPoolExecutor``'s processes now (an interrupt: waiting
  for their running tasks could take minutes) and shuts it down without waiting.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor

PR_SET_PDEATHSIG = 1
WATCH_EVERY = 0.5  # seconds between looks at the parent's pid where prctl is not available


def _parent_watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_EVERY)
    os._exit(1)


def die_with_parent(parent: int | None = None) -> None:
    """End this process when its parent ends (``parent``: the pid it was started by)."""
    parent = os.getppid() if parent is None else parent
    armed = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            armed = libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
    if not armed:
        threading.Thread(target=_parent_watch, args=(parent,), daemon=True, name="parent-watch").start()


def worker_init(parent: int | None = None) -> None:
    """A worker process's first act: SIGINT ignored, SIGTERM default, dies with its parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent(parent)


def pool(workers: int) -> ProcessPoolExecutor:
    """A process pool whose workers run :func:`worker_init` (they die with this process)."""
    return ProcessPoolExecutor(max_workers=workers, initializer=worker_init, initargs=(os.getpid(),))


def end_pool(executor: ProcessPoolExecutor) -> None:
    """Terminate the pool's worker processes now and shut it down (without waiting for tasks)."""
    procs = list((getattr(executor, "_processes", None) or {}).values())
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)
    # A worker terminated while writing a result leaves half a message in the result pipe; with
    # this process's own copy of the pipe's write end open, the manager thread would wait for the
    # rest for ever (and shutdown with it). Closed, the read ends (EOF) and the pool is broken.
    writer = getattr(getattr(executor, "_result_queue", None), "_writer", None)
    if writer is not None:
        writer.close()
    # the pool is broken now, so its manager thread ends at once; joining it here keeps it from
    # racing the interpreter's exit (a "Bad file descriptor" from concurrent.futures' atexit hook)
    executor.shutdown(wait=True)
