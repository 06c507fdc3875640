"""Scale-out (issue 9): the partitioned BFS and the engine-run sweeps give the serial results.

The local backend (forked shards, ``Engine("local", K)``) is compared with the serial search
(``proofs_check.core.search.explore``) on every property kind (state, arrival/departure, operator
failure), with and without a --max-states cut; a real Dask
LocalCluster (two worker processes on loopback, started and stopped here) runs an exploration, the
`verify` command and a `simulate` / `ringsim` sweep, compared with the serial runs.
"""
from __future__ import annotations

import csv
import json
import pickle
import subprocess
import sys
import time
from dataclasses import asdict

import pytest

from proofs_check.core import search
from proofs_check.core.engine import Engine, InProcessPool
from proofs_check.core.model import Expect, Property, Undecided
from proofs_check.core.search import Limits, explore, owner
from proofs_check.gpu import facts as facts_module
from proofs_check.gpu import packed
from proofs_check.gpu.events import state_to_json
from proofs_check.gpu.flat_claims import FLAT, Bounds, compass_factory
from proofs_check.gpu.policy_model import EventBounds, PolicyModel

SMALL = Bounds(max_nodes=3, depth=5, max_jobs=3, max_w=2)


def simulate(args: list[str], block_dask: bool = False) -> subprocess.CompletedProcess:
    """`simulate` in a child process: simulate_cli binds sys.stdout / sys.stderr as default
    arguments at import, so importing it here would capture other tests' output streams."""
    code = ("import sys; " + ("sys.modules['distributed'] = None; " if block_dask else "") +
            "from proofs_check.cli.simulate import main; sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)


def _models(claim, bounds):
    events = EventBounds(claim.demands, bounds.max_jobs, bounds.max_w)
    return [PolicyModel(compass_factory(claim.variant), n, events, claim.wcc_trajectory)
            for n in range(bounds.min_nodes, bounds.max_nodes + 1)]


def _explore(ids, bounds, workers=1, **kw):
    """The claims' one exploration (they share variant, event family and premise filter)."""
    claims = [FLAT[i] for i in ids]
    kw.setdefault("engine", Engine("local", workers))
    return explore(_models(claims[0], bounds), [c.prop for c in claims], Limits(bounds.depth, bounds.max_states), **kw)


def _figures(exp):
    """Everything an exploration reports except timings."""
    sizes = [{k: v for k, v in asdict(s).items() if k != "seconds"} for s in exp.sizes]
    outcomes = {cid: (o.premise_met, o.undecided, None if o.finding is None else
                      (o.finding.size, o.finding.actions, o.finding.states, o.finding.numbers, o.finding.failure))
                for cid, o in exp.outcomes.items()}
    return sizes, outcomes


@pytest.mark.parametrize("ids, bounds", [
    (("thm1.slotted", "thm1.pool", "thm1.sif"), SMALL),  # state probes, two violated at N = 2, 3
    (("prop3.arrival", "prop3.departure", "prop3.tight"), Bounds(max_nodes=3, depth=6, max_jobs=3, max_w=2)),
    (("prop1.abs", "prop1.operators"), Bounds(max_nodes=2, depth=5, max_jobs=3, max_w=2)),  # operator failure
    (("thm1.pool", "lemA2"), Bounds(max_nodes=3, depth=6, max_jobs=3, max_w=2, max_states=137)),  # budget cut
    (("thm1.pool", "lemA2"), Bounds(max_nodes=3, depth=6, max_jobs=3, max_w=2, max_states=1)),
])
def test_local_partitioned_search_equals_serial(ids, bounds):
    serial = _explore(ids, bounds)
    parallel = _explore(ids, bounds, workers=2)
    assert _figures(parallel) == _figures(serial)
    assert not serial.complete or sum(s.distinct for s in serial.sizes) > 100


def test_solver_limits_and_time_limit_are_reported_as_serial(monkeypatch):
    """Exact Φ★, except a pretended solver limit (Undecided) on every third total demand; the
    forked shards inherit the patched Φ★."""
    exact = facts_module.exact_phi_star

    def phi_star_with_limits(counts, n):
        if sum(g * k for g, k in enumerate(counts, 1)) % 3 == 0:
            raise Undecided(f"pretended limit at {counts}, N={n}")
        return exact(counts, n)

    monkeypatch.setattr(facts_module, "exact_phi_star", phi_star_with_limits)
    runs = [_explore(("thm1.sif",), SMALL, workers=w) for w in (1, 2)]
    assert runs[0].outcomes["thm1.sif"].undecided.startswith("pretended limit")
    assert _figures(runs[1]) == _figures(runs[0])
    monkeypatch.setattr(facts_module, "exact_phi_star", exact)
    past = [_explore(("thm1.sif",), SMALL, workers=w, deadline=time.perf_counter() - 1) for w in (1, 2)]
    assert past[0].sizes[-1].stop_reason == "time limit" and _figures(past[1]) == _figures(past[0])


def test_budget_cut_is_inside_a_level_and_reported_as_serial():
    b = Bounds(max_nodes=3, depth=6, max_jobs=3, max_w=2, max_states=137)
    exp = _explore(("thm1.pool",), b, workers=3)
    last = exp.sizes[-1]
    assert not last.complete and last.stop_reason == "max-states 137"
    assert last.distinct >= 137 and last.queue_left > 0


def test_ownership_is_the_same_in_every_process_and_spreads_states():
    """Shards on other hosts have other string-hash seeds: ownership must not depend on them."""
    import os

    states = []
    explore(_models(FLAT["thm1.pool"], SMALL), [Property("keep", Expect.ALWAYS, lambda st: states.append(st.state))],
            Limits(SMALL.depth, SMALL.max_states))
    here = [owner(s, 3) for s in states]
    code = ("import json, sys; from proofs_check.gpu.events import state_from_json; "
            "from proofs_check.core.search import owner; "
            "print(json.dumps([owner(state_from_json(d), 3) for d in json.load(sys.stdin)]))")
    there = subprocess.run([sys.executable, "-c", code], input=json.dumps([state_to_json(s) for s in states]),
                           capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert json.loads(there.stdout) == here
    assert len(states) > 100 and min(here.count(i) for i in range(3)) > len(states) / 6
    # the search's keys are packed states: owned by their bytes, spread as well
    keys = [owner(packed.pack(s), 3) for s in states]
    assert min(keys.count(i) for i in range(3)) > len(states) / 6


def test_missing_dask_or_bad_flags_exit_2_with_one_line(monkeypatch, capsys, tmp_path):
    from proofs_check.cli.verify import main as verify

    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed → ImportError
    assert verify(["--theorem", "1", "--max-nodes", "2", "--backend", "dask", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'placement-oracles[dist]'" in err[0]
    blocked = simulate(["--schedulers", "best-fit", "--backend", "dask"], block_dask=True)
    assert blocked.returncode == 2 and "Dask distributed" in blocked.stderr
    assert verify(["--theorem", "1", "--address", "127.0.0.1:1", "--quiet"]) == 2
    assert "--address needs --backend dask" in capsys.readouterr().err


# --------------------------------------------------------------------------- a real Dask cluster
@pytest.fixture(scope="module")
def dask_address():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def test_dask_exploration_equals_serial(dask_address):
    ids = ("thm1.slotted", "thm1.pool", "thm1.sif")
    serial = _explore(ids, SMALL)
    with Engine("dask", None, dask_address) as engine:
        assert engine.workers == 2
        on_dask = _explore(ids, SMALL, engine=engine)
    assert _figures(on_dask) == _figures(serial)
    assert serial.outcomes["thm1.sif"].finding is not None


def test_verify_command_on_dask_equals_local(dask_address, tmp_path, capsys):
    from proofs_check.cli.verify import main as verify

    common = ["--theorem", "1", "--max-nodes", "3", "--depth", "5", "--max-jobs", "3", "--max-w", "2", "--quiet"]
    runs = {}
    for name, extra in {"serial": [], "local2": ["--workers", "2"],
                        "dask": ["--backend", "dask", "--address", dask_address]}.items():
        path = tmp_path / f"{name}.json"
        code = verify(common + extra + ["--json", str(path)])
        results = json.loads(path.read_text())["results"]
        for r in results:
            for s in r["stats"]["sizes"]:
                s.pop("seconds"), s.pop("distinct/s")
        runs[name] = (code, results)
    capsys.readouterr()
    assert runs["serial"][0] == 1  # thm1.slotted and thm1.sif are violated at these bounds
    assert runs["local2"] == runs["serial"] and runs["dask"] == runs["serial"]


def test_simulate_sweep_on_dask_equals_serial(dask_address, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("job_id,submit,duration,g,w\n" + "".join(
        f"{i},{i % 7},{5 + i % 11},{(1, 2, 4, 8, 3)[i % 5]},{1 + i % 2}\n" for i in range(40)))
    tables = {}
    for name, extra in {"serial": [], "dask": ["--backend", "dask", "--address", dask_address]}.items():
        out = tmp_path / name
        run = simulate([str(trace), "--schedulers", "best-fit,compass-repaired", "--nodes", "4",
                        "--migration-cost", "1,8", "--out", str(out)] + extra)
        assert run.returncode == 0, run.stderr
        rows = list(csv.DictReader((out / "summary.csv").open()))
        tables[name] = [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]
    assert len(tables["serial"]) == 4 and tables["dask"] == tables["serial"]


def test_ringsim_sweep_on_dask_and_local_pool_equals_serial(dask_address, tmp_path, capsys):
    from proofs_check.cli.ringsim import main as ringsim

    common = ["--dims", "2,2,2", "--warmup", "2", "--measure", "6", "--drain", "2", "--loads", "0.8",
              "--seeds", "2", "--workloads", "B", "--schedulers", "ringstitch,full-rack", "--no-plots"]
    got = {}
    for name, extra in {"serial": [], "local2": ["--workers", "2"],
                        "dask": ["--backend", "dask", "--address", dask_address]}.items():
        assert ringsim(common + extra + ["--out", str(tmp_path / name)]) == 0
        got[name] = (tmp_path / name / "results.csv").read_text()
    capsys.readouterr()
    assert got["dask"] == got["serial"] == got["local2"] and got["serial"].count("\n") > 1


class _TwoShardsHere(Engine):
    """Two shards in this process, so that what they send each other can be counted."""

    def __init__(self) -> None:
        super().__init__("local", 2)

    def pool(self, factory, *args):
        return InProcessPool(factory, 2, args)


def _sent_keys(monkeypatch, limit: int) -> tuple[list, tuple]:
    """The keys the shards sent each other (every batch) on one size, and the run's figures."""
    sent: list = []

    class Counting:
        HIGHEST_PROTOCOL = pickle.HIGHEST_PROTOCOL
        loads = staticmethod(pickle.loads)

        @staticmethod
        def dumps(entries, protocol):
            sent.extend(e[0] for e in entries)
            return pickle.dumps(entries, protocol)

    monkeypatch.setattr(search, "pickle", Counting)
    monkeypatch.setattr(search, "SHIPPED_LIMIT", limit)
    b = Bounds(min_nodes=3, max_nodes=3, depth=7, max_jobs=3, max_w=3)
    return sent, _figures(_explore(("thm1.pool", "thm1.sif"), b, engine=_TwoShardsHere()))


def test_a_shard_sends_a_key_to_its_owner_once_and_never_checkpoints_what_it_sent(monkeypatch):
    """A key sent in one level is in its owner's seen-set from the next on, so it is not sent
    again (with two shards: every key at most once); with the cache cleared at every level the
    same search sends keys again, and both give the serial search's figures."""
    serial = _figures(_explore(("thm1.pool", "thm1.sif"), Bounds(min_nodes=3, max_nodes=3, depth=7, max_jobs=3,
                                                                   max_w=3)))
    once, figures = _sent_keys(monkeypatch, search.SHIPPED_LIMIT)
    again, figures_again = _sent_keys(monkeypatch, -1)
    assert figures == serial and figures_again == serial
    assert len(once) == len(set(once)) and set(once) == set(again) and len(again) > len(once)
    shard = search.Shard(0, 2, search._Spec(_models(FLAT["thm1.pool"], SMALL)[0], ()))
    shard.shipped.add(b"sent")
    assert "shipped" not in shard.checkpoint()
