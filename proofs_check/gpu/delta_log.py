"""`verify --audit` on a delta log: one line per binding event, the state rebuilt incrementally.

A delta log is JSON lines (blank lines and lines starting with '#' skipped; full description in
docs/verify.md). The first line declares the cluster; then one line per event::

    {"format": "delta", "nodes": 256, "capacity": 8}       # or "capacities": [8, 8, 4, ...]
    {"event": "arrive", "job": "a", "g": 2, "hosts": [0, 0, 5], "t": 10.5}
    {"event": "depart", "job": "a"}
    {"event": "snapshot", "placement": [[{"job": "b", "g": 8}], ...]}

* header: ``format`` = "delta"; the cluster as ``nodes`` (N) with ``capacity`` (default 8), or
  ``capacities`` (one per node, optionally with ``models``, one per node), or neither when
  ``--nodes-file`` gives the node list (then a host may be a node's name as well as its index).
* ``arrive``: ``job`` (a string or an integer), ``g`` (1..the largest capacity), ``hosts`` (one
  node per instance, so w = its length; a node index 0..N-1 or a listed name), optional ``w``.
* ``depart``: ``job``. ``snapshot``: a snapshot in the one format (``heuristics.gpu.snapshot``;
  ``capacity``, ``nodes``, ``capacities`` and ``models`` may be left out, they default to the
  header's; given, they must be the header's). Every line may carry
  ``t`` (a timestamp, not interpreted). ``event`` defaults to "snapshot".

Input errors (exit 2, naming file, line and field): malformed JSON, a missing or unknown field, a
value of the wrong type or range, a host that names no node, an instance larger than its node's
capacity, a snapshot for another N or capacity — the log cannot be read as the declared cluster.
Findings (``audit.valid`` violated at that line, exit 1), with what the audit then does:

* a node above its capacity — on every line while it lasts (the binding is applied);
* ``arrive`` of a running job, or with no hosts — the line is not applied;
* ``arrive`` whose ``w`` differs from the number of hosts — a gang violation at that line; the
  hosts given are applied;
* ``depart`` of a job that is not running — nothing to remove;
* a host listed in the node list without GPUs — that line is not applied;
* a ``snapshot`` that disagrees with the rebuilt state (or gives one job two demands) — the state
  is then replaced by the snapshot, so later lines are judged against what the scheduler wrote.

``audit.sif`` is checked at every valid line (``proofs_check.gpu.audit_tally``).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from heuristics.gpu.snapshot import FIELDS as SNAPSHOT_FIELDS
from heuristics.gpu.snapshot import SnapshotError, decode, parse_snapshot, require_int, require_job_id
from heuristics.limits import Size, within
from proofs_check.core.verdict import ClaimResult
from proofs_check.gpu.audit_tally import AuditError, AuditTally, Cluster, SifBound
from proofs_check.gpu.node_list import read_node_list, resolve_node
from proofs_check.gpu.rebuilt_state import NodeContents, RebuiltState, Slot
from proofs_check.gpu.tabular import content_lines, known_fields

HEADER_FIELDS = ("format", "nodes", "capacity", "capacities", "models")
LINE_FIELDS = {"arrive": ("event", "job", "g", "w", "hosts", "t"), "depart": ("event", "job", "t"),
               "snapshot": ("event", "t", *SNAPSHOT_FIELDS)}
NO_ID = "<no id>"  # how an instance without a job id is compared between snapshot and state


def header_cluster(d: Any, where: str, nodes_file: str | None) -> Cluster:
    """The cluster the header line declares (or the node list, when given)."""
    h = known_fields(d, where, HEADER_FIELDS, "the header")
    if h.get("format") != "delta":
        raise AuditError(where, "format", 'the first line of a delta log is {"format": "delta", …}')
    given = [k for k in ("nodes", "capacity", "capacities", "models") if k in h]
    if nodes_file is not None:
        if given:
            raise AuditError(where, given[0], "the cluster is given by --nodes-file; leave it out of the header")
        return read_node_list(nodes_file)
    if ("nodes" in h) == ("capacities" in h):
        raise AuditError(where, None, "the header needs exactly one of 'nodes' (with 'capacity') and 'capacities'")
    if "capacities" in h:
        if "capacity" in h:
            raise AuditError(where, "capacity", "give 'capacity' with 'nodes', not with 'capacities'")
        caps = h["capacities"]
        if not isinstance(caps, list) or not caps:
            raise AuditError(where, "capacities", "must be a non-empty list of GPU counts, one per node")
        within(Size.NODES, len(caps), where, "capacities", AuditError)
        return Cluster(tuple(require_int(c, where, f"capacities[{i}]", 1) for i, c in enumerate(caps)),
                       models=_models(h, where, len(caps)))
    if "models" in h:
        raise AuditError(where, "models", "only with 'capacities'")
    n = require_int(h["nodes"], where, "nodes", 1)
    within(Size.NODES, n, where, "nodes", AuditError)
    return Cluster((require_int(h.get("capacity", 8), where, "capacity", 1),) * n)


def _models(h: dict[str, Any], where: str, n_nodes: int) -> tuple[str, ...] | None:
    """The header's optional ``models``: one GPU model name per node."""
    if "models" not in h:
        return None
    mods = h["models"]
    if not isinstance(mods, list) or len(mods) != n_nodes or not all(isinstance(m, str) for m in mods):
        raise AuditError(where, "models", f"must be a list of {n_nodes} model names (one per node)")
    return tuple(mods)


class DeltaAudit:
    """Replays a delta log's lines on a :class:`RebuiltState`, reporting to an :class:`AuditTally`."""

    def __init__(self, cluster: Cluster, tally: AuditTally) -> None:
        self.cluster = cluster
        self.state = RebuiltState(cluster)
        self.tally = tally
        self.anonymous: set[str] = set()  # names given to instances without a job id

    def line(self, lineno: int, where: str, d: Any) -> None:
        """Apply one event line, then check the state after it."""
        if not isinstance(d, dict):
            raise AuditError(where, None, "a line must be a JSON object")
        event = d.get("event", "snapshot")
        if event not in LINE_FIELDS:
            raise AuditError(where, "event", f"must be {', '.join(LINE_FIELDS)}, got {event!r}")
        known_fields(d, where, LINE_FIELDS[event], f"an '{event}' line")
        if event == "arrive":
            problems = self._arrive(d, where)
        elif event == "depart":
            problems = self._depart(d, where)
        else:
            problems = self._snapshot(d, where, lineno)
        problems += self.state.overfull()
        if problems:
            self.tally.invalid_line(lineno, problems)
        else:
            self.tally.valid_line(lineno, self.cluster, self.state.counts, self.state.partial)

    def _job(self, d: dict[str, Any], where: str, event: str) -> str:
        if "job" not in d:
            raise AuditError(where, "job", f"missing (an '{event}' line names its job)")
        return str(require_job_id(d["job"], where, "job"))

    def _arrive(self, d: dict[str, Any], where: str) -> list[str]:
        job = self._job(d, where, "arrive")
        for key in ("g", "hosts"):
            if key not in d:
                raise AuditError(where, key, "missing (an 'arrive' line gives job, g and hosts)")
        g = require_int(d["g"], where, "g", 1, self.cluster.max_capacity)
        if not isinstance(d["hosts"], list):
            raise AuditError(where, "hosts", "must be a list with the node of every instance")
        nodes = [resolve_node(self.cluster, h, where, f"hosts[{i}]") for i, h in enumerate(d["hosts"])]
        for n in nodes:
            if n is not None:
                self.cluster.require_fits(n, g, where, "g")
        w = require_int(d["w"], where, "w", 1) if "w" in d else None
        if job in self.state.jobs:
            return [f"job {job} arrives but is already running"]
        if not nodes:
            return [f"job {job} arrived but has no instance placed"]
        gpu_less = sorted({str(h) for h, n in zip(d["hosts"], nodes) if n is None})
        if gpu_less:
            return [f"job {job}: bound to node {name}, which has no GPUs" for name in gpu_less]
        self.state.add(job, tuple(Slot(n, g) for n in nodes if n is not None))
        if w is not None and w != len(nodes):
            return [f"job {job}: {len(nodes)} instances placed, job has w={w}"]
        return []

    def _depart(self, d: dict[str, Any], where: str) -> list[str]:
        job = self._job(d, where, "depart")
        if job not in self.state.jobs:
            return [f"job {job} departs but is not running"]
        self.state.remove(job)
        return []

    def _snapshot(self, d: dict[str, Any], where: str, lineno: int) -> list[str]:
        """Compare the snapshot with the rebuilt state, then take it as the state."""
        snap_fields = {k: v for k, v in d.items() if k in SNAPSHOT_FIELDS}
        uniform = self.cluster.uniform
        if "capacity" in snap_fields and snap_fields["capacity"] != uniform:
            raise AuditError(where, "capacity", f"{snap_fields['capacity']!r}: the header's cluster has "
                             + (f"capacity {uniform}" if uniform else "mixed capacities (leave 'capacity' out)"))
        if "nodes" in snap_fields and snap_fields["nodes"] != self.cluster.n_nodes:
            raise AuditError(where, "nodes", f"{snap_fields['nodes']!r}: the cluster has {self.cluster.n_nodes} nodes")
        for key, header_value in (("capacities", self.cluster.capacities), ("models", self.cluster.models)):
            if key in snap_fields and (header_value is None or snap_fields[key] != list(header_value)):
                raise AuditError(where, key, "differs from the cluster the header declares (leave it out)")
        snap_fields = {"capacity": self.cluster.max_capacity, "nodes": self.cluster.n_nodes, **snap_fields}
        snap = parse_snapshot(snap_fields, where, strict=False)
        jobs: dict[str, list[Slot]] = {}
        demands: dict[str, set[int]] = {}
        for n, node in enumerate(snap.require_placement("a snapshot line needs the placement")):
            for k, item in enumerate(node):
                self.cluster.require_fits(n, item.g, where, f"placement[{n}][{k}].g")
                name = str(item.job) if item.job is not None else f"<no id: line {lineno} #{n}.{k}>"
                if item.job is None:
                    self.anonymous.add(name)
                jobs.setdefault(name, []).append(Slot(n, item.g))
                demands.setdefault(name, set()).add(item.g)
        new = {name: tuple(slots) for name, slots in jobs.items()}
        problems = self._disagreement(new)
        problems += [f"job {name}: instances with different demands {sorted(gs)}"
                     for name, gs in demands.items() if len(gs) > 1]
        self.state.reset(new)
        self.tally.notes["snapshot lines"] = self.tally.notes.get("snapshot lines", 0) + 1
        return problems

    def _disagreement(self, new: dict[str, tuple[Slot, ...]]) -> list[str]:
        """What the snapshot shows differently from the rebuilt state (first node, and how many)."""
        rebuilt = [self._comparable(c) for c in self.state.contents()]
        shown: list[Counter[tuple[str, int]]] = [Counter() for _ in rebuilt]
        for name, slots in new.items():
            for node, g in slots:
                shown[node][(NO_ID if name in self.anonymous else name, g)] += 1
        differ = [n for n, (a, b) in enumerate(zip(rebuilt, shown)) if a != b]
        if not differ:
            return []
        n = differ[0]
        return [f"snapshot disagrees with the state rebuilt from the lines before it on {len(differ)} node(s); "
                f"first node {self.cluster.label(n)}: snapshot {_show(shown[n])}, rebuilt {_show(rebuilt[n])}"]

    def _comparable(self, contents: NodeContents) -> Counter[tuple[str, int]]:
        out: Counter[tuple[str, int]] = Counter()
        for (name, g), k in contents.items():
            out[(NO_ID if name in self.anonymous else name, g)] += k
        return out


def _show(c: Counter[tuple[str, int]]) -> str:
    return "[" + ", ".join(f"{name}(g={g})" + (f"×{k}" if k > 1 else "") for (name, g), k in sorted(c.items())) + "]"


def audit_delta(path: str, bound: SifBound, nodes_file: str | None = None,
                progress: bool = False) -> tuple[list[ClaimResult], str]:
    """Check every line of a delta log; returns (audit.valid, audit.sif) and a text report."""
    try:
        records = ((n, f"{path}:{n}", decode(line, path, n)) for n, line in content_lines(path))
        first = next(records, None)
        if first is None:
            raise AuditError(path, None, 'empty: a delta log starts with {"format": "delta", …}')
        cluster = header_cluster(first[2], first[1], nodes_file)
        tally = AuditTally(path, bound, progress=progress)
        audit = DeltaAudit(cluster, tally)
        for lineno, where, d in records:
            audit.line(lineno, where, d)
    except AuditError:
        raise
    except SnapshotError as e:  # one error type for `verify --audit`
        raise AuditError(e.source, e.field, e.problem) from None
    if not tally.lines:
        raise AuditError(path, None, "no event lines after the header")
    return tally.results(f"audit {path} (delta log, {cluster.describe()}): {tally.lines} lines, SIF bound {bound}")

