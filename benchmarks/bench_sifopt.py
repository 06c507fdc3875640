"""SIFOpt per event, today's code against the reference code path, side by side in one run.

Usage: python benchmarks/bench_sifopt.py [--parts 1,2] [--nodes 62] [--jobs 0] [--reference-commit HASH]
                                         [--scale 128,256,512] [--scale-window 16000:36000]

1. **Reference vs now, same events, same states.** The reference is the SIFOpt of
   ``REFERENCE_COMMIT`` (before issue 15: CP-SAT min-migration ILP at every repack, Φ★ by the
   pattern ILP / DP, exact up to 64 nodes), extracted with ``git archive`` into a temporary
   folder (read-only for the checkout) and run in a child process with that folder first on
   ``PYTHONPATH``. The child replays the built-in trace (``--jobs`` first jobs; 0 = all) in the
   simulator at N = ``--nodes`` (62 = N(0.9)) and records every ``arrive`` / ``depart`` call of
   the policy: the placement before it, its outcome, migrations and GPUs moved, and its CPU and
   wall time. This process then puts today's SIFOpt into each recorded state (``with_state``,
   not timed), makes the same call, and times it the same way. Both are exact lexicographic
   minimisers (migrations, then GPUs moved) from the same state, so outcome, migrations and GPUs
   moved must be identical event by event; every difference is listed.
   CPU time (``time.process_time``) is the primary measure: the machine may be shared.
2. **Exact at every event up to N = 512** (``--scale``): today's SIFOpt in the simulator on N
   nodes, replaying the jobs submitted in ``--scale-window`` (default 16,000–36,000 s, the rising
   half of the first day's peak, so the cluster fills) of a generated trace of the built-in's
   shape with the arrival rate scaled by N / 62 (so that N(0.9) ≈ N); printed: the peak load, the
   policy's ``stats`` (exact / trivial / heuristic / fallbacks / phi_unknown — exactness means
   heuristic = fallbacks = phi_unknown = 0), the slowest single event and the CPU / wall time.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# The last commit with the pre-issue-15 SIFOpt (heuristics/gpu/sifopt.py, oracle/gpu/min_migration.py).
REFERENCE_COMMIT = "7800f7b66073dcd831a246a03f2e75cf3777bc04"


class Recorder:
    """A policy proxy that logs every arrive / depart: state before, outcome, cost, times."""

    def __init__(self, policy: Any, log: list[dict[str, Any]]) -> None:
        self._policy = policy
        self._log = log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._policy, name)

    def _call(self, kind: str, arg: Any, job: dict[str, int]) -> Any:
        before = [[[i.job, i.g] for i in node] for node in self._policy.placement().nodes]
        c0, w0 = time.process_time(), time.perf_counter()
        res = getattr(self._policy, kind)(arg)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        self._log.append({"kind": kind, **job, "before": before, "ok": res.ok,
                          "migrations": len(res.migrations), "gpus": sum(m.g for m in res.migrations),
                          "cpu": cpu, "wall": wall})
        return res

    def arrive(self, job: Any) -> Any:
        return self._call("arrive", job, {"job": job.id, "g": job.g, "w": job.w})

    def depart(self, job_id: int) -> Any:
        return self._call("depart", job_id, {"job": job_id})


def record(n_nodes: int, n_jobs: int, out: str) -> None:
    """(Child process, reference code on sys.path.) Simulate and log every policy call."""
    import heuristics
    import heuristics.gpu.simulator as sim
    from heuristics.gpu.trace_gen import load_builtin

    log: list[dict[str, Any]] = []
    real = sim.make_policy
    sim.make_policy = lambda *a, **k: Recorder(real(*a, **k), log)  # type: ignore[assignment]
    jobs = load_builtin().jobs
    t0 = time.perf_counter()
    result = sim.simulate(jobs[:n_jobs] if n_jobs else jobs, sim.SimConfig("sifopt", n_nodes), phi_star=None)
    Path(out).write_text(json.dumps({"code": heuristics.__file__, "status": result.status,
                                     "wall": time.perf_counter() - t0, "calls": log}))


def reference_log(commit: str, n_nodes: int, n_jobs: int) -> dict[str, Any]:
    """Extract ``commit``'s packages into a temporary folder and record the reference there."""
    with tempfile.TemporaryDirectory(prefix="sifopt-ref-") as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "oracle", "heuristics"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        out = os.path.join(tmp, "log.json")
        env = {**os.environ, "PYTHONPATH": tmp}
        subprocess.run([sys.executable, __file__, "--record", out, "--nodes", str(n_nodes), "--jobs", str(n_jobs)],
                       check=True, cwd=tmp, env=env)
        data: dict[str, Any] = json.loads(Path(out).read_text())
        if not data["code"].startswith(tmp):
            raise SystemExit(f"the reference child imported {data['code']}, not the reference tree")
        return data


def replay_now(calls: list[dict[str, Any]], n_nodes: int) -> list[dict[str, Any]]:
    """Today's SIFOpt on every recorded state: the same call, timed; its outcome and cost."""
    from heuristics.gpu.cluster import Instance, Job, Placement
    from heuristics.gpu.sifopt import SIFOpt

    base = SIFOpt(n_nodes)
    out = []
    for c in calls:
        state = Placement(8, tuple(tuple(sorted(Instance(j, g) for j, g in node)) for node in c["before"]))
        policy = base.with_state(state)
        arg = Job(c["job"], c["g"], c["w"]) if c["kind"] == "arrive" else c["job"]
        c0, w0 = time.process_time(), time.perf_counter()
        res = getattr(policy, c["kind"])(arg)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        out.append({"ok": res.ok, "migrations": len(res.migrations), "gpus": sum(m.g for m in res.migrations),
                    "cpu": cpu, "wall": wall, "stats": policy.stats})
    return out


def compare(ref: dict[str, Any], now: list[dict[str, Any]]) -> None:
    calls = ref["calls"]
    print(f"reference simulation: {ref['status']}, {len(calls)} policy calls, {ref['wall']:.1f} s wall "
          f"(incl. recording)")
    print(f"{'calls':<10}{'n':>6}{'ref cpu s':>11}{'now cpu s':>11}{'ratio':>8}{'ref wall s':>12}{'now wall s':>12}"
          f"{'ratio':>8}{'median ratio':>14}")
    for kind in ("arrive", "depart", "all"):
        idx = [i for i, c in enumerate(calls) if kind in ("all", c["kind"])]
        rc, nc = sum(calls[i]["cpu"] for i in idx), sum(now[i]["cpu"] for i in idx)
        rw, nw = sum(calls[i]["wall"] for i in idx), sum(now[i]["wall"] for i in idx)
        med = statistics.median(calls[i]["cpu"] / max(now[i]["cpu"], 1e-6) for i in idx)
        print(f"{kind:<10}{len(idx):>6}{rc:>11.2f}{nc:>11.2f}{rc / nc:>8.1f}{rw:>12.2f}{nw:>12.2f}{rw / nw:>8.1f}"
              f"{med:>14.1f}")
    diff = [(i, c, n) for i, (c, n) in enumerate(zip(calls, now))
            if (c["ok"], c["migrations"], c["gpus"]) != (n["ok"], n["migrations"], n["gpus"])]
    print(f"identical (outcome, migrations, GPUs moved): {len(calls) - len(diff)} / {len(calls)} calls; "
          f"migrations ref {sum(c['migrations'] for c in calls)}, now {sum(n['migrations'] for n in now)}")
    for i, c, n in diff[:20]:
        print(f"  call {i} {c['kind']} job {c['job']}: ref {(c['ok'], c['migrations'], c['gpus'])} "
              f"now {(n['ok'], n['migrations'], n['gpus'])}")
    slow = max(range(len(now)), key=lambda i: now[i]["cpu"])
    print(f"slowest call now: {now[slow]['cpu']:.3f} s cpu (call {slow}, {calls[slow]['kind']}); "
          f"reference slowest {max(c['cpu'] for c in calls):.3f} s")


def scaled_run(n_nodes: int, t0: float, t1: float, time_limit: float) -> None:
    """Today's SIFOpt on N = ``n_nodes`` nodes, replaying the jobs submitted in [t0, t1) s of a
    generated trace of the built-in's shape whose arrival rate is scaled by N / 62 (the
    built-in trace has N(0.9) = 62). ``time_limit`` is SIFOpt's (wall-clock) limit per solve."""
    from heuristics.gpu.simulator import SimConfig, simulate
    from heuristics.gpu.trace_gen import BUILTIN_DAYS, BUILTIN_JOBS, generate_jobs

    jobs = [j for j in generate_jobs(round(BUILTIN_JOBS * n_nodes / 62), BUILTIN_DAYS) if t0 <= j.submit < t1]
    seen: dict[str, Any] = {}
    slowest = [0.0, time.process_time()]

    def observe(now: float, policy: Any, running: Any) -> None:
        t = time.process_time()
        slowest[0] = max(slowest[0], t - slowest[1])
        slowest[1] = t
        seen["policy"] = policy

    c0, w0 = time.process_time(), time.perf_counter()
    slowest[1] = c0
    config = SimConfig("sifopt", n_nodes, policy_opts=(("time_limit", time_limit),))
    result = simulate(jobs, config, phi_star=None, observer=observe)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    s = seen["policy"].stats
    exact = s.heuristic == s.fallbacks == s.phi_unknown == 0
    peak = max(result.series.used_gpus) / (8 * n_nodes)
    print(f"N = {n_nodes:>4}, time limit {time_limit:g} s ({len(jobs)} jobs, {result.events} events, {result.status}, peak load {peak:.2f}): "
          f"trivial {s.trivial}, exact {s.exact}, heuristic {s.heuristic}, fallbacks {s.fallbacks}, "
          f"phi_unknown {s.phi_unknown} -> {'exact at every event' if exact else 'NOT exact at every event'}; "
          f"slowest event {slowest[0]:.2f} s cpu; {cpu:.1f} s cpu, {wall:.1f} s wall", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=62)
    ap.add_argument("--jobs", type=int, default=0, help="first jobs of the built-in trace (0 = all)")
    ap.add_argument("--reference-commit", default=REFERENCE_COMMIT)
    ap.add_argument("--scale", default="128,256,512", help="cluster sizes of part 2 ('' = skip)")
    ap.add_argument("--scale-window", default="16000:36000",
                    help="submit window T0:T1 (s) of part 2: the rising half of the first day's peak")
    ap.add_argument("--scale-time-limit", type=float, default=10.0,
                    help="SIFOpt's time limit per solve in part 2 (wall clock; default: SIFOpt's 10 s)")
    ap.add_argument("--parts", default="1,2", help="which parts to run (comma-separated)")
    ap.add_argument("--record", default=None, help=argparse.SUPPRESS)  # the reference child
    a = ap.parse_args()
    if a.record:
        record(a.nodes, a.jobs, a.record)
        return
    parts = a.parts.split(",")
    if "1" in parts:
        print(f"== 1. SIFOpt per call: reference {a.reference_commit[:12]} vs today, built-in trace, N = {a.nodes} ==")
        ref = reference_log(a.reference_commit, a.nodes, a.jobs)
        compare(ref, replay_now(ref["calls"], a.nodes))
    if "2" in parts and a.scale:
        t0, _, t1 = a.scale_window.partition(":")
        print(f"\n== 2. today's SIFOpt on scaled generated traces, jobs submitted in [{t0}, {t1}) s ==")
        for n in (int(x) for x in a.scale.split(",")):
            scaled_run(n, float(t0), float(t1), a.scale_time_limit)


if __name__ == "__main__":
    main()
