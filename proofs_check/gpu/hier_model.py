"""Hierarchical COMPASS (seeds/000 Appendix D) as state models, with its canonical form and facts.

:class:`HierModel` — ``HierCompass(D, K)`` on D NVLink domains of K panels: arrivals of every legal
demand for K (g = 1..8 and the multi-panel demands 16..8K with a panel-slot width, or a given
family), w = 1..max_w with w·g ≤ free GPUs, ≤ max_jobs running; every departure. States are
canonical hierarchical views (domains interchangeable, panels inside a domain interchangeable,
jobs relabelled 0..k-1). ``wcc``: both Workload Composition Conditions (eq. 24 and 25) hold after
every event of the trajectory.

:class:`K1Model` — the differential model of ``k1-reduces``: the flat COMPASS's reachable states,
where every event is applied to the flat scheduler and to ``HierCompass(N, 1)`` from the same
state; decisions that differ (admission, migrations or placement) are an operator failure of the
pair, which breaks the claim. An event both refuse (or both fail on, identically) is an agreement
without a successor: the model reports it as refused.
"""
from __future__ import annotations

from collections import Counter
from fractions import Fraction
from itertools import permutations, product
from typing import Any, Callable, Hashable, Sequence

from heuristics.gpu.abs_space import EMPTY, POOL, AbsView, NodeView, SlotView
from heuristics.gpu.cluster import Job
from heuristics.gpu.compass import Compass
from heuristics.gpu.hier_abs import HierView, gpu_panels, layout, panel_reserved, panel_used
from heuristics.gpu.hier_cluster import (
    G_PANEL,
    HierPlacement,
    demand_counts,
    gpu_phi_star,
    panel_counts,
    panel_phi_star,
    partial_panels,
)
from heuristics.gpu.hier_compass import HierCompass
from heuristics.gpu.ties import Script
from oracle.gpu.paper_phi import wcc_holds
from oracle.result import Status
from proofs_check.core.model import Outcome, Step, Undecided
from proofs_check.gpu.canonical import canonical
from proofs_check.gpu.events import Event, apply_event, job_events, state_from_json, state_to_json
from proofs_check.gpu.policy_model import OUTCOMES, answering, run_event
from proofs_check.gpu.tie_expansion import ReadySteps, drawn_step, every_tie


def legal_demands(k: int) -> tuple[int, ...]:
    """g = 1..8 and the multi-panel / domain-filling demands 16..8K that have a panel-slot width."""
    multi = tuple(G_PANEL * p for p in range(2, k + 1) if p <= 8 or p == k)
    return tuple(range(1, G_PANEL + 1)) + multi


# --------------------------------------------------------------------------- canonical form
def _relabel(nd: NodeView, lab: dict[int, int]) -> NodeView:
    slots = tuple(sorted(SlotView(s.width, lab[s.anchor_job], s.anchor_g, tuple(sorted(lab[f] for f in s.fillers)))
                         for s in nd.slots))
    return NodeView(nd.kind, tuple(sorted(lab[j] for j in nd.pool)), slots)


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
        self._hp: HierPlacement | None = None

    @property
    def placement(self) -> HierPlacement:
        if self._hp is None:
            self._hp = layout(self.view)
        return self._hp

    def panel_items(self) -> tuple[int, dict[int, int]]:
        """(1-panel units, {panel demand p ≥ 2: count}) at the panel level."""
        units = 0
        multi: dict[int, int] = {}
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

    def free_panels(self, d: int) -> int:
        """Panels of domain ``d`` holding nothing of either level."""
        return self.topology.panels_per_domain - panel_reserved(self.view.panel.nodes[d]) - gpu_panels(self.view, d)

    def domain_regions(self, d: int) -> tuple[int, int]:
        """(non-full panel-slot regions, non-full panel-pool regions) of domain ``d``: a slot with
        vacancy; the domain's pool units when free panels are left beside them (reading H4)."""
        nd = self.view.panel.nodes[d]
        slots = sum(1 for s in nd.slots if s.vacancy > 0)
        return slots, int(bool(nd.pool) and self.free_panels(d) > 0)

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
        used = [panel_used(nd) for nd in self.view.panel.nodes]
        phi_pi = sum(1 for u in used if 0 < u < k)
        cert = _settled(panel_phi_star(counts, t), f"Φ★_panel for {counts} on {t}")
        return {"D": t.n_domains, "K": k, "panel counts n_1..n_K": list(counts), "Φπ_panel": phi_pi,
                "Φ★_panel": cert.objective, "SIF_panel": str(Fraction(phi_pi - cert.objective, t.n_domains)),
                "bound": f"2/{t.n_domains}"}


PANEL_FUF = frozenset({3, 5, 6, 7})  # panel demands of the panel-FUF class (D.3)
COVERAGE = ("panel-slot (multi-panel anchor)", "panel-FUF anchor", "panel-FUF anchor with a 1-panel filler",
            "non-full panel-slot", "domain-filling", "panel-pool region", "non-full panel-pool region",
            "two anchored domains", "multi-panel job with w ≥ 2", "both levels in use",
            "domain shared by both levels", "ninth-panel used")


def coverage_features(view: HierView) -> frozenset[str]:
    """Which panel-level situations a state exhibits (what a search at given bounds exercised;
    ``benchmarks/hier_coverage.py`` counts them over every distinct state). ``ninth-panel used``
    (K = 9: a domain with a width-8 panel-slot whose residual panel holds a unit — the panel-pool
    of D.5 — or GPU-level work) and ``domain shared by both levels`` need readings H1 and H4."""
    k = view.panels_per_domain
    out = set()
    gpu_domains = {p // k for p, nd in enumerate(view.gpu.nodes) if nd.kind != EMPTY}
    panel_domains = set()
    for d, nd in enumerate(view.panel.nodes):
        if nd.kind == EMPTY:
            continue
        panel_domains.add(d)
        if nd.pool:
            out.add("panel-pool region")
            if panel_reserved(nd) + gpu_panels(view, d) < k:
                out.add("non-full panel-pool region")
        for s in nd.slots:
            out.add("domain-filling" if s.anchor_g == k else "panel-slot (multi-panel anchor)")
            if s.anchor_g in PANEL_FUF and s.anchor_g < k:
                out.add("panel-FUF anchor")
                if s.fillers:
                    out.add("panel-FUF anchor with a 1-panel filler")
            if s.vacancy > 0:
                out.add("non-full panel-slot")
        if k == 9 and any(s.width == 8 for s in nd.slots) and (nd.pool or gpu_panels(view, d)):
            out.add("ninth-panel used")
    if sum(1 for nd in view.panel.nodes if any(s.anchor_g >= 2 for s in nd.slots)) >= 2:
        out.add("two anchored domains")
    if gpu_domains and panel_domains:
        out.add("both levels in use")
    if gpu_domains & panel_domains:
        out.add("domain shared by both levels")
    if any(j.g > G_PANEL and j.w >= 2 for j in hier_running_jobs(view).values()):
        out.add("multi-panel job with w ≥ 2")
    return frozenset(out)


def _settled(cert: Any, what: str) -> Any:
    """An optimal certificate, else Undecided (solver limit) or RuntimeError: a reached state is a
    packing, so 'infeasible' would be an oracle error, never a verdict."""
    if cert.status is Status.INFEASIBLE:
        raise RuntimeError(f"{what}: oracle says {cert.status} for a state that exists")
    if not cert.is_optimal:
        raise Undecided(f"{what}: solver limit hit")
    return cert


def hier_running_jobs(view: HierView) -> dict[int, Job]:
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


def flat_to_hier(view: AbsView) -> HierView:
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

    pool = "pool[" + " ".join(j(x) for x in nd.pool) + "]"
    if nd.kind == POOL:
        return pool
    return ("" if not nd.pool else pool + " ") + "slotted{" + ", ".join(
        f"w{s.width}: {j(s.anchor_job)}({unit}={s.anchor_g})" + ("+" + "+".join(j(f) for f in s.fillers) if s.fillers else "")
        + (f" vac {s.vacancy}" if s.vacancy else "") for s in nd.slots) + "}"


def hier_facts(st: Step[HierView, Event]) -> HierFacts:
    """The step's HierFacts, shared by every claim evaluated on it."""
    f = st.memo.get("facts")
    if f is None:
        f = st.memo["facts"] = HierFacts(st.state)
    return f




def _free_gpus(view: HierView) -> int:
    used = sum(nd.used() for nd in view.gpu.nodes) + G_PANEL * sum(panel_used(nd) for nd in view.panel.nodes)
    return G_PANEL * view.topology.n_panels - used


class HierModel:
    """StateModel[HierView, Event] of ``HierCompass(n_domains, k, variant)``. With ``all_ties``
    every event comes once per distinct outcome of the scheduler's tie points (both levels' and
    the hierarchy's own, reading H7 of ``heuristics.gpu.hier_compass``; ``tie_expansion``), its
    choices in ``Event.choices``; ``step`` follows an event's choices (a replay)."""

    def __init__(self, n_domains: int, k: int, variant: str, demands: tuple[int, ...], max_jobs: int, max_w: int,
                 wcc: bool, all_ties: bool = False) -> None:
        self.size, self.k, self.variant = n_domains, k, variant
        self.demands, self.max_jobs, self.max_w, self.wcc = demands, max_jobs, max_w, wcc
        self.all_ties = all_ties
        self.proto = HierCompass(n_domains, k, variant)
        self._ready: ReadySteps[HierView] = ReadySteps()

    def init_states(self) -> Sequence[HierView]:
        return [self.proto.state_key()]

    def actions(self, s: HierView) -> Sequence[Event]:
        events = job_events(hier_running_jobs(s), _free_gpus(s), self.demands, self.max_jobs, self.max_w)
        if not self.all_ties:
            return events
        ready = every_tie(events, lambda ev, script: self._run(s, ev, script), self._result_key)
        self._ready.keep(s, ready)
        return list(ready)

    def _result_key(self, st: Step[HierView, Event]) -> Hashable:
        """Two choices' applied steps differ by their successor or their migration count (migr)."""
        return self.representative(st.state), len(st.detail)

    def step(self, s: HierView, a: Event) -> Step[HierView, Event]:
        st = self._ready.take(s, a)
        return st if st is not None else self._run(s, a, Script(a.choices) if a.choices else None)

    def step_drawing(self, s: HierView, a: Event, draw: Callable[[int], int]) -> Step[HierView, Event]:
        """``a`` with a drawn option at every tie point (``--random K --ties all``)."""
        return drawn_step(lambda ev, chooser: self._run(s, ev, chooser), a, draw)

    def _run(self, s: HierView, a: Event, ties: Script | None) -> Step[HierView, Event]:
        pol = self.proto.with_state(s)
        with answering(pol, ties):
            res = apply_event(pol, a)
        return Step(s, a, OUTCOMES[res.outcome], pol.state_key() if res.ok else s, res.migrations, res.reason)

    def representative(self, s: HierView) -> HierView:
        return hier_canonical(s)

    def within(self, st: Step[HierView, Event]) -> bool:
        return not self.wcc or all(hier_facts(st).wcc())

    def state_to_json(self, s: HierView) -> dict[str, Any]:
        return {"type": "hier", "K": s.panels_per_domain, "panel": state_to_json(s.panel), "gpu": state_to_json(s.gpu)}

    def state_from_json(self, d: dict[str, Any]) -> HierView:
        panel, gpu = state_from_json(d["panel"]), state_from_json(d["gpu"])
        assert isinstance(panel, AbsView) and isinstance(gpu, AbsView)
        return HierView(int(d["K"]), panel, gpu)

    def action_to_json(self, a: Event) -> dict[str, Any]:
        return a.to_json()

    def action_from_json(self, d: dict[str, Any]) -> Event:
        return Event.from_json(d)


class K1Model:
    """StateModel[AbsView, Event]: flat COMPASS on N nodes against ``HierCompass(N, 1)``. With
    ``all_ties`` every event runs under every legal choice sequence of the flat scheduler's tie
    points, and HierCompass(N, 1) is given the same choices: it must meet the same tie points
    (name, options) in the same order and then decide the same."""

    def __init__(self, n: int, variant: str, max_jobs: int, max_w: int, all_ties: bool = False) -> None:
        self.size, self.variant, self.max_jobs, self.max_w = n, variant, max_jobs, max_w
        self.all_ties = all_ties
        self.flat = Compass(n, G_PANEL, variant)
        self.hier = HierCompass(n, 1, variant)
        self._ready: ReadySteps[AbsView] = ReadySteps()

    def init_states(self) -> Sequence[AbsView]:
        return [self.flat.state_key()]

    def actions(self, s: AbsView) -> Sequence[Event]:
        h = flat_to_hier(s)
        events = job_events(hier_running_jobs(h), _free_gpus(h), tuple(range(1, G_PANEL + 1)), self.max_jobs,
                            self.max_w)
        if not self.all_ties:
            return events
        ready = every_tie(events, lambda ev, script: self._run(s, ev, script), lambda st: (canonical(st.state),
                                                                                           len(st.detail)))
        self._ready.keep(s, ready)
        return list(ready)

    def step(self, s: AbsView, a: Event) -> Step[AbsView, Event]:
        st = self._ready.take(s, a)
        return st if st is not None else self._run(s, a, Script(a.choices) if a.choices else None)

    def step_drawing(self, s: AbsView, a: Event, draw: Callable[[int], int]) -> Step[AbsView, Event]:
        return drawn_step(lambda ev, chooser: self._run(s, ev, chooser), a, draw)

    def _run(self, s: AbsView, a: Event, ties: Script | None) -> Step[AbsView, Event]:
        f, h = self.flat.with_state(s), self.hier.with_state(flat_to_hier(s))
        if ties is not None:
            f.trial()  # an operator failure under a choice is then the event's outcome, undone below
        with answering(f, ties):
            rf = apply_event(f, a)
        if ties is not None and not rf.ok:
            f.rollback()
        same = None if ties is None else Script(ties.taken())
        with answering(h, same):
            rh = apply_event(h, a)
        if ties is not None and same is not None and same.made != ties.made:
            return Step(s, a, Outcome.FAILED, s, (rf, rh), f"flat and K = 1 tie points differ: {ties.made} vs "
                                                           f"{same.made}")
        if (rf.ok, rf.migrations) != (rh.ok, rh.migrations) or f.placement() != h.placement():
            return Step(s, a, Outcome.FAILED, s, (rf, rh), "flat and K = 1 decisions differ")
        if not rf.ok:  # both refused, or both failed the same way: agreement, and no successor
            return Step(s, a, Outcome.REFUSED, s, (), f"both not applied: {rf.reason}")
        return Step(s, a, Outcome.APPLIED, f.state_key(), rf.migrations)

    def representative(self, s: AbsView) -> AbsView:
        rep = canonical(s)
        assert isinstance(rep, AbsView)
        return rep

    def within(self, st: Step[AbsView, Event]) -> bool:
        return True

    def state_to_json(self, s: AbsView) -> dict[str, Any]:
        return state_to_json(s)

    def state_from_json(self, d: dict[str, Any]) -> AbsView:
        s = state_from_json(d)
        assert isinstance(s, AbsView)
        return s

    def action_to_json(self, a: Event) -> dict[str, Any]:
        return a.to_json()

    def action_from_json(self, d: dict[str, Any]) -> Event:
        return Event.from_json(d)


def walk(model: HierModel, events: list[Event]) -> list[dict[str, Any]]:
    """Re-run ``events`` from the empty cluster exactly as the search did (expand the canonical
    state, take the event's tie choices, canonicalise after), with stable job names J0, J1, … in
    arrival order. One record per event: shown event, canonical state, rendered lines,
    migrations, failure, names (canonical label -> stable name); stops at a failure. A model that
    explored the real states (``symmetric`` False: its symmetry was refused) is re-run on them."""
    canonical = getattr(model, "symmetric", True)
    cur = model.proto.state_key()
    if canonical:
        cur = hier_canonical(cur)
    names: dict[int, int] = {}
    fresh = 0
    steps = []
    for ev in events:
        pol = model.proto.with_state(cur)
        if ev.arrive:
            names = {**names, ev.job: fresh}
            fresh += 1
        shown = str(ev._replace(job=names[ev.job]))
        res = run_event(pol, ev)
        if not res.ok:
            steps.append({"event": shown, "state": cur, "lines": render(cur, names).splitlines(), "migrations": 0,
                          "failure": res.reason, "names": names})
            break
        if canonical:
            cur, lab = hier_canonical_map(pol.state_key())
            names = {lab[j]: names[j] for j in lab}
        else:
            cur = pol.state_key()
        steps.append({"event": shown, "state": cur, "lines": render(cur, names).splitlines(),
                      "migrations": len(res.migrations), "failure": "", "names": names})
    return steps


def shown_hier(model: HierModel, events: list[Event]) -> list[dict[str, Any]]:
    """The trace for people: stable names, migrations, partial panels and domains after each event."""
    shown = []
    for st in walk(model, events):
        f = HierFacts(st["state"])
        figures = {"migrations": st["migrations"], "Φπ_GPU (partial panels)": partial_panels(f.placement),
                   "partial domains (panel level)": sum(1 for nd in st["state"].panel.nodes
                                                        if 0 < panel_used(nd) < model.k)}
        shown.append({"event": st["event"], "state": st["lines"], "figures": figures, "failure": st["failure"]})
    return shown
