"""Domain-aware GPU cluster: NVLink domains of K panels of G_p = 8 GPUs (seeds/000 Appendix D).

Appendix D.1 (eq. 22) assumes G_dom = G_p · K: every NVLink domain is K baseboards ("panels") of 8
GPUs (K = 1 DGX/HGX, K = 9 NVL72). Panels are numbered globally, domain d holding panels
d·K .. d·K + K − 1. The intra-domain constraint (D.3) replaces the within-node constraint:

* a *sub-panel* instance (g ≤ 8) lies on one panel;
* a *multi-panel* instance (g ∈ {16, 24, …, 8K}) occupies ⌈g/8⌉ = g/8 whole panels of one domain.

Instance classes (D.3–D.4) as the hierarchical scheduler dispatches them:

* ``SUB_PANEL``  g ∈ 1..7 — the GPU level (COMPASS on panels);
* ``UNIT``       g = 8 — a 1-panel unit, the panel level's filler (Appendix D names g = 8 both a
  sub-panel instance and a panel-filler; eq. 25 counts it as a filler, so the panel level takes it);
* ``MULTI``      g = 8p, 2 ≤ p < K — a panel-level anchor of panel demand p;
* ``DOMAIN``     g = 8K, K ≥ 2 — domain-filling (a width-K degenerate panel-slot).
  At K = 1, g = 8 = 8K is classed ``UNIT``: the two coincide (one whole 1-panel domain).

This module also holds the two exact floors (same :class:`~oracle.result.Certificate` type as
the flat oracle, computed by ``oracle.gpu.phi_star`` itself — no second model):

* :func:`panel_phi_star` — panel-level Φ★: panel-level items (1-panel units and multi-panel
  anchors, demand p = g/8) packed into the D domains of capacity K; partial = a domain with
  0 < panels used < K. It is ``oracle.gpu.phi_star.phi_star(counts_p, D, capacity=K)``.
* :func:`gpu_phi_star` — GPU-level Φ★ over panels: every instance packed into the N_p = D·K panels
  under the intra-domain constraint; partial = a panel with 0 < GPUs used < 8. Multi-panel items
  fill whole panels and free panels are interchangeable for sub-panel items, so it equals the flat
  Φ★ of n_1..n_8 on N_p − Σ p panels, provided the multi-panel items fit into the domains (checked
  exactly, by the panel-level min-nodes model on capacity K).
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, NamedTuple

from heuristics.gpu.cluster import G_DEFAULT, Instance, Job, Placement, gang_violations
from oracle.gpu.patterns import PackingWitness
from oracle.gpu.phi_star import DEFAULT_TIME_LIMIT, min_nodes, phi_star
from oracle.result import Certificate, Status

G_PANEL = G_DEFAULT  # GPUs per panel (eq. 22)
SUB_PANEL, UNIT, MULTI, DOMAIN = "sub-panel", "unit", "multi-panel", "domain-filling"


class Topology(NamedTuple):
    """``n_domains`` NVLink domains of ``panels_per_domain`` (K) panels of 8 GPUs."""

    n_domains: int
    panels_per_domain: int

    @property
    def n_panels(self) -> int:
        return self.n_domains * self.panels_per_domain

    def domain_of(self, panel: int) -> int:
        return panel // self.panels_per_domain

    def panels_of(self, domain: int) -> range:
        k = self.panels_per_domain
        return range(domain * k, domain * k + k)


def check_topology(t: Topology) -> None:
    if not isinstance(t.n_domains, int) or t.n_domains < 1:
        raise ValueError(f"n_domains={t.n_domains!r} must be an integer >= 1")
    if not isinstance(t.panels_per_domain, int) or t.panels_per_domain < 1:
        raise ValueError(f"panels_per_domain={t.panels_per_domain!r} must be an integer >= 1")


def instance_class(g: int, k: int) -> str:
    """The class of an instance of ``g`` GPUs in domains of ``k`` panels; ValueError if illegal."""
    if 1 <= g < G_PANEL:
        return SUB_PANEL
    if g == G_PANEL:
        return UNIT
    if g > G_PANEL and g % G_PANEL == 0 and g <= G_PANEL * k:
        return DOMAIN if g == G_PANEL * k else MULTI
    raise ValueError(f"g={g} is not a legal demand for domains of {k} panels: "
                     f"g must be in 1..8 or a multiple of 8 up to {G_PANEL * k}")


def panel_demand(g: int) -> int:
    """p = g / G_p for panel-level items (g a multiple of 8)."""
    if g % G_PANEL:
        raise ValueError(f"g={g} is not a whole number of panels")
    return g // G_PANEL


def check_hier_job(job: Job, k: int) -> None:
    """Raise ValueError when ``job`` cannot run on domains of ``k`` panels."""
    instance_class(job.g, k)
    if job.w < 1:
        raise ValueError(f"w={job.w} must be >= 1")


# --------------------------------------------------------------------------- placements
class Span(NamedTuple):
    """One multi-panel instance: job id, demand g and the panels it occupies."""

    job: int
    g: int
    panels: tuple[int, ...]


class HierPlacement(NamedTuple):
    """Which instances sit where: ``panels[i]`` holds the instances of g ≤ 8 on panel i, ``spans``
    the multi-panel instances (each on whole panels)."""

    topology: Topology
    panels: tuple[tuple[Instance, ...], ...]
    spans: tuple[Span, ...]

    def used(self, panel: int) -> int:
        """GPUs used on ``panel`` (a panel under a span counts 8 per span)."""
        return sum(i.g for i in self.panels[panel]) + G_PANEL * sum(panel in s.panels for s in self.spans)


def hier_violations(hp: HierPlacement, jobs: Iterable[Job] | None = None) -> list[str]:
    """Every reason ``hp`` is not a valid domain-aware placement (empty list when valid).

    Checked: panel count D·K; demands legal for K; sub-panel instances g ≤ 8 on one panel; each
    multi-panel instance on exactly g/8 distinct whole panels of ONE domain (intra-domain
    constraint, D.3); no panel over 8 GPUs (so span panels hold nothing else); each job's
    instances share its demand; with ``jobs``: every running job has exactly w instances placed
    and nothing else is placed.
    """
    t = hp.topology
    out: list[str] = []
    if len(hp.panels) != t.n_panels:
        return [f"{len(hp.panels)} panels listed, topology has {t.n_panels}"]
    job_g: dict[int, int] = {}
    placed: Counter = Counter()
    for n, insts in enumerate(hp.panels):
        for i in insts:
            if not 1 <= i.g <= G_PANEL:
                out.append(f"panel {n}: instance of job {i.job} has g={i.g} outside 1..8")
            placed[i.job] += 1
            if job_g.setdefault(i.job, i.g) != i.g:
                out.append(f"job {i.job}: instances with different demands {job_g[i.job]} and {i.g}")
    for s in hp.spans:
        where = f"job {s.job} span {s.panels}"
        placed[s.job] += 1
        if job_g.setdefault(s.job, s.g) != s.g:
            out.append(f"job {s.job}: instances with different demands {job_g[s.job]} and {s.g}")
        try:
            if instance_class(s.g, t.panels_per_domain) not in (MULTI, DOMAIN):
                out.append(f"{where}: g={s.g} is not a multi-panel demand")
                continue
        except ValueError as e:
            out.append(f"{where}: {e}")
            continue
        if len(s.panels) != s.g // G_PANEL or len(set(s.panels)) != len(s.panels):
            out.append(f"{where}: needs {s.g // G_PANEL} distinct panels")
        if any(not 0 <= p < t.n_panels for p in s.panels):
            out.append(f"{where}: panel index outside 0..{t.n_panels - 1}")
            continue
        if len({t.domain_of(p) for p in s.panels}) > 1:
            out.append(f"{where}: panels in more than one NVLink domain (intra-domain constraint, D.3)")
    for n in range(t.n_panels):
        if hp.used(n) > G_PANEL:
            out.append(f"panel {n}: {hp.used(n)} GPUs used > 8")
    if jobs is not None:
        out += gang_violations(placed, job_g, jobs)
    return out


def flatten(hp: HierPlacement) -> Placement:
    """The per-panel Placement (capacity 8) a simulator's metrics read: a multi-panel instance
    shows as one 8-GPU entry of its job on each of its panels."""
    nodes = [list(insts) for insts in hp.panels]
    for s in hp.spans:
        for p in s.panels:
            nodes[p].append(Instance(s.job, G_PANEL))
    return Placement(G_PANEL, tuple(tuple(n) for n in nodes))


def partial_panels(hp: HierPlacement) -> int:
    """Φπ at the GPU level: panels with 0 < GPUs used < 8, cluster-wide."""
    return sum(1 for n in range(hp.topology.n_panels) if 0 < hp.used(n) < G_PANEL)


def demand_counts(hp: HierPlacement) -> tuple[tuple[int, ...], Counter]:
    """(n_1..n_8 of the panel-resident instances, Counter of panel demands p ≥ 2 of the spans)."""
    sub = [0] * G_PANEL
    for insts in hp.panels:
        for i in insts:
            sub[i.g - 1] += 1
    return tuple(sub), Counter(s.g // G_PANEL for s in hp.spans)


# --------------------------------------------------------------------------- exact floors
def panel_counts(units: int, multi: Counter, k: int) -> tuple[int, ...]:
    """Count vector n^(panel)_1..n^(panel)_K of the panel level (index p−1; p = 1 the units)."""
    c = [0] * k
    c[0] += units
    for p, m in multi.items():
        if not 2 <= p <= k:
            raise ValueError(f"panel demand p={p} outside 2..{k}")
        c[p - 1] += m
    return tuple(c)


def panel_phi_star(counts_p: tuple[int, ...], t: Topology,
                   time_limit: float = DEFAULT_TIME_LIMIT) -> Certificate[int, PackingWitness]:
    """Panel-level Φ★: minimum number of partial domains (0 < panels used < K) over all packings
    of the panel-level items into the D domains. The flat pattern model on capacity K."""
    return phi_star(counts_p, t.n_domains, t.panels_per_domain, time_limit)


def gpu_phi_star(sub_counts: tuple[int, ...], multi: Counter, t: Topology,
                 time_limit: float = DEFAULT_TIME_LIMIT) -> Certificate[int, PackingWitness]:
    """GPU-level Φ★ over panels under the intra-domain constraint (module docstring).

    ``sub_counts`` = n_1..n_8 (g = 8 units included), ``multi`` = multiset of panel demands p ≥ 2.
    The witness lists panel contents; each panel under a multi-panel instance appears as (8,).
    """
    k = t.panels_per_domain
    fit = min_nodes(panel_counts(0, multi, k), t.n_domains, k, time_limit)
    if not fit.is_optimal:
        # Only a proven fit settles the question; an unproven one leaves Φ★ without incumbent.
        status = Status.INFEASIBLE if fit.status is Status.INFEASIBLE else Status.UNKNOWN
        return Certificate(status, None, None, (), f"intra-domain fit: {fit.solver}",
                           fit.solver_version, fit.wall_time)
    span_panels = sum(p * m for p, m in multi.items())
    cert = phi_star(tuple(sub_counts), t.n_panels - span_panels, G_PANEL, time_limit)
    if not span_panels or cert.objective is None:  # nothing to add, or no packing to add it to
        return cert
    witness = Counter(dict(cert.witness))
    witness[(G_PANEL,)] += span_panels
    return Certificate(cert.status, cert.objective, cert.bound, tuple(sorted(witness.items(), reverse=True)),
                       cert.solver, cert.solver_version, cert.wall_time + fit.wall_time)
