"""COMPASS-ABS operators on hand-built states, the paper's own examples, and a state machine.

The paper's bounds are deliberately not asserted here: judging them is `verify`'s job. These tests
pin the operators to the pseudocode and check the invariants every implementation must keep.
"""
from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import heuristics.gpu.abs_store
from heuristics.gpu.abs_space import (
    POOL,
    SLOTTED,
    AbsView,
    NodeView,
    SlotView,
    in_abs,
    nonfull_slotted,
    slot_width,
    unsaturated_fuf_slots,
)
from heuristics.gpu.cluster import Job, partial_nodes, placement_violations
from heuristics.gpu.compass import VARIANTS, Compass, make_variant
from heuristics.gpu.registry import make_policy
from proofs_check.gpu.events import running_jobs


def slotted(*slots: SlotView) -> NodeView:
    return NodeView(SLOTTED, (), slots)


def pool(*jobs: int) -> NodeView:
    return NodeView(POOL, tuple(jobs))


EMPTY_NODE = NodeView("empty")


def state(*nodes: NodeView, variant: str = "literal") -> Compass:
    return Compass(len(nodes), variant=variant).with_state(AbsView(8, nodes))


def test_slot_width_eq3():
    assert [slot_width(g) for g in range(2, 9)] == [2, 4, 4, 8, 8, 8, 8]


def test_place_multi_gpu_best_fit_picks_smallest_sufficient_unprofiled_space():
    c = state(
        slotted(SlotView(2, 1, 2, ())),  # D = 6
        slotted(SlotView(4, 2, 4, ())),  # D = 4
        EMPTY_NODE,
        variant="prop3",  # no Compact after the arrival: Place alone
    )
    assert c.arrive(Job(9, 2, 1)).ok
    assert c.abs_view().nodes[1].slots[-1] == SlotView(2, 9, 2, ())


def test_place_opens_lowest_empty_node_when_no_slotted_node_fits():
    c = state(slotted(SlotView(8, 1, 8, ())), EMPTY_NODE, EMPTY_NODE)
    assert c.arrive(Job(9, 4, 1)).ok
    assert c.abs_view().nodes[1].slots == (SlotView(4, 9, 4, ()),)


def test_fuf_anchor_pulls_fillers_from_least_occupied_pool_node():
    c = state(pool(*range(10, 18)), pool(20, 21), EMPTY_NODE)
    r = c.arrive(Job(9, 5, 1))
    assert r.ok
    assert [(m.src, m.dst, m.kind) for m in r.migrations[:3]] == [(1, 2, "filler-draw")] * 2 + [
        (0, 2, "filler-draw")
    ]
    view = c.abs_view()
    assert view.nodes[2].slots[0].fillers == (20, 21, 10)
    assert in_abs(view) == []


def test_fuf_anchor_without_pool_stays_unsaturated():
    c = state(EMPTY_NODE)
    assert c.arrive(Job(9, 6, 1)).ok
    assert c.abs_view().nodes[0].slots == (SlotView(8, 9, 6, ()),)
    assert unsaturated_fuf_slots(c.abs_view()) == 1


def test_unit_priority_vacancy_then_fullest_pool_then_empty():
    c = state(slotted(SlotView(4, 1, 3, ())), pool(2, 2), pool(3, 3, 3), EMPTY_NODE, variant="prop3")
    c.arrive(Job(9, 1, 3))
    view = c.abs_view()
    assert view.nodes[0].slots[0].fillers == (9,)
    assert view.nodes[1].pool == (2, 2) and view.nodes[2].pool == (3, 3, 3, 9, 9)
    c = state(slotted(SlotView(8, 1, 8, ())), pool(*range(10, 18)), EMPTY_NODE, variant="prop3")
    c.arrive(Job(9, 1, 1))
    assert c.abs_view().nodes[2] == pool(9)


def test_literal_compacts_the_pool_after_an_arrival():
    c = state(slotted(SlotView(4, 1, 3, ())), pool(2, 2), pool(3, 3, 3), EMPTY_NODE)
    c.arrive(Job(9, 1, 3))
    assert [len(nd.pool) for nd in c.abs_view().nodes] == [0, 0, 7, 0]


def test_paper_example_3_5_2_free_gpus_cannot_admit_two_4gpu_instances():
    # node 0: a 5-GPU anchor (3 free, D = 0); node 1: a 3-GPU anchor in a width-4 slot (5 free);
    # node 2: a 4 and a 2 (2 free). Ten free GPUs, yet only one node can host a 4-GPU instance.
    c = state(
        slotted(SlotView(8, 1, 5, ())),
        slotted(SlotView(4, 2, 3, ())),
        slotted(SlotView(4, 3, 4, ()), SlotView(2, 4, 2, ())),
    )
    before = c.abs_view()
    r = c.arrive(Job(9, 4, 2))
    assert not r.ok and "does not fit" in r.reason
    assert c.abs_view() == before


def test_appendix_a2_tightness_sequence_reaches_two_partial_nodes_under_prop3():
    full = slotted(SlotView(8, 1, 8, ()))
    c = state(full, slotted(SlotView(4, 2, 4, ()), SlotView(2, 3, 2, ())), EMPTY_NODE, EMPTY_NODE,
              variant="prop3")
    assert c.arrive(Job(9, 4, 3)).ok
    view = c.abs_view()
    assert partial_nodes(c.placement()) == 2
    assert sorted(8 - nd.used() for nd in view.nodes if 0 < nd.used() < 8) == [2, 4]


def test_remove_filler_draws_replacement_from_pool():
    c = state(slotted(SlotView(4, 1, 3, (2,))), pool(3, 3))
    r = c.depart(2)
    assert r.ok and [(m.job, m.src, m.dst, m.kind) for m in r.migrations] == [(3, 1, 0, "filler-replace")]
    assert c.abs_view().nodes[0].slots[0].fillers == (3,)


def test_remove_filler_without_replacement_in_bare_pseudocode_variant():
    v = make_variant("literal", "bare", replace_departed_filler=False)
    c = Compass(2, variant=v).with_state(AbsView(8, (slotted(SlotView(4, 1, 3, (2,))), pool(3, 3))))
    assert c.depart(2).ok
    assert c.abs_view().nodes[0].slots[0].fillers == ()


def test_remove_anchor_returns_fillers_to_the_pool():
    c = state(slotted(SlotView(8, 1, 5, (2, 2, 2))), EMPTY_NODE)
    r = c.depart(1)
    assert r.ok and {m.kind for m in r.migrations} == {"filler-return"}
    assert c.abs_view().nodes == (EMPTY_NODE, pool(2, 2, 2))


def test_remove_anchor_with_nowhere_for_fillers_is_an_explicit_failure_and_changes_nothing():
    c = state(slotted(SlotView(8, 1, 5, (2, 2, 2))))
    before = c.abs_view()
    r = c.depart(1)
    assert not r.ok and r.reason.startswith("operator failure")
    assert c.abs_view() == before and 1 in c.running()


def test_dissolve_first_variant_reseats_fillers_on_the_freed_node():
    v = make_variant("literal", "dissolve-first", dissolve_first=True)
    c = Compass(1, variant=v).with_state(AbsView(8, (slotted(SlotView(8, 1, 5, (2, 2, 2))),)))
    r = c.depart(1)
    assert r.ok and r.migrations == ()
    assert c.abs_view().nodes == (pool(2, 2, 2),)


def test_compact_pool_pass_drains_sparsest_into_fullest():
    c = state(pool(1, 1, 1, 1, 1, 1), pool(2), pool(3, 3, 3))
    r = c.depart(3)  # departure triggers Compact
    assert r.ok
    view = c.abs_view()
    assert [len(nd.pool) for nd in view.nodes] == [7, 0, 0]


def test_compact_w4_pass_merges_two_half_nodes():
    c = state(slotted(SlotView(4, 1, 4, ())), slotted(SlotView(4, 2, 4, ())), slotted(SlotView(2, 3, 2, ())))
    assert c.depart(3).ok
    assert sorted(len(nd.slots) for nd in c.abs_view().nodes) == [0, 0, 2]


def test_compact_w2_pass_only_sees_nodes_with_a_width2_slot():
    # {4} and {2,2}: the w4 pass has a single host, the w2 pass a single host; both stay partial.
    c = state(slotted(SlotView(4, 1, 4, ())), slotted(SlotView(2, 2, 2, ()), SlotView(2, 3, 2, ())),
              slotted(SlotView(2, 4, 2, ())))
    c.depart(4)
    assert nonfull_slotted(c.abs_view()) == 2


def test_compact_moves_a_fuf_slot_with_its_fillers():
    c = state(slotted(SlotView(4, 1, 3, (5,))), slotted(SlotView(4, 2, 4, ()), SlotView(2, 3, 2, ())),
              slotted(SlotView(4, 4, 4, ())))
    r = c.depart(3)
    assert r.ok
    moved = [(m.job, m.kind) for m in r.migrations]
    assert (1, "compact-w4") in moved and (5, "compact-w4") in moved
    assert in_abs(c.abs_view()) == []


def test_prop3_does_not_compact_on_arrival():
    c = state(slotted(SlotView(4, 1, 4, ())), EMPTY_NODE, variant="prop3")
    assert c.arrive(Job(9, 8, 1)).migrations == ()


def test_registry_names():
    for v in VARIANTS:
        assert make_policy(f"compass-{v}", 4).name == f"compass-{v}"


def test_with_state_round_trip():
    c = state(slotted(SlotView(8, 1, 5, (2, 2)), ), pool(2, 3), EMPTY_NODE)
    assert c.clone().abs_view() == c.abs_view()
    assert c.running() == {1: Job(1, 5, 1), 2: Job(2, 1, 3), 3: Job(3, 1, 1)}


@st.composite
def views_and_distortions(draw):
    """A small ABS view, and the same view possibly distorted the ways a rebuild can fail to read
    back: a kind ``_touch`` re-derives (an empty "pool" node), lists where tuples belong, plain
    tuples where the named views belong (equal, so still a round trip)."""
    nodes = []
    for _ in range(draw(st.integers(1, 4))):
        shape = draw(st.sampled_from(["empty", "pool", "slotted", "hollow pool"]))
        if shape == "pool":
            nodes.append(NodeView(POOL, tuple(draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))), ()))
        elif shape == "slotted":
            g = draw(st.integers(2, 8))
            fillers = tuple(draw(st.lists(st.integers(0, 5), max_size=slot_width(g) - g)))
            nodes.append(slotted(SlotView(slot_width(g), draw(st.integers(6, 9)), g, fillers)))
        elif shape == "hollow pool":  # no units: _touch makes it EMPTY, so the view does not read back
            nodes.append(NodeView(POOL, (), ()))
        else:
            nodes.append(EMPTY_NODE)
    distort = draw(st.sampled_from(["none", "units list", "fillers list", "slot list", "plain node", "nodes list"]))
    out = list(nodes)
    i = draw(st.integers(0, len(out) - 1))
    kind, units, slots = out[i]
    if distort == "units list":
        out[i] = NodeView(kind, list(units), slots)
    elif distort == "fillers list" and slots:
        out[i] = NodeView(kind, units, (slots[0]._replace(fillers=list(slots[0].fillers)),) + slots[1:])
    elif distort == "slot list" and slots:
        out[i] = NodeView(kind, units, (list(slots[0]),) + slots[1:])
    elif distort == "plain node":
        out[i] = (kind, units, slots)
    return AbsView(8, list(out) if distort == "nodes list" else tuple(out))


class _OwnView(Compass):
    """A scheduler that writes its own node views (here: every kind in capitals)."""

    def _node_view(self, n: int) -> NodeView:
        v = super()._node_view(n)
        return v._replace(kind=v.kind.upper())


@settings(max_examples=300, deadline=None)
@given(views_and_distortions())
def test_state_is_answers_as_the_full_comparison(view):
    """``state_is`` (the explorer's check that a rebuilt scheduler reads its view back) answers
    ``state_key() == view`` whether or not it skips building the view, and a scheduler with its
    own views is always compared in full."""
    for cls in (Compass, _OwnView):
        try:
            c = cls(len(view.nodes)).with_state(view)
        except TypeError:  # the compiled build refuses a list where a view declares a tuple
            assert heuristics.gpu.abs_store.__file__.endswith(".so"), "only the compiled build checks types"
            return
        assert c.state_is(view) == (c.state_key() == view)
    c = Compass(len(view.nodes)).with_state(view)
    assert (c._built_from is view) == (c.state_key() == view)  # the skip is taken whenever it may be
    # the running jobs the explorer reads off the rebuilt scheduler: running_jobs(view), in its order
    jobs = c.jobs_of(view)
    assert (jobs is None) == (c._built_from is not view)
    assert jobs is None or list(jobs.items()) == list(running_jobs(view).items())
    assert _OwnView(len(view.nodes)).with_state(view).jobs_of(view) is None
    if c.state_is(view) and c.jobs:
        c.depart(min(c.jobs))  # changed since the rebuild: compared in full again
        assert c.state_is(view) == (c.state_key() == view)


class CompassMachine(RuleBasedStateMachine):
    """Random arrivals and departures: the state stays valid and inside ABS, or an event is
    refused / reported as an operator failure with the state untouched."""

    def __init__(self) -> None:
        super().__init__()
        self.c: Compass | None = None
        self.next_id = 0

    @precondition(lambda self: self.c is None)
    @rule(n=st.integers(1, 64), variant=st.sampled_from(sorted(VARIANTS)))
    def start(self, n: int, variant: str) -> None:
        self.c = Compass(n, variant=variant)

    @precondition(lambda self: self.c is not None)
    @rule(g=st.integers(1, 8), w=st.integers(1, 12))
    def submit(self, g: int, w: int) -> None:
        before = self.c.abs_view()
        r = self.c.arrive(Job(self.next_id, g, w))
        self.next_id += 1
        if not r.ok:
            assert self.c.abs_view() == before

    @precondition(lambda self: self.c is not None and self.c.running())
    @rule(data=st.data())
    def finish(self, data) -> None:
        jid = data.draw(st.sampled_from(sorted(self.c.running())))
        before = self.c.abs_view()
        r = self.c.depart(jid)
        if not r.ok:
            assert r.reason.startswith("operator failure")
            assert self.c.abs_view() == before

    @invariant()
    def valid_and_in_abs(self) -> None:
        if self.c is None:
            return
        view = self.c.abs_view()
        p = self.c.placement()
        assert placement_violations(p, self.c.running().values()) == []
        assert in_abs(view) == []
        assert self.c.partial_count() == partial_nodes(p)
        assert self.c.empty_count() == sum(1 for node in p.nodes if not node)
        assert self.c.instance_counts() == p.counts()
        assert self.c.clone().abs_view() == view


CompassMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_compass_state_machine = CompassMachine.TestCase


@pytest.mark.parametrize("g", [0, 9])
def test_bad_job_shape_is_rejected(g):
    with pytest.raises(ValueError):
        Compass(2).arrive(Job(0, g, 1))


def test_repaired_never_draws_a_replacement_from_the_departing_job():
    # job 2 has one filler in the slot and one instance in the pool: literal (location order)
    # removes the filler first and may draw job 2's own pool instance as the replacement.
    nodes = (slotted(SlotView(4, 1, 3, (2,))), pool(2))
    lit = Compass(2, variant="literal").with_state(AbsView(8, nodes))
    assert [m.job for m in lit.depart(2).migrations] == [2]
    rep = Compass(2, variant="repaired").with_state(AbsView(8, nodes))
    assert rep.depart(2).migrations == ()


# ---------------------------------------------------------------- apply and undo (the explorer's fast path)
def _internals(c: Compass) -> tuple:
    """Everything an operator reads, with node objects replaced by their place."""
    def where(m) -> tuple:
        return ("slot", m.node, m.width, m.g) if hasattr(m, "width") else ("unit", m.node, m.slot is None)
    return (c.abs_view(), list(c.jobs.items()), c._counts, c._partial, c._vac_total, c._vac, c._is_partial,
            {j: [where(m) for m in ms] for j, ms in c.members.items()}, list(c.members),
            [list(ix._cur) for ix in (c._empty, c._by_room, c._by_fill, c._vacant)],
            [{k: list(b) for k, b in enumerate(ix._buckets) if b} for ix in (c._empty, c._by_room, c._by_fill, c._vacant)])


def _event(c: Compass, data, next_id: int):
    jobs = sorted(c.running())
    if jobs and data.draw(st.booleans()):
        j = data.draw(st.sampled_from(jobs))
        return lambda p: p.depart(j)
    g, w = data.draw(st.integers(1, 8)), data.draw(st.integers(1, 4))
    return lambda p: p.arrive(Job(next_id, g, w))


def _walked(c: Compass, data, max_events: int) -> Compass:
    """``c`` after up to ``max_events`` drawn events (job ids from 100)."""
    for k in range(data.draw(st.integers(0, max_events))):
        _event(c, data, 100 + k)(c)
    return c


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("n", [1, 3, 5])
def test_trial_rollback_is_a_rebuild(variant, n):
    """trial / view_after / rollback (PolicyModel's apply and undo) leave the scheduler exactly as
    with_state(view) builds it, and view_after is the state the event produced."""
    from hypothesis import given

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data) -> None:
        view = _walked(Compass(n, variant=variant), data, 8).abs_view()
        base = Compass(n, variant=variant).with_state(view)
        for k in range(3):
            ev = _event(base, data, 200 + k)
            fresh = Compass(n, variant=variant).with_state(view)
            want = ev(fresh)
            base.trial()
            got = ev(base)
            assert got == want
            assert base.view_after(view) == fresh.abs_view()
            assert base.instance_counts() == fresh.instance_counts()
            base.rollback()
            assert _internals(base) == _internals(Compass(n, variant=variant).with_state(view))

    run()


@pytest.mark.parametrize("variant", ["literal", "repaired"])
def test_policy_model_undoes_an_event_before_the_scheduler_is_used_again(variant):
    """PolicyModel undoes an event on its scheduler when it next needs the scheduler, not at once
    (the last event of a state is never undone): every action of a state stepped in a row equals
    the step on a fresh scheduler, its successor's representative (which names the nodes the
    event touched) is the one computed from the successor alone, and the scheduler asked for
    afterwards is the state's own."""
    from proofs_check.gpu.canonical import canonical_map
    from proofs_check.gpu.flat_claims import compass_factory
    from proofs_check.gpu.policy_model import EventBounds, PolicyModel

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data) -> None:
        n = data.draw(st.integers(1, 4))
        c = _walked(Compass(n, variant=variant), data, 6)
        model = PolicyModel(compass_factory(variant), n, EventBounds(tuple(range(1, 9)), 4, 4))
        view = model.representative(c.abs_view())
        acts = list(model.actions(view))
        def fields(step) -> tuple:  # the memo aside: fresh_step keeps none
            return step.prev, step.action, step.outcome, step.state, step.detail, step.reason

        for a in data.draw(st.permutations(acts)):
            step = model.step(view, a)
            assert fields(step) == fields(model.fresh_step(view, a))
            assert model.representative(step.state) == canonical_map(step.state)[0]
        assert _internals(model._scheduler(view)) == _internals(Compass(n, variant=variant).with_state(view))

    run()


@pytest.mark.parametrize("variant", ["literal", "repaired"])
def test_policy_model_transition_is_step_within_representative(variant):
    """``PolicyModel.transition`` (the search's one call per event: apply and undo, the premise
    read from the scheduler's counts before the view is built, the touched nodes passed to
    ``canonical``) equals ``stepped`` (step, within, representative) of a model that rebuilds the
    scheduler for every event, in any order of a state's events and mixed with ``step`` calls;
    with the WCC premise on, so pruned transitions are compared too."""
    from proofs_check.core.model import PRUNED, Outcome, stepped
    from proofs_check.gpu.events import counts_of_state
    from proofs_check.gpu.canonical import canonical_map
    from proofs_check.gpu.flat_claims import compass_factory
    from proofs_check.gpu.policy_model import EventBounds, PolicyModel

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data) -> None:
        n = data.draw(st.integers(1, 4))
        c = _walked(Compass(n, variant=variant), data, 6)
        model, rebuilt = (PolicyModel(compass_factory(variant), n, EventBounds(tuple(range(1, 9)), 4, 4), True)
                          for _ in range(2))
        rebuilt.without_fast_path()
        view = model.representative(c.abs_view())
        acts = list(model.actions(view))
        for a in data.draw(st.permutations(acts)):
            got, want = model.transition(view, a), stepped(rebuilt, view, a)
            assert got[:4] == want[:4]  # the memo aside: a rebuilt step keeps none
            if got[0] is Outcome.APPLIED:
                assert got[1] == canonical_map(got[1])[0]
                assert got[4] == {"counts": counts_of_state(got[1], 8)}
            else:
                assert got == PRUNED or got[1] is view
            if data.draw(st.booleans()):  # a step in between: the event it leaves is undone as well
                model.step(view, data.draw(st.sampled_from(acts)))
        assert _internals(model._scheduler(view)) == _internals(Compass(n, variant=variant).with_state(view))

    run()


@pytest.mark.parametrize("copy_of", ["pickle", "deepcopy"])
def test_a_copied_scheduler_runs_on_as_the_original(copy_of):
    """A pickled or deep-copied COMPASS (its indexes start with one empty bucket list shared by
    every key, which a copy shares alike) goes on exactly as the original."""
    import copy
    import pickle
    from hypothesis import given

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data) -> None:
        c = _walked(Compass(4), data, 4)
        d = pickle.loads(pickle.dumps(c)) if copy_of == "pickle" else copy.deepcopy(c)
        for k in range(6):
            ev = _event(c, data, 200 + k)
            assert ev(d) == ev(c)
            assert _internals(d) == _internals(c)

    run()


class _Unguarded(Compass):
    """COMPASS with Compact's passes run after every event (no partial-node shortcut)."""

    def _may_compact(self) -> bool:
        return True


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_compact_moves_nothing_with_fewer_than_two_partial_nodes(variant):
    """The premise of ``Compass._may_compact``: every Compact host is a partial node, so with
    fewer than two partial nodes the passes, run in full, move nothing. The states are reached
    without Compact (so nothing was compacted before), then Compact runs on them unguarded."""
    from hypothesis import given

    loose = make_variant(variant, f"{variant}-uncompacted", compact_on_arrival=False, compact_on_departure=False)

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def run(data) -> None:
        n = data.draw(st.integers(1, 5))
        c = Compass(n, variant=loose)
        for k in range(data.draw(st.integers(0, 10))):
            _event(c, data, 100 + k)(c)
            if c.partial_count() < 2:
                assert _Unguarded(n, variant=VARIANTS[variant]).with_state(c.abs_view()).compact() == ()

    run()


class _CountingCompass(Compass):
    """A scheduler built on COMPASS in Python, with a counter of its own."""

    arrivals = 0

    def arrive(self, job: Job):
        self.arrivals += 1
        return super().arrive(job)


@pytest.mark.parametrize("copy_of", ["pickle", "deepcopy"])
def test_a_python_subclass_keeps_its_own_state_through_pickle_and_deepcopy(copy_of):
    # The compiled build's default pickling reads only the native attributes: the counter would
    # vanish from every state the explorer keeps as a pickle (it did, before __getstate__).
    import copy
    import pickle

    c = _CountingCompass(3)
    c.arrive(Job(0, 2, 2))
    d = pickle.loads(pickle.dumps(c)) if copy_of == "pickle" else copy.deepcopy(c)
    assert type(d) is _CountingCompass and d.arrivals == 1
    assert d.abs_view() == c.abs_view() and d.running() == c.running()
    d.arrive(Job(1, 1, 1))
    assert (c.arrivals, d.arrivals) == (1, 2)
