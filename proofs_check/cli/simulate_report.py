"""What ``simulate`` says it replayed, how far its sweep is, and whether it is complete.

``--day``/``--window`` replay part of a trace: the load report printed and saved is that of the
part (jobs submitted outside it counted as dropped), never the whole trace's. A sweep stopped by
SIGINT/SIGTERM saves the runs it completed with ``summary.json`` marked incomplete.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Sequence, TextIO

from heuristics.gpu.trace import LoadReport, Trace
from proofs_check.cli.common import write_output

Replayed = Sequence[tuple[int | None, Trace]]  # (day or None, the replayed window) per window


def report_json(report: LoadReport) -> dict[str, object]:
    return {**asdict(report), "summary": report.summary()}


def replayed_text(trace: Trace, replayed: Replayed) -> str:
    """The load report of what is replayed: the trace's, or each window's."""
    if [w for _, w in replayed] == [trace]:
        return trace.report.summary()
    return "\n".join(f"replayed {w.name}: {w.report.summary()}" for _, w in replayed)


def replayed_meta(trace: Trace, replayed: Replayed | None) -> dict[str, object]:
    """``summary.json``'s ``load_report`` (with one window its report) and ``replayed`` (every window's)."""
    parts = list(replayed) if replayed is not None else [(None, trace)]
    report = parts[0][1].report if len(parts) == 1 else trace.report
    return {"load_report": report_json(report),
            "replayed": [{"day": day, "trace": w.name, "jobs": len(w.jobs), "load_report": report_json(w.report)}
                         for day, w in parts]}


def mark_incomplete(path: Path, signal: str, done: int, planned: int) -> None:
    """Record in ``summary.json`` that the sweep was interrupted: ``"interrupted"`` (the signal),
    ``"complete": false`` and how many of the planned runs it holds."""
    meta = json.loads(path.read_text())
    meta.update(complete=False, interrupted=signal, runs_completed=done, runs_planned=planned)
    write_output(path, json.dumps(meta, indent=1, default=str) + "\n")


class Progress:
    """A one-line progress bar with ETA on stderr."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total, self.done, self.t0 = total, 0, time.perf_counter()
        self.stream = sys.stderr if stream is None else stream  # per call: sys.stderr may be replaced

    def step(self, label: str) -> None:
        self.done += 1
        el = time.perf_counter() - self.t0
        eta = el / self.done * (self.total - self.done)
        bar = "#" * (20 * self.done // self.total)
        self.stream.write(f"\r[{bar:<20}] {self.done}/{self.total} {el:6.1f}s elapsed, "
                          f"ETA {eta:6.1f}s  {label[:40]:<40}")
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()

    def close(self) -> None:
        """End an unfinished bar's line (a run failed), so what follows starts a line of its own."""
        if 0 < self.done < self.total:
            self.stream.write("\n")
            self.stream.flush()
