"""Work computed ahead on a spare core (``proofs_check.core.ahead``) and its two uses (both through
``taken_ahead``, so the tests replace ``Ahead`` and ``spare_core`` there): the
abstraction checks of the later cluster sizes of ``verify --policy``, and the apply-and-undo
checks of the later sizes of the flat claims (the same results as computed in the search's own
process, whatever the child does)."""
from __future__ import annotations

import json
import multiprocessing
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from proofs_check.cli.verify import main
from proofs_check.core import ahead as ahead_mod
from proofs_check.core.ahead import Ahead
from proofs_check.core.engine import Engine
from heuristics.gpu.compass import Compass
from proofs_check.gpu import flat_claims, policy_claims

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))


def _square(x: int) -> int:
    return x * x


def _fails_at_two(x: int) -> int:
    if x == 2:
        raise ValueError("two")
    return x


def test_results_arrive_in_any_order_of_taking() -> None:
    a = Ahead(_square, [1, 2, 3])
    try:
        assert (a.take(3), a.take(1), a.take(2)) == (9, 1, 4)
        assert a.take(4) is None and a.take(3) is None  # not one of its items, taken before: at once
    finally:
        a.close()


def test_a_failure_there_leaves_that_item_and_the_rest_to_the_caller() -> None:
    a = Ahead(_fails_at_two, [1, 2, 3])
    try:
        assert (a.take(1), a.take(2), a.take(3)) == (1, None, None)
    finally:
        a.close()


def test_a_result_pickle_cannot_take_is_left_to_the_caller() -> None:
    a = Ahead(lambda x: (lambda: x), [1])
    try:
        assert a.take(1) is None
    finally:
        a.close()


def test_close_stops_unfinished_work() -> None:
    a = Ahead(time.sleep, [60])
    t = time.perf_counter()
    a.close()
    assert time.perf_counter() - t < 10 and not a._proc.is_alive()


def _abstractions(out: Path) -> Any:
    return json.loads(out.read_text())["results"][0]["stats"]["abstractions"]


def _counted(taken: list[Any]) -> type:
    class Counted(Ahead):  # type: ignore[type-arg]
        def take(self, x: Any) -> Any:
            got = super().take(x)
            taken.append(got)
            return got
    return Counted


@pytest.mark.parametrize("spec", ["symmetric_best_fit:SymmetricBestFit", "tests.test_live_model:LeakyCounter"])
def test_the_checks_run_ahead_with_the_results_made_here(spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    taken: list[Any] = []
    args = ["--policy", spec, "--claim", "policy.valid", "--max-nodes", "3", "--depth", "4", "--quiet"]
    monkeypatch.setattr(ahead_mod, "Ahead", _counted(taken))
    monkeypatch.setattr(ahead_mod, "spare_core", lambda: True)
    monkeypatch.setattr(policy_claims, "_CHECKED", {})
    code = main([*args, "--json", str(tmp_path / "ahead.json")])
    ahead_err = capsys.readouterr().err
    assert taken[0] is None and len(taken) == 3 and None not in taken[1:]  # N=2 and N=3 were checked there

    monkeypatch.setattr(ahead_mod, "spare_core", lambda: False)
    monkeypatch.setattr(policy_claims, "_CHECKED", {})
    assert main([*args, "--json", str(tmp_path / "here.json")]) == code
    assert capsys.readouterr().err == ahead_err  # the same refusal lines, if any
    assert len(taken) == 3
    assert _abstractions(tmp_path / "ahead.json") == _abstractions(tmp_path / "here.json")


def test_a_child_that_dies_leaves_the_checks_to_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    def dies(n: int) -> Any:
        import os
        os._exit(3)

    class Dying(Ahead):  # type: ignore[type-arg]
        def __init__(self, fn: Any, items: Any) -> None:
            super().__init__(dies, items)

    args = ["--policy", "symmetric_best_fit:SymmetricBestFit", "--claim", "policy.valid", "--max-nodes", "3",
            "--depth", "4", "--quiet"]
    monkeypatch.setattr(ahead_mod, "Ahead", Dying)
    monkeypatch.setattr(ahead_mod, "spare_core", lambda: True)
    monkeypatch.setattr(policy_claims, "_CHECKED", {})
    assert main(args) == 0
    assert [c.trust.symmetry for c in policy_claims._CHECKED.values()] == [True, True, True]  # made here


def test_spare_core_needs_fork_and_a_second_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ahead_mod.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert not ahead_mod.spare_core()
    monkeypatch.setattr(ahead_mod.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert ahead_mod.spare_core() == ("fork" in multiprocessing.get_all_start_methods())


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("broken", [False, True])
def test_the_fast_path_checks_of_later_sizes_run_ahead(broken: bool, workers: int, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The flat claims' apply-and-undo checks of N = 2 and 3 come from the child, serial and with
    forked shards, with the same refusal lines (a rollback that forgets the running jobs is
    refused at every N) and the same verdicts and exploration rows as when every check runs in
    the search's process."""
    if broken:
        rollback = Compass.rollback

        def forgetful(self: Compass) -> None:
            rollback(self)
            self.jobs = {}

        monkeypatch.setattr(Compass, "rollback", forgetful)
    b = flat_claims.Bounds(max_nodes=3, depth=4, max_jobs=3, max_w=2)

    def run() -> tuple[Any, str]:
        results = flat_claims.run_flat([flat_claims.FLAT["thm1.slotted"]], b, engine=Engine("local", workers))
        rows = [(r.verdict, [{k: v for k, v in row.items() if k not in ("seconds", "distinct/s")}
                             for row in r.stats["sizes"]]) for r in results]
        return rows, capsys.readouterr().err

    taken: list[Any] = []
    monkeypatch.setattr(ahead_mod, "Ahead", _counted(taken))
    monkeypatch.setattr(ahead_mod, "spare_core", lambda: True)
    ahead = run()
    assert taken[0] is None and len(taken) == 3 and None not in taken[1:]  # N = 2 and 3: by the child
    assert all((got[0] is not None) == broken for got in taken[1:])
    monkeypatch.setattr(ahead_mod, "spare_core", lambda: False)
    assert run() == ahead
    assert len(taken) == 3
    assert ahead[1].count("apply-and-undo refused") == (3 if broken else 0)
