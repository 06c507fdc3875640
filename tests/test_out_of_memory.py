"""Out of memory (docs/cli.md): in a search level (serial or in a forked shard) it stops that
exploration (inconclusive, "out of memory") with the report of what was explored; outside a level
``verify`` reports the claim inconclusive and goes on, ``simulate`` writes the runs done marked
incomplete, and any other command prints one line; exit 3, never a MemoryError traceback."""
import json
import re

import pytest

from test_core import BAD, BIG, Counters, models, never, verdict

from proofs_check import catalogue
from proofs_check.cli import simulate, verify
from proofs_check.cli.common import run
from proofs_check.core import sampler
from proofs_check.core.engine import Engine

from proofs_check.core.model import Expect, Property
from proofs_check.core.search import OUT_OF_MEMORY, explore
from proofs_check.core.verdict import Verdict


class Hungry(Counters):
    """Counters whose states with a + b >= 3 cannot be built (MemoryError)."""

    def step(self, s, a):
        st = super().step(s, a)
        if sum(st.state) >= 3:
            raise MemoryError()
        return st


def test_a_level_out_of_memory_is_an_inconclusive_stop_with_what_was_explored():
    exp = explore([Hungry(3)], [Property("p", Expect.ALWAYS, never)], BIG)
    (s,) = exp.sizes
    assert not s.complete and s.stop_reason == OUT_OF_MEMORY and s.distinct >= 3
    v, msg = verdict(exp, Property("p", Expect.ALWAYS, never))
    assert v is Verdict.INCONCLUSIVE and OUT_OF_MEMORY in msg
    full = explore(models(3), [Property("p", Expect.ALWAYS, never), BAD], BIG)
    assert full.sizes[0].complete  # the same model with memory enough finishes


def test_out_of_memory_in_a_forked_shard_stops_the_level_as_a_serial_one_does():
    """``--workers 2``: the shard's MemoryError reaches the coordinator as a MemoryError (not an
    internal error), so the search stops that level with the report of what was explored."""
    with Engine(workers=2) as engine:
        exp = explore([Hungry(3)], [Property("p", Expect.ALWAYS, never)], BIG, engine=engine)
    (s,) = exp.sizes
    assert not s.complete and s.stop_reason == OUT_OF_MEMORY and s.distinct >= 3


def _no_memory(*args: object, **kwargs: object) -> None:
    raise MemoryError()


def test_out_of_memory_outside_a_search_level_keeps_verify_s_report(monkeypatch, capsys, tmp_path):
    """A scan claim (closed-form) that runs out of memory is inconclusive; the other claims are
    checked and reported, the JSON is written, exit 3."""
    monkeypatch.setattr(catalogue, "check_counts", _no_memory)
    report = tmp_path / "r.json"
    code = verify.main(["--claim", "closed-form", "--claim", "thm1.pool", "--max-nodes", "2", "--depth", "3",
                        "--quiet", "--json", str(report)])
    out = capsys.readouterr().out
    assert code == 3
    results = {r["claim_id"]: r for r in json.loads(report.read_text())["results"]}
    assert results["closed-form"]["verdict"] == "inconclusive" and "out of memory" in results["closed-form"]["message"]
    assert results["thm1.pool"]["verdict"] == "holds" and "summary:" in out


def test_out_of_memory_in_a_command_is_one_line_and_exit_3(capsys):
    assert run("sifopt", lambda: _no_memory() or 0) == 3
    err = capsys.readouterr().err
    assert err.startswith("sifopt: out of memory;") and err.count("\n") == 1 and "Traceback" not in err


REAL_RUN_ONE = simulate.run_one


def first_fit_fails(spec, trace):
    """``simulate.run_one``, except that a first-fit run runs out of memory (module level: a
    worker process receives it pickled by name)."""
    if spec.scheduler == "first-fit":
        raise MemoryError()
    return REAL_RUN_ONE(spec, trace)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_out_of_memory_in_a_simulate_sweep_writes_the_runs_done_marked_incomplete(workers, monkeypatch, capsys, tmp_path):
    """The first-fit run runs out of memory (here, or in a worker process with --workers 2): the
    runs done (best-fit, when it finished first) are in the table and in --out, summary.json says
    incomplete ("out of memory"), exit 3 (was an internal error with --workers)."""
    monkeypatch.setattr(simulate, "run_one", first_fit_fails)  # forked workers inherit it
    code = simulate.main(["--window", "0:3000", "--schedulers", "best-fit,first-fit", "--out", str(tmp_path),
                          "--workers", workers])
    err = capsys.readouterr().err
    done = re.search(r"simulate: out of memory; (\d) of 2 runs completed", err)
    assert code == 3 and done is not None and "Traceback" not in err
    if workers == "1":  # in order: best-fit first; with workers the failure may come back first
        assert done.group(1) == "1"
    if done.group(1) == "1":
        meta = json.loads((tmp_path / "summary.json").read_text())
        assert meta["complete"] is False and meta["interrupted"] == "out of memory"
        assert [r["scheduler"] for r in meta["runs"]] == ["best-fit"]


def test_out_of_memory_in_a_sampled_sequence_stops_the_sampling_as_a_cut():
    """Not a Hypothesis failure to shrink: the sampling stops, "out of memory", and a claim that
    held exhaustively is then inconclusive (catalogue: a cut sampling is never a pass)."""
    found, runs = sampler.sample(Hungry, [3], Property("p", Expect.ALWAYS, never), 50, 0)
    assert found is None and runs < 50 and sampler.last_stop["reason"] == sampler.OUT_OF_MEMORY
