"""CAFGD (seeds/000 §5.4, ref. [24]: Lao et al., ICDCS'25) as a whole-GPU, non-migrating baseline.

What seeds/000 says of it, all of it:

* §1: FGD defines a workload-distribution-aware fragmentation score, "while CAFGD refines this
  idea by weighting long-term and short-term distributions"; "FGD and CAFGD greedily optimize
  their fragmentation metrics at first admission time";
* §8: "CAFGD decomposed the demand probability into weighted long-term and short-term
  distributions";
* §5.4: "combines its lifecycle-aware fragmentation measure with a wait-for-peak admission policy".

The CAFGD paper itself could not be consulted (no public text was found); the readings below are
ours and docs/baselines_cafgd_mcg.md lists them with the alternatives.

1. **Measure and placement** are FGD's (``heuristics.gpu.baselines``: F(f) = f·Σ_{m>f} p_m per node
   of f free GPUs; each instance goes to the node of least ΔF, ties: fewer free GPUs, then lowest
   index), with the demand distribution

       p = α·p_long + (1 − α)·p_short          (α = ``long_weight``, default 0.5).

2. **p_short, p_long** are the per-instance demand shares (a job counts as w instances of g) of
   the jobs *submitted* within the last ``short_window`` / ``long_window`` seconds (defaults: one
   hour / the whole run). The simulator reports submissions through ``observe_submission(now,
   job)`` and the time through ``tick(now)``. A window holding no job — and both windows when no
   one reports submissions (``verify``, the state machine) — stands in FGD's current distribution:
   the running instances plus the arriving job.

3. **Wait-for-peak admission.** A job that fits is *held* (refused; state unchanged) when its
   placement's fragmentation gradient per GPU, ΣΔF / (g·w) along the instances FGD would place,
   exceeds ``hold_threshold`` (default 1: the placement would make, in expectation, more GPUs
   unusable than it uses), provided that some job is running (a departure will release capacity:
   the peak of free capacity the job waits for) and that it has waited less than ``max_hold``
   seconds since its submission (default 600 s). The simulator tries a waiting job again after
   the cluster changes. A job is never held on an idle cluster, so no run gets stuck. Without a
   clock (no ``tick``: ``verify``) every job counts as just submitted, so holding depends on the
   placement alone and ``state_key`` (the placement) stays the whole decision state.

Ties (``ties``, issue 13) are FGD's: every node of least ΔF for each instance (``NodeRulePolicy``).
The hold test reads the gradient along the default choices (``greedy_gradient``), as COMPASS's
repaired reserve does: the threshold is part of the admission rule, not of a placement.

The windows, the clock and the submission times are inputs from the simulator, not part of
``state_key``: like FFT's and DRR's round clock (``heuristics.gpu.repack_baselines``), they make
the simulated scheduler differ from the explored one only through ``tick``/``observe_submission``.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Sequence

from heuristics.gpu.baselines import NodeRulePolicy, greedy_gradient
from heuristics.gpu.cluster import Job, check_job_shape
from heuristics.gpu.policy import EventResult

DEFAULT_LONG_WEIGHT = 0.5
DEFAULT_SHORT_WINDOW = 3600.0
DEFAULT_LONG_WINDOW = math.inf
DEFAULT_HOLD_THRESHOLD = 1.0
DEFAULT_MAX_HOLD = 600.0


class DemandWindow:
    """Per-instance demand counts of the jobs submitted in the last ``length`` seconds."""

    def __init__(self, length: float, capacity: int) -> None:
        self.length = length
        self.counts = [0] * capacity  # instances per demand g (index g-1)
        self._jobs: deque[tuple[float, Job]] = deque()

    def add(self, now: float, job: Job) -> None:
        self._jobs.append((now, job))
        self.counts[job.g - 1] += job.w
        self.advance(now)

    def advance(self, now: float) -> None:
        """Forget the jobs submitted ``length`` seconds or more before ``now``."""
        while self._jobs and self._jobs[0][0] <= now - self.length:
            _, job = self._jobs.popleft()
            self.counts[job.g - 1] -= job.w

    def shares(self) -> list[float] | None:
        """The demand distribution of the window (None when it holds no job)."""
        total = sum(self.counts)
        return [c / total for c in self.counts] if total else None

    def copy(self) -> DemandWindow:
        other = DemandWindow(self.length, len(self.counts))
        other.counts = list(self.counts)
        other._jobs = deque(self._jobs)
        return other


class CAFGD(NodeRulePolicy):
    """FGD over a long/short-window demand mix, with wait-for-peak holding (module docstring)."""

    def __init__(self, n_nodes: int, capacity: int = 8, long_weight: float = DEFAULT_LONG_WEIGHT,
                 short_window: float = DEFAULT_SHORT_WINDOW, long_window: float = DEFAULT_LONG_WINDOW,
                 hold_threshold: float = DEFAULT_HOLD_THRESHOLD, max_hold: float = DEFAULT_MAX_HOLD) -> None:
        if not 0 <= long_weight <= 1:
            raise ValueError(f"long_weight={long_weight} must be in [0, 1]")
        if not (short_window > 0 and long_window > 0):
            raise ValueError(f"windows must be > 0, got short_window={short_window}, long_window={long_window}")
        if math.isnan(hold_threshold) or not max_hold >= 0:
            raise ValueError(f"hold_threshold={hold_threshold} must be a number, max_hold={max_hold} >= 0")
        super().__init__("fgd", n_nodes, capacity)
        self.name = "cafgd"
        self.options = (long_weight, short_window, long_window, hold_threshold, max_hold)
        self.long_weight = long_weight
        self.hold_threshold = hold_threshold
        self.max_hold = max_hold
        self._short = DemandWindow(short_window, capacity)
        self._long = DemandWindow(long_window, capacity)
        self._now: float | None = None
        self._submitted: dict[int, float] = {}  # submission time of each job not yet admitted

    # -- simulator inputs ---------------------------------------------------------------------
    def tick(self, now: float) -> EventResult:
        """Advance the clock (no migrations: CAFGD never moves a running job)."""
        if self._now is not None and now < self._now:
            raise ValueError(f"time went backwards: tick({now}) after tick({self._now})")
        self._now = now
        self._short.advance(now)
        self._long.advance(now)
        return EventResult.applied()

    def observe_submission(self, now: float, job: Job) -> None:
        """Record a submitted job in both demand windows and remember when it was submitted."""
        self._short.add(now, job)
        self._long.add(now, job)
        self._submitted[job.id] = now

    # -- Policy protocol ------------------------------------------------------------------------
    def arrive(self, job: Job) -> EventResult:
        check_job_shape(job.g, job.w, self.capacity)
        if job.id not in self._jobs and self._room(job.g) >= job.w:
            held = self._hold_reason(job)
            if held:
                return EventResult.refused(held)
        res = super().arrive(job)
        if res.ok:
            self._submitted.pop(job.id, None)
        return res

    def clone(self) -> CAFGD:
        """A copy with the same placement, options, windows, clock and waiting jobs."""
        other = self.with_state(self.placement())
        assert isinstance(other, CAFGD)
        other._short, other._long = self._short.copy(), self._long.copy()
        other._now, other._submitted = self._now, dict(self._submitted)
        return other

    # -- internals ------------------------------------------------------------------------------
    def _fresh(self) -> CAFGD:
        return CAFGD(self.n_nodes, self.capacity, *self.options)

    def _dist(self, job: Job) -> Sequence[float]:
        current = super()._dist(job)
        long, short = self._long.shares() or current, self._short.shares() or current
        a = self.long_weight
        return [a * pl + (1 - a) * ps for pl, ps in zip(long, short)]

    def _hold_reason(self, job: Job) -> str:
        """Why ``job`` waits for a better moment (empty: admit it now)."""
        if not self._jobs:
            return ""
        waited = 0.0 if self._now is None else self._now - self._submitted.get(job.id, self._now)
        if waited >= self.max_hold:
            return ""
        gradient = greedy_gradient(self.class_levels(), job.g, job.w, self._rule, self._dist(job))
        assert gradient is not None, "called only when the job fits"
        per_gpu = gradient / (job.g * job.w)
        if per_gpu <= self.hold_threshold:
            return ""
        return (f"job {job.id} ({job.w}x{job.g}) held: its placement would strand {per_gpu:.3f} GPUs per GPU "
                f"used (> {self.hold_threshold}); waited {waited:g} s of {self.max_hold:g} s")
