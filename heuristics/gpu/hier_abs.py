"""The hierarchical ABS state space Σhier (seeds/000 Appendix D.3): the state of hierarchical
COMPASS, its membership test and the domain-aware placement it realises.

Kept apart from the scheduler (``heuristics.gpu.hier_compass``) as ``abs_space`` is kept apart
from ``compass``: the policy interface (``heuristics.gpu.policy``) names ``HierView`` as a state
type without importing any scheduler.
"""
from __future__ import annotations

from typing import NamedTuple

from heuristics.gpu.abs_space import EMPTY, AbsView, NodeView, in_abs, view_placement
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
