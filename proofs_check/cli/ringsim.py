"""``ringsim``: sweep the OCS simulator over schedulers × workloads × loads × seeds (RingStitch, arXiv:2609.37627v1, §V).

Writes ``results.csv`` (tidy: one row per scheduler, workload, load, seed, metric, value) and one
PNG per metric (mean over seeds against load, one panel per workload, one line per scheduler) into
``--out``; progress goes to stderr, a summary table (means over seeds) to stdout. Every cell uses
the same arrival trace for every scheduler (common random numbers).

Exit codes (docs/cli.md): 0 ok, 2 bad usage or input (one line on stderr naming the option),
70 internal error.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from pathlib import Path
from typing import NamedTuple, Sequence

from heuristics.rack.ocs_sim import (WORKLOADS, DurationModel, SimResult, Windows, check_workload, generate_trace,
                                     simulate)
from heuristics.rack.racks import PENALTY_NAMES, FragmentationPenalty, RackCluster
from heuristics.rack.ring_baselines import PAPER_POLICIES, RING_POLICIES, make_ring_policy
from heuristics.limits import Size, finite, within
from proofs_check.cli.common import (EXIT_OK, UsageError, make_parser, output_dir, replace_output, run,
                                     usage_on, write_output)
from proofs_check.cli.interruptible import interruptible
from proofs_check.cli.limit_option import add_limit_option
from proofs_check.cli.plots import save_figure
from proofs_check.figstyle import dodge, mean_ci, styles
from proofs_check.core.engine import Engine

PROG = "ringsim"
METRICS = SimResult.METRICS
Table = dict[tuple[str, float, str], dict[str, tuple[float, float, int]]]


class Cell(NamedTuple):
    """One (workload, load, seed) trace, run under every scheduler in ``schedulers``."""

    schedulers: tuple[str, ...]
    workload: str
    load: float
    seed: int
    dims: tuple[int, int, int]
    capacity: int
    windows: Windows
    durations: DurationModel
    penalty: str


class Row(NamedTuple):
    scheduler: str
    workload: str
    load: float
    seed: int
    metric: str
    value: float


def run_cell(cell: Cell) -> tuple[list[Row], dict[str, float]]:
    """Simulate one cell; returns the tidy rows and the wall time per scheduler."""
    cluster = RackCluster.torus(cell.dims, cell.capacity)
    jobs = generate_trace(cluster, WORKLOADS[cell.workload], cell.load, cell.seed, cell.windows, cell.durations)
    rows: list[Row] = []
    walls: dict[str, float] = {}
    for name in cell.schedulers:
        start = time.perf_counter()
        res = simulate(cluster, make_ring_policy(name, penalty=FragmentationPenalty(cell.penalty)), jobs, cell.windows)
        walls[name] = time.perf_counter() - start
        rows += [Row(name, cell.workload, cell.load, cell.seed, m, getattr(res, m)) for m in METRICS]
    return rows, walls


def mean_table(rows: Sequence[Row]) -> Table:
    """(workload, load, scheduler) → metric → (mean, sample sd, n) over seeds, NaNs left out."""
    groups: dict[tuple[str, float, str], dict[str, list[float]]] = {}
    for r in rows:
        groups.setdefault((r.workload, r.load, r.scheduler), {}).setdefault(r.metric, []).append(r.value)
    out: Table = {}
    for key, metrics in groups.items():
        out[key] = {}
        for m, vals in metrics.items():
            ok = [v for v in vals if not math.isnan(v)]
            mean = sum(ok) / len(ok) if ok else float("nan")
            sd = math.sqrt(sum((v - mean) ** 2 for v in ok) / (len(ok) - 1)) if len(ok) > 1 else float("nan")
            out[key][m] = (mean, sd, len(ok))
    return out


def format_table(rows: Sequence[Row], schedulers: Sequence[str]) -> str:
    """Table II shape: per workload and load, one line per scheduler — utilisation %, blocking %,
    mean / P95 wait (h), mean cross-rack ring cost; means over seeds (± sd)."""
    table = mean_table(rows)
    lines = []
    for wl, load in sorted({(k[0], k[1]) for k in table}):
        n = max(v[2] for k, ms in table.items() if k[:2] == (wl, load) for v in ms.values())
        lines.append(f"workload {wl}, load {load:.0%}, {n} seed(s)")
        lines.append(f"  {'scheduler':26s} {'util %':>13s} {'blocking %':>13s} {'wait h':>13s} "
                     f"{'P95 wait h':>13s} {'ring cost':>13s}")
        for s in schedulers:
            ms = table.get((wl, load, s))
            if ms is None:
                continue
            cells = []
            for m, scale in zip(METRICS, (100, 100, 1, 1, 1)):
                mean, sd, _ = ms[m]
                cells.append("-" if math.isnan(mean) else
                             f"{mean * scale:.2f}" + ("" if math.isnan(sd) else f"±{sd * scale:.2f}"))
            lines.append(f"  {s:26s} " + " ".join(f"{c:>13s}" for c in cells))
    return "\n".join(lines)


def write_csv(rows: Sequence[Row], path: Path) -> None:
    """Write the results CSV atomically; a failure is OutputError (one line, exit 2)."""
    def fill(tmp: Path) -> None:
        with tmp.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(Row._fields)
            w.writerows(rows)

    replace_output(path, fill)


# Axis label and scale of each metric (SimResult: utilisation and blocking are fractions, waits in
# hours, ring cost in torus hops).
LABELS = {"utilisation": ("chip utilisation (% of chips busy)", 100.0),
          "blocking": ("blocking (% of requested chip-hours)", 100.0),
          "mean_wait": ("mean wait (h)", 1.0), "p95_wait": ("P95 wait (h)", 1.0),
          "mean_ring_cost": ("mean ring cost of cross-rack jobs (hops)", 1.0)}


def plot_metrics(rows: Sequence[Row], schedulers: Sequence[str], out: Path) -> list[Path]:
    """One figure per metric (PNG + SVG): mean over seeds ± 95 % CI against the offered load, a
    panel per workload, a series per scheduler; x positions dodged so equal series (RingStitch,
    Capacity-only and Network-unaware BF share utilisation, blocking and waits by construction)
    stay visible side by side."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values: dict[tuple[str, float, str, str], list[float]] = {}
    for r in rows:
        values.setdefault((r.workload, r.load, r.scheduler, r.metric), []).append(r.value)
    workloads = sorted({r.workload for r in rows})
    loads = sorted({r.load for r in rows})
    seeds = len({r.seed for r in rows})
    st = styles(list(schedulers))
    span = 100 * 0.04 * ((loads[-1] - loads[0]) if len(loads) > 1 else 0.25)
    paths = []
    for m in METRICS:
        label, scale = LABELS[m]
        fig, axes = plt.subplots(1, len(workloads), figsize=(4.2 * len(workloads), 3.8), squeeze=False)
        for ax, wl in zip(axes[0], workloads):
            for i, s in enumerate(schedulers):
                cis = [(x, *mean_ci(values.get((wl, x, s, m), []))) for x in loads]
                pts = [(x, mean, half) for x, mean, half, n in cis if n]
                if not pts:
                    continue
                off = dodge(i, len(schedulers), span)
                ax.errorbar([100 * x + off for x, _, _ in pts], [mean * scale for _, mean, _ in pts],
                            yerr=[0.0 if math.isnan(h) else h * scale for _, _, h in pts], label=s, capsize=2,
                            lw=1, ms=4, **st[s].kwargs())
            ax.set_title(f"workload {wl}", fontsize=9)
            ax.set_xlabel("offered load (% of cluster chips)")
            ax.set_ylabel(label, fontsize=8)
            ax.grid(lw=0.3)
        fig.suptitle(f"{label} against offered load — {seeds} seed(s), mean ± 95 % CI; "
                     "x dodged so that equal series stay visible", fontsize=9)
        fig.legend(*axes[0][0].get_legend_handles_labels(), loc="lower center", ncol=6, fontsize=7, frameon=False)
        fig.tight_layout(rect=(0, 0.14, 1, 0.94))
        paths.append(save_figure(fig, out / f"{m}.png"))
    return paths


def _names(text: str, known: Sequence[str], flag: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [x for x in names if x not in known]
    if bad or not names:
        raise UsageError(f"{flag}: unknown name(s) {bad or [text]}; known: {', '.join(known)}")
    return names


def _floats(text: str, flag: str, lo: float, hi: float) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise UsageError(f"{flag}: {text!r} is not a comma-separated list of numbers") from None
    if not all(lo < v <= hi for v in vals):
        raise UsageError(f"{flag}: every value must be in ({lo}, {hi}], got {text!r}")
    return vals


def _dims(text: str) -> tuple[int, int, int]:
    """``X,Y,Z``: three whole numbers >= 1 (``1.5`` is refused, not truncated)."""
    parts = [x.strip() for x in text.split(",")]
    if len(parts) != 3 or not all(p.isdigit() and int(p) >= 1 for p in parts):
        raise UsageError(f"--dims: need three whole sizes X,Y,Z >= 1, got {text!r}")
    return int(parts[0]), int(parts[1]), int(parts[2])


def parse_args(argv: Sequence[str] | None) -> tuple[argparse.Namespace, list[Cell]]:
    ap = make_parser(PROG, __doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--schedulers", default=",".join(PAPER_POLICIES),
                    help=f"comma-separated, of {', '.join(RING_POLICIES)} (default: the paper's six)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help="comma-separated workload mixes of the paper's §V (A: power-of-two slices, B/C: fragmenting "
                         "mixes, D: phased; docs/ringstitch.md) (default %(default)s)")
    ap.add_argument("--loads", default="0.6,0.7,0.8,0.9,0.95",
                    help="offered loads, comma-separated fractions of the cluster's chips, each in (0, 1.5] "
                         "(default %(default)s)")
    ap.add_argument("--seeds", type=int, default=3, help="number of seeds per cell (paper: 50) (default %(default)s)")
    ap.add_argument("--first-seed", type=int, default=0,
                    help="the seeds run are FIRST .. FIRST + --seeds - 1 (default %(default)s)")
    ap.add_argument("--dims", default="5,5,6", help="torus size X,Y,Z in racks (paper 5,5,6) (default %(default)s)")
    ap.add_argument("--capacity", type=int, default=64, help="chips per rack (paper 64) (default %(default)s)")
    ap.add_argument("--warmup", type=float, default=50.0,
                    help="warm-up window before measuring, in hours of simulated time (default %(default)s)")
    ap.add_argument("--measure", type=float, default=200.0,
                    help="measurement window, in hours of simulated time (default %(default)s)")
    ap.add_argument("--drain", type=float, default=50.0,
                    help="drain window after measuring (no new arrivals; the run ends after it), in hours of "
                         "simulated time (default %(default)s)")
    ap.add_argument("--penalty", default="linear", choices=PENALTY_NAMES,
                    help="fragmentation penalty of a rack left with l chips: linear C - l + 1, or inverse 1/l "
                         "(default %(default)s)")
    ap.add_argument("--out", default="ringsim-out", help="output folder, created if missing (default %(default)s)")
    ap.add_argument("--workers", type=int, default=1, help="parallel processes, one cell each (default %(default)s)")
    ap.add_argument("--backend", choices=("local", "dask"), default="local",
                    help="run the cells here (process pool) or on a Dask cluster (proofs_check.core.engine) "
                         "(default %(default)s)")
    ap.add_argument("--address", default=None, metavar="HOST:PORT",
                    help="--backend dask: the running Dask scheduler (default: a local cluster of --workers)")
    ap.add_argument("--no-plots", action="store_true", help="write results.csv only, no PNGs (default: PNGs too)")
    add_limit_option(ap)
    args = ap.parse_args(argv)
    schedulers = _names(args.schedulers, tuple(RING_POLICIES), "--schedulers")
    workloads = _names(args.workloads, tuple(WORKLOADS), "--workloads")
    loads = _floats(args.loads, "--loads", 0.0, 1.5)
    dims = _dims(args.dims)
    if args.seeds < 1 or args.workers < 1 or args.capacity < 1:
        raise UsageError("--seeds, --workers and --capacity must be >= 1")
    if args.first_seed < 0:
        raise UsageError(f"--first-seed: {args.first_seed} must be >= 0")
    within(Size.SEEDS, args.seeds, "--seeds", None)
    within(Size.CAPACITY, args.capacity, "--capacity", None)
    within(Size.RACKS, dims[0] * dims[1] * dims[2], "--dims", None)
    within(Size.CELLS, len(workloads) * len(loads) * args.seeds, "--workloads × --loads × --seeds", None)
    for flag, value in (("--warmup", args.warmup), ("--measure", args.measure), ("--drain", args.drain)):
        finite(value, flag, None)
        within(Size.DURATION, value, flag, None)
    windows = Windows(args.warmup, args.measure, args.drain)
    if min(args.warmup, args.drain) < 0 or args.measure <= 0:
        raise UsageError("--warmup/--drain must be >= 0 and --measure > 0")
    cells = [Cell(schedulers, wl, load, seed, dims, args.capacity, windows, DurationModel(), args.penalty)
             for wl in workloads for load in loads
             for seed in range(args.first_seed, args.first_seed + args.seeds)]
    return args, cells


def _main(argv: Sequence[str] | None) -> int:
    args, cells = parse_args(argv)
    with usage_on(ValueError, prefix="--dims/--capacity"):  # a torus the rack model refuses, or too small
        cluster = RackCluster.torus(cells[0].dims, cells[0].capacity)
        for wl in sorted({c.workload for c in cells}):
            check_workload(WORKLOADS[wl], cluster)
    out = output_dir(args.out)
    rows: list[Row] = []
    start = time.perf_counter()
    done = 0
    with interruptible() as stop, Engine(args.backend, args.workers, args.address) as engine:
        for i, (cell, (cell_rows, walls)) in enumerate(zip(cells, engine.starmap(run_cell, [(c,) for c in cells])), 1):
            rows += cell_rows
            done = i
            print(f"[{i}/{len(cells)}] workload {cell.workload} load {cell.load:.2f} seed {cell.seed}: "
                  f"{sum(walls.values()):.1f}s ({time.perf_counter() - start:.0f}s total)", file=sys.stderr)
    write_csv(rows, out / "results.csv")
    write_status(out / "status.json", stop.signal, done, len(cells))
    if stop.signal:  # what was run is written, marked incomplete; no plots of a partial sweep
        print(format_table(rows, cells[0].schedulers))
        stop.note(PROG, f"{done} of {len(cells)} cells completed; {out / 'results.csv'} has those "
                        f"({out / 'status.json'}: complete false)")
        return stop.code
    plots = [] if args.no_plots else plot_metrics(rows, cells[0].schedulers, out)
    print(format_table(rows, cells[0].schedulers))
    print(f"wrote {out / 'results.csv'}" + (f" and {len(plots)} plots" if plots else ""), file=sys.stderr)
    return EXIT_OK


def write_status(path: Path, signal: str, done: int, planned: int) -> None:
    """``status.json``: whether the sweep is complete (``interrupted``: the signal that stopped it)."""
    status = {"complete": not signal and done == planned, "cells_completed": done, "cells_planned": planned,
              "interrupted": signal or None}
    write_output(path, json.dumps(status, indent=1) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``ringsim``."""
    return run(PROG, lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
