"""A flat GPU trace as people read it: stable job and node names, and the state after each event.

A trace is stored in the search's terms: each event's job label is the label in the
*representative* state just before it, and each state is a representative. :func:`walk` re-runs
the events from the empty cluster the way the search did (expand from the representative,
canonicalise after every event) and keeps *stable* names for display: a job keeps the name it got
when it arrived (J0, J1, … in arrival order) and a node keeps its number from the initial
cluster, although the canonical form renumbers both after every event.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from heuristics.gpu.abs_space import POOL, SLOTTED, AbsView
from heuristics.gpu.policy import Migration
from proofs_check.gpu.canonical import canonical, canonical_map
from proofs_check.gpu.events import Event, FlatState, used_per_node
from proofs_check.gpu.facts import Facts, sif_numbers
from proofs_check.gpu.policy_model import PolicyFactory, flat_key, run_event


@dataclass(frozen=True)
class ShownStep:
    """One step of a counterexample as shown: the event and the state after it, with stable names."""

    event: Event  # as recorded (canonical labels)
    shown: str  # the event with stable job names
    state: FlatState  # canonical state after the event (unchanged when it failed)
    rendered: str  # the state with stable node and job names
    failure: str = ""  # the policy's reason when the event was not applied
    migrations: tuple[Migration, ...] = ()  # the migrations the event caused
    node_names: tuple[int, ...] = ()  # canonical node index -> stable node number (for pictures)
    job_names: tuple[tuple[int, int], ...] = ()  # (canonical label, stable job name) pairs (for pictures)


def walk(factory: PolicyFactory, n_nodes: int, events: list[Event]) -> list[ShownStep]:
    """Re-run ``events`` from the empty cluster of ``n_nodes`` nodes; stops after a failed event."""
    proto = factory(n_nodes)
    cur = canonical(flat_key(proto.state_key()))
    names: dict[int, int] = {}  # canonical label -> stable job name
    node_names = list(range(n_nodes))  # canonical node index -> stable node number
    next_name = 0
    steps: list[ShownStep] = []
    for ev in events:
        pol = proto.with_state(cur)
        if ev.arrive:
            if ev.job in pol.running():
                raise ValueError(f"event {ev}: job label {ev.job} is already running")
            pending = {**names, ev.job: next_name}
            shown = f"+J{next_name} (g={ev.g},w={ev.w})"
            next_name += 1
            res = run_event(pol, ev)
        else:
            if ev.job not in pol.running():
                raise ValueError(f"event {ev}: job label {ev.job} is not running")
            pending = names
            shown = f"-J{names[ev.job]} (g={ev.g},w={ev.w})"
            res = run_event(pol, ev)
        if ev.choices:
            shown += " ties " + ",".join(map(str, ev.choices))
        if not res.ok:
            steps.append(ShownStep(ev, shown, cur, render(cur, node_names, names), res.reason or "refused",
                                   node_names=tuple(node_names), job_names=tuple(names.items())))
            break
        cur, order, labels = canonical_map(flat_key(pol.state_key()))
        names = {labels[j]: pending[j] for j in labels}
        node_names = [node_names[i] for i in order]
        steps.append(ShownStep(ev, shown, cur, render(cur, node_names, names), migrations=res.migrations,
                               node_names=tuple(node_names), job_names=tuple(names.items())))
    return steps


def render(key: FlatState, node_names: list[int] | None = None, names: dict[int, int] | None = None) -> str:
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


def shown_trace(factory: PolicyFactory, n_nodes: int, events: list[Event]) -> list[dict[str, Any]]:
    """The trace with stable job/node names and Φπ, Φ★, SIF after each event (for people)."""
    out = []
    for st in walk(factory, n_nodes, events):
        figures = {k: v for k, v in sif_numbers(Facts(st.state)).items() if k != "counts"}
        out.append({"event": st.shown, "state": st.rendered.splitlines(), "figures": figures, "failure": st.failure})
    return out
