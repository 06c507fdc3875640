"""Run metrics of a simulation, exactly as seeds/000 §5.3 defines them, plus peer-simulator extras.

Every time average is an integral of the piecewise-constant series recorded by
``heuristics.gpu.simulator`` (sample i holds on [t_i, t_{i+1})), divided by the length of the period.

* Peak period, eq. (14): T_peak = {t | Q(t) ≠ ∅}, the times the wait queue is non-empty.
* AFR, eq. (16): (1/|T_peak|) ∫_{T_peak} SIF(t) dt with SIF = (Φπ − Φ★)/N and the exact Φ★.
* AGU, eq. (17): (1/|T_peak|) ∫_{T_peak} GU(t) dt, GU = used GPUs / (N·G) — on a mixed cluster
  used GPUs / the real GPU total Σ_n c_n (``SimConfig.gpus``). SIF divides by N, every node.
* AJCT, eq. (15): mean over all M jobs of C_i = queueing + running + migration delay.

Extras: mean queueing delay, migrations (instance moves) per job, time-averaged partial nodes and
fully empty nodes over the whole horizon [first arrival, last event], the largest N·SIF seen,
fragmentation-induced blocking time (head of line waiting while the idle GPUs ≥ its total demand
g·w, §6.6) and its share of the peak period, and the WCC coverage ρ (§6.4: share of the horizon
during which WCC holds on the running instances).

Nothing divides by zero silently: a metric whose period is empty or whose inputs are missing
(an unfinished job, an unknown Φ★) is NaN and ``notes`` says why.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

from heuristics.gpu.simulator import SimResult


@dataclass(frozen=True)
class RunMetrics:
    afr: float
    ajct: float
    agu: float
    peak_time: float
    horizon: float
    mean_queueing: float
    migrations_per_job: float
    mean_migration_delay: float
    mean_partial: float
    mean_empty: float
    max_nsif: float
    frag_blocking_time: float
    frag_blocking_share: float
    wcc_coverage: float
    jobs: int
    unfinished: int
    notes: tuple[str, ...] = ()

    def as_row(self) -> dict[str, object]:
        row = asdict(self)
        row["notes"] = "; ".join(self.notes)
        return row


def _ratio(num: float, den: float, what: str, notes: list[str]) -> float:
    if den <= 0:
        notes.append(f"{what}: empty period, undefined")
        return math.nan
    return num / den


def _integral(t: Sequence[float], values: Sequence[float], mask: Sequence[int] | None = None) -> float:
    total = 0.0
    for i in range(len(t) - 1):
        dt = t[i + 1] - t[i]
        if dt > 0 and (mask is None or mask[i]):
            total += dt * values[i]
    return total


def compute_metrics(result: SimResult) -> RunMetrics:
    """All metrics of one run (see the module docstring)."""
    s, cfg = result.series, result.config
    n, gpus = cfg.n_nodes, cfg.gpus
    notes: list[str] = []
    if result.status != "complete":
        notes.append(f"run {result.status}: {result.note}")

    ones = [1] * len(s.t)
    peak = [int(q > 0) for q in s.queue_len]
    horizon = s.t[-1] - s.t[0] if s.t else 0.0
    peak_time = _integral(s.t, ones, peak)
    if peak_time <= 0:
        notes.append("peak period empty (the queue was never non-empty): AFR and AGU undefined")

    sif = [(p - f) / n for p, f in zip(s.partial, s.phi_star)]
    afr_num = _integral(s.t, sif, peak)
    if math.isnan(afr_num) and peak_time > 0:
        notes.append("Φ★ unknown (or not computed) during the peak period: AFR undefined")
    agu_num = _integral(s.t, [u / gpus for u in s.used_gpus], peak)
    afr, agu = (afr_num / peak_time, agu_num / peak_time) if peak_time > 0 else (math.nan, math.nan)
    nsif = [p - f for p, f in zip(s.partial, s.phi_star) if not math.isnan(f)]

    finished = [j for j in result.jobs if not math.isnan(j.end)]
    started = [j for j in result.jobs if not math.isnan(j.start)]
    unfinished = len(result.jobs) - len(finished)
    if unfinished:
        notes.append(f"{unfinished} job(s) unfinished: AJCT undefined")
    ajct = math.nan if unfinished or not finished else sum(j.jct for j in finished) / len(finished)
    n_jobs = len(result.jobs)
    frag = _integral(s.t, s.hol_frag_blocked)
    return RunMetrics(
        afr=afr,
        ajct=ajct,
        agu=agu,
        peak_time=peak_time,
        horizon=horizon,
        mean_queueing=_ratio(sum(j.queueing for j in started), len(started), "mean queueing", notes),
        migrations_per_job=_ratio(sum(j.migrations for j in result.jobs), n_jobs, "migrations/job", notes),
        mean_migration_delay=_ratio(sum(j.migration_delay for j in result.jobs), n_jobs,
                                    "migration delay", notes),
        mean_partial=_ratio(_integral(s.t, s.partial), horizon, "mean partial nodes", notes),
        mean_empty=_ratio(_integral(s.t, s.empty), horizon, "mean empty nodes", notes),
        max_nsif=max(nsif) if nsif else math.nan,
        frag_blocking_time=frag,
        frag_blocking_share=frag / peak_time if peak_time > 0 else math.nan,
        wcc_coverage=_ratio(_integral(s.t, s.wcc), horizon, "WCC coverage", notes),
        jobs=n_jobs,
        unfinished=unfinished,
        notes=tuple(notes),
    )
