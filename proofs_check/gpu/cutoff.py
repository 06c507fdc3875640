"""The node-count cutoff of `verify --max-nodes all` (issue 13 item 2): from N₀ on, more nodes only
add interchangeable empty ones, so a claim about node contents that holds for N = 1..N₀+1 holds
for every N (within the depth, job and width bounds). The argument, its assumption and what is
checked per run are in docs/verify.md ("Every N: the cutoff").

What this module checks mechanically, for one (policy, event family, premise filter) and bounds:

* **slack at N** — every state reachable at N keeps ≥ 1 empty node, and a state from which an
  arrival may come keeps ≥ W (max-w) empty nodes: every arrival of the bounds is then offered at
  N and at every larger N, and none is ever short of empty nodes;
* **padding at N** — the reachable graph at N + 1 equals the one at N once empty nodes are deleted
  (:func:`core`): the same cores at the same BFS depth, and from each the same events with the
  same outcomes, migration figures and successor cores. Then every state at N + 1 is a state at N
  plus one empty node, and every transition the same one;
* the cutoff N₀ is the smallest N (from the first size, up to a cap) with slack and padding;
* for claims that read Φ★ (SIF-type: Φπ − Φ★ ≤ k), :func:`phi_star_stable`: for every count
  vector reachable at N₀, Φ★ on N₀ nodes equals Φ★ without a node limit.

A budget (states, time) or a cap reached first makes the cutoff unconfirmed, with its reason:
the claim is then never reported as holding for every N.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Callable, Hashable, Iterable

from heuristics.gpu.abs_space import EMPTY, AbsView, NodeView
from heuristics.gpu.cluster import Placement
from proofs_check.core import interrupt
from proofs_check.core.model import Expect, Outcome, Property, Step, StateModel, Undecided
from proofs_check.core.search import Progress
from proofs_check.core.verdict import ClaimResult, Verdict, every_size_verdict
from proofs_check.gpu.canonical import FlatState, canonical_map
from proofs_check.gpu.events import Event, Round, counts_of_state
from proofs_check.gpu.facts import exact_phi_star
from proofs_check.gpu.live import placed

FlatModel = StateModel[Any, Any]  # flat states, or a scheduler's live states (read through ``placed``)
ALL = "all"  # the value of --max-nodes that asks for every N


class EveryN(Enum):
    """How a claim's property depends on N (docs/verify.md, "Every N: the cutoff")."""

    CORE = "node contents"  # reads only the non-empty nodes, the event, its outcome and migrations
    PHI_STAR = "Φπ − Φ★"  # also Φ★ of the state's counts on N nodes: covered when Φ★ is N-stable
    READS_N = "reads N"  # e.g. free GPUs or a packing into N nodes: never covered for every N


class CutoffStatus(Enum):
    CONFIRMED = "confirmed"
    NOT_FOUND = "not found"  # no N up to the cap has slack and padding
    BUDGET = "budget"  # a state or time budget stopped a reachability search


# --------------------------------------------------------------------------- cores
def is_empty_node(state: FlatState, i: int) -> bool:
    node = state.nodes[i]
    return node == NodeView(EMPTY) if isinstance(state, AbsView) else node == ()


def empty_nodes(state: FlatState) -> int:
    return sum(1 for i in range(len(state.nodes)) if is_empty_node(state, i))


def _stripped(state: FlatState) -> FlatState:
    if isinstance(state, AbsView):
        return AbsView(state.capacity, tuple(nd for nd in state.nodes if nd != NodeView(EMPTY)))
    return Placement(state.capacity, tuple(nd for nd in state.nodes if nd != ()))


def core(state: FlatState) -> tuple[FlatState, dict[int, int]]:
    """The state without its empty nodes, canonical (the same for every state of a class and for
    the class with any number of empty nodes added), and the job labels it gives. A malformed
    state a broken scheduler produced (policy.valid reports it) has no canonical form: it is its
    own core, labels unchanged."""
    stripped = _stripped(state)
    try:
        rep, _, labels = canonical_map(stripped)
    except Exception:
        return stripped, {}
    return rep, labels


def _moved(st: Step[FlatState, Event]) -> tuple[Hashable, ...]:
    """What a transition reports besides its successor: migrations (count, GPUs) and, for the
    policy.* model (its detail: ``policy_checks.Detail``), whether it was a refusal and whether
    that refusal changed the state. PolicyModel's detail is the migrations themselves."""
    d = st.detail
    moves = tuple(getattr(d, "migrations", d) or ())
    changed = getattr(d, "changed_to", None)
    return (len(moves), sum(m.g for m in moves), bool(getattr(d, "refused", False)),
            None if changed is None else core(changed)[0])


# --------------------------------------------------------------------------- the graph at one N
Edge = tuple[Hashable, ...]


@dataclass(frozen=True)
class Graph:
    """The reachable graph at one N, empty nodes deleted: core → (BFS depth, its edges)."""

    size: int
    cores: dict[FlatState, tuple[int, frozenset[Edge]]]
    states: tuple[FlatState, ...]  # the representatives themselves (Φ★ check)
    crowded: str  # the first state without slack ("" when every state has it)
    complete: bool  # False: stopped at a crowded state (``stop_crowded``) or by a budget
    stop: str  # why an incomplete search stopped
    seconds: float

    def row(self) -> dict[str, Any]:
        return {"N": self.size, "states": len(self.states), "slack": not self.crowded and self.complete,
                "crowded": self.crowded, "complete": self.complete, "stop": self.stop,
                "seconds": round(self.seconds, 3)}


def _slack(state: FlatState, actions: Iterable[Event], max_w: int) -> str:
    """'' when ``state`` keeps ≥ 1 empty node, and ≥ ``max_w`` when an arrival may come (``actions``
    offers one). With ≥ max_w empty nodes every arrival of the bounds (w·g ≤ G·max_w) is offered,
    so the offered events are the same at every larger N."""
    e = empty_nodes(state)
    need = max_w if any(a.arrive for a in actions) else 1
    return "" if e >= need else f"{len(state.nodes) - e} non-empty nodes, {e} empty, {need} needed"


def _edge(model: FlatModel, labels: dict[int, int], a: Event, st: Step[FlatState, Event]) -> Edge:
    ev: Any = a if isinstance(a, Round) else Event(a.arrive, labels.get(a.job, a.job), a.g, a.w)
    if st.outcome is not Outcome.APPLIED:
        return ev, st.outcome.value
    if not model.within(st):
        return ev, "pruned"
    state = placed(st.state)
    return ev, st.outcome.value, core(state)[0], _moved(st), len(state.nodes) - model.size


def reach_graph(model: FlatModel, depth: int, max_w: int, max_states: int, deadline: float | None = None,
                stop_crowded: bool = False) -> Graph:
    """Breadth-first over ``model`` (same actions, premise filter and representatives as the
    search), up to ``depth`` events; the cores of the reached states and their edges."""
    t0 = time.perf_counter()
    root = model.representative(model.init_states()[0])
    seen: dict[FlatState, int] = {root: 0}
    queue = deque([root])
    cores: dict[FlatState, tuple[int, frozenset[Edge]]] = {}
    crowded, stop = "", ""
    while queue:
        s = queue.popleft()
        d = seen[s]
        acts = list(model.actions(s)) if d < depth else []
        why = _slack(placed(s), acts, max_w)
        if why and not crowded:
            crowded = f"N={model.size} depth {d}: {why}"
            if stop_crowded:
                stop = "a state without slack"
                break
        c, labels = core(placed(s))
        edges = set()
        for a in acts:
            st = model.step(s, a)
            edges.add(_edge(model, labels, a, st))
            if st.outcome is Outcome.APPLIED and model.within(st):
                t = model.representative(st.state)
                if t not in seen:
                    seen[t] = d + 1
                    queue.append(t)
        # States with one core (a scheduler that keeps more than its placement) pool their edges:
        # any difference in behaviour between them then shows as a mismatch between sizes.
        known = cores.get(c)
        cores[c] = (d, frozenset(edges)) if known is None else (min(d, known[0]), known[1] | edges)
        stop = _budget_stop(len(seen), max_states, deadline)
        if stop:
            break
    return Graph(model.size, cores, tuple(placed(x) for x in seen), crowded, not stop, stop, time.perf_counter() - t0)


def _budget_stop(states: int, max_states: int, deadline: float | None) -> str:
    """Why a reachability search must stop now ('' if it may go on): the search's own budgets."""
    if interrupt.requested():
        return interrupt.INTERRUPTED
    if states > max_states:
        return f"max-states {max_states}"
    return "time limit" if deadline is not None and time.perf_counter() > deadline else ""


# --------------------------------------------------------------------------- the cutoff
@dataclass(frozen=True)
class Cutoff:
    """The outcome of the cutoff search: N₀ when confirmed, else why not; one row per graph."""

    status: CutoffStatus
    n0: int | None
    reason: str
    rows: tuple[dict[str, Any], ...]
    states: tuple[FlatState, ...] = ()  # reachable at N₀ (the Φ★ check reads their counts)

    @property
    def confirmed(self) -> bool:
        return self.status is CutoffStatus.CONFIRMED

    @property
    def covered_to(self) -> int:
        """The largest N whose reachable graph the search built completely (0: none)."""
        full = [r["N"] for r in self.rows if r["complete"]]
        return max(full, default=0)

    def explore_to(self, first: int) -> int:
        """The largest N the claims are explored at: N₀ + 1 when confirmed, else the last N the
        cutoff search examined (the claims are then inconclusive for every N, but their
        counterexamples and their verdicts for the explored N stand)."""
        if self.n0 is not None:
            return self.n0 + 1
        return max([first, *(r["N"] for r in self.rows)])

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status.value, "N0": self.n0, "reason": self.reason, "graphs": list(self.rows)}

    def text(self) -> str:
        if self.n0 is not None:
            return (f"cutoff N₀ = {self.n0}: every state reachable at N = {self.n0} keeps an empty node (max-w of "
                    f"them when an arrival may come), and the reachable graph at N = {self.n0 + 1} is the one at N = {self.n0} "
                    f"with one more empty node in every state" + (f". {self.reason}" if self.reason else ""))
        return f"no cutoff ({self.status.value}): {self.reason}"


def find_cutoff(make_model: Callable[[int], FlatModel], first: int, cap: int, depth: int, max_w: int, max_states: int,
                deadline: float | None = None, progress: Progress | None = None, label: str = "") -> Cutoff:
    """The smallest N in first..cap-1 with slack and padding (the graph at N + 1 ≤ cap checks it).
    ``deadline`` is a ``time.perf_counter()`` value, as the search's."""
    rows: list[dict[str, Any]] = []
    prev: Graph | None = None
    differs: list[int] = []  # N with slack whose graph at N + 1 is not its padding
    for n in range(first, cap + 1):
        # A state without slack at N cannot be a padded state of N - 1 (it would lack slack there
        # too), so its search may stop at once: N is neither N₀ nor the padding of N - 1.
        g = reach_graph(make_model(n), depth, max_w, max_states, deadline, stop_crowded=True)
        rows.append(g.row())
        if progress is not None:
            progress(f"[{label} cutoff N={n}] {len(g.states):,} states, {g.seconds:.1f}s: "
                     + (g.crowded or g.stop or "slack in every state"))
        if g.stop and not g.crowded:
            return Cutoff(CutoffStatus.BUDGET, None, f"{g.stop} at N={n}", tuple(rows))
        if prev is not None:
            rows[-1]["padding of N-1"] = g.complete and prev.cores == g.cores
            if rows[-1]["padding of N-1"]:
                return Cutoff(CutoffStatus.CONFIRMED, prev.size, _differs(differs), tuple(rows), prev.states)
            differs.append(prev.size)
        prev = g if g.complete else None
    if prev is not None and prev.size == cap:
        why = f"slack first at N = {cap}, the cap: N = {cap + 1} would check its padding"
    elif rows:
        why = f"no N ≤ {cap} keeps slack in every reachable state ({rows[-1]['crowded']})"
    else:
        why = f"the cap {cap} is below the first size {first}"
    return Cutoff(CutoffStatus.NOT_FOUND, None, f"{why}. {_differs(differs)}".strip(), tuple(rows))


def _differs(sizes: list[int]) -> str:
    """A padding that failed although N had slack: the policy then used more empty nodes than
    slack provides (or reads N); a later N may still be a cutoff, but the reader should know."""
    if not sizes:
        return ""
    return (f"With empty nodes deleted, the graph at N + 1 differed from the one at N for N = "
            f"{', '.join(map(str, sizes))}, although every state there had slack.")


@dataclass(frozen=True)
class PhiCheck:
    """Φ★ on N₀ nodes against Φ★ without a node limit, over the count vectors reachable at N₀."""

    stable: bool
    vectors: int
    reason: str = ""


def phi_star_stable(cut: Cutoff) -> PhiCheck:
    """Φ★ is non-increasing in N and, for N ≥ T (the number of instances: a packing never has more
    non-empty nodes than instances), equal to Φ★ without a node limit. So Φ★(N₀) = Φ★(max(N₀, T))
    for a count vector means Φ★ is the same at every N ≥ N₀."""
    assert cut.n0 is not None
    vectors = sorted({counts_of_state(s, s.capacity) for s in cut.states})
    for counts in vectors:
        t = sum(counts)
        if t <= cut.n0:
            continue
        try:
            at, unbounded = exact_phi_star(counts, cut.n0), exact_phi_star(counts, t)
        except Undecided as e:
            return PhiCheck(False, len(vectors), f"Φ★ undecided: {e}")
        if at != unbounded:
            return PhiCheck(False, len(vectors), f"counts {list(counts)}: Φ★ = {at} on N₀ = {cut.n0} nodes but "
                                                 f"{unbounded} without a node limit")
    return PhiCheck(True, len(vectors))


# --------------------------------------------------------------------------- verdicts for every N
def coverage_gap(kind: EveryN, cut: Cutoff, phi: PhiCheck | None) -> str:
    """Why the sizes explored do not stand for every N ('' when they do)."""
    if not cut.confirmed:
        return f"no cutoff: {cut.reason}"
    if kind is EveryN.READS_N:
        return "its property reads N itself (not a function of the non-empty nodes)"
    if kind is EveryN.PHI_STAR and (phi is None or not phi.stable):
        return "Φ★ is not shown to be the same at every N ≥ N₀" + (f": {phi.reason}" if phi else "")
    return ""


def every_n_result(r: ClaimResult, prop: Property[Any, Any], kind: EveryN, cut: Cutoff, phi: PhiCheck | None,
                   first: int, rest: str) -> ClaimResult:
    """``r`` (the verdict over the explored N) read for every N: JSON ``bounds.nodes`` is "all" when
    the claim is covered for every N ≥ ``first``, else the explored range."""
    gap = coverage_gap(kind, cut, phi)
    verdict, msg = every_size_verdict(prop, r.verdict, r.message, gap, _every(r, cut, first), rest)
    covered = verdict is Verdict.HOLDS and prop.expect is Expect.ALWAYS and not gap
    return _marked(replace(r, verdict=verdict, message=msg), covered, kind, cut, phi, first)


def every_n_measure(r: ClaimResult, cut: Cutoff, phi: PhiCheck | None, first: int) -> ClaimResult:
    """A measurement of Φπ − Φ★ over the explored N read for every N: the largest value is the same
    for every N ≥ N₀ + 1 as at N₀ + 1 when the cutoff is confirmed and Φ★ is N-stable."""
    if r.verdict is not Verdict.HOLDS:
        return _marked(r, False, EveryN.PHI_STAR, cut, phi, first)
    gap = coverage_gap(EveryN.PHI_STAR, cut, phi)
    if gap:
        return _marked(replace(r, verdict=Verdict.INCONCLUSIVE, message=f"{r.message}; not covered for every N: {gap}"),
                       False, EveryN.PHI_STAR, cut, phi, first)
    last = (r.stats.get("sizes") or [{"N": first}])[-1]["N"]
    msg = f"over {_every(r, cut, first)}: {r.message} (at every N > {last} as at N = {last})"
    return _marked(replace(r, message=msg), True, EveryN.PHI_STAR, cut, phi, first)


def _every(r: ClaimResult, cut: Cutoff, first: int) -> str:
    """'every N ≥ 1 (…)'; when no explored size left a state at the depth bound the reachable states
    are closed under events, so the claim covers any number of events, not only ≤ depth."""
    sizes = r.stats.get("sizes") or []
    closed = bool(sizes) and all(s["complete"] and not s["at depth bound"] for s in sizes)
    events = " and any number of events" if closed else ""
    last = sizes[-1]["N"] if sizes else first
    why = "; no state at the depth bound" if closed else ""
    return f"every N ≥ {first}{events} (explored N = {first}..{last}{why}; cutoff N₀ = {cut.n0})"


def _marked(r: ClaimResult, covered: bool, kind: EveryN, cut: Cutoff, phi: PhiCheck | None,
            first: int) -> ClaimResult:
    sizes = r.stats.get("sizes") or [{"N": first}]
    cutoff = {**cut.to_json(), "summary": cut.text(), "property": kind.value,
              "Φ★ check": None if phi is None else {"stable": phi.stable, "count vectors": phi.vectors,
                                                   "reason": phi.reason}}
    return replace(r, bounds={**r.bounds, "nodes": ALL if covered else f"{first}..{sizes[-1]['N']}"},
                   stats={**r.stats, "cutoff": cutoff})
