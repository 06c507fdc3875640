"""The ``policy.*`` claims: what every flat GPU scheduler should guarantee, checked for any policy.

COMPASS's own claims (``gpu.flat_claims``) read the paper's ABS structure; these read only what
every scheduler has — its placement, its refusals, its migrations — so they apply to any flat
scheduler that implements :class:`heuristics.gpu.policy.Policy`: the registered ones
(``heuristics.gpu.registry``), third-party ones registered through the entry-point group
``placement_oracles.policies``, and any ``package.module:factory``. The explored state is the
scheduler object itself (``gpu.live_model``), merged by what its declared abstractions earned on
the run (``gpu.abstraction``).

=====================  ========================================================================
``policy.valid``       after every event: no node above capacity, every instance of a job the
                       environment knows is running placed (gang: exactly w instances of its g),
                       none twice, nothing else (departed jobs gone); a refused arrival leaves the
                       placement unchanged
``policy.no-stuck``    every event completes: no operator failure, no exception from the
                       scheduler, an ``EventResult`` returned (and, with ``--event-time-limit``,
                       in time)
``policy.admission``   an arrival is refused only when it cannot be admitted: for a scheduler
                       that does not migrate, when no assignment of its w instances of g GPUs to
                       the free GPUs exists (exact: Σ_n ⌊free_n / g⌋ < w, identical items); for a
                       migrating one, when no packing of all running instances plus the new ones
                       into the N nodes exists (exact: the Φ★ oracle's ``min_nodes``)
``policy.sif``         after every event Φπ − Φ★ ≤ k (``bound``; exact Φ★), i.e. SIF ≤ k/N
``policy.migrations``  every event causes at most m migrations (``max_migrations``)
``measure.sif``        a measurement, not a claim: the largest Φπ − Φ★ reached within the bounds,
                       for every N, with the shortest witness of the largest
=====================  ========================================================================

**How the measurement searches.** One exploration per N with the REACHABLE probes "Φπ − Φ★ ≥ j"
for j = 1..N (Φπ ≤ N bounds the gap). The breadth-first search gives each probe its shortest
witness; the largest j reached is the exact maximum over the explored space, and its witness the
shortest trace reaching it. A budget hit makes the figure a lower bound (verdict inconclusive).
With ``--max-nodes all`` (``gpu.cutoff``) the sizes are N = 1..N₀+1 for the scheduler's checked
cutoff N₀, and the largest value is the largest over every N (``policy.sif`` likewise; what each
claim reads decides whether it can be covered for every N: ``EVERY_N``).

The scheduler adapter, the refusal-aware model and the claims' tests are in
:mod:`proofs_check.gpu.policy_checks`.

Records (``--json``) carry ``policy`` (a registered name or ``package.module:factory``) and
``params`` (k, m, the admission mode), so ``--replay`` rebuilds the same scheduler and claim.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator, Sequence

from heuristics.gpu.cluster import G_DEFAULT
from heuristics.gpu.policy import Policy
from proofs_check.core.ahead import taken_ahead
from proofs_check.core.claim import ClaimDoc
from proofs_check.core.engine import SERIAL, Engine
from proofs_check.core.model import Property
from proofs_check.core.replay import departures, first_firing, replay_steps, replay_verdict
from proofs_check.core import sampler
from proofs_check.core.sampler import MAX_ACTIONS, sample
from proofs_check.core.search import Exploration, Finding, Progress
from proofs_check.core.trace import Record, trace_record
from proofs_check.core.verdict import ClaimResult, Explained, Verdict
from proofs_check.gpu.cutoff import Cutoff, EveryN, find_cutoff
from proofs_check.gpu.abstraction import Checked, Declared, checked
from proofs_check.gpu.claim_family import Family, measure, run_claims
from proofs_check.gpu.events import Action
from proofs_check.gpu.facts import Facts, sif_numbers
from proofs_check.gpu.live import Live
from proofs_check.gpu.flat_claims import SAMPLE_MAX_W, Bounds
from proofs_check.gpu import hier_policy
from proofs_check.gpu.policy_checks import (
    HIER_HINT,
    Admission,
    CallableFactory,
    ClaimTests,
    Detail,
    GapAtLeast,
    Migrations,
    PolicyError,
    PolicyParams,
    PolicyTarget,
    SifBound,
    SizeAxis,
    SpecFactory,
    Valid,
    checked_policy,
    claim_property,
    detail,
    gap_probe,
    measured,
    moved_score,
    phi_pi_score,
    require_ties,
    spec_label,
)
from proofs_check.gpu.live_model import LiveModel, Watch
from proofs_check.gpu.policy_model import EventBounds
from proofs_check.gpu.trace_view import render

__all__ = ["CLAIM_IDS", "DOCS", "HIER_HINT", "MEASURE_SIF", "CallableFactory", "Detail", "LiveModel",
           "PolicyError", "PolicyParams", "PolicyTarget", "SpecFactory", "checked_policy", "measure_sif", "owns",
           "replay_record", "run_policy_claims", "sample_policy", "spec_label"]

MEASURE_SIF = "measure.sif"


# --------------------------------------------------------------------------- the catalogue
_ANY = "any flat scheduler (--policy NAME or package.module:factory); arrivals of the demand family, every departure"
CLAIM_DOCS: tuple[ClaimDoc, ...] = (
    ClaimDoc("policy.valid", "scheduler contract (docs/policies.md)", "none (any event sequence from the empty cluster)",
             "after every event: no node above capacity; every instance of a running job placed (gang), none twice; "
             "departed jobs gone; a refused arrival leaves the placement unchanged", _ANY),
    ClaimDoc("policy.no-stuck", "scheduler contract (docs/policies.md)", "none",
             "every event completes: no operator failure and no exception from the scheduler", _ANY),
    ClaimDoc("policy.admission", "scheduler contract (docs/policies.md)", "none",
             "an arrival is refused only when no assignment of its instances to the free GPUs exists (exact); for a "
             "migrating scheduler only when no packing of all instances into the N nodes exists (Φ★ oracle)", _ANY),
    ClaimDoc("policy.sif", "SIF bound (COMPASS-ABS arXiv:2609.18519 §3.2)", "none",
             "after every event Φπ − Φ★ ≤ k (--bound k; exact Φ★), i.e. SIF ≤ k/N", _ANY),
    ClaimDoc("policy.migrations", "migration budget (docs/policies.md)", "none",
             "every event causes at most m migrations (--max-migrations m)", _ANY),
)
MEASURE_DOC = ClaimDoc(MEASURE_SIF, "measurement: verify --policy X --measure sif", "none",
                       "the largest Φπ − Φ★ reached within the bounds, per N, with its shortest witness "
                       "(a figure, not a pass/fail claim: measured exactly within the bounds)", _ANY,
                       measurement=True)
DOCS: dict[str, ClaimDoc] = {d.id: d for d in (*CLAIM_DOCS, MEASURE_DOC)}
CLAIM_IDS: tuple[str, ...] = tuple(d.id for d in CLAIM_DOCS)


# What each claim's property reads (``verify --policy X --max-nodes all``, gpu.cutoff): admission
# judges a refusal against the free GPUs or a packing into N nodes, so it reads N itself.
EVERY_N: dict[str, EveryN] = {"policy.valid": EveryN.CORE, "policy.no-stuck": EveryN.CORE,
                              "policy.admission": EveryN.READS_N, "policy.sif": EveryN.PHI_STAR,
                              "policy.migrations": EveryN.CORE}


def owns(claim_id: str) -> bool:
    return claim_id in DOCS


FLAT_TESTS = ClaimTests(Valid, Admission, SifBound, Migrations, GapAtLeast, phi_pi_score, moved_score)


def prop_of(cid: str, params: PolicyParams) -> Property[Live, Action]:
    """The search property of claim ``cid`` under ``params``."""
    return claim_property(cid, params, FLAT_TESTS)


def replayed_prop(rec: Record, params: PolicyParams, tests: ClaimTests) -> Property[Any, Any]:
    """The property a saved record breaks or reaches (a measure.sif witness: its recorded gap)."""
    if rec["claim"] == MEASURE_SIF:
        return gap_probe(int(rec.get("gap", 1)), tests, MEASURE_SIF)
    return claim_property(rec["claim"], params, tests)


def _property_text(cid: str, params: PolicyParams) -> str:
    return {"policy.sif": f"Φπ − Φ★ ≤ {params.bound}", "policy.migrations": f"≤ {params.max_migrations} migrations "
            "per event", "policy.admission": "refusal only when " + (
                "no packing of all instances into N nodes exists" if params.migrating else
                "the free GPUs cannot take the job")}.get(cid, "")


# --------------------------------------------------------------------------- running
def _models(target: PolicyTarget, bounds: Bounds, params: PolicyParams, sizes: Iterable[int] | None = None,
            deadline: float | None = None, ahead: bool = False) -> Iterator[LiveModel]:
    """One model per N, its states merged by what the scheduler's declared abstractions earned
    on this run (``gpu.abstraction``); with ``--ties all`` each event under every legal choice at
    the scheduler's tie points (PolicyError when it exposes none). With ``ahead`` (a serial
    search on a machine with a spare core) the checks of the later sizes run on that core while
    the earlier ones are explored (``core.ahead``: the same results, sooner)."""
    all_ties = bounds.ties == "all"
    if all_ties:
        require_ties(target)
    events = EventBounds(params.demands, bounds.max_jobs, bounds.max_w, all_ties)
    ns = list(sizes if sizes is not None else range(bounds.min_nodes, bounds.max_nodes + 1))
    watch = Watch(bounds.event_time_limit, None if deadline is None else float(deadline))

    def model_of(n: int) -> LiveModel:
        return LiveModel(target.factory, n, events, watch=watch)

    later = [n for n in ns[1:] if _memo_key(target, n, events, bounds) not in _CHECKED] \
        if ahead and ns and Declared.of(target.factory(ns[0])).view else []
    with taken_ahead(lambda n: checked(model_of(n), bounds.depth), later) as take:
        for n in ns:
            model = model_of(n)
            found = abstractions(target, model, bounds, take(n))
            yield model.with_trust(found.trust, found.describe())


def _memo_key(target: PolicyTarget, n: int, events: EventBounds, bounds: Bounds) -> tuple[Any, ...]:
    # keyed by the target object, not its name: a run's claims and its measurement share the
    # check, another run (or a scheduler changed under the same name) never reuses it
    return target, n, events, bounds.depth


def abstractions(target: PolicyTarget, model: LiveModel, bounds: Bounds, ready: Checked | None = None) -> Checked:
    """The checked abstractions of ``target`` on ``model``'s size (once per run and size; ``ready``:
    the check already made, on another core); a refusal is printed (one line) and, with
    ``bounds.strict``, a PolicyError."""
    memo_key = _memo_key(target, model.size, model.events, bounds)
    found = _CHECKED.get(memo_key)
    if found is None:
        found = _CHECKED[memo_key] = ready if ready is not None else checked(model, bounds.depth)
        for line in found.refused:
            print(f"verify: {target.name} on N={model.size}: {line}", file=sys.stderr)
    if found.refused and bounds.strict:
        raise PolicyError(f"{target.name} on N={model.size}: {found.refused[0]} (--strict)")
    return found


_CHECKED: dict[tuple[Any, ...], Checked] = {}


@dataclass(frozen=True)
class FlatFamily:
    """The flat schedulers' side of the one claim pipeline (``gpu.claim_family``): their state is
    the scheduler object (``LiveModel``), their sizes N nodes, and ``--max-nodes all`` has a
    checked cutoff."""

    target: PolicyTarget
    ahead: bool = False  # the search is serial: the abstraction checks may run ahead on a spare core
    tests: ClaimTests = FLAT_TESTS
    axis: SizeAxis = SizeAxis("N", "Φπ − Φ★", "N={}".format, "N={}".format)

    def label(self, params: PolicyParams) -> str:
        return f"{self.target.name} g∈{{{','.join(map(str, params.demands))}}}"

    def models(self, bounds: Bounds, params: PolicyParams, sizes: Iterable[int] | None,
               deadline: float | None) -> Iterable[LiveModel]:
        return _models(self.target, bounds, params, sizes, deadline, self.ahead)

    def cutoff(self, bounds: Bounds, params: PolicyParams, deadline: float | None, progress: Progress | None,
               label: str) -> tuple[Cutoff | None, range | None]:
        if not bounds.every_n:
            return None, None
        cut = find_cutoff(lambda n: next(iter(_models(self.target, bounds, params, [n]))), bounds.min_nodes,
                          bounds.max_nodes, bounds.depth, bounds.max_w, bounds.max_states, deadline, progress, label)
        return cut, range(bounds.min_nodes, cut.explore_to(bounds.min_nodes) + 1)

    def says(self, bounds: Bounds) -> Explained:
        ties = ", every tie-break" if bounds.ties == "all" else ""
        return Explained(lambda n: f"N={n}", lambda a, b: f"N={a}..{b}",
                         f"depth ≤ {bounds.depth}, ≤ {bounds.max_jobs} jobs, w ≤ {bounds.max_w}{ties}")

    def bounds_row(self, bounds: Bounds, params: PolicyParams, cid: str | None) -> dict[str, Any]:
        row = {**bounds.describe(), "policy": self.target.name, "arrivals g": list(params.demands),
               "premise filter": "none", **params.to_json()}
        if cid is not None:
            row["checked"] = _property_text(cid, params) or DOCS[cid].property
        return row

    def stats(self, exp: Exploration[Any, Any], bounds: Bounds) -> dict[str, Any]:
        # from the exploration, not this process's memo: a run resumed from a checkpoint reports
        # the checks that run made
        return {"abstractions": {f"N={s.size}": s.notes["abstractions"] for s in exp.sizes
                                 if "abstractions" in s.notes}}

    def record(self, cid: str, f: Finding[Any, Any], params: PolicyParams, **extra: Any) -> Record:
        return policy_record(cid, f, self.target, params, **extra)

    def gaps(self, model: Any) -> tuple[int, str]:
        return model.size, str(model.size)


def run_policy_claims(ids: Sequence[str], target: PolicyTarget, bounds: Bounds, params: PolicyParams,
                      engine: Engine = SERIAL, deadline: float | None = None,
                      progress: Progress | None = None) -> list[ClaimResult]:
    """Check the policy.* claims ``ids`` (and ``measure.sif`` if named) on ``target``, flat or
    hierarchical: one pipeline (``gpu.claim_family``), the family decides what a state is."""
    family: Family = hier_policy.HierFamily(target) if hier_policy.is_hier(target) \
        else FlatFamily(target, ahead=not engine.partitioned)
    claims = [c for c in ids if c in CLAIM_IDS]
    results = run_claims(family, claims, bounds, params, EVERY_N, engine, deadline, progress) if claims else []
    if MEASURE_SIF in ids:
        results.append(measure(family, MEASURE_SIF, bounds, params, engine, deadline, progress))
    return results


def measure_sif(target: PolicyTarget, bounds: Bounds, params: PolicyParams, engine: Engine = SERIAL,
                deadline: float | None = None, progress: Progress | None = None) -> ClaimResult:
    """The largest Φπ − Φ★ per N within the bounds (REACHABLE probes Φπ − Φ★ ≥ j, j = 1..N)."""
    return run_policy_claims([MEASURE_SIF], target, bounds, params, engine, deadline, progress)[0]


# --------------------------------------------------------------------------- records, sampling, replay
def live_shown(model: LiveModel, f: Finding[Live, Action]) -> list[dict[str, Any]]:
    """The trace for people: the real run, with the scheduler's own node numbers and job ids, and
    Φπ, Φ★, SIF after each event (the last event's failure, if it failed)."""
    rows = []
    prev = model.init_states()[0]
    for i, (a, s) in enumerate(zip(f.actions, f.states)):
        failure = f.failure if i == len(f.actions) - 1 else ""
        st = model.step(prev, a) if not failure else None
        if st is not None and detail(st).refused:
            failure = st.reason or "refused"
        figures = {k: v for k, v in sif_numbers(Facts(s.placement)).items() if k != "counts"}
        rows.append({"event": str(a), "state": render(s.placement).splitlines(), "figures": figures,
                     "failure": failure})
        prev = s
    return rows


def policy_record(cid: str, f: Finding[Live, Action], target: PolicyTarget, params: PolicyParams,
                  **extra: Any) -> Record:
    model = LiveModel(target.factory, f.size, EventBounds(params.demands, 0, 0))
    return trace_record(cid, "policy", model, f, live_shown(model, f), variant=target.name,
                        policy=target.name, params=params.to_json(), capacity=model.capacity,
                        wcc_trajectory=False, **extra)


def _without_refusals(f: Finding[Live, Action], model: LiveModel) -> Finding[Live, Action]:
    """A sampled finding without the refused arrivals before its last event that changed nothing
    (the same state after them), so its shown trace is not cut at the first refusal."""
    keep_a, keep_s = [], []
    state = model.init_states()[0]
    for i, (a, s) in enumerate(zip(f.actions, f.states)):
        last = i == len(f.actions) - 1
        if not last and s == state and a.arrive and detail(model.step(state, a)).refused:
            continue
        keep_a.append(a)
        keep_s.append(s)
        state = s
    return replace(f, actions=keep_a, states=keep_s)


def sample_policy(cid: str, target: PolicyTarget, params: PolicyParams, runs: int, seed_value: int,
                  max_nodes: int, ties: bool = False, deadline: float | None = None) -> tuple[Record | None, int]:
    """``runs`` Hypothesis-drawn event sequences of ``target`` on N ≤ ``max_nodes`` (``ties``: a
    drawn option at every tie point too); ``deadline`` and a signal end it early (fewer run), and
    the watchdog holds the deadline inside a scheduler's event too."""
    events = EventBounds(params.demands, MAX_ACTIONS, SAMPLE_MAX_W)
    watch = Watch(None, None if deadline is None else float(deadline))
    prop = prop_of(cid, params)
    found, count = sample(lambda n: LiveModel(target.factory, n, events, watch=watch), range(1, max_nodes + 1),
                          prop, runs, seed_value, ties=ties, deadline=deadline)
    if found is None:
        return None, count
    found = _without_refusals(found, LiveModel(target.factory, found.size, events))
    return policy_record(cid, found, target, params, sampled=True), count


def sampled(r: ClaimResult, target: PolicyTarget, params: PolicyParams, runs: int, seed_value: int,
            max_nodes: int, progress: Progress | None = None, ties: bool = False,
            deadline: float | None = None) -> ClaimResult:
    """Merge ``--random`` sampling into an exhaustive policy.* result (it can only add a
    counterexample; cut short by the deadline or a signal, a holding claim is inconclusive)."""
    if r.claim_id not in CLAIM_IDS or r.verdict is Verdict.VIOLATED:
        return r
    if progress is not None:
        progress(f"[{r.claim_id}] sampling {runs} sequences, N ≤ {max_nodes}, seed {seed_value}")
    rec, count = sample_policy(r.claim_id, target, params, runs, seed_value, max_nodes, ties, deadline)
    stopped = sampler.last_stop["reason"]
    stats = {**r.stats, "sampling": {"sequences": count, "max_nodes": max_nodes, "seed": seed_value,
                                     "found": rec is not None, **({"stopped": stopped} if stopped else {})}}
    bounds = {**r.bounds, "sampling": f"{runs} sequences, N ≤ {max_nodes}, seed {seed_value}"}
    if rec is None:
        cut = f" (sampling stopped: {stopped}, after {count} of {runs} sequences)" if stopped else ""
        verdict = Verdict.INCONCLUSIVE if stopped and r.verdict is Verdict.HOLDS else r.verdict
        return replace(r, verdict=verdict, stats=stats, bounds=bounds,
                       message=r.message + f"; no counterexample in {count} sampled sequences (N ≤ {max_nodes})" + cut)
    return replace(r, verdict=Verdict.VIOLATED, bounds=bounds, stats=stats, counterexample=rec,
                   message=f"violated (found by sampling, shrunk) at N={rec['n_nodes']} after "
                           f"{len(rec['events'])} events")


def target_of_record(rec: Record) -> PolicyTarget:
    name = rec.get("policy") or rec.get("variant")
    if not isinstance(name, str):
        raise ValueError("the record names no policy")
    return PolicyTarget.named(name, int(rec.get("capacity", G_DEFAULT)))


def replay_record(rec: Record, target: PolicyTarget | None = None) -> tuple[ClaimResult, list[str]]:
    """Re-run one saved policy.* (or measure.sif) trace with the scheduler it names."""
    if rec.get("policy") == hier_policy.NAME:
        return hier_policy.replay(rec, MEASURE_SIF)
    cid = rec["claim"]
    target = target if target is not None else target_of_record(rec)
    params = PolicyParams.from_json(rec.get("params") or {})
    n = int(rec["n_nodes"])
    prop = replayed_prop(rec, params, FLAT_TESTS)
    model = LiveModel(target.factory, n, EventBounds(params.demands, 0, 0))
    events = [model.action_from_json(e) for e in rec["events"]]
    steps = replay_steps(model, events)
    differs = set(departures(model, steps, rec["states"]))
    lines = [f"replay {cid} on N={n}, policy {target.name}: {len(events)} events"]
    shown = live_shown(model, Finding(n, events[:len(steps)], [s.state for s in steps], {},
                                      steps[-1].reason if steps and not steps[-1].applied else ""))
    for k, row in enumerate(shown):
        lines.append(f"{k + 1}. {row['event']}" + (f"  -> NOT APPLIED: {row['failure']}" if row["failure"] else ""))
        lines.extend("     " + r for r in row["state"])
        lines.append("     " + ", ".join(f"{k2}={v}" for k2, v in row["figures"].items()))
        if k in differs:
            lines.append(f"     (differs from the recorded state after event {k + 1})")
    if len(steps) < len(events):
        lines.append(f"replay stopped after event {len(steps)} of {len(events)}")
    verdict, msg = replay_verdict(prop, first_firing(prop, steps))
    if cid == MEASURE_SIF and verdict is Verdict.HOLDS:
        msg = f"Φπ − Φ★ ≥ {rec.get('gap')} reached on the trace"
    return ClaimResult(cid, verdict, msg, {"trace": f"{len(events)} events on N={n}", "policy": target.name},
                       counterexample=rec if verdict is Verdict.VIOLATED else None), lines


def bounds_text(target: PolicyTarget, bounds: Bounds, params: PolicyParams) -> str:
    if hier_policy.is_hier(target):
        return hier_policy.bounds_text(target, bounds, params)
    return (f"policy {target.name} ({'migrating: admission judged against a full repack' if params.migrating else 'non-migrating: admission judged against the free GPUs'}); "
            f"arrivals g ∈ {{{','.join(map(str, params.demands))}}}; policy.sif bound Φπ − Φ★ ≤ {params.bound}; "
            f"policy.migrations ≤ {params.max_migrations} per event")
