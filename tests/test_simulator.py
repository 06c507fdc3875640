"""Event-driven simulator (heuristics.gpu.simulator): conservation for every scheduler, queueing,
migration charging, determinism, input validation."""
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import heuristics.gpu.simulator as sim
from heuristics.gpu.cluster import placement_violations
from heuristics.gpu.policy import EventResult, Migration
from heuristics.gpu.registry import make_policy, policy_names
from heuristics.gpu.simulator import SimConfig, simulate
from heuristics.gpu.trace import TraceJob


def tj(i, submit, duration, g, w):
    return TraceJob(i, float(submit), float(duration), g, w)


@st.composite
def traces(draw):
    n_nodes = draw(st.integers(1, 4))
    jobs = []
    for i in range(draw(st.integers(1, 10))):
        g = draw(st.integers(1, 8))
        w = min(draw(st.integers(1, 3)), n_nodes * (8 // g))
        jobs.append(tj(i, draw(st.integers(0, 40)), draw(st.integers(0, 30)), g, w))
    return n_nodes, jobs


class Watcher:
    """Observer checking the invariants after every event."""

    def __init__(self, jobs):
        self.submit = {j.id: j.submit for j in jobs}
        self.last_t = -math.inf
        self.seen: set[int] = set()
        self.left: set[int] = set()
        self.running: set[int] = set()

    def __call__(self, t, policy, running):
        assert t >= self.last_t, "time went backwards"
        self.last_t = t
        assert placement_violations(policy.placement(), running.values()) == []
        now = set(running)
        assert not (now & self.left), "a finished job came back"
        for jid in now - self.running:
            assert self.submit[jid] <= t, "job started before its submission"
        self.left |= self.running - now
        self.seen |= now
        self.running = now


# round-based policies get short rounds so that the traces below cross several round starts
# (hier-compass needs its domain size; K = 1 keeps every cluster size legal)
ROUND_OPTS = {"fft": (("round_length", 7.0),), "drr": (("round_length", 7.0),),
              "hier-compass": (("panels_per_domain", 1),)}


@pytest.mark.parametrize("policy", policy_names())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=traces(), queue=st.sampled_from(["fifo", "backfill"]))
def test_conservation_every_scheduler(policy, case, queue):
    n_nodes, jobs = case
    w = Watcher(jobs)
    opts = ROUND_OPTS.get(policy, ())
    res = simulate(jobs, SimConfig(policy, n_nodes, queue=queue, migration_cost=3, policy_opts=opts),
                   phi_star=None, observer=w)
    assert list(res.series.t) == sorted(set(res.series.t))
    assert res.status in ("complete", "aborted"), res.note  # never stuck: every job fits alone
    if res.status == "aborted":
        assert res.note  # a policy contract breach is reported, never hidden
        return
    assert w.running == set() and w.seen == {j.id for j in jobs}
    for r in res.jobs:
        assert r.start >= r.submit
        assert r.end == pytest.approx(r.start + r.duration + r.migration_delay)
        assert r.migration_delay == pytest.approx(3 * r.migration_events)
    assert res.series.running[-1] == 0 and res.series.used_gpus[-1] == 0
    assert res.series.migrating[-1] == 0


def test_fifo_blocks_head_backfill_does_not():
    jobs = [tj(0, 0, 10, 8, 1), tj(1, 1, 10, 4, 1), tj(2, 2, 5, 8, 1), tj(3, 2, 3, 1, 2)]
    fifo = {r.id: r for r in simulate(jobs, SimConfig("best-fit", 2), phi_star=None).jobs}
    back = {r.id: r for r in simulate(jobs, SimConfig("best-fit", 2, queue="backfill"), phi_star=None).jobs}
    assert (fifo[2].start, fifo[3].start) == (10, 10)  # job 3 waits behind the blocked 8-GPU head
    assert (back[2].start, back[3].start) == (10, 2)


def test_completion_frees_capacity_before_same_time_arrival():
    jobs = [tj(0, 0, 5, 8, 1), tj(1, 5, 1, 8, 1)]
    res = simulate(jobs, SimConfig("first-fit", 1), phi_star=None)
    assert res.jobs[1].start == 5 and max(res.series.queue_len) == 0


class _Migrator:
    """best-fit that reports moving two instances of every running job at each arrival."""

    def __init__(self, inner):
        self.inner = inner

    def arrive(self, job):
        others = [j for j in self.inner.running().values()]
        res = self.inner.arrive(job)
        if not res.ok:
            return res
        moves = tuple(Migration(j.id, j.g, 0, 1, "test") for j in others for _ in range(2))
        return EventResult.applied(moves)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.parametrize("charging, delay", [("per-event", 8.0), ("per-instance", 16.0)])
def test_migration_charging(monkeypatch, charging, delay):
    monkeypatch.setattr(sim, "make_policy", lambda name, n, cap, **o: _Migrator(make_policy(name, n, cap)))
    jobs = [tj(0, 0, 100, 1, 1), tj(1, 10, 5, 1, 1)]
    res = simulate(jobs, SimConfig("best-fit", 1, charging=charging), phi_star=None)
    j0, j1 = res.jobs
    assert (j0.migrations, j0.migration_events, j0.migration_delay, j0.end) == (2, 1, delay, 100 + delay)
    assert (j1.migrations, j1.end) == (0, 15)
    s = res.series
    assert all(m == (1 if 10 <= t < 10 + delay else 0) for t, m in zip(s.t, s.migrating))
    assert 10 + delay in s.t  # the migration-completion event is recorded


def test_refused_departure_aborts_with_reason(monkeypatch):
    class NoLeave:
        def __init__(self, inner):
            self.inner = inner

        def depart(self, jid):
            return EventResult.refused("no legal move")

        def __getattr__(self, name):
            return getattr(self.inner, name)

    monkeypatch.setattr(sim, "make_policy", lambda name, n, cap, **o: NoLeave(make_policy(name, n, cap)))
    res = simulate([tj(0, 0, 5, 1, 1), tj(1, 1, 5, 1, 1)], SimConfig("best-fit", 1), phi_star=None)
    assert res.status == "aborted" and "no legal move" in res.note
    assert math.isnan(res.jobs[0].end)


def test_stuck_queue_is_reported(monkeypatch):
    class Refuser:
        def __init__(self, inner):
            self.inner = inner

        def arrive(self, job):
            return EventResult.refused("never")

        def __getattr__(self, name):
            return getattr(self.inner, name)

    monkeypatch.setattr(sim, "make_policy", lambda name, n, cap, **o: Refuser(make_policy(name, n, cap)))
    res = simulate([tj(0, 0, 5, 1, 1)], SimConfig("best-fit", 1), phi_star=None)
    assert res.status == "stuck" and "job 0" in res.note and math.isnan(res.jobs[0].start)


def test_deterministic():
    jobs = [tj(i, (i * 7) % 13, 5 + (i * 3) % 11, 1 + i % 8, 1 + i % 2) for i in range(40)]
    cfg = SimConfig("fgd", 3)
    assert simulate(jobs, cfg, phi_star=None) == simulate(jobs, cfg, phi_star=None)


def test_phi_star_attached_per_sample():
    jobs = [tj(0, 0, 10, 4, 1), tj(1, 0, 10, 4, 1)]
    res = simulate(jobs, SimConfig("worst-fit", 2), phi_star=lambda c, n, cap: float(sum(c)))
    assert res.series.phi_star == tuple(float(sum(c)) for c in res.series.counts)
    assert res.series.counts[0] == (0, 0, 0, 2, 0, 0, 0, 0)


@pytest.mark.parametrize("job, msg", [
    (tj(0, 0, 1, 9, 1), "g=9"),
    (tj(0, 0, 1, 8, 3), "needs 3 nodes"),
    (tj(0, 0, -1, 1, 1), "duration"),
])
def test_bad_jobs_rejected(job, msg):
    with pytest.raises(ValueError, match=msg):
        simulate([job], SimConfig("best-fit", 2), phi_star=None)


def test_bad_names_rejected():
    jobs = [tj(0, 0, 1, 1, 1)]
    with pytest.raises(ValueError, match="unknown policy"):
        simulate(jobs, SimConfig("nope", 1), phi_star=None)
    with pytest.raises(ValueError, match="unknown queue"):
        simulate(jobs, SimConfig("best-fit", 1, queue="lifo"), phi_star=None)
    with pytest.raises(ValueError, match="unknown migration charging"):
        simulate(jobs, SimConfig("best-fit", 1, charging="free"), phi_star=None)
    with pytest.raises(ValueError, match="duplicate"):
        simulate(jobs * 2, SimConfig("best-fit", 1), phi_star=None)


@settings(max_examples=150, deadline=None)
@given(counts=st.lists(st.integers(0, 4), min_size=8, max_size=8), n_nodes=st.integers(1, 6))
def test_bfd_certificate_agrees_with_exact_phi_star(counts, n_nodes):
    from oracle.gpu.phi_star import phi_star_bruteforce

    quick = sim.bfd_certified_phi_star(counts, n_nodes, 8)
    if quick is not None and sum(counts) <= 14:
        cert = phi_star_bruteforce(tuple(counts), n_nodes, 8)
        assert cert.is_optimal and cert.objective == quick


def test_bfd_certificate_cases():
    assert sim.bfd_certified_phi_star((8, 0, 0, 0, 0, 0, 0, 0), 1, 8) == 0
    assert sim.bfd_certified_phi_star((0, 0, 0, 2, 0, 0, 0, 0), 2, 8) == 0
    assert sim.bfd_certified_phi_star((1, 0, 0, 0, 0, 0, 0, 0), 1, 8) == 1
    # two 5s need two partial nodes while T = 10 only proves one: no certificate
    assert sim.bfd_certified_phi_star((0, 0, 0, 0, 2, 0, 0, 0), 2, 8) is None


# --------------------------------------------------------------------------- the simulate command
def _trace_file(tmp_path, rows):
    path = tmp_path / "t.csv"
    path.write_text("job_id,submit,duration,g,w\n" + "".join(f"{r}\n" for r in rows))
    return str(path)


def test_cli_end_to_end(tmp_path, capsys):
    import csv

    from proofs_check.cli.simulate import main

    trace = _trace_file(tmp_path, ["0,0,10,4,1", "1,0,10,4,1", "2,1,5,8,1"])
    out = tmp_path / "out"
    rc = main([trace, "--schedulers", "worst-fit,best-fit", "--nodes", "2", "--migration-cost", "1,8",
               "--out", str(out), "--workers", "1"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "3 jobs kept, 0 dropped" in text and "worst-fit" in text
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert len(rows) == 4 and {r["migration_cost"] for r in rows} == {"1.0", "8.0"}
    wf = next(r for r in rows if r["scheduler"] == "worst-fit")
    assert float(wf["afr"]) == pytest.approx(1.0) and float(wf["agu"]) == pytest.approx(0.5)
    jobs = list(csv.DictReader((out / "jobs" / f"{wf['run']}.csv").open()))
    assert [float(j["jct"]) for j in jobs] == [10, 10, 14]
    series = list(csv.DictReader((out / "series" / f"{wf['run']}.csv").open()))
    assert [float(s["n_sif"]) for s in series] == [2, 2, 0, 0]


@pytest.mark.parametrize("args, msg", [
    (["--schedulers", "nope"], "unknown scheduler 'nope'"),
    (["--eta", "1.5"], "--eta"),
    (["/no/such/file.csv"], "no such file"),
    (["--format", "xml"], "unknown format"),
    (["--plot"], "--plot needs --out"),
    (["--policy-opt", "fft:round_length"], "SCHED:KEY=VALUE"),
    (["--schedulers", "hier-compass"], "panels_per_domain"),
])
def test_cli_bad_input_exit_2(args, msg, capsys):
    from proofs_check.cli.simulate import main

    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert msg in err and "\n" not in err


def test_cli_job_larger_than_the_fixed_cluster_is_exit_2_before_any_run(tmp_path, capsys):
    from proofs_check.cli.simulate import main

    trace = _trace_file(tmp_path, ["0,0,10,4,1", "1,0,10,8,2"])
    assert main([trace, "--schedulers", "best-fit", "--nodes", "1"]) == 2
    out, err = capsys.readouterr()
    assert err == "simulate: error: job 1: 2x8 GPUs needs 2 nodes, cluster has 1\n" and "best-fit" not in out


def test_cli_malformed_trace_names_line(tmp_path, capsys):
    from proofs_check.cli.simulate import main

    trace = _trace_file(tmp_path, ["0,0,10,4,1", "1,0,10,nine,1"])
    assert main([trace, "--schedulers", "best-fit"]) == 2
    err = capsys.readouterr().err
    assert "t.csv:3" in err and "'g'" in err


def test_moves_of_the_departing_job_are_not_charged(monkeypatch):
    class SelfMover:
        def __init__(self, inner):
            self.inner = inner

        def depart(self, jid):
            self.inner.depart(jid)
            return EventResult.applied((Migration(jid, 1, 0, 0, "filler-replace"),))

        def __getattr__(self, name):
            return getattr(self.inner, name)

    monkeypatch.setattr(sim, "make_policy", lambda name, n, cap, **o: SelfMover(make_policy(name, n, cap)))
    res = simulate([tj(0, 0, 5, 1, 2), tj(1, 1, 9, 1, 1)], SimConfig("best-fit", 1), phi_star=None)
    assert res.status == "complete" and res.departing_moves == 2
    assert all(r.migrations == 0 and r.migration_delay == 0 for r in res.jobs)


def test_round_start_migrations_are_charged_and_retry_the_queue(monkeypatch):
    class Rounds:
        """best-fit whose tick at t >= 5 reports one migration of every running job, once."""

        def __init__(self, inner):
            self.inner, self.fired, self.ticks = inner, False, []

        def tick(self, now):
            self.ticks.append(now)
            if now >= 5 and not self.fired:
                self.fired = True
                return EventResult.applied(tuple(Migration(j, 1, 0, 0, "round") for j in self.inner.running()))
            return EventResult.applied()

        def __getattr__(self, name):
            return getattr(self.inner, name)

    made = []
    monkeypatch.setattr(sim, "make_policy", lambda name, n, cap, **o: made.append(Rounds(make_policy(name, n, cap))) or made[-1])
    res = simulate([tj(0, 0, 20, 1, 1), tj(1, 6, 2, 1, 1)], SimConfig("best-fit", 1, migration_cost=4), phi_star=None)
    assert made[0].ticks == sorted(made[0].ticks) and made[0].ticks[0] == 0
    j0, j1 = res.jobs
    assert (j0.migrations, j0.migration_delay, j0.end) == (1, 4.0, 24.0)
    assert (j1.migrations, j1.end) == (0, 8.0)


def test_node_counters_agree():
    from heuristics.gpu.cluster import empty_nodes, partial_nodes

    class PlacementOnly:
        def __init__(self, inner):
            self.inner = inner

        def placement(self):
            return self.inner.placement()

    class Counters(PlacementOnly):
        def partial_count(self):
            return partial_nodes(self.inner.placement())

        def empty_count(self):
            return empty_nodes(self.inner.placement())

    p = make_policy("worst-fit", 3)
    for i, (g, w) in enumerate([(4, 1), (1, 3), (8, 1), (2, 2)]):
        p.arrive(sim.Job(i, g, w))
    expected = (partial_nodes(p.placement()), empty_nodes(p.placement()))
    assert expected != (0, 0)
    for view in (p, PlacementOnly(p), Counters(p)):
        assert sim.node_counter(view)() == expected
