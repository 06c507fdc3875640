"""The canonical code of one connected component of a flat cluster state (``canonical`` memoises
it per isomorphism class and assembles states from components).

A component is a list of nodes, each read by position: (kind, containers), a container (desc,
anchor, members) (``canonical._Node`` or its plain-tuple twin). Its code is the lexicographic
minimum, over a set of candidate (node order, job order) pairs, of the nodes' codes with jobs
relabelled 0..k-1; the set is defined from isomorphism-invariant data only, so isomorphic
components get one code. Colour refinement (a job's colour: g, w and the id-free places it
occupies; in a second round, when two jobs still share one, also the refined keys of its host
nodes) orders nodes and jobs; only ties are permuted, and twins (``tie_orders``) are tried in one
order. When every job has a colour of its own the code needs no search (``_discrete``).
"""
from __future__ import annotations

from proofs_check.gpu.tie_orders import orders, tie_groups, twin_classes

# A container is the smallest place in a node that holds job instances as a set:
# ("P",) a pool, ("S", width, anchor_g) a slot (anchor + fillers), ("I", g) the g-GPU instances
# of a plain placement node. ``anchor`` is the anchor job of a slot (None otherwise).
Desc = tuple
PlainContainer = tuple[Desc, int | None, tuple[int, ...]]  # (desc, anchor, members)
PlainNode = tuple[str, tuple[PlainContainer, ...]]  # (kind, containers)
Footprint = dict[int, list[tuple]]  # job -> its places, (node, container, role)


# The two codes below run for every container of every candidate order: loops, not
# comprehensions (in CPython 3.11 each comprehension is a function call, here over a few items).
def container_code(c: PlainContainer, labels: dict[int, int]) -> tuple:
    desc, anchor, members = c
    relabelled = []
    for j in members:
        relabelled.append(labels[j])
    relabelled.sort()
    return (desc, -1 if anchor is None else labels[anchor], tuple(relabelled))


def node_code(node: PlainNode, labels: dict[int, int]) -> tuple:
    kind, containers = node
    codes = []
    for c in containers:
        codes.append(container_code(c, labels))
    codes.sort()
    return (kind, tuple(codes))


def node_base(node: PlainNode) -> tuple:
    """Id-free signature of a node: its type and the shape of each container."""
    return (node[0], tuple(sorted(map(container_shape, node[1]))))


def container_shape(c: PlainContainer) -> tuple:
    desc, anchor, members = c
    return (desc, anchor is not None, len(members))


def component_code(nodes: list[PlainNode], bases: list[tuple] | None = None) -> tuple[tuple, list[int], dict[int, int]]:
    """(code, node order, labels): the minimum encoding of one connected component over its
    invariant candidate set, the node order (indices into ``nodes``) and the job labels that give
    it (``bases``: the nodes' ``node_base``, when the caller has them)."""
    if bases is None:
        bases = [node_base(nd) for nd in nodes]
    ranks = _ranks(bases)
    colour, footprint = _first_colours(nodes, ranks)
    node_keys = [_refined_key(nd, r, colour) for nd, r in zip(nodes, ranks)]
    if len(set(colour.values())) == len(colour):
        return _discrete(nodes, node_keys, colour)
    return _searched(nodes, ranks, colour, node_keys, footprint)


def _ranks(bases: list[tuple]) -> list[int]:
    """Each node's signature by its rank among the component's: every comparison of colours and
    keys built from them gives what it gave with the signatures themselves, on shallow tuples
    (colours and keys are hashed and sorted)."""
    rank = {b: i for i, b in enumerate(sorted(set(bases)))}
    return [rank[b] for b in bases]


def _first_colours(nodes: list[PlainNode], ranks: list[int]) -> tuple[dict[int, tuple], Footprint]:
    """Each job's first-round colour, (g, w, its id-free places sorted), and its footprint."""
    places: dict[int, list[tuple]] = {}
    g_of: dict[int, int] = {}
    footprint: Footprint = {}
    for n, (_, containers) in enumerate(nodes):
        base = ranks[n]
        for k, (desc, anchor, members) in enumerate(containers):
            if anchor is not None:
                places.setdefault(anchor, []).append((base, desc, "a"))
                footprint.setdefault(anchor, []).append((n, k, "a"))
                if g_of.setdefault(anchor, desc[2]) != desc[2]:
                    raise _two_sizes(g_of[anchor], desc[2])
            g = desc[1] if desc[0] == "I" else 1
            for j in members:
                places.setdefault(j, []).append((base, desc, "m"))
                footprint.setdefault(j, []).append((n, k, "m"))
                if g_of.setdefault(j, g) != g:
                    raise _two_sizes(g_of[j], g)
    return {j: (g_of[j], len(pl), tuple(sorted(pl))) for j, pl in places.items()}, footprint


def _searched(nodes: list[PlainNode], ranks: list[int], colour: dict[int, tuple], node_keys: list[tuple],
              footprint: Footprint) -> tuple[tuple, list[int], dict[int, int]]:
    """``component_code``'s result by its candidate search, from the first round's colours and keys."""
    # second round: a job's colour also sees the refined keys of the nodes hosting it
    colour = {j: (colour[j], tuple(sorted([node_keys[n] for n, _, _ in fp]))) for j, fp in footprint.items()}
    node_keys = [_refined_key(nd, r, colour) for nd, r in zip(nodes, ranks)]

    single = {j for j, fp in footprint.items() if len(fp) == 1}
    node_groups = [twin_classes(g, nodes, single)
                   for g in tie_groups(sorted(range(len(nodes)), key=node_keys.__getitem__), node_keys)]
    # Twins: jobs with the same footprint (their colour, a function of the footprint, is then
    # the same too), e.g. several 1-GPU jobs in one pool node; an automorphism swaps them.
    twins: dict[tuple, list[int]] = {}
    for j, fp in footprint.items():
        twins.setdefault(tuple(sorted(fp)), []).append(j)
    job_units = [tuple(sorted(js)) for js in twins.values()]

    best: tuple | None = None
    best_order: list[int] = []
    best_labels: dict[int, int] = {}
    for node_order in orders(node_groups):
        # Jobs are ordered by colour, then by where they first appear under this node order
        # (id-free: node position, container shape, role); only jobs tied on both are permuted.
        first = _first_appearance(nodes, node_order)
        unit_key = {u: (colour[u[0]], first[u[0]]) for u in job_units}
        job_groups = [[[u] for u in g] for g in tie_groups(sorted(job_units, key=unit_key.__getitem__), unit_key)]
        for unit_order in orders(job_groups):
            labels: dict[int, int] = {}
            for unit in unit_order:
                for j in unit:
                    labels[j] = len(labels)
            code = _code(nodes, node_order, labels)
            if best is None or code < best:
                best, best_order, best_labels = code, list(node_order), labels
    assert best is not None
    return best, best_order, best_labels


def _discrete(nodes: list[PlainNode], node_keys: list[tuple], colour: dict[int, tuple]) -> tuple[tuple, list[int], dict[int, int]]:
    """``component_code``'s result when the first round gave every job its own colour.
    The second round would change nothing (its colours compare as these: a pair differs in its
    first part); no two jobs tie, so there are no twins and the labels follow the colours; and
    nodes tied on their keys hold the same jobs in the same containers (a key names them by
    colour), so every candidate order gives one code and the first one, ascending, is the result."""
    order = sorted(range(len(nodes)), key=node_keys.__getitem__)
    labels = {j: i for i, j in enumerate(sorted(colour, key=colour.__getitem__))}
    return _code(nodes, order, labels), order, labels


def _code(nodes: list[PlainNode], order: list[int], labels: dict[int, int]) -> tuple:
    """The encoding of ``nodes`` in ``order`` with job ``labels``."""
    codes = []
    for n in order:  # a loop, not a comprehension (``container_code``): once per candidate order
        codes.append(node_code(nodes[n], labels))
    return tuple(codes)


def _two_sizes(g: int, other: int) -> ValueError:
    """A job met with instances of two sizes (say a 2-GPU anchor and a pool unit) makes no cluster
    state, since a gang's instances all have its g; the canonical form is defined on states only,
    and both of its paths refuse such a job alike (the memoised one numbers a component's jobs
    afresh, so the message names the sizes, not the job)."""
    return ValueError(f"not a cluster state: a job has instances of {g} and of {other} GPUs")


def _first_appearance(nodes: list[PlainNode], node_order: list[int]) -> dict[int, tuple]:
    first: dict[int, tuple] = {}
    for pos, n in enumerate(node_order):
        for desc, anchor, members in nodes[n][1]:
            if anchor is not None and anchor not in first:
                first[anchor] = (pos, desc, "a")
            for j in members:
                if j not in first:
                    first[j] = (pos, desc, "m")
    return first


def _refined_key(node: PlainNode, rank: int, colour: dict[int, tuple]) -> tuple:
    """A node's key: its signature's rank (``_ranks``), then each container's jobs by colour."""
    keys = []
    for desc, anchor, members in node[1]:  # loops, not comprehensions (``container_code``)
        colours = []
        for j in members:
            colours.append(colour[j])
        colours.sort()
        keys.append((desc, None if anchor is None else colour[anchor], tuple(colours)))
    keys.sort()
    return (rank, tuple(keys))
