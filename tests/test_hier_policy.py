"""The policy.* claims and measure.sif on hier-compass (proofs_check.gpu.hier_policy): the exact
admission oracle against a brute-force packer, policy.valid against broken transitions, and
`verify --policy hier-compass` end to end (run, JSON record, replay)."""
from __future__ import annotations

import json
import random
from itertools import combinations

import pytest

from heuristics.gpu.abs_space import EMPTY, POOL, AbsView, NodeView
from heuristics.gpu.cluster import Job
from heuristics.gpu.hier_abs import HierView, layout
from heuristics.gpu.hier_cluster import G_PANEL, Topology
from proofs_check.cli.verify import main
from proofs_check.core.model import Outcome, Step
from proofs_check.gpu.events import Event
from proofs_check.gpu.hier_model import legal_demands
from proofs_check.gpu.hier_policy import (
    HierAdmission,
    HierDetail,
    HierFactory,
    HierPolicyModel,
    HierValid,
    default_bounds,
    free_room,
    repack_fits,
    valid_problems,
)


# --------------------------------------------------------------------------- brute force
def brute_place(items: list[int], t: Topology, used: list[int]) -> bool:
    """Whether instances of GPU demands ``items`` fit on top of ``used`` GPUs per panel: a g ≤ 8
    instance on one panel with room, a g = 8p one on p wholly free panels of one domain."""
    order = sorted(items, reverse=True)
    seen: set[tuple[int, tuple[int, ...]]] = set()

    def go(i: int) -> bool:
        if i == len(order):
            return True
        if (i, tuple(used)) in seen:
            return False
        seen.add((i, tuple(used)))
        g = order[i]
        if g > G_PANEL:
            for d in range(t.n_domains):
                for span in combinations([n for n in t.panels_of(d) if used[n] == 0], g // G_PANEL):
                    for n in span:
                        used[n] = G_PANEL
                    ok = go(i + 1)
                    for n in span:
                        used[n] = 0
                    if ok:
                        return True
            return False
        for n in range(t.n_panels):
            if used[n] + g <= G_PANEL:
                used[n] += g
                ok = go(i + 1)
                used[n] -= g
                if ok:
                    return True
        return False

    return go(0)


@pytest.mark.parametrize("d,k", [(1, 1), (1, 2), (2, 2), (1, 3), (2, 3), (3, 2)])
def test_repack_oracle_agrees_with_brute_force(d, k):
    t = Topology(d, k)
    rng = random.Random(100 * d + k)
    seen = set()
    for _ in range(150):
        jobs = [Job(i, rng.choice(legal_demands(k)), rng.randint(1, 3)) for i in range(rng.randint(1, 4))]
        want = brute_place([j.g for j in jobs for _ in range(j.w)], t, [0] * t.n_panels)
        assert repack_fits(jobs, t) == want, (t, jobs)
        seen.add(want)
    assert seen == {True, False}  # both answers exercised


def _walk_states(k: int, d: int, steps: int, seed: int) -> list[HierView]:
    """States hier-compass reaches on random event sequences."""
    model = HierPolicyModel(HierFactory((("panels_per_domain", k),)), d, legal_demands(k), 4, 3)
    rng = random.Random(seed)
    s = model.init_states()[0]
    out = [s]
    for _ in range(steps):
        acts = model.actions(s)
        if not acts:
            break
        st = model.step(s, rng.choice(list(acts)))
        s = st.state
        out.append(s)
    return out


@pytest.mark.parametrize("k,d", [(2, 2), (3, 1), (9, 1)])
def test_free_room_agrees_with_brute_force_on_reached_states(k, d):
    seen = set()
    for seed in range(6):
        for view in _walk_states(k, d, 8, seed):
            hp = layout(view)
            used = [hp.used(n) for n in range(hp.topology.n_panels)]
            for g in legal_demands(k):
                for w in (1, 2, 3):
                    want = brute_place([g] * w, hp.topology, list(used))
                    assert (free_room(hp, g) >= w) == want, (view, g, w)
                    seen.add(want)
    assert seen == {True, False}


# --------------------------------------------------------------------------- the tests on one step
def _model(k: int = 2, d: int = 1) -> HierPolicyModel:
    return HierPolicyModel(HierFactory((("panels_per_domain", k),)), d, legal_demands(k), 3, 3)


def test_admission_fires_only_on_a_refusal_that_fits():
    m = _model()
    s0 = m.init_states()[0]
    full = m.step(s0, Event(True, 0, 16, 1)).state  # a domain-filling job: nothing else fits
    refused = m.step(full, Event(True, 1, 1, 1))
    assert refused.detail.refused and HierAdmission(True)(refused) is None
    pool = m.step(s0, Event(True, 0, 1, 1)).state
    st = m.step(pool, Event(True, 1, 3, 3))  # literal COMPASS: no width-4 slot beside a pool panel
    assert st.detail.refused
    numbers = HierAdmission(False)(st)
    assert numbers is not None and numbers["room for instances in the free capacity"] == 4
    assert brute_place([3] * 3, Topology(1, 2), [1, 0])


def test_valid_flags_a_lost_job_an_overfull_domain_and_a_refusal_that_changed_the_state():
    m = _model()
    s0 = m.init_states()[0]
    one = m.step(s0, Event(True, 0, 8, 1)).state
    assert valid_problems(s0, one, Event(True, 0, 8, 1)) == []
    assert any("expected 1×(g=8,w=1)" in p for p in valid_problems(s0, s0, Event(True, 0, 8, 1)))
    # K = 1: the panel level holds the only panel and the GPU level also uses it
    over = HierView(1, AbsView(1, (NodeView(POOL, (0,)),)), AbsView(G_PANEL, (NodeView(POOL, (1,)),)))
    empty = HierView(1, AbsView(1, (NodeView(EMPTY),)), AbsView(G_PANEL, (NodeView(EMPTY),)))
    assert valid_problems(empty, over, Event(True, 1, 1, 1))
    st = Step(s0, Event(True, 0, 1, 1), Outcome.APPLIED, s0, HierDetail(refused=True, changed_to=one))
    assert HierValid()(st) is not None


# --------------------------------------------------------------------------- verify --policy hier-compass
def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_verify_policy_hier_compass_end_to_end(capsys, tmp_path):
    out = tmp_path / "r.json"
    code, text, _ = run(capsys, "--policy", "hier-compass", "--policy-opt", "hier-compass:panels_per_domain=2",
                        "--claim", "policy", "--measure", "sif", "--max-nodes", "1", "--depth", "3",
                        "--max-jobs", "2", "--max-w", "3", "--quiet", "--json", str(out))
    assert code == 1
    verdicts = {r["claim_id"]: r["verdict"] for r in json.loads(out.read_text())["results"]}
    assert verdicts == {"policy.valid": "holds", "policy.no-stuck": "violated", "policy.admission": "violated",
                        "policy.sif": "holds", "policy.migrations": "violated", "measure.sif": "holds"}
    assert "largest Φπ − Φ★ (GPU level) = 2" in text and "D=1 (N=2): 2" in text
    rec = next(r for r in json.loads(out.read_text())["results"] if r["claim_id"] == "policy.admission")["counterexample"]
    assert rec["K"] == 2 and rec["n_nodes"] == 1 and ["panels_per_domain", 2] in rec["policy_opts"]
    code, text, _ = run(capsys, "--replay", str(out))
    assert code == 1 and "policy.admission: VIOLATED — reproduced" in text
    assert "measure.sif: MEASURED — target reached on the trace" in text


def test_default_domains_follow_k():
    assert default_bounds(["hier-compass:panels_per_domain=2"])["max_nodes"] == 2
    assert default_bounds(["hier-compass:panels_per_domain=9"])["max_nodes"] == 1
    assert default_bounds([])["max_nodes"] == 2  # K = 2 by default


@pytest.mark.parametrize("argv,needle", [
    (["--policy-opt", "hier-compass:panels_per_domain=0"], "an integer K >= 1"),
    (["--policy-opt", "hier-compass:variant=nope"], "does not build"),
    (["--policy-opt", "panels_per_domain=2"], "verify takes hier-compass:KEY=VALUE"),
    (["--random", "5"], "checked exhaustively"),
    (["--plot", "."], "are for flat schedulers"),
])
def test_hier_policy_usage_errors(capsys, argv, needle):
    code, _, err = run(capsys, "--policy", "hier-compass", *argv)
    assert code == 2 and needle in err, err
