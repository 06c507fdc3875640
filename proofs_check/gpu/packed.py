"""A compact byte string for a flat cluster state (the search's seen-set and frontier entries).

The explorer stores every distinct representative until the end of an exploration. As nested
NamedTuples a state costs kilobytes and is re-hashed (recursively: tuples cache no hash) at every
seen-set look-up; as one ``bytes`` object it costs a few dozen bytes and its hash is cached.
``unpack(pack(s)) == s`` for every ``AbsView`` and ``Placement`` (tested), so the encoding is
lossless and the search's figures do not depend on it.

Layout (one byte per number): capacity, node count, then per node

* ``AbsView``: kind code, pool size, the pool's job labels, slot count, and per slot its width,
  anchor job, anchor g, filler count and filler labels;
* ``Placement``: instance count, then (job, g) per instance.

A state with a number outside 0..255 (or a node kind without a code) is stored as ``FALLBACK``
followed by its pickle — a capacity is never 0, so the first byte tells the two apart.
"""
from __future__ import annotations

import pickle
from typing import Final

from heuristics.gpu.abs_space import EMPTY, POOL, SLOTTED, AbsView, NodeView, SlotView
from heuristics.gpu.cluster import Instance, Placement
from heuristics.gpu.abs_store import BLOCKED
from proofs_check.gpu.canonical import FlatState

FALLBACK: Final = 0
_ABS: Final = 1
_PLACEMENT: Final = 2
KINDS: Final = (EMPTY, POOL, SLOTTED, BLOCKED)
_KIND_CODE: Final = {k: i for i, k in enumerate(KINDS)}


def pack(state: FlatState) -> bytes:
    """The state as bytes (see the module docstring)."""
    try:
        if isinstance(state, AbsView):
            # a node's bytes depend on the node alone, and the explorer's states share most of
            # their nodes (the canonical form keeps one object per node value): remembered per node
            segs = _SEGS
            nodes = state.nodes
            parts = [bytes((state.capacity, _ABS, len(nodes)))]
            for nd in nodes:  # a loop, not a comprehension (in CPython 3.11 a function call)
                parts.append(segs.get(nd) or _seg(nd))
            return b"".join(parts)
        out = [state.capacity, _PLACEMENT, len(state.nodes)]
        for node in state.nodes:
            out.append(len(node))
            for i in node:
                out += (i.job, i.g)
        return bytes(out)
    except (ValueError, KeyError, TypeError):  # a number above 255, an unknown kind, or a node
        # that cannot key ``_SEGS`` (a list for a container: not hashable)
        return bytes([FALLBACK]) + pickle.dumps(state, pickle.HIGHEST_PROTOCOL)


def _seg(node: NodeView) -> bytes:
    """A node's bytes (its part of the layout), remembered in ``_SEGS``."""
    kind, units, slots = node  # unpacked: in the compiled build an attribute is a generic look-up
    out = [_KIND_CODE[kind], len(units), *units, len(slots)]
    for width, anchor, g, fillers in slots:
        out += (width, anchor, g, len(fillers))
        out += fillers
    seg = bytes(out)
    _remember(seg, node)
    return seg


def unpack(data: bytes) -> FlatState:
    """The state ``pack`` encoded."""
    if data[0] == FALLBACK:
        state: FlatState = pickle.loads(data[1:])
        return state
    capacity, kind, n = data[0], data[1], data[2]
    at = 3
    if kind == _PLACEMENT:
        nodes = []
        for _ in range(n):
            k = data[at]
            nodes.append(tuple(Instance(data[at + 1 + 2 * i], data[at + 2 + 2 * i]) for i in range(k)))
            at += 1 + 2 * k
        return Placement(capacity, tuple(nodes))
    views = []
    memo = _NODES
    for _ in range(n):
        start = at
        at += 2 + data[at + 1]
        for _ in range(data[at]):
            at += 4 + data[at + 4]
        at += 1
        seg = data[start:at]
        nd = memo.get(seg)
        if nd is None:
            nd = _node(seg)
            _remember(seg, nd)
        views.append(nd)
    return AbsView(capacity, tuple(views))


# The explorer packs every new representative and unpacks every state it expands, and its states
# share most of their nodes: a node's bytes are its NodeView's and the other way round (immutable,
# so one value serves every state holding it). Both directions are remembered together, bounded.
NODE_MEMO: Final = 1 << 16
_NODES: Final[dict[bytes, NodeView]] = {}
_SEGS: Final[dict[NodeView, bytes]] = {}


def _remember(seg: bytes, node: NodeView) -> None:
    if len(_NODES) >= NODE_MEMO or len(_SEGS) >= NODE_MEMO:
        _NODES.clear()
        _SEGS.clear()
    _NODES[seg] = node
    _SEGS[node] = seg


def _node(seg: bytes) -> NodeView:
    k = seg[1]
    pool = tuple(seg[2:2 + k])
    at = 2 + k
    slots = []
    for _ in range(seg[at]):
        width, job, g, f = seg[at + 1:at + 5]
        slots.append(SlotView(width, job, g, tuple(seg[at + 5:at + 5 + f])))
        at += 4 + f
    return NodeView(KINDS[seg[0]], pool, tuple(slots))
