"""Hierarchical COMPASS: K = 1 is byte-identical to the flat scheduler, placements are always
valid, dispatch by instance class, domain ownership between levels, both Compacts after an event."""
from __future__ import annotations

import copy
import pickle

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from heuristics.gpu.abs_space import EMPTY, POOL, SLOTTED, AbsView, NodeView, SlotView
from heuristics.gpu.abs_store import BLOCKED, FLAT, PANEL_NODES
from heuristics.gpu.cluster import Job
from heuristics.gpu.compass import VARIANTS, Compass, make_variant
from heuristics.gpu.hier_cluster import hier_violations
from heuristics.gpu.hier_abs import HierView, hier_abs_violations
from heuristics.gpu.hier_compass import GPU, PANEL, HierCompass, panel_level, panel_slot_width
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


@pytest.mark.parametrize("variant", ["literal", "prop3", "repaired"])
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


def test_repaired_reserve_spans_both_levels():
    """The reserve counts each free panel once for both levels: at K = 1 an 8-GPU job (panel
    level) is refused exactly when the flat scheduler refuses it (the GPU level's filler would
    lose its seat); on one NVL72 rack a 1-GPU job may not take the last free panel while a
    1-panel filler counts on it (the per-level reserve admitted such jobs, and at K = 9 an
    anchor's departure then failed: thm2.abs[K=9], repaired, before issue 13)."""
    flat, hier = Compass(2, 8, "repaired"), HierCompass(2, 1, "repaired")
    for job in (Job(0, 1, 1), Job(1, 3, 1)):
        assert flat.arrive(job).ok and hier.arrive(job).ok
    assert not flat.arrive(Job(2, 8, 1)).ok
    assert not hier.arrive(Job(2, 8, 1)).ok
    assert hier.placement() == flat.placement()
    rack = HierCompass(1, 9, "repaired")
    for job in (Job(0, 8, 1), Job(1, 40, 1)):  # J0 becomes the filler of J1's width-8 panel-slot
        assert rack.arrive(job).ok
    assert not rack.arrive(Job(2, 1, 1)).ok
    assert rack.depart(1).ok and rack.arrive(Job(2, 1, 1)).ok
    assert hier_abs_violations(rack.state_key()) == []


def test_both_levels_share_a_domain_and_the_ninth_panel_is_a_pool():
    """Readings H1 and H4 (Appendix D.3, D.5): GPU-level work may use the panels of a domain the
    panel level uses, and a 1-panel unit sits on the panel beside a width-8 panel-slot."""
    rack = HierCompass(1, 9)
    assert rack.arrive(Job(0, 40, 1)).ok  # p = 5: a width-8 panel-slot, 3 panels of vacancy
    assert rack.arrive(Job(1, 8, 4)).ok  # 3 fillers, the 4th unit on the ninth panel (panel-pool)
    view = rack.state_key()
    assert view.panel.nodes[0].pool == (1,) and len(view.panel.nodes[0].slots[0].fillers) == 3
    assert hier_abs_violations(view) == []
    assert not rack.arrive(Job(2, 1, 1)).ok  # no free panel left
    assert rack.depart(1).ok  # units leave: the slot's vacancy and the ninth panel are free
    assert rack.arrive(Job(2, 3, 1)).ok  # GPU-level work in the same rack
    gpu, panel = rack.owned_domains()
    assert gpu == panel == frozenset({0})
    hp = rack.hier_placement()
    assert hier_violations(hp, rack.running().values()) == []
    assert hier_abs_violations(rack.state_key()) == []


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
    assert h.arrive(Job(3, 3, 1)).ok  # sub-panel: GPU level, on domain 0's first free panel (H1)
    v = h.state_key()
    assert v.panel.nodes[0] == NodeView(SLOTTED, (), (SlotView(4, 1, 3, (2,)),))
    assert v.panel.nodes[1].kind == EMPTY
    assert v.gpu.nodes[0] == NodeView(SLOTTED, (), (SlotView(4, 3, 3, ()),))
    assert [nd.kind for nd in v.gpu.nodes[1:]] == [EMPTY] * 17
    assert [s.panels for s in h.hier_placement().spans] == [(5, 6, 7)]  # the highest free panels
    assert h.arrive(Job(4, 72, 1)).ok  # domain 1 is free: width-9 slot
    assert h.state_key().panel.nodes[1] == NodeView(SLOTTED, (), (SlotView(9, 4, 9, ()),))


def test_domain_filling_and_unplaceable_widths():
    assert HierCompass(1, 3).arrive(Job(1, 24, 1)).ok  # p = K = 3: width-3 degenerate slot
    assert HierCompass(1, 6).arrive(Job(1, 40, 1)).reason.startswith("does not fit")  # w_p★(5) = 8 > 6
    assert HierCompass(1, 10).arrive(Job(1, 72, 1)).reason.startswith("no panel-slot width")
    with pytest.raises(ValueError, match="g=12"):
        HierCompass(1, 9).arrive(Job(1, 12, 1))


def test_levels_share_a_domain_panel_by_panel():
    h = HierCompass(2, 2)
    assert h.arrive(Job(1, 8, 1)).ok  # unit → panel-pool in domain 0, on its last panel
    assert h.arrive(Job(2, 4, 4)).ok  # 16 GPUs: domain 0's free panel and one of domain 1
    assert h.arrive(Job(3, 8, 1)).ok  # unit: the fullest pool region with a free panel is domain 1's
    hp = h.hier_placement()
    assert [hp.used(p) for p in range(4)] == [8, 8, 8, 8]
    assert h.arrive(Job(4, 1, 1)).reason.startswith("does not fit")


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
    gpu_job = NodeView(POOL, (5,))  # one GPU-level instance beside each domain's unit
    h = HierCompass(2, 2).with_state(_view(2, [NodeView(POOL, (1,)), NodeView(POOL, (2,))], [gpu_job, e, gpu_job, e]))
    res = h.depart(5)  # GPU level frees a panel in each domain, then the panel level's Compact
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


def test_simulator_runs_multi_panel_jobs_on_nvl72_racks():
    """g > 8 is legal for a policy with ``max_demand`` (the hierarchical scheduler: 8K); the
    simulator's counts record a g = 8p instance as p whole panels."""
    from heuristics.gpu.simulator import SimConfig, count_slot, simulate, validate_jobs
    from heuristics.gpu.trace import TraceJob as SimJob

    jobs = [SimJob(0, 0.0, 10.0, 40, 1), SimJob(1, 1.0, 10.0, 8, 3), SimJob(2, 2.0, 5.0, 72, 1),
            SimJob(3, 3.0, 5.0, 3, 2)]
    opts = (("panels_per_domain", 9), ("variant", "repaired"))  # literal's Remove strands J1's fillers
    res = simulate(jobs, SimConfig("hier-compass", n_nodes=18, policy_opts=opts))
    assert res.status == "complete" and len(res.jobs) == 4
    assert count_slot(Job(0, 40, 2), 8) == (7, 10)
    with pytest.raises(ValueError, match="g=40 outside 1..8"):
        validate_jobs(jobs, 18, 8)
    with pytest.raises(ValueError, match="multiple of 8"):
        validate_jobs([SimJob(0, 0.0, 1.0, 20, 1)], 18, 8, max_demand=72)
    with pytest.raises(ValueError, match="needs 10 nodes"):
        validate_jobs([SimJob(0, 0.0, 1.0, 40, 2)], 9, 8, max_demand=72)


def test_simulator_runs_on_nvl72_racks():
    from heuristics.gpu.simulator import SimConfig, simulate
    from heuristics.gpu.trace_gen import generate_jobs

    jobs = generate_jobs(n_jobs=150, days=0.05, seed=3)
    res = simulate(jobs, SimConfig("hier-compass", n_nodes=36, policy_opts=(("panels_per_domain", 9),)))
    assert res.status == "complete"
    assert all(r.start >= r.submit for r in res.jobs)


def test_a_departure_that_draws_its_own_unit_decides_as_a_rebuild_does():
    """J5 (three 1-GPU units: a filler beside J4's slot, two in a pool) departs: removing the
    filler draws one of J5's own pool units into the slot (filler-replace). Which unit moved must
    not matter; when the removal order was ranked once up front it did, and the live scheduler
    made one migration where a rebuild of the same state made two (found by
    test_placements_always_valid in a fresh-clone CI run)."""
    events = [(True, Job(0, 1, 1)), (False, 0), (True, Job(1, 1, 1)), (False, 1), (True, Job(2, 1, 1)),
              (True, Job(3, 3, 2)), (True, Job(4, 3, 1)), (False, 2), (True, Job(5, 1, 3)), (True, Job(6, 3, 1)),
              (False, 3), (False, 6), (False, 5)]
    h = HierCompass(2, 2)
    for arrive, x in events:
        fresh = h.clone()
        got, want = (h.arrive(x), fresh.arrive(x)) if arrive else (h.depart(x), fresh.depart(x))
        assert got == want and h.state_key() == fresh.state_key()
    assert len(got.migrations) == 2


class _CountingHier(HierCompass):
    arrivals = 0

    def arrive(self, job):
        self.arrivals += 1
        return super().arrive(job)


def test_a_python_subclass_keeps_its_own_state_through_pickle_and_deepcopy():

    h = _CountingHier(2, 2)
    h.arrive(Job(0, 8, 1))
    for d in (pickle.loads(pickle.dumps(h)), copy.deepcopy(h)):
        assert type(d) is _CountingHier and d.arrivals == 1 and d.state_key() == h.state_key()


def test_the_panel_levels_slot_repack_ends_where_widths_do_not_tile_the_free_panels() -> None:
    """Two domains of 8 panels, each a width-4 panel-slot beside one held panel: 3 free panels
    each, so neither slot fits the other domain. The flat pass asserts that a round always moves
    a slot (widths tile a node's room); the panel level's pass ends instead, moving nothing."""
    view = AbsView(8, tuple(NodeView(SLOTTED, (), (SlotView(4, j, 4, ()),)) for j in (0, 1)))
    level = panel_level(2, 8, VARIANTS["repaired"]).with_state(view)
    for n in (0, 1):
        level.set_held(n, 1)
    assert level.compact() == ()
    assert level.abs_view() == view
    flat = Compass(2, 8, "repaired").with_state(view)  # the same slots on plain nodes: 4 free GPUs each, one moves
    assert len(flat.compact()) == 1


def test_held_units_belong_to_a_level_with_shared_nodes_only() -> None:
    """The panel level is Compass given ``PANEL_NODES``: held units and blocking are the two
    levels' ways of saying "the other level has this", and neither is offered to the other."""
    flat = Compass(2, 8)
    assert flat.level is FLAT
    with pytest.raises(ValueError, match="held units"):
        flat.set_held(0, 1)
    panel = panel_level(2, 8, VARIANTS["literal"])
    assert panel.level is PANEL_NODES
    with pytest.raises(ValueError, match="blocked by its held units"):
        panel.set_blocked(0, True)
    panel.set_held(0, 3)
    assert panel.kind[0] == BLOCKED and panel.held() == [3, 0]
    for copy_ in (panel.clone(), pickle.loads(pickle.dumps(panel)), copy.deepcopy(panel)):
        assert copy_.level == PANEL_NODES and copy_.held() == [3, 0] and copy_.kind[0] == BLOCKED
    panel.set_held(0, 0)
    assert panel.kind[0] == EMPTY


def test_a_held_only_domains_free_panels_take_a_panel_slot_after_the_slotted_domains() -> None:
    """H4: a panel-slot opens in a slotted domain (best fit), else in a GPU-only domain's free
    panels (best fit), else in an empty domain."""
    panel = panel_level(4, 8, VARIANTS["literal"])
    panel.set_held(1, 5)  # 3 free panels: too few for a width-4 slot
    panel.set_held(2, 4)  # 4 free panels
    assert panel.arrive(Job(0, 4, 1)).ok  # no slotted domain: the GPU-only domain 2, not an empty one
    assert [len(panel.slots[d]) for d in range(4)] == [0, 0, 1, 0]
    assert panel.arrive(Job(1, 4, 1)).ok  # domain 2 is full: an empty domain
    assert [len(panel.slots[d]) for d in range(4)] == [1, 0, 1, 0]
    panel.set_held(3, 4)
    assert panel.arrive(Job(2, 4, 1)).ok  # slotted domain 0 (4 free) before GPU-only domain 3
    assert [len(panel.slots[d]) for d in range(4)] == [2, 0, 1, 0]


def test_the_panel_levels_filler_draw_follows_the_variants_rule() -> None:
    """The filler draw of both levels reads ``Variant.filler_source``: with "none" an anchor's
    vacancy panel stays free at the panel level too."""
    view = AbsView(8, (NodeView(POOL, (0,)), NodeView(EMPTY)))
    for variant, fillers in ((VARIANTS["literal"], (0,)), (make_variant("literal", "no-draw", filler_source="none"), ())):
        panel = panel_level(2, 8, variant).with_state(view)
        assert panel.arrive(Job(1, 3, 1)).ok  # a width-4 panel-slot for p = 3: one vacancy panel
        (slot,) = [s for nd in panel.abs_view().nodes for s in nd.slots]
        assert slot.fillers == fillers
