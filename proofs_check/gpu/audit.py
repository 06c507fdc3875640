"""`verify --audit LOG`: check a recorded placement log of any scheduler (the CI guard).

Log format (JSON lines, one object per line; blank lines and lines starting with '#' are skipped;
full description in docs/verify.md)::

    {"event": "arrive", "job": "a", "g": 2, "w": 3, "nodes": 4, "placement": [[{"job": "a", "g": 2}], ...]}
    {"event": "depart", "job": "a", "nodes": 4, "placement": [...]}
    {"event": "snapshot", "nodes": 4, "placement": [...]}

* ``nodes`` (int ≥ 1) is the cluster size N; ``placement`` lists exactly N nodes, each a list of
  instances ``{"job": id, "g": demand}`` (id: string or integer; g in 1..capacity); optional
  ``capacity`` (default 8) and ``t`` (a timestamp, only echoed).
* ``event`` is optional (default "snapshot"). An ``arrive`` line names the job and its shape
  (g, w) and shows the placement after the job was admitted; ``depart`` names the job that left.

Checks at every line, with the exact Φ★ (``oracle.gpu.phi_star`` through ``heuristics.gpu.sif``):

* ``audit.valid`` — capacity never exceeded; every instance of a job has the job's demand; gang:
  every running job has all its w instances placed (w from its ``arrive`` line, or, for a job
  first seen in a snapshot, the number of instances it was first seen with; that number may not
  change while the job runs, so a missing or double-booked instance is caught); a job named by
  ``arrive`` must not already run and must be placed; after ``depart`` the job is gone. A job
  whose instances have *all* disappeared is taken to have finished (snapshot logs need no
  ``depart`` lines); a job with only some of its instances is a gang violation.
* ``audit.sif`` — SIF = (Φπ − Φ★)/N ≤ the bound. ``--bound K`` with an integer K means K/N (the
  default 2 is Theorem 1's 2/N); a decimal (0.25) or a fraction (1/4) is an absolute bound.

A malformed line is bad input (AuditError naming the line and field, exit 2); a check that
fails is a violation reported with its line number (exit 1); a Φ★ solve that hits its limit makes
``audit.sif`` inconclusive (exit 3).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from heuristics.gpu.cluster import Instance, Job, Placement, placement_violations
from heuristics.gpu.sif import sif
from oracle.gpu.phi_star import PhiStarUnknown
from proofs_check.verdict import ClaimResult, Verdict


class AuditError(ValueError):
    """Malformed log (one line naming file, line and field): exit 2."""


@dataclass(frozen=True)
class SifBound:
    """``per_n`` True: the bound is value/N; False: an absolute fraction."""

    value: Fraction
    per_n: bool

    def at(self, n_nodes: int) -> Fraction:
        return self.value / n_nodes if self.per_n else self.value

    def __str__(self) -> str:
        return f"{self.value}/N" if self.per_n else str(self.value)


def parse_bound(text: str) -> SifBound:
    t = text.strip()
    try:
        if t.isdigit():
            return SifBound(Fraction(int(t)), True)
        v = Fraction(t)
    except (ValueError, ZeroDivisionError):
        raise AuditError(f"--bound {text!r}: expected an integer K (K/N), a decimal or a fraction p/q") from None
    if v < 0:
        raise AuditError(f"--bound {text!r}: must be ≥ 0")
    return SifBound(v, False)


@dataclass(frozen=True)
class LogLine:
    lineno: int
    event: str
    job: str | None
    g: int | None
    w: int | None
    placement: Placement
    job_names: dict[int, str]  # internal integer id -> the log's job id


def parse_line(path: str, lineno: int, text: str) -> LogLine:
    where = f"{path}:{lineno}"
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise AuditError(f"{where}: not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(d, dict):
        raise AuditError(f"{where}: a line must be a JSON object")
    event = d.get("event", "snapshot")
    if event not in ("arrive", "depart", "snapshot"):
        raise AuditError(f"{where}: field 'event' must be arrive, depart or snapshot, got {event!r}")
    cap = _int(d, "capacity", where, default=8, low=1)
    n = _int(d, "nodes", where, low=1)
    pl = d.get("placement")
    if not isinstance(pl, list) or len(pl) != n:
        raise AuditError(f"{where}: field 'placement' must be a list of {n} nodes (field 'nodes')")
    ids: dict[str, int] = {}
    nodes = []
    for k, node in enumerate(pl):
        if not isinstance(node, list):
            raise AuditError(f"{where}: placement[{k}] must be a list of instances")
        insts = []
        for m, inst in enumerate(node):
            if not isinstance(inst, dict) or "job" not in inst:
                raise AuditError(f"{where}: placement[{k}][{m}] must be an object with 'job' and 'g'")
            g = _int(inst, "g", f"{where}: placement[{k}][{m}]", low=1, high=cap)
            insts.append(Instance(ids.setdefault(_job_id(inst["job"], where), len(ids)), g))
        nodes.append(tuple(insts))
    job = g = w = None
    if event != "snapshot":
        if "job" not in d:
            raise AuditError(f"{where}: an '{event}' line needs field 'job'")
        job = _job_id(d["job"], where)
    if event == "arrive":
        g = _int(d, "g", where, low=1, high=cap)
        w = _int(d, "w", where, low=1)
    return LogLine(lineno, event, job, g, w, Placement(cap, tuple(nodes)), {v: k for k, v in ids.items()})


def _job_id(v: Any, where: str) -> str:
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise AuditError(f"{where}: field 'job' must be a string or an integer, got {v!r}")
    return str(v)


def _int(d: dict, key: str, where: str, default: int | None = None, low: int | None = None,
         high: int | None = None) -> int:
    if key not in d:
        if default is not None:
            return default
        raise AuditError(f"{where}: missing field '{key}'")
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise AuditError(f"{where}: field '{key}' must be an integer, got {v!r}")
    if (low is not None and v < low) or (high is not None and v > high):
        raise AuditError(f"{where}: field '{key}'={v} outside {low}..{high if high is not None else '∞'}")
    return v


def read_log(path: str) -> list[LogLine]:
    p = Path(path)
    if not p.is_file():
        raise AuditError(f"{path}: no such file")
    out = []
    for lineno, text in enumerate(p.read_text().splitlines(), start=1):
        if text.strip() and not text.lstrip().startswith("#"):
            out.append(parse_line(path, lineno, text))
    if not out:
        raise AuditError(f"{path}: no placement lines")
    return out


def validity_problems(line: LogLine, running: dict[str, tuple[int, int]]) -> list[str]:
    """Everything wrong with one line, given the jobs running before it; updates ``running``."""
    out: list[str] = []
    names = line.job_names
    if line.event == "arrive":
        if line.job in running:
            out.append(f"job {line.job} arrives but is already running")
        running[line.job] = (line.g, line.w)
    elif line.event == "depart":
        if line.job not in running:
            out.append(f"job {line.job} departs but is not running")
        running.pop(line.job, None)
    present: dict[str, int] = {}
    for node in line.placement.nodes:
        for i in node:
            present[names[i.job]] = present.get(names[i.job], 0) + 1
    g_of = {names[i.job]: i.g for node in line.placement.nodes for i in node}
    for j in list(running):
        if j not in present:  # a job gone from the placement has finished (snapshot logs)
            if line.event == "arrive" and j == line.job:
                out.append(f"job {j} arrived but has no instance placed")
            running.pop(j)
    for j, cnt in present.items():
        if j not in running:  # first seen in a snapshot: its shape is what we see now
            running[j] = (g_of[j], cnt)
    ids = {v: k for k, v in names.items()}
    jobs = [Job(ids[j], g, w) for j, (g, w) in running.items() if j in ids]
    out += [_rename(msg, names) for msg in placement_violations(line.placement, jobs)]
    if line.event == "depart" and line.job in present:
        out.append(f"job {line.job} departed but {present[line.job]} of its instances are still placed")
    return out


def _rename(msg: str, names: dict[int, str]) -> str:
    for k, v in sorted(names.items(), key=lambda kv: -kv[0]):
        msg = msg.replace(f"job {k}:", f"job {v}:").replace(f"job {k} ", f"job {v} ")
    return msg


def audit_file(path: str, bound: SifBound) -> tuple[list[ClaimResult], str]:
    """Check every line; returns the two results (audit.valid, audit.sif) and a text report."""
    lines = read_log(path)
    running: dict[str, tuple[int, int]] = {}
    bad_valid: dict | None = None
    bad_sif: dict | None = None
    unknown = ""
    worst = (Fraction(-1), 0)
    for ln in lines:
        problems = validity_problems(ln, running)
        if problems and bad_valid is None:
            bad_valid = {"kind": "audit", "file": path, "line": ln.lineno, "problems": problems}
        if problems:
            continue  # SIF of an invalid placement is undefined
        try:
            rep = sif(ln.placement)
        except PhiStarUnknown as e:
            unknown = unknown or f"line {ln.lineno}: {e}"
            continue
        value = Fraction(rep.phi_pi - rep.phi_star, rep.n_nodes)
        worst = max(worst, (value, -ln.lineno))
        if value > bound.at(rep.n_nodes) and bad_sif is None:
            bad_sif = {"kind": "audit", "file": path, "line": ln.lineno, "N": rep.n_nodes,
                       "counts": list(rep.counts), "Φπ": rep.phi_pi, "Φ★": rep.phi_star, "SIF": str(value),
                       "bound": str(bound.at(rep.n_nodes))}
    b = {"log": path, "lines": len(lines), "bound": str(bound)}
    stats = {"worst SIF": str(worst[0]) if worst[1] else None, "worst at line": -worst[1] if worst[1] else None}
    results = [
        ClaimResult("audit.valid", Verdict.VIOLATED if bad_valid else Verdict.HOLDS,
                    f"line {bad_valid['line']}: {bad_valid['problems'][0]}" if bad_valid else
                    f"all {len(lines)} lines are valid placements", b, {}, bad_valid),
        ClaimResult("audit.sif", Verdict.VIOLATED if bad_sif else (Verdict.INCONCLUSIVE if unknown else Verdict.HOLDS),
                    f"line {bad_sif['line']}: SIF = {bad_sif['SIF']} > {bad_sif['bound']} "
                    f"(N={bad_sif['N']}, Φπ={bad_sif['Φπ']}, Φ★={bad_sif['Φ★']})" if bad_sif else
                    (unknown or f"SIF ≤ {bound} on every valid line"), b, stats, bad_sif),
    ]
    text = "\n".join([f"audit {path}: {len(lines)} lines, SIF bound {bound}"] +
                     [f"{r.claim_id}: {r.verdict.value.upper()} — {r.message}" for r in results])
    return results, text
