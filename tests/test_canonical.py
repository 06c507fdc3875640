"""proofs_check.gpu.canonical: equivalent states share one key, non-equivalent states never do.

The reference is a brute-force canonical form (minimum over *all* node orders and *all* job
relabellings of a sorted encoding), so "same key" is checked against true isomorphism.
"""
from itertools import permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics.gpu.abs_space import EMPTY, POOL, SLOTTED, AbsView, NodeView, SlotView, slot_width
from heuristics.gpu.cluster import Instance, Placement
from proofs_check.gpu import canonical as canon_mod
from proofs_check.gpu import component_code as code_mod
from proofs_check.gpu import tie_orders
from proofs_check.gpu.canonical import canonical, canonical_map, is_canonical

G = 8


# ---------------------------------------------------------------- strategies: small ABS states
@st.composite
def abs_states(draw, max_nodes=4, max_jobs=4):
    n_nodes = draw(st.integers(1, max_nodes))
    n_jobs = draw(st.integers(0, max_jobs))
    gs = [draw(st.sampled_from([1, 1, 2, 3, 4, 5, 6, 7, 8])) for _ in range(n_jobs)]
    ones = [j for j, g in enumerate(gs) if g == 1]
    nodes = []
    for _ in range(n_nodes):
        kind = draw(st.sampled_from([EMPTY, POOL, SLOTTED]))
        if kind == POOL and ones:
            pool = tuple(draw(st.lists(st.sampled_from(ones), min_size=1, max_size=3)))
            nodes.append(NodeView(POOL, pool, ()))
        elif kind == SLOTTED and any(g >= 2 for g in gs):
            slots, room = [], G
            for j in draw(st.lists(st.sampled_from([j for j, g in enumerate(gs) if g >= 2]), min_size=1, max_size=3)):
                w = slot_width(gs[j])
                if w > room:
                    continue
                room -= w
                vac = w - gs[j]
                fillers = tuple(draw(st.lists(st.sampled_from(ones), max_size=vac))) if ones and vac else ()
                slots.append(SlotView(w, j, gs[j], fillers))
            nodes.append(NodeView(SLOTTED, (), tuple(slots)) if slots else NodeView(EMPTY))
        else:
            nodes.append(NodeView(EMPTY))
    return AbsView(G, tuple(nodes))


@st.composite
def placements(draw, max_nodes=4, max_jobs=4):
    n_nodes = draw(st.integers(1, max_nodes))
    gs = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(0, max_jobs)))]
    nodes = []
    for _ in range(n_nodes):
        jobs = draw(st.lists(st.sampled_from(range(len(gs))), max_size=3)) if gs else []
        nodes.append(tuple(Instance(j, gs[j]) for j in jobs))
    return Placement(G, tuple(nodes))


@st.composite
def twin_rich_states(draw, max_nodes=7):
    """ABS states built from a few node templates repeated, each copy with fresh single-place
    jobs, sharing a 1-GPU job A (0) and a slot job B (1): many tied nodes, twins and near-twins
    (the shape that made the canonical form permute identical nodes k! times)."""
    fresh = iter(range(2, 100))
    templates = [
        lambda: NodeView(POOL, (0, next(fresh)), ()),
        lambda: NodeView(POOL, (0, 0), ()),
        lambda: NodeView(POOL, (next(fresh),), ()),
        lambda: NodeView(POOL, (0,), ()),
        lambda: NodeView(SLOTTED, (), (SlotView(8, 1, 7, (0,)),)),
        lambda: NodeView(SLOTTED, (), (SlotView(8, 1, 7, (next(fresh),)),)),
        lambda: NodeView(SLOTTED, (), (SlotView(8, next(fresh), 7, (0,)),)),
        lambda: NodeView(SLOTTED, (), (SlotView(4, next(fresh), 3, (0,)), SlotView(4, next(fresh), 3, (next(fresh),)))),
    ]
    picks = draw(st.lists(st.integers(0, len(templates) - 1), min_size=1, max_size=max_nodes))
    return AbsView(G, tuple(templates[k]() for k in picks))


# ---------------------------------------------------------------- symmetries and the reference
def relabel_abs(v: AbsView, perm, jobmap, rnd) -> AbsView:
    nodes = []
    for i in perm:
        nd = v.nodes[i]
        pool = list(jobmap[j] for j in nd.pool)
        rnd.shuffle(pool)
        slots = [SlotView(s.width, jobmap[s.anchor_job], s.anchor_g, tuple(rnd.sample([jobmap[f] for f in s.fillers], len(s.fillers))))
                 for s in nd.slots]
        rnd.shuffle(slots)
        nodes.append(NodeView(nd.kind, tuple(pool), tuple(slots)))
    return AbsView(v.capacity, tuple(nodes))


def relabel_placement(p: Placement, perm, jobmap, rnd) -> Placement:
    nodes = []
    for i in perm:
        insts = [Instance(jobmap[x.job], x.g) for x in p.nodes[i]]
        rnd.shuffle(insts)
        nodes.append(tuple(insts))
    return Placement(p.capacity, tuple(nodes))


def jobs_in(state) -> list[int]:
    if isinstance(state, AbsView):
        js = {j for nd in state.nodes for j in nd.pool}
        js |= {j for nd in state.nodes for s in nd.slots for j in (s.anchor_job, *s.fillers)}
    else:
        js = {i.job for node in state.nodes for i in node}
    return sorted(js)


def encode(state, perm, jobmap):
    if isinstance(state, AbsView):
        return tuple(
            (state.nodes[i].kind, tuple(sorted(jobmap[j] for j in state.nodes[i].pool)),
             tuple(sorted((s.width, s.anchor_g, jobmap[s.anchor_job], tuple(sorted(jobmap[f] for f in s.fillers)))
                          for s in state.nodes[i].slots)))
            for i in perm)
    return tuple(tuple(sorted((jobmap[x.job], x.g) for x in state.nodes[i])) for i in perm)


def brute_canonical(state):
    js = jobs_in(state)
    n = len(state.nodes)
    return min(encode(state, perm, dict(zip(js, labels)))
               for perm in permutations(range(n)) for labels in permutations(range(len(js))))


# ---------------------------------------------------------------- properties
@settings(max_examples=80, deadline=None)
@given(abs_states(), st.randoms(use_true_random=False))
def test_abs_equivalent_states_share_key(v, rnd):
    js = jobs_in(v)
    perm = list(range(len(v.nodes)))
    rnd.shuffle(perm)
    targets = rnd.sample(range(100, 200), len(js))
    w = relabel_abs(v, perm, dict(zip(js, targets)), rnd)
    assert canonical(v) == canonical(w)
    assert is_canonical(canonical(v))


@settings(max_examples=150, deadline=None)
@given(twin_rich_states(), st.randoms(use_true_random=False))
def test_twin_nodes_tried_in_one_order_keep_the_key_exact(v, rnd):
    """Trying twin nodes in one order only is exact: every renumbering gets the same key, and the
    key is the state renumbered (brute force on the small ones)."""
    js = jobs_in(v)
    for _ in range(3):
        perm = list(range(len(v.nodes)))
        rnd.shuffle(perm)
        w = relabel_abs(v, perm, dict(zip(js, rnd.sample(range(100, 300), len(js)))), rnd)
        assert canonical_map(w)[0] == canonical_map(v)[0]
    if len(v.nodes) <= 4 and len(js) <= 5:
        assert brute_canonical(canonical_map(v)[0]) == brute_canonical(v)


def test_twin_classes_are_arranged_not_permuted():
    """A tie group of six twins and one other node: 7 arrangements, not 7! orders."""
    assert len(list(tie_orders.orders([[[0, 1, 2, 3, 4, 5], [6]]]))) == 7
    assert len(list(tie_orders.orders([[[0, 1], [2, 3]], [[4], [5]]]))) == 6 * 2
    assert sorted(map(tuple, tie_orders.arrangements([[0, 1], [2]]))) == [(0, 1, 2), (0, 2, 1), (2, 0, 1)]


@settings(max_examples=80, deadline=None)
@given(placements(), st.randoms(use_true_random=False))
def test_placement_equivalent_states_share_key(p, rnd):
    js = jobs_in(p)
    perm = list(range(len(p.nodes)))
    rnd.shuffle(perm)
    q = relabel_placement(p, perm, dict(zip(js, rnd.sample(range(50, 90), len(js)))), rnd)
    assert canonical(p) == canonical(q)


@settings(max_examples=60, deadline=None)
@given(abs_states(max_nodes=3, max_jobs=4), abs_states(max_nodes=3, max_jobs=4))
def test_abs_same_key_iff_isomorphic(a, b):
    if len(a.nodes) != len(b.nodes):
        return
    assert (canonical(a) == canonical(b)) == (brute_canonical(a) == brute_canonical(b))


@settings(max_examples=60, deadline=None)
@given(placements(max_nodes=3, max_jobs=4), placements(max_nodes=3, max_jobs=4))
def test_placement_same_key_iff_isomorphic(a, b):
    if len(a.nodes) != len(b.nodes):
        return
    assert (canonical(a) == canonical(b)) == (brute_canonical(a) == brute_canonical(b))


@settings(max_examples=50, deadline=None)
@given(abs_states())
def test_key_is_an_equivalent_state(v):
    """The representative is the state itself, renumbered: same brute-force class."""
    c = canonical(v)
    assert brute_canonical(c) == brute_canonical(v)
    assert jobs_in(c) == list(range(len(jobs_in(v))))


def test_cycle_versus_two_triangles_differ():
    """A 6-cycle of 2-instance jobs over pool nodes vs two 3-cycles: colour refinement alone
    cannot tell them apart (both 2-regular); the key must."""
    def ring(pairs):
        return AbsView(G, tuple(NodeView(POOL, p, ()) for p in pairs))
    six = ring([(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0)])
    two = ring([(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)])
    assert canonical(six) != canonical(two)
    shuffled = ring([(3, 2), (5, 0), (1, 0), (4, 3), (2, 1), (5, 4)])
    assert canonical(six) == canonical(shuffled)


def test_identical_components_sorted_not_permuted():
    full = NodeView(SLOTTED, (), (SlotView(8, 0, 8, ()),))
    v = AbsView(G, tuple(full._replace(slots=(SlotView(8, j, 8, ()),)) for j in range(6)))
    c = canonical(v)
    assert sorted(s.anchor_job for nd in c.nodes for s in nd.slots) == list(range(6))


@settings(max_examples=200, deadline=None)
@given(st.one_of(abs_states(max_nodes=5, max_jobs=5), placements(max_nodes=5, max_jobs=5), twin_rich_states()))
def test_discrete_components_take_the_searched_code(state):
    """A component whose first colour round gives every job its own colour takes its code, node
    order and labels (in their order) without the candidate search: the same as the search gives."""
    ad = canon_mod._adapter(state)
    nodes = [ad.read(nd) for nd in state.nodes]
    for idx in canon_mod._components(nodes):
        part = [nodes[i] for i in idx]
        ranks = code_mod._ranks([code_mod.node_base(nd) for nd in part])
        colour, footprint = code_mod._first_colours(part, ranks)
        keys = [code_mod._refined_key(nd, r, colour) for nd, r in zip(part, ranks)]
        searched = code_mod._searched(part, ranks, colour, keys, footprint)
        assert code_mod.component_code(part) == searched
        if len(set(colour.values())) == len(colour):
            code, order, labels = code_mod._discrete(part, keys, colour)
            assert (code, order, list(labels.items())) == (searched[0], searched[1], list(searched[2].items()))


# ---------------------------------------------------------------- the memoised path (canonical)
def direct(state):
    """The direct computation: no memo but ``canonical_map``'s per-component one."""
    return canonical_map(state)[0]


def variants(state, rnd):
    """``state``, the same nodes in another order, an equivalent copy (nodes permuted, jobs
    renamed, contents reordered) and the state with one node emptied — the explorer's pattern:
    successors share most nodes."""
    js = jobs_in(state)
    perm = list(range(len(state.nodes)))
    rnd.shuffle(perm)
    jobmap = dict(zip(js, rnd.sample(range(len(js) + 5), len(js))))
    moved = state._replace(nodes=tuple(state.nodes[i] for i in perm))
    if isinstance(state, AbsView):
        emptied = state._replace(nodes=(NodeView(EMPTY),) + state.nodes[1:])
        return [state, moved, relabel_abs(state, perm, jobmap, rnd), emptied]
    return [state, moved, relabel_placement(state, perm, jobmap, rnd), Placement(G, ((),) + state.nodes[1:])]


@settings(max_examples=120, deadline=None)
@given(st.lists(st.one_of(abs_states(max_nodes=5, max_jobs=5), placements(max_nodes=5, max_jobs=5)), min_size=1,
                max_size=5), st.randoms(use_true_random=False))
def test_memoised_equals_direct(states, rnd):
    """Memos filled by earlier states (classes met at other label offsets, nodes met in other
    states) never change a representative."""
    for s in states:
        for v in variants(s, rnd):
            assert canonical(v) == direct(v)


@settings(max_examples=40, deadline=None)
@given(st.lists(abs_states(max_nodes=5, max_jobs=5), min_size=2, max_size=6), st.randoms(use_true_random=False))
def test_memo_limits_never_confuse_states(states, rnd):
    """With every memo cleared after two entries (serial numbers are never reused, so a key
    built from a cleared node's serial cannot name another node), results stay exact."""
    saved = canon_mod._MEMO_LIMIT
    canon_mod._MEMO_LIMIT = 2
    try:
        for s in states:
            for v in variants(s, rnd):
                assert canonical(v) == direct(v)
    finally:
        canon_mod._MEMO_LIMIT = saved


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(abs_states(max_nodes=4, max_jobs=5), placements(max_nodes=4, max_jobs=5)), min_size=2,
                max_size=5), st.randoms(use_true_random=False))
def test_parent_hint_never_changes_a_representative(states, rnd):
    """``canonical(state, parent)`` takes the memo entries of the nodes ``state`` shares with
    ``parent`` by identity: a successor built from its parent's nodes (some replaced), an
    unrelated parent, one of another type or size, and a parent whose entries outlived a memo
    clear all give the direct computation's representative; so does the child with the
    positions of its replaced nodes named (``changed``, as the explorer names the nodes its event
    touched: the others are not looked at)."""
    saved = canon_mod._MEMO_LIMIT
    try:
        for i, (parent, other) in enumerate(zip(states, states[1:])):
            canon_mod._MEMO_LIMIT = 2 if i % 2 else saved
            if type(parent) is type(other) and len(parent.nodes) == len(other.nodes):
                # the other state's jobs renamed apart, so that the mixed child is a state (each job
                # of one size; a job met as a 2-GPU anchor and as a pool unit is no state, and
                # both paths refuse it: test_a_job_of_two_sizes_is_refused_by_both_paths)
                ids = list(range(len(other.nodes)))
                fresh = {j: 100 + j for j in jobs_in(other)}
                other = (relabel_abs if isinstance(other, AbsView) else relabel_placement)(other, ids, fresh, rnd)
                mixed = tuple(a if rnd.random() < 0.5 else b for a, b in zip(parent.nodes, other.nodes))
                child = type(parent)(parent.capacity, mixed)
                assert canonical(child, parent) == direct(child)
                changed = {n for n, (a, b) in enumerate(zip(parent.nodes, mixed)) if a is not b}
                assert canonical(child, parent, changed) == direct(child)
            assert canonical(other, parent) == direct(other)
            assert canonical(parent, parent) == direct(parent)
    finally:
        canon_mod._MEMO_LIMIT = saved


def test_whole_state_memos_hold_one_node_count():
    """States of another node count drop the whole-state memos (no state of N nodes meets one of
    N' nodes there), and the node and component memos stay: a search over many cluster sizes
    does not keep the representatives of every size before."""
    three = AbsView(G, (NodeView(POOL, (1, 2)), NodeView(EMPTY), NodeView(EMPTY)))
    four = AbsView(G, three.nodes + (NodeView(POOL, (3,)),))
    assert canonical(three) == direct(three)
    classes = dict(canon_mod._classes)
    assert canon_mod._state_memo and all(len(k) == 1 + 3 for k in canon_mod._state_memo)
    assert canonical(four) == direct(four)
    assert canon_mod._state_memo and all(len(k) == 1 + 4 for k in canon_mod._state_memo)
    assert all(len(rep.nodes) == 4 for rep in canon_mod._reps.values())
    assert all(canon_mod._classes.get(code) is cls for code, cls in classes.items())  # component memos kept
    assert canonical(three) == direct(three)


def components_bfs(jobs):
    """Connected components by breadth-first search over nodes sharing a job."""
    left, out = set(range(len(jobs))), []
    for n in range(len(jobs)):
        if n not in left:
            continue
        group, todo = [], [n]
        left.discard(n)
        while todo:
            a = todo.pop()
            group.append(a)
            for b in sorted(left):
                if jobs[a] & jobs[b]:
                    left.discard(b)
                    todo.append(b)
        out.append(sorted(group))
    return out


@settings(max_examples=200, deadline=None)
@given(st.lists(st.frozensets(st.integers(-3, 7), max_size=3), max_size=7))
def test_groups_are_the_components_in_first_node_order(jobs):
    assert canon_mod._groups([canon_mod.job_mask(js) for js in jobs]) == components_bfs(jobs)


@given(st.frozensets(st.integers(-40, 40)), st.frozensets(st.integers(-40, 40)))
def test_job_masks_intersect_as_their_sets(a, b):
    """Negative ids too (an id is a label; nothing in a state forbids one)."""
    ma, mb = canon_mod.job_mask(a), canon_mod.job_mask(b)
    assert bool(ma & mb) == bool(a & b) and ma | mb == canon_mod.job_mask(a | b)


def test_a_job_of_two_sizes_is_refused_by_both_paths():
    """Job 0 as a 2-GPU anchor on node 0 and as a pool unit on node 1 is no cluster state (a
    gang's instances all have its g): the memoised and the direct computation both refuse it,
    where they used to return representatives that differed."""
    bad = AbsView(G, (NodeView(SLOTTED, (), (SlotView(2, 0, 2, ()),)), NodeView(POOL, (0, 1), ())))
    for compute in (canonical, canonical_map):
        with pytest.raises(ValueError, match="not a cluster state: a job has instances of [12] and of [12] GPUs"):
            compute(bad)
