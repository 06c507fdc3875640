"""Time-series plots of ``simulate`` results, like COMPASS-ABS (arXiv:2609.18519v1) Fig. 5–7 (§6.6 case study).

For every sweep point (η, migration cost, day) of a results folder written by ``simulate --out``,
three PNGs with one step line per scheduler: N·SIF (avoidable partial nodes, Fig. 5), GPU
utilisation (Fig. 6) and fully empty nodes (Fig. 7). A separate step from the simulation: it only
reads ``summary.csv`` and ``series/*.csv``.

Usage: ``simulate-plot DIR [--t0 SECONDS] [--t1 SECONDS]`` (a time window, like the paper's
21:00–22:30 zoom), or ``simulate ... --out DIR --plot``.
"""
from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from proofs_check import figstyle
from proofs_check.cli.common import EXIT_OK, make_parser, output_dir, replace_output, run, usage_on

PROG = "simulate-plot"

PANELS = (("n_sif", "N·SIF (avoidable partial nodes)", "nsif"),
          ("utilisation", "GPU utilisation (fraction of the cluster's GPUs)", "util"),
          ("empty", "fully empty nodes (count)", "empty"))


def nested_widths(n: int) -> list[float]:
    """Line widths for ``n`` overlaid series, widest drawn first: where series are equal, each
    stays visible as a band around the next (with ``figstyle`` dashes and colours)."""
    return [0.8 + 2.4 * (n - 1 - i) / max(1, n - 1) for i in range(n)]


def window_suffix(t0: float | None, t1: float | None) -> str:
    """File-name suffix of a time window ('' for the whole run): a zoom never overwrites it."""
    if t0 is None and t1 is None:
        return ""
    return f"_t{'start' if t0 is None else f'{t0:g}'}-{'end' if t1 is None else f'{t1:g}'}"


def save_figure(fig: Any, path: Path) -> Path:
    """``proofs_check.figstyle.save_figure`` (PNG at 200 dpi and an SVG beside it, atomically, the
    layout already set by the caller); a failure is OutputError (one line, exit 2)."""
    return figstyle.save_figure(fig, path, replace_output, bbox_inches="tight")


def _read_series(path: Path, t0: float | None, t1: float | None) -> dict[str, list[float]]:
    cols: dict[str, list[float]] = defaultdict(list)
    with path.open() as f:
        for row in csv.DictReader(f):
            t = float(row["t"])
            if (t0 is not None and t < t0) or (t1 is not None and t > t1):
                continue
            for k, v in row.items():
                cols[k].append(float(v))
    return cols


def plot_folder(folder: str | Path, t0: float | None = None, t1: float | None = None) -> list[Path]:
    """Draw the PNGs of every sweep point of ``folder``; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    summary = folder / "summary.csv"
    if not summary.is_file():
        raise FileNotFoundError(f"{summary}: no such file (run simulate --out {folder} first)")
    groups: dict[tuple[str, str, str], list[dict[str, str]]] = defaultdict(list)
    with summary.open() as f:
        for row in csv.DictReader(f):
            groups[(row["eta"], row["migration_cost"], row["day"] or "all")].append(row)
    written: list[Path] = []
    out_dir = folder / "plots"
    output_dir(out_dir)
    names = sorted({r["scheduler"] for rows in groups.values() for r in rows})
    st, widths = figstyle.styles(names), dict(zip(names, nested_widths(len(names))))
    span = ("whole run" if t0 is None and t1 is None else
            f"window [{'start' if t0 is None else f'{t0:,.0f} s'}, {'end' if t1 is None else f'{t1:,.0f} s'}]")
    for (eta, cost, day), rows in sorted(groups.items()):
        series = {r["scheduler"]: _read_series(folder / "series" / f"{r['run']}.csv", t0, t1) for r in rows}
        for column, label, short in PANELS:
            fig, ax = plt.subplots(figsize=(9, 4))
            for name in names:
                cols = series.get(name)
                if cols and cols["t"]:
                    ax.step([t / 3600 for t in cols["t"]], cols[column], where="post", label=name,
                            lw=widths[name], color=st[name].color, linestyle=st[name].linestyle)
            ax.set_xlabel("simulated time (h)")
            ax.set_ylabel(label, fontsize=8)
            ax.grid(lw=0.3)
            ax.set_title(f"{label.split(' (')[0]} per scheduler — η = {eta}, c = {cost} s, day {day}, "
                         f"N = {rows[0]['n_nodes']}, {span}", fontsize=9)
            ax.legend(fontsize=7, ncol=min(4, len(names)), loc="upper center", bbox_to_anchor=(0.5, -0.18),
                      frameon=False)
            fig.tight_layout()
            written.append(save_figure(fig, out_dir / f"eta{eta}_c{cost}_{day}_{short}{window_suffix(t0, t1)}.png"))
    return written


def plot_fill(folder: str | Path) -> Path:
    """The FGD paper's fill-until-full figure from ``simulate --mode fill --out DIR``: unallocated
    share of GPUs against the share requested, one line per scheduler, the exact bound as markers.
    One panel per denominator (the whole cluster; the 8-GPU partition hierarchical COMPASS runs on), each
    zoomed to where its curves part: from 5 points before the first failed pod to the end; equal
    curves stay visible as nested bands (``nested_widths``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    curves: dict[str, dict[str, tuple[list[float], list[float]]]] = defaultdict(dict)
    first_fail: dict[str, float] = {}
    with (folder / "fill_curve.csv").open() as f:
        for row in csv.DictReader(f):
            xs, ys = curves[row["cluster"]].setdefault(row["scheduler"], ([], []))
            xs.append(100 * float(row["requested_share"]))
            ys.append(100 * float(row["unallocated_share"]))
            if row["placed"] == "0":
                first_fail[row["cluster"]] = min(first_fail.get(row["cluster"], xs[-1]), xs[-1])
    bound: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    with (folder / "fill_bound.csv").open() as f:
        for row in csv.DictReader(f):
            if row["min_unallocated_share"]:
                bound[row["cluster"]][0].append(100 * float(row["requested_share"]))
                bound[row["cluster"]][1].append(100 * float(row["min_unallocated_share"]))
    clusters = sorted(curves, key=lambda c: -sum(len(xs) for xs, _ in curves[c].values()))
    meta_path = folder / "fill_summary.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    run = f"{Path(str(meta.get('trace', ''))).name}, order {meta.get('order', '?')}, seed {meta.get('seed', '?')}"
    names = sorted({s for c in curves.values() for s in c})
    st, widths = figstyle.styles(names), dict(zip(names, nested_widths(len(names))))
    fig, axes = plt.subplots(1, len(clusters), figsize=(6.2 * len(clusters), 4.4), squeeze=False)
    for ax, cluster in zip(axes[0], clusters):
        x_end = max(max(xs) for xs, _ in curves[cluster].values())
        x0 = max(0.0, first_fail.get(cluster, x_end) - 5)
        y_top = 0.0
        for name in names:
            if name in curves[cluster]:
                xs, ys = curves[cluster][name]
                ax.plot(xs, ys, lw=widths[name], color=st[name].color, linestyle=st[name].linestyle, label=name)
                y_top = max([y_top, *(y for x, y in zip(xs, ys) if x >= x0)])
        if cluster in bound:
            ax.plot(*bound[cluster], "o", color="black", ms=3, ls="none", label="exact bound (hindsight packing)")
        ax.set_xlim(x0, x_end + 0.5)
        ax.set_ylim(0, max(1.0, 1.05 * y_top))
        ax.set_xlabel(f"GPUs requested (% of {Path(cluster).name}'s GPUs)")
        ax.set_ylabel("GPUs unallocated (% of the same GPUs)", fontsize=8)
        ax.set_title(f"{Path(cluster).name}: from 5 points before its first failed pod", fontsize=9)
        ax.grid(lw=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3, frameon=False)
    fig.suptitle(f"fill-until-full (pods never leave) — {run}", fontsize=10)
    fig.tight_layout()
    return save_figure(fig, folder / "fill.png")


def _main(argv: Sequence[str] | None) -> int:
    p = make_parser(PROG, __doc__.split("\n")[0] if __doc__ else None)
    p.add_argument("folder", help="a results folder written by simulate --out DIR (reads summary.csv and series/*.csv;"
                                  " the PNGs go to DIR/plots)")
    p.add_argument("--t0", type=float, default=None, metavar="SECONDS",
                   help="start of the time window drawn, in seconds of simulated time (default: the run's start)")
    p.add_argument("--t1", type=float, default=None, metavar="SECONDS",
                   help="end of the time window drawn, in seconds of simulated time (default: the run's end); a window's "
                        "files get a _tT0-T1 suffix beside the whole run's, never over them")
    a = p.parse_args(argv)
    with usage_on(KeyError, ValueError, prefix=a.folder):  # a results folder not written by simulate
        for path in plot_folder(a.folder, a.t0, a.t1):
            print(path)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``simulate-plot``."""
    return run(PROG, lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
