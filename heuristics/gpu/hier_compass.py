"""Hierarchical COMPASS-ABS for multi-panel NVLink domains (seeds/000 Appendix D.3–D.4).

Two instances of the flat scheduler (``heuristics.gpu.compass.Compass``) composed, not a second copy of
the operators:

* the **GPU level** — ``Compass(nodes = panels, capacity = 8, variant)``: Place / Remove / Compact
  of §4.3 with the panel as the node (sub-panel instances, g ≤ 7);
* the **panel level** — ``Compass(nodes = domains, capacity = K, variant with width = w_p★)``: the
  same operators with the panel as the atomic unit and the domain as the node (D.3: "Σpanel mirrors
  the ABS construction of Section 4.2 verbatim under two substitutions"). Its 1-unit instances are
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

H1. *Which panels the GPU level may use; how GPU-level work appears to the panel level.* Appendix D
    says neither. Reading: **a domain belongs to at most one level at a time.** A domain holding a
    panel-level item (a panel-pool or panel-slotted domain in Σpanel) is invisible to the GPU level
    — its unprofiled panels stay idle; a domain with any GPU-level work is invisible to the panel
    level; a domain with nothing on it is open to both. This is a subset of the paper's Σhier
    ("the Cartesian product across domains of Σpanel, with the internal state of each
    non-saturated panel still drawn from the GPU-level Σ"): in a panel-level domain the
    non-saturated panels are GPU-level *empty*. It keeps the two populations disjoint, as D.4's
    "do not interfere" requires, with no eviction rule (which the paper does not give). The other
    level's nodes are put out of service in place (kind ``blocked``, see ``HierCompass``).
H2. *g = 8.* D.3 lists g ≤ 8 as sub-panel (GPU level) and also calls g = 8 instances panel-fillers;
    eq. (25) counts n_8 as the panel-level fillers, so g = 8 goes to the panel level as a 1-panel
    unit. At K = 1 the 1-panel unit and the domain-filling instance coincide and are handled as a
    unit (a capacity-1 domain admits no slot). ``eight_gpu_level="gpu"`` takes the other reading
    (g = 8 a width-8 slot at the GPU level; the panel level then has no fillers).
H3. *Slot widths at the panel level.* w_p★(p) of eq. (23) is defined for p ≤ 8 only; p = K uses the
    width-K degenerate slot. For K ≥ 10 a demand p ∈ 9..K−1 has no width: such an arrival is
    refused with that reason. For K ∈ {6, 7}, p ∈ 5..K−1 gets w_p★ = 8 > K: never placeable, so
    refused as "does not fit" (the literal widths, not a repair).
H4. *K not a power of two* (e.g. K = 9): the panel level is the flat ABS on capacity K verbatim; a
    domain's panels not covered by slot widths are unprofiled room D(d) = K − Σ w (e.g. one panel
    beside a width-8 panel-slot), not a panel-pool (D.5 calls that residual panel "the panel-pool
    slot"; the verbatim mirror has no mixed pool/slotted domain).
H5. *Node order for "pick any" ties.* Each level's Compass sees its usable nodes in global index
    order, so its lowest-index rules pick the lowest global panel / domain.
H6. *Migrations.* GPU-level migrations name panels. A panel-level migration moves a whole
    multi-panel instance or 1-panel unit between domains; it is reported with g in GPUs (8p),
    src/dst = the first panel of the source/destination domain, kind prefixed ``panel-``
    (panels inside a domain are interchangeable at the panel level; ``hier_placement`` lays them
    out slot by slot).

Findings and the claims that check all this: docs/hierarchical.md, ``proofs_check/gpu/hier_claims.py``.
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Iterable

from heuristics.gpu.abs_space import EMPTY, AbsView, NodeView, slot_width
from heuristics.gpu.cluster import G_DEFAULT, Job, Placement
from heuristics.gpu.compass import BLOCKED, VARIANTS, Compass, Variant
from heuristics.gpu.hier_abs import MAX_TABLE_P, HierView, gpu_owned, layout, panel_owned
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

GPU, PANEL = "gpu", "panel"
# BLOCKED (heuristics.gpu.compass): a node held by the other level (see HierCompass._install)


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


class HierCompass:
    """Hierarchical COMPASS-ABS on ``n_domains`` domains of ``panels_per_domain`` panels;
    implements ``heuristics.gpu.policy.Policy`` with the panels as its nodes (capacity 8)."""

    capacity = G_DEFAULT

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
                        {GPU: Compass(1, G_PANEL, variant), PANEL: Compass(1, k, panel_variant(variant, k))})
        self._install(HierView(k, AbsView(k, (NodeView(EMPTY),) * n_domains),
                               AbsView(G_PANEL, (NodeView(EMPTY),) * topology.n_panels)))

    def _configure(self, topology: Topology, variant: Variant, eight_gpu_level: str, proto: dict[str, Compass]) -> None:
        self.topology, self.variant, self.eight_gpu_level, self._proto = topology, variant, eight_gpu_level, proto
        self.name = f"hier-compass-{variant.name}" + ("" if eight_gpu_level == PANEL else "-g8gpu")
        self.n_nodes = topology.n_panels

    # ----------------------------------------------------------------- state
    # Each level is one Compass over ALL its nodes (panels / domains); a node the other level holds
    # is taken out of service by giving it the kind BLOCKED. Compass re-indexes a node by its kind
    # (``Compass._touch``) and every operator reads only its indexes (empty / pool by occupancy /
    # slotted by room / vacancy), none of which holds a node of an unknown kind — so a blocked
    # node is invisible to Place, Remove, Compact and admission, and a domain changing owner costs
    # K re-indexings instead of a rebuild. Views show blocked nodes as EMPTY.
    def _install(self, view: HierView) -> None:
        """Make ``view`` the state (both levels rebuilt from it)."""
        k = view.panels_per_domain
        g_own, p_own = gpu_owned(view), panel_owned(view)
        gpu = [NodeView(BLOCKED) if p // k in p_own else nd for p, nd in enumerate(view.gpu.nodes)]
        panel = [NodeView(BLOCKED) if d in g_own else nd for d, nd in enumerate(view.panel.nodes)]
        self._level = {GPU: self._proto[GPU].with_state(AbsView(G_PANEL, tuple(gpu))),
                       PANEL: self._proto[PANEL].with_state(AbsView(k, tuple(panel)))}
        self._gpu_owned, self._panel_owned = g_own, p_own
        self._jobs: dict[int, tuple[str, Job]] = {}
        for level, scale in ((GPU, 1), (PANEL, G_PANEL)):
            for j, job in self._level[level].running().items():
                self._jobs[j] = (level, Job(j, job.g * scale, job.w))

    def _full(self, level: str) -> AbsView:
        """The level's view over every node of its kind (EMPTY where it may not go)."""
        view = self._level[level].abs_view()
        return view._replace(nodes=tuple(NodeView(EMPTY) if nd.kind == BLOCKED else nd for nd in view.nodes))

    def _sync(self, level: str, nodes: set[int]) -> None:
        """After ``level`` changed ``nodes`` (its own indices), re-derive which of their domains it
        holds and block / unblock those domains at the other level. Only touched domains are
        re-checked, so an event costs O(touched · K), not O(cluster)."""
        c, k = self._level[level], self.topology.panels_per_domain
        if level == GPU:
            held = self._gpu_owned
            for d in {n // k for n in nodes}:
                now = any(c.kind[p] != EMPTY and c.kind[p] != BLOCKED for p in self.topology.panels_of(d))
                if now != (d in held):
                    _set_kind(self._level[PANEL], d, BLOCKED if now else EMPTY)
                    held = held | {d} if now else held - {d}
            self._gpu_owned = held
        else:
            held = self._panel_owned
            for d in nodes:
                now = c.kind[d] != EMPTY and c.kind[d] != BLOCKED
                if now != (d in held):
                    for p in self.topology.panels_of(d):
                        _set_kind(self._level[GPU], p, BLOCKED if now else EMPTY)
                    held = held | {d} if now else held - {d}
            self._panel_owned = held

    def owned_domains(self) -> tuple[frozenset[int], frozenset[int]]:
        """(domains with GPU-level work, domains with panel-level items) — reading H1."""
        return self._gpu_owned, self._panel_owned

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

    # ----------------------------------------------------------------- Algorithm 1, two levels
    def level_of(self, g: int) -> str:
        """Dispatch of D.4: sub-panel → GPU level, every other class → panel level; g = 8 by
        ``eight_gpu_level`` (reading H2: the panel level; "gpu" is the other reading of D.3)."""
        if g == G_PANEL:
            return self.eight_gpu_level
        return GPU if instance_class(g, self.topology.panels_per_domain) == SUB_PANEL else PANEL

    def arrive(self, job: Job) -> EventResult:
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


def _moved(moves: Iterable[Migration]) -> set[int]:
    return {n for m in moves for n in (m.src, m.dst)}


def _set_kind(c: Compass, n: int, kind: str) -> None:
    c.set_blocked(n, kind == BLOCKED)


def build_hier_compass(n_nodes: int, capacity: int = G_DEFAULT, panels_per_domain: int | None = None,
                       variant: str = "literal", eight_gpu_level: str = PANEL) -> HierCompass:
    """The registry's constructor (``heuristics.gpu.registry``): ``n_nodes`` panels of 8 GPUs
    grouped into domains of ``panels_per_domain``, the node-count signature every policy shares."""
    if panels_per_domain is None:
        raise ValueError("hier-compass needs the option panels_per_domain (K panels per NVLink domain)")
    if capacity != G_PANEL:
        raise ValueError(f"hier-compass runs on panels of 8 GPUs, got capacity={capacity}")
    if n_nodes % panels_per_domain:
        raise ValueError(f"n_nodes={n_nodes} panels is not a multiple of panels_per_domain={panels_per_domain}")
    return HierCompass(n_nodes // panels_per_domain, panels_per_domain, variant, eight_gpu_level)
