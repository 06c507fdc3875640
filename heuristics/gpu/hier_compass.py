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
from typing import NamedTuple

from heuristics.gpu.abs_space import EMPTY, AbsView, NodeView, in_abs, slot_width, view_placement
from heuristics.gpu.cluster import G_DEFAULT, Instance, Job, Placement
from heuristics.gpu.compass import BLOCKED, VARIANTS, Compass, Variant
from heuristics.gpu.hier_cluster import (
    G_PANEL,
    MULTI,
    SUB_PANEL,
    HierPlacement,
    Span,
    Topology,
    check_hier_job,
    check_topology,
    flatten,
    instance_class,
    panel_demand,
)
from heuristics.gpu.policy import EventResult, Migration, register

GPU, PANEL = "gpu", "panel"
# BLOCKED (heuristics.gpu.compass): a node held by the other level (see HierCompass._install)
MAX_TABLE_P = 8  # eq. (23) gives w_p★(p) for p ≤ 8 only (reading H3)


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


class HierView(NamedTuple):
    """The whole hierarchical state: the panel level over every domain (capacity K) and the GPU
    level over every panel (capacity 8); a node a level does not use is EMPTY in its view."""

    panels_per_domain: int
    panel: AbsView
    gpu: AbsView

    @property
    def topology(self) -> Topology:
        return Topology(len(self.panel.nodes), self.panels_per_domain)


def gpu_owned(view: HierView) -> frozenset[int]:
    """Domains with GPU-level work on at least one panel."""
    k = view.panels_per_domain
    return frozenset(p // k for p, nd in enumerate(view.gpu.nodes) if nd.kind != EMPTY)


def panel_owned(view: HierView) -> frozenset[int]:
    """Domains holding a panel-level item."""
    return frozenset(d for d, nd in enumerate(view.panel.nodes) if nd.kind != EMPTY)


def hier_abs_violations(view: HierView) -> list[str]:
    """Every condition of Σhier (under reading H1) that ``view`` breaks; empty = member.

    GPU level: the flat ABS of capacity 8 (``in_abs``). Panel level: the flat ABS of capacity K
    with panel-slot widths, where a domain-filling slot (anchor p = K, width K) is checked apart
    (alone on its domain, no fillers) because eq. (3)'s table does not cover it. No domain is
    used by both levels.
    """
    k = view.panels_per_domain
    out = [f"GPU level: {m}" for m in in_abs(view.gpu)]
    if len(view.gpu.nodes) != k * len(view.panel.nodes):
        out.append(f"GPU level has {len(view.gpu.nodes)} panels, expected {k}·{len(view.panel.nodes)}")
    table_nodes = []
    for d, nd in enumerate(view.panel.nodes):
        keep = []
        for s in nd.slots:
            if s.anchor_g == k and k > 1:
                if s.width != k or s.fillers or len(nd.slots) != 1:
                    out.append(f"panel level: domain {d}: domain-filling slot must be alone, width {k}, no fillers")
            elif s.anchor_g > MAX_TABLE_P:
                out.append(f"panel level: domain {d}: anchor p={s.anchor_g} has no eq. (23) width")
            else:
                keep.append(s)
        emptied = bool(nd.slots) and not keep  # only a domain-filling slot was there
        table_nodes.append(NodeView(EMPTY) if emptied else nd._replace(slots=tuple(keep)))
    out += [f"panel level: {m}" for m in in_abs(AbsView(k, tuple(table_nodes)))]
    both = gpu_owned(view) & panel_owned(view)
    out += [f"domain {d}: used by both levels (reading H1)" for d in sorted(both)]
    return out


def layout(view: HierView) -> HierPlacement:
    """The domain-aware placement a hierarchical state realises: GPU-level instances on their
    panels; in a panel-level domain, its slots laid out in order from its first panel (anchor's p
    panels, then one panel per filler, then the vacancy), then its pool units one per panel."""
    t = view.topology
    panels = [list(insts) for insts in view_placement(view.gpu).nodes]
    spans: list[Span] = []
    for d, nd in enumerate(view.panel.nodes):
        cursor = t.panels_of(d).start
        for s in nd.slots:
            spans.append(Span(s.anchor_job, G_PANEL * s.anchor_g, tuple(range(cursor, cursor + s.anchor_g))))
            for i, j in enumerate(s.fillers):
                panels[cursor + s.anchor_g + i].append(Instance(j, G_PANEL))
            cursor += s.width
        for i, j in enumerate(nd.pool):
            panels[cursor + i].append(Instance(j, G_PANEL))
    return HierPlacement(t, tuple(tuple(p) for p in panels), tuple(spans))


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

    def with_state(self, view: HierView) -> "HierCompass":
        """A scheduler of the same variant whose state is ``view`` (any domain count, same K)."""
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


def _moved(moves) -> set[int]:
    return {n for m in moves for n in (m.src, m.dst)}


def _set_kind(c: Compass, n: int, kind: str) -> None:
    c.set_blocked(n, kind == BLOCKED)


@register("hier-compass")
def _build_hier(n_nodes: int, capacity: int = G_DEFAULT, panels_per_domain: int | None = None,
                variant: str = "literal", eight_gpu_level: str = PANEL, **opts) -> HierCompass:
    """Registry entry: ``n_nodes`` panels of 8 GPUs grouped into domains of ``panels_per_domain``."""
    if panels_per_domain is None:
        raise ValueError("hier-compass needs the option panels_per_domain (K panels per NVLink domain)")
    if capacity != G_PANEL:
        raise ValueError(f"hier-compass runs on panels of 8 GPUs, got capacity={capacity}")
    if n_nodes % panels_per_domain:
        raise ValueError(f"n_nodes={n_nodes} panels is not a multiple of panels_per_domain={panels_per_domain}")
    return HierCompass(n_nodes // panels_per_domain, panels_per_domain, variant, eight_gpu_level)
