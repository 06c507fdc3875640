"""Check a scheduler in your own test suite (pytest, unittest, or anything that reports AssertionError).

Two tools, both for any flat scheduler implementing :class:`heuristics.gpu.policy.Policy`
(``n_nodes``, ``capacity``, ``arrive``, ``depart``, ``placement``); docs/policies.md has the
protocol and examples. Both check the object itself, with everything it keeps.

* :func:`check_policy` — exhaustive: the ``policy.*`` claims (``proofs_check.gpu.policy_claims``)
  on every event sequence within the bounds, breadth-first, so a failure is a *shortest*
  counterexample; it raises ``AssertionError`` whose message is that trace, state after state::

      from proofs_check.testing import check_policy
      from my_package.scheduler import MyScheduler

      def test_my_scheduler_is_valid():
          check_policy(MyScheduler, claims=["policy.valid", "policy.no-stuck", "policy.admission"],
                       max_nodes=3)

* :func:`policy_state_machine` — sampled: a Hypothesis ``RuleBasedStateMachine`` (rules *submit*,
  *finish* and, for a scheduler with rounds, *next_round*; checks: validity, exact admission, and
  the SIF bound when asked) driving ONE scheduler object through long random event sequences on
  clusters far beyond the exhaustive range::

      TestMySchedulerMachine = policy_state_machine(MyScheduler, n_nodes=32, sif_bound=2).TestCase

  When the scheduler declares a view and a rebuild (``state_key`` / ``with_state``), the machine
  also runs every event on a copy rebuilt from the view and compares the two.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from heuristics.gpu.cluster import G_DEFAULT, Job, Placement, partial_nodes, placement_violations
from heuristics.gpu.policy import EventResult, Outcome, Policy
from oracle.gpu.phi_star import phi_star
from proofs_check.core.report import trace_text
from proofs_check.core.verdict import ClaimResult, Verdict
from proofs_check.gpu import hier_policy
from proofs_check.gpu.flat_claims import ALL_G, Bounds
from proofs_check.gpu.policy_checks import admissible
from proofs_check.gpu.policy_claims import CLAIM_IDS, MEASURE_SIF, CallableFactory, PolicyParams, PolicyTarget, \
    checked_policy, run_policy_claims, spec_label

__all__ = ["check_policy", "policy_state_machine", "DEFAULT_CLAIMS"]

DEFAULT_CLAIMS: tuple[str, ...] = ("policy.valid", "policy.no-stuck", "policy.admission")
PolicySource = str | Callable[..., Policy]


def _target(factory: PolicySource, capacity: int, migrating: bool | None,
            options: dict[str, object] | None = None) -> PolicyTarget:
    if factory == hier_policy.NAME:  # hierarchical: D domains of K panels (gpu.hier_policy)
        t = hier_policy.hier_target(tuple(sorted((options or {}).items())))
    elif options:
        raise ValueError(f"options are taken by {hier_policy.NAME} only; build other schedulers with a factory")
    elif isinstance(factory, str):
        t = PolicyTarget.named(factory, capacity)
    else:
        fac = CallableFactory(factory, capacity)
        label = spec_label(factory)
        pol = checked_policy(fac, label)
        t = PolicyTarget(label, fac, bool(getattr(pol, "migrates", False)))
    return t if migrating is None else PolicyTarget(t.name, t.factory, migrating)


def check_policy(factory: PolicySource, claims: Iterable[str] = DEFAULT_CLAIMS, max_nodes: int = 4, *,
                 min_nodes: int = 1, depth: int = 6, max_jobs: int = 3, max_w: int = 3,
                 demands: Sequence[int] = ALL_G, bound: int = 2, max_migrations: int = 0,
                 migrating: bool | None = None, capacity: int = G_DEFAULT,
                 max_states: int = 500_000, options: dict[str, object] | None = None) -> list[ClaimResult]:
    """Check ``claims`` (ids of the policy.* family; default validity, no-stuck, admission) of the
    scheduler ``factory`` — ``factory(n_nodes, capacity) -> Policy`` or a registered name — on
    every event sequence from the empty cluster within the bounds, N = ``min_nodes``..``max_nodes``.

    Returns the results when every claim holds. Raises ``AssertionError`` when one is violated
    (the message is the shortest counterexample, with the state after every event) or cannot be
    decided within the bounds (a state budget or solver limit: never a silent pass), and
    ``ValueError`` (``PolicyError``) when the scheduler does not implement the protocol.
    ``migrating`` picks how refusals are judged (default: the scheduler's ``migrates`` attribute).
    ``"hier-compass"`` takes its ``options`` (``panels_per_domain``: K) and is checked on D =
    ``min_nodes``..``max_nodes`` NVLink domains, as ``verify --policy hier-compass`` does.
    """
    ids = list(claims)
    unknown = [c for c in ids if c not in CLAIM_IDS and c != MEASURE_SIF]
    if unknown:
        raise ValueError(f"unknown claim(s) {', '.join(unknown)}; known: {', '.join(CLAIM_IDS)}")
    target = _target(factory, capacity, migrating, options)
    b = Bounds(max_nodes=max_nodes, min_nodes=min_nodes, depth=depth, max_jobs=max_jobs, max_w=max_w,
               max_states=max_states)
    params = PolicyParams(bound, max_migrations, target.migrating, tuple(demands))
    results = run_policy_claims(ids, target, b, params)
    bad = [r for r in results if r.verdict in (Verdict.VIOLATED, Verdict.INCONCLUSIVE)]
    if bad:
        raise AssertionError("\n".join(failure_text(r, target.name) for r in bad))
    return results


def failure_text(r: ClaimResult, policy: str) -> str:
    """What a failed check says: the claim, the verdict, and the shortest counterexample."""
    lines = [f"{r.claim_id} {r.verdict.value} for {policy}: {r.message}"]
    if r.counterexample is not None:
        lines += trace_text(r.counterexample)
    return "\n".join(lines)


# --------------------------------------------------------------------------- Hypothesis
def policy_state_machine(factory: PolicySource, n_nodes: int = 16, *, capacity: int = G_DEFAULT,
                         demands: Sequence[int] = ALL_G, max_w: int = 8, sif_bound: int | None = None,
                         migrating: bool | None = None, admission: bool = True,
                         phi_time_limit: float = 5.0) -> type[RuleBasedStateMachine]:
    """A ``RuleBasedStateMachine`` class driving one ``factory(n_nodes, capacity)`` scheduler.

    Rules: *submit* a job (g from ``demands``, 1 ≤ w ≤ ``max_w``), *finish* a running one, and,
    for a scheduler with ``next_round()``, *next_round*. After every rule: the placement is valid
    (capacity, gang: every running job has exactly w instances of its g placed, nothing else is),
    every event returned an ``EventResult`` and was not an operator failure, a refused submission
    changed no placement and, unless ``admission=False`` (a scheduler that holds jobs on purpose),
    could not have been admitted (the exact rule of ``policy.admission``: the free GPUs, or for a
    migrating scheduler a full repack; ``migrating`` as in :func:`check_policy`), and, with ``sif_bound=k``,
    Φπ − Φ★ ≤ k (exact Φ★; a solve that hits ``phi_time_limit`` is skipped). When the scheduler
    declares a view and a rebuild (``state_key`` / ``with_state``), a copy rebuilt from its view
    before every rule runs the same event and must give the same result, placement and view.
    Hypothesis's ``target`` pushes toward large Φπ − Φ★. Use ``.TestCase`` in a test module.
    """
    target = _target(factory, capacity, migrating)
    build = (lambda: target.factory(n_nodes))
    gs = list(demands)
    probe = build()
    rounds = callable(getattr(probe, "next_round", None))
    rebuilds = callable(getattr(probe, "state_key", None)) and callable(getattr(probe, "with_state", None))

    class PolicyMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.policy: Any = build()
            self.jobs: dict[int, Job] = {}
            self.next_id = 0
            self.log: list[str] = []
            self.best_gap = 0

        def teardown(self) -> None:
            if sif_bound is not None:
                from hypothesis import target as aim

                aim(float(self.best_gap), label="Φπ − Φ★")  # push sampling toward large gaps

        def _run(self, what: str, act: Callable[[Any], Any]) -> EventResult:
            """``act`` on the scheduler (and on a copy rebuilt from its view, which must agree)."""
            shadow = self.policy.with_state(self.policy.state_key()) if rebuilds else None
            res = act(self.policy)
            self.log.append(f"{what} -> {getattr(getattr(res, 'outcome', None), 'value', repr(res))}")
            assert isinstance(res, EventResult), f"{what} returned {res!r}, not an EventResult\n" + self._history()
            assert res.outcome is not Outcome.FAILED, f"{what} failed: {res.reason}\n" + self._history()
            if shadow is not None:
                again = act(shadow)
                assert (again.outcome, len(again.migrations)) == (res.outcome, len(res.migrations)) and \
                    shadow.placement() == self.policy.placement() and \
                    shadow.state_key() == self.policy.state_key(), (
                        f"the scheduler rebuilt from its view (with_state(state_key())) before {what} behaves "
                        f"otherwise: {again.outcome.value} with {len(again.migrations)} migration(s), placement "
                        f"{shadow.placement()} vs {res.outcome.value}, {self.policy.placement()}\n" + self._history())
            return res

        @rule(g=st.sampled_from(gs), w=st.integers(1, max_w))
        def submit(self, g: int, w: int) -> None:
            job = Job(self.next_id, g, w)
            self.next_id += 1
            before = self.policy.placement()
            res = self._run(f"+J{job.id} (g={g},w={w})", lambda p: p.arrive(job))
            if res.outcome is Outcome.APPLIED:
                self.jobs[job.id] = job
                return
            assert self.policy.placement() == before, f"refused {job} changed the placement\n" + self._history()
            why = admissible(before, g, w, target.migrating) if admission else None
            assert why is None, f"refused {job} although {why}\n" + self._history()

        @precondition(lambda self: bool(self.jobs))
        @rule(pick=st.integers(0, 1 << 16))
        def finish(self, pick: int) -> None:
            jid = sorted(self.jobs)[pick % len(self.jobs)]
            res = self._run(f"-J{jid}", lambda p: p.depart(jid))
            assert res.outcome is Outcome.APPLIED, f"depart(J{jid}) was {res.outcome.value}: {res.reason}\n" + \
                self._history()
            del self.jobs[jid]

        if rounds:
            @rule()
            def next_round(self) -> None:
                res = self._run("next round", lambda p: p.next_round())
                assert res.outcome is Outcome.APPLIED, f"next_round() was {res.outcome.value}: {res.reason}\n" + \
                    self._history()

        @invariant()
        def valid(self) -> None:
            p: Placement = self.policy.placement()
            problems = placement_violations(p, self.jobs.values())
            if len(p.nodes) != n_nodes:
                problems.append(f"{len(p.nodes)} nodes, the cluster has {n_nodes}")
            assert not problems, "invalid placement: " + "; ".join(problems) + "\n" + self._history()

        if sif_bound is not None:
            @invariant()
            def sif(self) -> None:
                p = self.policy.placement()
                phi_pi = partial_nodes(p)
                cert = phi_star(p.counts(), n_nodes, capacity, phi_time_limit)
                if not cert.is_optimal or cert.objective is None:
                    return
                gap = phi_pi - cert.objective
                self.best_gap = max(self.best_gap, gap)
                assert gap <= sif_bound, (f"Φπ − Φ★ = {phi_pi} − {cert.objective} = {gap} > {sif_bound} "
                                          f"on N={n_nodes}\n" + self._history())

        def _history(self) -> str:
            return "events: " + "; ".join(self.log)

    PolicyMachine.__name__ = PolicyMachine.__qualname__ = f"PolicyMachine_{getattr(factory, '__name__', factory)}"
    return PolicyMachine
