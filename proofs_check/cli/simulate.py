"""``simulate``: replay a GPU job trace under several schedulers and compare them (COMPASS-ABS, arXiv:2609.18519v1, §5–6).

Usage::

    simulate [TRACE] [--format venus|gfs|pai2020|openb|simple] [--schedulers a,b,c]
             [--eta 0.85,0.9] [--migration-cost 8[,1,10]] [--charging per-event|per-instance]
             [--queue fifo|backfill] [--nodes N] [--day D[,D2|D1-D2]] [--window T0:T1]
             [--policy-opt SCHED:KEY=VALUE ...]
             [--seed S] [--out DIR] [--workers K] [--backend local|dask [--address HOST:PORT]] [--plot]

Without ``--schedulers`` every built-in scheduler that can be built without options (or with the
``--policy-opt`` options given) runs, a plugin only when named; the others are named on stderr (e.g. ``hier-compass``
needs ``--policy-opt hier-compass:panels_per_domain=K``). Without TRACE the built-in generated trace (``heuristics.gpu.trace_gen``) is replayed. The sweep is
schedulers × η × migration cost × days (one run each); the cluster of a run has N(η) nodes
(eq. 13, ``heuristics.gpu.sizing.cluster_size``) of the replayed window unless ``--nodes`` fixes N.
``--day D`` replays the jobs submitted on day D (0-based, 86,400 s from the first submit);
``--window T0:T1`` the jobs submitted in [T0, T1) seconds. Jobs keep their full durations.

Printed: the trace's load report (rows read, jobs kept, dropped/altered by reason) and a summary
table (AFR, AJCT, AGU, migrations per job, fragmentation-induced blocking, WCC coverage ρ) on
stdout; a progress bar with ETA on stderr. ``--out DIR`` writes tidy files: ``summary.csv``,
``summary.json`` (runs + load report), ``jobs/<run>.csv`` (per job) and ``series/<run>.csv``
(time series); ``--plot`` then draws the PNGs of ``proofs_check.cli.plots`` into ``DIR/plots``.

Fill-until-full (``--mode fill``; chosen by itself for an openb pod list without times, and said
so): the FGD paper's evaluation on ``--nodes-file PATH`` or ``--nodes N``, with ``--order``,
``--until U`` and ``--seed`` (``proofs_check.cli.simulate_fill``, docs/heterogeneous.md).

A timed replay with ``--nodes-file PATH`` (openb node list) runs on those nodes, mixed capacities
and GPU models included: every built-in scheduler natively (COMPASS per node class), hier-compass on
the 8-GPU partition, a
scheduler that cannot run there skipped with its reason, jobs that can never run left out and
counted in a note (``heuristics.gpu.simulator.on_node_list``, docs/heterogeneous.md).

Exit codes (docs/cli.md): 0 every run completed; 1 some run aborted because its scheduler failed (it
refused a departure or left the queue stuck — shown in the status column); 2 bad usage or input
(one line on stderr); 70 internal error.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import as_completed
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator, Sequence, TextIO

from heuristics.gpu.cluster import G_DEFAULT
from heuristics.gpu.fill import ORDERS
from heuristics.gpu.node_list import load_node_list
from heuristics.gpu.queueing import DISCIPLINES
from heuristics.gpu.registry import builtin_policy_names, make_policy, policy_names
from heuristics.gpu.sim_metrics import RunMetrics, compute_metrics
from heuristics.gpu.placeholders import PARTITION_ONLY
from heuristics.gpu.simulator import CHARGING, SERIES_COLUMNS, SimConfig, SimResult, on_node_list, simulate, validate_jobs
from heuristics.gpu.sizing import cluster_size, day_window, window
from heuristics.gpu.trace import Trace
from heuristics.gpu.trace_gen import PROFILES, load_builtin, paper_trace
from heuristics.gpu.trace_loaders import FORMATS, load_trace, openb_has_times, openb_job_models
from heuristics.limits import Size, within
from proofs_check.cli.common import (EXIT_OK, EXIT_VIOLATED, UsageError, make_parser, output_dir, run, usage_on,
                                     write_output)
from proofs_check.cli.interruptible import interruptible
from proofs_check.cli.limit_option import add_limit_option
from proofs_check.cli.simulate_fill import FILL_SCHEDULERS, fill_main, write_csv
from proofs_check.cli.simulate_outcome import sweep_exit
from proofs_check.cli.simulate_report import Progress, Replayed, mark_incomplete, replayed_meta, replayed_text
from proofs_check.core import children
from proofs_check.core.engine import Engine

PROG = "simulate"
JOB_COLUMNS = ("id", "g", "w", "submit", "duration", "start", "end", "queueing", "jct",
               "migrations", "migration_events", "migration_delay")
TABLE = (("scheduler", "{:<19}"), ("eta", "{:>5}"), ("c", "{:>5}"), ("day", "{:>4}"), ("N", "{:>5}"),
         ("status", "{:<9}"), ("AFR", "{:>8}"), ("AJCT", "{:>10}"), ("AGU", "{:>7}"),
         ("migr/job", "{:>8}"), ("fragblk", "{:>8}"), ("rho", "{:>6}"))


@dataclass(frozen=True)
class RunSpec:
    """One point of the sweep."""

    scheduler: str
    eta: float
    cost: float
    day: int | None  # None = the whole trace (or the --window)
    config: SimConfig

    @property
    def run_id(self) -> str:
        day = "all" if self.day is None else f"d{self.day}"
        return f"{self.scheduler}_eta{self.eta:g}_c{self.cost:g}_{day}"


@dataclass(frozen=True)
class RunOutcome:
    spec: RunSpec
    metrics: RunMetrics
    result: SimResult
    wall: float


def _floats(text: str, what: str) -> list[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{what}: {text!r} is not a comma-separated list of numbers") from None
    if not out:
        raise UsageError(f"{what}: empty list")
    return out


def _days(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        try:
            a, b = int(lo), int(hi or lo)
        except ValueError:
            raise UsageError(f"--day: {part!r} is not a day number or range D1-D2") from None
        if a < 0 or b < a:
            raise UsageError(f"--day: bad range {part!r}")
        out.extend(range(a, b + 1))
    return out


def _value(text: str) -> object:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


PolicyOpts = dict[str, tuple[tuple[str, object], ...]]  # scheduler -> its (key, value) options


def parse_policy_opts(items: Sequence[str], known: Sequence[str]) -> PolicyOpts:
    """``SCHED:KEY=VALUE`` items -> scheduler -> sorted (key, value) pairs (ints/floats parsed)."""
    opts: dict[str, dict[str, object]] = {}
    for item in items:
        sched, _, kv = item.partition(":")
        key, eq, val = kv.partition("=")
        if not (sched and key and eq):
            raise UsageError(f"--policy-opt: {item!r} is not SCHED:KEY=VALUE")
        if sched not in known:
            raise UsageError(f"--policy-opt: unknown scheduler {sched!r}")
        opts.setdefault(sched, {})[key] = _value(val)
    return {s: tuple(sorted(kv.items())) for s, kv in opts.items()}


def build_error(name: str, n_nodes: int, opts: tuple[tuple[str, object], ...]) -> str | None:
    """Why ``name`` cannot be built on ``n_nodes`` nodes with ``opts`` (None when it can)."""
    try:
        make_policy(name, n_nodes, G_DEFAULT, **dict(opts))
    except (TypeError, ValueError) as e:
        return str(e)
    return None


def default_schedulers(policy_opts: PolicyOpts) -> tuple[list[str], list[tuple[str, str]]]:
    """Every built-in scheduler that builds with the options given (a plugin runs only when named); the
    others with the reason."""
    names, skipped = [], []
    for name in builtin_policy_names():
        why = build_error(name, 8, policy_opts.get(name, ()))
        if why is None:
            names.append(name)
        else:
            skipped.append((name, why))
    return names, skipped


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = make_parser(PROG, __doc__.split("\n")[0] if __doc__ else None)
    p.add_argument("trace", nargs="?", help="trace file (default: the built-in generated trace)")
    p.add_argument("--generate", default=None, metavar="PROFILE[:SEED]",
                   help="without TRACE: replay the trace generated to a published profile "
                        f"({', '.join(PROFILES)}: COMPASS-ABS Table 1 / Table 2; heuristics.gpu.trace_gen.paper_trace), "
                        "trace seed SEED (default: the built-in smoke trace)")
    p.add_argument("--format", default="simple",
                   help=f"trace format: {', '.join(FORMATS)} (docs/traces.md) (default %(default)s)")
    p.add_argument("--schedulers", default=None,
                   help="comma-separated policy names or package.module:factory specs (a module in the current "
                        "directory is found; default: every registered one)")
    p.add_argument("--eta", default="0.9",
                   help="cluster-sizing percentile(s) η in (0, 1], comma-separated: N = max(⌈p_η / 8⌉, the largest "
                        "job's nodes), p_η the η-quantile of the GPUs in use over time (eq. 13) (default %(default)s)")
    p.add_argument("--migration-cost", default="8",
                   help="delay of a migrated job, in seconds per migration, comma-separated (default %(default)s)")
    p.add_argument("--charging", default="per-event",
                   help=f"how a migration is charged: one of {', '.join(CHARGING)} (per-event: once per job and "
                        "scheduler event; per-instance: once per moved instance) (default %(default)s)")
    p.add_argument("--queue", default="fifo",
                   help=f"wait-queue discipline: one of {', '.join(DISCIPLINES)} (default %(default)s)")
    p.add_argument("--policy-opt", action="append", default=[], metavar="SCHED:KEY=VALUE",
                   help="option for one scheduler, e.g. hier-compass:panels_per_domain=2 (repeatable; default: none)")
    p.add_argument("--nodes", type=int, default=None, help="fix N, in 8-GPU nodes, instead of sizing by η (default: sized by η)")
    p.add_argument("--day", default=None, help="day(s) to replay, 0-based: D, D1,D2 or D1-D2 (default: all)")
    p.add_argument("--window", default=None, help="submit window T0:T1 in seconds (default: all)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the schedulers that take one and of --mode fill's shuffled order (default %(default)s)")
    p.add_argument("--out", default=None, help="output folder for CSV/JSON results (default: none)")
    p.add_argument("--workers", type=int, default=1, help="parallel processes for the sweep (default %(default)s)")
    p.add_argument("--backend", choices=("local", "dask"), default="local",
                   help="run the sweep here (process pool) or on a Dask cluster (proofs_check.core.engine) "
                        "(default %(default)s)")
    p.add_argument("--address", default=None, metavar="HOST:PORT",
                   help="--backend dask: the running Dask scheduler (default: a local cluster of --workers)")
    p.add_argument("--plot", action="store_true", help="draw PNGs into OUT/plots (needs --out)")
    p.add_argument("--mode", choices=("replay", "fill"), default=None,
                   help="replay a timed trace, or fill-until-full (default: by the file's shape)")
    p.add_argument("--nodes-file", default=None, help="openb node list: the cluster (mixed capacities; default: none)")
    p.add_argument("--order", choices=ORDERS, default="shuffled",
                   help="fill: submission order, shuffled by --seed or as in the file (default %(default)s)")
    p.add_argument("--until", type=float, default=None, help="fill: submit until U x cluster GPUs requested (default: the list once)")
    add_limit_option(p)
    a = p.parse_args(argv)
    if a.format not in FORMATS:
        raise UsageError(f"--format: unknown format {a.format!r} (known: {', '.join(FORMATS)})")
    if a.charging not in CHARGING:
        raise UsageError(f"--charging: unknown {a.charging!r} (known: {', '.join(CHARGING)})")
    if a.queue not in DISCIPLINES:
        raise UsageError(f"--queue: unknown {a.queue!r} (known: {', '.join(DISCIPLINES)})")
    known = policy_names()
    a.policy_opts = parse_policy_opts(a.policy_opt, known)
    a.skipped = []
    if a.nodes is not None and a.nodes_file is not None:
        raise UsageError("--nodes and --nodes-file are exclusive")
    if a.until is not None and not 0 < a.until <= 10:
        raise UsageError(f"--until: {a.until} must be in (0, 10]")
    a.detected = a.mode is None and a.trace is not None and a.format == "openb" and Path(a.trace).is_file() \
        and not openb_has_times(a.trace)
    a.mode = "fill" if a.detected else (a.mode or "replay")
    a.named = a.schedulers is not None
    if a.mode == "fill" and a.schedulers is None:
        a.schedulers = ",".join(s for s in FILL_SCHEDULERS if s in known)
    if a.schedulers is None:
        a.schedulers, a.skipped = default_schedulers(a.policy_opts)
    else:
        a.schedulers = [s for s in a.schedulers.split(",") if s]
        for s in a.schedulers:
            if s not in known and ":" not in s:
                raise UsageError(f"--schedulers: unknown scheduler {s!r} (known: {', '.join(known)}, or "
                                 f"package.module:factory)")
            why = build_error(s, 8, a.policy_opts.get(s, ())) if s not in known else None
            if why is not None:
                raise UsageError(f"--schedulers: {why}")
    a.eta = _floats(a.eta, "--eta")
    if any(not 0 < e <= 1 for e in a.eta):
        raise UsageError(f"--eta: every η must be in (0, 1], got {a.eta}")
    a.migration_cost = _floats(a.migration_cost, "--migration-cost")
    if any(c < 0 or not math.isfinite(c) for c in a.migration_cost):
        raise UsageError("--migration-cost: costs must be finite and >= 0")
    a.day = None if a.day is None else _days(a.day)
    if a.window is not None:
        a.window_text = a.window
        t0, sep, t1 = a.window.partition(":")
        try:
            a.window = (float(t0), float(t1))
        except ValueError:
            raise UsageError(f"--window: {a.window!r} is not T0:T1 in seconds") from None
        if not all(math.isfinite(t) for t in a.window):
            raise UsageError(f"--window: {a.window_text!r}: T0 and T1 must be finite numbers of seconds")
        if not sep or a.window[1] <= a.window[0]:
            raise UsageError(f"--window: {a.window!r} is not a non-empty T0:T1")
    if a.day is not None and a.window is not None:
        raise UsageError("--day and --window are exclusive")
    if a.nodes is not None and a.nodes < 1:
        raise UsageError("--nodes must be >= 1")
    if a.nodes is not None:
        within(Size.NODES, a.nodes, "--nodes", None)
    if a.until is not None and not math.isfinite(a.until):
        raise UsageError("--until: must be a finite number")
    if a.workers < 1:
        raise UsageError("--workers must be >= 1")
    if a.plot and a.out is None:
        raise UsageError("--plot needs --out")
    if a.generate is not None:
        if a.trace is not None:
            raise UsageError("--generate and a TRACE file are exclusive")
        profile, _, seed = a.generate.partition(":")
        if profile not in PROFILES or (seed and not seed.isdigit()):
            raise UsageError(f"--generate: {a.generate!r} is not PROFILE[:SEED] with PROFILE one of {', '.join(PROFILES)}")
        a.generate = (profile, int(seed or 0))
    return a


def load(a: argparse.Namespace) -> Trace:
    if a.generate is not None:
        return paper_trace(*a.generate)
    if a.trace is None:
        return load_builtin()
    if not Path(a.trace).exists() or Path(a.trace).is_dir():  # a pipe (<(cat …)) is read like a file
        raise UsageError(f"{a.trace}: " + ("is a directory" if Path(a.trace).is_dir() else "no such file"))
    return load_trace(a.trace, a.format)


def windows(trace: Trace, a: argparse.Namespace) -> list[tuple[int | None, Trace]]:
    if a.window is not None:
        with usage_on(ValueError, prefix="--window"):  # an empty window
            return [(None, window(trace, *a.window))]
    if a.day is None:
        return [(None, trace)]
    out = []
    for d in a.day:
        w = day_window(trace, d)
        if not w.jobs:
            raise UsageError(f"--day: day {d} has no jobs in {trace.name}")
        out.append((d, w))
    return out


def plan(trace: Trace, a: argparse.Namespace,
         replayed: Sequence[tuple[int | None, Trace]] | None = None) -> list[tuple[RunSpec, Trace]]:
    """The sweep: one (spec, replayed window) per scheduler × η × cost × day."""
    runs = []
    for day, w in (windows(trace, a) if replayed is None else replayed):
        for eta in a.eta:
            n = a.nodes if a.nodes is not None else cluster_size(w, eta)
            if a.nodes is None:  # N(η) of the window: its largest job or its demand
                within(Size.NODES, n, w.name, f"N(eta={eta:g})")
            setups = [(SimConfig(s, n, queue=a.queue, charging=a.charging, seed=a.seed,
                                 policy_opts=a.policy_opts.get(s, ())), w) for s in a.schedulers]
            if a.cluster is not None:
                setups = mixed_setups(w, a)
            else:
                with usage_on(ValueError):  # a job this cluster cannot host (only with --nodes)
                    validate_jobs(w.jobs, n, G_DEFAULT)
            for cfg, _ in setups:
                why = build_error(cfg.policy, cfg.n_nodes, cfg.policy_opts)
                if why is not None:
                    raise UsageError(f"scheduler {cfg.policy} on N={cfg.n_nodes} nodes: {why}")
            for cost in a.migration_cost:
                for cfg, jobs in setups:
                    runs.append((RunSpec(cfg.policy, eta, cost, day, replace(cfg, migration_cost=cost)), jobs))
    return runs


def mixed_setups(w: Trace, a: argparse.Namespace) -> list[tuple[SimConfig, Trace]]:
    """``--nodes-file``: each scheduler on its nodes of the list with the jobs that can run there
    (``simulator.on_node_list``); notes (skipped schedulers, jobs left out) go to ``a.notes``."""
    out = []
    for s in a.schedulers:
        base = SimConfig(s, 0, queue=a.queue, charging=a.charging, seed=a.seed, policy_opts=a.policy_opts.get(s, ()))
        try:
            cfg, kept, left_out = on_node_list(base, a.cluster, a.job_models, w.jobs)
        except ValueError as e:
            a.notes[f"{s} skipped: {e}"] = None
            continue
        if s in PARTITION_ONLY:
            a.notes[f"{s} is defined for {PARTITION_ONLY[s]}-GPU nodes: it runs on that partition "
                    f"({cfg.n_nodes} nodes, {cfg.gpus} GPUs; its N, AGU and SIF are the partition's)"] = None
        for reason, k in left_out.items():
            a.notes[f"{s}: {k} job(s) of {w.name} left out: {reason.value}"] = None
        out.append((cfg, Trace(w.name, tuple(kept), w.report)))
    if not out:
        raise UsageError(f"--nodes-file {a.nodes_file}: no scheduler can run on this cluster")
    return out


def run_one(spec: RunSpec, trace: Trace) -> RunOutcome:
    t0 = time.perf_counter()
    res = simulate(trace.jobs, spec.config)
    return RunOutcome(spec, compute_metrics(res), res, time.perf_counter() - t0)


def execute(runs: list[tuple[RunSpec, Trace]], workers: int, engine: Engine | None = None) -> Iterator[RunOutcome]:
    """Every run's outcome: on the engine's Dask cluster, here, or in ``workers`` processes
    (then in completion order)."""
    if engine is not None and engine.backend == "dask":
        yield from engine.starmap(run_one, runs)
        return
    if workers == 1:
        for spec, tr in runs:
            yield run_one(spec, tr)
        return
    pool = children.pool(workers)  # the workers die with this process
    try:
        futures = [pool.submit(run_one, spec, tr) for spec, tr in runs]
        for f in as_completed(futures):
            yield f.result()
    except BaseException:  # an interrupt (or a failed run): end the workers now, never wait for them
        children.end_pool(pool)
        raise
    pool.shutdown(wait=True)


def _fmt(x: float, spec: str) -> str:
    return "nan" if isinstance(x, float) and math.isnan(x) else spec.format(x)


def table_row(o: RunOutcome) -> tuple[str, ...]:
    m, s = o.metrics, o.spec
    return (s.scheduler, f"{s.eta:g}", f"{s.cost:g}", "all" if s.day is None else str(s.day),
            str(s.config.n_nodes), o.result.status, _fmt(m.afr, "{:.4f}"), _fmt(m.ajct, "{:.1f}"),
            _fmt(m.agu, "{:.4f}"), _fmt(m.migrations_per_job, "{:.3f}"),
            _fmt(m.frag_blocking_share, "{:.3f}"), _fmt(m.wcc_coverage, "{:.3f}"))


def print_table(outcomes: list[RunOutcome], out: TextIO | None = None) -> None:
    out = sys.stdout if out is None else out  # looked up per call: sys.stdout may be replaced
    out.write(" ".join(f.format(h) for h, f in TABLE) + "\n")
    for o in outcomes:
        out.write(" ".join(f.format(v) for (_, f), v in zip(TABLE, table_row(o))) + "\n")
    for o in outcomes:
        for note in o.metrics.notes:
            out.write(f"note: {o.spec.run_id}: {note}\n")


def summary_row(o: RunOutcome) -> dict[str, object]:
    s = o.spec
    return {"run": s.run_id, "scheduler": s.scheduler, "eta": s.eta, "migration_cost": s.cost,
            "day": "" if s.day is None else s.day, "n_nodes": s.config.n_nodes,
            "queue": s.config.queue, "charging": s.config.charging, "seed": s.config.seed,
            "status": o.result.status, "events": o.result.events,
            "phi_star_unknown": o.result.phi_star_unknown,
            "departing_moves": o.result.departing_moves, "wall_s": round(o.wall, 3),
            **o.metrics.as_row()}


def write_outputs(out: Path, trace: Trace, outcomes: list[RunOutcome], replayed: Replayed | None = None) -> None:
    """``summary.csv``, ``summary.json`` (the load report of what was replayed: with one window its
    report, and every window's under ``replayed``), per-run job and series CSVs."""
    rows = [summary_row(o) for o in outcomes]
    write_csv(out / "summary.csv", list(rows[0]), [list(r.values()) for r in rows])
    meta = {"trace": trace.name, **replayed_meta(trace, replayed),
            "runs": rows}
    write_output(out / "summary.json", json.dumps(meta, indent=1, default=str) + "\n")
    for o in outcomes:
        gpus = o.spec.config.gpus
        write_csv(out / "jobs" / f"{o.spec.run_id}.csv", JOB_COLUMNS,
                   ([*r[:7], r.queueing, r.jct, *r[7:]] for r in o.result.jobs))
        s = o.result.series
        write_csv(out / "series" / f"{o.spec.run_id}.csv", (*SERIES_COLUMNS, "n_sif", "utilisation"),
                   ((*row, row[1] - row[-1], row[3] / gpus) for row in s.rows()))


def run_all(runs: list[tuple[RunSpec, Trace]], a: argparse.Namespace) -> list[RunOutcome]:
    """Every run, with a progress bar on stderr; outcomes in the sweep's order. A SIGINT/SIGTERM
    stops the sweep (``a.stop.signal`` then names it) with the runs completed so far."""
    progress = Progress(len(runs))
    outcomes: list[RunOutcome] = []
    try:
        with interruptible() as a.stop, Engine(a.backend, a.workers, a.address) as engine:
            for o in execute(runs, a.workers, engine):
                outcomes.append(o)
                progress.step(o.spec.run_id)
    finally:
        progress.close()
    order = {spec.run_id: i for i, (spec, _) in enumerate(runs)}
    return sorted(outcomes, key=lambda o: order[o.spec.run_id])


def _main(argv: Sequence[str] | None) -> int:
    a = parse_args(argv)
    if a.mode == "fill":
        return fill_main(a)
    a.cluster, a.job_models, a.notes = None, {}, {}
    if a.nodes_file is not None:
        a.cluster = load_node_list(a.nodes_file)
        a.nodes = a.cluster.n_nodes
        if a.trace is not None and a.format == "openb":
            a.job_models = openb_job_models(a.trace)
    trace = load(a)
    replayed = windows(trace, a)
    runs = plan(trace, a, replayed)
    for name, why in a.skipped:
        print(f"{PROG}: note: {name} skipped ({why}); name it with its options to run it", file=sys.stderr)
    print(replayed_text(trace, replayed))
    if a.cluster is not None:
        print(a.cluster.summary())
    for note in a.notes:
        print(f"note: {note}")
    if a.out is not None:  # a folder that cannot be written is refused before the runs, not after them
        output_dir(a.out)
    outcomes = run_all(runs, a)
    print_table(outcomes)
    if a.stop.signal:
        a.stop.note(PROG, f"{len(outcomes)} of {len(runs)} runs completed; the table"
                          + (" and --out cover" if a.out is not None else " covers") + " those (incomplete sweep)")
    if a.out is not None and outcomes:
        out = Path(a.out)
        write_outputs(out, trace, outcomes, replayed)
        if a.stop.signal:
            mark_incomplete(out / "summary.json", a.stop.signal, len(outcomes), len(runs))
        print(f"results written to {out}/")
        if a.plot and not a.stop.signal:
            from proofs_check.cli.plots import plot_folder

            for p in plot_folder(out):
                print(f"plot: {p}")
    if a.stop.signal:
        return a.stop.code
    code, findings = sweep_exit([(o.spec.run_id, o.spec.scheduler, o.result.status) for o in outcomes], a.named)
    print(*findings, sep="\n", end="\n" if findings else "")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``simulate``."""
    return run(PROG, lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
