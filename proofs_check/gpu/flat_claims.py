"""The claims about flat COMPASS (8-GPU nodes), as properties of the flat scheduler state model.

Each claim names its paper reference, premise and property; the scheduler variant and the event
family it applies to; and its property for the search. Claims sharing (variant, event family,
premise filter) are checked in one exploration (``proofs_check.core.search``) of
:class:`~proofs_check.gpu.policy_model.PolicyModel` over N = min_nodes..max_nodes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from heuristics.gpu.abs_space import in_abs, is_fuf, nonfull_pool, nonfull_slotted, unsaturated_fuf_slots
from heuristics.gpu.compass import VARIANTS, Compass, Variant
from proofs_check.core.claim import ClaimDoc
from proofs_check.core.engine import SERIAL, Engine
from proofs_check.core.model import Expect, Numbers, On, Property, Step
from proofs_check.core.replay import departures, first_firing, replay_steps, replay_verdict
from proofs_check.core.sampler import MAX_ACTIONS, sample
from proofs_check.core.search import Exploration, Finding, Limits, Progress, explore
from proofs_check.core.trace import Record, trace_record
from proofs_check.core.verdict import ClaimResult, Explained, Verdict, explored_verdict, size_row
from proofs_check.gpu.events import Event, FlatState, is_arrival, is_departure
from proofs_check.gpu.facts import Facts, facts, sif_numbers
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

    def describe(self) -> dict[str, Any]:
        return {"max_nodes": self.max_nodes, "min_nodes": self.min_nodes, "depth": self.depth,
                "max_jobs": self.max_jobs, "max_w": self.max_w, "max_states": self.max_states}


# --------------------------------------------------------------------------- properties on Facts
class OnFacts:
    """A Facts predicate lifted to steps (a class, not a lambda, so properties pickle)."""

    def __init__(self, fn: Callable[[Facts], Any]) -> None:
        self.fn = fn

    def __call__(self, st: Step[FlatState, Event]) -> Any:
        return self.fn(facts(st))


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


def _prop(name: str, test: Callable[[Facts], Numbers | None], score: Callable[[Facts], float] = _phi_pi,
          expect: Expect = Expect.ALWAYS, on: On = On.STATE, when: Callable[[Event], bool] | None = None,
          premise: Callable[[Facts], bool] | None = None, failure_breaks: bool = False) -> Property[FlatState, Event]:
    return Property(name, expect, OnFacts(test), on, when, None if premise is None else OnFacts(premise),
                    failure_breaks, OnFacts(score))


# --------------------------------------------------------------------------- the catalogue
@dataclass(frozen=True)
class FlatClaim:
    doc: ClaimDoc
    variant: str
    demands: tuple[int, ...]  # event family: job demands g that may arrive
    wcc_trajectory: bool  # explore only trajectories on which WCC holds after every event
    prop: Property[FlatState, Event]

    @property
    def id(self) -> str:
        return self.doc.id


def _claim(cid: str, ref: str, premise: str, prop_text: str, variant: str, demands: tuple[int, ...], wcc: bool,
           prop: Property[FlatState, Event]) -> FlatClaim:
    fam = "g ∈ {" + ",".join(map(str, demands)) + "}"
    doc = ClaimDoc(cid, ref, premise, prop_text, f"COMPASS variant '{variant}', arrivals {fam}, every departure")
    return FlatClaim(doc, variant, demands, wcc, prop)


_WCC = "WCC (eq. 9, count form n1 ≥ n3+3n5+2n6+n7) holds after every event of the trajectory"

FLAT_CLAIMS: tuple[FlatClaim, ...] = (
    _claim("thm1.slotted", "Theorem 1 (§4.4, eq. 10; Lemma A.4)", _WCC + "; sometimes: a slotted node exists",
           "after every event at most one slotted node is non-fully-packed", "literal", ALL_G, True,
           _prop("thm1.slotted", _slotted, lambda f: nonfull_slotted(f.view), premise=_has_slotted)),
    _claim("thm1.pool", "Theorem 1 (§4.4; Lemma A.3)", _WCC + "; sometimes: a pool node exists",
           "after every event at most one pool node is non-fully-packed", "literal", ALL_G, True,
           _prop("thm1.pool", _pool, lambda f: nonfull_pool(f.view), premise=_has_pool)),
    _claim("thm1.sif", "Theorem 1 (§4.4, eq. 10)", _WCC + "; sometimes: a job is running",
           "after every event SIF = (Φπ − Φ★)/N ≤ 2/N, Φ★ exact", "literal", ALL_G, True,
           _prop("thm1.sif", _sif, premise=_non_empty)),
    _claim("prop1.abs", "Proposition 1 (§4.4; Appendix B.1)", "none (any event sequence from the empty cluster)",
           "every produced state lies in ABS Σ (Definitions 1–5, eq. 4–8)", "literal", ALL_G, False,
           _prop("prop1.abs", _abs, lambda f: len(in_abs(f.view)))),
    _claim("prop1.operators", "Proposition 1 (§4.4; Appendix B.1: every operator branch maps Σ into Σ)",
           "none (any event sequence from the empty cluster)",
           "every event that is admitted produces a state: no operator is left without a legal move "
           "(an operator failure means the algorithm produced no state)", "literal", ALL_G, False,
           _prop("prop1.operators", _never, failure_breaks=True)),
    _claim("lemA2", "Lemma A.2 (Appendix B.1)", _WCC + "; sometimes: a FUF anchor (g ∈ {3,5,6,7}) is placed",
           "at the end of every event every FUF-anchored slot is saturated (g_a + |F| = w)", "literal", ALL_G, True,
           _prop("lemA2", _lem_a2, lambda f: unsaturated_fuf_slots(f.view), premise=_has_fuf)),
    _claim("prop3.arrival", "Proposition 3 (Appendix A; Lemmas B.1–B.3)", "g ∈ {2,4,8} only",
           "Φπ ≤ 2 after every arrival", "prop3", FF_G, False,
           _prop("prop3.arrival", PhiAbove(2), on=On.TRANSITION, when=is_arrival, premise=_always)),
    _claim("prop3.departure", "Proposition 3 (Appendix A.2, Part 2)", "g ∈ {2,4,8} only; sometimes: a departure",
           "Φπ ≤ 1 after every departure", "prop3", FF_G, False,
           _prop("prop3.departure", PhiAbove(1), on=On.TRANSITION, when=is_departure, premise=_always)),
    _claim("prop3.tight", "Proposition 3 (Appendix A.2, Tightness)", "g ∈ {2,4,8} only",
           "Φπ = 2 is reachable (after an arrival)", "prop3", FF_G, False,
           _prop("prop3.tight", _phi_two, expect=Expect.REACHABLE, on=On.TRANSITION, when=is_arrival)),
    _claim("migr", "repaired COMPASS (this toolkit, issue 8): migration cost per event",
           "none; sometimes: an event migrates an instance",
           f"every event of a job with w instances causes ≤ {MIGRATIONS_PER_W}·w + {MIGRATIONS_CONST} migrations",
           "repaired", ALL_G, False,
           _prop("migr", _migrations, _migrations_per_w, on=On.TRANSITION, premise=_moved)),
    _claim("abs.phi1", "aspiration (issue 8): Φπ ≤ Φ★ + 1, i.e. SIF ≤ 1/N", _WCC + "; sometimes: a job is running",
           "after every event Φπ ≤ Φ★ + 1 (exact Φ★)", "repaired", ALL_G, True,
           _prop("abs.phi1", _phi_star_plus_one, premise=_non_empty)),
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


def _models(factory: PolicyFactory, bounds: Bounds, events: EventBounds, wcc: bool) -> Iterable[PolicyModel]:
    return (PolicyModel(factory, n, events, wcc) for n in range(bounds.min_nodes, bounds.max_nodes + 1))


def _says(bounds: Bounds) -> Explained:
    return Explained(lambda n: f"N={n}", lambda a, b: f"N={a}..{b}",
                     f"depth ≤ {bounds.depth}, ≤ {bounds.max_jobs} jobs, w ≤ {bounds.max_w}")


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
        models = _models(fac, bounds, EventBounds(demands, bounds.max_jobs, bounds.max_w), wcc)
        exp = explore(models, [c.prop for c in members], Limits(bounds.depth, bounds.max_states), engine, deadline,
                      progress, label)
        results += [flat_result(c, exp, bounds, vname, fac, label) for c in members]
    return results


def flat_result(c: FlatClaim, exp: Exploration[FlatState, Event], bounds: Bounds, vname: str,
                factory: PolicyFactory, label: str) -> ClaimResult:
    """Verdict of one flat claim from its exploration."""
    out = exp.outcomes[c.id]
    b = {**bounds.describe(), "variant": vname, "arrivals g": list(c.demands),
         "premise filter": "WCC on every state of the trajectory" if c.wcc_trajectory else "none"}
    stats: dict[str, Any] = {"exploration": label, "sizes": [size_row(s) for s in exp.sizes],
                             "premise met": out.premise_met}
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
                factory: PolicyFactory | None = None) -> tuple[Record | None, int]:
    """``runs`` Hypothesis-drawn event sequences on N ≤ ``max_nodes`` (w ≤ 8, ≤ 30 events)."""
    v = variant if variant is not None else c.variant
    fac = factory if factory is not None else compass_factory(v)
    events = EventBounds(c.demands, MAX_ACTIONS, SAMPLE_MAX_W)
    found, count = sample(lambda n: PolicyModel(fac, n, events, c.wcc_trajectory), range(1, max_nodes + 1),
                          c.prop, runs, seed_value)
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
    return (f"bounds: N = {b.min_nodes}..{b.max_nodes} nodes of 8 GPUs; ≤ {b.depth} events from the empty cluster; "
            f"≤ {b.max_jobs} concurrent jobs; arrivals w = 1..{b.max_w} (and w·g ≤ free GPUs); "
            f"≤ {b.max_states:,} distinct states per N of each exploration; time limit "
            f"{'none' if time_limit is None else f'{time_limit:g}s'}; "
            f"count claims: every count vector with T ≤ {8 * b.max_nodes} GPUs")
