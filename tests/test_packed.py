"""The compact state encoding the search stores (proofs_check.gpu.packed): lossless and injective."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics.gpu.abs_space import AbsView, NodeView, SlotView
from heuristics.gpu.cluster import Instance, Placement
from proofs_check.gpu.flat_claims import compass_factory
from proofs_check.gpu.packed import FALLBACK, KINDS, pack, unpack
from proofs_check.gpu.policy_model import EventBounds, PolicyModel
from reach import reachable

small = st.integers(0, 9)
number = st.one_of(small, st.integers(0, 300))  # above 255: the pickle fallback

slot_views = st.builds(SlotView, number, number, number, st.lists(number, max_size=4).map(tuple))
node_views = st.builds(NodeView, st.sampled_from(KINDS + ("odd-kind",)), st.lists(number, max_size=5).map(tuple),
                       st.lists(slot_views, max_size=3).map(tuple))
abs_views = st.builds(AbsView, st.integers(1, 300), st.lists(node_views, max_size=5).map(tuple))
placements = st.builds(Placement, st.integers(1, 300), st.lists(
    st.lists(st.builds(Instance, number, number), max_size=4).map(tuple), max_size=5).map(tuple))


@settings(max_examples=120, deadline=None)
@given(st.one_of(abs_views, placements))
def test_unpack_inverts_pack(state):
    key = pack(state)
    assert unpack(key) == state
    assert type(unpack(key)) is type(state)


def test_large_numbers_and_unknown_kinds_fall_back():
    assert pack(AbsView(8, (NodeView("odd-kind", (), ()),)))[0] == FALLBACK
    assert pack(Placement(8, ((Instance(256, 1),),)))[0] == FALLBACK
    assert pack(Placement(8, ((Instance(255, 1),),)))[0] != FALLBACK


def test_keys_tell_reachable_states_apart():
    """Over every representative COMPASS reaches on 2 nodes, distinct states get distinct keys."""
    model = PolicyModel(compass_factory("literal"), 2, EventBounds(tuple(range(1, 9)), 3, 3))
    states = reachable(model, 5)
    keys = {pack(s) for s in states}
    assert len(keys) == len(states) > 100
    assert all(unpack(pack(s)) == s for s in states)


def test_the_model_unpacks_its_own_keys_to_the_states_packed() -> None:
    """``PolicyModel.unpack`` returns the very state a key was packed from while its memo holds
    it, and a model without that memo (a fresh one, a worker's copy) decodes an equal state."""
    model = PolicyModel(compass_factory("literal"), 2, EventBounds(tuple(range(1, 9)), 3, 3))
    states = list(reachable(model, 4))
    keys = [model.pack(s) for s in states]
    assert all(model.unpack(k) is s for k, s in zip(keys, states))
    other = PolicyModel(compass_factory("literal"), 2, EventBounds(tuple(range(1, 9)), 3, 3))
    assert [other.unpack(k) for k in keys] == states
    assert all(other.unpack(k) is not s for k, s in zip(keys, states))


def test_a_view_with_list_containers_is_packed_by_its_pickle() -> None:
    """A node that cannot key the per-node memo (a list for a container: not hashable) takes the
    pickle fallback, so it still packs, losslessly, instead of raising."""
    view = AbsView(8, (NodeView("pool", [1, 1], ()), NodeView("slotted", (), (SlotView(4, 2, 2, [3]),))))
    key = pack(view)
    assert key[0] == FALLBACK and unpack(key) == view
