"""`verify --audit LOG`: check a recorded placement log of any scheduler (the CI guard).

Four formats (:func:`audit_path` picks one, :func:`detect_format` guesses it): the *snapshot
log* read here, the *delta log* (``proofs_check.gpu.delta_log``: only the event on each line),
the Kubernetes-style *binding stream* (``proofs_check.gpu.binding_stream``) and kubectl's own
output (``proofs_check.gpu.k8s_audit``: Pod watch streams, PodList, NodeList, Events). All report
to the same two claims (``proofs_check.gpu.audit_tally``); the kubectl audit adds ``audit.waits``.

Snapshot log format (JSON lines, one object per line; blank lines and lines starting with '#' are skipped;
a file holding one JSON object, even spread over several lines, is a one-line log; full
description in docs/verify.md)::

    {"event": "arrive", "job": "a", "g": 2, "w": 3, "nodes": 4, "placement": [[{"job": "a", "g": 2}], ...]}
    {"event": "depart", "job": "a", "nodes": 4, "placement": [...]}
    {"event": "snapshot", "nodes": 4, "placement": [...]}

* A line is a snapshot (``heuristics.gpu.snapshot``, the format ``sifopt`` and ``admit`` read:
  ``capacity``, ``nodes``, ``placement``, or per-node ``capacities`` (and ``models``) for a mixed
  cluster; a counts-only snapshot cannot be audited) plus the event fields ``event``, ``job``,
  ``g``, ``w`` and ``t`` (a timestamp, not interpreted). Instances are ``{"job": id, "g": demand}``
  (id: string or integer; g in 1..its node's capacity); an instance without ``job`` (or a bare
  demand) is a one-instance job of its own, new at every line.
* ``event`` is optional (default "snapshot"). An ``arrive`` line names the job and its shape
  (g, w) and shows the placement after the job was admitted; ``depart`` names the job that left.

Checks at every line, with the exact Φ★ (memoised, ``proofs_check.gpu.audit_tally``):

* ``audit.valid`` — no node above its own capacity; every instance of a job has the job's demand;
  gang: every running job has all its w instances placed (w from its ``arrive`` line, or, for a job
  first seen in a snapshot, the number of instances it was first seen with; that number may not
  change while the job runs, so a missing or double-booked instance is caught); a job named by
  ``arrive`` must not already run and must be placed; after ``depart`` the job is gone. A job whose
  instances have *all* disappeared is taken to have finished (snapshot logs need no ``depart``
  lines); a job with only some of its instances is a gang violation.
* ``audit.sif`` — SIF = (Φπ − Φ★)/N ≤ the bound, Φπ counting the nodes non-empty and below their
  own capacity, Φ★ the mixed one on mixed capacities (docs/heterogeneous.md). ``--bound K`` with an
  integer K means K/N (the default 2 is Theorem 1's 2/N); a decimal (0.25) or a fraction (1/4) is
  an absolute bound.

A malformed line is bad input (AuditError naming the line and field, exit 2) — also an instance
larger than its node's capacity, or ``capacities`` not one per node; a check that
fails is a violation reported with its line number (exit 1); a Φ★ solve that hits its limit makes
``audit.sif`` inconclusive (exit 3).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from heuristics.gpu.cluster import Job, Placement, counts_of, placement_violations
from heuristics.gpu.snapshot import SnapshotError, decode, parse_snapshot, read_text, require_int, require_job_id
from proofs_check.core.verdict import ClaimResult
from proofs_check.gpu.audit_tally import AuditError, AuditTally, Cluster, SifBound, parse_bound
from proofs_check.gpu.binding_stream import audit_bindings
from proofs_check.gpu.delta_log import audit_delta
from proofs_check.gpu.k8s_audit import K8sAuditOptions, audit_k8s
from proofs_check.gpu.k8s_events import is_kubernetes
from proofs_check.gpu.tabular import content_lines

__all__ = ["FORMATS", "AuditError", "K8sAuditOptions", "SifBound", "audit_file", "audit_path", "detect_format", "parse_bound"]

EVENTS = ("arrive", "depart", "snapshot")
EVENT_FIELDS = ("event", "job", "g", "w", "t")  # a line's fields that are not the snapshot's


@dataclass(frozen=True)
class LogLine:
    """One line of the log: its event, the job it names (as text) and the placement after it."""

    lineno: int
    event: str
    job: str | None  # the arriving / departing job; None on a snapshot line
    shape: tuple[int, int] | None  # (g, w) of an arriving job
    placement: Placement
    job_names: tuple[str, ...]  # internal integer id -> the job's name in the log
    cluster: Cluster  # the line's nodes: each one's capacity (and model)


def parse_record(d: Any, where: str, lineno: int) -> LogLine:
    """One decoded line; ``where`` (file:line) names it in errors."""
    if not isinstance(d, dict):
        raise AuditError(where, None, "a line must be a JSON object")
    event = d.get("event", "snapshot")
    if event not in EVENTS:
        raise AuditError(where, "event", f"must be {', '.join(EVENTS)}, got {event!r}")
    _require_capacity_per_listed_node(d, where)
    snap = parse_snapshot({k: v for k, v in d.items() if k not in EVENT_FIELDS}, where, strict=False)
    placement, labels = snap.placement("an audit line needs the placement (Φπ)")
    cluster = Cluster(snap.node_capacities(), models=snap.models)
    for n, node in enumerate(placement.nodes):
        for k, inst in enumerate(node):
            cluster.require_fits(n, inst.g, where, f"placement[{n}][{k}].g")
    # An instance without a job id is a job of its own, named so it cannot meet another line's.
    names = tuple(f"<no id: line {lineno} #{i}>" if j is None else str(j) for i, j in enumerate(labels))
    needed = {"arrive": ("job", "g", "w"), "depart": ("job",), "snapshot": ()}[event]
    for key in needed:
        if key not in d:
            raise AuditError(where, key, f"missing (an '{event}' line gives {', '.join(needed)})")
    job = None if event == "snapshot" else str(require_job_id(d["job"], where, "job"))
    shape = None
    if event == "arrive":
        shape = (require_int(d["g"], where, "g", 1, cluster.max_capacity), require_int(d["w"], where, "w", 1))
    return LogLine(lineno, event, job, shape, placement, names, cluster)


def _require_capacity_per_listed_node(d: dict[str, Any], where: str) -> None:
    """``capacities`` names every node: with ``nodes`` left out, more nodes listed in
    ``placement`` than capacities is bad input on field ``capacities`` (the snapshot reader,
    defaulting N to the capacities' length, would blame ``nodes``, a field the line lacks)."""
    caps, listed = d.get("capacities"), d.get("placement")
    if "nodes" not in d and isinstance(caps, list) and isinstance(listed, list) and len(listed) > len(caps):
        raise AuditError(where, "capacities", f"{len(caps)} entries for the {len(listed)} nodes listed in 'placement'")


def _records(path: str, text: str) -> Iterator[tuple[int, str, Any]]:
    """(line number, where, decoded object) of every line that is not blank or a comment. A file
    whose first line is not JSON on its own is one JSON document (a snapshot written with
    indentation, by any command): one record, errors located by the decoder's line."""
    lines = content_lines(path, text)
    if lines and lines[0][0] == 1 and not _is_json(lines[0][1]):
        yield 1, path, decode(text, path)
        return
    for lineno, line in lines:
        yield lineno, f"{path}:{lineno}", decode(line, path, lineno)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    except RecursionError:  # JSON, nested too deeply: ``decode`` says so in one line
        return True
    return True


def read_log(path: str) -> list[LogLine]:
    """Every line of the log; AuditError (file, line, field) on malformed input."""
    try:
        lines = [parse_record(d, where, lineno) for lineno, where, d in _records(path, read_text(path))]
    except AuditError:
        raise
    except SnapshotError as e:  # one error type for `verify --audit`, which catches AuditError
        raise AuditError(e.source, e.field, e.problem) from None
    if not lines:
        raise AuditError(path, None, "no placement lines")
    return lines


def validity_problems(line: LogLine, running: dict[str, tuple[int, int]]) -> list[str]:
    """Everything wrong with one line, given the jobs running before it; updates ``running``."""
    out: list[str] = []
    names = line.job_names
    if line.job is not None and line.shape is not None:  # an arrival
        if line.job in running:
            out.append(f"job {line.job} arrives but is already running")
        running[line.job] = line.shape
    elif line.job is not None:  # a departure
        if line.job not in running:
            out.append(f"job {line.job} departs but is not running")
        running.pop(line.job, None)
    present: dict[str, int] = {}
    g_of: dict[str, int] = {}
    for node in line.placement.nodes:
        for i in node:
            present[names[i.job]] = present.get(names[i.job], 0) + 1
            g_of[names[i.job]] = i.g
    for j in list(running):
        if j not in present:  # a job gone from the placement has finished (snapshot logs)
            if line.event == "arrive" and j == line.job:
                out.append(f"job {j} arrived but has no instance placed")
            running.pop(j)
    for j, cnt in present.items():
        if j not in running:  # first seen in a snapshot: its shape is what we see now
            running[j] = (g_of[j], cnt)
    ids = {name: k for k, name in enumerate(names)}
    jobs = [Job(ids[j], g, w) for j, (g, w) in running.items() if j in ids]
    out += [_rename(msg, names) for msg in placement_violations(line.placement, jobs, line.cluster.capacities)]
    if line.event == "depart" and line.job in present:
        out.append(f"job {line.job} departed but {present[line.job]} of its instances are still placed")
    return out


def _rename(msg: str, names: tuple[str, ...]) -> str:
    """A message about internal job ids, with the log's job names (largest id first, so that
    job 1 does not rewrite job 12)."""
    for k in sorted(range(len(names)), reverse=True):
        msg = msg.replace(f"job {k}:", f"job {names[k]}:").replace(f"job {k} ", f"job {names[k]} ")
    return msg


def audit_file(path: str, bound: SifBound, progress: bool = False) -> tuple[list[ClaimResult], str]:
    """Check every line of a snapshot log; returns (audit.valid, audit.sif) and a text report."""
    lines = read_log(path)
    running: dict[str, tuple[int, int]] = {}
    tally = AuditTally(path, bound, progress=progress)
    for ln in lines:
        problems = validity_problems(ln, running)
        if problems:
            tally.invalid_line(ln.lineno, problems)
        else:
            p, cluster = ln.placement, ln.cluster
            counts = counts_of((i.g for node in p.nodes for i in node), cluster.max_capacity)
            tally.valid_line(ln.lineno, cluster, counts, cluster.partial([p.used(n) for n in range(p.n_nodes)]))
    return tally.results(f"audit {path}: {len(lines)} lines, SIF bound {bound}")


FORMATS = ("auto", "snapshot", "delta", "bindings", "k8s")


def detect_format(path: str) -> str:
    """The format of an audit log (``--audit-format auto``): a ``.csv`` file is a binding stream;
    otherwise the first record decides — ``{"format": "delta", …}`` a delta log, one with a ``pod``
    field a binding stream (JSON lines), anything else a snapshot log."""
    if path.lower().endswith(".csv"):
        return "bindings"
    try:
        if Path(path).is_file():
            with Path(path).open(encoding="utf-8-sig") as f:
                first = next((line for line in f if line.strip() and not line.lstrip().startswith("#")), "")
        else:  # a pipe (``<(cat log)``) is read once: read_text keeps its text for the reader
            first = next((line for line in read_text(path).splitlines()
                          if line.strip() and not line.lstrip().startswith("#")), "")
    except (OSError, UnicodeDecodeError, SnapshotError):
        return "snapshot"  # the snapshot reader names the file and what is wrong with it
    try:
        record = json.loads(first)
    except RecursionError:
        return "snapshot"  # the snapshot reader reports JSON nested too deeply, in one line
    except json.JSONDecodeError:
        record = _first_value(path)
        return "k8s" if is_kubernetes(record) else "snapshot"
    if is_kubernetes(record):
        return "k8s"
    if isinstance(record, dict) and record.get("format") == "delta":
        return "delta"
    return "bindings" if isinstance(record, dict) and "pod" in record else "snapshot"


def _first_value(path: str) -> Any:
    """The first JSON value of a file whose first line is not JSON on its own (kubectl's
    pretty-printed ``-o json`` output, a snapshot written with indentation); None if none."""
    try:
        text = read_text(path)
        return json.JSONDecoder().raw_decode(text, len(text) - len(text.lstrip()))[0]
    except (SnapshotError, json.JSONDecodeError, RecursionError):
        return None


def audit_path(path: str, bound: SifBound, fmt: str = "auto", nodes_file: str | None = None,
               k8s: K8sAuditOptions | None = None) -> tuple[list[ClaimResult], str]:
    """Audit ``path`` in format ``fmt`` (one of FORMATS); ``nodes_file`` is the node list a
    binding stream needs (a delta log may take its cluster from it instead of its header; for
    ``k8s``, a NodeList). ``k8s``: how to read Kubernetes objects (GPU resource names, gang key,
    the Events list); given for another format, it is a usage error."""
    if fmt not in FORMATS:
        raise AuditError("--audit-format", None, f"{fmt!r}: expected one of {', '.join(FORMATS)}")
    kind = detect_format(path) if fmt == "auto" else fmt
    progress = k8s is not None and k8s.progress  # verify passes the options (and --quiet) always
    if kind == "k8s":
        return audit_k8s(path, bound, nodes_file, k8s or K8sAuditOptions())
    if k8s is not None and k8s != K8sAuditOptions(progress=k8s.progress):
        raise AuditError("--gpu-resource/--gang-label/--k8s-events", None,
                         f"{path} is a {kind} log; these options read Kubernetes objects (kubectl output)")
    if kind == "bindings":
        if nodes_file is None:
            raise AuditError(path, None, "a binding stream needs the node list: give --nodes-file")
        return audit_bindings(path, nodes_file, bound, progress)
    if kind == "delta":
        return audit_delta(path, bound, nodes_file, progress)
    if nodes_file is not None:
        raise AuditError("--nodes-file", None, f"{path} is a snapshot log, which names its own nodes; "
                         "--nodes-file applies to delta logs and binding streams")
    return audit_file(path, bound, progress)
