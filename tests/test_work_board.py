"""Forked shards share a level's frontier (``proofs_check.core.work_board``): every state is
expanded exactly once, a process that is done takes what a slow one has not reached, and who
expands a state changes no figure of the search."""
from __future__ import annotations

import multiprocessing as mp
import os
import time

from proofs_check.core import search
from proofs_check.core.engine import Engine
from proofs_check.core.search import Limits, explore
from proofs_check.core.work_board import WorkBoard, tail
from proofs_check.gpu.flat_claims import FLAT, Bounds
from test_parallel import _figures, _models


def _take(board: WorkBoard, index: int, own: list[int], tails: dict, pause: float, out) -> None:
    taken = []
    for item in board.share(index, own, tails):
        taken.append(item)
        time.sleep(pause)
    out.send(taken)


def test_every_item_is_taken_once_and_an_idle_process_takes_from_a_slow_ones_tail() -> None:
    """Process 0 owns 200 items and is slow; process 1 owns 10 and is quick: it takes its own,
    then items of 0's tail (never below the tail's start); together they take each item once."""
    ctx = mp.get_context("fork")
    board = WorkBoard(2)
    mine = list(range(200))
    theirs = list(range(1000, 1010))
    board.post(0, len(mine))  # as the search does: every frontier is posted before the level starts
    board.post(1, len(theirs))
    start, tail0 = tail(mine)
    got, sent = ctx.Pipe(duplex=False)
    quick = ctx.Process(target=_take, args=(board, 1, theirs, {0: (start, tail0)}, 0.0, sent))
    quick.start()
    here, back = ctx.Pipe(duplex=False)
    _take(board, 0, mine, {1: tail(theirs)}, 0.002, back)
    slow_took, quick_took = here.recv(), got.recv()
    quick.join(timeout=30)
    assert sorted(slow_took + quick_took) == sorted(mine + theirs)
    stolen = [i for i in quick_took if i < 1000]
    assert stolen and min(stolen) >= start == 100
    assert set(theirs) <= set(quick_took)


def test_a_slow_shard_is_helped_and_the_figures_are_the_serial_ones(monkeypatch) -> None:
    """The coordinator's shard (this process) sleeps on every state it expands, so the forked
    shard, done first, expands some of its states (a shard then reports fewer unexpanded states
    than none: it expanded more than it owns); every figure and finding is the serial search's."""
    coordinator = os.getpid()
    claim = FLAT["thm1.pool"]
    b = Bounds(min_nodes=3, max_nodes=3, depth=5, max_jobs=3, max_w=2)
    serial = _figures(explore(_models(claim, b), [claim.prop], Limits(b.depth, b.max_states)))
    models = _models(claim, b)
    actions = models[0].actions

    def slow_here(s):
        if os.getpid() == coordinator:
            time.sleep(0.002)
        return actions(s)

    monkeypatch.setattr(models[0], "actions", slow_here)
    reports: list = []
    level = search._level

    def seen_level(*args):
        done = level(*args)
        reports.extend(done[0])
        return done

    monkeypatch.setattr(search, "_level", seen_level)
    shared = explore(models, [claim.prop], Limits(b.depth, b.max_states), engine=Engine("local", 2))
    assert _figures(shared) == serial
    assert any(r["unexpanded"] < 0 for r in reports)
    assert sum(r["unexpanded"] for r in reports) == 0
