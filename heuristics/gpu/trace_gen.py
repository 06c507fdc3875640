"""The small deterministic trace shipped in the package, so the simulator runs with no download.

Shaped like the published GFS shares (TRACES.md): per-instance demand g = 1: 67.5 %, 2: 4.9 %,
4: 3.9 %, 8: 13.1 % of all GFS jobs, renormalised over the integer-demand jobs the paper keeps
(§5.2; the remaining 10.6 % of GFS jobs are fractional). Deliberate deviation: 3/5/6/7-GPU jobs get
1 % together instead of 0.08 % so that a few thousand jobs contain some of them (≈ 30) and the
fragmentation-unfriendly paths of COMPASS are exercised. Width w = 1: 91.6 %, 2: 2.8 %, 4: 1.1 %
as published; the remaining 4.5 % go to 3, 8, 16 and 32 (the published max, 332, is out of scale
for a cluster of a few dozen nodes).

Arrivals: a Poisson process whose rate follows a day/night sine (± 60 %), by thinning, so that the
trace has peak periods. Durations: log-normal (median 20 min, σ = 1.8: heavy right tail), clipped
to [10 s, 2 days], rounded to whole seconds as are submit times, so the CSV is exact.

Only ``random.Random.random`` is used (its output is fixed across Python versions), and the
transforms are written out here, so the same seed gives byte-identical CSV.
``python -m heuristics.gpu.trace_gen`` rewrites ``heuristics/gpu/data/builtin_trace.csv``.
"""
from __future__ import annotations

import math
import random
import sys
from pathlib import Path

from heuristics.gpu.trace import Trace, TraceJob
from heuristics.gpu.trace_loaders import SIMPLE_COLUMNS, load_simple_csv

BUILTIN_PATH = Path(__file__).parent / "data" / "builtin_trace.csv"
BUILTIN_SEED = 20240607
BUILTIN_JOBS = 3000
BUILTIN_DAYS = 1.5

G_SHARES = {1: 67.5, 2: 4.9, 4: 3.9, 8: 13.1, 3: 0.25, 5: 0.25, 6: 0.25, 7: 0.25}
W_SHARES = {1: 91.6, 2: 2.8, 4: 1.1, 3: 1.5, 8: 1.5, 16: 1.0, 32: 0.5}
DAY = 86400.0
DIURNAL_AMPLITUDE = 0.6
MEDIAN_DURATION = 1200.0
SIGMA_DURATION = 1.8
MIN_DURATION, MAX_DURATION = 10.0, 2 * DAY


def _pick(rng: random.Random, shares: dict[int, float]) -> int:
    u = rng.random() * sum(shares.values())
    for value, share in shares.items():
        u -= share
        if u < 0:
            return value
    return value  # u landed on the rounding residue at the top end


def _normal(rng: random.Random) -> float:
    """Box–Muller; 1 − random() lies in (0, 1], so the log is finite."""
    return math.sqrt(-2.0 * math.log(1.0 - rng.random())) * math.cos(2.0 * math.pi * rng.random())


def _arrivals(rng: random.Random, n_jobs: int, days: float) -> list[float]:
    """``n_jobs`` arrival times of a diurnally modulated Poisson process (thinning), mean rate
    n_jobs / (days · 86,400 s); times beyond ``days`` are kept, so exactly n_jobs arrive."""
    peak_rate = n_jobs / (days * DAY) * (1 + DIURNAL_AMPLITUDE)
    times: list[float] = []
    t = 0.0
    while len(times) < n_jobs:
        t -= math.log(1.0 - rng.random()) / peak_rate
        accept = (1 + DIURNAL_AMPLITUDE * math.sin(2 * math.pi * t / DAY)) / (1 + DIURNAL_AMPLITUDE)
        if rng.random() < accept:
            times.append(float(round(t)))
    return times


def generate_jobs(n_jobs: int = BUILTIN_JOBS, days: float = BUILTIN_DAYS, seed: int = BUILTIN_SEED) -> tuple[TraceJob, ...]:
    """The generated jobs, ids 0..n_jobs-1 in submit order, first submit rebased to 0."""
    rng = random.Random(seed)
    arrivals = _arrivals(rng, n_jobs, days)
    jobs = []
    for i, t in enumerate(arrivals):
        g, w = _pick(rng, G_SHARES), _pick(rng, W_SHARES)
        d = MEDIAN_DURATION * math.exp(SIGMA_DURATION * _normal(rng))
        jobs.append(TraceJob(i, t - arrivals[0], float(round(min(max(d, MIN_DURATION), MAX_DURATION))), g, w))
    return tuple(jobs)


def _num(x: float) -> str:
    """Exact text of ``x``: an integer when whole, else the shortest round-tripping repr."""
    return str(int(x)) if x == int(x) else repr(x)


def render_simple_csv(jobs: tuple[TraceJob, ...]) -> str:
    """Jobs in the simple CSV format (``load_simple_csv``); times as integer seconds when whole."""
    lines = [",".join(SIMPLE_COLUMNS)]
    lines += [f"{j.id},{_num(j.submit)},{_num(j.duration)},{j.g},{j.w}" for j in jobs]
    return "\n".join(lines) + "\n"


def write_simple_csv(jobs: tuple[TraceJob, ...], path: str | Path) -> None:
    Path(path).write_text(render_simple_csv(jobs), encoding="utf-8", newline="\n")


def load_builtin() -> Trace:
    """The shipped generated trace (``heuristics/gpu/data/builtin_trace.csv``)."""
    return load_simple_csv(BUILTIN_PATH)


def main() -> None:
    """Regenerate the shipped file (deterministic: same content every time)."""
    write_simple_csv(generate_jobs(), BUILTIN_PATH)
    print(load_builtin().report.summary(), file=sys.stderr)


if __name__ == "__main__":
    main()
