"""Every legal tie-break of the baselines (issue 13): best-fit / worst-fit / FGD / CAFGD / MCG expose
their equal-score node choices (heuristics.gpu.baselines ``ties``), ``verify --policy X --ties all``
explores them, and a counterexample's choices replay."""
from __future__ import annotations

import random
from functools import lru_cache
from typing import Any

import pytest

from heuristics.gpu.baselines import NodeRulePolicy, same_score
from heuristics.gpu.cluster import Instance, Job, Placement
from heuristics.gpu.registry import make_policy
from heuristics.gpu.ties import Script
from proofs_check.cli.verify import main
from proofs_check.core.verdict import Verdict
from proofs_check.gpu.canonical import canonical
from proofs_check.gpu.events import Event, FlatState, job_events
from proofs_check.gpu.flat_claims import Bounds
from proofs_check.gpu.live_model import LiveModel
from proofs_check.gpu.policy_checks import PolicyTarget, detail
from proofs_check.gpu.policy_claims import PolicyParams, replay_record, run_policy_claims
from proofs_check.gpu.policy_model import EventBounds
from reach import applied, reachable

ALL_G = (1, 2, 3, 4, 5, 6, 7, 8)
WITH_TIES = ("best-fit", "worst-fit", "fgd", "cafgd", "mcg")


class RandomChooser:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def pick(self, point: str, k: int) -> int:
        return self.rng.randrange(k)


def _free(pol: NodeRulePolicy) -> int:
    return sum(f * k for f, k in enumerate(pol.free_levels()))


def _random_event(rng: random.Random, pol: NodeRulePolicy, demands: tuple[int, ...], max_jobs: int,
                  max_w: int) -> Event:
    return rng.choice(job_events(pol.running(), _free(pol), demands, max_jobs, max_w))


def _apply(pol: NodeRulePolicy, ev: Event) -> Any:
    return pol.arrive(Job(ev.job, ev.g, ev.w)) if ev.arrive else pol.depart(ev.job)


@pytest.mark.parametrize("name", ("first-fit",) + WITH_TIES)
def test_option_zero_everywhere_is_the_default_implementation(name: str) -> None:
    """A chooser that always takes option 0 places every instance where the policy without a
    chooser does, on random event sequences (and it is asked: the tie points exist)."""
    asked = 0
    for seed in range(6):
        rng = random.Random(seed)
        plain = make_policy(name, 4)
        chosen = make_policy(name, 4)
        assert isinstance(plain, NodeRulePolicy) and isinstance(chosen, NodeRulePolicy)
        for _ in range(25):
            ev = _random_event(rng, plain, ALL_G, 4, 3)
            chosen.ties = script = Script(())
            a, b = _apply(plain, ev), _apply(chosen, ev)
            assert a.outcome is b.outcome and plain.placement() == chosen.placement()
            asked += len(script.made)
    assert (asked == 0) == (name == "first-fit")  # first-fit's lowest index is its rule, not a tie


def _state(*nodes: tuple[tuple[int, int], ...]) -> Placement:
    return Placement(8, tuple(tuple(Instance(j, g) for j, g in node) for node in nodes))


# free GPUs per node 3, 8, 3, 4, 0, every instance of 1 GPU (so FGD's ΔF of a 1-GPU instance is 0 everywhere)
FREE_3_8_3_4_0 = _state(((10, 1),) * 5, (), ((11, 1),) * 5, ((12, 1),) * 4, ((13, 1),) * 8)


@pytest.mark.parametrize("name, g, options", [
    ("first-fit", 1, [0]),  # the lowest index is the rule, not a tie
    ("best-fit", 2, [0, 2]),  # the tightest level (3 free) holds two nodes
    ("best-fit", 4, [3]),
    ("worst-fit", 1, [1]),
    ("fgd", 1, [0, 2, 3, 1]),  # every fitting node, in the default order: fewest free GPUs, then index
])
def test_tie_options_are_the_nodes_of_equal_score_default_first(name: str, g: int, options: list[int]) -> None:
    for taken, want in enumerate(options):
        pol = make_policy(name, 5).with_state(FREE_3_8_3_4_0)
        assert isinstance(pol, NodeRulePolicy)
        pol.ties = script = Script((taken,))
        assert pol.arrive(Job(1, g, 1)).ok
        assert [c.options for c in script.made] == ([len(options)] if len(options) > 1 else [])
        assert [n for n, node in enumerate(pol.placement().nodes) if Instance(1, g) in node] == [want]


@lru_cache(maxsize=None)
def _reachable(name: str, n: int, depth: int, bounds: EventBounds) -> frozenset[FlatState]:
    """The representatives the policy.* model reaches within ``depth`` events."""
    m = LiveModel(lambda k: make_policy(name, k), n, bounds)
    return frozenset(canonical(s.placement) for s in reachable(m, depth, lambda st: applied(st) and not detail(st).refused))


WALK = (2, 5, (1, 2, 5))  # N, depth, demands; ≤ 3 jobs, w ≤ 2


def _random_walk_states(name: str, walks: int, seed: int) -> list[FlatState]:
    """Canonical states after each applied event of ``walks`` random event sequences, the policy
    (never rebuilt from a canonical state) asking a random chooser at every tie point."""
    n, depth, demands = WALK
    rng = random.Random(seed)
    out = []
    for _ in range(walks):
        pol = make_policy(name, n)
        assert isinstance(pol, NodeRulePolicy)
        pol.ties = RandomChooser(rng)
        for _ in range(depth):
            if _apply(pol, _random_event(rng, pol, demands, 3, 2)).ok:
                out.append(canonical(pol.state_key()))
    return out


@pytest.mark.parametrize("name", WITH_TIES)
def test_every_tie_break_reaches_states_the_default_does_not(name: str) -> None:
    n, depth, demands = WALK
    first = _reachable(name, n, depth, EventBounds(demands, 3, 2))
    assert first < _reachable(name, n, depth, EventBounds(demands, 3, 2, all_ties=True))


@pytest.mark.parametrize("name", WITH_TIES)
def test_random_tie_breaks_stay_inside_the_all_ties_state_space(name: str) -> None:
    """Independent of the enumeration: random choices at the tie points never reach a state the
    ``--ties all`` search did not reach."""
    n, depth, demands = WALK
    every = _reachable(name, n, depth, EventBounds(demands, 3, 2, all_ties=True))
    assert all(s in every for s in _random_walk_states(name, 100, 11))


def test_fgd_random_tie_breaks_leave_the_default_state_space() -> None:
    """With 1-GPU jobs alone FGD's ΔF is 0 on every node (a 1-GPU task can use any free GPU): every
    fitting node is a tie, and random tie-breaks reach states the default (fewer free GPUs) does not."""
    n, depth, demands = WALK
    first = _reachable("fgd", n, depth, EventBounds(demands, 3, 2))
    assert any(s not in first for s in _random_walk_states("fgd", 100, 11))


FGD_1 = PolicyParams(bound=2, demands=(1,))


def _fgd_sif(ties: str) -> Any:
    (r,) = run_policy_claims(["policy.sif"], PolicyTarget.named("fgd"), Bounds(3, 3, depth=3, max_jobs=3, max_w=3,
                                                                                ties=ties), FGD_1)
    return r


def test_fgd_sif_bound_holds_for_the_default_ties_not_for_every_tie_break() -> None:
    """policy.sif (Φπ − Φ★ ≤ 2) for FGD with 1-GPU jobs at N = 3 holds under ``--ties first`` and is
    violated under ``--ties all``; the counterexample names its choices and replays, with the
    trace view following them, and without the choices the trace no longer breaks the bound."""
    assert _fgd_sif("first").verdict is Verdict.HOLDS
    r = _fgd_sif("all")
    assert r.verdict is Verdict.VIOLATED
    rec = r.counterexample
    assert rec is not None and any(any(e.get("choices", ())) for e in rec["events"])
    again, lines = replay_record(rec)  # the real run again, state for state
    assert again.verdict is Verdict.VIOLATED and not any("differs" in x for x in lines)
    bare = {**rec, "events": [{k: v for k, v in e.items() if k != "choices"} for e in rec["events"]]}
    assert replay_record(bare)[0].verdict is Verdict.HOLDS


def test_ties_all_needs_a_ties_attribute(capsys: pytest.CaptureFixture[str]) -> None:
    """A scheduler without tie points under --ties all is a one-line usage error, not a traceback."""
    assert main(["--policy", "sifopt", "--ties", "all", "--claim", "policy.valid", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "`ties` attribute" in err[0] and "sifopt" in err[0]


def _every_tied_node(self: NodeRulePolicy, g: int, p: Any, allowed: Any = None) -> list[int]:
    """The tie set without merging nodes of equal content (what ``_tied`` reduces)."""
    keyed = sorted((self._rule(f, n, g, p, c), n) for c, levels in zip(self._classes, self._buckets)
                   for f in range(g, c + 1) for n in levels[f])
    cut = len(keyed[0][0]) - self._tie_breaks
    return [n for key, n in keyed if same_score(key[:cut], keyed[0][0][:cut])]


@pytest.mark.parametrize("name", ["best-fit", "fgd"])
def test_one_option_per_node_content_loses_no_state(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Offering one of several nodes with identical contents (an automorphism swaps them) reaches
    the same states as offering every one of them."""
    n, depth, demands = 3, 4, (1, 2, 5)
    bounds = EventBounds(demands, 3, 2, all_ties=True)
    merged = _reachable.__wrapped__(name, n, depth, bounds)  # type: ignore[attr-defined]
    monkeypatch.setattr(NodeRulePolicy, "_tied", _every_tied_node)
    assert _reachable.__wrapped__(name, n, depth, bounds) == merged  # type: ignore[attr-defined]
