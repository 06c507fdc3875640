"""COMPASS-ABS (seeds/000 §4.3, Algorithm 1): Place, Remove and Compact over the Anchor-Based Space.

The space itself (node kinds, pools, slots, fillers, the indexes over nodes, apply and undo) is
``heuristics.gpu.abs_store.AbsStore``; ``Compass`` adds the operators and nothing else.

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

from dataclasses import dataclass, replace
from typing import Any, Callable, Final, Iterable, Iterator, Self

from mypy_extensions import mypyc_attr

from heuristics.gpu.abs_space import EMPTY, POOL, SLOTTED, SlotView, is_fuf, slot_width
from heuristics.gpu.abs_store import FLAT, AbsStore, Level, _MinIndex, _Slot, _Unit, by_fields
from heuristics.gpu.cluster import G_DEFAULT, Job, check_job_shape
from heuristics.gpu.policy import EventResult, Migration, Outcome
from heuristics.gpu.ties import Chooser, pick

SLOT_CLASSES: Final = {"w4": 4, "w2": 2}


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
        return by_fields(self)


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


# Final: C statics in the compiled build; tuple.__new__ builds the NamedTuples of the interpreted
# policy module without their Python-level __new__ (once per migration and per event)
_new: Final = tuple.__new__
_MIGRATION: Final = Migration
_APPLIED: Final = Outcome.APPLIED
_REFUSED: Final = Outcome.REFUSED  # a refusal built here as ``_applied`` builds its result (once per refused arrival)
_NOTHING_MOVED: Final = EventResult.applied()


def _applied(moves: list[Migration]) -> EventResult:
    """``EventResult.applied(tuple(moves))``, built here: called from the compiled build, the
    static method runs in the interpreted policy module, once per event."""
    return _new(EventResult, (_APPLIED, tuple(moves), "")) if moves else _NOTHING_MOVED


class OperatorFailure(Exception):
    """An operator had no legal move; Algorithm 1 cannot produce a state for this event."""


# Under the opt-in compiled build (docs/scaling.md) this is a native class: subclasses (the
# hierarchy's levels, a user's scheduler written in Python) need saying so.
@mypyc_attr(allow_interpreted_subclasses=True)
class Compass(AbsStore):
    """COMPASS-ABS on ``n_nodes`` nodes of ``capacity`` GPUs; implements ``heuristics.gpu.policy.Policy``.

    The operators of Algorithm 1 over the ABS data and indexes of ``AbsStore`` (its apply and
    undo included); ``variant`` names the reading (module docstring), ``level`` how the nodes are
    seen (``abs_store.Level``: the flat ABS, or the hierarchy's panel level)."""

    def __init__(self, n_nodes: int, capacity: int = G_DEFAULT, variant: str | Variant = "literal",
                 level: Level = FLAT) -> None:
        self.variant = VARIANTS[variant] if isinstance(variant, str) else variant
        super().__init__(n_nodes, capacity, f"compass-{self.variant.name}", level)

    def _blank(self) -> None:
        super()._blank()
        self.ties: Chooser | None = None  # None: every tie to the lowest index (the readings above)

    def _settings_of(self, other: Self, n_nodes: int, capacity: int) -> None:
        super()._settings_of(other, n_nodes, capacity)
        self.variant = other.variant

    # ----------------------------------------------------------------- Algorithm 1
    def arrive(self, job: Job) -> EventResult:
        """Algorithm 1 lines 3–9: Place every instance, then Compact; all-or-nothing."""
        # unpacked once: from compiled code each attribute of a NamedTuple is a generic look-up
        jid, g, w = job
        if not 1 <= g <= self.capacity or w < 1:  # the call only to raise its error: it is interpreted
            check_job_shape(g, w, self.capacity)
        if jid in self.jobs:
            raise ValueError(f"job {jid} is already running")
        room = self._admissible(g, w)
        if room < w:
            return _new(EventResult, (_REFUSED, (), f"does not fit: room for {room} of {w} instances of g={g}"))
        if self.variant.filler_reserve and not self._keeps_reserve(job):
            return EventResult.refused("does not fit: a filler would lose its seat to return to")
        if self._choosing_in_trial():
            return self._failure_or(lambda: self._arrive(job))
        return _applied(self._arrive(job))

    def _choosing_in_trial(self) -> bool:
        """Ties are being chosen inside a ``trial``: an operator failure under some choice is
        reported as that event's outcome (``_failure_or``)."""
        return self.ties is not None and self._log is not None

    def _failure_or(self, event: Callable[[], list[Migration]]) -> EventResult:
        """``event`` run inside a trial; an operator failure is its outcome, and what the failing
        event changed is undone at once (a failed event changes nothing), the trial going on."""
        try:
            return _applied(event())
        except OperatorFailure as e:
            return self._undone(e)

    def _undone(self, e: OperatorFailure) -> EventResult:
        """A failed event inside a trial: what it changed undone at once, the trial going on."""
        self.rollback()
        self.trial()
        return EventResult.failure(f"operator failure: {e}")

    def _arrive(self, job: Job) -> list[Migration]:
        moves: list[Migration] = []
        jid, g, w = job
        self.jobs[jid] = job
        self._counts[g] += w
        for _ in range(w):
            moves += self._place(jid, g)
        if self.variant.compact_on_arrival:
            moves += self._compact()
        return moves

    def _seats_minus_fillers(self) -> int:
        """Pool and empty-node seats minus fillers: ≥ 0 means every filler could go back."""
        # flat, the fill key of a pool node is |P(n)|: O(G) from the index; not so with shared nodes
        pool_units = (sum([len(p) for p in self.pool]) if self._shared
                      else sum(c * self._by_fill.size(c) for c in range(1, self.capacity + 1)))
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
        job = self.jobs.get(job_id)
        if job is None:
            raise ValueError(f"job {job_id} is not running")
        if self._log is not None:
            # inside a trial (the explorer's apply and undo, or ties being chosen) ``rollback``
            # restores whatever a failing departure leaves behind: it runs here, not on a copy
            # (``_failure_or`` written out: no closure per departure)
            try:
                return _applied(self._depart(job_id))
            except OperatorFailure as e:
                return self._undone(e)
        if job[1] > 1 and self._may_strand_fillers(job_id):  # only a job of g ≥ 2 GPUs has slots, so fillers
            # A filler might find no destination: try on a copy so a failure changes nothing.
            try:
                self.clone()._depart(job_id)
            except OperatorFailure as e:
                return EventResult.failure(f"operator failure: {e}")
        return _applied(self._depart(job_id))

    def _depart(self, job_id: int) -> list[Migration]:
        job = self.jobs.pop(job_id)
        self._counts[job.g] -= job.w
        moves: list[Migration] = []
        left = list(self.members[job_id])
        ordered = False  # ``left`` is known to be in removal order
        while left:
            moved = self._remove(self._next_removal(left, ordered))
            # a removal that moves no instance changes no other instance's place, and only
            # shifts the slot positions after the removed slot on its node, by one each: the
            # rest of ``left`` stays in removal order
            ordered = not moved
            moves += moved
        self._settle()
        del self.members[job_id]
        if self.variant.compact_on_departure:
            moves += self._compact()
        return moves

    def _next_removal(self, left: list[_Slot | _Unit], ordered: bool) -> _Slot | _Unit:
        """The departing job's next instance in removal order, taken out of ``left`` (its
        instances not removed yet; reading 9; with ties, any order: each next instance is a
        choice among the first-ranked remaining ones, one per place); ``ordered``: ``left`` is
        known to be in that order already.

        The order is taken afresh after each removal that moved an instance (``_depart``), from
        where the instances are then: a removed filler's replacement may be one of the job's own
        pool units (filler-replace), and which of its interchangeable units moved must not decide
        what follows. Ranked once up front, it did: the live scheduler and one rebuilt from its
        state (lists in another order) made different numbers of migrations on the same state. A
        loop over this, not a generator: one runs per departure, and a generator object costs
        more than the ranking."""
        if not ordered and len(left) > 1 and not self._in_removal_order(left):
            left.sort(key=self._removal_order)
        if self.ties is None:
            return left.pop(0)
        first = self._removal_order(left[0])[0]
        places = {self._place_of(m): m for m in reversed(left) if self._removal_order(m)[0] == first}
        m = pick(self.ties, "Remove: which instance next", sorted(places.values(), key=self._removal_order))
        left.remove(m)
        return m

    def _in_removal_order(self, left: list[_Slot | _Unit]) -> bool:
        """``left`` is already sorted by ``_removal_order`` (the usual case: pool5 sorted 108,275
        such lists and none changed), so the keyed sort can be skipped without changing the order."""
        prev = self._removal_order(left[0])
        for m in left[1:]:
            key = self._removal_order(m)
            if key < prev:
                return False
            prev = key
        return True

    @staticmethod
    def _place_of(m: _Slot | _Unit) -> tuple[int, int]:
        """Instances in one place are interchangeable: a pool node, or one slot (anchor or filler)."""
        if isinstance(m, _Slot):
            return (m.node, id(m))
        return (m.node, -1 if m.slot is None else id(m.slot))

    def _removal_order(self, m: _Slot | _Unit) -> tuple[bool, int, int]:
        # (node, place): place -1 for a pool unit, else the index of its slot in the node. With
        # pool_first, a departing job's pool instances leave before its fillers, so a filler's
        # replacement is never drawn from the departing job itself.
        node = m.node
        if isinstance(m, _Slot):
            return (self.variant.pool_first, node, self.slots[node].index(m))
        if m.slot is None:
            return (False, node, -1)
        return (self.variant.pool_first, node, self.slots[node].index(m.slot))

    # ----------------------------------------------------------------- admission
    def _admissible(self, g: int, need: int) -> int:
        """How many instances of ``g`` GPUs Place can install in sequence from this state, exactly
        when fewer than ``need``; otherwise some number ≥ ``need`` (the empty nodes are counted
        first, and when they alone hold ``need`` the slotted nodes are not: an arrival only asks
        whether its ``need`` instances fit, and most find room on empty nodes).

        Exact: a g ≥ 2 instance consumes w★(g) unprofiled GPUs of one node, a 1-GPU instance one
        vacancy / pool seat / empty-node seat, and fillers drawn from the pool free no seat a
        later instance of the same job could use.
        """
        if g == 1:
            return self._unit_room()
        w = self.variant.width(g)
        rooms = self._empty.size(0) * (self.capacity // w)
        if rooms >= need:
            return rooms
        by_room = self._by_room._buckets
        for d in range(w, self.capacity):  # a loop over the buckets, not sum() of a generator: per arrival
            rooms += (d // w) * len(by_room[d])
        if self._shared:  # and the free units of pool and held-only nodes (``Level``)
            held = self._held_room._buckets
            for d in range(w, self.capacity):
                rooms += (d // w) * len(held[d])
        return rooms

    def compact(self) -> tuple[Migration, ...]:
        """Compact alone (Appendix D.4 runs one level's Compact after the other level's event)."""
        return tuple(self._compact())

    def _may_strand_fillers(self, job_id: int) -> bool:
        """False when the departing job's fillers surely find seats outside its own slots."""
        # one loop, not comprehensions: this runs per departure, and most departing jobs hold no slot
        fillers = vacancy = 0
        for m in self.members[job_id]:
            if isinstance(m, _Slot):
                fillers += len(m.fillers)
                vacancy += m.vacancy
        return fillers > 0 and fillers > self._unit_room() - vacancy

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
            n = self._empty_node()
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
        """Line 4–5: the slotted node with D(n) ≥ w chosen by ``Variant.slot_host``; with shared
        nodes (``Level``), else the pool or held-only node with the fewest free units ≥ w (equal
        ones: a choice, reading H7 of ``hier_compass``)."""
        n = self._slotted_host(w)
        if n is not None or not self._shared:
            return n
        for d in range(w, self.capacity):
            hosts = self._held_room.members(d)
            if hosts:
                return pick(self.ties, "panel slot host: argmin free panels (pool / GPU-only domain)", hosts)
        return None

    def _slotted_host(self, w: int) -> int | None:
        rooms = range(w, self.capacity)
        rule = self.variant.slot_host
        if rule == "best-fit":
            if self.ties is None:
                return self._by_room.first(w, self.capacity)
            for d in rooms:
                if self._by_room.size(d):
                    return pick(self.ties, "slot host: argmin D(n)", self._by_room.members(d))
            return None
        cands = [n for d in rooms for n in self._by_room.members(d)]
        if not cands:
            return None
        if rule == "first-fit":
            return min(cands)
        if rule == "worst-fit":
            most = max(self._free(n) for n in cands)
            return pick(self.ties, "slot host: argmax D(n)", sorted(n for n in cands if self._free(n) == most))
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
            moves.append(_new(_MIGRATION, (u.job, 1, src, dst, kind)))
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
        return self._lowest_fill(fills, self.level.filler_draw, self._shared)

    def _lowest_fill(self, fills: Iterable[int], point: str, pools_only: bool = False) -> int | None:
        """A node of the first occupancy in ``fills`` that has one (ties: a choice); with
        ``pools_only`` a node holding pool units (with shared nodes the fill index also holds
        slotted and held-only nodes, ``Level``)."""
        if self.ties is None and not pools_only:
            buckets = self._by_fill._buckets
            for c in fills:
                b = buckets[c]
                if b:
                    return b[0]
            return None
        for c in fills:
            nodes = [n for n in self._by_fill.members(c) if self.pool[n]] if pools_only else self._by_fill.members(c)
            if nodes:
                return pick(self.ties, point, nodes)
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
        n = self._empty_node()
        if n is None:
            raise OperatorFailure("a 1-GPU instance has no slot vacancy, pool seat or empty node")
        return n

    def _empty_node(self) -> int | None:
        """"Pick any empty node": the lowest (empty nodes are interchangeable, H5); at the GPU
        level of Appendix D under a chooser, a choice among domains (``Level.panels_per_domain``,
        reading H7)."""
        if self.level.panels_per_domain and self.ties is not None:
            options = self.empty_options()
            return pick(self.ties, "GPU level: which domain's empty panel", options) if options else None
        return self._empty.lowest(0)

    def empty_options(self) -> list[int]:
        """The lowest empty node of each domain that has one, in domain order (option 0: the
        lowest empty node, H5); of the fully empty domains only the first (they are
        interchangeable). Without domains (``panels_per_domain`` 0) every node is one."""
        k = max(self.level.panels_per_domain, 1)
        firsts: dict[int, int] = {}
        for p in self._empty.members(0):
            firsts.setdefault(p // k, p)
        out, empty_domain = [], False
        for d, p in firsts.items():
            if all(self.kind[q] == EMPTY for q in range(d * k, d * k + k)):
                if empty_domain:
                    continue
                empty_domain = True
            out.append(p)
        return out

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
        self._take_out(u)
        self._touch(u.node)

    def _take_out(self, u: _Unit) -> None:
        """``u`` leaves its slot or pool; its node is left for the caller to re-index."""
        self._save(u.node)
        if u.slot is not None:
            u.slot.fillers.remove(u)
        else:
            self.pool[u.node].remove(u)

    # ----------------------------------------------------------------- Remove (§4.3.3)
    def _remove(self, m: _Slot | _Unit) -> list[Migration]:
        """One instance of a departing job leaves (``_depart`` settles afterwards). A removal
        that reads no index (a pool unit, a filler that draws no replacement, a slot without
        fillers) re-indexes its node later (``_touch_later``): a departing job's instances often
        leave one node one after the other; any other first settles the waiting node."""
        if isinstance(m, _Unit):
            slot = m.slot
            if slot is None or not self.variant.replace_departed_filler:
                self._take_out(m)
                self._touch_later(m.node)
                return []
            self._settle()
            self._detach(m)
            return self._draw_fillers(slot, 1, "filler-replace")
        s = m
        if self.variant.dissolve_first:
            self._settle()
            return self._dissolve_then_reseat(s)
        moves = []
        src = s.node
        self._save(src)  # before a seat is held on another slot of src: the log keeps src as it was
        if s.fillers:  # most slots leave with none: no destination to choose
            self._settle()
            dests = []
            for i, f in enumerate(s.fillers):
                d = self._unit_destination(exclude=s)
                dests.append(d)
                if i + 1 < len(s.fillers):  # the seat is held for the fillers still to choose
                    self._claim(d)
            if len(dests) > 1:
                self._unclaim(dests[:-1])
            for f, d in zip(list(s.fillers), dests):
                # the slot's node is re-indexed later: the destinations are chosen already
                s.fillers.remove(f)
                self._install_unit(f, d)
                moves.append(_new(_MIGRATION, (f.job, 1, src, f.node, "filler-return")))
        self.slots[src].remove(s)
        self._touch_later(src)
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
                moves.append(_new(_MIGRATION, (f.job, 1, src, f.node, "filler-return")))
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
            if cls == "slots":
                moves += self._slot_repack()
                continue
            # fewer than two candidates: no host pair (most classes of most events), known
            # before BestFitDrain is called
            index, lo, hi = self._host_keys(cls)
            if index.count(lo, hi) >= 2:
                hosts = self._hosts(cls, index.between(lo, hi))
                if len(hosts) >= 2:
                    moves += self._best_fit_drain(cls, hosts)
        return moves

    def _may_compact(self) -> bool:
        """False when no class can have two hosts, so Compact would move nothing. A host holds a
        class item (≥ 1 GPU used) and has room ≥ 1 (not all G used): it is a partial node, and
        with fewer than two partial nodes there is no host pair. Compact runs after every event,
        and most events leave fewer than two partial nodes. With shared nodes (``Level``) held
        and residual pool units are not in the used count the partial flag is derived from, so
        a host need not be a partial node: Compact always runs."""
        return self._shared or self._partial >= 2

    def _class_items(self, cls: str, n: int) -> list[_Slot | _Unit]:
        if cls == "pool":
            return list(self.pool[n])
        items: list[_Slot | _Unit] = []
        w = SLOT_CLASSES[cls]
        for s in self.slots[n]:  # a loop, not a comprehension (a call in CPython 3.11): per Compact pass
            if s.width == w:
                items.append(s)
        return items

    def _room(self, cls: str, n: int) -> int:
        """room_C(n) (reading 2): G − |P(n)| for the pool class (F(n): the same on a flat pool
        node, and what a pool unit may take with shared nodes), ⌊D(n)/w⌋ for a slot class."""
        if cls == "pool":
            return self._free(n)
        return self._free(n) // SLOT_CLASSES[cls]

    def _hosts(self, cls: str, cands: list[int]) -> list[int]:
        """Line 3's N (reading 1): nodes holding a class-C item with room ≥ 1, in index order,
        out of ``cands``, the nodes of ``_host_keys``."""
        if cls == "pool":  # with shared nodes the fill index also holds slotted and held-only nodes
            return sorted([n for n in cands if self.pool[n]])
        w = SLOT_CLASSES[cls]
        hosts = []
        for n in cands:  # loops, not ``_class_items`` per candidate: Compact runs after every event
            for s in self.slots[n]:
                if s.width == w:
                    hosts.append(n)
                    break
        hosts.sort()
        return hosts

    def _host_keys(self, cls: str) -> tuple[_MinIndex, int, int]:
        """The index and the keys lo ≤ key < hi whose nodes include every host of class ``cls``
        (``_hosts``)."""
        if cls == "pool":
            return self._by_fill, 1, self.capacity
        w = SLOT_CLASSES.get(cls)
        if w is None:
            raise ValueError(f"unknown Compact class {cls!r}")
        return self._by_room, w, self.capacity

    def _best_fit_drain(self, cls: str, hosts: list[int]) -> list[Migration]:
        """BestFitDrain for one class, pseudocode of Compact lines 3–15, over ``hosts`` (``_hosts``,
        at least two)."""
        hosts = self._by_room_desc(cls, hosts)
        moves: list[Migration] = []
        while len(hosts) >= 2:
            src, progress = hosts[0], False
            for x in self._drain_items(cls, src):
                if self.ties is None:
                    dst = self._least_room(cls, hosts, src)
                    if dst < 0:
                        break
                else:
                    dsts = [n for n in hosts if n != src and self._room(cls, n) >= 1]
                    if not dsts:
                        break
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

    def _least_room(self, cls: str, hosts: list[int], src: int) -> int:
        """The destination of the next item from ``src``: the host other than ``src`` with the
        least room ≥ 1, the lowest index among equal rooms (``min`` by (room, node) over the
        destinations, in one pass without a key function); -1 when no host has room."""
        best, least = -1, -1
        for n in hosts:
            if n == src:
                continue
            room = self._room(cls, n)
            if room >= 1 and (best < 0 or room < least or room == least and n < best):
                best, least = n, room
        return best

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
        # without ties the list itself (a copy, in node order), not a generator over it
        return items if self.ties is None else self._chosen_items(cls, items)

    def _chosen_items(self, cls: str, items: list[_Slot | _Unit]) -> Iterator[_Slot | _Unit]:
        """``items`` one at a time, each next one a choice (``_drain_items`` under ties)."""
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
            a = min(partial, key=lambda n: (-self._free(n), n))
            b = min((n for n in partial if n != a), key=lambda n: (self._free(n), n))
            before = len(moves)
            moves += self._pour(a, b)
            if self._free(b) > 0 and self.slots[a]:
                moves += self._pour(b, a)
            if len(moves) == before:
                # flat, slot widths tile a node's unprofiled room, so a round always moves a slot
                # (above); with shared nodes held and pool units take free units too
                if not self._shared:
                    raise AssertionError(f"slot repack stalled on nodes {a} and {b}")
                return moves

    def _pour(self, src: int, dst: int) -> list[Migration]:
        moves: list[Migration] = []
        for x in sorted(self.slots[src], key=lambda s: -s.width):
            if x.width < self.capacity and x.width <= self._free(dst):
                moves += self._migrate(f"w{x.width}", x, src, dst)
        return moves

    def _migrate(self, cls: str, x: _Slot | _Unit, src: int, dst: int) -> list[Migration]:
        kind = f"compact-{cls}"
        if isinstance(x, _Unit):
            self._detach(x)
            self._to_pool(x, dst)
            return [_new(_MIGRATION, (x.job, 1, src, dst, kind))]
        self._save(src)
        self._save(dst)
        self.slots[src].remove(x)
        self.slots[dst].append(x)
        x.node = dst
        for f in x.fillers:
            f.node = dst
        self._touch(src)
        self._touch(dst)
        return [_new(_MIGRATION, (x.job, x.g, src, dst, kind))] + [
            _new(_MIGRATION, (f.job, 1, src, dst, kind)) for f in x.fillers
        ]


def make_variant(base: str, name: str, **changes: Any) -> Variant:
    """A new named variant: ``base`` with some switches changed (used for repairs and mutants)."""
    return replace(VARIANTS[base], name=name, **changes)


def is_fuf_slot(s: SlotView) -> bool:
    return is_fuf(s.anchor_g)
