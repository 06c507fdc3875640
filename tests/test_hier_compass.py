"""Hierarchical COMPASS: K = 1 is byte-identical to the flat scheduler, placements are always
valid, dispatch by instance class, domain ownership between levels, both Compacts after an event."""
from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from heuristics.gpu.abs_space import EMPTY, POOL, SLOTTED, AbsView, NodeView, SlotView
from heuristics.gpu.cluster import Job
from heuristics.gpu.compass import Compass
from heuristics.gpu.hier_cluster import hier_violations
from heuristics.gpu.hier_abs import HierView, hier_abs_violations
from heuristics.gpu.hier_compass import GPU, PANEL, HierCompass, panel_slot_width
from heuristics.gpu.registry import make_policy

# An action: (True, g, w) arrival of a new job, or (False, k, 0) departure of the k-th running job.
actions = st.lists(st.one_of(st.tuples(st.just(True), st.integers(1, 8), st.integers(1, 3)),
                             st.tuples(st.just(False), st.integers(0, 20), st.just(0))), max_size=40)


def _run(policies, acts, g_of=lambda g: g):
    """Apply ``acts`` to every policy in lockstep; yield the per-policy results of each event."""
    next_id = 0
    for arrive, a, w in acts:
        running = sorted(policies[0].running())
        if arrive:
            job = Job(next_id, g_of(a), w)
            next_id += 1
            yield [p.arrive(job) for p in policies]
        elif running:
            j = running[a % len(running)]
            yield [p.depart(j) for p in policies]


@pytest.mark.parametrize("variant", ["literal", "prop3"])
@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 6), acts=actions)
def test_k1_is_byte_identical_to_flat_compass(variant, n, acts):
    flat, hier = Compass(n, 8, variant), HierCompass(n, 1, variant)
    for rf, rh in _run([flat, hier], acts):
        assert (rf.ok, rf.migrations) == (rh.ok, rh.migrations)
        assert flat.placement() == hier.placement()
        assert flat.running() == hier.running()


@settings(max_examples=40, deadline=None)
@given(d=st.integers(1, 3), k=st.sampled_from([2, 9]), acts=actions)
def test_g8_at_gpu_level_is_flat_compass_over_panels_for_g_up_to_8(d, k, acts):
    """With eight_gpu_level='gpu' and no multi-panel job the panel level is never used, so the
    scheduler is the flat one with a node per panel, whatever K."""
    flat, hier = Compass(d * k, 8), HierCompass(d, k, eight_gpu_level=GPU)
    for rf, rh in _run([flat, hier], acts):
        assert (rf.ok, rf.migrations) == (rh.ok, rh.migrations)
        assert flat.placement() == hier.placement()


def test_k1_does_not_reduce_for_the_repaired_admission_reserve():
    """'repaired' refuses an arrival that would leave a filler without a pool/empty seat; at K = 1
    the 8-GPU job goes to the panel level, which does not see the GPU level's fillers (a finding,
    docs/hierarchical.md), so K = 1 admits it while the flat scheduler refuses."""
    flat, hier = Compass(2, 8, "repaired"), HierCompass(2, 1, "repaired")
    for job in (Job(0, 1, 1), Job(1, 3, 1)):
        assert flat.arrive(job).ok and hier.arrive(job).ok
    assert not flat.arrive(Job(2, 8, 1)).ok
    assert hier.arrive(Job(2, 8, 1)).ok


@settings(max_examples=60, deadline=None)
@given(k=st.sampled_from([2, 3, 5, 6, 9]), d=st.integers(1, 3), acts=actions, data=st.data())
def test_placements_always_valid(k, d, acts, data):
    demands = list(range(1, 9)) + [8 * p for p in range(2, k + 1)]
    h = HierCompass(d, k)
    # ``fresh`` is rebuilt from the state after every event: the incremental bookkeeping of which
    # level holds which domain must make exactly the decisions a rebuild makes
    pair = [h, h.clone()]
    for res, res_fresh in _run(pair, acts, g_of=lambda g: data.draw(st.sampled_from(demands))):
        assert res == res_fresh
        assert hier_violations(h.hier_placement(), h.running().values()) == []
        assert hier_abs_violations(h.state_key()) == []
        pair[1] = h.clone()
        assert pair[1].state_key() == h.state_key() and pair[1].running() == h.running()
        if not res.ok:
            assert res.reason.startswith(("does not fit", "operator failure", "no panel-slot width"))


def test_panel_slot_widths():
    assert [panel_slot_width(9, p) for p in range(2, 10)] == [2, 4, 4, 8, 8, 8, 8, 9]
    assert panel_slot_width(3, 3) == 3 and panel_slot_width(6, 5) == 8
    with pytest.raises(ValueError, match="p=9"):
        panel_slot_width(12, 9)


def test_dispatch_by_instance_class():
    h = HierCompass(2, 9)
    assert [h.level_of(g) for g in (1, 7, 8, 16, 72)] == [GPU, GPU, PANEL, PANEL, PANEL]
    assert h.arrive(Job(1, 24, 1)).ok  # p = 3: panel-FUF anchor in a width-4 panel-slot
    assert h.arrive(Job(2, 8, 1)).ok  # 1-panel unit fills the vacancy
    assert h.arrive(Job(3, 3, 1)).ok  # sub-panel: GPU level, in the other domain
    v = h.state_key()
    assert v.panel.nodes[0] == NodeView(SLOTTED, (), (SlotView(4, 1, 3, (2,)),))
    assert v.panel.nodes[1].kind == EMPTY
    assert [nd.kind for nd in v.gpu.nodes[:9]] == [EMPTY] * 9  # domain 0 is the panel level's
    assert v.gpu.nodes[9] == NodeView(SLOTTED, (), (SlotView(4, 3, 3, ()),))
    assert h.arrive(Job(4, 72, 1)).reason.startswith("does not fit")  # no whole domain is free
    assert h.depart(3).ok and h.arrive(Job(4, 72, 1)).ok  # domain 1 free again: width-9 slot
    assert h.state_key().panel.nodes[1] == NodeView(SLOTTED, (), (SlotView(9, 4, 9, ()),))


def test_domain_filling_and_unplaceable_widths():
    assert HierCompass(1, 3).arrive(Job(1, 24, 1)).ok  # p = K = 3: width-3 degenerate slot
    assert HierCompass(1, 6).arrive(Job(1, 40, 1)).reason.startswith("does not fit")  # w_p★(5) = 8 > 6
    assert HierCompass(1, 10).arrive(Job(1, 72, 1)).reason.startswith("no panel-slot width")
    with pytest.raises(ValueError, match="g=12"):
        HierCompass(1, 9).arrive(Job(1, 12, 1))


def test_gpu_level_uses_only_domains_without_panel_items():
    h = HierCompass(2, 2)
    assert h.arrive(Job(1, 8, 1)).ok  # unit → panel-pool in domain 0
    assert h.arrive(Job(2, 4, 4)).ok  # 16 GPUs: both panels of domain 1
    assert h.arrive(Job(3, 1, 1)).reason.startswith("does not fit")  # domain 0's free panel is not the GPU level's
    hp = h.hier_placement()
    assert [hp.used(p) for p in range(4)] == [8, 0, 8, 8]


def _view(k, panel_nodes, gpu_nodes):
    return HierView(k, AbsView(k, tuple(panel_nodes)), AbsView(8, tuple(gpu_nodes)))


def test_other_levels_compact_runs_after_an_event():
    # GPU level left uncompacted (two half-empty pool panels); a panel-level arrival triggers it.
    e = NodeView(EMPTY)
    h = HierCompass(2, 2).with_state(_view(2, [e, e], [NodeView(POOL, (1,)), NodeView(POOL, (2,)), e, e]))
    res = h.arrive(Job(3, 8, 1))
    assert res.ok and [m.kind for m in res.migrations] == ["compact-pool"]
    assert sorted(nd.kind for nd in h.state_key().gpu.nodes) == [EMPTY, EMPTY, EMPTY, POOL]


def test_panel_migrations_are_reported_in_gpus_and_panels():
    e = NodeView(EMPTY)
    h = HierCompass(3, 2).with_state(_view(2, [NodeView(POOL, (1,)), NodeView(POOL, (2,)), e], [e] * 6))
    res = h.arrive(Job(3, 1, 1))  # GPU level in domain 2, then the panel level's Compact
    assert res.ok
    (m,) = res.migrations
    assert (m.g, m.kind) == (8, "panel-compact-pool") and {m.src, m.dst} == {0, 2}


def test_registry_and_simulator_options():
    p = make_policy("hier-compass", 18, 8, panels_per_domain=9)
    assert (p.n_nodes, p.capacity, p.topology.n_domains) == (18, 8, 2)
    assert make_policy("hier-compass", 18, 8, panels_per_domain=9, eight_gpu_level="gpu").level_of(8) == GPU
    with pytest.raises(ValueError, match="eight_gpu_level"):
        make_policy("hier-compass", 18, 8, panels_per_domain=9, eight_gpu_level="rack")
    for opts, needle in (({"panels_per_domain": 4}, "not a multiple"), ({}, "panels_per_domain")):
        with pytest.raises(ValueError, match=needle):
            make_policy("hier-compass", 18, 8, **opts)


def test_simulator_runs_on_nvl72_racks():
    from heuristics.gpu.simulator import SimConfig, simulate
    from heuristics.gpu.trace_gen import generate_jobs

    jobs = generate_jobs(n_jobs=150, days=0.05, seed=3)
    res = simulate(jobs, SimConfig("hier-compass", n_nodes=36, policy_opts=(("panels_per_domain", 9),)))
    assert res.status == "complete"
    assert all(r.start >= r.submit for r in res.jobs)
