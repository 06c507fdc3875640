"""Theorem 2 claims: canonical forms, verdict rules, agreement with the flat claims at K = 1,
the partitioned search, replay of counterexamples (exhaustive and sampled: both are canonical
traces of the "hier" model, replayed by the core's one replay)."""
from __future__ import annotations

import json
import random

import hypothesis.strategies as st
from hypothesis import given, settings

from heuristics.gpu.abs_space import AbsView
from heuristics.gpu.cluster import Job
from heuristics.gpu.hier_abs import HierView
from heuristics.gpu.hier_compass import HierCompass
from proofs_check import catalogue
from proofs_check.core.engine import Engine
from proofs_check.core.replay import first_firing, replay_steps
from proofs_check.core.trace import validate
from proofs_check.core.verdict import Verdict
from proofs_check.gpu.events import Event
from proofs_check.gpu.flat_claims import FLAT, Bounds, run_flat
from proofs_check.gpu.hier_claims import HIER_CLAIMS, HierBounds, replay_record, resolve_hier, run_hier_claims
from proofs_check.gpu.hier_model import COVERAGE, HierModel, coverage_features, hier_canonical, legal_demands


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


def test_k1_gpu_parts_agree_with_the_flat_claims():
    """At K = 1, eq. (25) is vacuous and the GPU level is the flat scheduler: Theorem 2 part 1 and
    Theorem 1 must get the same verdicts, with counterexamples of the same (shortest) length."""
    hb = HierBounds(max_domains=2, panels=(1,), depth=4, max_jobs=3, max_w=2)
    mine = {r.claim_id: r for r in run_hier_claims(resolve_hier(["thm2.gpu-slotted", "thm2.gpu-pool", "thm2.gpu-sif"]), hb)}
    flat = {r.claim_id: r for r in run_flat([FLAT[c] for c in catalogue.resolve(["thm1"])],
                                            Bounds(max_nodes=2, depth=4, max_jobs=3, max_w=2))}
    for part, theirs in (("gpu-slotted", "thm1.slotted"), ("gpu-pool", "thm1.pool"), ("gpu-sif", "thm1.sif")):
        r, f = mine[f"thm2.{part}[K=1]"], flat[theirs]
        assert r.verdict == f.verdict, (part, r.message, f.message)
        if r.verdict == Verdict.VIOLATED:
            assert len(r.counterexample["events"]) == len(f.counterexample["events"])


def test_panel_parts_are_vacuous_at_k1_and_k1_reduces_holds():
    hb = HierBounds(max_domains=2, panels=(1,), depth=3)
    res = {r.claim_id: r for r in run_hier_claims(resolve_hier(["thm2.panel-slot", "k1-reduces"]), hb)}
    assert res["thm2.panel-slot[K=1]"].verdict == Verdict.VACUOUS
    k1 = res["k1-reduces"]
    assert k1.verdict == Verdict.HOLDS
    assert k1.stats["compared events"] > 100
    # on the core's search: every event is compared; those both schedulers refuse are counted as
    # refused, and a disagreement would be an operator failure of the pair (none here)
    sizes = k1.stats["sizes"]
    assert sum(s["refused"] for s in sizes) > 0 and sum(s["operator failures"] for s in sizes) == 0
    assert k1.stats["compared events"] == sum(s["generated"] for s in sizes)


def test_lifted_slot_bound_fails_for_k3_and_replays():
    """A domain of 3 panels with one 2-panel anchor keeps a panel the panel level cannot use, so
    two such domains are two non-full panel-slotted domains (reading H4)."""
    (r,) = run_hier_claims(resolve_hier(["thm2-lifted.slotted"]), HierBounds(max_domains=2, panels=(3,), depth=2))
    assert r.verdict == Verdict.VIOLATED
    ce = r.counterexample
    assert (ce["model"], ce["n_nodes"], ce["K"], len(ce["events"])) == ("hier", 2, 3, 1)
    validate(ce)
    model = HierModel(ce["n_nodes"], ce["K"], ce["variant"], legal_demands(3), 0, 0, True)
    steps = replay_steps(model, [Event.from_json(e) for e in ce["events"]])
    assert [model.state_to_json(st.state) for st in steps] == ce["states"]
    hit = first_firing(HIER_CLAIMS["thm2-lifted.slotted"].prop, steps)
    assert hit is not None and hit[1]["non-full panel-slotted domains"] == 2
    res, lines = replay_record(ce)
    assert res.verdict == Verdict.VIOLATED and res.claim_id == "thm2-lifted.slotted[K=3]"
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
    hb = HierBounds(max_domains=1, panels=(3,), depth=2, samples=30, sample_domains=4, sample_events=12, seed=2)
    (r,) = run_hier_claims(resolve_hier(["thm2-lifted.slotted"]), hb)
    assert r.verdict == Verdict.VIOLATED and "sampled" in r.message  # D = 1 cannot break it; D ≥ 2 can
    ce = r.counterexample
    # a sampled trace is a canonical trace of the same model as an exhaustive one (no "direct" kind)
    validate(ce)
    assert ce["model"] == "hier" and ce["sampled"] and ce["n_nodes"] >= 2
    assert len(ce["shown"]) == len(ce["events"]) == len(ce["states"])
    res, lines = replay_record(ce)
    assert res.verdict == Verdict.VIOLATED and res.claim_id == "thm2-lifted.slotted[K=3]"
    assert catalogue.replay(ce)[0].verdict == Verdict.VIOLATED


def test_verify_replay_of_a_hierarchical_trace(tmp_path, capsys):
    from proofs_check.cli.verify import main

    out = tmp_path / "r.json"
    assert main(["--claim", "thm2.abs", "--max-domains", "1", "--panels", "2", "--depth", "3",
                 "--quiet", "--json", str(out)]) == 1
    capsys.readouterr()
    assert main(["--replay", str(out)]) == 1
    assert "thm2.abs[K=2]: VIOLATED — reproduced after event" in capsys.readouterr().out


def _timeless(results):
    out = []
    for r in results:
        stats = {**r.stats, "sizes": [{k: v for k, v in s.items() if k not in ("seconds", "distinct/s")}
                                      for s in r.stats.get("sizes", [])]}
        out.append((r.claim_id, r.verdict, r.message, r.bounds, stats, r.counterexample))
    return out


def test_theorem_2_partitioned_equals_serial():
    """Theorem 2 runs on the core's one search, so --workers K partitions it (it used to run
    serially whatever K) with the serial results: verdicts, figures, counterexamples."""
    hb = HierBounds(max_domains=2, panels=(1, 3), depth=3, max_jobs=2, max_w=2)
    claims = resolve_hier(["thm2", "thm2-lifted.slotted", "k1-reduces"])
    said: list[str] = []
    serial = run_hier_claims(claims, hb)
    two = run_hier_claims(claims, hb, progress=said.append, engine=Engine("local", 2))
    assert _timeless(two) == _timeless(serial)
    assert any("(2 local shards)" in m for m in said)
    verdicts = {r.claim_id: r.verdict for r in serial}
    assert verdicts["thm2-lifted.slotted[K=3]"] == Verdict.VIOLATED and verdicts["k1-reduces"] == Verdict.HOLDS


def test_verify_theorem_2_takes_the_shared_bounds_and_refuses_abbreviations(tmp_path, capsys):
    from proofs_check.cli.verify import main

    assert main(["--claim", "thm2.gpu-pool", "--dept", "1"]) == 2
    assert "--dept" in capsys.readouterr().err
    js = tmp_path / "r.json"
    main(["--claim", "thm2.gpu-pool", "--max-domains", "1", "--panels", "2", "--depth", "1", "--quiet",
          "--json", str(js)])
    capsys.readouterr()
    (r,) = json.loads(js.read_text())["results"]
    assert r["bounds"]["depth"] == 1 and r["stats"]["sizes"][0]["depth"] <= 1


def test_k1_reduces_is_not_blind():
    """The differential model reports a pair that decides differently as an operator failure of
    the pair (Outcome.FAILED), which breaks k1-reduces: a K = 1 scheduler of another variant is
    caught, with a shortest trace that replays to the same disagreement."""
    from proofs_check.core.model import Outcome
    from proofs_check.core.search import Limits, explore
    from proofs_check.gpu.hier_model import K1Model

    class Mismatched(K1Model):
        def __init__(self, n, variant, max_jobs, max_w):
            super().__init__(n, variant, max_jobs, max_w)
            self.hier = HierCompass(n, 1, "repaired")

    prop = HIER_CLAIMS["k1-reduces"].prop
    exp = explore([Mismatched(n, "literal", 3, 2) for n in (1, 2)], [prop], Limits(4, 100_000))
    f = exp.outcomes["k1-reduces"].finding
    assert f is not None and f.size == 1 and f.failure and exp.sizes[-1].failures > 0
    steps = replay_steps(Mismatched(1, "literal", 0, 0), f.actions)
    assert steps[-1].outcome is Outcome.FAILED and first_firing(prop, steps)[0] == len(f.actions) - 1
    same = explore([K1Model(n, "literal", 3, 2) for n in (1, 2)], [prop], Limits(4, 100_000))
    assert same.outcomes["k1-reduces"].finding is None and same.complete


def test_coverage_features_name_the_panel_level_situations():
    """What benchmarks/hier_coverage.py counts: one NVL72 rack with a panel-FUF anchor, its
    fillers, a unit on the ninth panel, then GPU-level work beside the panel level."""
    rack = HierCompass(1, 9)
    assert rack.arrive(Job(0, 40, 1)).ok and rack.arrive(Job(1, 8, 4)).ok
    got = coverage_features(rack.state_key())
    assert {"panel-slot (multi-panel anchor)", "panel-FUF anchor with a 1-panel filler", "panel-pool region",
            "ninth-panel used"} <= got
    assert "non-full panel-pool region" not in got and "domain shared by both levels" not in got
    assert rack.depart(1).ok and rack.arrive(Job(2, 3, 1)).ok
    got = coverage_features(rack.state_key())
    assert {"non-full panel-slot", "domain shared by both levels", "both levels in use", "ninth-panel used"} <= got
    assert got <= set(COVERAGE)
