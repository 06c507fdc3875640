"""Hierarchical COMPASS-ABS for multi-panel NVLink domains (seeds/000 Appendix D.3–D.4).

Two instances of the flat scheduler (``heuristics.gpu.compass.Compass``) composed, not a second copy of
the operators:

* the **GPU level** — ``Compass(nodes = panels, capacity = 8, variant)``: Place / Remove / Compact
  of §4.3 with the panel as the node (sub-panel instances, g ≤ 7);
* the **panel level** — ``panel_level(nodes = domains, capacity = K, variant with width = w_p★)``:
  the same operators with the panel as the atomic unit and the domain as the node (D.3: "Σpanel
  mirrors the ABS construction of Section 4.2 verbatim under two substitutions"), plus what H1
  and H4 below need (panels held by the GPU level, a pool region beside slots). Its 1-unit instances are
  the g = 8 instances (1-panel fillers, panel-pool), its anchors the multi-panel instances of panel
  demand p = g/8 with panel-slot width w_p★(p) (eq. 23), the domain-filling g = 8K instance a
  width-K degenerate panel-slot (D.4). Its BestFitDrain classes are {panel-pool, panel-w4,
  panel-w2} on capacity K.

Dispatch (D.4): a job goes to the level of its instance class (``heuristics.gpu.hier_cluster``);
Algorithm 1 runs at that level (Place/Remove, then its Compact), and then the other level's Compact
runs too ("each Compact pass ... run independently after each event"), each level obeying its
variant's compact-on-arrival / compact-on-departure switches.

Readings chosen (variant ``literal``; every one is an ambiguity of Appendix D, see
docs/hierarchical.md):

H1. *Which panels each level may use.* D.3: "the full cluster-wide state space is the Cartesian
    product across NVLink domains of Σpanel, with the internal state of each non-saturated panel
    still drawn from the GPU-level Σ". Reading: **each panel belongs to at most one level at a
    time; a domain may hold both.** The panel level's items occupy whole panels (an anchor's p
    panels, a filler's or pool unit's one, a slot's vacancy panels kept for its fillers); every
    other panel is a GPU-level node (a "non-saturated panel", possibly empty). The panel level
    sees a domain's panels with GPU-level work as taken (``Compass.held`` of a level with shared
    nodes, ``abs_store.Level``), the GPU level sees
    the panels the panel level holds as out of service (kind ``blocked``). D.4's "disjoint
    populations of items" holds by construction. (Before issue 13 the reading was "a domain
    belongs to one level only", which the text does not say.)
H2. *g = 8.* D.3 lists g ≤ 8 as sub-panel (GPU level) and also calls g = 8 instances panel-fillers;
    eq. (25) counts n_8 as the panel-level fillers, so g = 8 goes to the panel level as a 1-panel
    unit. At K = 1 the 1-panel unit and the domain-filling instance coincide and are handled as a
    unit (a capacity-1 domain admits no slot). ``eight_gpu_level="gpu"`` takes the other reading
    (g = 8 a width-8 slot at the GPU level; the panel level then has no fillers).
H3. *Slot widths at the panel level.* w_p★(p) of eq. (23) is defined for p ≤ 8 only; p = K uses the
    width-K degenerate slot. For K ≥ 10 a demand p ∈ 9..K−1 has no width: such an arrival is
    refused with that reason. For K ∈ {6, 7}, p ∈ 5..K−1 gets w_p★ = 8 > K: never placeable, so
    refused as "does not fit" (the literal widths, not a repair).
H4. *K not a power of two* (e.g. K = 9). D.5: "any panel-level layout decomposes into at most one
    width-8 panel-slot together with one residual panel acting as a panel-pool". Reading: **a
    domain's free panels are its panel-pool region**: a 1-panel unit may sit beside panel-slots
    (the ninth panel of an NVL72 rack beside a width-8 panel-slot), and a panel-slot may open in
    a pool domain's free panels. Place, 1-panel unit: a slot vacancy, else the fullest domain with
    a free panel, else an empty domain; Place, anchor: the slotted domain with the fewest free
    panels ≥ w (best fit), else a pool or GPU-only domain with ≥ w free panels (best fit), else an
    empty domain. (Before issue 13 the residual panel stayed idle, contradicting D.5.)
H5. *Node order for "pick any" ties.* Each level's Compass sees its usable nodes in global index
    order, so its lowest-index rules pick the lowest global panel / domain.
H6. *Migrations.* GPU-level migrations name panels. A panel-level migration moves a whole
    multi-panel instance or 1-panel unit between domains; it is reported with g in GPUs (8p),
    src/dst = the first panel of the source/destination domain, kind prefixed ``panel-``
    (panels inside a domain are interchangeable at the panel level; ``hier_placement`` lays them
    out slot by slot).
H7. *Tie points* (``heuristics.gpu.ties``, ``verify --ties all``). Both levels inherit every
    tie point of ``Compass`` (docs/verify.md). The hierarchy adds three: at the panel level the
    least-occupied domain a panel-filler is drawn from among equal ones (``Compass
    ._filler_source``) and the best-fit pool / GPU-only domain a panel-slot opens in among equal
    free room (``Compass._slot_host``); at the GPU level "pick any empty node" is a real choice
    (a panel of one domain or of another: the domains then differ), one option per domain with
    an empty panel, every fully empty domain being one option (they are interchangeable, as empty
    nodes are in the flat scheduler). Option 0 is always the rule of H5. Not choices: which
    panels of a domain each level holds (panels in a domain are interchangeable) and the repaired
    slot repack (a rule of this toolkit).

Findings and the claims that check all this: docs/hierarchical.md, ``proofs_check/gpu/hier_claims.py``.
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any, Callable, Iterable

from mypy_extensions import mypyc_attr

from heuristics.gpu.abs_space import EMPTY, POOL, SLOTTED, AbsView, NodeView, slot_width
from heuristics.gpu.cluster import Job, Placement
from heuristics.gpu.abs_store import BLOCKED, FLAT, PANEL_NODES, object_state, restore_state
from heuristics.gpu.compass import VARIANTS, Compass, OperatorFailure, Variant
from heuristics.gpu.hier_abs import MAX_TABLE_P, HierView, gpu_panels, layout, reserved_panels
from heuristics.gpu.hier_cluster import (
    G_PANEL,
    MULTI,
    SUB_PANEL,
    HierPlacement,
    Topology,
    check_hier_job,
    check_topology,
    flatten,
    instance_class,
    panel_demand,
)
from heuristics.gpu.policy import EventResult, Migration, StateKey
from heuristics.gpu.ties import Chooser, pick

GPU, PANEL = "gpu", "panel"
# BLOCKED (heuristics.gpu.abs_store): a node held by the other level (see HierCompass._install)


def panel_slot_width(k: int, p: int) -> int:
    """Panel-slot width of a panel-level anchor of panel demand ``p`` in a domain of ``k`` panels:
    k for the domain-filling p = k (D.4), else w_p★(p) of eq. (23) (same table as eq. 3)."""
    if p == k:
        return k
    if 2 <= p <= MAX_TABLE_P:
        return slot_width(p)
    raise ValueError(f"w_p★ is undefined for panel demand p={p} (eq. 23 covers p ≤ 8)")


def panel_variant(base: Variant, k: int) -> Variant:
    """The panel-level reading of a flat variant: same switches, panel-slot widths."""
    return replace(base, name=f"{base.name}-panel", width=partial(panel_slot_width, k))


def panel_level(n_domains: int, k: int, base: Variant) -> Compass:
    """The panel level of Appendix D: COMPASS on domains of ``k`` panels (capacity k) with the
    panel-slot widths of ``panel_variant`` and shared nodes (``abs_store.PANEL_NODES``), the two
    things the text adds to the verbatim mirror of ABS (readings H1 and H4):

    * a domain's panels with GPU-level work are *held* (``Compass.set_held``; Σhier: "the
      internal state of each non-saturated panel still drawn from the GPU-level Σ"): they are
      outside the panel level's reach, a domain's free panels are K − Σ w(s) − |P(d)| − held(d)
      and they are its unprofiled room D(d); a domain with GPU work and no panel-level item has
      kind ``BLOCKED``, not empty, yet Place may open a panel-slot or a pool in its free panels;
    * a panel-pool region beside panel-slots (D.5: at K = 9 "one width-8 panel-slot together
      with one residual panel acting as a panel-pool"): a 1-panel unit may sit in any domain's
      free panels, and a panel-slot may open in the free panels of a panel-pool domain.

    Place's "slotted node with D(n) ≥ w, best fit, else an empty node" thus becomes: a slotted
    domain (best fit), else a pool or GPU-only domain with that many free panels (best fit),
    else an empty domain (``abs_store.Level`` lists every difference)."""
    return Compass(n_domains, k, panel_variant(base, k), PANEL_NODES)


def gpu_level(n_panels: int, variant: Variant, k: int) -> Compass:
    """The GPU level of Appendix D: COMPASS with the panels of ``k``-panel domains as its nodes
    (capacity 8). It differs from the flat scheduler in one respect only: empty panels of
    different domains are not interchangeable, so under a chooser "pick any empty node" is a
    choice among domains (reading H7, ``Level.panels_per_domain``)."""
    return Compass(n_panels, G_PANEL, variant, replace(FLAT, name="gpu", panels_per_domain=k))


@mypyc_attr(allow_interpreted_subclasses=True)
class HierCompass:
    """Hierarchical COMPASS-ABS on ``n_domains`` domains of ``panels_per_domain`` panels;
    implements ``heuristics.gpu.policy.Policy`` with the panels as its nodes (capacity 8)."""

    def __init__(self, n_domains: int, panels_per_domain: int, variant: str | Variant = "literal",
                 eight_gpu_level: str = PANEL) -> None:
        topology = Topology(n_domains, panels_per_domain)
        check_topology(topology)
        if eight_gpu_level not in (GPU, PANEL):
            raise ValueError(f"eight_gpu_level={eight_gpu_level!r} must be {PANEL!r} (reading H2) or {GPU!r}")
        if isinstance(variant, str):
            if variant not in VARIANTS:
                raise ValueError(f"unknown COMPASS variant {variant!r}; known: {', '.join(VARIANTS)}")
            variant = VARIANTS[variant]
        k = panels_per_domain
        self._configure(topology, variant, eight_gpu_level,
                        {GPU: gpu_level(k, variant, k), PANEL: panel_level(1, k, variant)})
        self._install(HierView(k, AbsView(k, (NodeView(EMPTY),) * n_domains),
                               AbsView(G_PANEL, (NodeView(EMPTY),) * topology.n_panels)))

    def _configure(self, topology: Topology, variant: Variant, eight_gpu_level: str, proto: dict[str, Compass]) -> None:
        self.topology, self.variant, self.eight_gpu_level, self._proto = topology, variant, eight_gpu_level, proto
        self.name = f"hier-compass-{variant.name}" + ("" if eight_gpu_level == PANEL else "-g8gpu")
        self.n_nodes, self.capacity = topology.n_panels, G_PANEL
        self.max_demand = G_PANEL * topology.panels_per_domain  # the simulator admits g up to 8K (multi-panel)

    # ----------------------------------------------------------------- state
    # Each level is one Compass over ALL its nodes (panels / domains). At the GPU level a panel the
    # panel level occupies is taken out of service by giving it the kind BLOCKED, which no Compass
    # index holds, so no operator sees it; which panels those are is ``reserved_panels`` (the
    # highest-index panels of the domain without GPU work). At the panel level a domain's panels
    # with GPU work are ``Compass.held``. Only domains an event touched are re-synchronised, so
    # an event costs O(touched · K). Views show blocked nodes as EMPTY.
    def _install(self, view: HierView) -> None:
        """Make ``view`` the state (both levels rebuilt from it)."""
        t = view.topology
        blocked = {p for d in range(t.n_domains) for p in reserved_panels(view, d)}
        gpu = [NodeView(BLOCKED) if p in blocked else nd for p, nd in enumerate(view.gpu.nodes)]
        panel = self._proto[PANEL].with_state(view.panel)
        for d in range(t.n_domains):
            panel.set_held(d, gpu_panels(view, d))
        self._level = {GPU: self._proto[GPU].with_state(AbsView(G_PANEL, tuple(gpu))), PANEL: panel}
        self._jobs: dict[int, tuple[str, Job]] = {}
        for level, scale in ((GPU, 1), (PANEL, G_PANEL)):
            for j, job in self._level[level].running().items():
                self._jobs[j] = (level, Job(j, job.g * scale, job.w))

    def _full(self, level: str) -> AbsView:
        """The level's view over every node of its kind (EMPTY where it may not go)."""
        view = self._level[level].abs_view()
        return view._replace(nodes=tuple(NodeView(EMPTY) if nd.kind == BLOCKED else nd for nd in view.nodes))

    def _panel(self) -> Compass:
        return self._level[PANEL]

    def _sync(self, level: str, nodes: set[int]) -> None:
        """After ``level`` changed ``nodes`` (its own indices): the panel level's held panels of
        the touched domains, then the GPU level's blocked panels there."""
        k = self.topology.panels_per_domain
        gpu, panel = self._level[GPU], self._panel()
        domains = {n // k for n in nodes} if level == GPU else set(nodes)
        for d in domains:
            if level == GPU:
                panel.set_held(d, sum(1 for p in self.topology.panels_of(d) if gpu.kind[p] not in (EMPTY, BLOCKED)))
            reserved = len(panel.pool[d]) + sum(s.width for s in panel.slots[d])
            free = [p for p in self.topology.panels_of(d) if gpu.kind[p] in (EMPTY, BLOCKED)]
            if reserved > len(free):
                raise AssertionError(f"domain {d}: panel level holds {reserved} panels, {len(free)} are free")
            target = set(free[len(free) - reserved:]) if reserved else set()
            for p in free:
                if (gpu.kind[p] == BLOCKED) != (p in target):
                    gpu.set_blocked(p, p in target)

    def owned_domains(self) -> tuple[frozenset[int], frozenset[int]]:
        """(domains with GPU-level work, domains with panel-level items); under reading H1 a
        domain may be in both."""
        panel = self._panel()
        return (frozenset(d for d, h in enumerate(panel.held()) if h),
                frozenset(d for d, kd in enumerate(panel.kind) if kd in (POOL, SLOTTED)))

    def _job_nodes(self, level: str, job_id: int) -> set[int]:
        """Nodes holding the job's instances at ``level`` (each Compass member records its node)."""
        return {m.node for m in self._level[level].members.get(job_id, ())}

    def state_key(self) -> HierView:
        return HierView(self.topology.panels_per_domain, self._full(PANEL), self._full(GPU))

    def with_state(self, view: StateKey) -> HierCompass:
        """A scheduler of the same variant whose state is ``view`` (any domain count and K)."""
        if not isinstance(view, HierView):
            raise TypeError(f"{self.name} state keys are HierViews, got {type(view).__name__}")
        if view.panels_per_domain != self.topology.panels_per_domain:
            return HierCompass(view.topology.n_domains, view.panels_per_domain, self.variant,
                               self.eight_gpu_level).with_state(view)
        h = HierCompass.__new__(HierCompass)
        h._configure(view.topology, self.variant, self.eight_gpu_level, self._proto)
        h._install(view)
        return h

    def clone(self) -> "HierCompass":
        return self.with_state(self.state_key())

    def __getstate__(self) -> dict[str, Any]:
        return object_state(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        restore_state(self, state)

    def running(self) -> dict[int, Job]:
        return {j: job for j, (_, job) in self._jobs.items()}

    def hier_placement(self) -> HierPlacement:
        return layout(self.state_key())

    def placement(self) -> Placement:
        """The per-panel placement (capacity 8) the simulator's metrics read."""
        return flatten(self.hier_placement())

    def occupancy(self) -> tuple[int, ...]:
        """Number of panels at each used level 0..8 (the simulator's fast accessor)."""
        hp = self.hier_placement()
        hist = [0] * (G_PANEL + 1)
        for n in range(self.topology.n_panels):
            hist[hp.used(n)] += 1
        return tuple(hist)

    # ----------------------------------------------------------------- dispatch
    def level_of(self, g: int) -> str:
        """Dispatch of D.4: sub-panel → GPU level, every other class → panel level; g = 8 by
        ``eight_gpu_level`` (reading H2: the panel level; "gpu" is the other reading of D.3)."""
        if g == G_PANEL:
            return self.eight_gpu_level
        return GPU if instance_class(g, self.topology.panels_per_domain) == SUB_PANEL else PANEL

    # ----------------------------------------------------------------- tie points (reading H7)
    @property
    def ties(self) -> Chooser | None:
        """The chooser both levels ask at their tie points (None: the rules of H5)."""
        return self._level[GPU].ties

    @ties.setter
    def ties(self, chooser: Chooser | None) -> None:
        for lv in self._level.values():
            lv.ties = chooser

    def _trial(self) -> "HierCompass":
        """A copy to run one event on, answering this scheduler's chooser. Under a chooser each
        level runs inside a ``Compass.trial``, so an operator failure under some choice is that
        event's outcome (not judged beforehand on the default choices)."""
        t = self.clone()
        t.ties = self.ties
        if t.ties is not None:
            for lv in t._level.values():
                lv.trial()
        return t

    def _adopt(self, t: "HierCompass") -> None:
        for lv in t._level.values():
            lv.keep()  # the event of the trial (Compass.trial) is kept
        self._level, self._jobs = t._level, t._jobs

    @staticmethod
    def _guarded(event: Callable[[], EventResult]) -> EventResult:
        try:
            return event()
        except OperatorFailure as e:
            return EventResult.failure(f"operator failure: {e}")

    # ----------------------------------------------------------------- Algorithm 1, both levels
    def arrive(self, job: Job) -> EventResult:
        """Algorithm 1 at the job's level, then the other level's Compact; under a variant with
        ``filler_reserve`` the arrival must also keep the two-level reserve (``_reserve_margin``).
        Under a chooser the event runs on a copy that is kept only if it is applied."""
        k = self.topology.panels_per_domain
        # an arrival takes at most K free panels per instance (a panel-slot) or adds one to the
        # GPU fillers' need: with this margin no trial is needed
        if self.ties is None and (not self.variant.filler_reserve or self._reserve_margin() >= (k + 1) * job.w):
            return self._arrive_here(job)
        trial = self._trial()
        res = trial._guarded(lambda: trial._arrive_here(job))
        if res.ok and self.variant.filler_reserve and trial._reserve_margin() < 0:
            return EventResult.refused("does not fit: a filler of one level would lose its seat to return to")
        if res.ok:
            self._adopt(trial)
        return res

    def _reserve_margin(self) -> int:
        """The repaired reserve across both levels: free panels minus the free panels the fillers
        of both levels would need if every one of them had to go back at once.

        A free panel (no item of either level) is a seat for both: one 1-panel filler, or eight
        1-GPU fillers once it becomes a GPU-level pool panel; a GPU-level filler first takes the
        room of the GPU-level pool panels, which nothing else uses. Every re-seat then uses one
        free panel per panel-level filler and one per eight GPU-level fillers, whichever level
        and whichever panel ``Remove`` picks, so a margin ≥ 0 after every arrival keeps every
        later departure legal (docs/repaired.md). At K = 1 the panel level has no fillers and a
        free panel is an empty node: exactly the flat reserve."""
        gpu, panel = self._level[GPU], self._panel()
        free = gpu.empty_count()
        need_gpu = max(0, G_PANEL * free - gpu._seats_minus_fillers())  # GPU fillers beyond pool room
        panel_fillers = panel._counts[1] - sum(len(p) for p in panel.pool)
        return free - panel_fillers - _ceil_div(need_gpu, G_PANEL)

    def _arrive_here(self, job: Job) -> EventResult:
        k = self.topology.panels_per_domain
        check_hier_job(job, k)
        if job.id in self._jobs:
            raise ValueError(f"job {job.id} is already running")
        level = self.level_of(job.g)
        g = job.g if level == GPU else panel_demand(job.g)
        if instance_class(job.g, k) == MULTI and g > MAX_TABLE_P:
            return EventResult.refused(f"no panel-slot width: eq. (23) defines w_p★(p) for p ≤ 8, p={g}")
        res = self._level[level].arrive(Job(job.id, g, job.w))
        if not res.ok:
            return res
        self._jobs[job.id] = (level, job)
        self._sync(level, self._job_nodes(level, job.id) | _moved(res.migrations))
        return EventResult.applied(self._translate(level, res.migrations) + self._other_compact(level, True))

    def depart(self, job_id: int) -> EventResult:
        if job_id not in self._jobs:
            raise ValueError(f"job {job_id} is not running")
        if self.ties is None:
            return self._depart_here(job_id)
        trial = self._trial()
        res = trial._guarded(lambda: trial._depart_here(job_id))
        if res.ok:
            self._adopt(trial)
        return res

    def _depart_here(self, job_id: int) -> EventResult:
        level, _ = self._jobs[job_id]
        held = self._job_nodes(level, job_id)
        res = self._level[level].depart(job_id)
        if not res.ok:
            return res
        del self._jobs[job_id]
        self._sync(level, held | _moved(res.migrations))
        return EventResult.applied(self._translate(level, res.migrations) + self._other_compact(level, False))

    def _other_compact(self, level: str, arrival: bool) -> tuple[Migration, ...]:
        """D.4: after the event's own level ran Algorithm 1, the other level's Compact runs."""
        other = PANEL if level == GPU else GPU
        v = self.variant
        if not (v.compact_on_arrival if arrival else v.compact_on_departure):
            return ()
        moves = self._level[other].compact()
        self._sync(other, _moved(moves))
        return self._translate(other, moves)

    def _translate(self, level: str, moves: tuple[Migration, ...] | list[Migration]) -> tuple[Migration, ...]:
        """GPU-level moves already name panels; panel-level moves are re-expressed (reading H6)."""
        if level == GPU:
            return tuple(moves)
        first = self.topology.panels_of
        return tuple(Migration(m.job, G_PANEL * m.g, first(m.src).start, first(m.dst).start, f"panel-{m.kind}")
                     for m in moves)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _moved(moves: Iterable[Migration]) -> set[int]:
    return {n for m in moves for n in (m.src, m.dst)}
