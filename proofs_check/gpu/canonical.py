"""Canonical forms of cluster states for symmetry reduction (the ONE place they are defined).

Two states are *equivalent* when one becomes the other by renumbering nodes (nodes are
interchangeable) and renaming jobs (job ids are labels); inside a node the pool P(n), the slot
multiset S(n) and each filler set F(s) are sets (seeds/000 Definitions 1–5), so their order is not
part of the state either. :func:`canonical` maps a state to a representative of its class:

* the representative is itself a state of the same type (``AbsView`` for COMPASS, ``Placement``
  for placement-only policies): nodes renumbered, jobs relabelled 0..k-1, node contents sorted.
  It *is* the state (never a hash), so two non-equivalent states can never share a key;
* equivalent states get the same representative (exact, not heuristic): the representative is the
  lexicographic minimum of an encoding over a set of candidate (node order, job order) pairs that
  is defined from isomorphism-invariant data only, so equivalent inputs have the same candidate
  set and therefore the same minimum.

How the candidate set is kept small (all steps are invariant):

1. Connected components (nodes linked by a job with instances on both) are canonicalised
   separately and then sorted, so k identical components cost a sort, not k! orders.
2. Two rounds of colour refinement: a job's colour is (g, w, the id-free signatures of the places
   its instances occupy, then the refined keys of its host nodes); a node's key is its id-free
   signature plus its contents' job colours. Nodes are sorted by key (ties permuted); for each
   node order, jobs are sorted by (colour, first appearance: node position, container shape,
   role) and only jobs tied on both are permuted.
3. *Twins* — jobs with the same colour and exactly the same footprint (same containers, same
   multiplicities), e.g. several 1-GPU jobs in one pool node — are swapped by an automorphism,
   so one order among them suffices.

The explorer stores representatives and expands them through ``policy.with_state(rep)``, so the
policy it checks breaks the paper's "pick any" ties by the representative's node order.
"""
from __future__ import annotations

from itertools import permutations, product
from typing import Any, Iterable, NamedTuple

from heuristics.gpu.abs_space import AbsView, NodeView, SlotView
from heuristics.gpu.cluster import Instance, Placement

# A container is the smallest place in a node that holds job instances as a set:
# ("P",) a pool, ("S", width, anchor_g) a slot (anchor + fillers), ("I", g) the g-GPU instances
# of a plain placement node. ``anchor`` is the anchor job of a slot (None otherwise).
Desc = tuple


class _Container(NamedTuple):
    desc: Desc
    anchor: int | None
    members: tuple[int, ...]


class _Node(NamedTuple):
    kind: str
    containers: tuple[_Container, ...]


FlatState = AbsView | Placement


def canonical(state: FlatState) -> FlatState:
    """The canonical representative of ``state`` (an ``AbsView`` or a ``Placement``).

    The same value as ``canonical_map(state)[0]``, memoised on the whole state (the explorer
    meets the same raw successor again and again) and, for an ``AbsView``, computed from per-node
    and per-component memos (see ``_canonical_abs``)."""
    rep = _state_memo.get(state)
    if rep is None:
        if len(_state_memo) >= _MEMO_LIMIT:
            _state_memo.clear()
        rep = _canonical_abs(state) if isinstance(state, AbsView) else canonical_map(state)[0]
        _state_memo[state] = rep
    return rep


def canonical_map(state: FlatState) -> tuple[FlatState, list[int], dict[int, int]]:
    """(representative, node_order, labels): node i of the representative is node
    ``node_order[i]`` of ``state``, and job id j of ``state`` is job ``labels[j]`` in it."""
    if isinstance(state, AbsView):
        nodes = _abs_nodes(state)
        order, labels = _canonical_nodes(nodes)
        return AbsView(state.capacity, tuple(_abs_node(nodes[i], labels) for i in order)), order, labels
    if isinstance(state, Placement):
        nodes = _placement_nodes(state)
        order, labels = _canonical_nodes(nodes)
        return Placement(state.capacity, tuple(_placement_node(nodes[i], labels) for i in order)), order, labels
    raise TypeError(f"no canonical form for {type(state).__name__}; expected AbsView or Placement")


def is_canonical(state: FlatState) -> bool:
    return canonical(state) == state


# ----------------------------------------------------------------------------- adapters
def _abs_nodes(view: AbsView) -> list[_Node]:
    out = []
    for nd in view.nodes:
        cs = []
        if nd.pool:
            cs.append(_Container(("P",), None, nd.pool))
        for s in nd.slots:
            cs.append(_Container(("S", s.width, s.anchor_g), s.anchor_job, s.fillers))
        out.append(_Node(nd.kind, tuple(cs)))
    return out


def _abs_node(node: _Node, labels: dict[int, int]) -> NodeView:
    pool: tuple[int, ...] = ()
    slots = []
    for c in _sorted_containers(node, labels):
        members = tuple(sorted(labels[j] for j in c.members))
        if c.desc[0] == "P":
            pool = members
        else:
            assert c.anchor is not None  # every slot container has its anchor
            slots.append(SlotView(c.desc[1], labels[c.anchor], c.desc[2], members))
    return NodeView(node.kind, pool, tuple(slots))


def _placement_nodes(p: Placement) -> list[_Node]:
    out = []
    for insts in p.nodes:
        by_g: dict[int, list[int]] = {}
        for i in insts:
            by_g.setdefault(i.g, []).append(i.job)
        out.append(_Node("node", tuple(_Container(("I", g), None, tuple(js)) for g, js in sorted(by_g.items()))))
    return out


def _placement_node(node: _Node, labels: dict[int, int]) -> tuple[Instance, ...]:
    return tuple(sorted(Instance(labels[j], c.desc[1]) for c in node.containers for j in c.members))


# ----------------------------------------------------------------------------- the algorithm
def _sorted_containers(node: _Node, labels: dict[int, int]) -> list[_Container]:
    return sorted(node.containers, key=lambda c: _container_code(c, labels))


def _container_code(c: _Container, labels: dict[int, int]) -> tuple:
    anchor = -1 if c.anchor is None else labels[c.anchor]
    return (c.desc, anchor, tuple(sorted(labels[j] for j in c.members)))


def _node_code(node: _Node, labels: dict[int, int]) -> tuple:
    return (node.kind, tuple(sorted(_container_code(c, labels) for c in node.containers)))


def _base(node: _Node) -> tuple:
    """Id-free signature of a node: its type and the shape of each container."""
    return (node.kind, tuple(sorted((c.desc, c.anchor is not None, len(c.members)) for c in node.containers)))


def _components(nodes: list[_Node]) -> list[list[int]]:
    """Node indices grouped by connectivity through shared jobs."""
    return _components_of([tuple(_jobs_of(node)) for node in nodes])


def _jobs_of(node: _Node) -> Iterable[int]:
    for c in node.containers:
        if c.anchor is not None:
            yield c.anchor
        yield from c.members


# A component's canonical form depends only on its own contents (raw ids included), and the
# explorer meets the same untouched components again and again: memoise them.
_memo: dict[tuple[_Node, ...], tuple[tuple, list[int], dict[int, int]]] = {}
_MEMO_LIMIT = 300_000


_state_memo: dict[Any, Any] = {}  # whole state -> representative
_node_memo: dict[NodeView, tuple[_Node, tuple[int, ...]]] = {}  # NodeView -> (_Node, its jobs)
_out_memo: dict[tuple[tuple[_Node, ...], int], tuple[NodeView, ...]] = {}  # (component, label offset) -> nodes


def _canonical_abs(view: AbsView) -> AbsView:
    """``canonical_map(view)[0]`` for an ``AbsView``, step for step the same computation
    (components, each canonicalised alone and memoised, sorted by code, labels offset by the
    jobs of the components before), with the node conversion and each component's relabelled
    output nodes memoised as well."""
    nodes: list[_Node] = []
    jobs: list[tuple[int, ...]] = []
    for nd in view.nodes:
        hit = _node_memo.get(nd)
        if hit is None:
            if len(_node_memo) >= _MEMO_LIMIT:
                _node_memo.clear()
            node = _abs_nodes(AbsView(view.capacity, (nd,)))[0]
            hit = _node_memo[nd] = (node, tuple(_jobs_of(node)))
        nodes.append(hit[0])
        jobs.append(hit[1])
    comps = []
    for idx in _components_of(jobs):
        part = tuple(nodes[i] for i in idx)
        found = _part_memo.get(part)
        if found is None:
            if len(_part_memo) >= _MEMO_LIMIT:
                _part_memo.clear()
            found = _part_memo[part] = _relabelled_component(part)
        comps.append((found[0], part, found[1], found[2]))
    comps.sort(key=lambda t: t[0])
    out: list[NodeView] = []
    offset = 0
    for _, part, order, labels in comps:
        key = (part, offset)
        made = _out_memo.get(key)
        if made is None:
            if len(_out_memo) >= _MEMO_LIMIT:
                _out_memo.clear()
            shifted = {j: offset + lab for j, lab in labels.items()}
            made = _out_memo[key] = tuple(_abs_node(part[i], shifted) for i in order)
        out.extend(made)
        offset += len(labels)
    return AbsView(view.capacity, tuple(out))


# The fast path keeps its own component memos: ``canonical_map``'s node order and labels (which
# ``trace_view`` shows) stay those of the direct computation.
_part_memo: dict[tuple[_Node, ...], tuple[tuple, list[int], dict[int, int]]] = {}
_norm_memo: dict[tuple[_Node, ...], tuple[tuple, list[int], dict[int, int]]] = {}


def _relabelled_component(part: tuple[_Node, ...]) -> tuple[tuple, list[int], dict[int, int]]:
    """``_canonical_component`` of ``part`` through its job-renamed copy (ids 0, 1, … by first
    appearance), so components that differ only in job ids share one computation. Exact: the
    code is the minimum over an id-invariant candidate set, hence the same for both, and the
    labels are mapped back to ``part``'s ids (any labelling reaching the minimum code gives the
    same representative)."""
    ids: dict[int, int] = {}
    norm = []
    for nd in part:
        cs = []
        for c in nd.containers:
            a = None if c.anchor is None else ids.setdefault(c.anchor, len(ids))
            cs.append(_Container(c.desc, a, tuple(ids.setdefault(j, len(ids)) for j in c.members)))
        norm.append(_Node(nd.kind, tuple(cs)))
    key = tuple(norm)
    found = _norm_memo.get(key)
    if found is None:
        if len(_norm_memo) >= _MEMO_LIMIT:
            _norm_memo.clear()
        found = _norm_memo[key] = _canonical_component(norm)
    code, order, labels = found
    back = {k: j for j, k in ids.items()}
    return code, order, {back[k]: lab for k, lab in labels.items()}


def _components_of(jobs: list[tuple[int, ...]]) -> list[list[int]]:
    """Node indices grouped by connectivity through shared jobs (union-find), from each node's
    jobs; groups in order of their first node."""
    parent = list(range(len(jobs)))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    first_host: dict[int, int] = {}
    linked = False
    for n, js in enumerate(jobs):
        for j in js:
            h = first_host.setdefault(j, n)
            if h != n:
                ra, rb = find(h), find(n)
                if ra != rb:
                    parent[rb] = ra
                    linked = True
    if not linked:
        return [[n] for n in range(len(jobs))]
    groups: dict[int, list[int]] = {}
    for n in range(len(jobs)):
        groups.setdefault(find(n), []).append(n)
    return list(groups.values())


def _canonical_nodes(nodes: list[_Node]) -> tuple[list[int], dict[int, int]]:
    """Canonical node order (indices into ``nodes``) and job relabelling (id -> label 0..k-1)."""
    comps = []
    for idx in _components(nodes):
        part = tuple(nodes[i] for i in idx)
        hit = _memo.get(part)
        if hit is None:
            if len(_memo) >= _MEMO_LIMIT:
                _memo.clear()
            hit = _memo[part] = _canonical_component(list(part))
        code, order, labels = hit
        comps.append((code, [idx[i] for i in order], labels))
    comps.sort(key=lambda t: t[0])
    out_nodes: list[int] = []
    out_labels: dict[int, int] = {}
    for _, cnodes, labels in comps:
        offset = len(out_labels)
        out_nodes.extend(cnodes)
        for j, lab in labels.items():
            out_labels[j] = offset + lab
    return out_nodes, out_labels


def _canonical_component(nodes: list[_Node]) -> tuple[tuple, list[int], dict[int, int]]:
    """Minimum encoding of one connected component over its invariant candidate set."""
    bases = [_base(nd) for nd in nodes]
    # job colour: (g, w, sorted id-free places it occupies)
    places: dict[int, list[tuple]] = {}
    g_of: dict[int, int] = {}
    for n, nd in enumerate(nodes):
        for c in nd.containers:
            if c.anchor is not None:
                places.setdefault(c.anchor, []).append((bases[n], c.desc, "a"))
                g_of[c.anchor] = c.desc[2]
            for j in c.members:
                places.setdefault(j, []).append((bases[n], c.desc, "m"))
                g_of[j] = c.desc[1] if c.desc[0] == "I" else 1
    colour: dict[int, tuple[Any, ...]] = {j: (g_of[j], len(pl), tuple(sorted(pl))) for j, pl in places.items()}
    node_keys = [_refined_key(nd, b, colour) for nd, b in zip(nodes, bases)]
    # second round: a job's colour also sees the refined keys of the nodes hosting it
    hosts: dict[int, list[tuple]] = {j: [] for j in places}
    for n, nd in enumerate(nodes):
        for j in _jobs_of(nd):
            hosts[j].append(node_keys[n])
    colour = {j: (colour[j], tuple(sorted(hosts[j]))) for j in places}
    node_keys = [_refined_key(nd, b, colour) for nd, b in zip(nodes, bases)]

    node_groups = _tie_groups(sorted(range(len(nodes)), key=lambda n: node_keys[n]), node_keys)
    job_units = _job_units(nodes, colour)

    best: tuple | None = None
    best_order: list[int] = []
    best_labels: dict[int, int] = {}
    for node_order in _orders(node_groups):
        # Jobs are ordered by colour, then by where they first appear under this node order
        # (id-free: node position, container shape, role); only jobs tied on both are permuted.
        first = _first_appearance(nodes, node_order)
        unit_key = {u: (colour[u[0]], first[u[0]]) for u in job_units}
        job_groups = _tie_groups(sorted(job_units, key=unit_key.__getitem__), unit_key)
        for unit_order in _orders(job_groups):
            labels: dict[int, int] = {}
            for unit in unit_order:
                for j in unit:
                    labels[j] = len(labels)
            code = tuple(_node_code(nodes[n], labels) for n in node_order)
            if best is None or code < best:
                best, best_order, best_labels = code, list(node_order), labels
    assert best is not None
    return best, best_order, best_labels


def _first_appearance(nodes: list[_Node], node_order: list[int]) -> dict[int, tuple]:
    first: dict[int, tuple] = {}
    for pos, n in enumerate(node_order):
        for c in nodes[n].containers:
            if c.anchor is not None and c.anchor not in first:
                first[c.anchor] = (pos, c.desc, "a")
            for j in c.members:
                if j not in first:
                    first[j] = (pos, c.desc, "m")
    return first


def _refined_key(node: _Node, base: tuple, colour: dict[int, tuple]) -> tuple:
    return (base, tuple(sorted(
        (c.desc, None if c.anchor is None else colour[c.anchor], tuple(sorted(colour[j] for j in c.members)))
        for c in node.containers
    )))


def _job_units(nodes: list[_Node], colour: dict[int, tuple]) -> list[tuple[int, ...]]:
    """Jobs grouped into twin classes (same colour, identical footprint), each sorted by id."""
    footprint: dict[int, list[tuple]] = {}
    for n, nd in enumerate(nodes):
        for k, c in enumerate(nd.containers):
            if c.anchor is not None:
                footprint.setdefault(c.anchor, []).append((n, k, "a"))
            for j in c.members:
                footprint.setdefault(j, []).append((n, k, "m"))
    twins: dict[tuple, list[int]] = {}
    for j, fp in footprint.items():
        twins.setdefault((colour[j], tuple(sorted(fp))), []).append(j)
    return [tuple(sorted(js)) for js in twins.values()]


def _tie_groups(items: list, key_of) -> list[list]:
    """Consecutive runs of equal keys in an already sorted list."""
    groups: list[list] = []
    prev = object()
    for it in items:
        k = key_of[it]
        if groups and k == prev:
            groups[-1].append(it)
        else:
            groups.append([it])
        prev = k
    return groups


def _orders(groups: list[list]):
    """Every sequence that permutes items only inside their tie group."""
    if all(len(g) == 1 for g in groups):
        yield [g[0] for g in groups]
        return
    for choice in product(*(permutations(g) for g in groups)):
        yield [it for perm in choice for it in perm]

