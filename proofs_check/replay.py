"""Walking and re-running an event trace (a counterexample or a witness) as the explorer saw it.

A trace is stored in the explorer's terms: each event's job label is the label in the *canonical*
state just before it, and each state is a canonical representative. :func:`walk` re-runs the
events from the empty cluster exactly the way the explorer did (expand from the representative,
canonicalise after every event), so the recorded trace replays exactly.

For display it also keeps *stable* names: a job keeps the name it got when it arrived (J0, J1, …
in arrival order) and a node keeps its number from the initial cluster, although the canonical
form renumbers both after every event; the rendered states use these stable names.

:func:`replay_file` re-runs every trace saved by ``verify --json`` and re-checks its claim.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Hashable

from heuristics.gpu.abs_space import POOL, SLOTTED, AbsView
from heuristics.gpu.cluster import Job
from proofs_check.gpu.canonical import canonical, canonical_map
from proofs_check.explorer import Event, Facts, PhiUnknown, PolicyFactory, state_from_json, used_per_node
from proofs_check.verdict import ClaimResult, Verdict


@dataclass(frozen=True)
class Step:
    event: Event  # as recorded (canonical labels)
    shown: str  # the event with stable job names
    state: Hashable  # canonical state after the event (unchanged when it failed)
    rendered: str  # the state with stable node and job names
    failure: str = ""  # the policy's reason when the event was not applied
    migrations: tuple = ()  # the migrations the event caused


def walk(factory: PolicyFactory, n_nodes: int, events: list[Event]) -> list[Step]:
    """Re-run ``events`` from the empty cluster of ``n_nodes`` nodes; stops after a failed event."""
    proto = factory(n_nodes)
    cur = canonical(proto.state_key())
    names: dict[int, int] = {}  # canonical label -> stable job name
    node_names = list(range(n_nodes))  # canonical node index -> stable node number
    next_name = 0
    steps: list[Step] = []
    for ev in events:
        pol = proto.with_state(cur)
        if ev.arrive:
            if ev.job in pol.running():
                raise ValueError(f"event {ev}: job label {ev.job} is already running")
            pending = {**names, ev.job: next_name}
            shown = f"+J{next_name} (g={ev.g},w={ev.w})"
            next_name += 1
            res = pol.arrive(Job(ev.job, ev.g, ev.w))
        else:
            if ev.job not in pol.running():
                raise ValueError(f"event {ev}: job label {ev.job} is not running")
            pending = names
            shown = f"-J{names[ev.job]} (g={ev.g},w={ev.w})"
            res = pol.depart(ev.job)
        if not res.ok:
            steps.append(Step(ev, shown, cur, render(cur, node_names, names), res.reason or "refused"))
            break
        cur, order, labels = canonical_map(pol.state_key())
        names = {labels[j]: pending[j] for j in labels}
        node_names = [node_names[i] for i in order]
        steps.append(Step(ev, shown, cur, render(cur, node_names, names), migrations=res.migrations))
    return steps


def render(key: Hashable, node_names: list[int] | None = None, names: dict[int, int] | None = None) -> str:
    """One line per node (by stable number): used/G, partial|full, type and contents."""
    node_names = node_names if node_names is not None else list(range(len(key.nodes)))
    nm = (lambda j: f"J{names[j]}") if names is not None else (lambda j: f"J{j}")
    used = used_per_node(key)
    rows = []
    for i in sorted(range(len(key.nodes)), key=lambda i: node_names[i]):
        if isinstance(key, AbsView):
            nd = key.nodes[i]
            if nd.kind == POOL:
                body = "pool [" + " ".join(nm(j) for j in sorted(nd.pool, key=nm)) + "]"
            elif nd.kind == SLOTTED:
                body = "slotted " + " ".join(
                    f"[w{s.width}: {nm(s.anchor_job)}(g={s.anchor_g})" + "".join(f" +{nm(f)}" for f in s.fillers) + "]"
                    for s in nd.slots)
            else:
                body = "empty"
        else:
            body = " ".join(f"{nm(x.job)}(g={x.g})" for x in key.nodes[i]) or "empty"
        u, cap = used[i], key.capacity
        tag = "partial" if 0 < u < cap else ("full" if u == cap else "-")
        rows.append(f"node {node_names[i]}: {u}/{cap} {tag:7s} {body}")
    return "\n".join(rows)


# --------------------------------------------------------------------------- --replay
class ReplayError(ValueError):
    """The file is not a trace ``verify --json`` wrote (one-line message, exit 2)."""


def load_traces(path: str) -> list[dict[str, Any]]:
    """The counterexample / witness records of a ``verify --json`` file."""
    p = Path(path)
    if not p.is_file():
        raise ReplayError(f"{path}: no such file")
    try:
        doc = json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ReplayError(f"{path}: not JSON (line {e.lineno}: {e.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ReplayError(f"{path}: not a verify --json report (no 'results' list)")
    out = []
    for r in doc["results"]:
        rec = r.get("counterexample") or (r.get("stats") or {}).get("witness")
        if rec:
            out.append({"claim": r.get("claim_id"), **rec})
    if not out:
        raise ReplayError(f"{path}: no counterexample or witness to replay")
    return out


def replay_record(rec: dict[str, Any], factory: PolicyFactory | None = None) -> tuple[ClaimResult, list[str]]:
    """Re-run one saved trace and re-check its claim on the replayed states.

    The verdict is about this one trace (bounds say so): violated if the claim still breaks on it,
    holds if it no longer does (e.g. the scheduler was fixed). Returns the result and the lines
    to print (every event and the state after it, and where the replay departs from the record).
    """
    from proofs_check.gpu.claims import CLAIMS, compass_factory, exact_phi_star, sif_numbers

    cid = rec.get("claim")
    if cid not in CLAIMS:
        raise ReplayError(f"trace names unknown claim {cid!r}")
    claim = CLAIMS[cid]
    if rec.get("kind") == "counts":
        return _replay_counts(claim, rec)
    if claim.kind == "delegated":
        return _replay_delegated(claim, rec)
    try:
        n = int(rec["n_nodes"])
        events = [Event.from_json(e) for e in rec["events"]]
        recorded = [state_from_json(s) for s in rec["states"]]
    except (KeyError, TypeError, ValueError) as e:
        raise ReplayError(f"malformed trace for {cid}: {e}") from None
    fac = factory if factory is not None else compass_factory(rec.get("variant", "literal"))
    steps = walk(fac, n, events)
    lines = [f"replay {cid} on N={n}, variant {rec.get('variant')}: {len(events)} events"]
    broken: dict | None = None
    for k, st in enumerate(steps):
        facts = Facts(st.state, n, 8, exact_phi_star, st.event, st.migrations)
        lines.append(f"{k + 1}. {st.shown}" + (f"  -> NOT APPLIED: {st.failure}" if st.failure else ""))
        lines.extend("     " + row for row in st.rendered.splitlines())
        try:
            lines.append("     " + ", ".join(f"{k2}={v}" for k2, v in sif_numbers(facts).items() if k2 != "counts"))
        except PhiUnknown:
            pass
        if k < len(recorded) and recorded[k] != st.state:
            lines.append(f"     (differs from the recorded state after event {k + 1})")
        if broken is None:
            broken = _recheck(claim, facts, st)
    if len(steps) < len(events):
        lines.append(f"replay stopped after event {len(steps)} of {len(events)}")
    b = {"trace": f"{len(events)} events on N={n}"}
    if claim.probe.kind == "reachable":
        v = Verdict.HOLDS if broken else Verdict.INCONCLUSIVE
        return ClaimResult(cid, v, "target reached on the trace" if broken else "target not reached on the trace", b), lines
    if broken:
        return ClaimResult(cid, Verdict.VIOLATED, f"reproduced: {broken}", b, counterexample=rec), lines
    return ClaimResult(cid, Verdict.HOLDS, "the claim holds on every state of this trace (no longer reproduces)", b), lines


def _recheck(claim, facts: Facts, st: Step) -> dict | None:
    p = claim.probe
    if st.failure:
        return {"operator failure": st.failure} if p.failure_breaks and st.failure.startswith("operator failure") else None
    if p.after not in ("any", "event") and (p.after == "arrival") != st.event.arrive:
        return None
    try:
        return p.test(facts)
    except PhiUnknown:
        return None


def _replay_counts(claim, rec: dict[str, Any]) -> tuple[ClaimResult, list[str]]:
    try:
        counts, n = tuple(int(x) for x in rec["counts"]), int(rec["N"])
    except (KeyError, TypeError, ValueError) as e:
        raise ReplayError(f"malformed count record for {claim.id}: {e}") from None
    verdict = claim.compare(counts, n)
    b = {"counts": list(counts), "N": n}
    lines = [f"replay {claim.id}: counts n_1..n_8 = {list(counts)} on N={n}"]
    if verdict is None:
        return ClaimResult(claim.id, Verdict.INCONCLUSIVE, "solver limit hit", b), lines
    ok, figures = verdict
    lines.append("     " + figures.pop("message"))
    if ok:
        return ClaimResult(claim.id, Verdict.HOLDS, "no longer reproduces", b), lines
    return ClaimResult(claim.id, Verdict.VIOLATED, "reproduced", b, counterexample=rec), lines


def _replay_delegated(claim, rec: dict[str, Any]) -> tuple[ClaimResult, list[str]]:
    """RingStitch records are re-run by their own checker's replay function, which re-solves the
    instance: 'suboptimal' reproduces the violation, 'optimal' means it no longer does."""
    try:
        import proofs_check.rack.ring_claims as ring
    except ImportError as e:
        raise ReplayError(f"{claim.id}: proofs_check.rack.ring_claims is not available ({e})") from None
    fn = getattr(ring, f"replay_{claim.id.replace('-', '_')}", None)
    if fn is None:
        raise ReplayError(f"{claim.id}: proofs_check.rack.ring_claims has no replay function for this record")
    status, shown = fn(rec)
    lines = [f"replay {claim.id}"] + list(shown)
    b = {"record": "ring"}
    if status == "suboptimal":
        return ClaimResult(claim.id, Verdict.VIOLATED, "reproduced", b, counterexample=rec), lines
    if status == "optimal":
        return ClaimResult(claim.id, Verdict.HOLDS, "no longer reproduces (RingStitch now picks the optimum)", b), lines
    return ClaimResult(claim.id, Verdict.INCONCLUSIVE, f"the exact oracle did not finish ({status})", b), lines
