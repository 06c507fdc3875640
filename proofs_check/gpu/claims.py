"""The claim catalogue of `verify` and the runner that turns each claim into a verdict.

Every claim names its paper reference, its premise, its property, the scheduler variant and the
event family it applies to. Three kinds:

* ``state`` claims are properties of the states a COMPASS variant reaches; they are checked by the
  exhaustive explorer (``proofs_check.explorer``), all claims sharing (variant, event family,
  premise filter) in one exploration;
* ``counts`` claims are about Φ★ formulas and are checked over every instance-count vector with
  total demand T ≤ 8·max_nodes, independently of any scheduler;
* ``delegated`` claims (RingStitch) are checked by ``proofs_check.rack.ring_claims``.

Verdict rules (never "holds" for a partial search):
  invariant — violated when a reached state breaks it (shortest trace); else inconclusive when a
  budget or an exact solve's limit stopped the check; else vacuous when its premise ("sometimes"
  check) was never met; else holds within the stated bounds.
  reachable — holds when the target is reached (the witness trace is reported); otherwise
  inconclusive: not reaching it within bounds does not refute reachability.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Callable, Iterator

from heuristics.gpu.abs_space import in_abs, is_fuf, nonfull_pool, nonfull_slotted, unsaturated_fuf_slots
from oracle.gpu.paper_phi import algorithm2, closed_form_phi, total_demand, wcc_holds
from oracle.gpu.phi_star import phi_star as oracle_phi_star
from proofs_check.explorer import (
    Bounds,
    Exploration,
    Facts,
    PhiUnknown,
    PolicyFactory,
    Probe,
    Progress,
    explore,
    state_to_json,
)
from proofs_check.verdict import ClaimResult, Verdict

ALL_G = (1, 2, 3, 4, 5, 6, 7, 8)
FF_G = (2, 4, 8)


class ClaimError(RuntimeError):
    """A claim could not be checked at all (e.g. its checker module is missing): exit 2."""


@dataclass(frozen=True)
class Claim:
    id: str
    ref: str
    premise: str
    property: str
    kind: str  # "state" | "counts" | "delegated"
    variant: str | None = None  # scheduler variant (state claims)
    demands: tuple[int, ...] = ()  # event family: job demands g that may arrive
    wcc_trajectory: bool = False  # explore only trajectories on which WCC holds at every event
    probe: Probe | None = None
    # counts claims: compare(counts, N) -> None (undecided: solver limit) | (ok, figures)
    compare: Callable[[tuple, int], tuple[bool, dict] | None] | None = None
    want_wcc: bool = True  # which count vectors: WCC holding (True) or failing (False)
    every_n: bool = True  # check every feasible N ≤ max_nodes, or only the smallest feasible N
    delegate: str = ""  # function name in proofs_check.rack.ring_claims

    @property
    def applies_to(self) -> str:
        if self.kind == "state":
            fam = "g ∈ {" + ",".join(map(str, self.demands)) + "}"
            return f"COMPASS variant '{self.variant}', arrivals {fam}, every departure"
        if self.kind == "counts":
            return "all instance-count vectors with T ≤ 8·max_nodes (no scheduler)"
        return "RingStitch (proofs_check.rack.ring_claims)"


# --------------------------------------------------------------------------- Φ★ for the probes
def exact_phi_star(counts: tuple[int, ...], n_nodes: int) -> int:
    """Exact Φ★ (memoised by the oracle on (counts, N)); a solver limit raises PhiUnknown."""
    cert = oracle_phi_star(counts, n_nodes)
    if cert.status == "optimal":
        return cert.objective
    if cert.status == "unknown":
        raise PhiUnknown(f"Φ★ solve for counts {counts}, N={n_nodes} hit its limit")
    raise RuntimeError(f"Φ★ infeasible for a reached state: counts {counts}, N={n_nodes}")


def sif_numbers(f: Facts) -> dict[str, Any]:
    """The figures a counterexample shows: N, Φπ, Φ★, SIF = (Φπ − Φ★)/N, counts."""
    out: dict[str, Any] = {"N": f.n_nodes, "counts": list(f.counts), "Φπ": f.phi_pi}
    try:
        ps = f.phi_star()
        out["Φ★"] = ps
        out["SIF"] = str(Fraction(f.phi_pi - ps, f.n_nodes))
    except PhiUnknown as e:
        out["Φ★"] = f"unknown ({e})"
    return out


# --------------------------------------------------------------------------- probe predicates
def _slotted(f: Facts) -> dict | None:
    k = nonfull_slotted(f.view)
    return None if k <= 1 else {"non-full slotted nodes": k, "bound": 1, **sif_numbers(f)}


def _pool(f: Facts) -> dict | None:
    k = nonfull_pool(f.view)
    return None if k <= 1 else {"non-full pool nodes": k, "bound": 1, **sif_numbers(f)}


def _sif(f: Facts) -> dict | None:
    if f.phi_pi <= 2:  # Φ★ ≥ 0, so SIF ≤ Φπ/N ≤ 2/N without solving anything
        return None
    ps = f.phi_star()
    if f.phi_pi - ps <= 2:
        return None
    return {"bound": f"2/{f.n_nodes}", **sif_numbers(f)}


def _abs(f: Facts) -> dict | None:
    bad = in_abs(f.view)
    return {"violated conditions": bad} if bad else None


def _lem_a2(f: Facts) -> dict | None:
    k = unsaturated_fuf_slots(f.view)
    if not k:
        return None
    where = [f"node {n} slot {i}: J{s.anchor_job}(g={s.anchor_g}) w{s.width} has {len(s.fillers)} fillers, vacancy {s.vacancy}"
             for n, nd in enumerate(f.view.nodes) for i, s in enumerate(nd.slots) if is_fuf(s.anchor_g) and s.vacancy > 0]
    return {"unsaturated FUF slots": k, "where": where, **sif_numbers(f)}


def _phi_above(limit: int) -> Callable[[Facts], dict | None]:
    def test(f: Facts) -> dict | None:
        return None if f.phi_pi <= limit else {"bound": limit, **sif_numbers(f)}
    return test


def _phi_star_plus_one(f: Facts) -> dict | None:
    if f.phi_pi <= 1:
        return None
    return None if f.phi_pi - f.phi_star() <= 1 else {"bound": "Φ★ + 1", **sif_numbers(f)}


# Repaired COMPASS, per event of a job with w instances (derivation in docs/repaired.md):
# arrival ≤ 3w filler draws + 7 pool moves + one slot-repack round (≤ 6 instance moves);
# departure ≤ 3w filler returns + 7 pool moves + w slot-repack rounds (≤ 6 each), or for
# 1-GPU jobs w replacement draws + 7w pool moves.
MIGRATIONS_PER_W, MIGRATIONS_CONST = 9, 13


def _migrations(f: Facts) -> dict | None:
    limit = MIGRATIONS_PER_W * f.event.w + MIGRATIONS_CONST
    k = len(f.migrations)
    if k <= limit:
        return None
    return {"migrations": k, "bound": f"{MIGRATIONS_PER_W}·w + {MIGRATIONS_CONST} = {limit}",
            "event": str(f.event), "GPUs moved": sum(m.g for m in f.migrations), **sif_numbers(f)}


def _moved(f: Facts) -> bool:
    return bool(f.migrations)


def _phi_two(f: Facts) -> dict | None:
    return {**sif_numbers(f)} if f.phi_pi == 2 else None


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


def _never(f: Facts) -> dict | None:
    return None  # prop1.operators is decided by operator failures only


# --------------------------------------------------------------------------- count-vector claims
def count_vectors(max_total: int, capacity: int = 8) -> Iterator[tuple[int, ...]]:
    """Every non-empty n_1..n_G with T = Σ g·n_g ≤ max_total, by increasing T."""
    def rec(g: int, rem: int) -> Iterator[tuple[int, ...]]:
        if g == 0:
            if rem == 0:
                yield ()
            return
        for k in range(rem // g + 1):
            for rest in rec(g - 1, rem - k * g):
                yield rest + (k,)

    for t in range(1, max_total + 1):
        yield from rec(capacity, t)


def _min_feasible_nodes(counts: tuple[int, ...], max_nodes: int) -> int | None:
    for n in range(max(1, -(-total_demand(counts) // 8)), max_nodes + 1):
        if oracle_phi_star(counts, n).status != "infeasible":
            return n
    return None


def _counts_result(claim: Claim, bounds: Bounds, checked: int, skipped: int, seconds: float,
                   breach: dict | None, unknown: str, timed_out: bool) -> ClaimResult:
    b = {"max_total_gpus": 8 * bounds.max_nodes, "N": f"1..{bounds.max_nodes}"}
    stats = {"checked": checked, "not packable in max_nodes nodes": skipped, "seconds": round(seconds, 2)}
    if breach is not None:
        return ClaimResult(claim.id, Verdict.VIOLATED, breach.pop("message"), b, stats,
                           {"kind": "counts", "claim": claim.id, **breach})
    if timed_out:
        return ClaimResult(claim.id, Verdict.INCONCLUSIVE, f"time limit hit after {checked} checks", b, stats)
    if unknown:
        return ClaimResult(claim.id, Verdict.INCONCLUSIVE, unknown, b, stats)
    if checked == 0:
        return ClaimResult(claim.id, Verdict.VACUOUS, "no count vector met the premise", b, stats)
    return ClaimResult(claim.id, Verdict.HOLDS, f"holds for all {checked} (counts, N) checks", b, stats)


def check_counts(claim: Claim, bounds: Bounds, deadline: float | None = None,
                 progress: Progress | None = None) -> ClaimResult:
    """Scan count vectors (WCC holding or failing as ``claim.want_wcc``) and N values.

    ``claim.compare(counts, N)`` returns None when it could not decide (solver limit), else
    (ok, figures). With ``every_n`` False only the smallest feasible N is checked: Φ★ never
    increases with N while eq. (21) ignores N and is a lower bound (a partial node is unavoidable
    when T mod 8 ≠ 0), so agreement at the smallest feasible N implies agreement at every N.
    """
    t0 = time.perf_counter()
    checked = skipped = 0
    unknown = ""
    next_report = t0 + 2.0
    for counts in count_vectors(8 * bounds.max_nodes):
        if wcc_holds(counts) != claim.want_wcc:
            continue
        now = time.perf_counter()
        if deadline is not None and now > deadline:
            return _counts_result(claim, bounds, checked, skipped, now - t0, None, unknown, True)
        if progress is not None and now > next_report:
            next_report = now + 2.0
            progress(f"[{claim.id}] T={total_demand(counts)}: {checked:,} checks, {checked / (now - t0):,.0f}/s")
        n_min = _min_feasible_nodes(counts, bounds.max_nodes)
        if n_min is None:
            skipped += 1
            continue
        for n in range(n_min, bounds.max_nodes + 1 if claim.every_n else n_min + 1):
            verdict = claim.compare(counts, n)
            checked += 1
            if verdict is None:
                unknown = unknown or f"solver limit hit at counts {counts}, N={n}"
                continue
            ok, figures = verdict
            if not ok:
                return _counts_result(claim, bounds, checked, skipped, time.perf_counter() - t0,
                                      figures, unknown, False)
    return _counts_result(claim, bounds, checked, skipped, time.perf_counter() - t0, None, unknown, False)


def _exact(counts: tuple[int, ...], n: int):
    cert = oracle_phi_star(counts, n)
    return None if cert.status == "unknown" else cert


def _figures(counts, n, cert, **more) -> dict:
    return {"counts": list(counts), "T": total_demand(counts), "N": n, "Φ★": cert.objective,
            "Φ★ witness": [[list(p), m] for p, m in cert.witness], **more}


def closed_form_compare(counts: tuple[int, ...], n: int):
    """Eq. (21) against the exact Φ★ on N nodes."""
    cert = _exact(counts, n)
    if cert is None:
        return None
    cf = closed_form_phi(counts)
    return cf == cert.objective, _figures(counts, n, cert, **{
        "eq. 21": cf, "message": f"eq. 21 gives {cf}, exact Φ★ = {cert.objective} for counts {counts} on N={n}"})


def alg2_compare(counts: tuple[int, ...], n: int):
    """Algorithm 2 (oracle.gpu.paper_phi, literal) against the exact Φ★ on N nodes."""
    cert = _exact(counts, n)
    if cert is None:
        return None
    res = algorithm2(counts, n)
    if res.status == "unknown":
        return None
    ok = res.status == "ok" and res.phi == cert.objective
    got = res.phi if res.status == "ok" else res.status
    return ok, _figures(counts, n, cert, **{
        "Algorithm 2": got, "branch": res.branch, "Algorithm 2 packing": [list(b) for b in res.packing],
        "packing fits N": res.fits,
        "message": f"Algorithm 2 ({res.branch}) gives {got}, exact Φ★ = {cert.objective} for counts {counts} on N={n}"})


# --------------------------------------------------------------------------- the catalogue
_WCC = "WCC (eq. 9, count form n1 ≥ n3+3n5+2n6+n7) holds after every event of the trajectory"

CATALOGUE: tuple[Claim, ...] = (
    Claim("thm1.slotted", "Theorem 1 (§4.4, eq. 10; Lemma A.4)", _WCC + "; sometimes: a slotted node exists",
          "after every event at most one slotted node is non-fully-packed", "state", "literal", ALL_G, True,
          Probe("thm1.slotted", "invariant", _slotted, premise=_has_slotted)),
    Claim("thm1.pool", "Theorem 1 (§4.4; Lemma A.3)", _WCC + "; sometimes: a pool node exists",
          "after every event at most one pool node is non-fully-packed", "state", "literal", ALL_G, True,
          Probe("thm1.pool", "invariant", _pool, premise=_has_pool)),
    Claim("thm1.sif", "Theorem 1 (§4.4, eq. 10)", _WCC + "; sometimes: a job is running",
          "after every event SIF = (Φπ − Φ★)/N ≤ 2/N, Φ★ exact", "state", "literal", ALL_G, True,
          Probe("thm1.sif", "invariant", _sif, premise=_non_empty)),
    Claim("prop1.abs", "Proposition 1 (§4.4; Appendix B.1)", "none (any event sequence from the empty cluster)",
          "every produced state lies in ABS Σ (Definitions 1–5, eq. 4–8)", "state", "literal", ALL_G, False,
          Probe("prop1.abs", "invariant", _abs)),
    Claim("prop1.operators", "Proposition 1 (§4.4; Appendix B.1: every operator branch maps Σ into Σ)",
          "none (any event sequence from the empty cluster)",
          "every event that is admitted produces a state: no operator is left without a legal move "
          "(an operator failure means the algorithm produced no state)", "state", "literal", ALL_G, False,
          Probe("prop1.operators", "invariant", _never, failure_breaks=True)),
    Claim("lemA2", "Lemma A.2 (Appendix B.1)", _WCC + "; sometimes: a FUF anchor (g ∈ {3,5,6,7}) is placed",
          "at the end of every event every FUF-anchored slot is saturated (g_a + |F| = w)", "state", "literal",
          ALL_G, True, Probe("lemA2", "invariant", _lem_a2, premise=_has_fuf)),
    Claim("prop3.arrival", "Proposition 3 (Appendix A; Lemmas B.1–B.3)", "g ∈ {2,4,8} only",
          "Φπ ≤ 2 after every arrival", "state", "prop3", FF_G, False,
          Probe("prop3.arrival", "invariant", _phi_above(2), after="arrival", premise=_always)),
    Claim("prop3.departure", "Proposition 3 (Appendix A.2, Part 2)", "g ∈ {2,4,8} only; sometimes: a departure",
          "Φπ ≤ 1 after every departure", "state", "prop3", FF_G, False,
          Probe("prop3.departure", "invariant", _phi_above(1), after="departure", premise=_always)),
    Claim("prop3.tight", "Proposition 3 (Appendix A.2, Tightness)", "g ∈ {2,4,8} only",
          "Φπ = 2 is reachable (after an arrival)", "state", "prop3", FF_G, False,
          Probe("prop3.tight", "reachable", _phi_two, after="arrival")),
    Claim("migr", "repaired COMPASS (this toolkit, issue 8): migration cost per event",
          "none; sometimes: an event migrates an instance",
          f"every event of a job with w instances causes ≤ {MIGRATIONS_PER_W}·w + {MIGRATIONS_CONST} migrations",
          "state", "repaired", ALL_G, False,
          Probe("migr", "invariant", _migrations, after="event", premise=_moved)),
    Claim("abs.phi1", "aspiration (issue 8): Φπ ≤ Φ★ + 1, i.e. SIF ≤ 1/N",
          _WCC + "; sometimes: a job is running",
          "after every event Φπ ≤ Φ★ + 1 (exact Φ★)", "state", "repaired", ALL_G, True,
          Probe("abs.phi1", "invariant", _phi_star_plus_one, premise=_non_empty)),
    Claim("closed-form", "Appendix C.2, eq. 21", "WCC holds for the counts",
          "Φ★ = 1[T mod 8 ≠ 0], T = Σ g·n_g (exact Φ★ on N nodes, N = smallest feasible .. max_nodes)",
          "counts", compare=closed_form_compare, every_n=False),
    Claim("alg2.wcc", "Appendix C.3–C.4, Algorithm 2", "WCC holds for the counts",
          "Algorithm 2 returns the exact Φ★ (every feasible N ≤ max_nodes)", "counts", compare=alg2_compare),
    Claim("alg2.nowcc", "Appendix C.3–C.4, Algorithm 2 (residual ILP)", "WCC fails for the counts",
          "Algorithm 2 returns the exact Φ★ (every feasible N ≤ max_nodes)", "counts", compare=alg2_compare, want_wcc=False),
    Claim("ring-exact", "RingStitch ring order (seed 004)", "≤ 8 racks",
          "the ring order is optimal (9–12 racks: worst nearest-neighbour/optimal ratio reported)",
          "delegated", delegate="check_ring_exact"),
    Claim("ring-choice", "RingStitch rack choice (seed 004)", "small instances",
          "distance of the chosen rack set from the lexicographic optimum (racks, ring cost, fragmentation)",
          "delegated", delegate="check_ring_choice"),
)
CLAIMS: dict[str, Claim] = {c.id: c for c in CATALOGUE}
THEOREMS: dict[int, tuple[str, ...]] = {1: ("thm1.slotted", "thm1.pool", "thm1.sif")}
# The claims each COMPASS variant makes (``verify --all --variant V`` checks exactly these): the
# paper's for literal and prop3, and the repaired variant's invariants (its docstring).
VARIANT_CLAIMS: dict[str, tuple[str, ...]] = {
    "literal": ("thm1", "prop1", "lemA2"),
    "prop3": ("prop3",),
    "repaired": ("thm1", "prop1", "lemA2", "migr"),
}


def resolve(ids: list[str]) -> list[Claim]:
    """Claims named by id or by id prefix before a dot ('thm1' → its parts); ValueError if unknown."""
    out: list[Claim] = []
    for cid in ids:
        found = [c for c in CATALOGUE if c.id == cid or c.id.startswith(cid + ".")]
        if not found:
            raise ValueError(f"unknown claim id {cid!r}; see `verify --list`")
        out.extend(c for c in found if c not in out)
    return out


# --------------------------------------------------------------------------- the runner
def compass_factory(variant) -> PolicyFactory:
    """A factory of COMPASS policies of ``variant`` (a name in VARIANTS or a Variant object)."""
    from heuristics.gpu.compass import VARIANTS, Compass

    if isinstance(variant, str) and variant not in VARIANTS:
        raise ValueError(f"unknown COMPASS variant {variant!r}; known: {', '.join(VARIANTS)}")
    return lambda n: Compass(n, 8, variant)


def variant_name(variant) -> str:
    return variant if isinstance(variant, str) else variant.name


def run_claims(claims: list[Claim], bounds: Bounds, variant=None, factory: PolicyFactory | None = None,
               deadline: float | None = None, progress: Progress | None = None,
               seed: int = 0, errors: list[str] | None = None, workers: int = 1,
               engine=None) -> list[ClaimResult]:
    """Check ``claims`` within ``bounds``; results in catalogue order.

    ``variant`` overrides every state claim's own variant; ``factory`` (a policy factory of any
    kind, e.g. a test's toy policy) overrides both. A delegated claim whose checker is missing
    raises ClaimError, or is appended to ``errors`` when that list is given. ``workers`` > 1 or an
    ``engine`` (``proofs_check.parallel.Engine``) runs the explorations partitioned (identical results).
    """
    results: dict[str, ClaimResult] = {}
    groups: dict[tuple, list[Claim]] = {}
    for c in claims:
        if c.kind == "state":
            v = variant if variant is not None else c.variant
            groups.setdefault((v, c.demands, c.wcc_trajectory), []).append(replace(c, variant=v))
    for (v, demands, wcc), members in groups.items():
        vname = variant_name(v)
        fac = factory if factory is not None else compass_factory(v)
        label = f"{vname} g∈{{{','.join(map(str, demands))}}}{' WCC' if wcc else ''}"
        exp = explore(fac, demands, bounds, [c.probe for c in members], exact_phi_star, wcc, deadline,
                      progress, label, workers=workers, engine=engine)
        for c in members:
            results[c.id] = state_result(c, exp, bounds, vname, wcc, fac, label)
    for c in claims:
        if c.kind == "counts":
            results[c.id] = check_counts(c, bounds, deadline, progress)
        elif c.kind == "delegated":
            try:
                for r in _delegated(c, seed, progress):
                    results[r.claim_id] = r
            except ClaimError as e:
                if errors is None:
                    raise
                errors.append(str(e))
    order = {c.id: i for i, c in enumerate(CATALOGUE)}
    return sorted(results.values(), key=lambda r: (order.get(r.claim_id.split("[")[0], len(order)), r.claim_id))


def _delegated(c: Claim, seed: int, progress: Progress | None) -> list[ClaimResult]:
    try:
        import proofs_check.rack.ring_claims as ring
    except ImportError as e:
        raise ClaimError(f"claim {c.id}: its checker proofs_check.rack.ring_claims is not available ({e})") from None
    fn = getattr(ring, c.delegate, None)
    if fn is None:
        raise ClaimError(f"claim {c.id}: proofs_check.rack.ring_claims has no {c.delegate}()")
    return list(fn(seed=seed, progress=progress))


def state_result(c: Claim, exp: Exploration, bounds: Bounds, vname: str, wcc: bool,
                 factory: PolicyFactory, label: str) -> ClaimResult:
    """Verdict of one state claim from its exploration (rules in the module docstring)."""
    out = exp.outcomes[c.id]
    b = {**bounds.describe(), "variant": vname, "arrivals g": list(c.demands),
         "premise filter": "WCC on every state of the trajectory" if wcc else "none"}
    stats = {"exploration": label, "sizes": [_size_stats(s) for s in exp.sizes], "premise met": out.premise_met}
    if out.finding is not None:
        f = out.finding
        record = {"kind": "trace", "claim": c.id, "variant": vname, "n_nodes": f.n_nodes, "capacity": 8,
                  "wcc_trajectory": wcc, "events": [e.to_json() for e in f.events],
                  "states": [state_to_json(s) for s in f.states], "numbers": f.numbers, "failure": f.failure,
                  "shown": shown_trace(factory, f.n_nodes, f.events)}
        if c.probe.kind == "reachable":
            msg = f"reached at N={f.n_nodes} after {len(f.events)} events"
            return ClaimResult(c.id, Verdict.HOLDS, msg, b, {**stats, "witness": record})
        msg = f"violated at N={f.n_nodes} after {len(f.events)} events" + (f" ({f.failure})" if f.failure else "")
        return ClaimResult(c.id, Verdict.VIOLATED, msg, b, stats, record)
    covered = f"N=1..{exp.sizes[-1].n_nodes}" if exp.sizes else "nothing"
    if out.unknown:
        return ClaimResult(c.id, Verdict.INCONCLUSIVE, out.unknown, b, stats)
    if not exp.complete:
        last = exp.sizes[-1]
        return ClaimResult(c.id, Verdict.INCONCLUSIVE,
                           f"{last.stop_reason} hit at N={last.n_nodes} ({last.queue_left} states queued)", b, stats)
    if c.probe.kind == "reachable":
        return ClaimResult(c.id, Verdict.INCONCLUSIVE, f"target not reached within the bounds ({covered})", b, stats)
    if c.probe.premise is not None and not out.premise_met:
        return ClaimResult(c.id, Verdict.VACUOUS, f"premise never met ({covered})", b, stats)
    return ClaimResult(c.id, Verdict.HOLDS, f"holds within bounds ({covered}, depth ≤ {bounds.depth}, "
                                            f"≤ {bounds.max_jobs} jobs, w ≤ {bounds.max_w})", b, stats)


def shown_trace(factory: PolicyFactory, n_nodes: int, events) -> list[dict[str, Any]]:
    """The trace with stable job/node names and Φπ, Φ★, SIF after each event (for people)."""
    from proofs_check.replay import walk

    out = []
    for st in walk(factory, n_nodes, list(events)):
        figures = {k: v for k, v in sif_numbers(Facts(st.state, n_nodes, 8, exact_phi_star)).items() if k != "counts"}
        out.append({"event": st.shown, "state": st.rendered.splitlines(), "figures": figures, "failure": st.failure})
    return out


def _size_stats(s) -> dict[str, Any]:
    return {"N": s.n_nodes, "distinct": s.distinct, "generated": s.generated, "depth": s.depth_reached,
            "at depth bound": s.at_depth_bound, "queue left": s.queue_left, "refused": s.refused,
            "operator failures": s.operator_failures, "pruned (WCC)": s.pruned_wcc,
            "seconds": round(s.seconds, 3), "distinct/s": round(s.rate) if s.seconds else None,
            "complete": s.complete, "stop": s.stop_reason}

