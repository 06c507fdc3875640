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
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from proofs_check.cli.common import EXIT_OK, make_parser, output_dir, replace_output, run, usage_on

PROG = "simulate-plot"

PANELS = (("n_sif", "N·SIF (avoidable partial nodes)", "nsif"),
          ("utilisation", "GPU utilisation", "util"),
          ("empty", "fully empty nodes", "empty"))


def save_figure(fig: Any, path: Path) -> Path:
    """Lay out, write (PNG, 110 dpi, atomically: to a temporary .png beside ``path``, then renamed)
    and close a matplotlib figure; returns ``path``. A failure is OutputError (one line, exit 2)."""
    import matplotlib.pyplot as plt

    try:
        fig.tight_layout()
        replace_output(path, lambda tmp: fig.savefig(tmp, dpi=110))
    finally:
        plt.close(fig)
    return path


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
    for (eta, cost, day), rows in sorted(groups.items()):
        series = {r["scheduler"]: _read_series(folder / "series" / f"{r['run']}.csv", t0, t1) for r in rows}
        for column, label, short in PANELS:
            fig, ax = plt.subplots(figsize=(8, 3.5))
            for name, cols in series.items():
                if cols["t"]:
                    ax.step([t / 3600 for t in cols["t"]], cols[column], where="post", label=name, lw=1)
            ax.set_xlabel("time (h)")
            ax.set_ylabel(label)
            ax.set_title(f"{label} — η={eta}, c={cost}s, day {day}, N={rows[0]['n_nodes']}")
            ax.legend(fontsize=7, ncol=2)
            written.append(save_figure(fig, out_dir / f"eta{eta}_c{cost}_{day}_{short}.png"))
    return written


def plot_fill(folder: str | Path) -> Path:
    """The FGD paper's fill-until-full figure from ``simulate --mode fill --out DIR``: unallocated
    share of GPUs against the share requested, one line per scheduler, the exact bound as markers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    curves: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    with (folder / "fill_curve.csv").open() as f:
        for row in csv.DictReader(f):
            xs, ys = curves[row["scheduler"]]
            xs.append(100 * float(row["requested_share"]))
            ys.append(100 * float(row["unallocated_share"]))
    bound: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    with (folder / "fill_bound.csv").open() as f:
        for row in csv.DictReader(f):
            if row["min_unallocated_share"]:
                bound[row["cluster"]][0].append(100 * float(row["requested_share"]))
                bound[row["cluster"]][1].append(100 * float(row["min_unallocated_share"]))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    # Left: from half full (below, every scheduler places every pod: unallocated = 100 − requested);
    # right: the zoom around full, where the schedulers part (the FGD paper's figure).
    for ax, xlim, ylim in zip(axes, ((50, None), (95, 110)), ((0, 50), (0, 5))):
        for name, (xs, ys) in curves.items():
            ax.plot(xs, ys, lw=1, label=name)
        for marker, (cluster, (xs, ys)) in zip("ox^s", bound.items()):
            ax.plot(xs, ys, marker, color="black", ls="none", label=f"exact bound ({Path(cluster).name})")
        ax.set_xlim(*xlim)
        ax.set_ylim(*ylim)
        ax.set_xlabel("GPUs requested (% of the cluster's GPUs)")
        ax.set_ylabel("GPUs unallocated (%)")
    axes[0].legend(fontsize=7)
    return save_figure(fig, folder / "fill.png")


def _main(argv: Sequence[str] | None) -> int:
    p = make_parser(PROG, __doc__.split("\n")[0] if __doc__ else None)
    p.add_argument("folder", help="a results folder written by simulate --out DIR (reads summary.csv and series/*.csv;"
                                  " the PNGs go to DIR/plots)")
    p.add_argument("--t0", type=float, default=None, metavar="SECONDS",
                   help="start of the time window drawn, in seconds of simulated time (default: the run's start)")
    p.add_argument("--t1", type=float, default=None, metavar="SECONDS",
                   help="end of the time window drawn, in seconds of simulated time (default: the run's end)")
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
