"""Issue 27, item 4: SIGINT and SIGTERM at several moments of every long-running command stop it
promptly, keep what it did (marked incomplete), exit by the contract (130; verify: its report's
code) with no traceback, and leave no process behind; workers die with a killed parent;
``verify --random`` honours --time-limit and signals."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from proofs_check.core import sampler

PY = [sys.executable, "-m"]
SWEEP = ["--schedulers", "best-fit,fgd,cafgd,mcg", "--eta", "0.5,0.6,0.7,0.8,0.9"]
RING = ["--dims", "3,3,3", "--seeds", "6", "--loads", "0.7,0.9", "--no-plots"]


def children_of(pid: int) -> set[int]:
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            pass
    return out


def gone(pids: set[int], within: float = 5.0) -> bool:
    """Every pid has exited (a zombie of a dead parent counts as gone once reaped by init)."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        alive = set()
        for p in pids:
            try:
                state = Path(f"/proc/{p}/stat").read_text().split(")")[-1].split()[0]
            except OSError:
                continue
            if state != "Z":
                alive.add(p)
        if not alive:
            return True
        time.sleep(0.05)
    return False


def handler_installed(pid: int, sig: int) -> bool:
    """Whether the process catches ``sig`` (``SigCgt`` of /proc/PID/status)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (sig - 1)))
    except OSError:
        pass
    return False


class Child:
    """A program run as a child; ``signal_at(marker)`` sends a signal the first time a stderr
    line contains ``marker``."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(PY + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
        self.err: list[str] = []
        self.fired = threading.Event()
        self.kids: set[int] = set()

    def signal_at(self, marker: str, sig: int, timeout: float = 120) -> tuple[str, str]:
        def pump() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.err.append(line)
                if not self.fired.is_set() and marker in line:
                    self.kids = children_of(self.proc.pid)
                    self.proc.send_signal(sig)
                    self.fired.set()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        assert self.proc.stdout is not None
        out = self.proc.stdout.read()
        self.proc.wait(timeout=timeout)
        reader.join(timeout=10)
        return out, "".join(self.err)


def no_traceback(err: str) -> None:
    assert "Traceback" not in err and "Error" not in err, err[-3000:]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("workers", ["1", "2"])
def test_simulate_stops_writes_the_runs_done_marked_incomplete(sig, workers, tmp_path):
    out_dir = tmp_path / "out"
    child = Child(["proofs_check.cli.simulate", *SWEEP, "--workers", workers, "--out", str(out_dir)], tmp_path)
    t0 = time.monotonic()
    out, err = child.signal_at("] 1/20", sig)
    assert child.fired.is_set() and child.proc.returncode == 130, err[-2000:]
    assert time.monotonic() - t0 < 60
    no_traceback(err)
    assert f"simulate: interrupted ({signal.Signals(sig).name}); " in err
    meta = json.loads((out_dir / "summary.json").read_text())
    assert meta["complete"] is False and meta["interrupted"] == signal.Signals(sig).name
    assert 1 <= meta["runs_completed"] == len(meta["runs"]) < meta["runs_planned"] == 20
    assert gone(child.kids)


@pytest.mark.parametrize("sig, workers", [(signal.SIGINT, "1"), (signal.SIGTERM, "2")])
def test_ringsim_stops_writes_the_cells_done(sig, workers, tmp_path):
    out_dir = tmp_path / "out"
    child = Child(["proofs_check.cli.ringsim", *RING, "--workers", workers, "--out", str(out_dir)], tmp_path)
    out, err = child.signal_at("[1/48]", sig)
    assert child.proc.returncode == 130, err[-2000:]
    no_traceback(err)
    status = json.loads((out_dir / "status.json").read_text())
    assert status["complete"] is False and 1 <= status["cells_completed"] < 48
    assert (out_dir / "results.csv").read_text().startswith("scheduler,")
    assert gone(child.kids)


def test_a_killed_parent_leaves_no_worker(tmp_path):
    child = Child(["proofs_check.cli.simulate", *SWEEP, "--workers", "2"], tmp_path)
    child.signal_at("] 1/20", signal.SIGKILL)
    assert child.proc.returncode == -signal.SIGKILL
    assert child.kids and gone(child.kids), child.kids


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_before_the_run_began_is_one_line_and_130(sig, tmp_path):
    proc = subprocess.Popen(PY + ["proofs_check.cli.verify", "--claim", "prop1.abs", "--random", "100000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    end = time.monotonic() + 30
    while not handler_installed(proc.pid, signal.SIGTERM) and time.monotonic() < end:
        time.sleep(0.002)  # the program's first act installs its handlers (before its heavy imports)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    no_traceback(err)
    if proc.returncode == 130:
        assert err.strip().splitlines() == [f"verify: interrupted ({signal.Signals(sig).name}) before the run began; "
                                            "nothing written"]
    else:  # the run had begun: the report of what it checked, the unfinished claims inconclusive
        assert proc.returncode == 3 and "verify: interrupted" in err


@pytest.mark.parametrize("marker", ["sampling 100000 sequences", "] done:"])
def test_verify_random_stops_on_sigint_with_its_report(marker, tmp_path):
    report = tmp_path / "r.json"
    child = Child(["proofs_check.cli.verify", "--claim", "prop1.abs", "--max-nodes", "1", "--random", "100000",
                   "--json", str(report)], tmp_path)
    t0 = time.monotonic()
    out, err = child.signal_at(marker, signal.SIGINT)
    assert child.proc.returncode == 3 and time.monotonic() - t0 < 60, err[-2000:]
    no_traceback(err)
    doc = json.loads(report.read_text())
    assert doc["interrupted"] is True and doc["results"][0]["verdict"] == "inconclusive"


def test_verify_random_honours_the_time_limit(tmp_path):
    t0 = time.monotonic()
    done = subprocess.run(PY + ["proofs_check.cli.verify", "--claim", "prop1.abs", "--max-nodes", "1", "--random",
                                "100000", "--time-limit", "2", "--quiet"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)
    assert time.monotonic() - t0 < 45
    assert done.returncode == 3 and "sampling stopped: time limit" in done.stdout, done.stdout[-2000:]


def test_sample_stops_at_its_deadline():
    import hypothesis  # noqa: F401  (the sampler imports it lazily; under pytest that import,
    # assertion-rewritten, took the whole 0.5 s when this test ran first in its process)
    from proofs_check.gpu.flat_claims import FLAT, sample_flat

    t0 = time.perf_counter()
    rec, runs = sample_flat(FLAT["prop1.abs"], 100000, 0, 4, deadline=time.perf_counter() + 0.5)
    assert rec is None and 0 < runs < 100000 and time.perf_counter() - t0 < 10
    assert sampler.last_stop["reason"] == sampler.TIME_LIMIT


class SlowStep:
    """A one-counter model whose second step takes 20 s (a stand-in for a large cluster's
    canonical form); ``finished`` records whether that step ran to its end."""

    size = 1
    finished: list[bool] = []

    def init_states(self):
        return [0]

    def actions(self, s):
        return ["inc"]

    def step(self, s, a):
        from proofs_check.core.model import Outcome, Step

        if s == 1:
            end = time.monotonic() + 20
            while time.monotonic() < end:
                time.sleep(0.01)
            SlowStep.finished.append(True)
        return Step(s, a, Outcome.APPLIED, s + 1)

    def representative(self, s):
        return s

    def within(self, st):
        return True


def test_the_deadline_abandons_a_sequence_inside_a_long_step():
    """--time-limit holds inside one step, not only between sequences: the slow step is cut."""
    from proofs_check.core.model import Expect, Property

    SlowStep.finished.clear()
    never = Property("p", Expect.ALWAYS, lambda st: None)
    found, runs = sampler.sample(lambda n: SlowStep(), [1], never, 10, 0, deadline=time.perf_counter() + 0.3)
    assert found is None and sampler.last_stop["reason"] == sampler.TIME_LIMIT and SlowStep.finished == []
    assert signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL  # the handler is removed again


def test_a_signal_between_sequences_only_sets_the_flag():
    """A signal outside a sequence (in Hypothesis's own code, possibly before it has made its runner)
    must not raise there: Hypothesis would turn it into its internal AssertionError (verify exit 70,
    a fresh-clone CI run). It is raised at the next sequence instead, and inside one at once."""
    from proofs_check.core import interrupt

    with interrupt.handling():
        with sampler._deadline(time.perf_counter() + 60) as abandonable:
            with abandonable():
                with pytest.raises(interrupt.Interrupted):
                    os.kill(os.getpid(), signal.SIGINT)
                    time.sleep(1)
    with interrupt.handling():
        with sampler._deadline(time.perf_counter() + 60) as abandonable:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs here and must not raise
            assert interrupt.requested() == interrupt.INTERRUPTED
            with pytest.raises(interrupt.Interrupted):
                with abandonable():
                    pass


def test_a_cpsat_solve_is_stopped_from_another_thread():
    from ortools.sat.python import cp_model

    from oracle import stopping

    m = cp_model.CpModel()
    x = [m.new_int_var(0, 100, f"x{i}") for i in range(60)]
    m.add(sum((i * 7 % 13 + 1) * v for i, v in enumerate(x)) <= 100003)
    for a, b in zip(x, x[1:]):
        m.add(a != b)
    m.maximize(sum((i * i % 17) * v for i, v in enumerate(x)))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 60.0
    solver.parameters.num_workers = 1
    stopping.watch()
    try:
        threading.Timer(0.3, stopping.stop_all).start()
        t0 = time.perf_counter()
        status = stopping.solve(solver, m)
        assert time.perf_counter() - t0 < 10 and status != cp_model.OPTIMAL
        later = cp_model.CpSolver()
        t0 = time.perf_counter()
        stopping.solve(later, m)  # once stopped, a later solve returns at once
        assert time.perf_counter() - t0 < 2
    finally:
        stopping.reset()


def market_split(m: int = 4, n: int = 34, seed: int = 1):
    """A market-split integer program (Cornuéjols–Dawande): HiGHS needs far longer than its time
    limit below to prove it (measured: still unproven at 30 s)."""
    import random

    import pulp

    from oracle import highs

    rnd = random.Random(seed)
    prob = pulp.LpProblem("market_split", pulp.LpMinimize)
    xs = [highs.integer_variable(prob, f"x{j}", 1) for j in range(n)]
    slack = [highs.integer_variable(prob, f"s{i}", 10**6) for i in range(2 * m)]
    prob += pulp.lpSum(slack)
    for i in range(m):
        a = [rnd.randrange(100) for _ in range(n)]
        prob += pulp.lpSum(a[j] * xs[j] for j in range(n)) + slack[2 * i] - slack[2 * i + 1] == sum(a) // 2
    return prob


def test_a_highs_solve_is_stopped_by_a_signal():
    """SIGINT under ``interruptible`` stops a HiGHS solve in progress (its model status is HiGHS's
    own "interrupted", not its time limit), and a solve after the stop does not search at all."""
    from oracle import highs
    from oracle.result import Status
    from proofs_check.cli.interruptible import interruptible

    prob = market_split()
    with interruptible(armed=False) as stop:
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        result = highs.solve(prob, 120, time.perf_counter())
        assert prob.solverModel.getModelStatus().name == "kInterrupt"
        assert result.status is not Status.OPTIMAL
        later = market_split()
        highs.solve(later, 120, time.perf_counter())
        assert later.solverModel.getModelStatus().name == "kTimeLimit"
    assert stop.signal == "SIGINT"


@pytest.mark.parametrize("solver", ["cp-sat", "highs"])
def test_admit_stops_its_solve_on_a_signal_and_exits_130(solver, monkeypatch, capsys):
    """A SIGINT arriving as the repack solve starts: the solve is stopped (unproven), the answer so
    far is printed with "interrupted" in the JSON, one line on stderr, exit 130."""
    from proofs_check.cli import admit

    real = admit.min_migration_repack

    def signalled(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the signal watcher thread calls oracle.stopping.stop_all
        return real(*args, **kwargs)

    monkeypatch.setattr(admit, "min_migration_repack", signalled)
    code = admit.main([str(Path(__file__).parent.parent / "examples/data/snapshot.json"), "--repack", "--solver", solver, "--json"])
    out, err = capsys.readouterr()
    assert code == 130 and json.loads(out)["interrupted"] == "SIGINT"
    assert err.startswith("admit: interrupted (SIGINT); the solver was stopped") and err.count("\n") == 1


def test_a_stop_of_the_solvers_does_not_outlive_the_run():
    """verify and the other programs watch their solvers for the run only: after it (a library
    user or a test calling several runs in one process) solves are not stopped any more."""
    from oracle import stopping
    from proofs_check.cli.interruptible import solvers_watched

    with solvers_watched():
        stopping.stop_all()  # what a signal during the run does
        assert stopping.stopped()
    assert not stopping.stopped()


def test_a_signal_after_the_report_does_not_change_the_exit_code():
    """A second Ctrl-C landing after the report was written (while the interpreter shuts down,
    where Python restores the default action) used to end the program with 130 after a report
    that said 1: once the body returned, the program ignores SIGINT/SIGTERM."""
    code = ("import os, signal, sys; sys.argv[0] = 'verify'; import proofs_check.cli; "
            "from proofs_check.cli.common import run; rc = run('verify', lambda: 1); "
            "os.kill(os.getpid(), signal.SIGINT); os.kill(os.getpid(), signal.SIGTERM); sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stderr == ""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl")
def test_worker_init_arms_the_parent_death_signal():
    code = ("import ctypes,os,sys; from proofs_check.core.children import worker_init; worker_init();"
            "v=ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(v), 0, 0, 0); print(v.value)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=os.path.dirname(os.path.dirname(__file__)))
    assert out.stdout.strip() == str(int(signal.SIGKILL)), out.stderr


def test_a_killed_verify_leaves_no_shard(tmp_path):
    child = Child(["proofs_check.cli.verify", "--claim", "prop1.abs", "--max-nodes", "3", "--workers", "2"], tmp_path)
    child.signal_at("level 2:", signal.SIGKILL)
    assert child.proc.returncode == -signal.SIGKILL
    assert child.kids and gone(child.kids), child.kids


def test_simulate_sifopt_stops_inside_its_cp_sat_solves(tmp_path):
    """SIFOpt spends its time in CP-SAT (C code): the solve is stopped from the signal watcher."""
    proc = subprocess.Popen(PY + ["proofs_check.cli.simulate", "--schedulers", "sifopt", "--eta", "0.5,0.9"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    time.sleep(3)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and time.monotonic() - t0 < 5, err[-2000:]
    no_traceback(err)
    assert "simulate: interrupted (SIGTERM)" in err


def _big_result(i: int) -> bytes:
    return b"x" * 200_000_000  # written over many pipe-fulls: a terminate lands mid-write


def test_ending_a_pool_whose_workers_die_mid_result_does_not_hang(tmp_path):
    """A worker terminated while writing its result leaves half a message in the result pipe;
    end_pool must still return (it hung for ever in shutdown before)."""
    code = ("import time; from proofs_check.core import children; from tests.test_signals import _big_result\n"
            "ex = children.pool(2); fs = [ex.submit(_big_result, i) for i in range(4)]; time.sleep(1.5)\n"
            "children.end_pool(ex); print('ended')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parent.parent)
    assert proc.stdout.strip() == "ended", proc.stderr[-2000:]
