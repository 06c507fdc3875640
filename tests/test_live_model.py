"""The scheduler the user runs is the scheduler checked (issue 22).

Each bug class that passed every checker when the explorer rebuilt schedulers from their declared
keys is caught here by ``verify --policy``, ``check_policy`` and the state machine alike; a bug
planted in a state real first-fit cannot reach is not reported; the declared abstractions are
refused when they are false; FFT and DRR are explored with their rounds.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from heuristics.gpu.cluster import Instance, Job, Placement, partial_nodes
from heuristics.gpu.compass import Compass
from heuristics.gpu.policy import EventResult
from heuristics.gpu.registry import make_policy
from proofs_check.cli.verify import main
from proofs_check.core.verdict import Verdict
from proofs_check.gpu.abstraction import Trust, check_fast_path, checked
from proofs_check.gpu.canonical import canonical
from proofs_check.gpu.events import Event, Round
from proofs_check.gpu.flat_claims import ALL_G
from proofs_check.gpu.live_model import LiveModel
from proofs_check.gpu.policy_model import EventBounds, PolicyModel
from proofs_check.testing import check_policy, policy_state_machine
from reach import reachable

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))
from my_sched import FirstFit  # noqa: E402  (the docs' 15-line scheduler)


# --------------------------------------------------------------------------- the bug classes
class LeakyCounter(FirstFit):
    """Keeps a free-GPU counter, decremented on arrival and never given back; declares its
    placement as its whole state (a false view)."""

    def __init__(self, n_nodes: int, capacity: int = 8) -> None:
        super().__init__(n_nodes, capacity)
        self.free = n_nodes * capacity

    def arrive(self, job: Job) -> EventResult:
        if job.g * job.w > self.free:
            return EventResult.refused("the counter says the cluster is full")
        res = super().arrive(job)
        if res.ok:
            self.free -= job.g * job.w
        return res

    def state_key(self) -> Placement:
        return self.placement()


class UsedPerJob(FirstFit):
    """Keeps a per-node used array and, on a departure, frees the job's whole g·w on every node it
    touched (once per job instead of once per instance): later arrivals overfill nodes."""

    def __init__(self, n_nodes: int, capacity: int = 8) -> None:
        super().__init__(n_nodes, capacity)
        self.used = [0] * n_nodes
        self.shape: dict[int, Job] = {}

    def arrive(self, job: Job) -> EventResult:
        free = [self.capacity - u for u in self.used]
        if sum(f // job.g for f in free) < job.w:
            return EventResult.refused("does not fit")
        for _ in range(job.w):
            k = next(i for i, f in enumerate(free) if f >= job.g)
            self.nodes[k].append(Instance(job.id, job.g))
            free[k] -= job.g
            self.used[k] += job.g
        self.shape[job.id] = job
        return EventResult.applied()

    def depart(self, job_id: int) -> EventResult:
        job = self.shape.pop(job_id)
        for k, node in enumerate(self.nodes):
            if any(i.job == job_id for i in node):
                self.used[k] = max(0, self.used[k] - job.g * job.w)
        return super().depart(job_id)

    def state_key(self) -> Placement:
        return self.placement()


class FourthArrival(FirstFit):
    """An arrival counter that changes a later decision: the fourth arrival's first instance is
    placed twice."""

    def __init__(self, n_nodes: int, capacity: int = 8) -> None:
        super().__init__(n_nodes, capacity)
        self.arrivals = 0

    def arrive(self, job: Job) -> EventResult:
        self.arrivals += 1
        res = super().arrive(job)
        if res.ok and self.arrivals == 4:
            node = next(n for n in self.nodes if any(i.job == job.id for i in n))
            node.append(Instance(job.id, job.g))
        return res

    def state_key(self) -> Placement:
        return self.placement()


BUGS = [(LeakyCounter, "policy.admission"), (UsedPerJob, "policy.valid"), (FourthArrival, "policy.valid")]


def _verify(spec: str, claim: str, *extra: str) -> int:
    return main(["--policy", spec, "--claim", claim, "--max-nodes", "2", "--depth", "5", "--quiet", *extra])


@pytest.mark.parametrize("cls,claim", BUGS, ids=[c.__name__ for c, _ in BUGS])
def test_verify_policy_catches_the_bug(cls: type, claim: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _verify(f"{__name__}:{cls.__name__}", claim) == 1
    out, err = capsys.readouterr()
    assert f"{claim}: VIOLATED" in out
    assert "view refused" in err  # the false declaration is named, and not used


@pytest.mark.parametrize("cls,claim", BUGS, ids=[c.__name__ for c, _ in BUGS])
def test_check_policy_catches_the_bug(cls: type, claim: str) -> None:
    with pytest.raises(AssertionError, match=f"{claim} violated"):
        check_policy(cls, claims=[claim], max_nodes=2, depth=5)


@pytest.mark.parametrize("cls", [c for c, _ in BUGS], ids=[c.__name__ for c, _ in BUGS])
def test_the_state_machine_catches_the_bug(cls: type) -> None:
    machine = policy_state_machine(cls, n_nodes=2, max_w=2)
    with pytest.raises(AssertionError):  # finding it is the test; shrinking it would only cost time
        run_state_machine_as_test(machine, settings=settings(max_examples=300, deadline=None, database=None,
                                                             phases=[Phase.generate], stateful_step_count=20,
                                                             suppress_health_check=list(HealthCheck)))


def test_the_docs_scheduler_holds_and_is_found_in_the_current_directory() -> None:
    proc = subprocess.run([sys.executable, "-m", "proofs_check.cli.verify", "--policy", "my_sched:FirstFit",
                           "--claim", "policy.valid", "--claim", "policy.admission", "--max-nodes", "2", "--depth",
                           "4", "--quiet"], cwd=EXAMPLES, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "policy.admission: HOLDS" in proc.stdout


def test_the_state_machine_passes_a_correct_scheduler() -> None:
    run_state_machine_as_test(policy_state_machine(FirstFit, n_nodes=3, max_w=3),
                              settings=settings(max_examples=50, deadline=None, database=None))


def test_the_state_machine_compares_the_rebuilt_copy() -> None:
    """A rebuild that forgets something the scheduler keeps is caught by the machine."""

    class ForgetfulRebuild(LeakyCounter):
        def with_state(self, key: Placement) -> "ForgetfulRebuild":
            fresh = ForgetfulRebuild(self.n_nodes, self.capacity)
            fresh.nodes = [list(n) for n in key.nodes]
            return fresh  # its counter is the full cluster's, the live one's is not

    with pytest.raises(AssertionError, match="rebuilt from its view"):
        run_state_machine_as_test(policy_state_machine(ForgetfulRebuild, n_nodes=1, max_w=1),
                                  settings=settings(max_examples=300, deadline=None, database=None,
                                                    suppress_health_check=list(HealthCheck)))


# --------------------------------------------------------------------------- index-based rules
B4 = EventBounds(ALL_G, 3, 2)  # g = 1..8, ≤ 3 jobs, w ≤ 2 (the bounds, depth 4, N = 3)


def _real_first_fit_classes(n: int, depth: int) -> set[Placement]:
    """Independent of the explorer: every placement real first-fit reaches (deep copies driven
    event by event), as canonical classes."""
    seen = {(make_policy("first-fit", n).placement(), ())}
    frontier = [(make_policy("first-fit", n), ())]
    for _ in range(depth):
        nxt = []
        for pol, jobs in frontier:
            free = n * 8 - sum(j.g * j.w for j in jobs)
            nid = min(set(range(len(jobs) + 1)) - {j.id for j in jobs})
            events = [(True, Job(nid, g, w)) for g in ALL_G for w in (1, 2) if g * w <= free and len(jobs) < 3]
            events += [(False, j) for j in jobs]
            for arrive, job in events:
                p = pol.clone()
                res = p.arrive(job) if arrive else p.depart(job.id)
                if not res.ok:
                    continue
                after = tuple(sorted((*jobs, job))) if arrive else tuple(j for j in jobs if j != job)
                key = (p.placement(), after)
                if key not in seen:
                    seen.add(key)
                    nxt.append((p, after))
        frontier = nxt
    return {canonical(p) for p, _ in seen}


def test_first_fit_is_explored_as_itself() -> None:
    """The issue's figures: real first-fit reaches 1,185 state classes, the canonical explorer 813."""
    real = _real_first_fit_classes(3, 4)
    live = {canonical(s.placement) for s in reachable(LiveModel(lambda k: make_policy("first-fit", k), 3, B4), 4)}
    old = set(reachable(PolicyModel(lambda k: make_policy("first-fit", k), 3, B4), 4))
    assert len(real) == 1185 and live == real
    assert len(old) == 813 and len(real - old) == 646 and len(old - real) == 274


class PlantedFirstFit(FirstFit):
    """First-fit with a bug planted in states real first-fit never reaches (set by the test)."""

    unreachable: frozenset[Placement] = frozenset()

    def arrive(self, job: Job) -> EventResult:
        res = super().arrive(job)
        if canonical(self.placement()) in self.unreachable:
            raise RuntimeError("planted bug")
        return res


def test_a_bug_the_real_scheduler_cannot_reach_is_not_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _real_first_fit_classes(3, 4)
    old = set(reachable(PolicyModel(lambda k: make_policy("first-fit", k), 3, B4), 4))
    monkeypatch.setattr(PlantedFirstFit, "unreachable", frozenset(old - real))
    (r,) = check_policy(PlantedFirstFit, claims=["policy.no-stuck"], min_nodes=3, max_nodes=3, depth=4, max_w=2)
    assert r.verdict is Verdict.HOLDS


# --------------------------------------------------------------------------- abstractions and rounds
def test_a_true_view_is_trusted_and_false_symmetry_refused() -> None:
    m = LiveModel(lambda k: make_policy("first-fit", k), 2, EventBounds(ALL_G, 3, 3))
    c = checked(m, 6)
    assert c.trust == Trust(view=True, rebuild=True) and not c.refused

    class ClaimsSymmetry(type(make_policy("first-fit", 1))):  # type: ignore[misc]
        symmetric = True

    m = LiveModel(lambda k: ClaimsSymmetry("first-fit", k), 2, EventBounds(ALL_G, 3, 3))
    c = checked(m, 6)
    assert c.trust == Trust(view=True, rebuild=True) and len(c.refused) == 1 and c.refused[0].startswith("symmetry refused")


def test_strict_stops_on_a_refused_abstraction(capsys: pytest.CaptureFixture[str]) -> None:
    assert _verify(f"{__name__}:LeakyCounter", "policy.valid", "--strict") == 2
    err = capsys.readouterr().err
    assert err.count("\n") >= 1 and "(--strict)" in err


@pytest.mark.parametrize("name", ["fft", "drr"])
def test_round_schedulers_are_explored_with_their_rounds(name: str) -> None:
    """The round start is an action: after +J0(5) +J1(5) +J2(3) −J0 two nodes are partial (3 and
    5 GPUs); the next round's repack (FFT) or drain (DRR) puts them on one node."""
    model = LiveModel(lambda k: make_policy(name, k), 2, EventBounds(ALL_G, 3, 2))
    bf = LiveModel(lambda k: make_policy("best-fit", k), 2, EventBounds(ALL_G, 3, 2))
    assert Round() in model.actions(model.init_states()[0]) and Round() not in bf.actions(bf.init_states()[0])
    s = model.init_states()[0]
    for a in [Event(True, 0, 5, 1), Event(True, 1, 5, 1), Event(True, 2, 3, 1), Event(False, 0, 5, 1)]:
        s = model.step(s, a).state
    assert partial_nodes(s.placement) == 2
    st = model.step(s, Round())
    assert st.applied and len(st.detail.migrations) == 1 and partial_nodes(st.state.placement) == 0


def test_sampling_catches_what_a_shallow_exhaustive_run_cannot(capsys: pytest.CaptureFixture[str]) -> None:
    """LeakyCounter needs three events (+J0(8) −J0 +J1(1)) on one node: depth 2 holds, and
    ``--random`` on the real object (no rebuild) finds it."""
    spec = f"{__name__}:LeakyCounter"
    base = ["--policy", spec, "--claim", "policy.admission", "--max-nodes", "1", "--depth", "2", "--quiet"]
    assert main(base) == 0
    assert main([*base, "--random", "200", "--random-nodes", "2"]) == 1
    assert "found by sampling" in capsys.readouterr().out


def test_check_policy_takes_hier_compass() -> None:
    (r,) = check_policy("hier-compass", claims=["policy.valid"], max_nodes=1, depth=2, max_w=1,
                        options={"panels_per_domain": 2})
    assert r.verdict is Verdict.HOLDS and r.bounds["policy"] == "hier-compass"


def test_simulate_takes_a_module_factory_from_the_current_directory() -> None:
    proc = subprocess.run([sys.executable, "-m", "proofs_check.cli.simulate", "--schedulers", "my_sched:FirstFit"],
                          cwd=EXAMPLES, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert any(line.startswith("my_sched:FirstFit") and "complete" in line for line in proc.stdout.splitlines())


# --------------------------------------------------------------------------- COMPASS's fast path
def test_a_broken_apply_and_undo_is_refused_and_the_run_rebuilds(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A rollback that forgets the running jobs makes the apply-and-undo path differ from a fresh
    rebuild after the first event of a state: the check refuses it, and the run, rebuilding per
    event, gets the right verdicts and counts."""
    from proofs_check.gpu.flat_claims import FLAT, Bounds, run_flat

    def factory(n: int) -> Compass:
        return Compass(n, 8, "literal")

    b = Bounds(max_nodes=2, depth=4, max_jobs=3, max_w=2)
    model = PolicyModel(factory, 2, EventBounds(ALL_G, 3, 2), True)
    assert check_fast_path(model) is None
    right = run_flat([FLAT["thm1.slotted"]], b, factory=factory)
    rollback = Compass.rollback

    def forgetful(self: Compass) -> None:
        rollback(self)
        self.jobs = {}

    monkeypatch.setattr(Compass, "rollback", forgetful)
    assert check_fast_path(PolicyModel(factory, 2, EventBounds(ALL_G, 3, 2), True)) is not None
    broken = run_flat([FLAT["thm1.slotted"]], b, factory=factory)
    assert "apply-and-undo refused" in capsys.readouterr().err
    def figures(results: list[Any]) -> list[Any]:
        return [(r.verdict, [{k: v for k, v in row.items() if k not in ("seconds", "distinct/s")}
                             for row in r.stats["sizes"]], r.counterexample["events"]) for r in results]

    assert figures(broken) == figures(right)


def test_the_checks_refuse_a_model_that_already_merges_by_a_view() -> None:
    """The checks take equal states for equal whole objects; under a trusted view two states with
    equal views are equal, and the view check would pass without stepping them."""
    m = LiveModel(lambda k: make_policy("first-fit", k), 2, EventBounds(ALL_G, 3, 3))
    with pytest.raises(ValueError, match="merging whole objects"):
        checked(m.with_trust(Trust(view=True)), 4)


@pytest.mark.parametrize("name", ["first-fit", "compass-literal"])
def test_a_trusted_rebuild_expands_views_and_reaches_what_the_objects_reach(name: str) -> None:
    """Under a checked rebuild a state is its view, expanded through ``with_state`` on a fresh
    scheduler (no pickle): it reaches exactly the state keys that expanding the kept objects
    reaches, and its states hold no pickle."""
    m = LiveModel(lambda k: make_policy(name, k), 2, EventBounds(ALL_G, 3, 2))
    trust = checked(m, 5).trust
    assert trust.rebuild
    fast, kept = m.with_trust(trust), m.with_trust(trust._replace(rebuild=False))
    got = reachable(fast, 5)
    assert {s.key for s in got} == {s.key for s in reachable(kept, 5)}
    assert all(s._blob is None for s in got)


def test_the_checks_keep_each_states_view_and_it_is_the_objects() -> None:
    """The abstraction checks compare views of states held as pickles: a model keeping views
    takes each from the object that made the state, and it is the revived copy's ``state_key()``;
    the model the search runs keeps none (its states stay as small as before)."""
    m = LiveModel(lambda k: make_policy("compass-literal", k), 2, EventBounds(ALL_G, 3, 2))
    kept = m.keeping_views()
    got = reachable(kept, 3)
    assert len(got) > 20 and all(s._view is not None and s.view() == s.obj().state_key() for s in got)
    assert all(s._view is None for s in reachable(m, 2))
