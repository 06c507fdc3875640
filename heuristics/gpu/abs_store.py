"""The Anchor-Based Space of COMPASS (seeds/000 §4.3.1, Definitions 1–5) as data: node kinds, pools,
slots and their fillers, the indexes over nodes that the operators query (Proposition 2), and the
explorer's apply and undo. The operators of Algorithm 1 (Place, Remove, Compact) are
``heuristics.gpu.compass.Compass``, a subclass; nothing here decides where an instance goes.

A node is ``EMPTY``, ``POOL`` (its pool P(n) of 1-GPU instances) or ``SLOTTED`` (its slots S(n), each
an anchor instance of width w(s) with its fillers F(s)); ``BLOCKED`` is an empty node out of
service (the hierarchy's other level holds it). After any change to a node's contents the
operators call ``_touch``, which re-derives the node's kind, vacancy, used GPUs and index keys.

What distinguishes the hierarchy's panel level (seeds/000 Appendix D.3–D.5) from this flat ABS is
data, a ``Level`` passed to the store, not code overriding it: with ``shared_nodes`` a node's
units may be held by the other level (H1) and its free units are a pool region beside its slots
(H4); see ``Level``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Final, Iterable, Self

from mypy_extensions import mypyc_attr

from heuristics.gpu.abs_space import EMPTY, POOL, SLOTTED, AbsView, NodeView, SlotView, view_placement
from heuristics.gpu.cluster import Job, Placement
from heuristics.gpu.policy import StateKey

# Final: in the compiled build a Final module name is a C static, a plain one a dict look-up per
# use (these build the node views of every touched node, several per event)
_new: Final = tuple.__new__
_SLOT_VIEW: Final = SlotView
_NODE_VIEW: Final = NodeView
_ABS_VIEW: Final = AbsView
_JOB: Final = Job
BLOCKED: Final = "blocked"  # an empty node out of service (see ``AbsStore.set_blocked``), or one whose units
# the other level holds (``Level.shared_nodes``)


@dataclass(frozen=True)
class Level:
    """How one level of COMPASS sees its nodes.

    ``shared_nodes=False`` is the flat ABS of §4.2: a node is empty, a pool node or a slotted
    node, and D(n) = G − Σ_{s∈S(n)} w(s). ``shared_nodes=True`` is the panel level of Appendix D
    (docs/hierarchical.md, readings H1 and H4): a node (a domain) may have units held by the
    other level (``AbsStore.set_held``; such a node with nothing of this level is ``BLOCKED``),
    and its free units F(n) = G − held(n) − |P(n)| − Σ w(s) are a pool region beside its slots.
    Then D(n) = F(n); the fill index holds G − F(n) of every non-empty node, so Place's "partial
    pool node, fullest first" offers a slotted node's residual units; a new slot may open in a
    pool or held-only node's free units (best fit, after the slotted nodes; an index of those
    nodes' F(n)); fillers are drawn and the pool class compacted from real pool units only;
    Compact always runs (a host need not be a partial node); and the repaired slot pass stops
    when a round moves nothing (widths no longer tile F(n)). ``filler_draw`` names the tie point
    of the filler draw's source (``heuristics.gpu.ties``).

    ``panels_per_domain`` = k > 0 is the GPU level of Appendix D (reading H7): its nodes are the
    panels of domains of k panels (domain d: panels dk … dk + k − 1), and empty panels of
    different domains are not interchangeable, so under a chooser "pick any empty node" is a
    choice among domains (``Compass.empty_options``); 0: every empty node is interchangeable.
    """

    name: str
    shared_nodes: bool
    filler_draw: str
    panels_per_domain: int = 0

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        return by_fields(self)


def by_fields(obj: Any) -> tuple[type, tuple[Any, ...]]:
    """``__reduce__`` of a frozen dataclass: the compiled build's cannot be rebuilt attribute by
    attribute (``__setstate__`` would assign to a frozen field), so pickle and deepcopy of a
    scheduler holding one (a ``Level``, a ``compass.Variant``) rebuild it from its fields."""
    return (type(obj), tuple(getattr(obj, f.name) for f in fields(obj)))


FLAT: Final = Level("flat", False, "filler draw: which least-occupied pool node")
PANEL_NODES: Final = Level("panel", True, "panel filler draw: which least-occupied domain")

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


OFF: Final = -1  # the key of a node that an index does not hold (``_MinIndex.set``)


@mypyc_attr(allow_interpreted_subclasses=True)
class _MinIndex:
    """Node ids bucketed by an integer key 0..``n_keys`` − 1, each bucket a sorted list updated in place.

    The index of Proposition 2 over counts of GPUs or instances on a node (so the buckets are a
    list indexed by key, not a dict): an update removes the node from one bucket and inserts it
    into another, keeping each sorted, so a lowest-index query is O(1). A node whose key is
    ``OFF`` is not indexed. Each node's current key is an integer array entry (``OFF``, not
    indexed, until its first ``set``), read by ``AbsStore._touch`` several times per event. Plain
    integers and list methods, not ``bisect``: a bucket's block move is O(N) either way, and the
    compiled build runs them natively (a call into ``bisect`` from compiled code cost more than
    the update).
    """

    def __init__(self, n_nodes: int, n_keys: int) -> None:
        self._cur: list[int] = [OFF] * n_nodes
        # one empty list shared by every key at first, never written to: ``set`` puts a node into
        # an empty bucket as a new list (a store is rebuilt per expanded state, and most of an
        # index's G + 1 buckets stay empty; pickles and copies may share empty lists alike)
        empty: list[int] = []
        self._buckets: list[list[int]] = [empty] * n_keys

    def set(self, n: int, k: int) -> None:
        """Record ``k`` (a key, or ``OFF``) as node ``n``'s current key (``AbsStore._touch``
        derives the keys)."""
        # no test of an unchanged key: its one caller compares first, and the same key again
        # would only take the node out of its bucket and put it back
        if k < OFF:  # a list index: a negative key would name another bucket
            raise ValueError(f"node {n}: negative index key {k}")
        cur = self._cur
        old = cur[n]
        cur[n] = k
        buckets = self._buckets
        if old >= 0:
            buckets[old].remove(n)
        if k >= 0:
            b = buckets[k]
            if not b:  # perhaps the shared empty list (``__init__``): replaced, never appended to
                buckets[k] = [n]
                return
            b.append(n)
            if b[-2] > n:
                b.sort()

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

    def first(self, lo: int, hi: int) -> int | None:
        """The lowest node of the lowest key in ``lo`` ≤ key < ``hi`` (None: no node there)."""
        for b in self._buckets[lo:hi]:
            if b:
                return b[0]
        return None

    def members(self, k: int) -> list[int]:
        """All nodes with key ``k`` in index order (a copy: the bucket changes with the index)."""
        return list(self._buckets[k])

    def between(self, lo: int, hi: int) -> list[int]:
        """The nodes whose key is in ``lo`` ≤ key < ``hi``, by key, then in index order (a new list)."""
        out: list[int] = []
        for b in self._buckets[lo:hi]:
            out.extend(b)
        return out


# The methods that make a store's view or rebuild it from one: a class that defines none of them
# itself rebuilds views verbatim (``AbsStore.state_is``).
_VIEW_METHODS: Final = ("with_state", "abs_view", "state_key", "_node_view", "_touch")
_OWN_VIEWS: Final[dict[type, bool]] = {}


def _own_views(cls: type) -> bool:
    """Whether ``cls`` takes its views and rebuild from ``AbsStore`` (checked once per class)."""
    known = _OWN_VIEWS.get(cls)
    if known is None:
        base = cls.__mro__.index(AbsStore)
        known = _OWN_VIEWS[cls] = not any(m in vars(k) for k in cls.__mro__[:base] for m in _VIEW_METHODS)
    return known


# Shared by every store, never written to (a store is rebuilt per expanded state): the flat level's
# unused index of held-only nodes, and what ``trial`` saved before any trial (``rollback`` refuses
# to run without one).
_NO_INDEX: Final = _MinIndex(0, 0)
_NOTHING_SAVED: Final[tuple[dict[int, Job], list[int], dict[int, list[_Slot | _Unit]]]] = ({}, [], {})


# What ``AbsStore._save`` records of a node before its first change in a trial: its kind, pool
# list and each slot with its filler list (``rollback`` puts them back and touches the node).
_Saved = tuple[str, list[_Unit], list[tuple[_Slot, list[_Unit]]]]

@mypyc_attr(allow_interpreted_subclasses=True)
class AbsStore:
    """The ABS state of ``n_nodes`` nodes of ``capacity`` GPUs with its indexes (module docstring)."""

    def __init__(self, n_nodes: int, capacity: int, name: str, level: Level = FLAT) -> None:
        if n_nodes < 1:
            raise ValueError(f"n_nodes={n_nodes} must be >= 1")
        self.n_nodes, self.capacity, self.name = n_nodes, capacity, name
        self.level, self._shared = level, level.shared_nodes  # the flag read by every _touch
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
        self._waiting = -1  # a node whose ``_touch`` waits (``_touch_later``); -1: none
        self._log: dict[int, _Saved] | None = None
        self._saved: tuple[dict[int, Job], list[int], dict[int, list[_Slot | _Unit]]] = _NOTHING_SAVED
        self._built_from: AbsView | None = None  # the view with_state rebuilt verbatim (``state_is``)
        self._partial = 0
        self._is_partial = [False] * N
        self._vac = [0] * N
        self._vac_total = 0
        # Keyed by: 0 for an empty node; D(n) for a slotted one; |P(n)| for a pool node; 0 for a
        # slotted node with a vacancy (``_touch`` sets every key).
        # With shared nodes (``Level``) the fill key is G − F(n) of every non-empty node, and
        # ``_held_room`` holds F(n) of the pool and held-only nodes.
        K = self.capacity + 1
        self._empty, self._by_room, self._by_fill, self._vacant = (_MinIndex(N, K), _MinIndex(N, K), _MinIndex(N, K),
                                                                    _MinIndex(N, K))
        self._held = [0] * N
        self._held_room = _MinIndex(N, K) if self._shared else _NO_INDEX  # flat: never used (its key stays OFF)

    def _free(self, n: int) -> int:
        """F(n) = G − held(n) − |P(n)| − Σ_{s∈S(n)} w(s); on a slotted node D(n) (``Level``)."""
        free = self.capacity - self._held[n] - len(self.pool[n])
        for s in self.slots[n]:  # a loop, not sum() of a generator: Compact asks this per candidate
            free -= s.width
        return free

    def _touch(self, n: int) -> None:
        """Re-derive node ``n``'s type and re-index it after any change to its contents.

        One pass over the node derives its vacancy, its used GPUs and its four index keys (the hot
        path of every operator and of ``with_state``)."""
        kind = self.kind[n]
        slots = self.slots[n]
        vac = profiled = used = 0
        if slots:  # no loop set up for a node without slots (most touched nodes are pool nodes)
            for s in slots:
                f = len(s.fillers)
                vac += s.width - s.g - f
                profiled += s.width
                used += s.g + f
        # One branch per kind, each setting the keys its kind has (the others stay OFF, as on a
        # blocked node, which is in no index); a key already right (OFF of a node not indexed
        # yet, in ``with_state``) is not set again below.
        e = r = f_ = v = OFF
        if self._shared:
            pool = self.pool[n]
            kind = self.kind[n] = SLOTTED if slots else POOL if pool else BLOCKED if self._held[n] else EMPTY
            h = OFF
            if kind == EMPTY:
                e = 0
            else:
                if kind == POOL:  # a pool node has no slots (one that has is SLOTTED)
                    used = len(pool)
                free = self.capacity - self._held[n] - len(pool) - profiled
                f_ = self.capacity - free
                if kind == SLOTTED:
                    r = free
                    if vac:
                        v = 0
                else:
                    h = free
            if self._held_room._cur[n] != h:
                self._held_room.set(n, h)
        elif kind == POOL:
            pool = self.pool[n]
            if pool:
                if not slots:
                    used = len(pool)
                f_ = used
            else:
                kind = self.kind[n] = EMPTY
                e = 0
        elif kind == SLOTTED:
            if slots:
                r = self.capacity - profiled
                if vac:
                    v = 0
            else:
                kind = self.kind[n] = EMPTY
                e = 0
        elif kind == EMPTY:
            e = 0
        old_vac = self._vac[n]
        if vac != old_vac:
            self._vac_total += vac - old_vac
            self._vac[n] = vac
        partial = 0 < used < self.capacity
        if partial != self._is_partial[n]:
            self._is_partial[n] = partial
            self._partial += 1 if partial else -1
        if self._empty._cur[n] != e:
            self._empty.set(n, e)
        if self._by_room._cur[n] != r:
            self._by_room.set(n, r)
        if self._by_fill._cur[n] != f_:
            self._by_fill.set(n, f_)
        if self._vacant._cur[n] != v:
            self._vacant.set(n, v)

    def _touch_later(self, n: int) -> None:
        """``_touch(n)`` deferred to ``_settle``, for a run of changes to node ``n`` that read no
        index meanwhile (a departing job's instances leaving one node one by one); a change to
        another node touches the waiting one first."""
        waiting = self._waiting
        if waiting != n:
            if waiting >= 0:
                self._touch(waiting)
            self._waiting = n

    def _settle(self) -> None:
        """The waiting ``_touch`` (``_touch_later``), before anything reads an index again."""
        waiting = self._waiting
        if waiting >= 0:
            self._waiting = -1
            self._touch(waiting)

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
        return _new(_ABS_VIEW, (self.capacity, tuple(self._node_view(n) for n in range(self.n_nodes))))

    def _node_view(self, n: int) -> NodeView:
        # Built by tuple.__new__, not the NamedTuples' own __new__ (a Python-level function): the
        # same values, a third of the cost, and this runs for every node an event touches. Loops,
        # not comprehensions (in CPython 3.11 each is a function call, here on lists of a few
        # items); an empty part is (): a flat node has a pool or slots, never both.
        slots, pool = self.slots[n], self.pool[n]
        slot_views: tuple[SlotView, ...] = ()
        if slots:
            views = []
            for s in slots:
                fillers: tuple[int, ...] = ()
                if s.fillers:
                    jobs = []
                    for f in s.fillers:
                        jobs.append(f.job)
                    fillers = tuple(jobs)
                views.append(_new(_SLOT_VIEW, (s.width, s.job, s.g, fillers)))
            slot_views = tuple(views)
        units: tuple[int, ...] = ()
        if pool:
            jobs = []
            for u in pool:
                jobs.append(u.job)
            units = tuple(jobs)
        return _new(_NODE_VIEW, (self.kind[n], units, slot_views))

    # ----------------------------------------------------------------- apply and undo (the explorer)
    # The explorer applies every event of a state to ONE scheduler built from that state
    # (``with_state(view)``) and undoes it, instead of rebuilding the scheduler per event.
    # ``trial()`` starts a change log: before an operator first changes a node's contents it
    # records the node's kind, its pool list and each slot with its filler list (``_save``), and
    # every change is followed by ``_touch`` of that node. ``view_after(view)`` reads the new
    # state rebuilding only the recorded nodes' views; ``rollback()`` puts the recorded lists and
    # every recorded object's place back (objects an arrival made are dropped), then touches those
    # nodes, as the operators do after a change (which derives their vacancy, partial flag and
    # index keys from the restored contents: as cheap as saving and restoring those values,
    # measured in both builds, and one way of deriving them). Afterwards the scheduler is the one
    # it was: the same objects in the same containers, jobs, counts and index keys
    # (``tests/test_compass.py`` checks it against a rebuild after random events).
    def trial(self) -> None:
        """Start an event that ``rollback`` will undo (a refused or failed event changes nothing)."""
        self._log = {}
        # An event only adds a job's list (arrival) or deletes one (departure), never changes a
        # list in place: a shallow copy restores the keys, their order and the untouched lists.
        self._saved = (dict(self.jobs), list(self._counts), dict(self.members))

    def _save(self, n: int) -> None:
        """Record node ``n``'s contents before its first change in a trial (see above): the log's
        nodes are the trial's changed nodes (``changed_nodes``), as ``rollback`` needs them."""
        self._built_from = None  # every operator saves a node before it changes it
        log = self._log
        if log is None or n in log:
            return
        saved: list[tuple[_Slot, list[_Unit]]] = []
        for s in self.slots[n]:  # a loop, not a comprehension (a call in CPython 3.11: ``_node_view``)
            saved.append((s, list(s.fillers)))
        log[n] = (self.kind[n], list(self.pool[n]), saved)

    def view_after(self, view: AbsView) -> AbsView:
        """``abs_view()`` during a trial started from ``view`` (this scheduler's ``with_state(view)``,
        where ``view`` equals what ``abs_view()`` then returned)."""
        log = self._log
        if log is None:
            return self.abs_view()
        nodes = list(view.nodes)
        for n in log:
            nodes[n] = self._node_view(n)
        return _new(_ABS_VIEW, (self.capacity, tuple(nodes)))  # as in _node_view: once per applied event

    def changed_nodes(self) -> Iterable[int]:
        """The nodes changed since ``trial()`` (the log's: an operator saves a node before it
        changes it): in ``view_after``'s view every other node is the trial's view's own object.
        Empty outside a trial."""
        log = self._log
        return () if log is None else log.keys()

    def keep(self) -> None:
        """End the trial keeping its event (``rollback`` is then refused)."""
        self._log = None

    def rollback(self) -> None:
        """Undo everything since ``trial()``: back to the state the trial started from."""
        log, self._log = self._log, None
        if log is None:
            raise RuntimeError("rollback without trial")
        self._waiting = -1  # its node is in the log: touched below
        self.jobs, self._counts, self.members = self._saved
        for n, (kind, pool, slots) in log.items():
            self.kind[n] = kind
            self.pool[n] = pool
            for u in pool:
                u.node, u.slot = n, None
            restored: list[_Slot] = []
            for sl, fillers in slots:
                restored.append(sl)
                sl.node, sl.fillers = n, fillers
                for f in fillers:
                    f.node, f.slot = n, sl
            self.slots[n] = restored
            self._touch(n)

    def state_key(self) -> AbsView:
        return self.abs_view()

    def state_is(self, view: AbsView) -> bool:
        """``state_key() == view``, without building the view when ``with_state(view)`` just
        rebuilt this scheduler verbatim (the explorer asks it of every state it expands, before it
        undoes events on the scheduler and reads untouched nodes back from ``view``). Exact: the
        base ``with_state`` copies every value of ``view`` and ``_node_view`` writes them back
        unchanged, so the two are equal unless ``_touch`` re-derived a node's kind or a container
        was not a tuple (``_built_from`` is then None); a subclass that defines its own view or
        rebuild (``_VIEW_METHODS``) is compared in full."""
        return self._verbatim(view) or self.state_key() == view

    def jobs_of(self, view: StateKey) -> dict[int, Job] | None:
        """The running jobs of ``view`` (``proofs_check.gpu.events.running_jobs``) when
        ``with_state(view)`` just rebuilt this scheduler verbatim (``state_is``): its own ``jobs``,
        which the rebuild derived from the view in the same order (the dict itself, to read
        before any event); else None."""
        return self.jobs if self._verbatim(view) else None

    def _verbatim(self, view: StateKey) -> bool:
        """``with_state(view)`` rebuilt this scheduler verbatim (its ``verbatim`` flag) and no
        operator has changed it since, and its class takes its views and rebuild from here."""
        return self._built_from is view and _own_views(type(self))

    def placement(self) -> Placement:
        return view_placement(self.abs_view())

    def clone(self) -> Self:
        """A copy: ``with_state`` of the view (which shows no held units), then the held units."""
        c = self.with_state(self.abs_view())
        for n, h in enumerate(self._held):
            if h:
                c.set_held(n, h)
        return c

    def with_state(self, view: StateKey) -> Self:
        """A scheduler of the same class and settings (``_settings_of``) whose state is ``view``
        (node order and job ids as given)."""
        if not isinstance(view, AbsView):
            raise TypeError(f"{self.name} state keys are AbsViews, got {type(view).__name__}")
        if not view.nodes:
            raise ValueError(f"n_nodes={len(view.nodes)} must be >= 1")
        cls = type(self)
        c = cls.__new__(cls)
        c._settings_of(self, len(view.nodes), view.capacity)
        c._blank()
        members = c.members
        # Whether abs_view() now equals ``view`` (``state_is``): every kind survived ``_touch``
        # and every container is a tuple, as ``_node_view`` writes them.
        verbatim = type(view.nodes) is tuple
        # the views unpacked, not read by attribute: in the compiled build a NamedTuple's
        # attribute is a generic look-up, its unpacking a tuple access (this runs per expanded state)
        for n, nd in enumerate(view.nodes):
            kind, units, slot_views = nd
            c.kind[n] = kind
            if units:
                pool = c.pool[n]
                for j in units:
                    u = _Unit(j, n)
                    pool.append(u)
                    members.setdefault(j, []).append(u)
            if slot_views:
                slots = c.slots[n]
                for sv in slot_views:
                    width, anchor, g, fillers = sv
                    s = _Slot(width, anchor, g, n)
                    slots.append(s)
                    members.setdefault(anchor, []).append(s)
                    for j in fillers:
                        u = _Unit(j, n, s)
                        s.fillers.append(u)
                        members.setdefault(j, []).append(u)
                    if type(fillers) is not tuple or type(sv) is not _SLOT_VIEW and type(sv) is not tuple:
                        verbatim = False
            c._touch(n)
            if c.kind[n] != kind or type(units) is not tuple or type(slot_views) is not tuple or \
                    type(nd) is not _NODE_VIEW and type(nd) is not tuple:
                verbatim = False
        c._built_from = view if verbatim else None
        # a job's shape from its first instance: a gang's instances all have its g (an anchor's, or 1)
        for j, ms in members.items():
            first = ms[0]
            g = first.g if isinstance(first, _Slot) else 1
            c.jobs[j] = _new(_JOB, (j, g, len(ms)))
            c._counts[g] += len(ms)
        return c

    def __getstate__(self) -> dict[str, Any]:
        return object_state(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        restore_state(self, state)

    def _settings_of(self, other: Self, n_nodes: int, capacity: int) -> None:
        """What a rebuild keeps of ``other``: everything but the state (subclasses add theirs)."""
        self.n_nodes, self.capacity, self.name = n_nodes, capacity, other.name
        self.level, self._shared = other.level, other._shared

    def _add_member(self, job: int, m: _Slot | _Unit) -> None:
        self.members.setdefault(job, []).append(m)

    def _unit_room(self) -> int:
        """Seats a 1-GPU instance could take: slot vacancies, pool room, empty nodes."""
        pool = 0
        fill = self._by_fill._buckets
        for c in range(1, self.capacity):  # a loop over the buckets, not sum() of a generator: per arrival
            pool += (self.capacity - c) * len(fill[c])
        return self._vac_total + pool + self.capacity * self._empty.size(0)

    def set_blocked(self, n: int, blocked: bool) -> None:
        """Take an empty node out of service (``BLOCKED``: no operator sees it) or put it back.

        Used by the hierarchical scheduler, where a node held by the other level is unusable.
        """
        if self.kind[n] not in (EMPTY, BLOCKED):
            raise ValueError(f"node {n} is {self.kind[n]}, only an empty node can be blocked")
        if self._shared:
            raise ValueError(f"{self.name}: a node of a level with shared nodes is blocked by its held units")
        self._save(n)
        self.kind[n] = BLOCKED if blocked else EMPTY
        self._touch(n)

    def set_held(self, n: int, units: int) -> None:
        """Node ``n`` now has ``units`` units held by the other level (``Level.shared_nodes``)."""
        if not self._shared:
            raise ValueError(f"{self.name}: only a level with shared nodes has held units")
        if self._held[n] != units:
            self._held[n] = units
            self._built_from = None
            self._touch(n)

    def held(self) -> list[int]:
        return list(self._held)
