"""The hierarchical ABS state space Σhier (seeds/000 Appendix D.3): the state of hierarchical
COMPASS, its membership test and the domain-aware placement it realises.

Kept apart from the scheduler (``heuristics.gpu.hier_compass``) as ``abs_space`` is kept apart
from ``compass``: the policy interface (``heuristics.gpu.policy``) names ``HierView`` as a state
type without importing any scheduler.
"""
from __future__ import annotations

from typing import NamedTuple

from heuristics.gpu.abs_space import EMPTY, POOL, SLOTTED, AbsView, NodeView, in_abs, view_placement
from heuristics.gpu.cluster import Instance
from heuristics.gpu.hier_cluster import G_PANEL, HierPlacement, Span, Topology

MAX_TABLE_P = 8  # eq. (23) gives w_p★(p) for p ≤ 8 only (reading H3 of hier_compass)


class HierView(NamedTuple):
    """The whole hierarchical state: the panel level over every domain (capacity K) and the GPU
    level over every panel (capacity 8); a node a level does not use is EMPTY in its view."""

    panels_per_domain: int
    panel: AbsView
    gpu: AbsView

    @property
    def topology(self) -> Topology:
        return Topology(len(self.panel.nodes), self.panels_per_domain)


def panel_used(nd: NodeView) -> int:
    """Panels a domain's panel-level items occupy: anchors, fillers and panel-pool units (a
    panel-slotted domain may hold pool units beside its slots, reading H4)."""
    return len(nd.pool) + sum(s.anchor_g + len(s.fillers) for s in nd.slots)


def panel_reserved(nd: NodeView) -> int:
    """Panels the panel level holds in a domain: its slots' widths (vacancy included) and its
    pool units; the GPU level may not use them (reading H1)."""
    return len(nd.pool) + sum(s.width for s in nd.slots)


def gpu_panels(view: HierView, d: int) -> int:
    """Panels of domain ``d`` holding GPU-level work."""
    return sum(1 for p in view.topology.panels_of(d) if view.gpu.nodes[p].kind != EMPTY)


def reserved_panels(view: HierView, d: int) -> tuple[int, ...]:
    """Which panels of domain ``d`` the panel level's items occupy: the highest-index panels
    without GPU-level work, as many as ``panel_reserved`` (panels inside a domain are
    interchangeable at the panel level; this one rule fixes the layout and the GPU level's
    blocked panels alike)."""
    r = panel_reserved(view.panel.nodes[d])
    free = [p for p in view.topology.panels_of(d) if view.gpu.nodes[p].kind == EMPTY]
    return tuple(free[len(free) - r:]) if r else ()


def hier_abs_violations(view: HierView) -> list[str]:
    """Every condition of Σhier (readings H1, H4) that ``view`` breaks; empty = member.

    GPU level: the flat ABS of capacity 8 (``in_abs``). Panel level: the flat ABS of capacity K
    with panel-slot widths, where a domain-filling slot (anchor p = K, width K) is checked apart
    (alone on its domain, no fillers) because eq. (3)'s table does not cover it, and where a
    panel-slotted domain may also hold a panel-pool region (D.5, reading H4). Per domain, the
    panel level's slots and units and the GPU level's panels fit in its K panels (reading H1).
    """
    k = view.panels_per_domain
    out = [f"GPU level: {m}" for m in in_abs(view.gpu)]
    if len(view.gpu.nodes) != k * len(view.panel.nodes):
        return out + [f"GPU level has {len(view.gpu.nodes)} panels, expected {k}·{len(view.panel.nodes)}"]
    table_nodes = []
    for d, nd in enumerate(view.panel.nodes):
        keep = []
        for s in nd.slots:
            if s.anchor_g == k and k > 1:
                if s.width != k or s.fillers or len(nd.slots) != 1 or nd.pool:
                    out.append(f"panel level: domain {d}: domain-filling slot must be alone, width {k}, no fillers")
            elif s.anchor_g > MAX_TABLE_P:
                out.append(f"panel level: domain {d}: anchor p={s.anchor_g} has no eq. (23) width")
            else:
                keep.append(s)
        if panel_reserved(nd) + gpu_panels(view, d) > k:
            out.append(f"domain {d}: {panel_reserved(nd)} panels held at the panel level and "
                       f"{gpu_panels(view, d)} at the GPU level > K = {k} (reading H1)")
        # The flat ABS check sees the slots alone; a pool region beside them (H4) is bounded by
        # the capacity test above.
        if keep:
            table_nodes.append(NodeView(SLOTTED, (), tuple(keep)) if nd.kind == SLOTTED else nd)
        elif nd.slots:  # only a domain-filling slot (checked above)
            table_nodes.append(NodeView(POOL, nd.pool) if nd.pool else NodeView(EMPTY))
        else:
            table_nodes.append(nd)
    out += [f"panel level: {m}" for m in in_abs(AbsView(k, tuple(table_nodes)))]
    return out


def layout(view: HierView) -> HierPlacement:
    """The domain-aware placement a hierarchical state realises: GPU-level instances on their
    panels; a domain's panel-level items on its ``reserved_panels`` in order — each slot's
    anchor panels, then one panel per filler, then its vacancy — then its pool units."""
    t = view.topology
    panels = [list(insts) for insts in view_placement(view.gpu).nodes]
    spans: list[Span] = []
    for d, nd in enumerate(view.panel.nodes):
        seats = iter(reserved_panels(view, d))
        for s in nd.slots:
            region = [next(seats) for _ in range(s.width)]
            spans.append(Span(s.anchor_job, G_PANEL * s.anchor_g, tuple(region[:s.anchor_g])))
            for p, j in zip(region[s.anchor_g:], s.fillers):
                panels[p].append(Instance(j, G_PANEL))
        for j in nd.pool:
            panels[next(seats)].append(Instance(j, G_PANEL))
    return HierPlacement(t, tuple(tuple(p) for p in panels), tuple(spans))
