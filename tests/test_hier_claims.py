"""Theorem 2 claims: canonical forms, verdict rules, agreement with the flat explorer at K = 1,
replay of counterexamples."""
from __future__ import annotations

import random

import hypothesis.strategies as st
from hypothesis import given, settings

from heuristics.gpu.abs_space import AbsView
from heuristics.gpu.cluster import Job
from heuristics.gpu.hier_abs import HierView
from heuristics.gpu.hier_compass import HierCompass
from proofs_check.gpu.claims import resolve, run_claims
from proofs_check.explorer import Bounds
from proofs_check.gpu.hier_claims import (
    HierBounds,
    hier_canonical,
    legal_demands,
    replay_trace,
    resolve_hier,
    run_hier_claims,
)
from proofs_check.core.verdict import Verdict


def _random_state(k: int, d: int, seed: int) -> HierView:
    rng = random.Random(seed)
    h = HierCompass(d, k)
    demands = legal_demands(k)
    for j in range(rng.randint(0, 6)):
        h.arrive(Job(j, rng.choice(demands), rng.randint(1, 2)))
        if h.running() and rng.random() < 0.3:
            h.depart(rng.choice(sorted(h.running())))
    return h.state_key()


def _shuffle(view: HierView, rng: random.Random) -> HierView:
    """Renumber domains, panels inside each domain and job ids."""
    t = view.topology
    k = t.panels_per_domain
    doms = list(range(t.n_domains))
    rng.shuffle(doms)
    ids = {}
    for nd in view.panel.nodes + view.gpu.nodes:
        for j in list(nd.pool) + [s.anchor_job for s in nd.slots] + [f for s in nd.slots for f in s.fillers]:
            ids.setdefault(j, 100 + rng.randrange(10**6))

    def rename(nd):
        return nd._replace(pool=tuple(ids[j] for j in nd.pool), slots=tuple(
            s._replace(anchor_job=ids[s.anchor_job], fillers=tuple(ids[f] for f in s.fillers)) for s in nd.slots))

    gpu = []
    for d in doms:
        panels = list(t.panels_of(d))
        rng.shuffle(panels)
        gpu += [rename(view.gpu.nodes[p]) for p in panels]
    return HierView(k, AbsView(k, tuple(rename(view.panel.nodes[d]) for d in doms)), AbsView(8, tuple(gpu)))


@settings(max_examples=40, deadline=None)
@given(k=st.sampled_from([1, 2, 3, 9]), d=st.integers(1, 3), seed=st.integers(0, 10**6))
def test_canonical_form_is_invariant_and_a_state(k, d, seed):
    view = _random_state(k, d, seed)
    rep = hier_canonical(view)
    assert hier_canonical(_shuffle(view, random.Random(seed))) == rep
    assert hier_canonical(rep) == rep
    # the representative is a state of the same scheduler: it expands and round-trips
    assert HierCompass(d, k).with_state(rep).state_key() == rep


def test_k1_gpu_parts_agree_with_the_flat_explorer():
    """At K = 1, eq. (25) is vacuous and the GPU level is the flat scheduler: Theorem 2 part 1 and
    Theorem 1 must get the same verdicts, with counterexamples of the same (shortest) length."""
    hb = HierBounds(max_domains=2, panels=(1,), depth=4, max_jobs=3, max_w=2)
    mine = {r.claim_id: r for r in run_hier_claims(resolve_hier(["thm2.gpu-slotted", "thm2.gpu-pool", "thm2.gpu-sif"]), hb)}
    flat = {r.claim_id: r for r in run_claims(resolve(["thm1"]), Bounds(max_nodes=2, depth=4, max_jobs=3, max_w=2))}
    for part, theirs in (("gpu-slotted", "thm1.slotted"), ("gpu-pool", "thm1.pool"), ("gpu-sif", "thm1.sif")):
        r, f = mine[f"thm2.{part}[K=1]"], flat[theirs]
        assert r.verdict == f.verdict, (part, r.message, f.message)
        if r.verdict == Verdict.VIOLATED:
            assert len(r.counterexample["events"]) == len(f.counterexample["events"])


def test_panel_parts_are_vacuous_at_k1_and_k1_reduces_holds():
    hb = HierBounds(max_domains=2, panels=(1,), depth=3)
    res = {r.claim_id: r for r in run_hier_claims(resolve_hier(["thm2.panel-slot", "k1-reduces"]), hb)}
    assert res["thm2.panel-slot[K=1]"].verdict == Verdict.VACUOUS
    assert res["k1-reduces"].verdict == Verdict.HOLDS
    assert res["k1-reduces"].stats["compared events"] > 100


def test_lifted_slot_bound_fails_for_k3_and_replays():
    """A domain of 3 panels with one 2-panel anchor keeps a panel the panel level cannot use, so
    two such domains are two non-full panel-slotted domains (reading H4)."""
    (r,) = run_hier_claims(resolve_hier(["thm2-lifted.slotted"]), HierBounds(max_domains=2, panels=(3,), depth=2))
    assert r.verdict == Verdict.VIOLATED
    ce = r.counterexample
    assert (ce["n_domains"], len(ce["events"])) == (2, 1)
    lines, breach = replay_trace(ce)
    assert breach is not None and breach["non-full panel-slotted domains"] == 2
    assert "panel-level" in "\n".join(lines)


def test_budget_makes_a_check_inconclusive():
    (r,) = run_hier_claims(resolve_hier(["thm2.gpu-pool"]), HierBounds(max_domains=2, panels=(2,), depth=6, max_states=20))
    assert r.verdict == Verdict.INCONCLUSIVE and "max-states" in r.message


def test_sampling_beyond_the_exhaustive_range_reports_its_count():
    hb = HierBounds(max_domains=1, panels=(2,), depth=2, samples=5, sample_domains=4, sample_events=10)
    (r,) = run_hier_claims(resolve_hier(["thm2.panel-pool"]), hb)
    assert r.verdict in (Verdict.HOLDS, Verdict.VACUOUS)
    assert "5 sequences" in r.stats["sampled"]


def test_verify_cli_runs_theorem_2(capsys):
    from proofs_check.cli.verify import main

    code = main(["--theorem", "2", "--max-domains", "1", "--panels", "2", "--depth", "2", "--quiet"])
    out = capsys.readouterr().out
    # the flat literal Compact leaves {w2,w4} and {w4} both partial (its w2 pass has no host with
    # a w2 slot to receive); the GPU level inherits it
    assert code == 1 and "thm2.gpu-slotted[K=2]: VIOLATED — violated at D=1, K=2 after 2 events" in out
    assert "hierarchical bounds (variant literal): D = 1..1 domains of K ∈ {2}" in out and "≤ 2 events" in out
    for part in ("gpu-slotted", "gpu-pool", "gpu-sif", "panel-slot", "panel-pool", "panel-sif"):
        assert f"thm2.{part}[K=2]: " in out
    assert main(["--list"]) == 0 and "k1-reduces" in capsys.readouterr().out
    assert main(["--theorem", "2", "--panels", "0"]) == 2
    assert main(["--claim", "k1-reduces", "--max-domains", "0"]) == 2


def test_sampled_counterexample_replays():
    hb = HierBounds(max_domains=1, panels=(3,), depth=2, samples=30, sample_domains=4, sample_events=12, seed=1)
    (r,) = run_hier_claims(resolve_hier(["thm2-lifted.slotted"]), hb)
    assert r.verdict == Verdict.VIOLATED and "sampled" in r.message  # D = 1 cannot break it; D ≥ 2 can
    from proofs_check.gpu.hier_claims import replay_record

    res, lines = replay_record(r.counterexample)
    assert res.verdict == Verdict.VIOLATED and res.claim_id == "thm2-lifted.slotted[K=3]"


def test_verify_replay_of_a_hierarchical_trace(tmp_path, capsys):
    from proofs_check.cli.verify import main

    out = tmp_path / "r.json"
    assert main(["--claim", "thm2.abs", "--max-domains", "1", "--panels", "2", "--depth", "3",
                 "--quiet", "--json", str(out)]) == 1
    capsys.readouterr()
    assert main(["--replay", str(out)]) == 1
    assert "thm2.abs[K=2]: VIOLATED — still breaks on the replayed trace" in capsys.readouterr().out
