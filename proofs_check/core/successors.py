"""The search's inner loop: the successors of one frontier state, routed to their owner shards.

It runs once per transition (``proofs_check.core.search.Shard.expand`` calls it once per expanded
state), so it is a plain function over plain values, which the opt-in compiled build
(``heuristics.compiled.HOT_MODULES``) compiles with the model's own hot modules; the shard, its
recovery and its Dask wiring stay interpreted.
"""
from __future__ import annotations

import zlib
from typing import Any, Callable, Final, Hashable, Sequence

from proofs_check.core.model import Outcome, Property, Step, Transition, failure_numbers
from proofs_check.core.tally import Rank, Tally

# A level's successor as a shard keeps it until absorbed and as it travels to its owner shard:
# (key, rank, packed prev, action, outcome, detail, reason, memo). States stay packed: a level can
# hold millions of new states, and most shipped ones turn out to be seen already.
Shipped = tuple


class Counts:
    """What expanding one state produced besides its successors (``Shard``'s ``_Expanded``
    counts): actions refused, operator failures, successors pruned by the model's bounds."""

    __slots__ = ("refused", "failures", "pruned")

    def __init__(self) -> None:
        self.refused = self.failures = self.pruned = 0


_OBJECT_NEW: Final = object.__new__


def new_step(prev: Any, action: Any, outcome: Outcome, state: Any, detail: Any = (), reason: str = "",
             memo: dict[str, Any] | None = None) -> Step[Any, Any]:
    """``Step(prev, action, outcome, state, detail, reason, memo)``, for a model's ``step`` in the
    compiled build: the same fields written item by item, without the call of the Python-level
    ``Step.__init__`` that a compiled caller makes generically (one per transition: 3 % of a
    compiled pool5 run's instructions). ``tests/test_core.py`` checks that both build equal steps."""
    st: Step[Any, Any] = _OBJECT_NEW(Step)
    d = st.__dict__
    d["prev"] = prev
    d["action"] = action
    d["outcome"] = outcome
    d["state"] = state
    d["detail"] = detail
    d["reason"] = reason
    d["memo"] = {} if memo is None else memo
    return st


def owner(state: Hashable, count: int) -> int:
    """The shard that owns ``state``: a hash that is the same in every process and on every host
    (a packed state's own bytes; any other state by its ``repr``)."""
    return zlib.crc32(state if isinstance(state, bytes) else repr(state).encode()) % count


def successors(transition: Callable[[Any, Any], Transition], state: Any, key: Hashable, path: Rank,
               acts: Sequence[Any], props: Sequence[Property[Any, Any]], failure_props: Sequence[Property[Any, Any]],
               tally: Tally, pack: Callable[[Any], Hashable], shard: tuple[int, int], seen: set[Hashable],
               shipped: set[Hashable], out: list[dict[Hashable, Shipped]]) -> Counts:
    """Apply each of ``acts`` to ``state`` (packed as ``key``, reached by ``path``) by the model's
    ``transition`` (``proofs_check.core.model.transitions``); evaluate the transition properties
    and operator failures; put each successor into its owner's box of ``out``, keeping the
    minimum-rank discoverer, unless its owner has it already: it is in ``seen`` (this shard's,
    ``shard`` = (index, count)) or, owned by another shard, in ``shipped`` (keys this shard sent in
    an earlier level, which their owners absorbed)."""
    index, count = shard
    c = Counts()
    refused_, failed_ = Outcome.REFUSED, Outcome.FAILED
    for i, action in enumerate(acts):
        outcome, nxt, detail, reason, memo = transition(state, action)
        if outcome is refused_:
            c.refused += 1
            continue
        if outcome is failed_:
            c.failures += 1
            for p in failure_props:
                tally.found(p.name, path + (i,), failure_numbers(reason), reason)
            continue
        if outcome is None:  # outside the premise (``PRUNED``)
            c.pruned += 1
            continue
        if props:  # the step of the transition (Step: state --action--> nxt), for its properties
            tally.evaluate(props, new_step(state, action, outcome, nxt, detail, reason, memo), False, path + (i,))
        succ = pack(nxt)
        dest = index if count == 1 else owner(succ, count)
        if succ in (seen if dest == index else shipped):
            continue
        box = out[dest]
        prev = box.get(succ)
        rank = path + (i,)
        if prev is None or rank < prev[1]:
            # the step's prev is ``state``, packed as ``key``
            box[succ] = (succ, rank, key, action, outcome, detail, reason, memo)
    return c
