"""The candidate orders of the canonical form's minimisation (``proofs_check.gpu.component_code``).

Items tied on every isomorphism-invariant key must be tried in every order, except that members
of one *twin class* (swapped by an automorphism) need only one: so a tie group is a list of twin
classes, and its candidates are the distinct interleavings of their members, each class keeping
its own order. k identical twins cost one order instead of k!.
"""
from __future__ import annotations

from itertools import product
from typing import Any, Iterator


def orders(groups: list[list[list]]) -> Iterator[list]:
    """Every sequence that arranges items only inside their tie group (a list of twin classes),
    the members of a twin class keeping their order."""
    if all(len(g) == 1 for g in groups):
        yield [it for g in groups for it in g[0]]
        return
    for choice in product(*(list(arrangements(g)) for g in groups)):
        yield [it for arr in choice for it in arr]


def arrangements(classes: list[list]) -> Iterator[list]:
    """The distinct interleavings of the classes' members, each class keeping its own order
    (a multiset permutation: (Σ kᵢ)! / Π kᵢ! of them)."""
    if len(classes) == 1:
        yield list(classes[0])
        return
    left = [len(c) for c in classes]
    total = sum(left)
    seq: list[int] = []

    def extend() -> Iterator[list]:
        if len(seq) == total:
            taken = [0] * len(classes)
            out = []
            for k in seq:
                out.append(classes[k][taken[k]])
                taken[k] += 1
            yield out
            return
        for k in range(len(classes)):
            if left[k]:
                left[k] -= 1
                seq.append(k)
                yield from extend()
                seq.pop()
                left[k] += 1

    yield from extend()


def tie_groups(items: list, key_of: Any) -> list[list]:
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


def twin_classes(group: list[int], nodes: list[Any], single: set[int]) -> list[list[int]]:
    """The nodes of one tie group, split into *twin* classes (each ascending): nodes equal once
    every job with a single place in the component (so held by that node alone) is replaced by
    one token. Swapping two twins, and their single-place jobs container by container, is an
    automorphism, so the twins of a class need only be tried in one order (k identical nodes
    cost one order, not k!). A node is read by position: (kind, containers), each container
    (desc, anchor, members) (``canonical._Node``)."""
    if len(group) == 1:  # most groups: a node alone needs no key
        return [group]
    classes: dict[tuple, list[int]] = {}
    for n in group:
        classes.setdefault(_twin_key(nodes[n], single), []).append(n)
    return list(classes.values())


def _twin_key(node: Any, single: set[int]) -> tuple:
    def token(j: int) -> tuple:
        return (1,) if j in single else (0, j)

    kind, containers = node
    return (kind, tuple(sorted([(desc, None if anchor is None else token(anchor), tuple(sorted([token(j) for j in members])))
                                for desc, anchor, members in containers])))
