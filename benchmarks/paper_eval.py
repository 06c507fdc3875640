"""The paper's evaluation (seeds/000 §6.1, §6.2, §6.3, §6.5, §6.6) on traces generated to its
published statistics, with 95 % confidence intervals over trace seeds.

    python benchmarks/paper_eval.py [--workers 2] [--seeds 5] [--quick] [--out DIR] [--figures DIR]
                                    [--schedulers a,b] [--costs 1,4,10] [--cost-seeds 3]
                                    [--replay DIR/results.jsonl] [--openb PATH]

Traces (``heuristics.gpu.trace_gen.paper_trace``): per-instance shares of Table 1 (GFS and Venus
rows) and of Table 2's three §6.3 days, with the §6.6 regime of 8-GPU jobs of w > 30; one trace
per (profile, seed), seeds 0..S−1. Every registered scheduler (hier-compass, Appendix D, needs an
option and is skipped and named) replays each, on N(η) nodes (eq. 13), per-migration cost c:

1. §6.1 (Fig. 1): gfs and venus, η = 0.90, c = 8 s.
2. §6.2 (Fig. 2): gfs, η ∈ {0.85, 0.95} (0.90 is part 1's run).
3. §6.3 (Fig. 3): venus-day92, gfs-day58, gfs-day26, η = 0.90, c = 8 s.
4. §6.5 (Fig. 4): gfs and venus, η = 0.90, c ∈ ``--costs`` for the schedulers that migrated in
   part 1 (c = 8 s is part 1's run), on the first ``--cost-seeds`` seeds.
5. §6.6 (Fig. 5–7): N·SIF, GPU utilisation and empty nodes over the busiest 90 minutes of gfs
   seed 0 at η = 0.95 (the paper zooms into 21:00–22:30 of GFS day 113 at η = 0.95).

Printed per cell: mean ± 95 % CI half-width (Student t over seeds) of AFR, AJCT, AGU, migrations
per job, fragmentation-induced blocking share and the scheduler-side WCC coverage ρ, with N(η)
and the demand-side ρ of the traces; then, per claim of the paper, whether it holds on these
traces (paired by seed: the top-1 frequency of §6.4's Table 3 and the paired difference against
the strongest baseline). A run that did not complete (an operator failure) is counted and named;
its AJCT is NaN and left out of the means (the count of runs behind each mean is printed).

Every run's metrics go to ``OUT/results.jsonl`` (one JSON object per run, as it completes) and the case-study
series to ``OUT/case_series.json``; ``--replay OUT/results.jsonl`` reprints the tables and redraws
the figures from them without running anything (what ``benchmarks/render_figures.py`` does for the
README's figures). Figures (PNG 200 dpi + SVG, ``proofs_check.figstyle``) go to ``--figures``
(default OUT). ``--quick``: 2 seeds, costs 1 and 10 on one seed. Progress on stderr; each part's
wall and CPU time at the end.
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import time
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Sequence, TextIO

from heuristics.gpu.registry import policy_migrates
from heuristics.gpu.simulator import SimConfig
from heuristics.gpu.sizing import cluster_size, wcc_coverage
from heuristics.gpu.trace import Trace
from heuristics.gpu.trace_gen import PROFILES, instance_shares, paper_trace
from heuristics.gpu.trace_loaders import load_trace
from proofs_check.cli.plots import nested_widths
from proofs_check.cli.simulate import Progress, RunOutcome, RunSpec, default_schedulers, execute
from proofs_check.figstyle import SeriesStyle, dodge, mean_ci, save_figure, styles

METRICS = (("afr", "AFR (time-avg. SIF, fraction of nodes)", "lower"),
           ("ajct", "AJCT (s)", "lower"),
           ("agu", "AGU (fraction of GPUs busy)", "higher"))
EXTRA = ("migrations_per_job", "frag_blocking_share", "wcc_coverage", "max_nsif")
COMPASS = "compass-repaired"
# Not a baseline of the paper's: the exact oracle and the other readings of COMPASS itself.
NOT_BASELINES = {"sifopt", "compass-literal", "compass-prop3", "compass-bare-detach", COMPASS}
# Measured run times: SIFOpt and FFT solve exact repacks, the other migrating schedulers run operators.
_HEAVY = {"sifopt": 0, "fft": 1}
CASE = ("gfs", 0.95, 0)
CASE_WINDOW = 5400.0


class Cell(NamedTuple):
    """One (profile, η, c) point of the evaluation; its runs span the seeds."""

    profile: str
    eta: float
    cost: float


def _cpu() -> float:
    """CPU seconds of this process and of its finished worker processes."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _rank(spec: RunSpec) -> tuple[int, int]:
    migrating = policy_migrates(spec.scheduler) or spec.scheduler == "drr"
    return _HEAVY.get(spec.scheduler, 2 if migrating else 3), -spec.config.n_nodes


def run_cells(cells: Iterable[tuple[Cell, int, Trace, list[str]]], workers: int,
              keep_series: tuple[str, float, int] | None = None,
              sink: TextIO | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run every scheduler of every (cell, seed, trace); one result row per run (each also written
    to ``sink`` as one JSON line the moment it completes, so a cut run keeps what it ran), and the
    series of the ``keep_series`` (profile, η, seed) runs."""
    runs: list[tuple[RunSpec, Trace]] = []
    tags: list[tuple[Cell, int, Trace]] = []  # RunSpec.day carries the index into this list
    for cell, seed, trace, schedulers in cells:
        n = cluster_size(trace, cell.eta)
        for s in schedulers:
            runs.append((RunSpec(s, cell.eta, cell.cost, len(tags), SimConfig(s, n, migration_cost=cell.cost)), trace))
            tags.append((cell, seed, trace))
    runs.sort(key=lambda r: _rank(r[0]))
    progress = Progress(len(runs))
    rows, series = [], {}
    for o in execute(runs, workers):
        assert o.spec.day is not None
        cell, seed, trace = tags[o.spec.day]
        rows.append(result_row(cell, seed, trace, o))
        if sink is not None:
            sink.write(json.dumps(rows[-1]) + "\n")
            sink.flush()
        if keep_series == (cell.profile, cell.eta, seed):
            series[o.spec.scheduler] = case_series(o)
        progress.step(f"{cell.profile} seed {seed} {o.spec.scheduler} η={cell.eta:g} c={cell.cost:g}")
    return rows, series


def result_row(cell: Cell, seed: int, trace: Trace, o: RunOutcome) -> dict[str, Any]:
    m = o.metrics
    return {"profile": cell.profile, "eta": cell.eta, "cost": cell.cost, "seed": seed,
            "scheduler": o.spec.scheduler, "n_nodes": o.spec.config.n_nodes, "status": o.result.status,
            "note": o.result.note, "jobs": len(trace), "rho_demand": wcc_coverage(trace),
            "afr": m.afr, "ajct": m.ajct, "agu": m.agu, **{k: getattr(m, k) for k in EXTRA},
            "wall": o.wall}


def case_series(o: RunOutcome) -> dict[str, list[float]]:
    """N·SIF, utilisation and empty nodes of one run (sample i holds on [t_i, t_i+1))."""
    s, gpus = o.result.series, o.spec.config.gpus
    nsif = [p - ph if not math.isnan(ph) else float("nan") for p, ph in zip(s.partial, s.phi_star)]
    return {"t": list(s.t), "n_sif": nsif, "utilisation": [u / gpus for u in s.used_gpus],
            "empty": [float(e) for e in s.empty], "queue": [float(q) for q in s.queue_len]}


# --------------------------------------------------------------------------- the tables
def _groups(rows: Sequence[dict[str, Any]]) -> dict[tuple[str, float, float, str], list[dict[str, Any]]]:
    out: dict[tuple[str, float, float, str], list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["profile"], r["eta"], r["cost"], r["scheduler"]), []).append(r)
    return out


def _ci(rows: Sequence[dict[str, Any]], key: str) -> tuple[float, float, int]:
    return mean_ci([float(r[key]) if r["status"] == "complete" or key != "ajct" else float("nan") for r in rows])


def _fmt(mean: float, half: float, spec: str) -> str:
    if math.isnan(mean):
        return "-"
    return format(mean, spec) + ("" if math.isnan(half) else f" ±{format(half, spec.lstrip('+'))}")


def cell_table(rows: Sequence[dict[str, Any]], cell: Cell) -> list[str]:
    """Markdown table of one cell: every scheduler, mean ± 95 % CI over the seeds."""
    g = _groups(rows)
    mine = {s: rs for (p, e, c, s), rs in g.items() if (p, e, c) == cell}
    if not mine:
        return []
    any_rows = next(iter(mine.values()))
    ns = sorted({r["n_nodes"] for r in any_rows})
    rho = mean_ci([r["rho_demand"] for r in any_rows])
    head = (f"{cell.profile}, η = {cell.eta:g}, c = {cell.cost:g} s — {len(any_rows)} seeds, "
            f"N(η) = {min(ns)}–{max(ns)} nodes, demand-side ρ = {_fmt(*rho[:2], '.4f')}")
    out = [head, "",
           "| scheduler | runs complete | AFR | AJCT s | AGU | migrations/job | frag. blocking share | ρ (scheduler) |",
           "|---|---|---|---|---|---|---|---|"]
    for s in sorted(mine):
        rs = mine[s]
        done = sum(r["status"] == "complete" for r in rs)
        cols = [_fmt(*_ci(rs, "afr")[:2], ".4f"), _fmt(*_ci(rs, "ajct")[:2], ",.0f"),
                _fmt(*_ci(rs, "agu")[:2], ".3f"), _fmt(*_ci(rs, "migrations_per_job")[:2], ".3f"),
                _fmt(*_ci(rs, "frag_blocking_share")[:2], ".3f"), _fmt(*_ci(rs, "wcc_coverage")[:2], ".4f")]
        out.append(f"| `{s}` | {done}/{len(rs)} | " + " | ".join(cols) + " |")
    return out


def claims(rows: Sequence[dict[str, Any]], cells: Sequence[Cell]) -> list[str]:
    """Per cell and metric: COMPASS's rank by mean, its top-1 frequency over seeds against the
    paper's baselines, and the paired difference against the strongest baseline (by mean)."""
    g = _groups(rows)
    out = ["| cell | metric | best scheduler (mean) | compass-repaired rank of all | top-1 among paper baselines + compass (seeds) | compass − strongest baseline (paired, 95 % CI) | compass − best of FFT/DRR (paired) |",
           "|---|---|---|---|---|---|---|"]
    for cell in cells:
        mine = {s: rs for (p, e, c, s), rs in g.items() if (p, e, c) == cell}
        if COMPASS not in mine:
            continue
        for key, label, better in METRICS:
            sign = 1 if better == "lower" else -1
            means = {s: _ci(rs, key)[0] for s, rs in mine.items()}
            ranked = sorted((s for s in means if not math.isnan(means[s])), key=lambda s: sign * means[s])
            if not ranked:
                continue
            baselines = [s for s in ranked if s not in NOT_BASELINES]
            strongest = baselines[0] if baselines else None
            repacker = next((s for s in ranked if s in ("fft", "drr")), None)
            by_seed = {s: {r["seed"]: r for r in rs} for s, rs in mine.items()}
            seeds = sorted(by_seed[COMPASS])
            wins, diffs, rdiffs = 0, [], []
            for sd in seeds:
                vals = {s: float(by_seed[s][sd][key]) for s in [COMPASS, *baselines] if sd in by_seed[s]
                        and (key != "ajct" or by_seed[s][sd]["status"] == "complete")}
                if COMPASS in vals and all(sign * vals[COMPASS] <= sign * v for v in vals.values()):
                    wins += 1
                if strongest is not None and COMPASS in vals and strongest in vals:
                    diffs.append(vals[COMPASS] - vals[strongest])
                if repacker is not None and COMPASS in vals and repacker in vals:
                    rdiffs.append(vals[COMPASS] - vals[repacker])
            d, rd = mean_ci(diffs), mean_ci(rdiffs)
            rank = ranked.index(COMPASS) + 1 if COMPASS in ranked else "-"
            spec = ",.0f" if key == "ajct" else ".4f"
            out.append(f"| {cell.profile} η={cell.eta:g} | {label.split(' ')[0]} | `{ranked[0]}` "
                       f"{format(means[ranked[0]], spec)} | {rank} of {len(ranked)} | {wins}/{len(seeds)} | "
                       f"vs `{strongest}`: {_fmt(d[0], d[1], '+' + spec)} | vs `{repacker}`: {_fmt(rd[0], rd[1], '+' + spec)} |")
    return out


def afr_bound(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Theorem 1's consequence the paper measures (§6.1): COMPASS's AFR below 2/N, per run."""
    mine = [r for r in rows if r["scheduler"] == COMPASS and r["cost"] == 8.0]
    below = sum(r["afr"] <= 2 / r["n_nodes"] for r in mine)
    worst = max((r["afr"] * r["n_nodes"] for r in mine), default=float("nan"))
    return [f"compass-repaired AFR ≤ 2/N in {below} of {len(mine)} runs (largest N·AFR {worst:.3f})"]


# --------------------------------------------------------------------------- the figures
def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _seeds_note(rows: Sequence[dict[str, Any]]) -> str:
    seeds = sorted({r["seed"] for r in rows})
    return f"{len(seeds)} trace seeds, mean ± 95 % CI"


def bars_figure(rows: Sequence[dict[str, Any]], cells: Sequence[Cell], title: str, path: Path,
                st: dict[str, SeriesStyle]) -> Path:
    """One panel per metric; groups = cells, one bar per scheduler with its 95 % CI (Fig. 1 / 3)."""
    plt = _plt()
    g = _groups(rows)
    schedulers = sorted({r["scheduler"] for r in rows})
    fig, axes = plt.subplots(3, 1, figsize=(11, 9.5), sharex=True)
    width = 0.84 / len(schedulers)
    for ax, (key, label, better) in zip(axes, METRICS):
        for i, s in enumerate(schedulers):
            xs, ys, lo, hi = [], [], [], []
            for j, cell in enumerate(cells):
                m, h, _ = _ci(g.get((*cell, s), []), key)
                xs.append(j + (i - (len(schedulers) - 1) / 2) * width)
                ys.append(m)
                h = 0.0 if math.isnan(h) or math.isnan(m) else h
                lo.append(min(h, m) if key != "ajct" or m >= 0 else h)  # AFR, AGU, AJCT are ≥ 0
                hi.append(min(h, 1 - m) if key == "agu" else h)        # AGU ≤ 1
            for x, y in zip(xs, ys):
                if math.isnan(y):  # no completed run (AJCT of aborted runs is undefined)
                    ax.text(x, 0, "no run completed", rotation=90, fontsize=5, ha="center", va="bottom")
            ax.bar(xs, ys, width, yerr=[lo, hi], color=st[s].color, edgecolor="black", linewidth=0.4,
                   hatch=("", "//", "..", "xx")[i // 8 % 4], capsize=1.5, error_kw={"elinewidth": 0.7, "ecolor": "0.45"},
                   label=s)
        ax.set_ylabel(label + f"\n({better} is better)", fontsize=8)
        ax.grid(axis="y", lw=0.3)
    axes[-1].set_xticks(range(len(cells)), [f"{c.profile}\nη = {c.eta:g}, c = {c.cost:g} s" for c in cells])
    axes[0].set_title(f"{title} — {_seeds_note(rows)} (bars clipped to each metric's range)", fontsize=10)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=7, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return save_figure(fig, path, bbox_inches="tight")


def lines_figure(rows: Sequence[dict[str, Any]], profiles: Sequence[str], xkey: str, xlabel: str,
                 fixed: dict[str, float], title: str, path: Path, st: dict[str, SeriesStyle]) -> Path:
    """One row of panels per profile, one column per metric: metric against ``xkey`` (η or c),
    one line per scheduler with a 95 % CI band, x dodged so equal series stay visible (Fig. 2 / 4)."""
    plt = _plt()
    schedulers = sorted({r["scheduler"] for r in rows})
    fig, axes = plt.subplots(len(profiles), 3, figsize=(15, 3.6 * len(profiles)), squeeze=False)
    for row_axes, prof in zip(axes, profiles):
        mine = [r for r in rows if r["profile"] == prof and all(r[k] == v for k, v in fixed.items())]
        xs_all = sorted({r[xkey] for r in mine})
        span = 0.03 * (max(xs_all) - min(xs_all) if len(xs_all) > 1 else 1.0)
        for ax, (key, label, better) in zip(row_axes, METRICS):
            for i, s in enumerate(schedulers):
                cis = [(x, _ci([r for r in mine if r["scheduler"] == s and r[xkey] == x], key)) for x in xs_all]
                pts = [(x, m, h) for x, (m, h, n) in cis if n]
                if not pts:
                    continue
                off = dodge(i, len(schedulers), span)
                xs = [x + off for x, _, _ in pts]
                ms = [m for _, m, _ in pts]
                hs = [0.0 if math.isnan(h) else h for _, _, h in pts]
                lo = [min(h, m) for h, m in zip(hs, ms)]  # every metric is ≥ 0 …
                hi = [min(h, 1 - m) if key == "agu" else h for h, m in zip(hs, ms)]  # … and AGU ≤ 1
                ax.errorbar(xs, ms, yerr=[lo, hi], label=s, capsize=2, lw=1, ms=4, **st[s].kwargs())
            ax.set_xlabel(xlabel)
            ax.set_ylabel(label, fontsize=8)
            ax.set_title(f"{prof}: {label.split(' (')[0]} ({better} is better)", fontsize=9)
            ax.grid(lw=0.3)
    fig.suptitle(f"{title} — {_seeds_note(rows)} (clipped to each metric's range); x positions dodged so that "
                 "equal values stay visible", fontsize=10)
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="lower center", ncol=7, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 0.96))
    return save_figure(fig, path, bbox_inches="tight")


def busiest_window(series: dict[str, dict[str, list[float]]], length: float) -> tuple[float, float]:
    """The window of ``length`` s where best-fit's queue is longest on average (the case study
    zooms into a congested stretch); the whole run when no best-fit series."""
    ref = series.get("best-fit") or next(iter(series.values()))
    t, q = ref["t"], ref["queue"]
    best, start = -1.0, t[0]
    step = max(1, len(t) // 400)
    for i in range(0, len(t), step):
        t0 = t[i]
        area = sum(q[k] * (min(t[k + 1], t0 + length) - t[k]) for k in range(i, len(t) - 1) if t[k] < t0 + length)
        if area > best:
            best, start = area, t0
    return start, start + length


def trim_case(case: dict[str, Any]) -> dict[str, Any]:
    """The case study with its window fixed and its series cut to it (plus the sample before), so
    the saved file stays small."""
    t0, t1 = busiest_window(case["series"], CASE_WINDOW)
    cut = {}
    for s, d in case["series"].items():
        keep = [i for i, t in enumerate(d["t"]) if t0 <= t <= t1 or (i + 1 < len(d["t"]) and d["t"][i + 1] > t0 >= t)]
        cut[s] = {k: [v[i] for i in keep] for k, v in d.items()}
    return {**case, "window": [t0, t1], "series": cut}


def case_figure(series: dict[str, dict[str, list[float]]], meta: dict[str, Any], path: Path,
                st: dict[str, SeriesStyle]) -> Path:
    """Fig. 5–7 of §6.6: N·SIF, utilisation and empty nodes over the busiest window, one step line
    per scheduler, widest drawn first (``nested_widths``: equal series stay visible as bands)."""
    plt = _plt()
    t0, t1 = meta.get("window") or busiest_window(series, CASE_WINDOW)
    names = sorted(series)
    widths = dict(zip(names, nested_widths(len(names))))
    panels = (("n_sif", "N·SIF (avoidable partial nodes)"), ("utilisation", "GPU utilisation (fraction)"),
              ("empty", "fully empty nodes"))
    fig, axes = plt.subplots(3, 1, figsize=(11, 9), sharex=True)
    for ax, (key, label) in zip(axes, panels):
        for s in names:
            d = series[s]
            before = [v for t, v in zip(d["t"], d[key]) if t <= t0]
            pts = [(t0, before[-1])] if before else []
            pts += [(t, v) for t, v in zip(d["t"], d[key]) if t0 < t <= t1]
            if pts:
                pts.append((min(t1, d["t"][-1]), pts[-1][1]))
                ax.step([(t - t0) / 60 for t, _ in pts], [v for _, v in pts], where="post", lw=widths[s],
                        color=st[s].color, linestyle=st[s].linestyle, label=s)
        ax.set_ylabel(label, fontsize=8)
        ax.grid(lw=0.3)
    axes[-1].set_xlabel(f"minutes after t = {t0:,.0f} s (simulated)")
    axes[0].set_title(f"§6.6 case study: {meta['profile']} seed {meta['seed']}, η = {meta['eta']:g}, N = {meta['n_nodes']}, "
                      f"window [{t0:,.0f} s, {t1:,.0f} s] (the {CASE_WINDOW / 60:.0f} busiest minutes of best-fit's queue)",
                      fontsize=9)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center", ncol=7, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return save_figure(fig, path, bbox_inches="tight")


def render(rows: Sequence[dict[str, Any]], case: dict[str, Any], figures: Path, costs: Sequence[float]) -> list[Path]:
    """Every figure of the evaluation, from its result rows (what --replay and render_figures call)."""
    figures.mkdir(parents=True, exist_ok=True)
    st = styles(sorted({r["scheduler"] for r in rows}))
    out = [bars_figure(rows, [Cell("gfs", 0.9, 8.0), Cell("venus", 0.9, 8.0)],
                       "§6.1 overall comparison (Fig. 1), generated Table 1 traces", figures / "paper_6_1.png", st),
           bars_figure(rows, [Cell(p, 0.9, 8.0) for p in ("venus-day92", "gfs-day58", "gfs-day26")],
                       "§6.3 workload composition (Fig. 3), generated Table 2 days", figures / "paper_6_3.png", st),
           lines_figure([r for r in rows if r["cost"] == 8.0], ["gfs"], "eta", "η (cluster-sizing quantile, eq. 13)",
                        {"cost": 8.0}, "§6.2 sensitivity to η on gfs (Fig. 2), c = 8 s", figures / "paper_6_2.png", st)]
    cost_rows = [r for r in rows if r["eta"] == 0.9 and r["profile"] in ("gfs", "venus")]
    migrating = {r["scheduler"] for r in cost_rows if r["cost"] != 8.0}
    cost_seeds = {r["seed"] for r in cost_rows if r["cost"] != 8.0}
    cost_rows = [r for r in cost_rows if r["scheduler"] in migrating and r["seed"] in cost_seeds]
    if migrating:
        out.append(lines_figure(cost_rows, ["gfs", "venus"], "cost", "per-migration cost c (s)", {"eta": 0.9},
                                "§6.5 migration cost (Fig. 4), η = 0.9", figures / "paper_6_5.png", st))
    if case.get("series"):
        out.append(case_figure(case["series"], case, figures / "paper_6_6.png", st))
    return out


# --------------------------------------------------------------------------- main
def plan(seeds: int, cost_seeds: int, costs: Sequence[float]) -> tuple[list[Cell], list[Cell]]:
    """(the cells run on every seed, the cost-sweep cells run on the first cost_seeds)."""
    main = [Cell("gfs", 0.9, 8.0), Cell("venus", 0.9, 8.0), Cell("gfs", 0.85, 8.0), Cell("gfs", 0.95, 8.0),
            *(Cell(p, 0.9, 8.0) for p in ("venus-day92", "gfs-day58", "gfs-day26"))]
    sweep = [Cell(p, 0.9, c) for p in ("gfs", "venus") for c in costs if c != 8.0]
    return main, sweep


def print_report(rows: Sequence[dict[str, Any]], main_cells: Sequence[Cell], sweep_cells: Sequence[Cell]) -> None:
    for cell in [*main_cells, *sweep_cells]:
        table = cell_table(rows, cell)
        if table:
            print("\n" + "\n".join(table))
    bad = [r for r in rows if r["status"] != "complete"]
    if bad:
        print(f"\nruns that did not complete: {len(bad)}")
        for r in sorted(bad, key=lambda r: (r["scheduler"], r["profile"], r["seed"])):
            print(f"  {r['scheduler']} {r['profile']} η={r['eta']:g} c={r['cost']:g} seed {r['seed']}: "
                  f"{r['status']}: {r['note'][:120]}")
    print("\n== the paper's claims on these traces (COMPASS = compass-repaired; literal COMPASS aborts, above) ==\n")
    print("\n".join(claims(rows, main_cells)))
    print("\n" + "\n".join(afr_bound(rows)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workers", type=int, default=2, help="processes (default %(default)s)")
    ap.add_argument("--seeds", type=int, default=5, help="trace seeds 0..S-1 per profile (default %(default)s)")
    ap.add_argument("--scale", type=float, default=1.0, help="offered GPU demand × PAPER_GPUS (default %(default)s)")
    ap.add_argument("--quick", action="store_true", help="2 seeds, costs 1,10 on one seed")
    ap.add_argument("--schedulers", default=None, help="default: every registered scheduler")
    ap.add_argument("--costs", default="1,4,10", help="§6.5 per-migration costs in s besides 8 (default %(default)s)")
    ap.add_argument("--cost-seeds", type=int, default=3, help="seeds of the §6.5 sweep (default %(default)s)")
    ap.add_argument("--out", default="paper_eval_out", help="folder for results.jsonl (default %(default)s)")
    ap.add_argument("--figures", default=None, help="folder for the figures (default: --out)")
    ap.add_argument("--replay", default=None, help="a results.jsonl: reprint and redraw, run nothing")
    ap.add_argument("--openb", default=None, help="also replay this openb_pod_list CSV at η = 0.9")
    a = ap.parse_args()
    if a.quick:
        a.seeds, a.costs, a.cost_seeds = 2, "1,10", 1
    costs = [float(x) for x in a.costs.split(",") if x]
    main_cells, sweep_cells = plan(a.seeds, a.cost_seeds, costs)
    out = Path(a.out)
    figures = Path(a.figures) if a.figures else out
    t_start = time.perf_counter()
    if a.replay:
        results = Path(a.replay)
        rows = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
        case_path = results.with_name("case_series.json")
        case = json.loads(case_path.read_text()) if case_path.is_file() else {}
        print_report(rows, main_cells, [c for c in sweep_cells if any(r["cost"] == c.cost for r in rows)])
        for fig in render(rows, case, figures, costs):
            print(f"figure {fig}")
        return
    out.mkdir(parents=True, exist_ok=True)
    if a.schedulers:
        schedulers = a.schedulers.split(",")
    else:
        schedulers, skipped = default_schedulers({})
        for name, why in skipped:
            print(f"skipped {name}: {why}")
    times: list[tuple[str, float, float]] = []
    traces = {(p, s): paper_trace(p, s, a.scale) for p in {c.profile for c in main_cells} for s in range(a.seeds)}
    print(f"traces (scale {a.scale:g}): per-instance shares 1-GPU / FF / FUF / 8-GPU, realised mean over seeds "
          "(Table 1 / Table 2 targets in brackets)")
    for prof in PROFILES:
        sh = [instance_shares(traces[prof, s].jobs) for s in range(a.seeds)]
        shares = " / ".join(f"{100 * sum(x[k] for x in sh) / len(sh):.2f}" for k in range(4))
        want = " / ".join(f"{100 * v / sum(PROFILES[prof].shares):.2f}" for v in PROFILES[prof].shares)
        wide = sum(sum(1 for j in traces[prof, s].jobs if j.g == 8 and j.w > 30) for s in range(a.seeds)) / a.seeds
        print(f"  {prof:<12} {len(traces[prof, 0])} jobs, {shares}  [{want}]  g = 8 & w > 30: {wide:.1f} jobs per trace")
    w0, c0 = time.perf_counter(), _cpu()
    sink = (out / "results.jsonl").open("w", encoding="utf-8")
    rows, series = run_cells(((c, s, traces[c.profile, s], schedulers) for c in main_cells for s in range(a.seeds)),
                             a.workers, keep_series=CASE, sink=sink)
    times.append(("§6.1-6.3 runs", time.perf_counter() - w0, _cpu() - c0))
    migrating = sorted({r["scheduler"] for r in rows if r["eta"] == 0.9 and r["migrations_per_job"] > 0})
    print(f"§6.5 sweep for the schedulers that migrated: {', '.join(migrating)}", file=sys.stderr)
    w0, c0 = time.perf_counter(), _cpu()
    sweep_rows, _ = run_cells(((c, s, traces[c.profile, s], migrating) for c in sweep_cells
                               for s in range(min(a.cost_seeds, a.seeds))), a.workers, sink=sink)
    sink.close()
    times.append(("§6.5 runs", time.perf_counter() - w0, _cpu() - c0))
    rows += sweep_rows
    case_row = next((r for r in rows if (r["profile"], r["eta"], r["seed"]) == CASE), None)
    case = trim_case({"profile": CASE[0], "eta": CASE[1], "seed": CASE[2], "series": series,
                      "n_nodes": case_row["n_nodes"] if case_row else 0}) if series else {}
    (out / "case_series.json").write_text(json.dumps(case))
    print_report(rows, main_cells, sweep_cells)
    for fig in render(rows, case, figures, costs):
        print(f"figure {fig}")
    if a.openb:
        openb = load_trace(a.openb, "openb")
        print(f"\n== {a.openb}, η = 0.9, c = 8 s ==\n{openb.report.summary()}")
        w0, c0 = time.perf_counter(), _cpu()
        cell = Cell("openb", 0.9, 8.0)
        real_rows, _ = run_cells([(cell, 0, openb, schedulers)], a.workers)
        times.append(("openb runs", time.perf_counter() - w0, _cpu() - c0))
        print("\n".join(cell_table(real_rows, cell)))
    print(f"\n{'part':<16}{'wall s':>9}{'cpu s':>9}")
    for name, wall, cpu in times:
        print(f"{name:<16}{wall:>9.1f}{cpu:>9.1f}")
    print(f"total wall time {time.perf_counter() - t_start:.1f} s with {a.workers} worker(s); CPU {_cpu():.1f} s")


if __name__ == "__main__":
    main()
