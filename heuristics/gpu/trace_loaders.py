"""Loaders that turn public DLT trace files into ``Trace`` objects (COMPASS-ABS §5.2, TRACES.md).

The paper keeps "only the DLT jobs that consist of homogeneous instances with identical integer
GPU demand". Each loader states how it derives the instance shape (g, w) from its columns; every
row that does not yield such a job is *dropped* and counted by reason, every job whose shape or
timing had to be reconstructed is *altered* and counted by reason (``LoadReport``).

Errors versus drops (the same rule in every loader):

* ``TraceError`` (the file is not in the format): missing file, empty file, a column the loader
  needs absent from the header, a row with a different number of fields than the header, a
  required field empty, a number that does not parse, a negative or non-integral count (GPU count,
  node/worker/instance count, milli-GPU), a timestamp that does not parse.
* counted drop (a well-formed row describing a job outside the model): CPU-only, fractional GPU,
  g > 8 per instance, non-homogeneous instances, zero instances, pending / never started /
  unfinished, non-positive duration. When several reasons apply, the first in that order counts.

Only the columns a loader uses are required in the header; extra columns are ignored. Blank lines
are skipped (they are not rows). Job ids are reassigned 0..n-1 in (submit, file line) order,
because several formats use non-numeric names; times are seconds relative to the first kept submit.
"""
from __future__ import annotations

import csv
import math
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator, NamedTuple, Protocol

from heuristics.gpu.cluster import G_DEFAULT
from heuristics.gpu.trace import LoadReport, Trace, TraceError, TraceJob, rebased
from heuristics.limits import Size, limit, line_problem, message

# Drop reasons, in the order they are tested.
CPU_ONLY = "CPU-only"
FRACTIONAL = "fractional GPU"
G_TOO_BIG = f"g>{G_DEFAULT} per instance"
NON_HOMOGENEOUS = "non-homogeneous instances"
NO_INSTANCES = "zero instances"
UNSCHEDULED = "pending/never started"
UNFINISHED = "unfinished (no end time)"
NON_POSITIVE = "non-positive duration"
_SHAPE_ORDER = (CPU_ONLY, FRACTIONAL, G_TOO_BIG)
# Alteration reasons.
REGROUPED = f"GPUs regrouped into {G_DEFAULT}-GPU instances"
CPU_TASKS_IGNORED = "CPU-only tasks ignored"
TASKS_MERGED = "several GPU tasks merged into one gang"


class Row(NamedTuple):
    """One data row of a CSV file with its physical line number (1 = header)."""

    path: str
    line: int
    values: dict[str, str]

    def error(self, column: str, problem: str) -> TraceError:
        return TraceError(self.path, self.line, column, problem)

    def text(self, column: str, *, required: bool = True) -> str:
        v = self.values[column].strip()
        if required and not v:
            raise self.error(column, "empty")
        return v

    def number(self, column: str) -> float:
        v = self.text(column)
        try:
            x = float(v)
        except ValueError:
            raise self.error(column, f"not a number: {v!r}") from None
        if not math.isfinite(x):
            raise self.error(column, f"not a finite number: {v!r}")
        return x

    def optional_number(self, column: str) -> float | None:
        return self.number(column) if self.text(column, required=False) else None

    def count(self, column: str) -> int:
        """A non-negative integer, possibly written as a float (``"2.0"``)."""
        x = self.number(column)
        if x < 0 or x != int(x):
            raise self.error(column, f"not a non-negative integer: {self.values[column].strip()!r}")
        if x > limit(Size.INSTANCES):  # a count a run would allocate for (w, GPUs, nodes of a job)
            raise self.error(column, message(Size.INSTANCES, int(x)))
        return int(x)

    def identifier(self, column: str) -> int:
        """A non-negative integer id, read exactly: every digit kept (above 2⁵³ too, where a float
        would merge neighbouring ids into a false duplicate); ``"2.0"`` is read as 2."""
        v = self.text(column)
        if v.isascii() and v.isdigit():
            return int(v)
        x = self.number(column)
        if x < 0 or x != int(x) or x >= 2 ** 53:  # a float form above 2⁵³ has lost digits already
            raise self.error(column, f"not a non-negative integer: {v!r}")
        return int(x)

    def timestamp(self, column: str) -> float:
        """Seconds since the epoch of an ISO date-time (naive times are read as UTC)."""
        v = self.text(column)
        try:
            dt = datetime.fromisoformat(v)
        except ValueError:
            raise self.error(column, f"not a date-time: {v!r}") from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()


def read_rows(path: str | Path, columns: tuple[str, ...], *, headerless_ok: bool = False) -> Iterator[Row]:
    """Rows of a CSV file as dicts over ``columns``, checking the header and field counts.

    With ``headerless_ok`` a first line that shares no name with ``columns`` is read as data in
    the documented column order (the published PAI 2020 tables ship their header separately).
    """
    p = str(path)
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise TraceError(p, 0, "file", e.strerror or str(e)) from None
    with fh:
        reader = csv.reader(_decoded_lines(p, fh))
        try:
            yield from _checked_rows(p, reader, columns, headerless_ok)
        except csv.Error as e:
            raise TraceError(p, reader.line_num, "row", f"unreadable: {e}") from None


def _decoded_lines(path: str, fh: BinaryIO) -> Iterator[str]:
    """Lines decoded one at a time, so an encoding error names its own line (BOM tolerated); a
    line over the line limit (``--limit line=N``; a device like /dev/zero, a binary file) or a read
    error is a TraceError naming the line."""
    line = 0
    cap = limit(Size.LINE)
    while True:
        try:
            raw = fh.readline(cap + 1)
        except OSError as e:
            raise TraceError(path, line + 1, "file", f"cannot read: {e.strerror or e}") from None
        if not raw:
            return
        line += 1
        if len(raw) > cap:
            raise TraceError(path, line, "row", f"{line_problem()} (not a CSV trace?)")
        try:
            yield raw.decode("utf-8-sig" if line == 1 else "utf-8")
        except UnicodeDecodeError as e:
            raise TraceError(path, line, "row", f"not UTF-8 (byte {e.start})") from None


class _CsvReader(Protocol):
    """What the loaders use of a ``csv.reader``: its records and the line it has read up to."""

    @property
    def line_num(self) -> int: ...

    def __iter__(self) -> Iterator[list[str]]: ...

    def __next__(self) -> list[str]: ...


def _checked_rows(p: str, reader: _CsvReader, columns: tuple[str, ...], headerless_ok: bool) -> Iterator[Row]:
    records = _records(reader)
    first = next(records, None)
    if first is None:
        raise TraceError(p, 1, "header", "empty file")
    line, header = first
    names = [h.strip() for h in header]
    if headerless_ok and not set(names) & set(columns):
        names = list(columns)
        yield from _data_rows(p, names, [first])
    else:
        for c in columns:
            if c not in names:
                raise TraceError(p, line, c, f"missing from header (got: {','.join(names)})")
    yield from _data_rows(p, names, records)


def _records(reader: _CsvReader) -> Iterator[tuple[int, list[str]]]:
    """Non-blank CSV records with the line each *starts* on (a quoted field may span lines)."""
    while True:
        line = reader.line_num + 1
        rec = next(reader, None)
        if rec is None:
            return
        if any(f.strip() for f in rec):
            yield line, rec


def _data_rows(path: str, names: list[str], records: Iterable[tuple[int, list[str]]]) -> Iterator[Row]:
    for line, rec in records:
        if len(rec) != len(names):
            missing = names[len(rec)] if len(rec) < len(names) else "row"
            raise TraceError(path, line, missing, f"row has {len(rec)} fields, header has {len(names)}")
        yield Row(path, line, dict(zip(names, rec)))


class Candidate(NamedTuple):
    """A job read from a file, before rebasing and id assignment."""

    line: int
    submit: float
    duration: float
    g: int
    w: int


Outcome = Candidate | str  # a job, or the reason it was dropped


def _whole_gpus(gpus: float) -> int | str:
    """Per-instance GPU count ``gpus`` as an int, or the drop reason."""
    if gpus == 0:
        return CPU_ONLY
    if gpus != int(gpus):
        return FRACTIONAL
    if gpus > G_DEFAULT:
        return G_TOO_BIG
    return int(gpus)


def build_trace(path: str | Path, rows: int, outcomes: list[Outcome], altered: Counter[str]) -> Trace:
    """Count drops, rebase times on the first kept submit, assign ids in (submit, line) order."""
    kept = sorted((o for o in outcomes if isinstance(o, Candidate)), key=lambda c: (c.submit, c.line))
    dropped = Counter(o for o in outcomes if isinstance(o, str))
    origin = kept[0].submit if kept else 0.0
    jobs = rebased([TraceJob(i, c.submit, c.duration, c.g, c.w) for i, c in enumerate(kept)], origin)
    report = LoadReport(str(path), rows, len(kept), dict(dropped), dict(altered), jobs_read=len(outcomes))
    return Trace(Path(path).stem, jobs, report)


def _load_rowwise(path: str | Path, columns: tuple[str, ...],
                  convert: Callable[[Row, Counter[str]], Outcome]) -> Trace:
    altered: Counter[str] = Counter()
    outcomes = [convert(row, altered) for row in read_rows(path, columns)]
    return build_trace(path, len(outcomes), outcomes, altered)


# ---------------------------------------------------------------- Venus (Helios) cluster_log.csv
VENUS_COLUMNS = ("gpu_num", "node_num", "submit_time", "duration")


def venus_shape(gpu_num: int, node_num: int) -> tuple[int, int, bool] | str:
    """(g, w, altered) for a Venus job with ``gpu_num`` GPUs on ``node_num`` nodes, or a drop reason.

    1. gpu_num = 0 -> CPU-only; node_num = 0 -> zero instances.
    2. node_num divides gpu_num and gpu_num/node_num <= 8 -> g = gpu_num/node_num, w = node_num
       (one instance per node, the Slurm allocation as recorded).
    3. otherwise, gpu_num a multiple of 8 -> g = 8, w = gpu_num/8 (altered: the GPUs cannot be
       split evenly over node_num nodes of 8, or a node would need > 8; whole 8-GPU instances are
       the only homogeneous reading that fits 8-GPU nodes).
    4. otherwise: node_num divides gpu_num -> g > 8 per instance; else non-homogeneous.
    """
    if gpu_num == 0:
        return CPU_ONLY
    if node_num == 0:
        return NO_INSTANCES
    if gpu_num % node_num == 0 and gpu_num // node_num <= G_DEFAULT:
        return gpu_num // node_num, node_num, False
    if gpu_num % G_DEFAULT == 0:
        return G_DEFAULT, gpu_num // G_DEFAULT, True
    return G_TOO_BIG if gpu_num % node_num == 0 else NON_HOMOGENEOUS


def _venus_row(row: Row, altered: Counter[str]) -> Outcome:
    shape = venus_shape(row.count("gpu_num"), row.count("node_num"))
    submit = row.timestamp("submit_time")
    duration = row.optional_number("duration")
    if isinstance(shape, str):
        return shape
    if duration is None:
        return UNSCHEDULED
    if duration <= 0:
        return NON_POSITIVE
    g, w, regrouped = shape
    if regrouped:
        altered[REGROUPED] += 1
    return Candidate(row.line, submit, duration, g, w)


def load_venus(path: str | Path) -> Trace:
    """Venus ``cluster_log.csv`` (Helios, SC'21; also AcmeTrace Seren/Kalos, same columns).

    (g, w) from ``gpu_num`` and ``node_num`` by ``venus_shape``. Submit = ``submit_time`` (ISO
    date-time, naive = UTC); duration = ``duration`` seconds; an empty duration means the job never
    ran (dropped as pending/never started). Jobs of every ``state`` are kept: failed and cancelled
    jobs that ran still held their GPUs.
    """
    return _load_rowwise(path, VENUS_COLUMNS, _venus_row)


# ---------------------------------------------------------------- GFS job_info_df.csv
GFS_COLUMNS = ("gpu_request", "worker_num", "submit_time", "duration")


def _gfs_row(row: Row, altered: Counter[str]) -> Outcome:
    gpus = row.number("gpu_request")
    if gpus < 0:
        raise row.error("gpu_request", f"negative: {gpus}")
    w = row.count("worker_num")
    submit, duration = row.number("submit_time"), row.number("duration")
    g = _whole_gpus(gpus)
    if isinstance(g, str):
        return g
    if w == 0:
        return NO_INSTANCES
    if duration <= 0:
        return NON_POSITIVE
    return Candidate(row.line, submit, duration, g, w)


def load_gfs(path: str | Path) -> Trace:
    """GFS ``job_info_df.csv`` (Alibaba cluster-trace-v2026-spot-gpu).

    g = ``gpu_request`` (per instance; 0 -> CPU-only, non-integral -> fractional GPU, > 8 -> g>8),
    w = ``worker_num`` (0 -> zero instances). ``submit_time`` and ``duration`` in seconds; numbers
    may be written as floats.
    """
    return _load_rowwise(path, GFS_COLUMNS, _gfs_row)


# ---------------------------------------------------------------- PAI 2023 openb_pod_list_*.csv
OPENB_COLUMNS = ("num_gpu", "gpu_milli", "pod_phase", "creation_time", "deletion_time", "scheduled_time")


def _openb_row(row: Row, altered: Counter[str]) -> Outcome:
    num_gpu, milli = row.count("num_gpu"), row.count("gpu_milli")
    created, deleted = row.number("creation_time"), row.number("deletion_time")
    scheduled = row.optional_number("scheduled_time")
    g = _whole_gpus(num_gpu) if num_gpu == 0 or milli >= 1000 else FRACTIONAL
    if isinstance(g, str):
        return g
    if scheduled is None or row.text("pod_phase", required=False) == "Pending":
        return UNSCHEDULED
    if deleted - scheduled <= 0:
        return NON_POSITIVE
    return Candidate(row.line, created, deleted - scheduled, g, 1)


def load_openb(path: str | Path) -> Trace:
    """PAI 2023 ``openb_pod_list_*.csv`` (FGD, ATC'23). One pod = one single-instance job.

    g = ``num_gpu`` (0 -> CPU-only, > 8 -> g>8), w = 1; ``gpu_milli`` < 1000 -> fractional GPU.
    Pods whose ``pod_phase`` is Pending or whose ``scheduled_time`` is empty never ran
    (pending/never started). Submit = ``creation_time``; duration = ``deletion_time`` −
    ``scheduled_time`` (the time the pod held its GPUs).
    """
    return _load_rowwise(path, OPENB_COLUMNS, _openb_row)


def openb_job_models(path: str | Path) -> dict[int, frozenset[str]]:
    """The ``gpu_spec`` model set of every job of ``load_openb(path)`` that has one, by job id
    (the same rows kept, ids in the same (submit, line) order as :func:`build_trace`)."""
    kept: list[tuple[float, int, frozenset[str] | None]] = []
    for row in read_rows(path, OPENB_COLUMNS):
        c = _openb_row(row, Counter())
        if isinstance(c, Candidate):
            kept.append((c.submit, c.line, _gpu_spec(row)))
    kept.sort(key=lambda k: (k[0], k[1]))
    return {i: m for i, (_, _, m) in enumerate(kept) if m is not None}


# ---------------------------------------------------------------- openb pod lists as fill-mode pods
# Both published shapes: the 11-column lists (times, ``gpu_spec``) and the 5-column ``multigpu*``
# lists (``name,cpu_milli,memory_mib,num_gpu,gpu_milli``, no times).
OPENB_POD_COLUMNS = ("name", "num_gpu", "gpu_milli")


class Pod(NamedTuple):
    """One pod of a fill-until-full run: ``g`` whole GPUs on one node, allowed on the GPU models
    ``models`` (the pod's ``gpu_spec``; None = any model)."""

    line: int
    name: str
    g: int
    models: frozenset[str] | None


class PodList(NamedTuple):
    """The whole-GPU pods of a pod list in file order, and how they were filtered."""

    name: str
    pods: tuple[Pod, ...]
    report: LoadReport
    timed: bool  # the 11-column shape (times present)


def openb_has_times(path: str | Path) -> bool:
    """Whether an openb pod list has the 11-column shape (its header names ``creation_time``);
    False for the 5-column ``multigpu*`` shape. TraceError for an unreadable or empty file."""
    for row in read_rows(path, OPENB_POD_COLUMNS):
        return "creation_time" in row.values
    raise TraceError(str(path), 1, "header", "no pods in the list")


def _gpu_spec(row: Row) -> frozenset[str] | None:
    spec = row.values.get("gpu_spec", "").strip()
    if not spec:
        return None
    models = frozenset(m.strip() for m in spec.split("|"))
    if "" in models:
        raise row.error("gpu_spec", f"empty model name in {spec!r}")
    return models


def load_openb_pods(path: str | Path) -> PodList:
    """Either openb pod-list shape as fill-mode pods (FGD, ATC'23 §6; TRACES.md), file order.

    g = ``num_gpu``; filtered and counted: CPU-only (``num_gpu`` 0), fractional GPU
    (``gpu_milli`` < 1000: a share of one GPU, outside the whole-GPU model), g > 8. Times, phase
    and QoS are not read: a fill run submits every pod and none leaves. ``gpu_spec`` (when the
    column exists): ``|``-separated allowed models, empty = any.
    """
    outcomes: list[Pod | str] = []
    timed = False
    for row in read_rows(path, OPENB_POD_COLUMNS):
        timed = "creation_time" in row.values
        num_gpu, milli = row.count("num_gpu"), row.count("gpu_milli")
        g = _whole_gpus(num_gpu) if num_gpu == 0 or milli >= 1000 else FRACTIONAL
        models = _gpu_spec(row)
        outcomes.append(g if isinstance(g, str) else Pod(row.line, row.text("name"), g, models))
    pods = tuple(o for o in outcomes if isinstance(o, Pod))
    dropped = Counter(o for o in outcomes if isinstance(o, str))
    report = LoadReport(str(path), len(outcomes), len(pods), dict(dropped))
    return PodList(Path(path).stem, pods, report, timed)


# ---------------------------------------------------------------- PAI 2020 pai_task_table
PAI2020_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time",
                   "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")


class _Task(NamedTuple):
    line: int
    g: float  # GPUs per instance; 0 for CPU-only tasks
    inst: int
    start: float | None
    end: float | None


def _pai_task(row: Row) -> tuple[str, _Task]:
    plan_gpu = row.optional_number("plan_gpu")
    if plan_gpu is not None and plan_gpu < 0:
        raise row.error("plan_gpu", f"negative: {plan_gpu}")
    start, end = row.optional_number("start_time"), row.optional_number("end_time")
    # The published table writes 0 for times that never happened.
    start, end = (None if t in (None, 0) else t for t in (start, end))
    return row.text("job_name"), _Task(row.line, (plan_gpu or 0) / 100, row.count("inst_num"), start, end)


def _pai_job(tasks: list[_Task], altered: Counter[str]) -> Outcome:
    gpu_tasks = [t for t in tasks if t.g > 0]
    if not gpu_tasks:
        return CPU_ONLY
    gs = {t.g for t in gpu_tasks}
    reasons = sorted({r for r in map(_whole_gpus, gs) if isinstance(r, str)}, key=_SHAPE_ORDER.index)
    if reasons:
        return reasons[0]
    if len(gs) > 1:
        return NON_HOMOGENEOUS
    w = sum(t.inst for t in gpu_tasks)
    if w == 0:
        return NO_INSTANCES
    starts = [t.start for t in gpu_tasks if t.start is not None]
    if len(starts) < len(gpu_tasks):
        return UNSCHEDULED
    ends = [t.end for t in gpu_tasks if t.end is not None]
    if len(ends) < len(gpu_tasks):
        return UNFINISHED
    submit = min(starts)
    duration = max(ends) - submit
    if duration <= 0:
        return NON_POSITIVE
    if len(gpu_tasks) < len(tasks):
        altered[CPU_TASKS_IGNORED] += 1
    if len(gpu_tasks) > 1:
        altered[TASKS_MERGED] += 1
    return Candidate(tasks[0].line, submit, duration, int(gs.pop()), w)


def load_pai2020(path: str | Path) -> Trace:
    """Alibaba PAI 2020 ``pai_task_table`` (header line optional: the published CSV has none).

    Rows are tasks; tasks are grouped into jobs by ``job_name``. Per task g = ``plan_gpu`` / 100
    (percent of one GPU; empty or 0 = a CPU-only task). A job keeps its GPU tasks: no GPU task ->
    CPU-only; a non-integral g -> fractional GPU; g > 8 -> g>8; GPU tasks with different g ->
    non-homogeneous; otherwise g is that common value and w = sum of their ``inst_num``. The
    table has no submit time: submit = earliest GPU-task ``start_time``, duration = latest
    ``end_time`` − submit (empty or 0 start -> never started; empty or 0 end -> unfinished).
    Dropping CPU tasks (e.g. parameter servers) and merging several GPU tasks are counted as
    alterations.
    """
    altered: Counter[str] = Counter()
    jobs: dict[str, list[_Task]] = {}
    rows = 0
    for row in read_rows(path, PAI2020_COLUMNS, headerless_ok=True):
        rows += 1
        name, task = _pai_task(row)
        jobs.setdefault(name, []).append(task)
    outcomes = [_pai_job(tasks, altered) for tasks in jobs.values()]
    return build_trace(path, rows, outcomes, altered)


# ---------------------------------------------------------------- simple CSV (the built-in trace)
SIMPLE_COLUMNS = ("job_id", "submit", "duration", "g", "w")


def load_simple_csv(path: str | Path) -> Trace:
    """The package's own format: header ``job_id,submit,duration,g,w``; submit and duration in
    seconds, g in 1..8, w >= 1, job ids unique integers (kept as given).

    This format is already reduced, so nothing is dropped: any row outside these rules
    (g outside 1..8, w < 1, duration <= 0, duplicate id) is a ``TraceError``.
    """
    jobs: list[TraceJob] = []
    seen: set[int] = set()
    for row in read_rows(path, SIMPLE_COLUMNS):
        jid, g, w = row.identifier("job_id"), row.count("g"), row.count("w")
        submit, duration = row.number("submit"), row.number("duration")
        if jid in seen:
            raise row.error("job_id", f"duplicate id {jid}")
        if not 1 <= g <= G_DEFAULT:
            raise row.error("g", f"{g} outside 1..{G_DEFAULT}")
        if w < 1:
            raise row.error("w", f"{w} < 1")
        if duration <= 0:
            raise row.error("duration", f"{duration} <= 0")
        seen.add(jid)
        jobs.append(TraceJob(jid, submit, duration, g, w))
    origin = min((j.submit for j in jobs), default=0.0)
    report = LoadReport(str(path), len(jobs), len(jobs))
    return Trace(Path(path).stem, rebased(jobs, origin), report)


FORMATS: dict[str, Callable[[str | Path], Trace]] = {
    "venus": load_venus,
    "gfs": load_gfs,
    "pai2020": load_pai2020,
    "openb": load_openb,
    "simple": load_simple_csv,
}


def load_trace(path: str | Path, fmt: str) -> Trace:
    """Load ``path`` with the loader named ``fmt`` (a key of ``FORMATS``)."""
    try:
        loader = FORMATS[fmt]
    except KeyError:
        raise TraceError(str(path), 0, "format", f"unknown format {fmt!r} (known: {', '.join(FORMATS)})") from None
    return loader(path)
