"""Every figure of the README, rendered into ``docs/figures/`` by one command (issue 25).

    python benchmarks/render_figures.py [--out docs/figures] [--ring-seeds 3]

What it draws, and from what (PNG at 200 dpi with an SVG beside each, ``proofs_check.figstyle``):

* ``paper_6_1`` … ``paper_6_6``: the paper's evaluation (seeds/000 §6.1–6.3, §6.5, §6.6) from the
  saved runs of ``python benchmarks/paper_eval.py --out docs/figures/data/paper_eval`` (its
  ``results.jsonl`` and ``case_series.json``; ``paper_eval.py --replay`` draws them, nothing is
  re-simulated here — rerun paper_eval to refresh them).
* ``ring_<metric>``: RingStitch and its five baselines (seed 004 §V), ``ringsim --workloads
  A,B,C,D --loads 0.6,0.8,0.95 --seeds S`` (run here; S = ``--ring-seeds``).
* ``fill_openb``: fill-until-full on the openb cluster (``simulate … --mode fill --until 1.2
  --plot``, run here on ``data/openb``).
* ``cx_thm1_slotted``, ``cx_thm2_gpu_sif``: counterexample pictures (``verify --claim … --json``
  then ``verify --replay … --plot``, run here).

Progress on stderr; the files written on stdout.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OPENB = ROOT / "data" / "openb"


def step(what: str, argv: list[str], ok: tuple[int, ...] = (0,)) -> None:
    """Run one command (a console script or this interpreter), echoing it; exit codes in ``ok``."""
    print(f"[{time.strftime('%H:%M:%S')}] {what}: {' '.join(argv)}", file=sys.stderr, flush=True)
    rc = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL).returncode
    if rc not in ok:
        raise SystemExit(f"{what}: exit {rc}")


def copy_pair(src: Path, dst: Path) -> list[Path]:
    """Copy a PNG and the SVG beside it."""
    out = []
    for suffix in (".png", ".svg"):
        shutil.copyfile(src.with_suffix(suffix), dst.with_suffix(suffix))
        out.append(dst.with_suffix(suffix))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "figures"), help="folder (default %(default)s)")
    ap.add_argument("--ring-seeds", type=int, default=3, help="ringsim seeds (default %(default)s)")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="render_figures_"))
    py = sys.executable
    written: list[Path] = []

    results = out / "data" / "paper_eval" / "results.jsonl"
    if results.is_file():
        step("paper evaluation figures", [py, "benchmarks/paper_eval.py", "--replay", str(results), "--figures", str(out)])
        written += sorted(out.glob("paper_6_*.*"))
    else:
        print(f"no {results}: run python benchmarks/paper_eval.py --out {results.parent} first", file=sys.stderr)

    ring = tmp / "ring"
    step("RingStitch sweep", ["ringsim", "--workloads", "A,B,C,D", "--loads", "0.6,0.8,0.95", "--seeds",
                              str(a.ring_seeds), "--workers", "2", "--out", str(ring)])
    for png in sorted(ring.glob("*.png")):
        written += copy_pair(png, out / f"ring_{png.stem}.png")

    fill = tmp / "fill"
    step("fill-until-full on openb", ["simulate", str(OPENB / "openb_pod_list_default.csv"), "--format", "openb",
                                      "--mode", "fill", "--nodes-file", str(OPENB / "openb_node_list_gpu_node.csv"),
                                      "--until", "1.2", "--out", str(fill), "--plot"])
    written += copy_pair(fill / "fill.png", out / "fill_openb.png")

    for claim, extra, name in (("thm1.slotted", ["--max-nodes", "2"], "cx_thm1_slotted"),
                               ("thm2.gpu-sif", ["--panels", "2"], "cx_thm2_gpu_sif")):
        rec, figs = tmp / f"{name}.json", tmp / name
        step(f"counterexample {claim}", ["verify", "--claim", claim, *extra, "--json", str(rec), "--quiet"], ok=(1,))
        step(f"picture of {claim}", ["verify", "--replay", str(rec), "--plot", str(figs)], ok=(1,))
        written += copy_pair(sorted(figs.glob("*.png"))[0], out / f"{name}.png")
    shutil.rmtree(tmp, ignore_errors=True)
    for p in written:
        print(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
