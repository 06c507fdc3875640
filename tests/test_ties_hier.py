"""Every legal tie-break of the hierarchy (issue 13; reading H7 of heuristics/gpu/hier_compass.py):
HierCompass's choice points, HierModel's all-ties expansion, replay of choices, and sampling with
random tie-breaks (``--random K --ties all``)."""
from __future__ import annotations

import json
import random
from typing import Any

from heuristics.gpu.abs_space import EMPTY, POOL, AbsView, NodeView
from heuristics.gpu.hier_abs import HierView
from heuristics.gpu.hier_compass import HierCompass
from heuristics.gpu.ties import Script, every_script
from proofs_check.core.model import Expect, Outcome, Property, Step
from proofs_check.core.replay import replay_steps
from proofs_check.core.sampler import sample
from proofs_check.gpu.events import Event, apply_event, job_events
from proofs_check.gpu.hier_model import HierModel, _free_gpus, hier_canonical, hier_running_jobs, legal_demands, walk
from reach import reachable


class RandomChooser:
    """Independent of the enumeration: a random option at every tie point, recording the points."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.points: set[str] = set()

    def pick(self, point: str, k: int) -> int:
        self.points.add(point)
        return self.rng.randrange(k)


def _walk(rng: random.Random, d: int, k: int, variant: str, depth: int, chooser: Any, max_jobs: int = 3,
          max_w: int = 2) -> list[Any]:
    """A random event sequence on HierCompass(d, k) from canonical states (as the search expands
    them); the canonical views after each applied event."""
    pol = HierCompass(d, k, variant)
    view = hier_canonical(pol.state_key())
    views = []
    for _ in range(depth):
        pol = pol.with_state(view)
        evs = job_events(hier_running_jobs(view), _free_gpus(view), legal_demands(k), max_jobs, max_w)
        pol.ties = chooser
        res = apply_event(pol, rng.choice(evs))
        if res.ok:
            view = hier_canonical(pol.state_key())
            views.append(view)
    return views


def test_default_ties_are_option_zero() -> None:
    """A Script of zeros makes exactly the choices of the default (no chooser) HierCompass, and
    runs through the chooser's own path (events on a trial copy)."""
    for k, variant in ((2, "literal"), (3, "repaired"), (9, "repaired")):
        for seed in range(8):
            a = _walk(random.Random(seed), 2, k, variant, 14, None)
            b = _walk(random.Random(seed), 2, k, variant, 14, Script(()))
            assert a == b


def _model(d: int, k: int, variant: str, all_ties: bool, max_jobs: int = 3, max_w: int = 2) -> HierModel:
    return HierModel(d, k, variant, legal_demands(k), max_jobs, max_w, wcc=False, all_ties=all_ties)


def test_random_tie_breaks_stay_inside_the_all_ties_state_space() -> None:
    """HierCompass with random choices at its tie points never reaches a state the all-ties model
    missed, while that model reaches states the default tie-breaking does not; the GPU level's
    empty-panel choice (H7) is among the points exercised."""
    d, k, depth, jobs = 2, 3, 4, 2
    every = reachable(_model(d, k, "literal", True, jobs), depth)
    first = reachable(_model(d, k, "literal", False, jobs), depth)
    assert first < every
    rng = random.Random(3)
    chooser = RandomChooser(rng)
    for _ in range(150):
        for view in _walk(rng, d, k, "literal", depth, chooser, jobs):
            assert view in every
    assert "GPU level: which domain's empty panel" in chooser.points


def test_the_panel_levels_own_tie_points() -> None:
    """Three domains of 9 panels with one 1-panel unit each; a p = 3 anchor (width 4) may open in
    any of them (best fit among equal pool domains) and draws its filler from either of the other
    two (least-occupied among equal): 3 × 2 legal outcomes, the default one first."""
    one = NodeView(POOL, (0,))
    view = HierView(9, AbsView(9, (one, one._replace(pool=(1,)), one._replace(pool=(2,)))),
                    AbsView(8, (NodeView(EMPTY),) * 27))
    pol = HierCompass(3, 9, "literal").with_state(view)

    def run(script: Script) -> Any:
        p = pol.clone()
        p.ties = script
        assert apply_event(p, Event(True, 3, 24, 1)).ok
        return hier_canonical(p.state_key()), p.state_key().panel

    runs = list(every_script(run))
    points = {c.point for made, _ in runs for c in made}
    assert points == {"panel slot host: argmin free panels (pool / GPU-only domain)",
                      "panel filler draw: which least-occupied domain"}
    assert len({panel for _, (_, panel) in runs}) == 6
    default = pol.clone()
    assert apply_event(default, Event(True, 3, 24, 1)).ok
    assert runs[0][1][1] == default.state_key().panel


def test_the_empty_panel_choice_is_one_option_per_domain() -> None:
    """"Pick any empty node" at the GPU level: the lowest empty panel of each domain, the fully
    empty domains counted once (they are interchangeable); none to choose at K = 1."""
    pol = HierCompass(3, 2, "literal")
    apply_event(pol, Event(True, 0, 8, 1))  # a panel-level unit: domain 0 keeps one free panel
    gpu = pol._level["gpu"]
    assert gpu.empty_options() == [0, 2]  # domain 0's free panel, then one fully empty domain
    flat = HierCompass(3, 1, "literal")._level["gpu"]
    assert flat.empty_options() == [0]


def test_a_hier_tie_choice_replays_from_its_event() -> None:
    """The all-ties model's events carry their choices; stepping such an event afresh (a replay)
    gives the same successor, and the shown trace (``walk``) follows the choices."""
    m = _model(2, 2, "repaired", True)
    fresh = _model(2, 2, "repaired", False)
    s = m.representative(m.init_states()[0])
    path: list[Event] = []
    chosen = 0
    for _ in range(4):
        steps = {a: m.step(s, a) for a in m.actions(s)}
        for a, st in steps.items():
            again = fresh.step(s, a)
            assert again.outcome is st.outcome and hier_canonical(again.state) == hier_canonical(st.state)
            chosen += any(a.choices)
        applied = [(a, st) for a, st in steps.items() if st.outcome is Outcome.APPLIED]
        a, st = next(((a, st) for a, st in applied if any(a.choices)), applied[-1])
        path.append(a)
        s = m.representative(st.state)
    assert chosen > 0 and any(any(a.choices) for a in path)
    assert [st.state for st in replay_steps(fresh, path)][-1] == s
    shown = walk(fresh, path)
    assert shown[-1]["state"] == s and any(" ties " in x["event"] for x in shown)


def _took_other_option(st: Step[Any, Event]) -> dict[str, Any] | None:
    a = st.action
    return {"choices": list(a.choices)} if a is not None and any(a.choices) else None


def test_sampling_with_ties_draws_choices_that_replay() -> None:
    """``sample(..., ties=True)`` answers tie points with drawn options and records them in the
    finding's events; replaying those events reproduces the finding's states."""
    prop: Property[Any, Event] = Property("took a non-default tie option", Expect.ALWAYS, _took_other_option)
    found, runs = sample(lambda d: _model(d, 2, "repaired", False, 20, 2), [2, 3], prop, 60, 1, 20, ties=True)
    assert found is not None and runs >= 1
    assert any(any(a.choices) for a in found.actions)
    replayed = replay_steps(_model(found.size, 2, "repaired", False), list(found.actions))
    assert [st.state for st in replayed] == list(found.states)
    nothing, _ = sample(lambda d: _model(d, 2, "repaired", False, 20, 2), [2, 3], prop, 20, 1, 20)
    assert nothing is None  # without ties no option is drawn


def _verify(capsys: Any, *argv: str) -> tuple[int, str]:
    from proofs_check.cli.verify import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out + out.err


def test_hier_compass_under_every_tie_break_replays(tmp_path: Any, capsys: Any) -> None:
    """`verify --policy hier-compass --ties all` runs (no longer a usage error) and its
    counterexamples replay."""
    out = tmp_path / "r.json"
    code, text = _verify(capsys, "--policy", "hier-compass", "--claim", "policy.sif", "--max-nodes", "2", "--depth",
                         "2", "--ties", "all", "--quiet", "--json", str(out))
    assert code == 1 and "ties: all (every legal choice" in text
    code, text = _verify(capsys, "--replay", str(out))
    assert code == 1 and "policy.sif: VIOLATED — reproduced" in text


def test_random_sampling_under_every_tie_break_replays(tmp_path: Any, capsys: Any) -> None:
    """`verify --theorem 2 ... --random K --ties all`: the sampled counterexample replays."""
    out = tmp_path / "r.json"
    code, text = _verify(capsys, "--claim", "thm2-lifted.slotted", "--panels", "3", "--max-domains", "1", "--depth",
                         "1", "--random", "40", "--random-nodes", "9", "--ties", "all", "--quiet", "--json", str(out))
    assert code == 1 and "violated on a sampled sequence" in text
    code, text = _verify(capsys, "--replay", str(out))
    assert code == 1 and "VIOLATED — reproduced" in text


def test_k1_meets_the_flat_tie_points_and_decides_the_same() -> None:
    """k1-reduces under every tie-break: HierCompass(N, 1), given the flat scheduler's choices,
    meets the same tie points in the same order and makes the same decisions (a difference is an
    operator failure of the pair)."""
    from proofs_check.gpu.hier_model import K1Model

    failed: list[Step[Any, Event]] = []

    def keep(st: Step[Any, Event]) -> bool:
        if st.outcome is Outcome.FAILED:
            failed.append(st)
        return st.outcome is Outcome.APPLIED

    for variant in ("literal", "repaired"):
        seen = reachable(K1Model(2, variant, 3, 2, all_ties=True), 3, keep)
        assert not failed, failed[0].reason
        assert len(seen) > len(reachable(K1Model(2, variant, 3, 2), 3))


def test_flat_random_sampling_draws_tie_options_and_replays(tmp_path: Any, capsys: Any) -> None:
    """`verify --policy fgd --random K --ties all`: FGD's 1-GPU ties are drawn (the sampled
    counterexample carries non-default choices, which the default ties never break) and replay."""
    out = tmp_path / "r.json"
    code, text = _verify(capsys, "--policy", "fgd", "--demands", "1", "--claim", "policy.sif", "--max-nodes", "2",
                         "--depth", "3", "--random", "30", "--random-nodes", "8", "--ties", "all", "--quiet", "--json",
                         str(out))
    assert code == 1 and "found by sampling" in text
    events = json.loads(out.read_text())["results"][0]["counterexample"]["events"]
    assert any(any(e.get("choices", ())) for e in events)
    code, text = _verify(capsys, "--replay", str(out))
    assert code == 1 and "VIOLATED — reproduced" in text
