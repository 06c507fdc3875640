"""`verify --random K --seed S`: property-based sampling of event sequences on larger clusters.

Hypothesis draws a cluster size N ≤ ``max_nodes`` (default 64) and a sequence of up to
``MAX_EVENTS`` actions (an arrival of shape (g, w) from the claim's event family, or the
departure of the k-th running job); each action is applied the way the explorer applies events
(from the canonical state, canonicalised after), so a sampled counterexample replays exactly
with ``--replay``. ``hypothesis.target`` pushes the search toward the claim's quantity (Φπ − Φ★
for SIF, the non-full node counts, the unsaturated FUF slots, the ABS conditions broken). A
failure is shrunk by Hypothesis (database disabled, seeded) and reported like an explorer
counterexample. For WCC-premise claims an action that would break WCC is skipped.

Verdict rule (docs/verify.md): sampling never proves anything about the unsampled space. It runs
after the exhaustive check and can only *add* a counterexample (violated) or a reachability
witness (holds); otherwise the verdict stays the exhaustive one, with "no counterexample in K
sampled sequences" recorded in the stats.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings, target
from hypothesis import strategies as st

from heuristics.gpu.abs_space import in_abs, nonfull_pool, nonfull_slotted, unsaturated_fuf_slots
from heuristics.gpu.cluster import Job
from oracle.gpu.paper_phi import wcc_holds
from proofs_check.gpu.canonical import canonical
from proofs_check.gpu.claims import Claim, compass_factory, exact_phi_star, shown_trace, variant_name
from proofs_check.explorer import Event, Facts, PhiUnknown, PolicyFactory, running_jobs, state_to_json
from proofs_check.verdict import ClaimResult, Verdict

MAX_EVENTS = 30
MAX_W = 8


class _Found(AssertionError):
    pass


def _score(claim: Claim, f: Facts) -> float:
    """The quantity ``target()`` maximises for a claim (larger = closer to a violation)."""
    if claim.id.startswith("thm1.slotted"):
        return nonfull_slotted(f.view)
    if claim.id.startswith("thm1.pool"):
        return nonfull_pool(f.view)
    if claim.id == "lemA2":
        return unsaturated_fuf_slots(f.view)
    if claim.id == "prop1.abs":
        return len(in_abs(f.view))
    if claim.id == "migr":
        return len(f.migrations) / f.event.w if f.event is not None else 0.0
    return f.phi_pi


def sample_claim(claim: Claim, k: int, seed_value: int, max_nodes: int,
                 factory: PolicyFactory) -> tuple[dict[str, Any] | None, int]:
    """Run ``k`` sampled sequences; returns (trace record of the shrunk finding or None, runs)."""
    probe = claim.probe
    runs = [0]
    found: dict[str, Any] = {}
    action = st.one_of(
        st.tuples(st.just("+"), st.sampled_from(claim.demands), st.integers(1, MAX_W)),
        st.tuples(st.just("-"), st.integers(0, 63), st.just(0)),
    )

    @seed(seed_value)
    @settings(max_examples=k, database=None, deadline=None, derandomize=False, print_blob=False,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.target, Phase.shrink],
              report_multiple_bugs=False)
    @given(n=st.integers(1, max_nodes), actions=st.lists(action, max_size=MAX_EVENTS))
    def run(n: int, actions: list[tuple[str, int, int]]) -> None:
        runs[0] += 1
        proto = factory(n)
        cur = canonical(proto.state_key())
        events: list[Event] = []
        states = []
        best = 0.0
        for kind, a, b in actions:
            running = running_jobs(cur)
            if kind == "+":
                ev = Event(True, len(running), a, b)
            elif running:
                j = sorted(running)[a % len(running)]
                ev = Event(False, j, running[j].g, running[j].w)
            else:
                continue
            pol = proto.with_state(cur)
            res = pol.arrive(Job(ev.job, ev.g, ev.w)) if ev.arrive else pol.depart(ev.job)
            if not res.ok:
                if probe.failure_breaks and res.reason.startswith("operator failure"):
                    found.update(n=n, events=events + [ev], states=states + [cur],
                                 numbers={"operator failure": res.reason}, failure=res.reason)
                    raise _Found(res.reason)
                continue
            nxt = canonical(pol.state_key())
            facts = Facts(nxt, n, proto.capacity, exact_phi_star, ev, res.migrations)
            if claim.wcc_trajectory and not wcc_holds(facts.counts):
                continue
            cur = nxt
            events.append(ev)
            states.append(cur)
            if probe.after not in ("any", "event") and (probe.after == "arrival") != ev.arrive:
                continue
            best = max(best, _score(claim, facts))
            try:
                numbers = probe.test(facts)
            except PhiUnknown:
                continue
            if numbers is not None:
                found.update(n=n, events=list(events), states=list(states), numbers=numbers, failure="")
                raise _Found(str(numbers))
        target(best, label=claim.id)

    try:
        run()
    except _Found:
        pass
    if not found:
        return None, runs[0]
    record = {"kind": "trace", "claim": claim.id, "variant": variant_name(claim.variant), "n_nodes": found["n"],
              "capacity": 8, "wcc_trajectory": claim.wcc_trajectory, "sampled": True,
              "events": [e.to_json() for e in found["events"]],
              "states": [state_to_json(s) for s in found["states"]], "numbers": found["numbers"],
              "failure": found["failure"], "shown": shown_trace(factory, found["n"], found["events"])}
    return record, runs[0]


def sample_claims(claims: list[Claim], results: list[ClaimResult], k: int, seed_value: int, max_nodes: int,
                  variant=None, progress=None, factory: PolicyFactory | None = None) -> list[ClaimResult]:
    """Merge sampling into the exhaustive ``results`` by the rule of the module docstring."""
    by_id = {c.id: c for c in claims}
    out = []
    for r in results:
        c = by_id.get(r.claim_id)
        if c is None or c.kind != "state" or r.verdict == Verdict.VIOLATED or \
                (c.probe.kind == "reachable" and r.verdict == Verdict.HOLDS):
            out.append(r)
            continue
        v = variant if variant is not None else c.variant
        c = replace(c, variant=v)
        if progress is not None:
            progress(f"[{c.id}] sampling {k} sequences, N ≤ {max_nodes}, seed {seed_value}")
        rec, runs = sample_claim(c, k, seed_value, max_nodes, factory or compass_factory(v))
        stats = {**r.stats, "sampling": {"sequences": runs, "max_nodes": max_nodes, "seed": seed_value,
                                         "max_events": MAX_EVENTS, "max_w": MAX_W, "found": rec is not None}}
        bounds = {**r.bounds, "sampling": f"{k} sequences, N ≤ {max_nodes}, seed {seed_value}"}
        if rec is None:
            out.append(replace(r, stats=stats, bounds=bounds,
                               message=r.message + f"; no counterexample in {runs} sampled sequences (N ≤ {max_nodes})"))
        elif c.probe.kind == "reachable":
            out.append(replace(r, verdict=Verdict.HOLDS, bounds=bounds, stats={**stats, "witness": rec},
                               message=f"reached by sampling at N={rec['n_nodes']} after {len(rec['events'])} events"))
        else:
            out.append(replace(r, verdict=Verdict.VIOLATED, bounds=bounds, stats=stats, counterexample=rec,
                               message=f"violated (found by sampling, shrunk) at N={rec['n_nodes']} "
                                       f"after {len(rec['events'])} events"))
    return out
