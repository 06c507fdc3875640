"""The claims about flat COMPASS (8-GPU nodes), as properties of the flat scheduler state model.

Each claim names its paper reference, premise and property; the scheduler variant and the event
family it applies to; and its property for the search. Claims sharing (variant, event family,
premise filter) are checked in one exploration (``proofs_check.core.search``) of
:class:`~proofs_check.gpu.policy_model.PolicyModel` over N = min_nodes..max_nodes, or, for every N
(``Bounds.every_n``, ``--max-nodes all``), over N = min_nodes..N₀+1 for a checked cutoff N₀
(:mod:`proofs_check.gpu.cutoff`; each claim records what its property reads, ``FlatClaim.every_n``).
"""
from __future__ import annotations

import sys

from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

from heuristics.gpu.abs_space import in_abs, is_fuf, nonfull_pool, nonfull_slotted, unsaturated_fuf_slots
from heuristics.gpu.compass import VARIANTS, Compass, Variant
from proofs_check.core.ahead import taken_ahead
from proofs_check.core.claim import ClaimDoc
from proofs_check.core.engine import SERIAL, Engine
from proofs_check.core.model import Expect, Numbers, On, Property, Step
from proofs_check.core.replay import departures, first_firing, replay_steps, replay_verdict
from proofs_check.core.sampler import MAX_ACTIONS, sample
from proofs_check.core.search import Exploration, Finding, Limits, Progress, explore
from proofs_check.core.trace import Record, trace_record
from proofs_check.core.verdict import ClaimResult, Explained, Verdict, explored_verdict, size_row
from proofs_check.gpu.cutoff import ALL, Cutoff, EveryN, every_n_result, find_cutoff, phi_star_stable
from proofs_check.gpu.events import Event, FlatState, is_arrival, is_departure
from proofs_check.gpu.facts import Facts, facts, sif_numbers
from proofs_check.gpu.abstraction import check_fast_path
from proofs_check.gpu.policy_model import EventBounds, PolicyFactory, PolicyModel
from proofs_check.gpu.trace_view import shown_trace, walk

ALL_G = (1, 2, 3, 4, 5, 6, 7, 8)
FF_G = (2, 4, 8)
SAMPLE_MAX_W = 8


@dataclass(frozen=True)
class Bounds:
    """What the exhaustive search covers; printed in every report."""

    max_nodes: int = 6
    min_nodes: int = 1
    depth: int = 10
    max_jobs: int = 4
    max_w: int = 4
    max_states: int = 2_000_000  # distinct states per (claim group, N); more → inconclusive
    ties: str = "first"  # first: ties to the representative's order; all: every legal tie-break (TIES)
    every_n: bool = False  # --max-nodes all: N = min_nodes..cutoff + 1, max_nodes caps the cutoff search
    strict: bool = False  # --strict: a declared abstraction that fails its check stops the run (policy.*)
    event_time_limit: float | None = None  # --event-time-limit: seconds one scheduler event may take (policy.*)

    def describe(self) -> dict[str, Any]:
        nodes = {"max_nodes": ALL, "cutoff cap": self.max_nodes} if self.every_n else {"max_nodes": self.max_nodes}
        limit = {} if self.event_time_limit is None else {"event_time_limit": self.event_time_limit}
        return {**nodes, "min_nodes": self.min_nodes, "depth": self.depth, "max_jobs": self.max_jobs,
                "max_w": self.max_w, "max_states": self.max_states, "ties": self.ties, **limit}


# ``--max-nodes all``: the search bounds not given on the command line (the README's 4 jobs of
# w ≤ 4 put the cutoff near N = 17, far beyond what the explorer covers in minutes).
EVERY_N_DEFAULTS = {"depth": 10, "max_jobs": 3, "max_w": 3}


def every_n_bounds(b: Bounds) -> Bounds:
    """``b`` for every N: the cutoff search may go up to J·W + 2 nodes (at most J·W are ever
    non-empty, so J·W + 1 always has slack and J·W + 2 checks the padding; docs/verify.md)."""
    return replace(b, every_n=True, max_nodes=max(b.max_jobs * b.max_w + 2, b.min_nodes + 1))


TIES = ("first", "all")


# --------------------------------------------------------------------------- properties on Facts
class OnFacts:
    """A Facts predicate lifted to steps (a class, not a lambda, so properties pickle)."""

    def __init__(self, fn: Callable[[Facts], Any]) -> None:
        self.fn = fn

    def __call__(self, st: Step[FlatState, Event]) -> Any:
        f = st.memo.get("facts")  # ``facts(st)``, without its call once the step has them
        return self.fn(f if f is not None else facts(st))


def _slotted(f: Facts) -> Numbers | None:
    k = nonfull_slotted(f.view)
    return None if k <= 1 else {"non-full slotted nodes": k, "bound": 1, **sif_numbers(f)}


def _pool(f: Facts) -> Numbers | None:
    k = nonfull_pool(f.view)
    return None if k <= 1 else {"non-full pool nodes": k, "bound": 1, **sif_numbers(f)}


def _sif(f: Facts) -> Numbers | None:
    if f.phi_pi <= 2:  # Φ★ ≥ 0, so SIF ≤ Φπ/N ≤ 2/N without solving anything
        return None
    if f.phi_pi - f.phi_star() <= 2:
        return None
    return {"bound": f"2/{f.n_nodes}", **sif_numbers(f)}


def _abs(f: Facts) -> Numbers | None:
    bad = in_abs(f.view)
    return {"violated conditions": bad} if bad else None


def _lem_a2(f: Facts) -> Numbers | None:
    k = unsaturated_fuf_slots(f.view)
    if not k:
        return None
    where = [f"node {n} slot {i}: J{s.anchor_job}(g={s.anchor_g}) w{s.width} has {len(s.fillers)} fillers, "
             f"vacancy {s.vacancy}"
             for n, nd in enumerate(f.view.nodes) for i, s in enumerate(nd.slots) if is_fuf(s.anchor_g) and s.vacancy > 0]
    return {"unsaturated FUF slots": k, "where": where, **sif_numbers(f)}


class PhiAbove:
    """Φπ ≤ limit (Proposition 3's bounds)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def __call__(self, f: Facts) -> Numbers | None:
        return None if f.phi_pi <= self.limit else {"bound": self.limit, **sif_numbers(f)}


def _phi_star_plus_one(f: Facts) -> Numbers | None:
    if f.phi_pi <= 1:
        return None
    return None if f.phi_pi - f.phi_star() <= 1 else {"bound": "Φ★ + 1", **sif_numbers(f)}


# Repaired COMPASS, per event of a job with w instances (derivation in docs/repaired.md):
# arrival ≤ 3w filler draws + 7 pool moves + one slot-repack round (≤ 6 instance moves);
# departure ≤ 3w filler returns + 7 pool moves + w slot-repack rounds (≤ 6 each), or for
# 1-GPU jobs w replacement draws + 7w pool moves.
MIGRATIONS_PER_W, MIGRATIONS_CONST = 9, 13


def _migrations(f: Facts) -> Numbers | None:
    assert f.event is not None
    limit = MIGRATIONS_PER_W * f.event.w + MIGRATIONS_CONST
    k = len(f.migrations)
    if k <= limit:
        return None
    return {"migrations": k, "bound": f"{MIGRATIONS_PER_W}·w + {MIGRATIONS_CONST} = {limit}",
            "event": str(f.event), "GPUs moved": sum(m.g for m in f.migrations), **sif_numbers(f)}


def _migrations_per_w(f: Facts) -> float:
    return len(f.migrations) / f.event.w if f.event is not None else 0.0


def _phi_two(f: Facts) -> Numbers | None:
    return {**sif_numbers(f)} if f.phi_pi == 2 else None


def _never(f: Facts) -> Numbers | None:
    return None  # prop1.operators is decided by operator failures only


def _moved(f: Facts) -> bool:
    return bool(f.migrations)


def _has_slotted(f: Facts) -> bool:
    return f.n_slotted() > 0


def _has_pool(f: Facts) -> bool:
    return f.n_pool() > 0


def _non_empty(f: Facts) -> bool:
    return any(f.counts)


def _has_fuf(f: Facts) -> bool:
    return any(is_fuf(s.anchor_g) for nd in f.view.nodes for s in nd.slots)


def _always(f: Facts) -> bool:
    return True


def _phi_pi(f: Facts) -> float:
    return f.phi_pi


# Coverage situations (issue 13): counted over the checked states (events, for transition
# claims), so a report shows whether the part of the premise that makes a claim non-trivial
# was exercised — e.g. "≤ 1 non-full pool node" says little unless the 1-GPU instances in
# pools needed two or more pool nodes.
def _fillers(f: Facts, fuf_only: bool = False) -> bool:
    return any(s.fillers for nd in f.view.nodes for s in nd.slots if not fuf_only or is_fuf(s.anchor_g))


Coverage = tuple[tuple[str, Callable[[Facts], bool]], ...]
_TWO_SLOTTED: Coverage = (("states with ≥ 2 slotted nodes", lambda f: f.n_slotted() >= 2),)
_TWO_POOLS: Coverage = (
    ("states with ≥ 2 pool nodes' worth of 1-GPU instances in pools (> G)", lambda f: f.pool_units() > f.capacity),
    ("states with ≥ 2 pool nodes", lambda f: f.n_pool() >= 2))
_TWO_PARTIAL: Coverage = (("states with Φπ ≥ 2", lambda f: f.phi_pi >= 2),)
_SLOT_FILLERS: Coverage = (("states with a filler in a slot", _fillers),
                           ("states with pool and slotted nodes", lambda f: f.n_pool() > 0 and f.n_slotted() > 0))
_FUF: Coverage = (("states with a FUF anchor", _has_fuf),
                  ("states with a filler in a FUF slot", lambda f: _fillers(f, fuf_only=True)))
_PHI_TWO: Coverage = (("events leaving Φπ = 2", lambda f: f.phi_pi == 2),)
_MOVES: Coverage = (("events that migrate", _moved),)


def _prop(name: str, test: Callable[[Facts], Numbers | None], score: Callable[[Facts], float] = _phi_pi,
          expect: Expect = Expect.ALWAYS, on: On = On.STATE, when: Callable[[Event], bool] | None = None,
          premise: Callable[[Facts], bool] | None = None, failure_breaks: bool = False,
          coverage: Coverage = ()) -> Property[FlatState, Event]:
    return Property(name, expect, OnFacts(test), on, when, None if premise is None else OnFacts(premise),
                    failure_breaks, OnFacts(score), tuple((label, OnFacts(fn)) for label, fn in coverage))


# --------------------------------------------------------------------------- the catalogue
@dataclass(frozen=True)
class FlatClaim:
    """A flat COMPASS claim: its doc, the variant and event family it is explored with, and its property."""

    doc: ClaimDoc
    variant: str
    demands: tuple[int, ...]  # event family: job demands g that may arrive
    wcc_trajectory: bool  # explore only trajectories on which WCC holds after every event
    prop: Property[FlatState, Event]
    every_n: EveryN  # what its property reads: whether a cutoff covers it for every N
    @property
    def id(self) -> str:
        return self.doc.id


def _claim(cid: str, ref: str, premise: str, prop_text: str, variant: str, demands: tuple[int, ...], wcc: bool,
           prop: Property[FlatState, Event], every_n: EveryN = EveryN.CORE) -> FlatClaim:
    fam = "g ∈ {" + ",".join(map(str, demands)) + "}"
    doc = ClaimDoc(cid, ref, premise, prop_text, f"COMPASS variant '{variant}', arrivals {fam}, every departure")
    return FlatClaim(doc, variant, demands, wcc, prop, every_n)


_WCC = "WCC (eq. 9, count form n1 ≥ n3+3n5+2n6+n7) holds after every event of the trajectory"

FLAT_CLAIMS: tuple[FlatClaim, ...] = (
    _claim("thm1.slotted", "Theorem 1 (§4.4, eq. 10; Lemma A.4)", _WCC + "; sometimes: a slotted node exists",
           "after every event at most one slotted node is non-fully-packed", "literal", ALL_G, True,
           _prop("thm1.slotted", _slotted, lambda f: nonfull_slotted(f.view), premise=_has_slotted,
                 coverage=_TWO_SLOTTED)),
    _claim("thm1.pool", "Theorem 1 (§4.4; Lemma A.3)", _WCC + "; sometimes: a pool node exists",
           "after every event at most one pool node is non-fully-packed", "literal", ALL_G, True,
           _prop("thm1.pool", _pool, lambda f: nonfull_pool(f.view), premise=_has_pool,
                 coverage=_TWO_POOLS)),
    _claim("thm1.sif", "Theorem 1 (§4.4, eq. 10)", _WCC + "; sometimes: a job is running",
           "after every event SIF = (Φπ − Φ★)/N ≤ 2/N, Φ★ exact", "literal", ALL_G, True,
           _prop("thm1.sif", _sif, premise=_non_empty, coverage=_TWO_PARTIAL), EveryN.PHI_STAR),
    _claim("prop1.abs", "Proposition 1 (§4.4; Appendix B.1)", "none (any event sequence from the empty cluster)",
           "every produced state lies in ABS Σ (Definitions 1–5, eq. 4–8)", "literal", ALL_G, False,
           _prop("prop1.abs", _abs, lambda f: len(in_abs(f.view)), coverage=_SLOT_FILLERS)),
    _claim("prop1.operators", "Proposition 1 (§4.4; Appendix B.1: every operator branch maps Σ into Σ)",
           "none (any event sequence from the empty cluster)",
           "every event that is admitted produces a state: no operator is left without a legal move "
           "(an operator failure means the algorithm produced no state)", "literal", ALL_G, False,
           _prop("prop1.operators", _never, failure_breaks=True, coverage=_SLOT_FILLERS)),
    _claim("lemA2", "Lemma A.2 (Appendix B.1)", _WCC + "; sometimes: a FUF anchor (g ∈ {3,5,6,7}) is placed",
           "at the end of every event every FUF-anchored slot is saturated (g_a + |F| = w)", "literal", ALL_G, True,
           _prop("lemA2", _lem_a2, lambda f: unsaturated_fuf_slots(f.view), premise=_has_fuf,
                 coverage=_FUF)),
    _claim("prop3.arrival", "Proposition 3 (Appendix A; Lemmas B.1–B.3)", "g ∈ {2,4,8} only",
           "Φπ ≤ 2 after every arrival", "prop3", FF_G, False,
           _prop("prop3.arrival", PhiAbove(2), on=On.TRANSITION, when=is_arrival, premise=_always,
                 coverage=_PHI_TWO)),
    _claim("prop3.departure", "Proposition 3 (Appendix A.2, Part 2)", "g ∈ {2,4,8} only; sometimes: a departure",
           "Φπ ≤ 1 after every departure", "prop3", FF_G, False,
           _prop("prop3.departure", PhiAbove(1), on=On.TRANSITION, when=is_departure, premise=_always,
                 coverage=(("events leaving Φπ = 1", lambda f: f.phi_pi == 1),))),
    _claim("prop3.tight", "Proposition 3 (Appendix A.2, Tightness)", "g ∈ {2,4,8} only",
           "Φπ = 2 is reachable (after an arrival)", "prop3", FF_G, False,
           _prop("prop3.tight", _phi_two, expect=Expect.REACHABLE, on=On.TRANSITION, when=is_arrival)),
    _claim("migr", "repaired COMPASS (this toolkit, docs/repaired.md): migration cost per event",
           "none; sometimes: an event migrates an instance",
           f"every event of a job with w instances causes ≤ {MIGRATIONS_PER_W}·w + {MIGRATIONS_CONST} migrations",
           "repaired", ALL_G, False,
           _prop("migr", _migrations, _migrations_per_w, on=On.TRANSITION, premise=_moved, coverage=_MOVES)),
    _claim("abs.phi1", "aspiration beyond COMPASS-ABS (docs/repaired.md): Φπ ≤ Φ★ + 1, i.e. SIF ≤ 1/N", _WCC + "; sometimes: a job is running",
           "after every event Φπ ≤ Φ★ + 1 (exact Φ★)", "repaired", ALL_G, True,
           _prop("abs.phi1", _phi_star_plus_one, premise=_non_empty, coverage=_TWO_PARTIAL), EveryN.PHI_STAR),
)
FLAT: dict[str, FlatClaim] = {c.id: c for c in FLAT_CLAIMS}


# --------------------------------------------------------------------------- the runner
def compass_factory(variant: str | Variant) -> PolicyFactory:
    """A factory of COMPASS policies of ``variant`` (a name in VARIANTS or a Variant object)."""
    if isinstance(variant, str) and variant not in VARIANTS:
        raise ValueError(f"unknown COMPASS variant {variant!r}; known: {', '.join(VARIANTS)}")
    return lambda n: Compass(n, 8, variant)


def variant_name(variant: str | Variant) -> str:
    return variant if isinstance(variant, str) else variant.name


def _models(factory: PolicyFactory, bounds: Bounds, events: EventBounds, wcc: bool,
            top: int | None = None) -> Iterator[PolicyModel]:
    """One model per N; the scheduler's apply-and-undo is used only after it agreed with fresh
    rebuilds on sampled states of this run (``abstraction.check_fast_path``; refused: one line,
    and every event runs on a rebuilt scheduler). On a machine with more than one core the checks
    of the later sizes run in a forked process while the earlier ones are explored (``core.ahead``:
    the same results, sooner). With ``--workers`` too: a check costs about 1 % of its size's
    search, and the small sizes' searches, with their few states per level, leave cores idle;
    checked inline, each waited on one core between two sizes (README command, ``--workers 2``:
    0.17-0.22 s of checks in the coordinator; run ahead, 0.01 s)."""
    last = bounds.max_nodes if top is None else top
    ns = list(range(bounds.min_nodes, last + 1))

    def model_of(n: int) -> PolicyModel:
        return PolicyModel(factory, n, events, wcc)

    # a 1-tuple: ``take`` answers None for "compute it here", and None is also a check that passed
    with taken_ahead(lambda n: (check_fast_path(model_of(n)),), ns[1:]) as take:
        for n in ns:
            model = model_of(n)
            got = take(n)
            why = got[0] if got is not None else check_fast_path(model)
            if why:
                print(f"verify: N={n}: {why}", file=sys.stderr)
                model.without_fast_path()
            yield model


def _says(bounds: Bounds) -> Explained:
    ties = ", every tie-break" if bounds.ties == "all" else ""
    return Explained(lambda n: f"N={n}", lambda a, b: f"N={a}..{b}",
                     f"depth ≤ {bounds.depth}, ≤ {bounds.max_jobs} jobs, w ≤ {bounds.max_w}{ties}")


def run_flat(claims: list[FlatClaim], bounds: Bounds, variant: str | Variant | None = None,
             factory: PolicyFactory | None = None, engine: Engine = SERIAL, deadline: float | None = None,
             progress: Progress | None = None) -> list[ClaimResult]:
    """Check ``claims`` within ``bounds``: one exploration per (variant, event family, premise
    filter). ``variant`` overrides every claim's own; ``factory`` (any flat policy, e.g. a test's
    mutant) overrides both."""
    groups: dict[tuple[Any, tuple[int, ...], bool], list[FlatClaim]] = {}
    for c in claims:
        v = variant if variant is not None else c.variant
        groups.setdefault((v, c.demands, c.wcc_trajectory), []).append(c)
    results = []
    for (v, demands, wcc), members in groups.items():
        vname = variant_name(v)
        fac = factory if factory is not None else compass_factory(v)
        label = f"{vname} g∈{{{','.join(map(str, demands))}}}{' WCC' if wcc else ''}"
        events = EventBounds(demands, bounds.max_jobs, bounds.max_w, bounds.ties == "all")
        cut = None if not bounds.every_n else find_cutoff(
            lambda n: PolicyModel(fac, n, events, wcc), bounds.min_nodes, bounds.max_nodes, bounds.depth,
            bounds.max_w, bounds.max_states, deadline, progress, label)
        models = _models(fac, bounds, events, wcc, None if cut is None else cut.explore_to(bounds.min_nodes))
        exp = explore(models, [c.prop for c in members], Limits(bounds.depth, bounds.max_states), engine, deadline,
                      progress, label)
        results += [flat_result(c, exp, bounds, vname, fac, label) for c in members]
        if cut is not None:
            results[-len(members):] = _every_n(results[-len(members):], members, cut, bounds)
    return results


def _every_n(results: list[ClaimResult], members: list[FlatClaim], cut: Cutoff, bounds: Bounds) -> list[ClaimResult]:
    """The group's verdicts read for every N (``--max-nodes all``; Φ★ checked once, if needed)."""
    phi = phi_star_stable(cut) if cut.confirmed and any(c.every_n is EveryN.PHI_STAR for c in members) else None
    return [every_n_result(r, c.prop, c.every_n, cut, phi, bounds.min_nodes, _says(bounds).rest)
            for r, c in zip(results, members)]


def flat_result(c: FlatClaim, exp: Exploration[FlatState, Event], bounds: Bounds, vname: str,
                factory: PolicyFactory, label: str) -> ClaimResult:
    """Verdict of one flat claim from its exploration."""
    out = exp.outcomes[c.id]
    b = {**bounds.describe(), "variant": vname, "arrivals g": list(c.demands),
         "premise filter": "WCC on every state of the trajectory" if c.wcc_trajectory else "none"}
    stats: dict[str, Any] = {"exploration": label, "sizes": [size_row(s) for s in exp.sizes],
                             "premise met": out.premise_met, "coverage": dict(out.covered)}
    verdict, msg = explored_verdict(c.prop, out, exp, bounds.min_nodes, _says(bounds))
    if out.finding is None:
        return ClaimResult(c.id, verdict, msg, b, stats)
    record = flat_record(c, out.finding, vname, factory)
    if c.prop.expect is Expect.REACHABLE:
        return ClaimResult(c.id, verdict, msg, b, {**stats, "witness": record})
    return ClaimResult(c.id, verdict, msg, b, stats, record)


def flat_record(c: FlatClaim, f: Finding[FlatState, Event], vname: str, factory: PolicyFactory,
                **extra: Any) -> Record:
    model = PolicyModel(factory, f.size, EventBounds(c.demands, 0, 0), c.wcc_trajectory)
    return trace_record(c.id, "policy", model, f, shown_trace(factory, f.size, f.actions), variant=vname,
                        capacity=model.capacity, wcc_trajectory=c.wcc_trajectory, **extra)


# --------------------------------------------------------------------------- sampling and replay
def sample_flat(c: FlatClaim, runs: int, seed_value: int, max_nodes: int, variant: str | Variant | None = None,
                factory: PolicyFactory | None = None, ties: bool = False,
                deadline: float | None = None) -> tuple[Record | None, int]:
    """``runs`` Hypothesis-drawn event sequences on N ≤ ``max_nodes`` (w ≤ 8, ≤ 30 events); ``ties``:
    a drawn option at every tie point too (``--ties all``), recorded in the events; ``deadline``
    and a signal end it early (fewer sequences run)."""
    v = variant if variant is not None else c.variant
    fac = factory if factory is not None else compass_factory(v)
    events = EventBounds(c.demands, MAX_ACTIONS, SAMPLE_MAX_W)
    found, count = sample(lambda n: PolicyModel(fac, n, events, c.wcc_trajectory), range(1, max_nodes + 1),
                          c.prop, runs, seed_value, ties=ties, deadline=deadline)
    if found is None:
        return None, count
    return flat_record(c, found, variant_name(v), fac, sampled=True), count


def replay_flat(c: FlatClaim, rec: Record, factory: PolicyFactory | None = None) -> tuple[ClaimResult, list[str]]:
    """Re-run one saved flat trace and re-check its claim on the replayed states."""
    n = int(rec["n_nodes"])
    fac = factory if factory is not None else compass_factory(rec.get("variant", "literal"))
    model = PolicyModel(fac, n, EventBounds(c.demands, 0, 0), bool(rec.get("wcc_trajectory")))
    events = [model.action_from_json(e) for e in rec["events"]]
    steps = replay_steps(model, events)
    differs = set(departures(model, steps, rec["states"]))
    lines = [f"replay {c.id} on N={n}, variant {rec.get('variant')}: {len(events)} events"]
    for k, st in enumerate(walk(fac, n, events)):
        lines.append(f"{k + 1}. {st.shown}" + (f"  -> NOT APPLIED: {st.failure}" if st.failure else ""))
        lines.extend("     " + row for row in st.rendered.splitlines())
        lines.append("     " + ", ".join(f"{k2}={v}" for k2, v in sif_numbers(Facts(st.state)).items()
                                          if k2 != "counts"))
        if k in differs:
            lines.append(f"     (differs from the recorded state after event {k + 1})")
    if len(steps) < len(events):
        lines.append(f"replay stopped after event {len(steps)} of {len(events)}")
    verdict, msg = replay_verdict(c.prop, first_firing(c.prop, steps))
    return ClaimResult(c.id, verdict, msg, {"trace": f"{len(events)} events on N={n}"},
                       counterexample=rec if verdict is Verdict.VIOLATED else None), lines


def bounds_text(b: Bounds, time_limit: float | None) -> str:
    nodes = (f"every N ≥ {b.min_nodes} (explored up to a cutoff N₀ + 1, N₀ sought up to {b.max_nodes})" if b.every_n
             else f"N = {b.min_nodes}..{b.max_nodes}")
    return (f"bounds: {nodes} nodes of 8 GPUs; ≤ {b.depth} events from the empty cluster; "
            f"≤ {b.max_jobs} concurrent jobs; arrivals w = 1..{b.max_w} (and w·g ≤ free GPUs); "
            f"≤ {b.max_states:,} distinct states per N of each exploration; time limit "
            f"{'none' if time_limit is None else f'{time_limit:g}s'}; "
            + ("" if b.every_n else f"count claims: every count vector with T ≤ {8 * b.max_nodes} GPUs; ")
            + f"ties: {_TIES_TEXT[b.ties]}")


_TIES_TEXT = {"first": "first (each 'pick any'/argmin tie to the canonical state's lowest node index)",
              "all": "all (every legal choice at every tie point of the scheduler)"}
