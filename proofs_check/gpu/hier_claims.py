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

Search: the core's breadth-first search (``proofs_check.core.search``) over the state models of
``proofs_check.gpu.hier_model``, for each D = min..max domains and each K; the first violation is
a shortest trace. Verdict rules are the core's: holds / violated / vacuous (premise never met) /
inconclusive (budget). Beyond the exhaustive range, ``samples`` Hypothesis-drawn sequences on up
to ``sample_domains`` domains (the core's sampler) may add a counterexample, never a proof.
``ties = "all"`` (``--ties all``): every event under every legal tie-break of HierCompass (reading
H7 of ``heuristics.gpu.hier_compass``), sampled events with a drawn option at every tie point, and
``k1-reduces`` with HierCompass(N, 1) given each of the flat scheduler's choice sequences.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, Callable, Iterable

from heuristics.gpu.abs_space import POOL, SLOTTED, nonfull_pool, nonfull_slotted
from heuristics.gpu.hier_abs import panel_used
from heuristics.gpu.hier_abs import HierView, hier_abs_violations
from heuristics.gpu.hier_cluster import partial_panels
from proofs_check.core.claim import ClaimDoc, matches
from proofs_check.core.engine import SERIAL, Engine
from proofs_check.core.model import Expect, Numbers, Property, StateModel, Step
from proofs_check.core.replay import first_firing, replay_steps, replay_verdict
from proofs_check.core.sampler import sample
from proofs_check.core.search import Exploration, Finding, Limits, Progress, explore
from proofs_check.core.trace import Record, trace_record
from proofs_check.core.verdict import ClaimResult, Explained, Verdict, explored_verdict, size_row
from proofs_check.gpu.events import Event
from proofs_check.gpu.flat_claims import _TIES_TEXT as TIES_TEXT
from proofs_check.gpu.hier_model import HierFacts, HierModel, K1Model, coverage_features, hier_facts, \
    hier_running_jobs, legal_demands, render, shown_hier


@dataclass(frozen=True)
class HierBounds:
    """What the hierarchical search covers; printed in every report."""

    max_domains: int = 2
    min_domains: int = 1
    panels: tuple[int, ...] = (1, 2, 3, 9)  # K values
    depth: int = 5  # how much of the panel level these bounds reach: benchmarks/hier_coverage.py
    max_jobs: int = 3
    max_w: int = 2
    max_states: int = 300_000  # distinct states per (K, D); more → inconclusive
    demands: tuple[int, ...] = ()  # () = every legal demand for K
    samples: int = 0  # random sequences per K beyond the exhaustive range
    sample_domains: int = 8
    sample_events: int = 40
    seed: int = 0
    variant: str = "literal"  # the flat COMPASS variant both levels are built from
    ties: str = "first"  # first: ties to the representative's order; all: every legal tie-break (reading H7)

    def describe(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- probes
def _gpu_slotted(f: HierFacts) -> Numbers | None:
    k = nonfull_slotted(f.view.gpu)
    return None if k <= 1 else {**f.gpu_figures(), "non-full slotted panels": k, "bound": 1}


def _gpu_pool(f: HierFacts) -> Numbers | None:
    k = nonfull_pool(f.view.gpu)
    return None if k <= 1 else {**f.gpu_figures(), "non-full pool panels": k, "bound": 1}


def _gpu_sif(f: HierFacts) -> Numbers | None:
    if partial_panels(f.placement) <= 2:  # Φ★ ≥ 0: no solve needed
        return None
    fig = f.gpu_figures()
    return None if fig["Φπ_GPU"] - fig["Φ★_GPU"] <= 2 else fig


def _per_domain(select: Callable[[int, int], int], limit: int, what: str) -> Callable[[HierFacts], Numbers | None]:
    def test(f: HierFacts) -> Numbers | None:
        bad: dict[int, int] = {}
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


def _lifted(kind: str) -> Callable[[HierFacts], Numbers | None]:
    def test(f: HierFacts) -> Numbers | None:
        # non-full = a free panel is left: panels with GPU-level work count as used (reading H1)
        k = sum(1 for d, nd in enumerate(f.view.panel.nodes) if nd.kind == kind and f.free_panels(d) > 0)
        return None if k <= 1 else {**f.panel_figures(), f"non-full panel-{kind} domains": k, "bound": 1}
    return test


def _lifted_sif(f: HierFacts) -> Numbers | None:
    k = f.topology.panels_per_domain
    if sum(1 for nd in f.view.panel.nodes if 0 < panel_used(nd) < k) <= 2:
        return None
    fig = f.panel_figures()
    return None if fig["Φπ_panel"] - fig["Φ★_panel"] <= 2 else fig


def _abs(f: HierFacts) -> Numbers | None:
    bad = hier_abs_violations(f.view)
    return {"violated conditions": bad} if bad else None


def _has_gpu(kind: str) -> Callable[[HierFacts], bool]:
    return lambda f: any(nd.kind == kind for nd in f.view.gpu.nodes)


def _has_anchor(f: HierFacts) -> bool:
    return bool(f.anchored_domains())


def _has_panel(kind: str) -> Callable[[HierFacts], bool]:
    return lambda f: any(nd.kind == kind for nd in f.view.panel.nodes)


def _running(f: HierFacts) -> bool:
    return bool(hier_running_jobs(f.view))


class OnHierFacts:
    """A HierFacts predicate lifted to steps (a class, not a lambda, so properties pickle)."""

    def __init__(self, fn: Callable[[HierFacts], Any]) -> None:
        self.fn = fn

    def __call__(self, st: Step[HierView, Event]) -> Any:
        return self.fn(hier_facts(st))


def _feature(name: str) -> Callable[[Step[HierView, Event]], bool]:
    """Whether a state shows one of ``hier_model.COVERAGE``'s situations (computed once per step)."""
    def seen(st: Step[HierView, Event]) -> bool:
        found = st.memo.get("coverage")
        if found is None:
            found = st.memo["coverage"] = coverage_features(st.state)
        return name in found
    return seen


# What a report counts beside each verdict (issue 13): is the panel level really exercised?
_PANEL_COVERAGE = tuple((label, _feature(n)) for label, n in (
    ("states with a panel-slot (multi-panel anchor)", "panel-slot (multi-panel anchor)"),
    ("states with a multi-panel job of w ≥ 2", "multi-panel job with w ≥ 2"),
    ("states with two anchored domains", "two anchored domains"),
    ("states with a domain shared by both levels", "domain shared by both levels"),
    ("states using the ninth panel", "ninth-panel used")))
_GPU_COVERAGE = tuple((label, _feature(n)) for label, n in (
    ("states with both levels in use", "both levels in use"),
    ("states with a domain shared by both levels", "domain shared by both levels")))


def _prop(name: str, test: Callable[[HierFacts], Numbers | None], premise: Callable[[HierFacts], bool] | None = None,
          failure_breaks: bool = False) -> Property[HierView, Event]:
    coverage = _PANEL_COVERAGE if name.startswith(("thm2.panel", "thm2-lifted")) else _GPU_COVERAGE
    return Property(name, Expect.ALWAYS, OnHierFacts(test), premise=None if premise is None else OnHierFacts(premise),
                    failure_breaks=failure_breaks, score=OnHierFacts(_partial_panels), coverage=coverage)


def _partial_panels(f: HierFacts) -> float:
    return partial_panels(f.placement)


def _no_breach(st: Step[Any, Event]) -> Numbers | None:
    return None  # k1-reduces is decided by the pair's disagreements (operator failures of K1Model)


@dataclass(frozen=True)
class HierClaim:
    """A hierarchical COMPASS claim: its doc fields, its property, and whether WCC filters its runs."""

    id: str
    ref: str
    premise: str
    statement: str
    prop: Property[Any, Event]
    wcc: bool = True

    @property
    def doc(self) -> ClaimDoc:
        checked = "hierarchical COMPASS (--variant, default literal), one result per K of --panels"
        return ClaimDoc(self.id, self.ref, self.premise, self.statement,
                        checked + (" (K = 1 only)" if self.id == "k1-reduces" else ""))


_WCC = "eq. (24) n1 ≥ n3+3n5+2n6+n7 and eq. (25) n8 ≥ n3ᵖ+3n5ᵖ+2n6ᵖ+n7ᵖ hold after every event"
_ANCHOR = "; sometimes: a domain hosts a multi-panel anchor"

HIER_CATALOGUE: tuple[HierClaim, ...] = (
    HierClaim("thm2.gpu-slotted", "Theorem 2 part 1 (Appendix D.5)", _WCC + "; sometimes: a GPU-level slotted panel",
              "across the cluster at most one panel-resident slotted GPU-region is non-fully-packed",
              _prop("thm2.gpu-slotted", _gpu_slotted, premise=_has_gpu(SLOTTED))),
    HierClaim("thm2.gpu-pool", "Theorem 2 part 1 (Appendix D.5)", _WCC + "; sometimes: a GPU-level pool panel",
              "across the cluster at most one panel-resident GPU-pool region is non-fully-packed",
              _prop("thm2.gpu-pool", _gpu_pool, premise=_has_gpu(POOL))),
    HierClaim("thm2.gpu-sif", "Theorem 2, eq. (26) first bound", _WCC + "; sometimes: a job is running",
              "SIF_GPU = (Φπ_GPU − Φ★_GPU)/N_p ≤ 2/N_p, Φ★_GPU exact over panels (intra-domain)",
              _prop("thm2.gpu-sif", _gpu_sif, premise=_running)),
    HierClaim("thm2.panel-slot", "Theorem 2 part 2 (Appendix D.5)", _WCC + _ANCHOR,
              "in every domain hosting a multi-panel anchor at most one panel-slot region is non-fully-packed",
              _prop("thm2.panel-slot", _per_domain(lambda s, p: s, 1, "non-full panel-slots per domain"),
                    premise=_has_anchor)),
    HierClaim("thm2.panel-pool", "Theorem 2 part 2 (Appendix D.5)", _WCC + _ANCHOR,
              "in every domain hosting a multi-panel anchor at most one panel-pool region is non-fully-packed",
              _prop("thm2.panel-pool", _per_domain(lambda s, p: p, 1, "non-full panel-pools per domain"),
                    premise=_has_anchor)),
    HierClaim("thm2.panel-sif", "Theorem 2, eq. (26) second bound", _WCC + _ANCHOR,
              "per domain hosting a multi-panel anchor SIF_panel(d) ≤ φ(d)/K ≤ 2/K (φ = non-full regions)",
              _prop("thm2.panel-sif", _per_domain(lambda s, p: s + p, 2, "non-full regions per domain"),
                    premise=_has_anchor)),
    HierClaim("thm2-lifted.slotted", "Theorem 1 lifted to the panel level (not claimed by the paper)",
              _WCC + "; sometimes: a panel-slotted domain",
              "at most one panel-slotted domain is non-full (a panel free of both levels), cluster-wide",
              _prop("thm2-lifted.slotted", _lifted(SLOTTED), premise=_has_panel(SLOTTED))),
    HierClaim("thm2-lifted.pool", "Theorem 1 lifted to the panel level (not claimed by the paper)",
              _WCC + "; sometimes: a panel-pool domain",
              "at most one panel-pool domain is non-full, cluster-wide",
              _prop("thm2-lifted.pool", _lifted(POOL), premise=_has_panel(POOL))),
    HierClaim("thm2-lifted.sif", "Theorem 1 lifted to the panel level (not claimed by the paper)",
              _WCC + "; sometimes: a job is running",
              "SIF_panel = (Φπ_panel − Φ★_panel)/D ≤ 2/D, Φ★_panel exact on capacity K",
              _prop("thm2-lifted.sif", _lifted_sif, premise=_running)),
    HierClaim("thm2.abs", "Σhier (Appendix D.3, readings H1–H4)", "none (any event sequence)",
              "every produced state lies in the hierarchical ABS; an operator failure is a violation",
              _prop("thm2.abs", _abs, failure_breaks=True), wcc=False),
    HierClaim("k1-reduces", "Appendix D.5 ('K = 1, in which the panel level is trivially empty')",
              "K = 1; every state the flat COMPASS reaches",
              "HierCompass(N, 1) makes the flat COMPASS's decisions: same (ok, migrations), same placement",
              Property("k1-reduces", Expect.ALWAYS, _no_breach, failure_breaks=True), wcc=False),
)


HIER_CLAIMS = {c.id: c for c in HIER_CATALOGUE}
THEOREM_2 = tuple(c.id for c in HIER_CATALOGUE if c.id.startswith("thm2."))
THEOREMS = {2: THEOREM_2}


def owns(claim_id: str) -> bool:
    """Whether ``claim_id`` (an id or a prefix before '.') names a claim of this module."""
    return any(matches(c.id, claim_id) for c in HIER_CATALOGUE)


def resolve_hier(ids: Iterable[str]) -> list[HierClaim]:
    """Claims named by id or by the prefix before '.'; ValueError when unknown."""
    out: list[HierClaim] = []
    for cid in ids:
        found = [c for c in HIER_CATALOGUE if matches(c.id, cid)]
        if not found:
            raise ValueError(f"unknown claim id {cid!r}")
        out.extend(c for c in found if c not in out)
    return out


# --------------------------------------------------------------------------- runner
def _hier_model(b: HierBounds, k: int, wcc: bool, max_jobs: int, max_w: int,
                all_ties: bool = False) -> Callable[[int], HierModel]:
    demands = b.demands or legal_demands(k)
    return lambda d: HierModel(d, k, b.variant, demands, max_jobs, max_w, wcc, all_ties)


def _k1_model(b: HierBounds, max_jobs: int, max_w: int, all_ties: bool = False) -> Callable[[int], K1Model]:
    return lambda n: K1Model(n, b.variant, max_jobs, max_w, all_ties)


def run_hier_claims(claims: list[HierClaim], b: HierBounds, deadline: float | None = None,
                    progress: Progress | None = None, engine: Engine = SERIAL) -> list[ClaimResult]:
    """Check ``claims`` for every K in ``b.panels``; one ClaimResult per (claim, K), id ``claim[K=k]``;
    ``k1-reduces`` once (K = 1)."""
    results: list[ClaimResult] = []
    limits = Limits(b.depth, b.max_states)
    sizes = range(b.min_domains, b.max_domains + 1)
    state_claims = [c for c in claims if c.id != "k1-reduces"]
    for k in b.panels:
        for wcc in (True, False):
            group = [c for c in state_claims if c.wcc == wcc]
            if not group:
                continue
            model_of = _hier_model(b, k, wcc, b.max_jobs, b.max_w, b.ties == "all")
            label = f"hierarchical K={k}, N = domains{' WCC' if wcc else ''}"
            exp = explore((model_of(d) for d in sizes), [c.prop for c in group], limits, engine, deadline, progress,
                          label)
            results += [_result(c, k, exp, b, label, engine) for c in group]
    if any(c.id == "k1-reduces" for c in claims):
        results.append(_k1_result(HIER_CLAIMS["k1-reduces"], b, limits, deadline, progress, engine))
    order = {c.id: i for i, c in enumerate(HIER_CATALOGUE)}
    return sorted(results, key=lambda r: (order[r.claim_id.split("[")[0]], r.claim_id))


def _says(b: HierBounds, k: int) -> Explained:
    return Explained(lambda d: f"D={d}, K={k}", lambda a, z: f"D={a}..{z}, K={k}",
                     f"depth ≤ {b.depth}, ≤ {b.max_jobs} jobs, w ≤ {b.max_w}"
                     + (", every tie-break" if b.ties == "all" else ""))


def _result(c: HierClaim, k: int, exp: Exploration[Any, Event], b: HierBounds, label: str,
            engine: Engine) -> ClaimResult:
    cid = f"{c.id}[K={k}]"
    out = exp.outcomes[c.id]
    bounds = {**b.describe(), "panels": k, "arrivals g": list(b.demands or legal_demands(k)),
              "premise filter": "eq. 24 and eq. 25 on every state of the trajectory" if c.wcc else "none"}
    stats: dict[str, Any] = {"exploration": label, "sizes": [size_row(s) for s in exp.sizes],
                             "premise met": out.premise_met, "coverage": dict(out.covered)}
    verdict, msg = explored_verdict(c.prop, out, exp, b.min_domains, _says(b, k))
    if out.finding is not None:
        return ClaimResult(cid, verdict, msg, bounds, stats, _record(c, k, b, out.finding))
    if b.samples and verdict is not Verdict.VIOLATED:
        rec, runs = _sample(c, k, b)
        stats["sampled"] = f"no counterexample in {runs} sequences on ≤ {b.sample_domains} domains"
        if rec is not None:
            return ClaimResult(cid, Verdict.VIOLATED, f"violated on a sampled sequence (D={rec['n_nodes']}, K={k}, "
                                                      f"{len(rec['events'])} events)", bounds, stats, rec)
    return ClaimResult(cid, verdict, msg, bounds, stats)


def _record(c: HierClaim, k: int, b: HierBounds, f: Finding[Any, Event], **extra: Any) -> Record:
    model = _hier_model(b, k, c.wcc, 0, 0)(f.size)
    return trace_record(c.id, "hier", model, f, shown_hier(model, f.actions), variant=b.variant, K=k,
                        capacity=8, wcc_trajectory=c.wcc, **extra)


def _sample(c: HierClaim, k: int, b: HierBounds) -> tuple[Record | None, int]:
    found, runs = sample(_hier_model(b, k, c.wcc, b.sample_events, max(1, b.max_w)),
                         range(1, b.sample_domains + 1), c.prop, b.samples, b.seed, b.sample_events,
                         ties=b.ties == "all")
    return (None if found is None else _record(c, k, b, found, sampled=True)), runs


def _k1_result(c: HierClaim, b: HierBounds, limits: Limits, deadline: float | None, progress: Progress | None,
               engine: Engine) -> ClaimResult:
    """Exhaustive over every state the flat COMPASS reaches with N ≤ max_domains, every event from
    it, flat vs HierCompass(N, 1); then ``samples`` sampled sequences on larger N."""
    bounds = {"N (= domains of 1 panel)": f"{b.min_domains}..{b.max_domains}", "depth": b.depth,
              "max_jobs": b.max_jobs, "max_w": b.max_w, "max_states": b.max_states, "samples": b.samples,
              "ties": b.ties}
    model_of = _k1_model(b, b.max_jobs, b.max_w, b.ties == "all")
    exp = explore((model_of(n) for n in range(b.min_domains, b.max_domains + 1)), [c.prop], limits, engine,
                  deadline, progress, "k1-reduces")
    compared = sum(s.generated for s in exp.sizes)
    stats: dict[str, Any] = {"sizes": [size_row(s) for s in exp.sizes], "compared events": compared,
                             "sampled sequences": b.samples}
    out = exp.outcomes[c.id]
    if out.finding is not None:
        f = out.finding
        return ClaimResult(c.id, Verdict.VIOLATED, f"decisions differ at N={f.size} after {len(f.actions)} events",
                           bounds, stats, _k1_record(f, b))
    if not exp.complete:
        last = exp.sizes[-1]
        return ClaimResult(c.id, Verdict.INCONCLUSIVE, f"{last.stop_reason} hit at N={last.size}", bounds, stats)
    if b.samples:
        found, _ = sample(_k1_model(b, b.sample_events, 3), range(1, b.sample_domains + 1), c.prop, b.samples,
                          b.seed, b.sample_events, ties=b.ties == "all")
        if found is not None:
            return ClaimResult(c.id, Verdict.VIOLATED, "decisions differ on a sampled sequence", bounds, stats,
                               _k1_record(found, b, sampled=True))
    return ClaimResult(c.id, Verdict.HOLDS, f"identical decisions on {compared:,} events from every reachable state "
                                            f"(N={b.min_domains}..{b.max_domains}, depth ≤ {b.depth}"
                                            + (", every tie-break of the flat scheduler, met identically)"
                                               if b.ties == "all" else ")")
                       + (f" and {b.samples} sampled sequences" if b.samples else ""), bounds, stats)


def _k1_record(f: Finding[Any, Event], b: HierBounds, **extra: Any) -> Record:
    model = _k1_model(b, 0, 0)(f.size)
    shown = [{"event": str(e), "state": [], "figures": {}, "failure": ""} for e in f.actions]
    return trace_record("k1-reduces", "k1", model, f, shown, variant=b.variant, capacity=8, **extra)


# --------------------------------------------------------------------------- replay
def replay_record(record: Record) -> tuple[ClaimResult, list[str]]:
    """`verify --replay` for this module's records: violated if the claim still breaks on the
    replayed trace, holds if it no longer does (the bounds say it is about this one trace)."""
    c = HIER_CLAIMS[record["claim"]]
    n, variant = int(record["n_nodes"]), record.get("variant", "literal")
    b = HierBounds(variant=variant)
    model: StateModel[Any, Event]
    if c.id == "k1-reduces":
        model, label = _k1_model(b, 0, 0)(n), c.id
    else:
        k = int(record["K"])
        model, label = _hier_model(b, k, c.wcc, 0, 0)(n), f"{c.id}[K={k}]"
    events = [Event.from_json(d) for d in record["events"]]
    steps: list[Step[Any, Event]] = replay_steps(model, events)
    lines = []
    for i, st in enumerate(steps, 1):
        state = st.state
        tail = f"  ({len(st.detail)} migrations)" if st.applied and st.detail else ""
        lines.append(f"{i}. {st.action}" + (f": not applied ({st.reason})" if not st.applied else tail))
        lines.extend(render(state).splitlines() if isinstance(state, HierView) else [])
    hit = first_firing(c.prop, steps)
    verdict, msg = replay_verdict(c.prop, hit)
    bounds = {"replayed": f"{len(events)} recorded events"}
    if hit is not None:
        lines.append(f"breaks: {hit[1]}")
    return ClaimResult(label, verdict, msg, bounds, counterexample=record if verdict is Verdict.VIOLATED else None), lines


# --------------------------------------------------------------------------- `verify` integration
def _k_list(text: str) -> tuple[int, ...]:
    import argparse

    try:
        ks = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of panel counts") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: panel counts must be >= 1")
    return ks


def add_arguments(group: Any) -> None:
    """The bounds `verify` adds for this module's claims (the other bounds are shared)."""
    group.add_argument("--max-domains", type=int, default=HierBounds.max_domains, metavar="D",
                       help="thm2/k1-reduces: largest number of NVLink domains (default %(default)s)")
    group.add_argument("--panels", type=_k_list, default=HierBounds.panels, metavar="K[,K...]",
                       help="thm2: panels per domain K, comma-separated (default 1,2,3,9)")


SHARED_FIELDS = ("depth", "max_jobs", "max_w", "max_states")


def bounds_from_args(args: Any) -> HierBounds:
    """HierBounds from `verify`'s arguments: --max-domains, --panels, --variant, and the shared
    search bounds (--depth, --max-jobs, --max-w, --max-states) when given (None otherwise: their
    flat defaults are sized for the flat explorer, so this module's own defaults apply);
    --random K samples K sequences per K on ≤ --random-nodes panels' worth of domains."""
    if args.max_domains < 1:
        raise ValueError(f"--max-domains {args.max_domains} must be >= 1")
    shared = {f: getattr(args, f) for f in SHARED_FIELDS if getattr(args, f) is not None}
    return HierBounds(max_domains=args.max_domains, panels=args.panels, samples=args.random, seed=args.seed,
                      sample_domains=max(1, args.random_nodes // max(args.panels)),
                      variant=args.variant or "literal", ties=args.ties, **shared)


def bounds_text(b: HierBounds) -> str:
    return (f"hierarchical bounds (variant {b.variant}): D = {b.min_domains}..{b.max_domains} domains of K ∈ {{{','.join(map(str, b.panels))}}} "
            f"panels of 8 GPUs; ≤ {b.depth} events; ≤ {b.max_jobs} concurrent jobs; w = 1..{b.max_w}; arrivals: every "
            f"legal demand for K (g = 1..8, 16..8K with a panel-slot width); ≤ {b.max_states:,} distinct states per (K, D)"
            + (f"; {b.samples} sampled sequences per K on ≤ {b.sample_domains} domains" if b.samples else "")
            + f"; ties: {TIES_TEXT[b.ties]}")
