"""The pieces of the ``policy.*`` claims that touch a scheduler: which one (a registered name, a
``package.module:factory``, or a callable), the protocol check, and the tests of each claim on one
step (``proofs_check.gpu.live_model`` is the state model: the state is the scheduler object;
``proofs_check.gpu.policy_claims`` has the catalogue, the runs, the records and the replay). The job
accounting of ``policy.valid`` and the ``measure.sif`` report serve the hierarchical claims of
``proofs_check.gpu.hier_policy`` too.

A refused arrival is an applied step whose ``detail`` says it was refused (``live_model.Detail``),
so the exploration table's "refused" column reads 0 (refusals are counted among the generated steps).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, NamedTuple

from heuristics.gpu.cluster import G_DEFAULT, Job, Placement, placement_violations
from heuristics.gpu.policy import Migration, Policy
from heuristics.gpu.registry import load_factory, make_policy, policy_migrates, policy_names, protocol_gaps
from oracle.gpu.phi_star import min_nodes
from oracle.result import Status
from proofs_check.core.model import Expect, Numbers, On, Property, Step, Undecided
from proofs_check.core.search import Finding
from proofs_check.core.trace import Record
from proofs_check.core.verdict import ClaimResult, Verdict
from proofs_check.gpu.events import Event, FlatState, is_arrival, running_jobs, used_per_node
from proofs_check.gpu.facts import Facts, sif_numbers
from proofs_check.gpu.flat_claims import ALL_G
from proofs_check.gpu.live import placed
from proofs_check.gpu.live_model import Detail
from proofs_check.gpu.trace_view import render

HIER_HINT = ("hier-compass is hierarchical (its state is a HierView, NVLink domains of panels): the policy.* "
             "claims check flat schedulers; its claims are `verify --theorem 2`")



class PolicyError(ValueError):
    """The scheduler cannot be checked: not found, does not build, or does not implement the
    protocol. One line (the CLI prints it and exits 2)."""


# --------------------------------------------------------------------------- which scheduler
class SpecFactory:
    """``n -> Policy`` for a registered name or a ``package.module:factory`` spec (picklable: it
    holds strings only, so ``--workers`` can rebuild it in other processes)."""

    def __init__(self, spec: str, capacity: int = G_DEFAULT) -> None:
        self.spec, self.capacity = spec, capacity
        self._plugin: Callable[..., Policy] | None = None  # resolved once (a rebuild calls it per state)

    def __getstate__(self) -> tuple[str, int]:
        return self.spec, self.capacity

    def __setstate__(self, state: tuple[str, int]) -> None:
        self.spec, self.capacity = state
        self._plugin = None

    def __call__(self, n: int) -> Policy:
        if self._plugin is None:
            self._plugin = self._registered if self.spec in policy_names() else load_factory(self.spec)
        return self._plugin(n, self.capacity)

    def _registered(self, n: int, capacity: int) -> Policy:
        return make_policy(self.spec, n, capacity)


class CallableFactory:
    """``n -> Policy`` from a user's ``factory(n_nodes, capacity)`` (picklable when it is)."""

    def __init__(self, fn: Callable[..., Policy], capacity: int = G_DEFAULT) -> None:
        self.fn, self.capacity = fn, capacity

    def __call__(self, n: int) -> Policy:
        return self.fn(n, self.capacity)


def spec_label(fn: Callable[..., Any]) -> str:
    """``module:qualname`` of a factory (what a record names so ``--replay`` can rebuild it)."""
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', getattr(fn, '__name__', '?'))}"


def checked_policy(factory: Callable[[int], Policy], label: str, n: int = 1) -> Policy:
    """Build ``factory(n)`` and check it is a flat scheduler: PolicyError (one line) naming what
    is missing otherwise."""
    if label == "hier-compass":
        raise PolicyError(HIER_HINT)
    try:
        pol = factory(n)
    except PolicyError:
        raise
    except Exception as e:
        raise PolicyError(f"policy {label!r} does not build on {n} node(s): {type(e).__name__}: {e}") from None
    gaps = protocol_gaps(pol)
    if gaps:
        raise PolicyError(f"policy {label!r} ({type(pol).__name__}) does not implement the scheduler protocol "
                          f"(heuristics.gpu.policy.Policy): missing {', '.join(gaps)}")
    try:
        p = pol.placement()
    except Exception as e:
        raise PolicyError(f"policy {label!r}: placement() raised {type(e).__name__}: {e}") from None
    if not isinstance(p, Placement):
        raise PolicyError(f"policy {label!r}: placement() returns a {type(p).__name__}; the policy.* claims need "
                          f"a heuristics.gpu.cluster.Placement")
    if len(p.nodes) != n:
        raise PolicyError(f"policy {label!r}: placement() has {len(p.nodes)} nodes on a cluster of {n}")
    return pol


@dataclass(frozen=True)
class PolicyParams:
    """The claims' parameters (each recorded with a trace)."""

    bound: int = 2  # policy.sif: Φπ − Φ★ ≤ bound
    max_migrations: int = 0  # policy.migrations: ≤ m migrations per event
    migrating: bool = False  # policy.admission: judge refusals against a full repack
    demands: tuple[int, ...] = ALL_G  # the job demands g that may arrive

    def to_json(self) -> dict[str, Any]:
        return {"bound": self.bound, "max_migrations": self.max_migrations,
                "admission": "repack" if self.migrating else "free", "demands": list(self.demands)}

    @staticmethod
    def from_json(d: dict[str, Any]) -> "PolicyParams":
        return PolicyParams(int(d.get("bound", 2)), int(d.get("max_migrations", 0)), d.get("admission") == "repack",
                            tuple(int(g) for g in d.get("demands", ALL_G)))


@dataclass(frozen=True)
class PolicyTarget:
    """A scheduler to check: its name (registered, or ``module:factory``) and its factory."""

    name: str
    factory: Callable[[int], Policy]
    migrating: bool = False

    @staticmethod
    def named(spec: str, capacity: int = G_DEFAULT) -> "PolicyTarget":
        """A registered name or a ``package.module:factory`` spec, built and checked once."""
        if spec not in policy_names() and ":" not in spec:
            raise PolicyError(f"unknown policy {spec!r}; known: {', '.join(policy_names())} "
                              f"(or give package.module:factory)")
        fac = SpecFactory(spec, capacity)
        if ":" in spec and spec not in policy_names():
            try:
                load_factory(spec)
            except ValueError as e:
                raise PolicyError(str(e)) from None
        pol = checked_policy(fac, spec)
        return PolicyTarget(spec, fac, policy_migrates(spec, pol))


def no_ties(pol: Policy) -> str:
    return (f"--ties all: policy {getattr(pol, 'name', type(pol).__name__)!r} ({type(pol).__name__}) exposes no tie points: it has no `ties` "
            f"attribute (a heuristics.gpu.ties.Chooser it asks at each tie; docs/policies.md)")


def require_ties(target: PolicyTarget) -> None:
    """PolicyError (one line) unless the scheduler exposes its tie points (``--ties all``)."""
    pol = target.factory(1)
    if not hasattr(pol, "ties"):
        raise PolicyError(no_ties(pol))


def detail(st: Step[Any, Any]) -> Detail:
    return st.detail if isinstance(st.detail, Detail) else Detail(tuple(st.detail or ()))


def pfacts(st: Step[Any, Any]) -> Facts:
    f = st.memo.get("pfacts")
    if f is None:
        f = st.memo["pfacts"] = Facts(placed(st.state), st.action, detail(st).migrations)
    return f


@lru_cache(maxsize=1 << 16)
def _shape_items(key: FlatState) -> tuple[tuple[tuple[int, int], int], ...]:
    return tuple(sorted(Counter((j.g, j.w) for j in running_jobs(key).values()).items()))


def _shapes(key: FlatState) -> Counter[tuple[int, int]]:
    return Counter(dict(_shape_items(key)))


def _show_shapes(c: Counter[tuple[int, int]]) -> str:
    return ", ".join(f"{n}×(g={g},w={w})" for (g, w), n in sorted(c.items())) or "none"


def shape_problems(before: Counter[tuple[int, int]], after: Counter[tuple[int, int]], a: Event) -> list[str]:
    """policy.valid's job accounting, on flat or hierarchical states: the running (g, w) shapes
    ``after`` the event ``a`` are those ``before`` it ± the event's (empty if they are)."""
    want = before.copy()
    want[(a.g, a.w)] += 1 if a.arrive else -1
    if +want == +after:
        return []
    return [f"running jobs after {a} are {_show_shapes(after)}; expected {_show_shapes(+want)} "
            f"(every instance of a running job placed once, departed jobs gone)"]


@lru_cache(maxsize=1 << 16)
def _violations(p: Placement, jobs: tuple[Job, ...] | None) -> tuple[str, ...]:
    """``placement_violations`` memoised: many transitions reach the same (placement, jobs)."""
    return tuple(placement_violations(p, jobs))


# --------------------------------------------------------------------------- the tests
class Valid:
    """policy.valid on one transition: the placement against the jobs the environment knows are
    running (every instance of each placed exactly once, nothing else, no node above capacity)."""

    def __call__(self, st: Step[Any, Any]) -> Numbers | None:
        d = detail(st)
        if d.refused and d.changed_to is not None:
            return {"problem": f"the refused event {st.action} changed the scheduler's placement",
                    "placement after the refusal": render(d.changed_to).splitlines()}
        if st.prev is None or st.action is None or d.refused:
            return None
        state, prev = placed(st.state), placed(st.prev)
        jobs = getattr(st.state, "jobs", None)
        problems = list(_violations(state, jobs))
        if len(state.nodes) != len(prev.nodes):
            problems.append(f"the placement has {len(state.nodes)} nodes, the cluster {len(prev.nodes)}")
        if jobs is None:
            problems += shape_problems(_shapes(prev), _shapes(state), st.action)
        if not problems:
            return None
        try:
            figures = sif_numbers(Facts(state))
        except (RuntimeError, Undecided):  # an overfull placement has no Φ★
            figures = {}
        return {"problems": problems, **figures}


def never(st: Step[Any, Event]) -> Numbers | None:
    return None  # policy.no-stuck is decided by operator failures only


def admissible(key: Placement, g: int, w: int, migrating: bool) -> str | None:
    """Why a job of ``w`` instances of ``g`` GPUs can be admitted on ``key`` (None: it cannot,
    exactly). Without migrations: Σ_n ⌊free_n / g⌋ ≥ w (identical items); with them: a packing of
    every running instance plus the new ones into the N nodes exists (the Φ★ oracle's
    ``min_nodes``; Undecided when its solve hits a limit)."""
    cap = key.capacity
    room = sum((cap - u) // g for u in used_per_node(key) if u <= cap)
    if room >= w:
        return f"{w} instances of {g} GPUs fit the free GPUs as they are (room for {room})"
    if not migrating:
        return None
    counts = list(Facts(key).counts)
    counts[g - 1] += w
    cert = min_nodes(tuple(counts), len(key.nodes), cap)
    if cert.status is Status.INFEASIBLE:
        return None
    if not cert.is_optimal:
        raise Undecided(f"min-nodes solve for counts {counts}, N={len(key.nodes)} hit its limit")
    return f"a repacking of all {sum(counts)} instances (counts {counts}) uses {cert.objective} of {len(key.nodes)} nodes"


class Admission:
    """A refused arrival that could have been admitted (exact: :func:`admissible`)."""

    def __init__(self, migrating: bool) -> None:
        self.migrating = migrating

    def __call__(self, st: Step[Any, Any]) -> Numbers | None:
        a = st.action
        if a is None or not a.arrive or not detail(st).refused:
            return None
        why = admissible(placed(st.state), a.g, a.w, self.migrating)
        return None if why is None else {"refused": str(a), "reason": st.reason, "why it fits": why}


class SifBound:
    def __init__(self, bound: int) -> None:
        self.bound = bound

    def __call__(self, st: Step[FlatState, Event]) -> Numbers | None:
        f = pfacts(st)
        if f.phi_pi <= self.bound:
            return None
        gap = f.phi_pi - f.phi_star()
        return None if gap <= self.bound else {"Φπ − Φ★": gap, "bound": self.bound, **sif_numbers(f)}


class GapAtLeast:
    """REACHABLE probe of ``measure.sif``: Φπ − Φ★ ≥ j."""

    def __init__(self, j: int) -> None:
        self.j = j

    def __call__(self, st: Step[FlatState, Event]) -> Numbers | None:
        f = pfacts(st)
        if f.phi_pi < self.j:
            return None
        gap = f.phi_pi - f.phi_star()
        return {"Φπ − Φ★": gap, **sif_numbers(f)} if gap >= self.j else None


class Migrations:
    def __init__(self, limit: int) -> None:
        self.limit = limit

    def __call__(self, st: Step[FlatState, Event]) -> Numbers | None:
        moved = detail(st).migrations
        if len(moved) <= self.limit:
            return None
        return {"migrations": len(moved), "bound": self.limit, "event": str(st.action),
                "moves": [f"J{m.job}(g={m.g}) node {m.src} → {m.dst} ({m.kind})" for m in moved],
                **sif_numbers(Facts(placed(st.state)))}


def phi_pi_score(st: Step[FlatState, Event]) -> float:
    return pfacts(st).phi_pi


def moved_score(st: Step[FlatState, Event]) -> float:
    return len(detail(st).migrations)


Test = Callable[[Step[Any, Any]], Numbers | None]


class ClaimTests(NamedTuple):
    """The tests behind the policy.* claims on one kind of state (flat placements, or the
    hierarchy of ``hier_policy``): the claims are the same, what a state is differs."""

    valid: Callable[[], Test]
    admission: Callable[[bool], Test]  # migrating?
    sif_bound: Callable[[int], Test]
    migrations: Callable[[int], Test]
    gap_at_least: Callable[[int], Test]
    score: Callable[[Step[Any, Any]], float]  # what sampling maximises: Φπ
    moved: Callable[[Step[Any, Any]], float]  # migrations of the step


def gap_probe(j: int, tests: ClaimTests, measure_id: str) -> Property[Any, Any]:
    """The REACHABLE probe of ``measure_id``: Φπ − Φ★ ≥ j (named ``measure_id≥j`` in reports)."""
    return Property(probe_name(measure_id, j), Expect.REACHABLE, tests.gap_at_least(j), score=tests.score)


def probe_name(measure_id: str, j: int) -> str:
    return f"{measure_id}≥{j}"


def claim_property(cid: str, params: PolicyParams, tests: ClaimTests) -> Property[Any, Any]:
    """The search property of claim ``cid`` under ``params``."""
    if cid == "policy.valid":
        return Property(cid, Expect.ALWAYS, tests.valid(), On.TRANSITION, score=tests.score)
    if cid == "policy.no-stuck":
        return Property(cid, Expect.ALWAYS, never, failure_breaks=True, score=tests.score)
    if cid == "policy.admission":
        return Property(cid, Expect.ALWAYS, tests.admission(params.migrating), On.TRANSITION, is_arrival,
                        score=tests.score)
    if cid == "policy.sif":
        return Property(cid, Expect.ALWAYS, tests.sif_bound(params.bound), score=tests.score)
    if cid == "policy.migrations":
        return Property(cid, Expect.ALWAYS, tests.migrations(params.max_migrations), On.TRANSITION,
                        score=tests.moved)
    raise KeyError(cid)


# --------------------------------------------------------------------------- the measurement's report
class SizeAxis(NamedTuple):
    """How ``measure.sif`` names its sizes: N nodes (flat schedulers) or D domains of K panels
    (``hier_policy``: the gap at the GPU level)."""

    unit: str  # "N" / "D": the stats key "per N" and the message's "per N"
    figure: str  # the measured gap, as the message names it
    key_text: Callable[[str], str]  # a key of the "per N" figures, as the message lists it
    at: Callable[[int], str]  # the witness's size, as the message gives it after "first at"


def measured(measure_id: str, axis: SizeAxis, stats: dict[str, Any], per: dict[str, Any],
             best: tuple[int, Finding[Any, Any]] | None, complete: bool, row: dict[str, Any],
             record: Callable[[Finding[Any, Any], int], Record]) -> ClaimResult:
    """The ``measure.sif`` result (issue 14) from what its explorations found: ``per`` size the
    largest Φπ − Φ★ ("≥ j" where a limit was hit), the ``best`` gap with its shortest witness
    (``record(finding, gap)``); a lower bound only (inconclusive) unless ``complete``."""
    top = best[0] if best else 0
    stats = {**stats, "max Φπ − Φ★": top, f"per {axis.unit}": per}
    where = ", ".join(f"{axis.key_text(k)}: {g}" for k, g in per.items())
    if best is not None:
        f = best[1]
        stats["witness"] = record(f, top)
        msg = (f"largest {axis.figure} = {top} (first at {axis.at(f.size)} after {len(f.actions)} events); "
               f"per {axis.unit}: {where}")
    else:
        msg = f"Φπ − Φ★ = 0 in every explored state; per {axis.unit}: {where}"
    if not complete:
        return ClaimResult(measure_id, Verdict.INCONCLUSIVE, "lower bound only (a budget or solver limit was hit): "
                           + msg, row, stats)
    return ClaimResult(measure_id, Verdict.HOLDS, msg, row, stats)
