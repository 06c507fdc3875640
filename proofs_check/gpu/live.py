"""A reached state of a scheduler under check: the scheduler object itself (TLC's "all variables").

The explorer of ``verify --policy`` does not rebuild a scheduler from a key it declares: the state
*is* the object the user wrote, with every counter, cache and index it keeps. A state is held as
the object's pickle (:func:`snapshot`; a deep copy and its :func:`fingerprint` for an object pickle
cannot take): compact, independent of the object that made it, and
revived (:func:`revive`) as a fresh copy for every event tried from it, so expanding a state never
changes it. Two states are the same when their *keys* are equal:

* by default the key is the whole pickle, so two objects are merged only when every attribute,
  in its iteration order, is the same (as TLC treats all variables as the state); a scheduler that
  behaves differently on equal placements is never mistaken for another;
* a scheduler may declare a smaller key (a view, a view up to node and job-label symmetry:
  ``proofs_check.gpu.abstraction``); the key is then that, but the object kept and expanded is
  still the real one, never a representative rebuilt from the key.

The environment's own record, the jobs it submitted that are running (``jobs``), is part of the
state too: departures are offered for them, not for what the scheduler's placement claims.
"""
from __future__ import annotations

import copy
import functools
import pickle
import types
from enum import Enum
from typing import Any, Callable, Hashable

from heuristics.gpu.cluster import Job, Placement


def snapshot(obj: Any) -> bytes | Frozen:
    """The scheduler's whole state: its pickle (every attribute, containers in iteration order,
    shared references as shared), or, for an object pickle cannot take (a class defined inside a
    function, a lambda attribute), a private deep copy with its :func:`fingerprint`."""
    try:
        return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
    except Exception:
        return Frozen(copy.deepcopy(obj))


def revive(blob: bytes | Frozen) -> Any:
    """A fresh, independent scheduler object equal to the one ``blob`` was taken of."""
    if isinstance(blob, Frozen):
        return copy.deepcopy(blob.obj)
    return pickle.loads(blob)


class Frozen:
    """A deep copy of an object pickle cannot take, compared by its fingerprint."""

    __slots__ = ("obj", "print")

    def __init__(self, obj: Any) -> None:
        self.obj, self.print = obj, fingerprint(obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Frozen) and self.print == other.print

    def __hash__(self) -> int:
        return hash(self.print)

    def __repr__(self) -> str:
        return repr(self.print)


_ATOMS = (type(None), bool, int, float, complex, str, bytes)
_CALLABLES = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)


def fingerprint(obj: Any) -> Hashable:
    """Everything ``obj`` holds as nested tuples: atoms by value, containers in iteration order,
    objects by class and attributes, shared references as back-references (what pickle records)."""
    seen: dict[int, int] = {}

    def enc(x: Any) -> Hashable:
        if isinstance(x, _ATOMS):
            return x if type(x) in (int, str) else (type(x).__name__, repr(x))
        if isinstance(x, Enum):
            return ("enum", type(x).__qualname__, x.name)
        if isinstance(x, _CALLABLES):
            owner = getattr(x, "__self__", None)
            return ("callable", getattr(x, "__qualname__", repr(x)), None if owner is None else enc(owner))
        if id(x) in seen:
            return ("ref", seen[id(x)])
        seen[id(x)] = len(seen)
        if isinstance(x, (list, tuple)):
            return (type(x).__name__, tuple(enc(v) for v in x))
        if isinstance(x, dict):
            return (type(x).__name__, tuple((enc(k), enc(v)) for k, v in x.items()))
        if isinstance(x, (set, frozenset)):
            return (type(x).__name__, tuple(enc(v) for v in x))
        attrs = dict(getattr(x, "__dict__", {}))
        for cls in type(x).__mro__:
            for name in getattr(cls, "__slots__", ()):
                if hasattr(x, name):
                    attrs[name] = getattr(x, name)
        return ("object", type(x).__qualname__, tuple((k, enc(v)) for k, v in attrs.items()))

    return enc(obj)


class Live:
    """One explored state: the scheduler, its placement, the environment's running jobs, and the
    key states are merged by. Equality and hash are the key's; ``repr`` too (the search routes a
    state to its shard by a hash of its repr, which must agree across processes).

    The scheduler is held as its pickle (``blob``). A state whose key does not need the pickle (a
    trusted view) may be made from the object itself, which it then owns (nobody else may change
    it): it is pickled when first expanded or shipped, so the successors that turn out to be
    seen already never cost a pickle. Under a trusted rebuild it is held as its view and the
    checked rebuild (``rebuild(view)``, a fresh object each time) instead: no pickle at all
    until it is shipped to another process."""

    __slots__ = ("key", "_blob", "_obj", "placement", "jobs", "_view", "_rebuild")

    def __init__(self, key: Hashable, placement: Placement, jobs: tuple[Job, ...], blob: bytes | Frozen | None = None,
                 obj: Any = None, view: Any = None, rebuild: Callable[[Any], Any] | None = None) -> None:
        self.key, self.placement, self.jobs, self._blob, self._obj = key, placement, jobs, blob, obj
        self._view, self._rebuild = view, rebuild

    @property
    def blob(self) -> bytes | Frozen:
        if self._blob is None:
            self._blob = snapshot(self._obj if self._rebuild is None else self._rebuild(self._view))
            self._obj = None
        return self._blob

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Live) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return repr(self.key)

    def __getstate__(self) -> tuple[Hashable, bytes | Frozen, Placement, tuple[Job, ...]]:
        return self.key, self.blob, self.placement, self.jobs

    def __setstate__(self, state: tuple[Hashable, bytes | Frozen, Placement, tuple[Job, ...]]) -> None:
        self.key, self._blob, self.placement, self.jobs = state
        self._obj = self._view = self._rebuild = None

    def obj(self) -> Any:
        """A fresh copy of the scheduler in this state (changing it never changes the state)."""
        if self._rebuild is not None and self._blob is None:
            return self._rebuild(self._view)
        return revive(self.blob)

    def view(self) -> Any:
        """The scheduler's declared view (``state_key()``) in this state: the one kept with the
        state when the model keeps views (the abstraction checks), else the revived copy's."""
        return self._view if self._view is not None else self.obj().state_key()

    def running(self) -> dict[int, Job]:
        """The environment's running jobs by id."""
        return {j.id: j for j in self.jobs}


def placed(s: Any) -> Any:
    """The placement of an explored state (a :class:`Live`'s; a flat state is its own)."""
    return s.placement if isinstance(s, Live) else s
