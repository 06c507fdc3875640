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
2. Colour refinement (``component_code``, one component's code): a job's colour is (g, w, the
   id-free signatures of the places its instances occupy, then, in a second round when two jobs
   still share one, the refined keys of its host nodes); a node's key is its id-free signature
   plus its contents' job colours. Nodes are sorted by key (ties permuted); for each node order,
   jobs are sorted by (colour, first appearance: node position, container shape, role) and only
   jobs tied on both are permuted.
3. *Twins* — jobs with exactly the same footprint (same containers, same multiplicities; hence
   the same colour), e.g. several 1-GPU jobs in one pool node — are swapped by an automorphism,
   so one order among them suffices. So are *twin nodes* — tied nodes equal once the jobs held
   by a single place are replaced by one token (``tie_orders.twin_classes``): k identical slotted nodes
   cost one order, not k! (a sampled state with 14 tied nodes took 16 s before).

:func:`canonical` memoises per raw node, per connected component, per component class and per
sorted sequence of classes (the explorer's successors share most of these with states met before;
the last makes the states of one class share one representative object); :func:`canonical_map` is
the direct computation and also returns the node order and relabelling. The explorer expands
representatives through ``policy.with_state(rep)``: the policy it checks breaks the paper's "pick
any" ties by the representative's node order.
"""
from __future__ import annotations

from itertools import count
from operator import attrgetter
from typing import Any, Callable, Final, Iterable, NamedTuple, Sequence

from heuristics.gpu.abs_space import AbsView, NodeView, SlotView
from heuristics.gpu.cluster import Instance, Placement
from proofs_check.gpu.component_code import Desc, PlainNode, component_code, container_shape, node_base, node_code


class _Container(NamedTuple):
    desc: Desc
    anchor: int | None
    members: tuple[int, ...]


class _Node(NamedTuple):
    kind: str
    containers: tuple[_Container, ...]


FlatState = AbsView | Placement
# tuple.__new__ builds the NamedTuples below and the output views without their Python-level
# __new__ (Final: C statics in the compiled build); it runs for every component and class met
_new: Final = tuple.__new__
_SLOT_VIEW: Final = SlotView
_NODE_VIEW: Final = NodeView


class _Adapter(NamedTuple):
    """How one state type is read into containers and written back."""

    make: Callable[[int, tuple[Any, ...]], FlatState]  # (capacity, nodes) -> state
    read: Callable[[Any], _Node]  # a node of the state -> _Node
    write: Callable[[PlainNode, dict[int, int]], Any]  # a node (by position), labels -> a node of the state


def canonical(state: FlatState, parent: FlatState | None = None, changed: Iterable[int] | None = None) -> FlatState:
    """The canonical representative of ``state`` (an ``AbsView`` or a ``Placement``).

    The same value as ``canonical_map(state)[0]``, memoised on the whole state (the explorer
    meets the same raw successor again and again, up to node order) and computed by
    ``_assembled`` from memos per node and per connected component.

    ``parent`` is a speed hint, never an input of the result: a state whose node objects
    ``state`` shares by position (an explorer's successor shares the untouched nodes of the state
    it came from). Those nodes' memo entries are the parent's, taken by identity instead of
    being looked up again (a deep hash and a deep compare of each node). ``changed``, with
    ``parent``, is a promise, not a hint: the positions where ``state``'s node may be another
    object than ``parent``'s (an explorer's successor: the nodes its event touched); every other
    position is taken from the parent's entries without a look at the node."""
    ad = _ABS if type(state) is AbsView else _adapter(state)  # the explorer's states: no call
    capacity, nodes = state  # unpacked: in the compiled build a NamedTuple attribute is a generic look-up
    if len(nodes) != _size[0]:
        _new_size(len(nodes))
    shared = parent[1] if parent is not None and type(parent) is type(state) else ()
    if parent is not None and len(shared) == len(nodes):
        # the entries of the last parent without a call (the explorer canonicalises its successors in a row)
        if _last_parent[0] is not parent:
            _parent_seen(parent, ad)
        known: list[_Seen] = _last_parent[1]
        if changed is None:
            seen = [known[i] if nd is shared[i] else _seen.get(nd) or _new_seen(nd, ad) for i, nd in enumerate(nodes)]
            serials = [s.serial for s in seen]
        else:
            seen = list(known)
            serials = list(_last_parent[2])
            for i in changed:
                nd = nodes[i]
                entry = seen[i] = _seen.get(nd) or _new_seen(nd, ad)
                serials[i] = entry.serial
    else:
        seen = [_seen.get(nd) or _new_seen(nd, ad) for nd in nodes]
        serials = [s.serial for s in seen]
    # The key names the state by its nodes' serial numbers, sorted (renumbering nodes keeps the
    # class): the memo keeps no raw state alive, and meets states that differ in node order.
    serials.sort()
    key = (capacity, *serials)
    rep = _state_memo.get(key)
    if rep is None:
        rep = _remember(_state_memo, key, _assembled(capacity, seen, ad))
    return rep


def canonical_map(state: FlatState) -> tuple[FlatState, list[int], dict[int, int]]:
    """(representative, node_order, labels): node i of the representative is node
    ``node_order[i]`` of ``state``, and job id j of ``state`` is job ``labels[j]`` in it."""
    ad = _adapter(state)
    nodes = [ad.read(nd) for nd in state.nodes]
    order, labels = _canonical_nodes(nodes)
    return ad.make(state.capacity, tuple(ad.write(nodes[i], labels) for i in order)), order, labels


def is_canonical(state: FlatState) -> bool:
    return canonical(state) == state


# ----------------------------------------------------------------------------- adapters
def _abs_read(nd: NodeView) -> _Node:
    cs = [_Container(("P",), None, nd.pool)] if nd.pool else []
    cs.extend(_Container(("S", s.width, s.anchor_g), s.anchor_job, s.fillers) for s in nd.slots)
    return _Node(nd.kind, tuple(cs))


# The writers read a node by position: a class keeps its nodes as the plain tuples of its
# normalised key (``_class_of``), which that memo holds anyway, not as a _Node / _Container copy.
def _abs_node(node: PlainNode, labels: dict[int, int]) -> NodeView:
    # the node's code is its containers relabelled, members sorted, in code order: the output's
    # order, and each container as it is written
    kind, codes = node_code(node, labels)
    pool: tuple[int, ...] = ()
    slots = []
    for desc, anchor, members in codes:
        if desc[0] == "P":
            pool = members
        else:
            assert anchor >= 0  # every slot container has its anchor (``container_code``: -1 for none)
            slots.append(_new(_SLOT_VIEW, (desc[1], anchor, desc[2], members)))
    return _new(_NODE_VIEW, (kind, pool, tuple(slots)))


def _placement_read(insts: tuple[Instance, ...]) -> _Node:
    by_g: dict[int, list[int]] = {}
    for i in insts:
        by_g.setdefault(i.g, []).append(i.job)
    return _Node("node", tuple(_Container(("I", g), None, tuple(js)) for g, js in sorted(by_g.items())))


def _placement_node(node: PlainNode, labels: dict[int, int]) -> tuple[Instance, ...]:
    return tuple(sorted(Instance(labels[j], desc[1]) for desc, _, members in node[1] for j in members))


_ABS: Final = _Adapter(AbsView, _abs_read, _abs_node)
_PLACEMENT: Final = _Adapter(Placement, _placement_read, _placement_node)


def _adapter(state: FlatState) -> _Adapter:
    if isinstance(state, AbsView):
        return _ABS
    if isinstance(state, Placement):
        return _PLACEMENT
    raise TypeError(f"no canonical form for {type(state).__name__}; expected AbsView or Placement")


# ----------------------------------------------------------------------------- the memoised path
# The explorer canonicalises successors of a canonical state: most of their nodes, and most of
# their components, were met before. ``canonical_map``'s direct computation gives the same
# representative (components canonicalised alone, sorted by code, labels offset by the jobs of
# the components before); this path reuses, per raw node, its containers and jobs, and per
# connected component (raw, then job-renamed), its isomorphism class with the class's output
# nodes at each label offset. Every key is the raw content itself or a serial number of one
# (never a hash), so a hit is exact.
_MEMO_LIMIT = 300_000


class _Class:
    """A connected component up to isomorphism (seeds/000 §4.4: nodes interchangeable, job ids
    labels): its minimum code (the sort key of components), its number of jobs, and its output
    nodes with labels offset by the jobs of the components before it."""

    __slots__ = ("code", "size", "nodes", "labels", "write", "shifted")

    def __init__(self, code: tuple, nodes: tuple[PlainNode, ...], labels: dict[int, int],
                 write: Callable[[PlainNode, dict[int, int]], Any]) -> None:
        self.code, self.size, self.nodes, self.labels, self.write = code, len(labels), nodes, labels, write
        self.shifted: dict[int, tuple[Any, ...]] = {}

    def at(self, offset: int) -> tuple[Any, ...]:
        made = self.shifted.get(offset)
        if made is None:
            labels = {j: offset + lab for j, lab in self.labels.items()}
            made = self.shifted[offset] = tuple([_interned(self.write(nd, labels)) for nd in self.nodes])
        return made


class _Seen:
    """What one raw node contributes: a serial number (never reused, so keys built from serials
    stay exact across memo clears), its containers (in shape order), its id-free signature, its
    jobs (``job_mask``), and its class when it is a component alone."""

    __slots__ = ("serial", "node", "base", "jobs", "alone")

    def __init__(self, serial: int, node: _Node) -> None:
        self.serial, self.node = serial, _Node(node.kind, tuple(sorted(node.containers, key=container_shape)))
        self.base, self.jobs = node_base(node), job_mask(_jobs_of(node))
        self.alone: _Class | None = None


# Final (here and below): C statics in the compiled build, where a plain module global is a dict
# look-up per use; the memos are cleared in place, never rebound
_state_memo: Final[dict[tuple[int, ...], FlatState]] = {}  # (capacity, node serials) -> representative
_seen: Final[dict[Any, _Seen]] = {}  # raw node -> _Seen (a NodeView, led by its kind, never equals a placement node)
_serials: Final = count()
_parts: Final[dict[tuple[int, ...], _Class]] = {}  # serials of a multi-node component's raw nodes -> class
_Normalised = tuple[PlainNode, ...]  # ``_normalised``: a component as plain tuples
_norm_memo: Final[dict[_Normalised, _Class]] = {}  # normalised component -> class
_classes: Final[dict[tuple, _Class]] = {}  # code -> class (one object per class: outputs are shared)
_last_parent: Final[list[Any]] = [None, [], []]  # ``_parent_seen``: the last parent, its nodes' entries and serials
_reps: Final[dict[tuple, FlatState]] = {}  # (capacity, state type, the sorted classes) -> representative
_size: Final = [0]  # the node count of the states the whole-state memos (_state_memo, _reps) hold
_shapes: Final[dict[tuple, Any]] = {}  # node code, normalised or output node -> its kept copy (``_interned``)
# the nodes' job masks, in node order -> their ``_groups`` (read only): states of few jobs repeat few of them
_grouped: Final[dict[tuple[int, ...], list[list[int]]]] = {}


def _new_size(n: int) -> None:
    """Forget the whole-state memos at a new node count (a state of N nodes never meets one of
    N' ≠ N there; the node and component memos serve every size): a search over many cluster
    sizes does not hold the representatives of all the sizes before."""
    _state_memo.clear()
    _reps.clear()
    _size[0] = n


def _new_seen(nd: Any, ad: _Adapter) -> _Seen:
    """The memo entry of raw node ``nd``, met for the first time."""
    return _remember(_seen, nd, _Seen(next(_serials), ad.read(nd)))


def _parent_seen(parent: FlatState, ad: _Adapter) -> None:
    """The memo entries of ``parent``'s nodes (``canonical``'s hint) and their serials, kept as
    the last parent's (``canonical`` reads them from there while its parent stays the same: the
    explorer canonicalises a state's successors one after the other). Holding an entry past a
    memo clear is exact: an entry describes its node, and serials are never reused."""
    entries, serials = [], []
    for nd in parent.nodes:  # loops, not comprehensions (in CPython 3.11 each is a function call)
        entry = _seen.get(nd) or _new_seen(nd, ad)
        entries.append(entry)
        serials.append(entry.serial)
    _last_parent[0], _last_parent[1], _last_parent[2] = parent, entries, serials


def _remember(memo: dict, key: Any, value: Any) -> Any:
    if len(memo) >= _MEMO_LIMIT:  # bounded: a long search must not grow memos without end
        memo.clear()
    memo[key] = value
    return value


def _assembled(capacity: int, seen: list[_Seen], ad: _Adapter) -> FlatState:
    """``canonical_map(state)[0]`` from the memos, for the state of nodes ``seen``."""
    classes: list[_Class] = []
    jobs = []
    for s in seen:  # a loop, not a comprehension (``_parent_seen``)
        jobs.append(s.jobs)
    masks = tuple(jobs)
    groups = _grouped.get(masks)
    if groups is None:
        groups = _remember(_grouped, masks, _groups(masks))
    for idx in groups:
        if len(idx) == 1:
            s = seen[idx[0]]
            cls = s.alone
            if cls is None:
                cls = s.alone = _class_of([s], ad.write)
        else:
            serials = []
            for i in idx:
                serials.append(seen[i].serial)
            key = tuple(serials)
            found = _parts.get(key)
            cls = found if found is not None else _remember(_parts, key, _class_of([seen[i] for i in idx], ad.write))
        classes.append(cls)
    if len(classes) > 1:  # a sort with a key builds its key list even for one item
        classes.sort(key=_CODE)
    # The representative is a function of the sorted classes alone: states of one class met
    # with other raw nodes get the same object (assembled once, and packed once by identity).
    whole: tuple[Any, ...] = (capacity, ad.make, *classes)
    rep = _reps.get(whole)
    if rep is None:
        out: list[Any] = []
        offset = 0
        for cls in classes:
            out += cls.shifted.get(offset) or cls.at(offset)
            offset += cls.size
        rep = _remember(_reps, whole, ad.make(capacity, tuple(out)))
    return rep


_CODE: Final = attrgetter("code")


def _class_of(part: list[_Seen], write: Callable[[PlainNode, dict[int, int]], Any]) -> _Class:
    """The class of a component, through a normalised copy (``_normalised``), so components
    that differ only in job ids, node order or container order share one computation. Exact:
    the copy is the component renumbered, and its code is the minimum over an id- and
    order-invariant candidate set, hence the same for both."""
    key, bases = _normalised(part)
    cls = _norm_memo.get(key)
    if cls is None:
        code, order, labels = component_code(list(key), bases)
        key = tuple([_interned(nd) for nd in key])
        cls = _classes.get(code)
        if cls is None:
            code = tuple([_interned(nc) for nc in code])
            cls = _remember(_classes, code, _Class(code, tuple([key[i] for i in order]), labels, write))
        _remember(_norm_memo, key, cls)
    return cls


def _interned(t: tuple) -> tuple:
    """One kept object per value of a node code, normalised node or output node (equal values,
    so sharing them changes nothing): classes repeat a few node shapes many times (pure thm1n6
    --workers 2: 82 -> 71 MB, then 65 MB with the output nodes too)."""
    kept = _shapes.get(t)
    return kept if kept is not None else _remember(_shapes, t, t)


def _normalised(part: list[_Seen]) -> tuple[_Normalised, list[tuple]]:
    """``part`` with its nodes in id-free signature order (stable), containers in shape order,
    job ids renamed 0, 1, … by first appearance, and containers and members sorted; and the
    nodes' id-free signatures in that order. Plain tuples, not ``_Node`` / ``_Container``: equal
    to those and hashed alike, without a NamedTuple built per container (most keys hit the memo)."""
    ids: dict[int, int] = {}
    out, bases = [], []
    ordered = sorted(part, key=_BASE) if len(part) > 1 else part
    for s in ordered:
        bases.append(s.base)
        cs = []
        kind, containers = s.node  # read by position, as below: a NamedTuple's attribute is a descriptor call
        for desc, anchor, members in containers:
            a = None if anchor is None else ids.setdefault(anchor, len(ids))
            renamed = []
            for j in members:  # in order: ids by first appearance (a loop, not a comprehension: ``_parent_seen``)
                renamed.append(ids.setdefault(j, len(ids)))
            renamed.sort()
            cs.append((desc, a, tuple(renamed)))
        cs.sort()
        out.append((kind, tuple(cs)))
    return tuple(out), bases


_BASE: Final = attrgetter("base")


# ----------------------------------------------------------------------------- the algorithm
def _components(nodes: list[_Node]) -> list[list[int]]:
    """Node indices grouped by connectivity through shared jobs."""
    return _groups([job_mask(_jobs_of(node)) for node in nodes])


def _jobs_of(node: _Node) -> Iterable[int]:
    for c in node.containers:
        if c.anchor is not None:
            yield c.anchor
        yield from c.members


def job_mask(jobs: Iterable[int]) -> int:
    """A set of job ids as the bits of an integer (id j ≥ 0: bit 2j; j < 0: bit −2j − 1), so that
    ``_groups`` tests and merges sets with integer operations, not set methods. The explorer's
    ids are labels 0..k−1; a large id only makes a wide integer."""
    mask = 0
    for j in jobs:
        mask |= 1 << (2 * j if j >= 0 else -2 * j - 1)
    return mask


def _groups(jobs: Sequence[int]) -> list[list[int]]:
    """Node indices grouped by connectivity through shared jobs (``job_mask`` of each node's
    jobs), each group ascending, in order of their first node."""
    out: list[list[int]] = []
    held: list[int] = []  # the jobs of each group
    for n, js in enumerate(jobs):
        into = -1
        if js:
            k = 0
            while k < len(out):
                if not held[k] & js:
                    k += 1
                elif into < 0:
                    into = k
                    held[k] |= js
                    out[k].append(n)
                    k += 1
                else:  # n links two groups: merge the later one into the first
                    held[into] |= held.pop(k)
                    out[into] = sorted(out[into] + out.pop(k))
        if into < 0:
            out.append([n])
            held.append(js)
    return out


# canonical_map keeps its own component memo: its node order and labels (which ``trace_view``
# shows) are those of the direct computation.
_memo: Final[dict[tuple[_Node, ...], tuple[tuple, list[int], dict[int, int]]]] = {}


def _canonical_nodes(nodes: list[_Node]) -> tuple[list[int], dict[int, int]]:
    """Canonical node order (indices into ``nodes``) and job relabelling (id -> label 0..k-1)."""
    comps = []
    for idx in _components(nodes):
        part = tuple(nodes[i] for i in idx)
        hit = _memo.get(part)
        if hit is None:
            hit = _remember(_memo, part, component_code(list(part)))
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
