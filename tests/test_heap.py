"""The search's long-lived heap is frozen out of full collections per level and given back at
the end of each size (``proofs_check.core.heap``); the explorer's results are the golden run's."""
from __future__ import annotations

import gc
import weakref

from proofs_check.core import heap


def test_settle_freezes_only_inside_long_lived_and_the_end_unfreezes() -> None:
    assert gc.get_freeze_count() == 0
    heap.settle()
    assert gc.get_freeze_count() == 0
    with heap.long_lived():
        kept = [[i] for i in range(100)]
        heap.settle()
        assert gc.get_freeze_count() >= 100
        with heap.long_lived():  # nested: the outer block owns the freeze
            heap.settle()
        assert gc.get_freeze_count() >= 100
    assert gc.get_freeze_count() == 0 and len(kept) == 100


def test_the_young_generation_is_collected_less_often_inside_and_as_before_after() -> None:
    before = gc.get_threshold()
    with heap.long_lived():
        assert gc.get_threshold() == (max(before[0], heap.YOUNG_THRESHOLD), *before[1:])
        with heap.long_lived():  # nested: the outer block owns the threshold too
            pass
        assert gc.get_threshold()[0] == max(before[0], heap.YOUNG_THRESHOLD)
    assert gc.get_threshold() == before


def test_a_frozen_cycle_lives_until_the_block_ends() -> None:
    """The one cost: cyclic garbage among frozen objects is collected at the end, not before."""
    class Node:
        other: "Node"

    with heap.long_lived():
        a, b = Node(), Node()
        a.other, b.other = b, a
        alive = weakref.ref(a)
        heap.settle()
        del a, b
        gc.collect()
        assert alive() is not None
    gc.collect()
    assert alive() is None


def test_an_exploration_leaves_nothing_frozen() -> None:
    from proofs_check.testing import check_policy

    check_policy("first-fit", claims=["policy.valid"], min_nodes=2, max_nodes=2, depth=3, max_w=2)
    assert gc.get_freeze_count() == 0
