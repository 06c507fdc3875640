"""The Anchor-Based Space Σ of COMPASS-ABS (seeds/000 §4.2, Definitions 1–5, eq. (3)–(8)).

A frozen view of an ABS state, the membership check ``in_abs`` (which names the condition that
fails) and the counts that Theorem 1 and Lemma A.2 talk about. The scheduler itself lives in
``heuristics.gpu.compass``; this module is what the verifier reads.
"""
from __future__ import annotations

from typing import Final, NamedTuple

from heuristics.gpu.cluster import Instance, Placement

# Final: the compiled build inlines a Final literal where a plain module name is a dict look-up per use
EMPTY: Final = "empty"
POOL: Final = "pool"
SLOTTED: Final = "slotted"
SLOT_WIDTHS: Final = (2, 4, 8)


def slot_width(g: int) -> int:
    """w★(g), eq. (3): 2 for g = 2, 4 for g ∈ {3, 4}, 8 for g ∈ {5..8}."""
    if g == 2:
        return 2
    if g in (3, 4):
        return 4
    if 5 <= g <= 8:
        return 8
    raise ValueError(f"w★ is defined for g in 2..8, got {g}")


def is_fuf(g: int) -> bool:
    """Fragmentation-unfriendly demand (§4.1): g ∈ {3, 5, 6, 7}."""
    return g in (3, 5, 6, 7)


class SlotView(NamedTuple):
    """A slot (Definition 1–3): width w(s), anchor a(s) (job id and demand), filler set F(s)."""

    width: int
    anchor_job: int
    anchor_g: int
    fillers: tuple[int, ...]  # job ids of the 1-GPU fillers

    @property
    def vacancy(self) -> int:
        """Free GPUs inside the slot: w(s) − g_a(s) − |F(s)|."""
        return self.width - self.anchor_g - len(self.fillers)


class NodeView(NamedTuple):
    kind: str  # EMPTY | POOL | SLOTTED
    pool: tuple[int, ...] = ()  # P(n): job ids of 1-GPU instances on a pool node
    slots: tuple[SlotView, ...] = ()  # S(n) on a slotted node

    def profiled(self) -> int:
        return sum(s.width for s in self.slots)

    def used(self) -> int:
        if self.kind == POOL:
            return len(self.pool)
        return sum(s.anchor_g + len(s.fillers) for s in self.slots)


class AbsView(NamedTuple):
    capacity: int
    nodes: tuple[NodeView, ...]


def in_abs(view: AbsView) -> list[str]:
    """Every condition of Definitions 1–5 / eq. (4)–(8) that ``view`` breaks (empty = σ ∈ Σ)."""
    G = view.capacity
    out: list[str] = []
    for n, node in enumerate(view.nodes):
        where = f"node {n}"
        if node.kind == EMPTY:
            if node.pool or node.slots:
                out.append(f"{where}: type empty but holds instances (eq. 7)")
        elif node.kind == POOL:
            if node.slots:
                out.append(f"{where}: pool node holds slots (Definition 5)")
            if not node.pool:
                out.append(f"{where}: pool node with no instance should be empty (eq. 7)")
            if len(node.pool) > G:
                out.append(f"{where}: |P(n)| = {len(node.pool)} > G (Definition 5)")
        elif node.kind == SLOTTED:
            if node.pool:
                out.append(f"{where}: slotted node holds pool instances (eq. 7)")
            if not node.slots:
                out.append(f"{where}: slotted node with no slot (Definition 4)")
            if node.profiled() > G:
                out.append(f"{where}: slot widths sum to {node.profiled()} > G (SlotConf, eq. 5)")
            for k, s in enumerate(node.slots):
                sw = f"{where} slot {k}"
                if s.width not in SLOT_WIDTHS:
                    out.append(f"{sw}: width {s.width} not in {{2,4,8}} (Definition 1)")
                if not 2 <= s.anchor_g <= G:
                    out.append(f"{sw}: anchor demand {s.anchor_g} not a multi-GPU instance (Definition 2)")
                elif s.width != slot_width(s.anchor_g):
                    out.append(f"{sw}: width {s.width} != w★({s.anchor_g}) (Definition 2, eq. 3)")
                if s.anchor_g + len(s.fillers) > s.width:
                    out.append(f"{sw}: g_a + |F| = {s.anchor_g + len(s.fillers)} > w(s) (eq. 4)")
        else:
            out.append(f"{where}: unknown node type {node.kind!r} (eq. 6)")
    return out


def nonfull_slotted(view: AbsView) -> int:
    """Slotted nodes using fewer than G GPUs (Theorem 1, first part)."""
    return sum(1 for nd in view.nodes if nd.kind == SLOTTED and nd.used() < view.capacity)


def nonfull_pool(view: AbsView) -> int:
    """Pool nodes holding fewer than G instances (Theorem 1, second part)."""
    return sum(1 for nd in view.nodes if nd.kind == POOL and len(nd.pool) < view.capacity)


def unsaturated_fuf_slots(view: AbsView) -> int:
    """FUF-anchored slots with g_a + |F| < w(s): Lemma A.2 says there are none under WCC."""
    return sum(
        1 for nd in view.nodes for s in nd.slots if is_fuf(s.anchor_g) and s.vacancy > 0
    )


def view_placement(view: AbsView) -> Placement:
    """The plain placement (instances per node) that an ABS state realises."""
    nodes = []
    for nd in view.nodes:
        insts = [Instance(j, 1) for j in nd.pool]
        for s in nd.slots:
            insts.append(Instance(s.anchor_job, s.anchor_g))
            insts.extend(Instance(j, 1) for j in s.fillers)
        nodes.append(tuple(insts))
    return Placement(view.capacity, tuple(nodes))
