"""A job trace as the simulator replays it, and the record of how it was loaded.

COMPASS-ABS §5.2–5.3 (seeds/000) replays jobs that "consist of homogeneous instances with identical
integer GPU demand": each job is a submit time, a duration and a shape (g, w). Loaders for the
public traces (``heuristics.gpu.trace_loaders``) reduce richer rows to this shape; whatever they drop
or alter is counted by reason in the ``LoadReport`` so nothing disappears silently.

Times are seconds relative to the first kept submit (the first job submits at 0.0).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from heuristics.gpu.cluster import Job


class TraceJob(NamedTuple):
    """One replayable job: ``w`` instances of ``g`` GPUs, submitted at ``submit``, running
    ``duration`` seconds once admitted (queueing and migration delays come on top)."""

    id: int
    submit: float
    duration: float
    g: int
    w: int

    @property
    def gpus(self) -> int:
        """G_j = W_j · g_j of eq. (12)."""
        return self.g * self.w

    def as_job(self) -> Job:
        return Job(self.id, self.g, self.w)


class TraceError(ValueError):
    """A trace file that cannot be read as its format says. The message is one line:
    ``<file>:<line>: field '<field>': <problem>`` (line 0 = the file itself: ``<file>: field …``)."""

    def __init__(self, path: str, line: int, field_name: str, problem: str) -> None:
        self.path = str(path)
        self.line = line
        self.field = field_name
        self.problem = problem
        # one line whatever the file held (a quoted header or value may contain line breaks)
        text = f"{self.path if line == 0 else f'{self.path}:{line}'}: field '{field_name}': {problem}"
        super().__init__(text.replace("\r", "\\r").replace("\n", "\\n"))

    def __reduce__(self) -> tuple[type[TraceError], tuple[str, int, str, str]]:
        # Rebuild from the four parts, so the error survives a worker-process boundary.
        return TraceError, (self.path, self.line, self.field, self.problem)


@dataclass(frozen=True)
class LoadReport:
    """How a trace file became a ``Trace``.

    ``rows``: data rows read (header and blank lines excluded). ``kept``: jobs in the trace.
    ``dropped``/``altered``: reason -> number of jobs. ``jobs_read`` is the number of candidate
    jobs; it equals ``rows`` except for formats where several rows make one job (PAI 2020 tasks).
    Invariant: ``jobs_read == kept + sum(dropped.values())``.
    """

    source: str
    rows: int
    kept: int
    dropped: dict[str, int] = field(default_factory=dict)
    altered: dict[str, int] = field(default_factory=dict)
    jobs_read: int | None = None

    def __post_init__(self) -> None:
        if self.jobs_read is None:
            object.__setattr__(self, "jobs_read", self.rows)

    @property
    def n_dropped(self) -> int:
        return sum(self.dropped.values())

    @property
    def n_altered(self) -> int:
        return sum(self.altered.values())

    def summary(self) -> str:
        """Multi-line human-readable account of the load, reasons in descending count."""
        head = f"{self.source}: {self.rows} rows read"
        if self.jobs_read != self.rows:
            head += f" ({self.jobs_read} jobs)"
        lines = [f"{head}, {self.kept} jobs kept, {self.n_dropped} dropped, {self.n_altered} altered"]
        for label, counts in (("dropped", self.dropped), ("altered", self.altered)):
            for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
                lines.append(f"  {label:8s} {n:8d}  {reason}")
        return "\n".join(lines)


@dataclass(frozen=True)
class Trace:
    """A named, ordered job list plus the report of how it was obtained."""

    name: str
    jobs: tuple[TraceJob, ...]
    report: LoadReport

    def __post_init__(self) -> None:
        keys = [(j.submit, j.id) for j in self.jobs]
        if keys != sorted(keys):
            raise ValueError(f"trace {self.name!r}: jobs must be sorted by (submit, id)")
        if len({j.id for j in self.jobs}) != len(self.jobs):
            raise ValueError(f"trace {self.name!r}: duplicate job ids")

    def __len__(self) -> int:
        return len(self.jobs)

    @property
    def end(self) -> float:
        """Time the last job would finish if every job started at its submit time."""
        return max((j.submit + j.duration for j in self.jobs), default=0.0)


def rebased(jobs: list[TraceJob] | tuple[TraceJob, ...], origin: float) -> tuple[TraceJob, ...]:
    """``jobs`` with ``origin`` subtracted from every submit, sorted by (submit, id)."""
    return tuple(sorted((j._replace(submit=j.submit - origin) for j in jobs), key=lambda j: (j.submit, j.id)))
