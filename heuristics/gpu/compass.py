"""COMPASS-ABS (seeds/000 §4.3, Algorithm 1): Place, Remove and Compact over the Anchor-Based Space.

The operators follow the paper's pseudocode. Where the text leaves a choice open, ``Variant``
names the reading; ``VARIANTS["literal"]`` is the most literal one and every reading it takes is
listed below (also in docs/compass.md). Other variants change a switch of ``Variant`` and nothing
else, so a repaired COMPASS or a deliberately broken mutant is one ``dataclasses.replace`` away.

Readings chosen for ``literal`` (the ambiguities of §4.3):

1. *cap_C(n)* (Compact notation) can be read as static (cap_pool = G as Lemma A.3 states,
   cap_w4 = ⌊G/4⌋, cap_w2 = ⌊G/2⌋) or as count + room. The two readings give the same pass: they
   differ only on hosts with room 0, and a room-0 host is never a destination and is the source
   only when every host has room 0, when nothing can move. So hosts are taken as the nodes with
   at least one class-C item and room ≥ 1.
2. *room_C(n)* is what §4.3.4 says explicitly: G − |P(n)| for pool nodes, ⌊D(n)/4⌋ and ⌊D(n)/2⌋
   for the slot classes, D(n) = G − Σ w(s).
3. Compact's host list N is sorted once per class pass (descending room, ties by node index) and
   never re-sorted; a destination that fills up stays in N (its room is 0 so it is never chosen).
   Destination ties (equal room) go to the lowest node index.
4. Place, g ≥ 2: argmin of D(n) over slotted nodes with D(n) ≥ w★(g), ties to the lowest index;
   "pick any empty node" = the lowest-index empty node.
5. Place, filler draw ("draw up to r 1-GPU instances from pool nodes"): one at a time from the
   least-occupied pool node (ties: lowest index), so a draw never turns a full pool node partial
   while a partial one exists. Within a pool node, instances are taken in arrival order.
6. Place, g = 1, "∃ s with vacancy": the vacancy of the lowest node index (then slot order);
   "∃ pool node with |P| < G": the fullest such node (best fit, ties to the lowest index);
   else the lowest-index empty node becomes a pool node.
7. Remove, 1-GPU filler: the prose of §4.3.3 and Lemma A.2 say a replacement is drawn from the pool
   "to keep the slot saturated"; the pseudocode omits it. ``literal`` follows the prose (the proof
   depends on it); ``replace_departed_filler=False`` is the bare pseudocode.
8. Remove, anchor: the fillers' destinations are chosen (by the 1-GPU rule of Place, excluding the
   departing slot itself) *before* the slot is dissolved, as in pseudocode lines 4–8. If a filler
   has no legal destination then, the event is an explicit operator failure and the state is left
   unchanged. ``dissolve_first=True`` dissolves first, so the freed GPUs can take the fillers.
9. Algorithm 1 removes "the k-th instance" of a departing job; instances of a job are
   interchangeable, so k orders them by current location (node index, then position), taken
   afresh before each removal (where the instances are *then*). A filler's replacement may then
   be drawn from the departing job's own pool instances (moved, then removed);
   ``pool_first=True`` removes those first.
10. A pool node left with no instance, or a slotted node left with no slot, becomes empty.

Variant ``repaired`` (docs/repaired.md) changes four switches and nothing else: Compact runs the
pool pass and then one slot pass over all widths (``_slot_repack``) instead of the w4 and w2
passes; Remove dissolves a slot before re-seating its fillers; a job is admitted only if every
filler keeps a pool or empty-node seat to return to (``filler_reserve``); a departing job's pool
instances leave before its fillers. Its invariants, each a claim of ``verify --all --variant
repaired``: under WCC after every event at most one non-full slotted node, at most one non-full
pool node, SIF ≤ 2/N, every FUF slot saturated (thm1.*, lemA2); for any event sequence every
state is in Σ and no operator is ever without a legal move (prop1.*); an event of a job with w
instances causes at most 9·w + 13 migrations (migr).
"""
from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Iterable

from mypy_extensions import mypyc_attr

from heuristics.gpu.abs_space import (
    EMPTY,
    POOL,
    SLOTTED,
    AbsView,
    NodeView,
    SlotView,
    is_fuf,
    slot_width,
    view_placement,
)
from heuristics.gpu.cluster import G_DEFAULT, Job, Placement, check_job_shape
from heuristics.gpu.policy import EventResult, Migration, StateKey
from heuristics.gpu.ties import Chooser, pick

SLOT_CLASSES = {"w4": 4, "w2": 2}
_new = tuple.__new__
BLOCKED = "blocked"  # an empty node out of service (see ``Compass.set_blocked``)


@dataclass(frozen=True)
class Variant:
    """The switches that distinguish COMPASS readings; see the module docstring."""

    name: str
    compact_on_arrival: bool = True
    compact_on_departure: bool = True
    compact_classes: tuple[str, ...] = ("pool", "w4", "w2")
    width: Callable[[int], int] = slot_width
    slot_host: str = "best-fit"  # best-fit | first-fit | worst-fit (which slotted node gets a new slot)
    filler_source: str = "least-occupied"  # least-occupied | most-occupied | none
    unit_pool: str = "fullest"  # fullest | emptiest: which partial pool node a 1-GPU instance joins
    replace_departed_filler: bool = True
    dissolve_first: bool = False  # Remove: dissolve the slot before re-seating its fillers (reading 8)
    filler_reserve: bool = False  # admit a job only if every filler keeps a pool/empty seat to return to
    pool_first: bool = False  # a departing job's pool instances leave before its fillers (reading 9)
    doc: str = ""

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        # By its fields: the compiled build's frozen dataclass cannot be rebuilt attribute by
        # attribute (``__setstate__`` would assign to a frozen field), so pickle and deepcopy
        # of a scheduler holding a variant need this.
        return (Variant, tuple(getattr(self, f.name) for f in fields(self)))


VARIANTS: dict[str, Variant] = {
    "literal": Variant("literal", doc="the paper's pseudocode with the readings of the module docstring"),
    "repaired": Variant(
        "repaired",
        compact_classes=("pool", "slots"),
        dissolve_first=True,
        filler_reserve=True,
        pool_first=True,
        doc="one slot pass over all widths, fillers re-seated after dissolving, filler seat reserve,"
        " a departing job's pool instances removed first",
    ),
    "prop3": Variant(
        "prop3",
        compact_on_arrival=False,
        doc="Appendix A: best-fit Place, no Compact on arrival, Compact after departures",
    ),
    "bare-detach": Variant(
        "bare-detach",
        replace_departed_filler=False,
        doc="literal with the Remove pseudocode's bare detach of a departing filler (reading 7: no"
        " replacement drawn from the pool, as the pseudocode reads without the prose)",
    ),
}


class OperatorFailure(Exception):
    """An operator had no legal move; Algorithm 1 cannot produce a state for this event."""


def object_state(obj: object) -> dict[str, Any]:
    """Every attribute of ``obj``, for ``__getstate__``: the compiled build's native attributes
    (``__mypyc_attrs__``) and the instance dictionary. mypyc's own pickling reads only the
    native ones, so the attributes of a subclass written in Python (a scheduler built on
    COMPASS, with its own counters) would be lost in every pickle and deep copy, and the
    explorer, which keeps states as pickles, would check another scheduler."""
    state = {a: getattr(obj, a) for a in getattr(type(obj), "__mypyc_attrs__", ()) if a != "__dict__"
             and hasattr(obj, a)}
    state.update(getattr(obj, "__dict__", {}))
    return state


def restore_state(obj: object, state: dict[str, Any]) -> None:
    """``__setstate__`` of :func:`object_state`."""
    for name, value in state.items():
        setattr(obj, name, value)


# Under the opt-in compiled build (docs/scaling.md) these are native classes: pickling and deep
# copies (the explorer keeps live schedulers as pickles) and subclasses (the hierarchy's levels,
# a user's scheduler written in Python) need saying so.
@mypyc_attr(serializable=True)
class _Slot:
    __slots__ = ("width", "job", "g", "fillers", "node")

    def __init__(self, width: int, job: int, g: int, node: int) -> None:
        self.width, self.job, self.g, self.node = width, job, g, node
        self.fillers: list[_Unit] = []

    @property
    def vacancy(self) -> int:
        return self.width - self.g - len(self.fillers)


@mypyc_attr(serializable=True)
class _Unit:
    """A 1-GPU instance: a filler of ``slot`` or, when ``slot`` is None, an occupant of pool ``node``."""

    __slots__ = ("job", "slot", "node")

    def __init__(self, job: int, node: int, slot: _Slot | None = None) -> None:
        self.job, self.node, self.slot = job, node, slot


@mypyc_attr(allow_interpreted_subclasses=True)
class _MinIndex:
    """Node ids bucketed by an integer key 0..``n_keys`` − 1, each bucket a sorted list updated in place.

    The balanced-structure index of Proposition 2: a node's position in its bucket is found by
    bisection (O(log N)) and the insert or delete is one block move, so an update is two of
    those and a lowest-index query O(1). The keys are counts of GPUs or instances on a node, so
    the buckets are a list indexed by key, not a dict. A node whose key is None is not indexed.
    Each node's current key is an array entry (-1, never a key: not set yet), read by
    ``Compass._touch`` several times per event.
    """

    def __init__(self, n_nodes: int, n_keys: int) -> None:
        self._cur: list[int | None] = [-1] * n_nodes
        self._buckets: list[list[int]] = [[] for _ in range(n_keys)]

    def set(self, n: int, k: int | None) -> None:
        """Record ``k`` as node ``n``'s current key (``Compass._touch`` derives the keys)."""
        cur = self._cur
        old = cur[n]
        if old == k:
            return
        if k is not None and k < 0:  # a list index: a negative key would name another bucket
            raise ValueError(f"node {n}: negative index key {k}")
        cur[n] = k
        buckets = self._buckets
        if old is not None and old != -1:
            was = buckets[old]
            del was[bisect_left(was, n)]
        if k is not None:
            insort(buckets[k], n)

    def size(self, k: int) -> int:
        return len(self._buckets[k])

    def count(self, lo: int, hi: int) -> int:
        """Nodes whose key is in ``lo`` ≤ key < ``hi``."""
        total = 0
        for b in self._buckets[lo:hi]:  # a loop, not a generator: this runs on every Compact pass
            total += len(b)
        return total

    def lowest(self, k: int) -> int | None:
        b = self._buckets[k]
        return b[0] if b else None

    def members(self, k: int) -> list[int]:
        """All nodes with key ``k`` in index order (a copy: the bucket changes with the index)."""
        return list(self._buckets[k])


# What ``Compass._save`` records of a node before its first change in a trial: its kind, pool
# list, each slot with its filler list, and what ``_touch`` derived from them (vacancy, partial,
# the key in each index), so ``rollback`` puts all of it back without deriving it again.
_Saved = tuple[str, list[_Unit], list[tuple[_Slot, list[_Unit]]], int, bool, list[int | None]]


@mypyc_attr(allow_interpreted_subclasses=True)
class Compass:
    """COMPASS-ABS on ``n_nodes`` nodes of ``capacity`` GPUs; implements ``heuristics.gpu.policy.Policy``."""

    def __init__(self, n_nodes: int, capacity: int = G_DEFAULT, variant: str | Variant = "literal") -> None:
        if n_nodes < 1:
            raise ValueError(f"n_nodes={n_nodes} must be >= 1")
        self.n_nodes, self.capacity = n_nodes, capacity
        self.variant = VARIANTS[variant] if isinstance(variant, str) else variant
        self.name = f"compass-{self.variant.name}"
        self._reset()

    # ----------------------------------------------------------------- state and indexes
    def _reset(self) -> None:
        self._blank()
        for n in range(self.n_nodes):
            self._touch(n)

    def _blank(self) -> None:
        """Empty containers and indexes; ``_touch`` every node afterwards to index it."""
        N = self.n_nodes
        self.kind: list[str] = [EMPTY] * N
        self.pool: list[list[_Unit]] = [[] for _ in range(N)]
        self.slots: list[list[_Slot]] = [[] for _ in range(N)]
        self.jobs: dict[int, Job] = {}
        self.members: dict[int, list[_Slot | _Unit]] = {}
        self._counts = [0] * (self.capacity + 1)
        self._touched: set[int] | None = None  # nodes changed since ``trial()`` (None: not recording)
        self._log: dict[int, _Saved] | None = None
        self._trial_indexes: tuple[_MinIndex, ...] = ()  # ``_indexes()`` at ``trial()``, for _save and rollback
        self.ties: Chooser | None = None  # None: every tie to the lowest index (the readings above)
        self._saved: tuple[dict[int, Job], list[int], dict[int, list[_Slot | _Unit]]] = ({}, [], {})
        self._partial = 0
        self._is_partial = [False] * N
        self._vac = [0] * N
        self._vac_total = 0
        # Keyed by: 0 for an empty node; D(n) for a slotted one; |P(n)| for a pool node; 0 for a
        # slotted node with a vacancy (``_touch`` sets every key).
        K = self.capacity + 1
        self._empty, self._by_room, self._by_fill, self._vacant = (_MinIndex(N, K), _MinIndex(N, K), _MinIndex(N, K),
                                                                    _MinIndex(N, K))

    def _unprofiled(self, n: int) -> int:
        """D(n) = G − Σ_{s∈S(n)} w(s)."""
        return self.capacity - sum(s.width for s in self.slots[n])

    def _touch(self, n: int) -> None:
        """Re-derive node ``n``'s type and re-index it after any change to its contents.

        One pass over the node derives its vacancy, its used GPUs and its four index keys (the hot
        path of every operator and of ``with_state``)."""
        touched = self._touched
        if touched is not None:
            touched.add(n)
        kind = self.kind[n]
        pool, slots = self.pool[n], self.slots[n]
        if kind == POOL and not pool or kind == SLOTTED and not slots:
            kind = self.kind[n] = EMPTY
        vac = profiled = used = 0
        for s in slots:
            f = len(s.fillers)
            vac += s.width - s.g - f
            profiled += s.width
            used += s.g + f
        old_vac = self._vac[n]
        if vac != old_vac:
            self._vac_total += vac - old_vac
            self._vac[n] = vac
        if kind == POOL:
            used = len(pool)
        partial = 0 < used < self.capacity
        if partial != self._is_partial[n]:
            self._is_partial[n] = partial
            self._partial += 1 if partial else -1
        # -1 is never a key: an unindexed node always gets set. Written out per index: this
        # runs several times per event.
        if kind == EMPTY:
            e = 0
            r = f_ = v = None
        else:
            e = None
            r = self.capacity - profiled if kind == SLOTTED else None
            f_ = len(pool) if kind == POOL else None
            v = 0 if kind == SLOTTED and vac else None
        if self._empty._cur[n] != e:
            self._empty.set(n, e)
        if self._by_room._cur[n] != r:
            self._by_room.set(n, r)
        if self._by_fill._cur[n] != f_:
            self._by_fill.set(n, f_)
        if self._vacant._cur[n] != v:
            self._vacant.set(n, v)

    # ----------------------------------------------------------------- Policy interface
    def running(self) -> dict[int, Job]:
        return dict(self.jobs)

    def partial_count(self) -> int:
        """Φπ, maintained incrementally."""
        return self._partial

    def empty_count(self) -> int:
        """Fully empty nodes, maintained incrementally."""
        return self._empty.size(0)

    def instance_counts(self) -> tuple[int, ...]:
        """n_1..n_G of the running instances, maintained incrementally."""
        return tuple(self._counts[1:])

    def abs_view(self) -> AbsView:
        return AbsView(self.capacity, tuple(self._node_view(n) for n in range(self.n_nodes)))

    def _node_view(self, n: int) -> NodeView:
        # Built by tuple.__new__, not the NamedTuples' own __new__ (a Python-level function): the
        # same values, a third of the cost, and this runs for every node an event touches.
        slots = tuple([_new(SlotView, (s.width, s.job, s.g, tuple([f.job for f in s.fillers]))) for s in self.slots[n]])
        return _new(NodeView, (self.kind[n], tuple([u.job for u in self.pool[n]]), slots))

    # ----------------------------------------------------------------- apply and undo (the explorer)
    # The explorer applies every event of a state to ONE scheduler built from that state
    # (``with_state(view)``) and undoes it, instead of rebuilding the scheduler per event.
    # ``trial()`` starts a change log: before an operator first changes a node's contents it
    # records the node's kind, its pool list and each slot with its filler list (``_save``), and
    # every change is followed by ``_touch`` of that node. ``view_after(view)`` reads the new
    # state rebuilding only the touched nodes' views; ``rollback()`` puts the recorded lists and
    # every recorded object's place back (objects an arrival made are dropped) and what ``_touch``
    # had derived for those nodes (vacancy, partial, index keys): it restores, it does not derive
    # again. Afterwards the scheduler is the one it was: the same objects in the same
    # containers, jobs, counts and index keys (``tests/test_compass.py`` checks it against a
    # rebuild after random events).
    def trial(self) -> None:
        """Start an event that ``rollback`` will undo (a refused or failed event changes nothing)."""
        self._touched = set()
        self._log = {}
        self._trial_indexes = self._indexes()
        # An event only adds a job's list (arrival) or deletes one (departure), never changes a
        # list in place: a shallow copy restores the keys, their order and the untouched lists.
        self._saved = (dict(self.jobs), list(self._counts), dict(self.members))

    def _save(self, n: int) -> None:
        """Record node ``n``'s contents before its first change in a trial (see above)."""
        log = self._log
        if log is None or n in log:
            return
        log[n] = (self.kind[n], list(self.pool[n]), [(s, list(s.fillers)) for s in self.slots[n]], self._vac[n],
                  self._is_partial[n], [ix._cur[n] for ix in self._trial_indexes])

    def _indexes(self) -> tuple[_MinIndex, ...]:
        """Every index over nodes that ``_touch`` keeps (what ``rollback`` restores)."""
        return self._empty, self._by_room, self._by_fill, self._vacant

    def view_after(self, view: AbsView) -> AbsView:
        """``abs_view()`` during a trial started from ``view`` (this scheduler's ``with_state(view)``,
        where ``view`` equals what ``abs_view()`` then returned)."""
        touched = self._touched
        if touched is None:
            return self.abs_view()
        nodes = list(view.nodes)
        for n in touched:
            nodes[n] = self._node_view(n)
        return AbsView(self.capacity, tuple(nodes))

    def rollback(self) -> None:
        """Undo everything since ``trial()``: back to the state the trial started from."""
        touched, self._touched = self._touched, None
        log, self._log = self._log, None
        if touched is None or log is None:
            raise RuntimeError("rollback without trial")
        self.jobs, self._counts, self.members = self._saved
        indexes, self._trial_indexes = self._trial_indexes, ()
        for n, (kind, pool, slots, vac, partial, keys) in log.items():
            self.kind[n] = kind
            self.pool[n] = pool
            for u in pool:
                u.node, u.slot = n, None
            self.slots[n] = [sl for sl, _ in slots]
            for sl, fillers in slots:
                sl.node, sl.fillers = n, fillers
                for f in fillers:
                    f.node, f.slot = n, sl
            # what _touch derived before the change, put back (a touched node that was never
            # saved was not changed, so its derived values are still right)
            self._vac_total += vac - self._vac[n]
            self._vac[n] = vac
            if partial != self._is_partial[n]:
                self._is_partial[n] = partial
                self._partial += 1 if partial else -1
            for ix, k in zip(indexes, keys):
                if ix._cur[n] != k:
                    ix.set(n, k)

    def state_key(self) -> AbsView:
        return self.abs_view()

    def placement(self) -> Placement:
        return view_placement(self.abs_view())

    def clone(self) -> "Compass":
        return self.with_state(self.abs_view())

    def with_state(self, view: StateKey) -> Compass:
        """A Compass of the same variant and class whose state is ``view`` (node order and job ids
        as given)."""
        if not isinstance(view, AbsView):
            raise TypeError(f"{self.name} state keys are AbsViews, got {type(view).__name__}")
        if not view.nodes:
            raise ValueError(f"n_nodes={len(view.nodes)} must be >= 1")
        cls = type(self)
        c = cls.__new__(cls)
        c._settings_of(self, len(view.nodes), view.capacity)
        c._blank()
        shapes: dict[int, list[int]] = {}
        members = c.members
        for n, nd in enumerate(view.nodes):
            c.kind[n] = nd.kind
            if nd.pool:
                pool = c.pool[n]
                for j in nd.pool:
                    u = _Unit(j, n)
                    pool.append(u)
                    if j in members:
                        members[j].append(u)
                        shapes[j][1] += 1
                    else:
                        members[j] = [u]
                        shapes[j] = [1, 1]
            if nd.slots:
                slots = c.slots[n]
                for sv in nd.slots:
                    a = sv.anchor_job
                    s = _Slot(sv.width, a, sv.anchor_g, n)
                    slots.append(s)
                    if a in members:
                        members[a].append(s)
                        shapes[a][1] += 1
                    else:
                        members[a] = [s]
                        shapes[a] = [sv.anchor_g, 1]
                    for j in sv.fillers:
                        u = _Unit(j, n, s)
                        s.fillers.append(u)
                        if j in members:
                            members[j].append(u)
                            shapes[j][1] += 1
                        else:
                            members[j] = [u]
                            shapes[j] = [1, 1]
            c._touch(n)
        for j, (g, w) in shapes.items():
            c.jobs[j] = Job(j, g, w)
            c._counts[g] += w
        return c

    def __getstate__(self) -> dict[str, Any]:
        return object_state(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        restore_state(self, state)

    def _settings_of(self, other: Compass, n_nodes: int, capacity: int) -> None:
        """What a rebuild keeps of ``other``: everything but the state."""
        self.n_nodes, self.capacity, self.variant, self.name = n_nodes, capacity, other.variant, other.name

    def _add_member(self, job: int, m: _Slot | _Unit) -> None:
        self.members.setdefault(job, []).append(m)

    # ----------------------------------------------------------------- Algorithm 1
    def arrive(self, job: Job) -> EventResult:
        """Algorithm 1 lines 3–9: Place every instance, then Compact; all-or-nothing."""
        check_job_shape(job.g, job.w, self.capacity)
        if job.id in self.jobs:
            raise ValueError(f"job {job.id} is already running")
        room = self._admissible(job)
        if room < job.w:
            return EventResult.refused(f"does not fit: room for {room} of {job.w} instances of g={job.g}")
        if self.variant.filler_reserve and not self._keeps_reserve(job):
            return EventResult.refused("does not fit: a filler would lose its seat to return to")
        if self._choosing_in_trial():
            return self._failure_or(lambda: self._arrive(job))
        return EventResult.applied(tuple(self._arrive(job)))

    def _choosing_in_trial(self) -> bool:
        """Ties are being chosen inside a ``trial``: an operator failure under some choice is
        reported as that event's outcome (``rollback`` restores the state it leaves behind)."""
        return self.ties is not None and self._touched is not None

    @staticmethod
    def _failure_or(event: Callable[[], list[Migration]]) -> EventResult:
        try:
            return EventResult.applied(tuple(event()))
        except OperatorFailure as e:
            return EventResult.failure(f"operator failure: {e}")

    def _arrive(self, job: Job) -> list[Migration]:
        moves: list[Migration] = []
        self.jobs[job.id] = job
        self._counts[job.g] += job.w
        for _ in range(job.w):
            moves += self._place(job.id, job.g)
        if self.variant.compact_on_arrival:
            moves += self._compact()
        return moves

    def _seats_minus_fillers(self) -> int:
        """Pool and empty-node seats minus fillers: ≥ 0 means every filler could go back."""
        pool_units = sum(c * self._by_fill.size(c) for c in range(1, self.capacity + 1))
        fillers = self._counts[1] - pool_units
        return self._unit_room() - self._vac_total - fillers

    def _keeps_reserve(self, job: Job) -> bool:
        """Repaired admission rule: after the arrival, every filler still has a seat outside the
        slots (so a departing anchor's fillers always find one). Checked on a copy unless the
        job cannot consume more seats than the slack."""
        worst = job.w if job.g == 1 else self.capacity * job.w
        if self._seats_minus_fillers() >= worst:
            return True
        trial = self.clone()
        trial._arrive(job)
        return trial._seats_minus_fillers() >= 0

    def depart(self, job_id: int) -> EventResult:
        """Algorithm 1 lines 10–16: Remove every instance, then Compact.

        An operator failure leaves the state unchanged; its outcome is ``Outcome.FAILED``, with
        the operator's message in ``reason``.
        """
        if job_id not in self.jobs:
            raise ValueError(f"job {job_id} is not running")
        if self._choosing_in_trial():
            return self._failure_or(lambda: self._depart(job_id))
        if self._may_strand_fillers(job_id):
            # A filler might find no destination: try on a copy so a failure changes nothing.
            try:
                self.clone()._depart(job_id)
            except OperatorFailure as e:
                return EventResult.failure(f"operator failure: {e}")
        return EventResult.applied(tuple(self._depart(job_id)))

    def _depart(self, job_id: int) -> list[Migration]:
        job = self.jobs.pop(job_id)
        self._counts[job.g] -= job.w
        moves: list[Migration] = []
        for m in self._removals(job_id):
            moves += self._remove(m)
        del self.members[job_id]
        if self.variant.compact_on_departure:
            moves += self._compact()
        return moves

    def _removals(self, job_id: int) -> Iterable[_Slot | _Unit]:
        """The departing job's instances in removal order (reading 9; with ties, any order:
        each next instance is a choice among the first-ranked remaining ones, one per place).

        The order is taken afresh before each removal, from where the instances are then: a
        removed filler's replacement may be one of the job's own pool units (filler-replace), and
        which of its interchangeable units moved must not decide what follows. Ranked once up
        front, it did: the live scheduler and one rebuilt from its state (lists in another
        order) made different numbers of migrations on the same state."""
        left = list(self.members[job_id])
        while left:
            if len(left) > 1:
                left.sort(key=self._removal_order)
            if self.ties is None:
                m = left[0]
            else:
                first = self._removal_order(left[0])[0]
                places = {self._place_of(m): m for m in reversed(left) if self._removal_order(m)[0] == first}
                m = pick(self.ties, "Remove: which instance next", sorted(places.values(), key=self._removal_order))
            left.remove(m)
            yield m

    @staticmethod
    def _place_of(m: _Slot | _Unit) -> tuple[int, int]:
        """Instances in one place are interchangeable: a pool node, or one slot (anchor or filler)."""
        if isinstance(m, _Slot):
            return (m.node, id(m))
        return (m.node, -1 if m.slot is None else id(m.slot))

    def _removal_order(self, m: _Slot | _Unit) -> tuple[bool, int, int]:
        # With pool_first, a departing job's pool instances leave before its fillers, so a
        # filler's replacement is never drawn from the departing job itself.
        in_pool = isinstance(m, _Unit) and m.slot is None
        return (self.variant.pool_first and not in_pool, *self._location(m))

    def _location(self, m: _Slot | _Unit) -> tuple[int, int]:
        if isinstance(m, _Slot):
            return (m.node, self.slots[m.node].index(m))
        if m.slot is not None:
            return (m.node, self.slots[m.node].index(m.slot))
        return (m.node, -1)

    # ----------------------------------------------------------------- admission
    def _admissible(self, job: Job) -> int:
        """How many instances of ``job.g`` Place can install in sequence from this state.

        Exact: a g ≥ 2 instance consumes w★(g) unprofiled GPUs of one node, a 1-GPU instance one
        vacancy / pool seat / empty-node seat, and fillers drawn from the pool free no seat a
        later instance of the same job could use.
        """
        if job.g == 1:
            return self._unit_room()
        w = self.variant.width(job.g)
        rooms = sum((d // w) * self._by_room.size(d) for d in range(w, self.capacity))
        return rooms + self._empty.size(0) * (self.capacity // w)

    def _unit_room(self) -> int:
        """Seats a 1-GPU instance could take: slot vacancies, pool room, empty nodes."""
        pool = sum((self.capacity - c) * self._by_fill.size(c) for c in range(1, self.capacity))
        return self._vac_total + pool + self.capacity * self._empty.size(0)

    def compact(self) -> tuple[Migration, ...]:
        """Compact alone (Appendix D.4 runs one level's Compact after the other level's event)."""
        return tuple(self._compact())

    def set_blocked(self, n: int, blocked: bool) -> None:
        """Take an empty node out of service (``BLOCKED``: no operator sees it) or put it back.

        Used by the hierarchical scheduler, where a node held by the other level is unusable.
        """
        if self.kind[n] not in (EMPTY, BLOCKED):
            raise ValueError(f"node {n} is {self.kind[n]}, only an empty node can be blocked")
        self._save(n)
        self.kind[n] = BLOCKED if blocked else EMPTY
        self._touch(n)

    def _may_strand_fillers(self, job_id: int) -> bool:
        """False when the departing job's fillers surely find seats outside its own slots."""
        own = [m for m in self.members[job_id] if isinstance(m, _Slot)]
        fillers = sum(len(s.fillers) for s in own)
        return fillers > 0 and fillers > self._unit_room() - sum(s.vacancy for s in own)

    # ----------------------------------------------------------------- Place (§4.3.2)
    def _place(self, job: int, g: int) -> list[Migration]:
        if g == 1:
            u = _Unit(job, -1)
            self._add_member(job, u)
            self._install_unit(u, self._unit_destination(exclude=None))
            return []
        w = self.variant.width(g)
        n = self._slot_host(w)
        if n is None:
            n = self._empty.lowest(0)
            if n is None:
                raise OperatorFailure(f"no slotted node with {w} unprofiled GPUs and no empty node")
            self._save(n)
            self.kind[n] = SLOTTED
        else:
            self._save(n)
        s = _Slot(w, job, g, n)
        self.slots[n].append(s)
        self._add_member(job, s)
        self._touch(n)
        return self._draw_fillers(s, w - g, "filler-draw")

    def _slot_host(self, w: int) -> int | None:
        """Line 4–5: the slotted node with D(n) ≥ w chosen by ``Variant.slot_host``."""
        rooms = range(w, self.capacity)
        rule = self.variant.slot_host
        if rule == "best-fit":
            for d in rooms:
                if self.ties is not None and self._by_room.size(d):
                    return pick(self.ties, "slot host: argmin D(n)", self._by_room.members(d))
                n = self._by_room.lowest(d)
                if n is not None:
                    return n
            return None
        cands = [n for d in rooms for n in self._by_room.members(d)]
        if not cands:
            return None
        if rule == "first-fit":
            return min(cands)
        if rule == "worst-fit":
            most = max(self._unprofiled(n) for n in cands)
            return pick(self.ties, "slot host: argmax D(n)", sorted(n for n in cands if self._unprofiled(n) == most))
        raise ValueError(f"unknown slot_host rule {rule!r}")

    def _draw_fillers(self, s: _Slot, r: int, kind: str) -> list[Migration]:
        """Line 9: move up to ``r`` pool instances into slot ``s`` (fewer if the pool runs dry)."""
        moves = []
        dst = s.node
        for _ in range(r):
            src = self._filler_source()
            if src is None:
                break
            self._save(src)
            pool = self.pool[src]
            u = pool.pop(0) if self.ties is None else self._pick_unit(pool, "filler draw: which pool instance")
            self._touch(src)
            moves.append(Migration(u.job, 1, src, dst, kind))
            # the slot's node is re-indexed once, after the draws: choosing a source reads only
            # the pool fill index, and a filler does not change its node's fill key
            self._seat(u, s)
        if moves:
            self._touch(dst)
        return moves

    def _filler_source(self) -> int | None:
        rule = self.variant.filler_source
        if rule == "none":
            return None
        fills: Iterable[int] = range(1, self.capacity + 1)
        if rule == "most-occupied":
            fills = range(self.capacity, 0, -1)
        elif rule != "least-occupied":
            raise ValueError(f"unknown filler_source rule {rule!r}")
        return self._lowest_fill(fills, "filler draw: which least-occupied pool node")

    def _lowest_fill(self, fills: Iterable[int], point: str) -> int | None:
        """A pool node of the first occupancy in ``fills`` that has one (ties: a choice)."""
        if self.ties is None:
            buckets = self._by_fill._buckets
            for c in fills:
                b = buckets[c]
                if b:
                    return b[0]
            return None
        for c in fills:
            if self._by_fill.size(c):
                return pick(self.ties, point, self._by_fill.members(c))
        return None

    def _pick_unit(self, units: list[_Unit], point: str) -> _Unit:
        """Remove and return one of ``units`` (a set in the paper: one option per job)."""
        firsts = list({u.job: u for u in reversed(units)}.values())[::-1]
        u = pick(self.ties, point, firsts)
        units.remove(u)
        return u

    def _unit_destination(self, exclude: _Slot | None) -> _Slot | int:
        """Lines 11–13: a slot vacancy, else a partial pool node, else a fresh pool node."""
        if self.ties is not None:
            seats = [s for n in self._vacant.members(0) for s in self.slots[n] if s is not exclude and s.vacancy > 0]
            if seats:
                return pick(self.ties, "1-GPU seat: which slot vacancy", seats)
        else:
            first = self._vacant.lowest(0)
            for n in [first] if exclude is None else self._vacant.members(0):
                for s in self.slots[n] if n is not None else ():
                    if s is not exclude and s.vacancy > 0:
                        return s
        fills = range(self.capacity - 1, 0, -1) if self.variant.unit_pool == "fullest" else range(1, self.capacity)
        n = self._lowest_fill(fills, "1-GPU seat: which pool node")
        if n is not None:
            return n
        n = self._empty.lowest(0)  # empty nodes are interchangeable: never a choice that matters
        if n is None:
            raise OperatorFailure("a 1-GPU instance has no slot vacancy, pool seat or empty node")
        return n

    def _install_unit(self, u: _Unit, dest: _Slot | int) -> None:
        if isinstance(dest, _Slot):
            self._attach(u, dest)
        else:
            self._to_pool(u, dest)

    def _attach(self, u: _Unit, s: _Slot) -> None:
        self._seat(u, s)
        self._touch(s.node)

    def _seat(self, u: _Unit, s: _Slot) -> None:
        """``u`` becomes a filler of ``s``; the node is left for the caller to re-index."""
        self._save(s.node)
        u.slot, u.node = s, s.node
        s.fillers.append(u)

    def _to_pool(self, u: _Unit, n: int) -> None:
        self._save(n)
        self.kind[n] = POOL
        u.slot, u.node = None, n
        self.pool[n].append(u)
        self._touch(n)

    def _detach(self, u: _Unit) -> None:
        self._save(u.node)
        if u.slot is not None:
            u.slot.fillers.remove(u)
        else:
            self.pool[u.node].remove(u)
        self._touch(u.node)

    # ----------------------------------------------------------------- Remove (§4.3.3)
    def _remove(self, m: _Slot | _Unit) -> list[Migration]:
        if isinstance(m, _Unit):
            slot = m.slot
            self._detach(m)
            if slot is not None and self.variant.replace_departed_filler:
                return self._draw_fillers(slot, 1, "filler-replace")
            return []
        s = m
        if self.variant.dissolve_first:
            return self._dissolve_then_reseat(s)
        dests = []
        for i, f in enumerate(s.fillers):
            d = self._unit_destination(exclude=s)
            dests.append(d)
            if i + 1 < len(s.fillers):  # the seat is held for the fillers still to choose
                self._claim(d)
        self._unclaim(dests[:-1])
        moves = []
        for f, d in zip(list(s.fillers), dests):
            self._detach(f)
            self._install_unit(f, d)
            moves.append(Migration(f.job, 1, s.node, f.node, "filler-return"))
        self._save(s.node)
        self.slots[s.node].remove(s)
        self._touch(s.node)
        return moves

    def _dissolve_then_reseat(self, s: _Slot) -> list[Migration]:
        src, fillers = s.node, list(s.fillers)
        for f in fillers:
            self._detach(f)
        self._save(src)
        self.slots[src].remove(s)
        self._touch(src)
        moves = []
        for f in fillers:
            self._install_unit(f, self._unit_destination(exclude=None))
            if f.node != src:  # re-seated on the freed GPUs of its own node: nothing moved
                moves.append(Migration(f.job, 1, src, f.node, "filler-return"))
        return moves

    # Pseudocode lines 4–7 choose every filler's destination before line 8 dissolves the slot;
    # a seat chosen for one filler must not be offered to the next, so seats are held meanwhile.
    def _claim(self, d: _Slot | int) -> None:
        placeholder = _Unit(-1, -1)
        if isinstance(d, _Slot):
            self._attach(placeholder, d)
        else:
            self._to_pool(placeholder, d)

    def _unclaim(self, dests: list[_Slot | int]) -> None:
        for d in dests:
            holder = d.fillers if isinstance(d, _Slot) else self.pool[d]
            ph = next(u for u in holder if u.job == -1)
            self._detach(ph)

    # ----------------------------------------------------------------- Compact (§4.3.4)
    def _compact(self) -> list[Migration]:
        if not self._may_compact():
            return []
        moves: list[Migration] = []
        for cls in self.variant.compact_classes:
            moves += self._slot_repack() if cls == "slots" else self._best_fit_drain(cls)
        return moves

    def _may_compact(self) -> bool:
        """False when no class can have two hosts, so Compact would move nothing. A host holds a
        class item (≥ 1 GPU used) and has room ≥ 1 (not all G used): it is a partial node, and
        with fewer than two partial nodes there is no host pair. Compact runs after every event,
        and most events leave fewer than two partial nodes."""
        return self._partial >= 2

    def _class_items(self, cls: str, n: int) -> list[_Slot | _Unit]:
        if cls == "pool":
            return list(self.pool[n]) if self.kind[n] == POOL else []
        return [s for s in self.slots[n] if s.width == SLOT_CLASSES[cls]]

    def _room(self, cls: str, n: int) -> int:
        if cls == "pool":
            return self.capacity - len(self.pool[n])
        return self._unprofiled(n) // SLOT_CLASSES[cls]

    def _hosts(self, cls: str) -> list[int]:
        """Line 3's N (reading 1): nodes holding a class-C item with room ≥ 1, in index order."""
        index, keys = self._host_keys(cls)
        cands = [n for k in keys for n in index.members(k)]
        if cls == "pool":  # a node indexed by fill c ≥ 1 is a pool node with c instances
            return sorted(cands)
        return sorted(n for n in cands if self._class_items(cls, n))

    def _host_keys(self, cls: str) -> tuple[_MinIndex, range]:
        """The index and keys whose nodes include every host of class ``cls`` (``_hosts``)."""
        if cls == "pool":
            return self._by_fill, range(1, self.capacity)
        if cls in SLOT_CLASSES:
            return self._by_room, range(SLOT_CLASSES[cls], self.capacity)
        raise ValueError(f"unknown Compact class {cls!r}")

    def _best_fit_drain(self, cls: str) -> list[Migration]:
        """BestFitDrain for one class, pseudocode of Compact lines 3–15."""
        index, keys = self._host_keys(cls)
        if index.count(keys.start, keys.stop) < 2:  # fewer than two candidates: no host pair
            return []
        hosts = self._hosts(cls)
        if len(hosts) < 2:
            return []
        hosts = self._by_room_desc(cls, hosts)
        moves: list[Migration] = []
        while len(hosts) >= 2:
            src, progress = hosts[0], False
            for x in self._drain_items(cls, src):
                dsts = [n for n in hosts if n != src and self._room(cls, n) >= 1]
                if not dsts:
                    break
                if self.ties is None:
                    dst = min(dsts, key=lambda n: (self._room(cls, n), n))
                else:
                    least = min(self._room(cls, n) for n in dsts)
                    dst = pick(self.ties, f"Compact {cls}: argmin room destination",
                               sorted(n for n in dsts if self._room(cls, n) == least))
                moves += self._migrate(cls, x, src, dst)
                progress = True
            if not self._class_items(cls, src):
                hosts.remove(src)
            if not progress:
                break
        return moves

    def _by_room_desc(self, cls: str, hosts: list[int]) -> list[int]:
        """Compact's host list sorted once by descending room (equal rooms: a choice of order)."""
        hosts.sort(key=lambda n: -self._room(cls, n))
        if self.ties is None:
            return hosts
        out: list[int] = []
        while hosts:
            top = self._room(cls, hosts[0])
            n = pick(self.ties, f"Compact {cls}: host order among equal rooms",
                     sorted(n for n in hosts if self._room(cls, n) == top))
            hosts.remove(n)
            out.append(n)
        return out

    def _drain_items(self, cls: str, src: int) -> Iterable[_Slot | _Unit]:
        """The source's class items in the order they move (C(src) is a set: with ties, each
        next item is a choice, one option per job for pool instances)."""
        items = self._class_items(cls, src)
        if self.ties is None:
            yield from items
            return
        while items:
            if cls == "pool":
                units = [x for x in items if isinstance(x, _Unit)]
                x: _Slot | _Unit = self._pick_unit(units, f"Compact {cls}: which item next")
                items.remove(x)
            else:
                x = pick(self.ties, f"Compact {cls}: which item next", items)
                items.remove(x)
            yield x

    def _slot_repack(self) -> list[Migration]:
        """Repaired slot pass: all slot widths in one class, so at most one slotted node keeps
        unprofiled space.

        While two slotted nodes have D > 0, take the sparsest A (largest D) and the densest B
        (smallest D) and move A's slots, largest first, into B while they fit; if that neither
        fills B nor empties A, move B's slots into A instead. With widths in {2, 4} on partial
        nodes one of the two always succeeds (A fits wholly into B unless D(B) = 2; then A holds
        a 2, or A = {4} and B ∈ {{4,2}, {2,2,2}} fills A), so each round removes a partial
        node with at most two slot moves.
        """
        moves: list[Migration] = []
        while True:
            partial = [n for d in range(2, self.capacity) for n in self._by_room.members(d)]
            if len(partial) < 2:
                return moves
            a = min(partial, key=lambda n: (-self._unprofiled(n), n))
            b = min((n for n in partial if n != a), key=lambda n: (self._unprofiled(n), n))
            before = len(moves)
            moves += self._pour(a, b)
            if self._unprofiled(b) > 0 and self.slots[a]:
                moves += self._pour(b, a)
            if len(moves) == before:
                raise AssertionError(f"slot repack stalled on nodes {a} and {b}")

    def _pour(self, src: int, dst: int) -> list[Migration]:
        moves: list[Migration] = []
        for x in sorted(self.slots[src], key=lambda s: -s.width):
            if x.width < self.capacity and x.width <= self._unprofiled(dst):
                moves += self._migrate(f"w{x.width}", x, src, dst)
        return moves

    def _migrate(self, cls: str, x: _Slot | _Unit, src: int, dst: int) -> list[Migration]:
        kind = f"compact-{cls}"
        if isinstance(x, _Unit):
            self._detach(x)
            self._to_pool(x, dst)
            return [Migration(x.job, 1, src, dst, kind)]
        self._save(src)
        self._save(dst)
        self.slots[src].remove(x)
        self.slots[dst].append(x)
        x.node = dst
        for f in x.fillers:
            f.node = dst
        self._touch(src)
        self._touch(dst)
        return [Migration(x.job, x.g, src, dst, kind)] + [
            Migration(f.job, 1, src, dst, kind) for f in x.fillers
        ]


def make_variant(base: str, name: str, **changes: Any) -> Variant:
    """A new named variant: ``base`` with some switches changed (used for repairs and mutants)."""
    return replace(VARIANTS[base], name=name, **changes)


def is_fuf_slot(s: SlotView) -> bool:
    return is_fuf(s.anchor_g)
