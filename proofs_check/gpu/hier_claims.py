"""Claims about the hierarchical scheduler (seeds/000 Appendix D): ``thm2``, ``thm2-lifted``, ``k1-reduces``.

``thm2`` — Theorem 2 (eq. 26) under both Workload Composition Conditions (eq. 24 and 25) holding
at every event of the trajectory, one result per part:

* ``thm2.gpu-slotted`` / ``thm2.gpu-pool`` — across the cluster at most one non-full slotted panel
  and at most one non-full pool panel at the GPU level (part 1);
* ``thm2.gpu-sif`` — SIF_GPU = (Φπ_GPU − Φ★_GPU)/N_p ≤ 2/N_p, Φπ_GPU the partial panels,
  Φ★_GPU exact over panels under the intra-domain constraint (``hier_cluster.gpu_phi_star``);
* ``thm2.panel-slot`` / ``thm2.panel-pool`` — in every domain hosting a multi-panel anchor at most
  one non-full panel-slot region (a panel-slot with g_a + |F| < w, in panels) and at most one
  non-full panel-pool region (part 2). Under readings H1/H4 an anchored domain is panel-slotted
  and holds no pool, so the pool count is 0 by construction; the check still runs;
* ``thm2.panel-sif`` — per anchored domain, SIF_panel(d) ≤ φ(d)/K ≤ 2/K with φ(d) its non-full
  regions (the paper's own step: F★ ≥ 0).

``thm2-lifted`` — not claimed by the paper: Theorem 1 read verbatim on the panel level (node ↦
domain, as D.3's "mirrors ... verbatim" and D.4's proof sketch suggest): at most one non-full
panel-slotted domain and one non-full panel-pool domain cluster-wide, and
SIF_panel = (Φπ_panel − Φ★_panel)/D ≤ 2/D with Φ★_panel = ``panel_phi_star`` (flat model on
capacity K). Reported separately so a failure of the lift does not read as a failure of Theorem 2.

``k1-reduces`` — K = 1 gives exactly the flat scheduler: from every state the flat COMPASS reaches
(N ≤ max_domains, exhaustive BFS, the explorer's canonical forms), every event gives the same
(ok, migrations) and the same placement in ``HierCompass(N, 1)``.

Search: breadth-first from the empty cluster for each D = min..max domains and each K, over
canonical hierarchical states (domains interchangeable, panels inside a domain interchangeable,
jobs relabelled 0..k-1); arrivals of every legal demand for K (or ``demands``), w = 1..max_w with
w·g ≤ free GPUs, ≤ max_jobs running; every departure; ≤ depth events. The first violation is a
shortest trace. Reporting and verdict rules are the explorer's (``proofs_check.explorer``):
states, depth, queue left; holds / violated / vacuous (premise never met) / inconclusive (budget).
Beyond the exhaustive range, ``samples`` seeded random WCC-keeping sequences on up to
``sample_domains`` domains may add a counterexample, never a proof.
"""
from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import asdict, dataclass
from fractions import Fraction
from itertools import permutations, product
from typing import Any, Callable, Hashable, Iterable

from heuristics.gpu.abs_space import EMPTY, POOL, SLOTTED, AbsView, NodeView, SlotView, nonfull_pool, nonfull_slotted
from heuristics.gpu.cluster import Job
from heuristics.gpu.compass import Compass
from heuristics.gpu.hier_cluster import (
    G_PANEL,
    demand_counts,
    gpu_phi_star,
    panel_counts,
    panel_phi_star,
    partial_panels,
)
from heuristics.gpu.hier_compass import HierCompass, HierView, hier_abs_violations, layout
from oracle.gpu.paper_phi import wcc_holds
from proofs_check.gpu.canonical import canonical
# The hierarchical probes are all state probes (after="any"), which the explorer's _check
# evaluates exactly once per newly reached state, as this search needs.
from proofs_check.explorer import (
    Event,
    Finding,
    PhiUnknown,
    Probe,
    ProbeOutcome,
    SizeStats,
    _check,
    _finding,
    state_to_json,
    trace_to,
)
from proofs_check.verdict import ClaimResult, Verdict

Progress = Callable[[str], None] | None


@dataclass(frozen=True)
class HierBounds:
    """What the hierarchical search covers; printed in every report."""

    max_domains: int = 2
    min_domains: int = 1
    panels: tuple[int, ...] = (1, 2, 3, 9)  # K values
    depth: int = 5
    max_jobs: int = 3
    max_w: int = 2
    max_states: int = 300_000  # distinct states per (K, D); more → inconclusive
    demands: tuple[int, ...] = ()  # () = every legal demand for K
    samples: int = 0  # random sequences per K beyond the exhaustive range
    sample_domains: int = 8
    sample_events: int = 40
    seed: int = 0
    variant: str = "literal"  # the flat COMPASS variant both levels are built from

    def describe(self) -> dict[str, Any]:
        return asdict(self)


def legal_demands(k: int) -> tuple[int, ...]:
    """g = 1..8 and the multi-panel / domain-filling demands 16..8K that have a panel-slot width."""
    multi = tuple(G_PANEL * p for p in range(2, k + 1) if p <= 8 or p == k)
    return tuple(range(1, G_PANEL + 1)) + multi


# --------------------------------------------------------------------------- canonical form
def _relabel(nd: NodeView, lab: dict[int, int]) -> NodeView:
    slots = tuple(sorted(SlotView(s.width, lab[s.anchor_job], s.anchor_g, tuple(sorted(lab[f] for f in s.fillers)))
                         for s in nd.slots))
    return NodeView(nd.kind, tuple(sorted(lab[j] for j in nd.pool)), slots)


def _jobs(view: HierView) -> list[int]:
    out: set[int] = set()
    for nd in view.panel.nodes + view.gpu.nodes:
        out.update(nd.pool)
        for s in nd.slots:
            out.add(s.anchor_job)
            out.update(s.fillers)
    return sorted(out)


def hier_canonical_map(view: HierView) -> tuple[HierView, dict[int, int]]:
    """The representative of ``view`` under domain renumbering, panel renumbering inside a domain
    and job relabelling, and the labelling used (job id → label).

    Exact (never a hash): the least encoding (sorted domain codes) over a candidate set of job
    labellings defined from isomorphism-invariant data only — jobs are ordered by an id-free
    signature (level, node type, container and role of each instance) and only jobs with equal
    signatures are permuted among themselves — so equivalent states have the same candidates and
    the same minimum.
    """
    t = view.topology
    groups: dict[tuple, list[int]] = {}
    for j, sig in sorted(_signatures(view).items()):
        groups.setdefault(sig, []).append(j)
    ordered = [groups[s] for s in sorted(groups)]
    best, best_lab = None, {}
    for choice in product(*(permutations(g) for g in ordered)):
        lab = {j: i for i, j in enumerate(j for perm in choice for j in perm)}
        code = tuple(sorted(
            (_relabel(view.panel.nodes[d], lab), tuple(sorted(_relabel(view.gpu.nodes[p], lab) for p in t.panels_of(d))))
            for d in range(t.n_domains)))
        if best is None or code < best:
            best, best_lab = code, lab
    assert best is not None
    rep = HierView(view.panels_per_domain, AbsView(view.panel.capacity, tuple(d[0] for d in best)),
                   AbsView(view.gpu.capacity, tuple(p for d in best for p in d[1])))
    return rep, best_lab


def _signatures(view: HierView) -> dict[int, tuple]:
    """Id-free description of where each job's instances sit."""
    places: dict[int, list[tuple]] = {}
    for level, nodes in (("p", view.panel.nodes), ("g", view.gpu.nodes)):
        for nd in nodes:
            for j in nd.pool:
                places.setdefault(j, []).append((level, "pool", len(nd.pool)))
            for s in nd.slots:
                places.setdefault(s.anchor_job, []).append((level, "anchor", s.width, s.anchor_g, len(s.fillers)))
                for f in s.fillers:
                    places.setdefault(f, []).append((level, "filler", s.width, s.anchor_g, len(s.fillers)))
    return {j: tuple(sorted(pl)) for j, pl in places.items()}


def hier_canonical(view: HierView) -> HierView:
    return hier_canonical_map(view)[0]


# --------------------------------------------------------------------------- state facts
class HierFacts:
    """Quantities of one hierarchical state that the probes read (lazily, at most once each)."""

    def __init__(self, view: HierView):
        self.view = view
        self.topology = view.topology
        self._hp = None

    @property
    def placement(self):
        if self._hp is None:
            self._hp = layout(self.view)
        return self._hp

    def panel_items(self) -> tuple[int, dict[int, int]]:
        """(1-panel units, {panel demand p ≥ 2: count}) at the panel level."""
        units, multi = 0, {}
        for nd in self.view.panel.nodes:
            units += len(nd.pool)
            for s in nd.slots:
                units += len(s.fillers)
                multi[s.anchor_g] = multi.get(s.anchor_g, 0) + 1
        return units, multi

    def wcc(self) -> tuple[bool, bool]:
        """(eq. 24, eq. 25) on the active instances."""
        sub, _ = demand_counts(self.placement)
        units, multi = self.panel_items()
        vec = [units] + [multi.get(p, 0) for p in range(2, 9)]  # p > 8 carries no coefficient in (25)
        gpu = list(sub)
        gpu[7] = 0  # (24) has no n_8 term
        return wcc_holds(tuple(gpu)), wcc_holds(tuple(vec))

    def anchored_domains(self) -> list[int]:
        return [d for d, nd in enumerate(self.view.panel.nodes) if any(s.anchor_g >= 2 for s in nd.slots)]

    def domain_regions(self, d: int) -> tuple[int, int]:
        """(non-full panel-slot regions, non-full panel-pool regions) of domain ``d``."""
        nd = self.view.panel.nodes[d]
        slots = sum(1 for s in nd.slots if s.vacancy > 0)
        pool = int(nd.kind == POOL and len(nd.pool) < self.topology.panels_per_domain)
        return slots, pool

    def gpu_figures(self) -> dict[str, Any]:
        t = self.topology
        sub, multi = demand_counts(self.placement)
        phi_pi = partial_panels(self.placement)
        out: dict[str, Any] = {"D": t.n_domains, "K": t.panels_per_domain, "N_p": t.n_panels,
                               "n_1..n_8": list(sub), "panel demands": dict(sorted(multi.items())), "Φπ_GPU": phi_pi}
        cert = _settled(gpu_phi_star(sub, multi, t), f"Φ★_GPU for {sub}, {dict(multi)} on {t}")
        out["Φ★_GPU"] = cert.objective
        out["SIF_GPU"] = str(Fraction(phi_pi - cert.objective, t.n_panels))
        out["bound"] = f"2/{t.n_panels}"
        return out

    def panel_figures(self) -> dict[str, Any]:
        t = self.topology
        k = t.panels_per_domain
        units, multi = self.panel_items()
        counts = panel_counts(units, Counter(multi), k)
        used = [nd.used() for nd in self.view.panel.nodes]
        phi_pi = sum(1 for u in used if 0 < u < k)
        cert = _settled(panel_phi_star(counts, t), f"Φ★_panel for {counts} on {t}")
        return {"D": t.n_domains, "K": k, "panel counts n_1..n_K": list(counts), "Φπ_panel": phi_pi,
                "Φ★_panel": cert.objective, "SIF_panel": str(Fraction(phi_pi - cert.objective, t.n_domains)),
                "bound": f"2/{t.n_domains}"}


def _settled(cert, what: str):
    """An optimal certificate, else PhiUnknown (solver limit) or RuntimeError: a reached state is a
    packing, so 'infeasible' would be an oracle error, never a verdict."""
    if cert.status == "unknown":
        raise PhiUnknown(f"{what}: solver limit hit")
    if cert.status != "optimal":
        raise RuntimeError(f"{what}: oracle says {cert.status} for a state that exists")
    return cert


# --------------------------------------------------------------------------- probes
def _gpu_slotted(f: HierFacts) -> dict | None:
    k = nonfull_slotted(f.view.gpu)
    return None if k <= 1 else {**f.gpu_figures(), "non-full slotted panels": k, "bound": 1}


def _gpu_pool(f: HierFacts) -> dict | None:
    k = nonfull_pool(f.view.gpu)
    return None if k <= 1 else {**f.gpu_figures(), "non-full pool panels": k, "bound": 1}


def _gpu_sif(f: HierFacts) -> dict | None:
    if partial_panels(f.placement) <= 2:  # Φ★ ≥ 0: no solve needed
        return None
    fig = f.gpu_figures()
    return None if fig["Φπ_GPU"] - fig["Φ★_GPU"] <= 2 else fig


def _per_domain(select: Callable[[int, int], int], limit: int, what: str) -> Callable[[HierFacts], dict | None]:
    def test(f: HierFacts) -> dict | None:
        bad = {}
        for d in f.anchored_domains():
            n = select(*f.domain_regions(d))
            if n > limit:
                bad[d] = n
        if not bad:
            return None
        k = f.topology.panels_per_domain
        return {what: bad, "bound": limit, "SIF_panel(d) bound": f"2/{k}",
                "SIF_panel(d) ≤ φ(d)/K": {d: str(Fraction(sum(f.domain_regions(d)), k)) for d in bad}}
    return test


def _lifted(kind: str) -> Callable[[HierFacts], dict | None]:
    def test(f: HierFacts) -> dict | None:
        k = nonfull_slotted(f.view.panel) if kind == SLOTTED else nonfull_pool(f.view.panel)
        return None if k <= 1 else {**f.panel_figures(), f"non-full panel-{kind} domains": k, "bound": 1}
    return test


def _lifted_sif(f: HierFacts) -> dict | None:
    k = f.topology.panels_per_domain
    if sum(1 for nd in f.view.panel.nodes if 0 < nd.used() < k) <= 2:
        return None
    fig = f.panel_figures()
    return None if fig["Φπ_panel"] - fig["Φ★_panel"] <= 2 else fig


def _abs(f: HierFacts) -> dict | None:
    bad = hier_abs_violations(f.view)
    return {"violated conditions": bad} if bad else None


def _has_gpu(kind: str) -> Callable[[HierFacts], bool]:
    return lambda f: any(nd.kind == kind for nd in f.view.gpu.nodes)


def _has_anchor(f: HierFacts) -> bool:
    return bool(f.anchored_domains())


def _has_panel(kind: str) -> Callable[[HierFacts], bool]:
    return lambda f: any(nd.kind == kind for nd in f.view.panel.nodes)


def _running(f: HierFacts) -> bool:
    return bool(_jobs(f.view))


@dataclass(frozen=True)
class HierClaim:
    id: str
    ref: str
    premise: str
    property: str
    probe: Probe | None  # None: k1-reduces (its own check)
    wcc: bool = True


_WCC = "eq. (24) n1 ≥ n3+3n5+2n6+n7 and eq. (25) n8 ≥ n3ᵖ+3n5ᵖ+2n6ᵖ+n7ᵖ hold after every event"
_ANCHOR = "; sometimes: a domain hosts a multi-panel anchor"

HIER_CATALOGUE: tuple[HierClaim, ...] = (
    HierClaim("thm2.gpu-slotted", "Theorem 2 part 1 (Appendix D.5)", _WCC + "; sometimes: a GPU-level slotted panel",
              "across the cluster at most one panel-resident slotted GPU-region is non-fully-packed",
              Probe("thm2.gpu-slotted", "invariant", _gpu_slotted, premise=_has_gpu(SLOTTED))),
    HierClaim("thm2.gpu-pool", "Theorem 2 part 1 (Appendix D.5)", _WCC + "; sometimes: a GPU-level pool panel",
              "across the cluster at most one panel-resident GPU-pool region is non-fully-packed",
              Probe("thm2.gpu-pool", "invariant", _gpu_pool, premise=_has_gpu(POOL))),
    HierClaim("thm2.gpu-sif", "Theorem 2, eq. (26) first bound", _WCC + "; sometimes: a job is running",
              "SIF_GPU = (Φπ_GPU − Φ★_GPU)/N_p ≤ 2/N_p, Φ★_GPU exact over panels (intra-domain)",
              Probe("thm2.gpu-sif", "invariant", _gpu_sif, premise=_running)),
    HierClaim("thm2.panel-slot", "Theorem 2 part 2 (Appendix D.5)", _WCC + _ANCHOR,
              "in every domain hosting a multi-panel anchor at most one panel-slot region is non-fully-packed",
              Probe("thm2.panel-slot", "invariant", _per_domain(lambda s, p: s, 1, "non-full panel-slots per domain"),
                    premise=_has_anchor)),
    HierClaim("thm2.panel-pool", "Theorem 2 part 2 (Appendix D.5)", _WCC + _ANCHOR,
              "in every domain hosting a multi-panel anchor at most one panel-pool region is non-fully-packed",
              Probe("thm2.panel-pool", "invariant", _per_domain(lambda s, p: p, 1, "non-full panel-pools per domain"),
                    premise=_has_anchor)),
    HierClaim("thm2.panel-sif", "Theorem 2, eq. (26) second bound", _WCC + _ANCHOR,
              "per domain hosting a multi-panel anchor SIF_panel(d) ≤ φ(d)/K ≤ 2/K (φ = non-full regions)",
              Probe("thm2.panel-sif", "invariant", _per_domain(lambda s, p: s + p, 2, "non-full regions per domain"),
                    premise=_has_anchor)),
    HierClaim("thm2-lifted.slotted", "Theorem 1 lifted to the panel level (not claimed by the paper)",
              _WCC + "; sometimes: a panel-slotted domain",
              "at most one panel-slotted domain is non-full (used panels < K), cluster-wide",
              Probe("thm2-lifted.slotted", "invariant", _lifted(SLOTTED), premise=_has_panel(SLOTTED))),
    HierClaim("thm2-lifted.pool", "Theorem 1 lifted to the panel level (not claimed by the paper)",
              _WCC + "; sometimes: a panel-pool domain",
              "at most one panel-pool domain is non-full, cluster-wide",
              Probe("thm2-lifted.pool", "invariant", _lifted(POOL), premise=_has_panel(POOL))),
    HierClaim("thm2-lifted.sif", "Theorem 1 lifted to the panel level (not claimed by the paper)",
              _WCC + "; sometimes: a job is running",
              "SIF_panel = (Φπ_panel − Φ★_panel)/D ≤ 2/D, Φ★_panel exact on capacity K",
              Probe("thm2-lifted.sif", "invariant", _lifted_sif, premise=_running)),
    HierClaim("thm2.abs", "Σhier (Appendix D.3, readings H1–H4)", "none (any event sequence)",
              "every produced state lies in the hierarchical ABS; an operator failure is a violation",
              Probe("thm2.abs", "invariant", _abs, failure_breaks=True), wcc=False),
    HierClaim("k1-reduces", "Appendix D.5 ('K = 1, in which the panel level is trivially empty')",
              "K = 1; every state the flat COMPASS reaches",
              "HierCompass(N, 1) makes the flat COMPASS's decisions: same (ok, migrations), same placement",
              None, wcc=False),
)
HIER_CLAIMS = {c.id: c for c in HIER_CATALOGUE}
THEOREM_2 = tuple(c.id for c in HIER_CATALOGUE if c.id.startswith("thm2."))


def resolve_hier(ids: Iterable[str]) -> list[HierClaim]:
    """Claims named by id or by the prefix before '.'; ValueError when unknown."""
    out: list[HierClaim] = []
    for cid in ids:
        found = [c for c in HIER_CATALOGUE if c.id == cid or c.id.startswith(cid + ".")]
        if not found:
            raise ValueError(f"unknown claim id {cid!r}")
        out.extend(c for c in found if c not in out)
    return out


# --------------------------------------------------------------------------- the search
def _events(view: HierView, running: dict[int, Job], demands: tuple[int, ...], b: HierBounds) -> list[Event]:
    t = view.topology
    used = sum(nd.used() for nd in view.gpu.nodes) + G_PANEL * sum(nd.used() for nd in view.panel.nodes)
    free = G_PANEL * t.n_panels - used
    label = len(running)
    while label in running:
        label += 1
    out = []
    if len(running) < b.max_jobs:
        out = [Event(True, label, g, w) for g in demands for w in range(1, min(b.max_w, free // g) + 1)]
    return out + [Event(False, j, job.g, job.w) for j, job in sorted(running.items())]


def _running_jobs(view: HierView) -> dict[int, Job]:
    """The running jobs a hierarchical state implies (gang: every instance placed), g in GPUs."""
    shape: dict[int, list[int]] = {}
    for scale, nodes in ((G_PANEL, view.panel.nodes), (1, view.gpu.nodes)):
        for nd in nodes:
            for j in nd.pool:
                shape.setdefault(j, [scale, 0])[1] += 1
            for s in nd.slots:
                shape.setdefault(s.anchor_job, [scale * s.anchor_g, 0])[1] += 1
                for f in s.fillers:
                    shape.setdefault(f, [scale, 0])[1] += 1
    return {j: Job(j, g, w) for j, (g, w) in shape.items()}


def _apply(pol, ev: Event):
    return pol.arrive(Job(ev.job, ev.g, ev.w)) if ev.arrive else pol.depart(ev.job)


@dataclass
class HierExploration:
    sizes: list[SizeStats]
    outcomes: dict[str, ProbeOutcome]
    wcc_pruned: bool


def explore_hier(k: int, probes: list[Probe], b: HierBounds, wcc: bool, deadline: float | None,
                 progress: Progress) -> HierExploration:
    """BFS over canonical hierarchical states for D = min..max domains with K = ``k``."""
    demands = b.demands or legal_demands(k)
    outcomes = {p.claim_id: ProbeOutcome() for p in probes}
    sizes: list[SizeStats] = []
    for n in range(b.min_domains, b.max_domains + 1):
        if all(o.finding is not None for o in outcomes.values()):
            break
        stats = _explore_size(k, n, demands, b, probes, outcomes, wcc, deadline, progress)
        sizes.append(stats)
        if not stats.complete:
            break
    return HierExploration(sizes, outcomes, wcc)


def _explore_size(k, n, demands, b, probes, outcomes, wcc, deadline, progress) -> SizeStats:
    t0 = time.perf_counter()
    stats = SizeStats(n)
    proto = HierCompass(n, k, b.variant)
    root = hier_canonical(proto.state_key())
    parents: dict[Hashable, Any] = {root: None}
    stats.distinct = 1
    _check(HierFacts(root), None, root, None, probes, outcomes, parents, n, True)
    frontier, depth = [root], 0
    while frontier and depth < b.depth:
        nxt: list[HierView] = []
        for qi, key in enumerate(frontier):
            now = time.perf_counter()
            if (deadline is not None and now > deadline) or stats.distinct >= b.max_states:
                stats.complete = False
                stats.stop_reason = "time limit" if deadline is not None and now > deadline else f"max-states {b.max_states}"
                stats.queue_left = len(frontier) - qi + len(nxt)
                break
            for ev in _events(key, _running_jobs(key), demands, b):
                pol = proto.with_state(key)
                res = _apply(pol, ev)
                stats.generated += 1
                if not res.ok:
                    if res.reason.startswith("operator failure"):
                        stats.operator_failures += 1
                        for p in probes:
                            out = outcomes[p.claim_id]
                            if p.failure_breaks and out.finding is None:
                                out.finding = _finding(parents, key, n, ev, key, {"operator failure": res.reason}, res.reason)
                    else:
                        stats.refused += 1
                    continue
                succ = hier_canonical(pol.state_key())
                facts = HierFacts(succ)
                if wcc and not all(facts.wcc()):
                    stats.pruned_wcc += 1
                    continue
                new = succ not in parents
                if new:
                    parents[succ] = (key, ev)
                    nxt.append(succ)
                    stats.distinct += 1
                _check(facts, ev, succ, key, probes, outcomes, parents, n, new)
        if not stats.complete:
            break
        if nxt:
            depth += 1
            stats.depth_reached = depth
        frontier = nxt
        if all(outcomes[p.claim_id].finding is not None for p in probes):
            stats.stop_reason = "every probe decided"
            stats.queue_left = len(frontier)
            break
    else:
        if frontier and depth >= b.depth:
            stats.at_depth_bound = len(frontier)
    stats.seconds = time.perf_counter() - t0
    if progress is not None:
        progress(f"[K={k} D={n}{' WCC' if wcc else ''}] {stats.distinct:,} distinct, {stats.generated:,} generated, "
                 f"depth {stats.depth_reached}, {stats.seconds:.1f}s")
    return stats



# --------------------------------------------------------------------------- rendering
def render(view: HierView, names: dict[int, int] | None = None) -> str:
    """One line per non-empty domain: its panel-level node, then its non-empty GPU-level panels;
    jobs shown as J<names[label]> (stable names of a trace) or J<label>."""
    names = names or {}
    t = view.topology
    lines = []
    for d in range(t.n_domains):
        nd = view.panel.nodes[d]
        parts = []
        if nd.kind != EMPTY:
            parts.append("panel-level " + _node_text(nd, "p", names))
        for p in t.panels_of(d):
            g = view.gpu.nodes[p]
            if g.kind != EMPTY:
                parts.append(f"P{p} " + _node_text(g, "g", names))
        if parts:
            lines.append(f"  D{d}: " + "; ".join(parts))
    return "\n".join(lines) or "  (empty cluster)"


def _node_text(nd: NodeView, unit: str, names: dict[int, int]) -> str:
    def j(x: int) -> str:
        return f"J{names.get(x, x)}"

    if nd.kind == POOL:
        return "pool[" + " ".join(j(x) for x in nd.pool) + "]"
    return "slotted{" + ", ".join(
        f"w{s.width}: {j(s.anchor_job)}({unit}={s.anchor_g})" + ("+" + "+".join(j(f) for f in s.fillers) if s.fillers else "")
        + (f" vac {s.vacancy}" if s.vacancy else "") for s in nd.slots) + "}"


def hier_state_to_json(view: HierView) -> dict[str, Any]:
    return {"type": "hier", "K": view.panels_per_domain, "panel": state_to_json(view.panel), "gpu": state_to_json(view.gpu)}


def walk(k: int, n_domains: int, events: list[Event], variant: str = "literal") -> list[dict[str, Any]]:
    """Re-run ``events`` from the empty cluster exactly as the search did (expand the canonical
    state, canonicalise after), with stable job names J0, J1, … in arrival order. One record per
    event: shown event, canonical state, rendered lines, migrations, failure; stops at a failure."""
    proto = HierCompass(n_domains, k, variant)
    cur = hier_canonical(proto.state_key())
    names: dict[int, int] = {}
    fresh = 0
    steps = []
    for ev in events:
        pol = proto.with_state(cur)
        if ev.arrive:
            names = {**names, ev.job: fresh}
            fresh += 1
        shown = f"{'+' if ev.arrive else '-'}J{names[ev.job]} (g={ev.g},w={ev.w})"
        res = _apply(pol, ev)
        if not res.ok:
            steps.append({"event": shown, "state": cur, "lines": render(cur, names).splitlines(), "migrations": 0,
                          "failure": res.reason})
            break
        cur, lab = hier_canonical_map(pol.state_key())
        names = {lab[j]: names[j] for j in lab}
        steps.append({"event": shown, "state": cur, "lines": render(cur, names).splitlines(),
                      "migrations": len(res.migrations), "failure": ""})
    return steps


def _trace_record(c: HierClaim, k: int, f: Finding, wcc: bool, variant: str) -> dict[str, Any]:
    """A counterexample in the shape ``proofs_check.report.trace_text`` prints (plus the states)."""
    shown = []
    for st in walk(k, f.n_nodes, f.events, variant):
        facts = HierFacts(st["state"])
        figures = {"migrations": st["migrations"], "Φπ_GPU (partial panels)": partial_panels(facts.placement),
                   "partial domains (panel level)": sum(1 for nd in st["state"].panel.nodes if 0 < nd.used() < k)}
        shown.append({"event": st["event"], "state": st["lines"], "figures": figures, "failure": st["failure"]})
    return {"kind": "trace", "family": "hier", "replay": "canonical", "claim": c.id, "K": k,
            "n_domains": f.n_nodes, "variant": variant,
            "n_nodes": f"{f.n_nodes} domain(s) × {k} panel(s)", "wcc_trajectory": wcc,
            "events": [e.to_json() for e in f.events], "states": [hier_state_to_json(s) for s in f.states],
            "numbers": f.numbers, "failure": f.failure, "shown": shown}


def replay_trace(record: dict[str, Any]) -> tuple[list[str], dict | None]:
    """Re-run a saved thm2 trace and re-test its claim on the last state: (printed lines, breach or
    None). Search traces re-run through canonical states as the search did; sampled traces apply
    their events directly. An operator failure on the last event is the breach of ``thm2.abs``."""
    c = HIER_CLAIMS[record["claim"]]
    k, n, variant = int(record["K"]), int(record["n_domains"]), record.get("variant", "literal")
    events = [Event.from_json(d) for d in record["events"]]
    if record.get("replay") == "direct":
        steps, pol = [], HierCompass(n, k, variant)
        for ev in events:
            res = _apply(pol, ev)
            steps.append({"event": str(ev), "state": pol.state_key(), "lines": render(pol.state_key()).splitlines(),
                          "migrations": len(res.migrations), "failure": "" if res.ok else res.reason})
            if not res.ok:
                break
    else:
        steps = walk(k, n, events, variant)
    lines = []
    for i, st in enumerate(steps, 1):
        tail = f"  ({st['migrations']} migrations)" if st["migrations"] else ""
        lines.append(f"{i}. {st['event']}" + (f": not applied ({st['failure']})" if st["failure"] else tail))
        lines.extend(st["lines"])
    if steps and steps[-1]["failure"]:
        fail = steps[-1]["failure"]
        return lines, {"operator failure": fail} if fail.startswith("operator failure") else None
    return lines, c.probe.test(HierFacts(steps[-1]["state"])) if c.probe is not None and steps else None


def replay_record(record: dict[str, Any]) -> tuple[ClaimResult, list[str]]:
    """`verify --replay` for this module's records: violated if the claim still breaks on the
    replayed trace, holds if it no longer does (the bounds say it is about this one trace)."""
    cid = record.get("claim", "")
    if cid not in HIER_CLAIMS:
        raise ValueError(f"trace names unknown claim {cid!r}")
    if cid == "k1-reduces":
        lines, breach = _replay_k1(record)
        label = cid
    else:
        lines, breach = replay_trace(record)
        label = f"{cid}[K={record['K']}]"
    bounds = {"replayed": f"{len(record['events'])} recorded events"}
    if breach is not None:
        return ClaimResult(label, Verdict.VIOLATED, "still breaks on the replayed trace", bounds,
                           counterexample=record), lines + [f"breaks: {breach}"]
    return ClaimResult(label, Verdict.HOLDS, "no longer breaks on the replayed trace", bounds), lines


def _replay_k1(record: dict[str, Any]) -> tuple[list[str], dict | None]:
    """Re-run a k1-reduces record on the flat scheduler and on K = 1; the breach is the first event
    whose decisions differ. Search records go through canonical flat states, as the search did."""
    n, variant = int(record["n_nodes"]), record.get("variant", "literal")
    flat, hier = Compass(n, G_PANEL, variant), HierCompass(n, 1, variant)
    canonical_walk = record.get("replay") == "k1"
    lines = []
    for i, d in enumerate(record["events"], 1):
        ev = Event.from_json(d)
        if canonical_walk:
            key = canonical(flat.state_key())
            flat, hier = flat.with_state(key), hier.with_state(_flat_to_hier(key))
        rf, rh = _apply(flat, ev), _apply(hier, ev)
        lines.append(f"{i}. {ev}: flat ok={rf.ok} moves={len(rf.migrations)}, K=1 ok={rh.ok} moves={len(rh.migrations)}")
        if (rf.ok, rf.migrations) != (rh.ok, rh.migrations) or flat.placement() != hier.placement():
            return lines, {"flat": rf, "hier K=1": rh}
    return lines, None


# --------------------------------------------------------------------------- sampling
def sample_hier(k: int, probes: list[Probe], b: HierBounds, wcc: bool, progress: Progress) -> dict[str, dict]:
    """Seeded random event sequences on up to ``sample_domains`` domains; a breached probe gets a
    replayable record (events applied directly, job ids as drawn). Sequences keep WCC when ``wcc``
    (an event breaking it is skipped)."""
    rng = random.Random(f"{b.seed}-{k}")
    demands = b.demands or legal_demands(k)
    found: dict[str, dict] = {}
    for _ in range(b.samples):
        n = rng.randint(1, b.sample_domains)
        pol = HierCompass(n, k, b.variant)
        trace: list[Event] = []
        next_id = 0
        for _ in range(b.sample_events):
            running = pol.running()
            if running and rng.random() < 0.4:
                ev = Event(False, rng.choice(sorted(running)), 0, 0)
                ev = ev._replace(g=running[ev.job].g, w=running[ev.job].w)
            else:
                ev = Event(True, next_id, rng.choice(demands), rng.randint(1, max(1, b.max_w)))
            trial = pol.clone()
            res = _apply(trial, ev)
            if not res.ok:
                if res.reason.startswith("operator failure"):
                    for p in probes:
                        if p.failure_breaks and p.claim_id not in found:
                            found[p.claim_id] = _sample_record(p.claim_id, k, n, b.variant, trace + [ev],
                                                               render(pol.state_key()).splitlines(),
                                                               {"operator failure": res.reason}, res.reason)
                continue
            facts = HierFacts(trial.state_key())
            if wcc and not all(facts.wcc()):
                continue
            pol = trial
            next_id += ev.arrive
            trace.append(ev)
            for p in probes:
                if p.claim_id in found:
                    continue
                try:
                    numbers = p.test(facts)
                except PhiUnknown:
                    continue
                if numbers is not None:
                    found[p.claim_id] = _sample_record(p.claim_id, k, n, b.variant, list(trace),
                                                       render(facts.view).splitlines(), numbers, "")
    if progress is not None:
        progress(f"[K={k}] {b.samples} sampled sequences on ≤ {b.sample_domains} domains: {len(found)} probe(s) breached")
    return found


def _sample_record(claim: str, k: int, n: int, variant: str, events: list[Event], last_state: list[str],
                   numbers: dict, failure: str) -> dict[str, Any]:
    """A sampled counterexample: events applied directly (not through canonical states)."""
    last = len(events) - 1
    shown = [{"event": str(e), "state": last_state if i == last else [], "figures": {},
              "failure": failure if i == last else ""} for i, e in enumerate(events)]
    return {"kind": "trace", "family": "hier", "replay": "direct", "claim": claim, "K": k, "n_domains": n,
            "variant": variant, "n_nodes": f"{n} domain(s) × {k} panel(s)",
            "events": [e.to_json() for e in events], "numbers": numbers, "failure": failure, "shown": shown}


# --------------------------------------------------------------------------- k1-reduces
def _flat_to_hier(view: AbsView) -> HierView:
    """The K = 1 hierarchical state of a flat state: width-8 slots (g = 8) become panel-level units."""
    panel, gpu = [], []
    for nd in view.nodes:
        eights = [s for s in nd.slots if s.anchor_g == G_PANEL]
        if eights:
            panel.append(NodeView(POOL, (eights[0].anchor_job,)))
            gpu.append(NodeView(EMPTY))
        else:
            panel.append(NodeView(EMPTY))
            gpu.append(nd)
    return HierView(1, AbsView(1, tuple(panel)), AbsView(G_PANEL, tuple(gpu)))


def check_k1(b: HierBounds, deadline: float | None, progress: Progress) -> ClaimResult:
    """Exhaustive: every state the flat COMPASS reaches with N ≤ max_domains (canonical BFS), every
    event from it, flat vs HierCompass(N, 1); then ``samples`` random sequences on larger N."""
    c = HIER_CLAIMS["k1-reduces"]
    bounds = {"N (= domains of 1 panel)": f"{b.min_domains}..{b.max_domains}", "depth": b.depth,
              "max_jobs": b.max_jobs, "max_w": b.max_w, "max_states": b.max_states, "samples": b.samples}
    sizes, compared = [], 0
    for n in range(b.min_domains, b.max_domains + 1):
        t0 = time.perf_counter()
        stats = SizeStats(n)
        flat = Compass(n, G_PANEL, b.variant)
        hier = HierCompass(n, 1, b.variant)
        root = canonical(flat.state_key())
        parents: dict[Hashable, Any] = {root: None}
        frontier, depth = [root], 0
        stats.distinct = 1
        while frontier and depth < b.depth and stats.complete:
            nxt = []
            for qi, key in enumerate(frontier):
                if (deadline is not None and time.perf_counter() > deadline) or stats.distinct >= b.max_states:
                    stats.complete, stats.queue_left = False, len(frontier) - qi + len(nxt)
                    stats.stop_reason = "budget"
                    break
                running = flat.with_state(key).running()
                for ev in _events(_flat_to_hier(key), running, tuple(range(1, 9)), b):
                    f, h = flat.with_state(key), hier.with_state(_flat_to_hier(key))
                    rf, rh = _apply(f, ev), _apply(h, ev)
                    stats.generated += 1
                    compared += 1
                    if (rf.ok, rf.migrations) != (rh.ok, rh.migrations) or f.placement() != h.placement():
                        events, states = trace_to(parents, key)
                        record = _k1_record(n, events + [ev], states, rf, rh, b.variant)
                        sizes.append(_size_row(stats, t0))
                        return ClaimResult(c.id, Verdict.VIOLATED, f"decisions differ at N={n} after {len(events) + 1} events",
                                           bounds, {"sizes": sizes, "compared events": compared}, record)
                    if not rf.ok:
                        continue
                    succ = canonical(f.state_key())
                    if succ not in parents:
                        parents[succ] = (key, ev)
                        nxt.append(succ)
                        stats.distinct += 1
            if nxt and stats.complete:
                depth += 1
                stats.depth_reached = depth
            frontier = nxt
        sizes.append(_size_row(stats, t0))
        if progress is not None:
            progress(f"[k1-reduces N={n}] {stats.distinct:,} flat states, {stats.generated:,} events compared")
        if not stats.complete:
            return ClaimResult(c.id, Verdict.INCONCLUSIVE, f"budget hit at N={n}", bounds,
                               {"sizes": sizes, "compared events": compared})
    sampled = _sample_k1(b)
    stats = {"sizes": sizes, "compared events": compared, "sampled sequences": b.samples}
    if sampled is not None:
        return ClaimResult(c.id, Verdict.VIOLATED, "decisions differ on a sampled sequence", bounds, stats, sampled)
    return ClaimResult(c.id, Verdict.HOLDS, f"identical decisions on {compared:,} events from every reachable state "
                                            f"(N={b.min_domains}..{b.max_domains}, depth ≤ {b.depth})"
                       + (f" and {b.samples} sampled sequences" if b.samples else ""), bounds, stats)


def _sample_k1(b: HierBounds) -> dict | None:
    rng = random.Random(f"{b.seed}-k1")
    for _ in range(b.samples):
        n = rng.randint(1, b.sample_domains)
        f, h = Compass(n, G_PANEL, b.variant), HierCompass(n, 1, b.variant)
        events: list[Event] = []
        for nid in range(b.sample_events):
            running = f.running()
            if running and rng.random() < 0.4:
                j = rng.choice(sorted(running))
                ev = Event(False, j, running[j].g, running[j].w)
            else:
                ev = Event(True, nid, rng.randint(1, G_PANEL), rng.randint(1, 3))
            events.append(ev)
            rf, rh = _apply(f, ev), _apply(h, ev)
            if (rf.ok, rf.migrations) != (rh.ok, rh.migrations) or f.placement() != h.placement():
                return {**_k1_record(n, events, [], rf, rh, b.variant), "replay": "k1-direct"}
    return None


def _k1_record(n: int, events: list[Event], states: list, rf, rh, variant: str) -> dict[str, Any]:
    """Where flat and K = 1 decisions part: the events (explorer labels) and both results."""
    shown = [{"event": str(e), "state": [], "figures": {}, "failure": ""} for e in events]
    return {"kind": "trace", "family": "hier", "replay": "k1", "claim": "k1-reduces", "n_nodes": n,
            "variant": variant, "events": [e.to_json() for e in events],
            "states": [state_to_json(s) for s in states], "shown": shown,
            "numbers": {"flat": {"ok": rf.ok, "migrations": [list(m) for m in rf.migrations], "reason": rf.reason},
                        "hier K=1": {"ok": rh.ok, "migrations": [list(m) for m in rh.migrations], "reason": rh.reason}}}


# --------------------------------------------------------------------------- runner
def run_hier_claims(claims: list[HierClaim], b: HierBounds, deadline: float | None = None,
                    progress: Progress = None) -> list[ClaimResult]:
    """Check ``claims`` for every K in ``b.panels``; one ClaimResult per (claim, K), id ``claim[K=k]``."""
    results: list[ClaimResult] = []
    state_claims = [c for c in claims if c.probe is not None]
    for k in b.panels:
        for wcc in (True, False):
            group = [c for c in state_claims if c.wcc == wcc]
            if not group:
                continue
            exp = explore_hier(k, [c.probe for c in group], b, wcc, deadline, progress)
            sampled = sample_hier(k, [c.probe for c in group], b, wcc, progress) if b.samples else {}
            results += [_result(c, k, exp, b, sampled) for c in group]
    if any(c.id == "k1-reduces" for c in claims):
        results.append(check_k1(b, deadline, progress))
    order = {c.id: i for i, c in enumerate(HIER_CATALOGUE)}
    return sorted(results, key=lambda r: (order[r.claim_id.split("[")[0]], r.claim_id))


def _result(c: HierClaim, k: int, exp: HierExploration, b: HierBounds, sampled: dict) -> ClaimResult:
    cid = f"{c.id}[K={k}]"
    out = exp.outcomes[c.id]
    bounds = {**b.describe(), "panels": k, "arrivals g": list(b.demands or legal_demands(k)),
              "premise filter": "eq. 24 and eq. 25 on every state of the trajectory" if c.wcc else "none"}
    label = f"hierarchical K={k}, N = domains{' WCC' if c.wcc else ''}"
    stats: dict[str, Any] = {"exploration": label, "sizes": [_size_row(s) for s in exp.sizes], "premise met": out.premise_met}
    covered = f"D={b.min_domains}..{exp.sizes[-1].n_nodes}" if exp.sizes else "nothing"
    if out.finding is not None:
        f = out.finding
        msg = f"violated at D={f.n_nodes}, K={k} after {len(f.events)} events" + (f" ({f.failure})" if f.failure else "")
        return ClaimResult(cid, Verdict.VIOLATED, msg, bounds, stats, _trace_record(c, k, f, c.wcc, b.variant))
    if c.id in sampled:
        rec = sampled[c.id]
        return ClaimResult(cid, Verdict.VIOLATED, f"violated on a sampled sequence (D={rec['n_domains']}, K={k}, "
                                                  f"{len(rec['events'])} events)", bounds, stats, rec)
    if b.samples:
        stats["sampled"] = f"no counterexample in {b.samples} sequences on ≤ {b.sample_domains} domains"
    if out.unknown:
        return ClaimResult(cid, Verdict.INCONCLUSIVE, out.unknown, bounds, stats)
    if not all(s.complete for s in exp.sizes):
        last = exp.sizes[-1]
        return ClaimResult(cid, Verdict.INCONCLUSIVE, f"{last.stop_reason} hit at D={last.n_nodes} "
                                                      f"({last.queue_left} states queued)", bounds, stats)
    if c.probe.premise is not None and not out.premise_met:
        return ClaimResult(cid, Verdict.VACUOUS, f"premise never met ({covered}, K={k})", bounds, stats)
    return ClaimResult(cid, Verdict.HOLDS, f"holds within bounds ({covered}, K={k}, depth ≤ {b.depth}, "
                                           f"≤ {b.max_jobs} jobs, w ≤ {b.max_w})", bounds, stats)


def _size_row(s: SizeStats, t0: float | None = None) -> dict[str, Any]:
    """One row of the report's exploration table (its column N is the number of domains)."""
    if t0 is not None:
        s.seconds = time.perf_counter() - t0
    return {"N": s.n_nodes, "distinct": s.distinct, "generated": s.generated, "depth": s.depth_reached,
            "at depth bound": s.at_depth_bound, "queue left": s.queue_left, "refused": s.refused,
            "operator failures": s.operator_failures, "pruned (WCC)": s.pruned_wcc,
            "seconds": round(s.seconds, 3), "distinct/s": round(s.rate) if s.seconds else None,
            "complete": s.complete, "stop": s.stop_reason}


# --------------------------------------------------------------------------- `verify` integration
THEOREMS = {2: THEOREM_2}


def owns(claim_id: str) -> bool:
    """Whether ``claim_id`` (an id or a prefix before '.') names a claim of this module."""
    return any(c.id == claim_id or c.id.startswith(claim_id + ".") for c in HIER_CATALOGUE)


def _k_list(text: str) -> tuple[int, ...]:
    import argparse

    try:
        ks = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of panel counts") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: panel counts must be >= 1")
    return ks


def add_arguments(group) -> None:
    """The bounds `verify` adds for this module's claims (the other bounds are shared)."""
    group.add_argument("--max-domains", type=int, default=HierBounds.max_domains, metavar="D",
                       help="thm2/k1-reduces: largest number of NVLink domains (default %(default)s)")
    group.add_argument("--panels", type=_k_list, default=HierBounds.panels, metavar="K[,K...]",
                       help="thm2: panels per domain K, comma-separated (default 1,2,3,9)")


SHARED_FLAGS = {"--depth": "depth", "--max-jobs": "max_jobs", "--max-w": "max_w", "--max-states": "max_states"}


def bounds_from_args(args, argv: list[str]) -> HierBounds:
    """HierBounds from `verify`'s arguments: --max-domains, --panels, --variant, and the shared
    search bounds (--depth, --max-jobs, --max-w, --max-states) when given on the command line —
    their defaults are sized for the flat explorer, so this module's own defaults apply otherwise;
    --random K samples K sequences per K on ≤ --random-nodes panels' worth of domains."""
    if args.max_domains < 1:
        raise ValueError(f"--max-domains {args.max_domains} must be >= 1")
    given = {a.split("=")[0] for a in argv if a.startswith("--")}
    shared = {field: getattr(args, field) for flag, field in SHARED_FLAGS.items() if flag in given}
    return HierBounds(max_domains=args.max_domains, panels=args.panels, samples=args.random, seed=args.seed,
                      sample_domains=max(1, args.random_nodes // max(args.panels)),
                      variant=args.variant or "literal", **shared)


def bounds_text(b: HierBounds) -> str:
    return (f"hierarchical bounds (variant {b.variant}): D = {b.min_domains}..{b.max_domains} domains of K ∈ {{{','.join(map(str, b.panels))}}} "
            f"panels of 8 GPUs; ≤ {b.depth} events; ≤ {b.max_jobs} concurrent jobs; w = 1..{b.max_w}; arrivals: every "
            f"legal demand for K (g = 1..8, 16..8K with a panel-slot width); ≤ {b.max_states:,} distinct states per (K, D)"
            + (f"; {b.samples} sampled sequences per K on ≤ {b.sample_domains} domains" if b.samples else ""))


def catalogue_text() -> str:
    return "\n".join(f"{c.id}\n    ref:       {c.ref}\n    premise:   {c.premise}\n    property:  {c.property}\n"
                     f"    checked:   hierarchical COMPASS (--variant, default literal), one result per K of --panels"
                     + (" (K = 1 only)" if c.probe is None else "") for c in HIER_CATALOGUE)


def run_from_args(ids: list[str], args, argv: list[str], deadline: float | None,
                  progress: Progress) -> list[ClaimResult]:
    """`verify`'s entry point for the ids this module owns."""
    b = bounds_from_args(args, argv)
    print(bounds_text(b))
    return run_hier_claims(resolve_hier(ids), b, deadline, progress)
