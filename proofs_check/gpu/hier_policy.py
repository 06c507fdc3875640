"""The ``policy.*`` claims and ``measure.sif`` for ``hier-compass``, on its hierarchical state
(seeds/000 Appendix D; issue 14 item 1).

``proofs_check.gpu.policy_claims`` checks flat schedulers (a ``Placement`` / ``AbsView`` state).
HierCompass's state is a :class:`~heuristics.gpu.hier_abs.HierView` over D NVLink domains of K
panels of 8 GPUs, so this module gives the same claims their hierarchical reading:

* sizes: D = 1..``--max-nodes`` domains for one K (``--policy-opt hier-compass:panels_per_domain=K``,
  default :data:`DEFAULT_K`); the cluster has N = D·K panels;
* arrivals: every legal demand for K (``hier_model.legal_demands``: g = 1..8 and the multi-panel
  g = 8p) unless ``--demands`` names others; every departure;
* Φπ, Φ★ and the SIF bound at the GPU level (eq. 22): N is the number of panels, a partial node is
  a panel with 0 < GPUs used < 8, Φ★ is ``hier_cluster.gpu_phi_star`` (exact, intra-domain);
* ``policy.valid``: the realised placement (``hier_abs.layout``) has no panel above 8 GPUs and every
  multi-panel instance of g = 8p on p whole panels of ONE domain (``hier_cluster.hier_violations``);
  every instance of a running job placed, departed jobs gone (the multiset of running (g, w)
  shapes is the previous one ± the event's); a refused arrival leaves the state unchanged;
* ``policy.admission`` (exact): a refusal is wrong when the w new instances fit the free capacity
  as it is (Σ over panels ⌊free GPUs / g⌋ for g ≤ 8; Σ over domains ⌊whole free panels / p⌋ for
  g = 8p) or — hier-compass migrates, so as for the flat migrating schedulers — when a packing of
  every running instance plus the new ones exists (:func:`repack_fits`: the multi-panel items into
  the domains, then the g ≤ 8 items into the panels left; the same decomposition ``gpu_phi_star``
  uses, cross-checked against a brute-force packer in tests/test_hier_policy.py).

Refusals are applied self-loops carrying :class:`HierDetail` (as in ``policy_checks``), an
exception from the scheduler is an operator failure (``policy.no-stuck``). ``--ties all``: every
event under every legal tie-break (``HierModel``'s expansion; reading H7 of
``heuristics.gpu.hier_compass``).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Sequence

from heuristics.gpu.cluster import Job
from heuristics.gpu.hier_abs import HierView, layout
from heuristics.gpu.hier_cluster import (
    G_PANEL,
    HierPlacement,
    Topology,
    gpu_phi_star,
    hier_violations,
    panel_demand,
    partial_panels,
)
from heuristics.gpu.hier_compass import HierCompass
from heuristics.gpu.policy import Migration
from heuristics.gpu.policy import Outcome as PolicyOutcome
from heuristics.gpu.registry import make_policy, policy_migrates
from heuristics.gpu.ties import Script
from oracle.result import Status
from proofs_check.core.model import Numbers, Outcome, Property, Step, Undecided
from proofs_check.core.replay import first_firing, replay_steps, replay_verdict
from proofs_check.core.search import Exploration, Finding, Progress
from proofs_check.core.trace import Record, trace_record
from proofs_check.core.verdict import ClaimResult, Explained, Verdict
from proofs_check.gpu.events import Event, apply_event
from proofs_check.gpu.flat_claims import _TIES_TEXT as TIES_TEXT
from proofs_check.gpu.flat_claims import ALL_G, Bounds
from proofs_check.gpu.hier_check import symmetric, trust
from proofs_check.gpu.hier_model import HierFacts, HierModel, hier_facts, hier_running_jobs, legal_demands, shown_hier
from proofs_check.gpu.policy_model import answering
from proofs_check.gpu.policy_checks import (
    ClaimTests,
    PolicyError,
    PolicyParams,
    PolicyTarget,
    SizeAxis,
    claim_property,
    gap_probe,
    shape_problems,
)

NAME = "hier-compass"
DEFAULT_K = 2  # what the registry's tests and docs/simulator.md build hier-compass with
Opts = tuple[tuple[str, object], ...]
# Default search bounds (each flag given wins): HierCompass rebuilds two COMPASS levels per event
# (~150-400 states/s), so D ≤ 2 domains, depth 4, ≤ 3 jobs, w ≤ 2; D = 1 for K > SMALL_K (two K = 9
# domains are 8,670 states, ~75 s per exploration, two explorations for --claim policy --measure sif).
HIER_BOUNDS: dict[str, Any] = {"max_nodes": 2, "depth": 4, "max_jobs": 3, "max_w": 2}
SMALL_K = 4


def default_bounds(items: Sequence[str]) -> dict[str, Any]:
    """:data:`HIER_BOUNDS` for the K of the ``--policy-opt`` items (bad items: the defaults; the
    error is reported when the target is built)."""
    try:
        k = HierFactory(parse_opts(items)).k
    except PolicyError:
        return HIER_BOUNDS
    return HIER_BOUNDS if k <= SMALL_K else {**HIER_BOUNDS, "max_nodes": 1}


# --------------------------------------------------------------------------- which scheduler
class HierFactory:
    """``n_panels -> HierCompass`` through the registry with the ``--policy-opt`` options
    (picklable: plain values only)."""

    def __init__(self, opts: Opts = ()) -> None:
        self.opts = tuple(sorted({"panels_per_domain": DEFAULT_K, **dict(opts)}.items()))
        k = dict(self.opts)["panels_per_domain"]
        if not isinstance(k, int) or k < 1:
            raise PolicyError(f"--policy-opt {NAME}:panels_per_domain={k!r}: an integer K >= 1")
        self.k = k

    def __call__(self, n_panels: int) -> HierCompass:
        pol = make_policy(NAME, n_panels, G_PANEL, **dict(self.opts))
        assert isinstance(pol, HierCompass)
        return pol


def parse_opts(items: Sequence[str]) -> Opts:
    """``hier-compass:KEY=VALUE`` items (``--policy-opt``, the syntax of ``simulate``) -> options;
    an integer value is read as one."""
    out: dict[str, object] = {}
    for item in items:
        sched, _, kv = item.partition(":")
        key, eq, val = kv.partition("=")
        if sched != NAME or not key or not eq:
            raise PolicyError(f"--policy-opt {item!r}: verify takes {NAME}:KEY=VALUE (e.g. {NAME}:panels_per_domain=2)")
        out[key] = int(val) if val.lstrip("-").isdigit() else val
    return tuple(sorted(out.items()))


def hier_target(opts: Opts = ()) -> PolicyTarget:
    """The ``hier-compass`` target with its options, built once on one domain (a bad option is a
    PolicyError: one line, exit 2)."""
    fac = HierFactory(opts)
    try:
        fac(fac.k)
    except (TypeError, ValueError) as e:
        raise PolicyError(f"policy {NAME!r} does not build with {dict(fac.opts)}: {e}") from None
    return PolicyTarget(NAME, fac, policy_migrates(NAME))


def is_hier(target: PolicyTarget) -> bool:
    return isinstance(target.factory, HierFactory)


def _factory(target: PolicyTarget) -> HierFactory:
    assert isinstance(target.factory, HierFactory)
    return target.factory


def hier_demands(params: PolicyParams, k: int) -> tuple[int, ...]:
    """The arrival family: every legal demand for K unless ``--demands`` named others."""
    return legal_demands(k) if params.demands == ALL_G else params.demands


# --------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class HierDetail:
    """What one event did besides the state (as ``policy_checks.Detail``, for HierView states)."""

    migrations: tuple[Migration, ...] = ()
    refused: bool = False
    changed_to: HierView | None = None


class HierPolicyModel(HierModel):
    """:class:`HierModel` of the registry's ``hier-compass`` (its options), refusal-aware: a refused
    arrival is an applied self-loop carrying :class:`HierDetail`, an exception a failure."""

    def __init__(self, factory: HierFactory, n_domains: int, demands: tuple[int, ...], max_jobs: int,
                 max_w: int, all_ties: bool = False) -> None:
        super().__init__(n_domains, factory.k, "literal", demands, max_jobs, max_w, wcc=False, all_ties=all_ties)
        self.proto, self.factory = factory(n_domains * factory.k), factory
        self.symmetric = True  # until ``hier_check.trust`` refused it: then states are raw views
        self.checked: dict[str, Any] = {}

    def describe(self) -> dict[str, Any]:
        """``core.model.Described``: the abstraction check of this size, if one ran."""
        return {"abstractions": self.checked} if self.checked else {}

    def _run(self, s: HierView, a: Event, ties: Script | None) -> Step[HierView, Event]:
        try:
            pol = self.proto.with_state(s)
        except Exception as e:
            return Step(s, a, Outcome.FAILED, s, HierDetail(), f"{a} raised {type(e).__name__}: {e}")
        return self.run_on(pol, s, a, ties)

    def run_on(self, pol: Any, s: HierView, a: Event, ties: Script | None) -> Step[HierView, Event]:
        """Event ``a`` on the scheduler object ``pol``, whose state is ``s`` (a rebuild of ``s``
        when exploring; the real object when ``hier_check`` compares the two)."""
        what = str(a)
        try:
            with answering(pol, ties):
                res = apply_event(pol, a)
            after = pol.state_key()
        except Exception as e:
            return Step(s, a, Outcome.FAILED, s, HierDetail(), f"{what} raised {type(e).__name__}: {e}")
        if res.outcome is PolicyOutcome.FAILED:
            return Step(s, a, Outcome.FAILED, s, HierDetail(), res.reason or f"{what}: operator failure")
        if res.outcome is PolicyOutcome.REFUSED:
            changed = None if self.representative(after) == self.representative(s) else after
            return Step(s, a, Outcome.APPLIED, s, HierDetail(refused=True, changed_to=changed), res.reason)
        return Step(s, a, Outcome.APPLIED, after, HierDetail(tuple(res.migrations)), res.reason)

    def _result_key(self, st: Step[HierView, Event]) -> Hashable:
        """As ``HierModel``'s, and whether the event was refused (changing the state or not)."""
        d = _detail(st)
        changed = None if d.changed_to is None else self.representative(d.changed_to)
        return self.representative(st.state), len(d.migrations), d.refused, changed

    def representative(self, s: HierView) -> HierView:
        if not self.symmetric:
            return s
        try:
            return super().representative(s)
        except Exception:  # a malformed state (policy.valid reports it) is its own representative
            return s


def _detail(st: Step[HierView, Event]) -> HierDetail:
    return st.detail if isinstance(st.detail, HierDetail) else HierDetail()


# --------------------------------------------------------------------------- admission, exact
def free_room(hp: HierPlacement, g: int) -> int:
    """How many instances of ``g`` GPUs the free capacity takes as it is (identical items, so the
    greedy count is exact): ⌊free/g⌋ per panel for g ≤ 8, ⌊whole free panels/p⌋ per domain for 8p."""
    t = hp.topology
    if g <= G_PANEL:
        return sum((G_PANEL - hp.used(n)) // g for n in range(t.n_panels))
    p = panel_demand(g)
    return sum(sum(1 for n in t.panels_of(d) if hp.used(n) == 0) // p for d in range(t.n_domains))


def repack_fits(jobs: Iterable[Job], t: Topology) -> bool:
    """Whether every instance of ``jobs`` fits D domains of K panels (exact; Undecided at a
    solver limit): ``gpu_phi_star`` is infeasible exactly when the multi-panel items do not fit
    the domains or the g ≤ 8 items do not fit the panels left."""
    sub = [0] * G_PANEL
    multi: Counter[int] = Counter()
    for j in jobs:
        if j.g <= G_PANEL:
            sub[j.g - 1] += j.w
        else:
            multi[panel_demand(j.g)] += j.w
    cert = gpu_phi_star(tuple(sub), multi, t)
    if cert.status is Status.INFEASIBLE:
        return False
    if not cert.is_optimal:
        raise Undecided(f"packing of {sub}, panel demands {dict(multi)} on {t}: solver limit hit")
    return True


class HierAdmission:
    """A refused arrival that could have been admitted (exact)."""

    def __init__(self, migrating: bool) -> None:
        self.migrating = migrating

    def __call__(self, st: Step[HierView, Event]) -> Numbers | None:
        a = st.action
        if a is None or not a.arrive or not _detail(st).refused:
            return None
        f = hier_facts(st)
        room = free_room(f.placement, a.g)
        out: Numbers = {"refused": str(a), "reason": st.reason, "room for instances in the free capacity": room}
        if room >= a.w:
            return {**out, "why it fits": f"{a.w} instances of {a.g} GPUs fit the free capacity as it is"}
        if not self.migrating:
            return None
        jobs = [*hier_running_jobs(st.state).values(), Job(-1, a.g, a.w)]
        if not repack_fits(jobs, f.topology):
            return None
        return {**out, "why it fits": f"a repacking of every running instance and the {a.w} new ones fits "
                                      f"D={f.topology.n_domains} domains of K={f.topology.panels_per_domain} panels"}


# --------------------------------------------------------------------------- the other tests
def _shapes(view: HierView) -> Counter[tuple[int, int]]:
    return Counter((j.g, j.w) for j in hier_running_jobs(view).values())


def valid_problems(prev: HierView, state: HierView, a: Event) -> list[str]:
    """Why the transition ``prev --a--> state`` is not a valid hierarchical one (empty if it is)."""
    if state.topology != prev.topology:
        return [f"the state's topology is {state.topology}, the cluster's {prev.topology}"]
    try:
        problems = hier_violations(layout(state))
    except Exception as e:  # a view whose panel level holds more panels than a domain has
        problems = [f"the state has no domain-aware layout: {type(e).__name__}: {e}"]
    return problems + shape_problems(_shapes(prev), _shapes(state), a)


class HierValid:
    """policy.valid on one hierarchical transition."""

    def __call__(self, st: Step[HierView, Event]) -> Numbers | None:
        d = _detail(st)
        if d.refused:
            if d.changed_to is None:
                return None
            return {"problem": f"the refused event {st.action} changed the scheduler's state"}
        if st.prev is None or st.action is None:
            return None
        problems = valid_problems(st.prev, st.state, st.action)
        return {"problems": problems} if problems else None


def _phi_pi(st: Step[HierView, Event]) -> int:
    return partial_panels(hier_facts(st).placement)


def _gap(f: HierFacts) -> tuple[int, dict[str, Any]]:
    fig = f.gpu_figures()
    return fig["Φπ_GPU"] - fig["Φ★_GPU"], fig


class HierSifBound:
    def __init__(self, bound: int) -> None:
        self.bound = bound

    def __call__(self, st: Step[HierView, Event]) -> Numbers | None:
        if _phi_pi(st) <= self.bound:
            return None
        gap, fig = _gap(hier_facts(st))
        return None if gap <= self.bound else {"Φπ − Φ★ (GPU level)": gap, "bound": self.bound, **fig}


class HierGapAtLeast:
    """REACHABLE probe of ``measure.sif``: Φπ − Φ★ ≥ j at the GPU level."""

    def __init__(self, j: int) -> None:
        self.j = j

    def __call__(self, st: Step[HierView, Event]) -> Numbers | None:
        if _phi_pi(st) < self.j:
            return None
        gap, fig = _gap(hier_facts(st))
        return {"Φπ − Φ★ (GPU level)": gap, **fig} if gap >= self.j else None


class HierMigrations:
    def __init__(self, limit: int) -> None:
        self.limit = limit

    def __call__(self, st: Step[HierView, Event]) -> Numbers | None:
        moved = _detail(st).migrations
        if len(moved) <= self.limit:
            return None
        return {"migrations": len(moved), "bound": self.limit, "event": str(st.action),
                "moves": [f"J{m.job}(g={m.g}) panel {m.src} → {m.dst} ({m.kind})" for m in moved]}


def _score(st: Step[HierView, Event]) -> float:
    return _phi_pi(st)


def _moved(st: Step[HierView, Event]) -> float:
    return len(_detail(st).migrations)


HIER_TESTS = ClaimTests(HierValid, HierAdmission, HierSifBound, HierMigrations, HierGapAtLeast, _score, _moved)


def hier_prop(cid: str, params: PolicyParams) -> Property[HierView, Event]:
    """The search property of claim ``cid`` on the hierarchy."""
    return claim_property(cid, params, HIER_TESTS)


# --------------------------------------------------------------------------- running
def _models(fac: HierFactory, bounds: Bounds, params: PolicyParams,
            sizes: Iterable[int] | None = None) -> Iterable[HierPolicyModel]:
    demands = hier_demands(params, fac.k)
    for d in sizes if sizes is not None else range(bounds.min_nodes, bounds.max_nodes + 1):
        model = HierPolicyModel(fac, d, demands, bounds.max_jobs, bounds.max_w, bounds.ties == "all")
        trust(model, bounds.strict)
        yield model


def _says(bounds: Bounds, k: int) -> Explained:
    return Explained(lambda d: f"D={d} (N={d * k} panels)", lambda a, b: f"D={a}..{b}, K={k} (N={a * k}..{b * k} panels)",
                     f"depth ≤ {bounds.depth}, ≤ {bounds.max_jobs} jobs, w ≤ {bounds.max_w}"
                     + (", every tie-break" if bounds.ties == "all" else ""))


def hier_bounds_row(target: PolicyTarget, bounds: Bounds, params: PolicyParams) -> dict[str, Any]:
    fac = _factory(target)
    return {**bounds.describe(), "policy": target.name, "policy options": dict(fac.opts), "sizes": "D domains",
            "arrivals g": list(hier_demands(params, fac.k)), "premise filter": "none", **params.to_json()}


@dataclass(frozen=True)
class HierFamily:
    """hier-compass's side of the one claim pipeline (``gpu.claim_family``): HierView states, sizes
    D domains of K panels, Φπ and Φ★ at the GPU level (N = D·K panels), no cutoff."""

    target: PolicyTarget
    tests: ClaimTests = HIER_TESTS

    @property
    def axis(self) -> SizeAxis:
        # the per-D keys read as they are; the witness "first at D=1, N=2 panels, after 2 events"
        k = _factory(self.target).k
        return SizeAxis("D", "Φπ − Φ★ (GPU level)", str, lambda d: f"D={d}, N={d * k} panels,")

    def label(self, params: PolicyParams) -> str:
        return f"{NAME} K={_factory(self.target).k}"

    def models(self, bounds: Bounds, params: PolicyParams, sizes: Iterable[int] | None,
               deadline: float | None) -> Iterable[HierPolicyModel]:
        return _models(_factory(self.target), bounds, params, sizes)

    def cutoff(self, bounds: Bounds, params: PolicyParams, deadline: float | None, progress: Progress | None,
               label: str) -> tuple[None, None]:
        if bounds.every_n:
            raise PolicyError(f"--max-nodes all: {NAME} has no checked cutoff; give --max-nodes D (domains)")
        return None, None

    def says(self, bounds: Bounds) -> Explained:
        return _says(bounds, _factory(self.target).k)

    def bounds_row(self, bounds: Bounds, params: PolicyParams, cid: str | None) -> dict[str, Any]:
        return hier_bounds_row(self.target, bounds, params)

    def stats(self, exp: Exploration[Any, Any], bounds: Bounds) -> dict[str, Any]:
        # as the flat family's: from the exploration, so a resumed run reports the checks made
        return {"abstractions": {f"D={s.size}": s.notes["abstractions"] for s in exp.sizes
                                 if "abstractions" in s.notes}}

    def record(self, cid: str, f: Finding[Any, Any], params: PolicyParams, **extra: Any) -> Record:
        return hier_record(cid, f, self.target, params, **extra)

    def gaps(self, model: Any) -> tuple[int, str]:
        n = model.size * _factory(self.target).k
        return n, f"D={model.size} (N={n})"


def hier_record(cid: str, f: Finding[HierView, Event], target: PolicyTarget, params: PolicyParams,
                **extra: Any) -> Record:
    """A ``policy`` trace record on the hierarchy: ``n_nodes`` = D, ``K`` and the options recorded."""
    fac = _factory(target)
    model = HierPolicyModel(fac, f.size, (), 0, 0)
    model.symmetric = symmetric(fac, f.size)
    try:
        shown = shown_hier(model, list(f.actions))
    except Exception:  # the scheduler raised while re-run: the search's own states
        shown = [{"event": str(a), "state": [], "figures": {}, "failure": f.failure} for a in f.actions]
    return trace_record(cid, "policy", model, f, shown, variant=target.name, policy=target.name,
                        params=params.to_json(), capacity=G_PANEL, K=fac.k, wcc_trajectory=False,
                        policy_opts=[list(kv) for kv in fac.opts], symmetric=model.symmetric, **extra)


def bounds_text(target: PolicyTarget, bounds: Bounds, params: PolicyParams) -> str:
    fac = _factory(target)
    admission = "a full repack" if params.migrating else "the free capacity"
    return (f"policy {NAME} (hierarchical, K={fac.k} panels per domain, options {dict(fac.opts)}; sizes D = "
            f"{bounds.min_nodes}..{bounds.max_nodes} domains; Φπ, Φ★, SIF at the GPU level with N = D·K panels; "
            f"admission judged against {admission}); "
            f"arrivals g ∈ {{{','.join(map(str, hier_demands(params, fac.k)))}}}; policy.sif bound Φπ − Φ★ ≤ "
            f"{params.bound}; policy.migrations ≤ {params.max_migrations} per event; ties: {TIES_TEXT[bounds.ties]}")




def replay(rec: Record, measure_id: str) -> tuple[ClaimResult, list[str]]:
    """Re-run one saved hier-compass policy.* (or measure.sif) trace with its recorded options."""
    cid = rec["claim"]
    target = hier_target(tuple((str(k), v) for k, v in rec.get("policy_opts") or ()))
    params = PolicyParams.from_json(rec.get("params") or {})
    model = HierPolicyModel(_factory(target), int(rec["n_nodes"]), (), 0, 0)
    model.symmetric = bool(rec.get("symmetric", True))
    prop = gap_probe(int(rec.get("gap", 1)), HIER_TESTS, measure_id) if cid == measure_id else hier_prop(cid, params)
    events = [model.action_from_json(e) for e in rec["events"]]
    steps = replay_steps(model, events)
    lines = [f"replay {cid} on D={model.size} (K={model.k}), policy {NAME}: {len(events)} events"]
    for k, row in enumerate(shown_hier(model, events)):
        lines.append(f"{k + 1}. {row['event']}" + (f"  -> NOT APPLIED: {row['failure']}" if row["failure"] else ""))
        lines.extend("     " + r for r in row["state"])
        lines.append("     " + ", ".join(f"{k2}={v}" for k2, v in row["figures"].items()))
    verdict, msg = replay_verdict(prop, first_firing(prop, steps))
    return ClaimResult(cid, verdict, msg, {"trace": f"{len(events)} events on D={model.size}", "policy": NAME},
                       counterexample=rec if verdict is Verdict.VIOLATED else None), lines
