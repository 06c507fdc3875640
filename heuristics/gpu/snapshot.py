"""One snapshot format for a GPU cluster: read by ``sifopt``, ``admit`` and ``verify --audit``.

A snapshot is one JSON object. The canonical shape (what every command writes)::

    {"capacity": 8, "nodes": 3,
     "placement": [[{"job": 1, "g": 4}, {"job": 2, "g": 2}], [{"job": 1, "g": 4}], []]}

or, counts only (where a command needs no placement: ``sifopt``)::

    {"capacity": 8, "nodes": 3, "counts": {"1": 6, "2": 1, "4": 2}}

Fields (no others):

* ``capacity`` — GPUs per node, integer ≥ 1, default 8.
* ``nodes`` — N, the cluster size. Required with ``counts`` (≥ 0). Optional with ``placement``
  (default: the nodes listed); when larger than the list, the cluster is padded with empty nodes.
* ``placement`` — the nodes, each a list of instances ``{"job": id, "g": g}`` (id a string or an
  integer; two instances with the same id belong to one gang job, ids compared as text so
  ``1`` and ``"1"`` are one job; g in 1..capacity). ``"job"`` may be left out: such an instance
  has no job identity and counts as a job of its own.
* ``counts`` — ``{"g": n_g}``: instance counts by demand (keys 1..capacity, values ≥ 0).
* ``capacities`` — optional, a heterogeneous cluster (docs/heterogeneous.md): GPUs of each node,
  one integer ≥ 1 per node, so its length is N (``nodes``, when given, must equal it). ``capacity``
  then defaults to, and must be at least, the largest entry; every node's instances must fit its
  own capacity. ``models`` — optional with ``capacities``: each node's GPU model (strings).

Exactly one of ``placement`` and ``counts``. Older shapes still read (no extra cost, so kept):
``sifopt``'s bare demands (``"placement": [[4, 2, 1], [8], []]``, an item that is just g) and
``admit``'s ``{"job", "g"}`` items with ``nodes`` padding; an audit log line is this object plus
its event fields (``proofs_check.gpu.audit``).

``load_snapshot`` / ``parse_snapshot`` raise :class:`SnapshotError`, one line naming the file (and
line, for a log) and the field: ``snap.json: field 'placement[1][0].g': 9 outside 1..8``. With
``strict`` (the default) a node over capacity or a job with two demands is bad input too; the
audit reads with ``strict=False`` because there such a placement is a finding about the
scheduler that wrote it, not a malformed file. This module is pure: no printing, no exit codes.
"""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple, Sequence

from heuristics.gpu.cluster import G_DEFAULT, Instance, Placement, counts_of
from heuristics.limits import Size, limit, within

JobId = str | int
FIELDS = ("capacity", "nodes", "placement", "counts", "capacities", "models")
ITEM_FIELDS = ("job", "g")


class SnapshotError(ValueError):
    """A snapshot that cannot be read. One line: ``<source>: field '<field>': <problem>``
    (``source`` is the file, or ``file:line`` for a log line; ``field`` None for the file as a
    whole)."""

    def __init__(self, source: str, field_name: str | None, problem: str) -> None:
        self.source = source
        self.field = field_name
        self.problem = problem
        where = f"{source}: field '{field_name}'" if field_name is not None else source
        # one line whatever the file held (a key or value of a log line may contain line breaks)
        super().__init__(f"{where}: {problem}".replace("\r", "\\r").replace("\n", "\\n"))

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuild from the parts, so the error survives a worker-process boundary.
        return type(self), (self.source, self.field, self.problem)


class Item(NamedTuple):
    """One instance: its job id (None: no job identity, a job of its own) and demand g."""

    job: JobId | None
    g: int


Nodes = tuple[tuple[Item, ...], ...]


@dataclass(frozen=True)
class Snapshot:
    """A validated snapshot. ``nodes`` lists exactly ``n_nodes`` nodes (padding included), or is
    None for a counts-only snapshot; ``counts`` (n_1..n_G) is always set."""

    capacity: int
    n_nodes: int
    counts: tuple[int, ...]
    nodes: Nodes | None = None
    source: str = field(default="<snapshot>", compare=False)
    capacities: tuple[int, ...] | None = None  # per node, for a heterogeneous cluster
    models: tuple[str, ...] | None = None  # per node, only with capacities

    @property
    def has_placement(self) -> bool:
        return self.nodes is not None

    @property
    def is_mixed(self) -> bool:
        """Nodes of different capacities (not expressible as N nodes of one ``capacity``)."""
        return self.capacities is not None and len(set(self.capacities)) > 1

    def node_capacities(self) -> tuple[int, ...]:
        """Each node's GPUs (``capacity`` for every node when ``capacities`` is not given)."""
        return self.capacities if self.capacities is not None else (self.capacity,) * self.n_nodes

    def require_placement(self, why: str) -> Nodes:
        """The nodes; SnapshotError on field 'counts' when this snapshot has none."""
        if self.nodes is None:
            raise SnapshotError(self.source, "counts", f"{why}: give 'placement' (instances on nodes), not counts")
        return self.nodes

    def placement(self, why: str = "this needs a placement") -> tuple[Placement, tuple[JobId | None, ...]]:
        """The placement with dense integer job ids, and each id's label from the file.

        Named jobs get ids in first-seen order; every instance without a job id gets its own id
        (label None)."""
        ids: dict[str, int] = {}
        labels: list[JobId | None] = []

        def job_index(job: JobId | None) -> int:
            if job is None:
                labels.append(None)
                return len(labels) - 1
            if str(job) not in ids:
                ids[str(job)] = len(labels)
                labels.append(job)
            return ids[str(job)]

        nodes = tuple(tuple(Instance(job_index(it.job), it.g) for it in node)
                      for node in self.require_placement(why))
        return Placement(self.capacity, nodes), tuple(labels)

    def to_json(self) -> dict[str, Any]:
        """The canonical JSON object (every node listed; items without a job id as ``{"g": g}``)."""
        out: dict[str, Any] = {"capacity": self.capacity, "nodes": self.n_nodes}
        if self.nodes is None:
            out["counts"] = {str(g): n for g, n in enumerate(self.counts, start=1) if n}
        else:
            out["placement"] = [[_item_json(it) for it in node] for node in self.nodes]
        if self.capacities is not None:
            out["capacities"] = list(self.capacities)
        if self.models is not None:
            out["models"] = list(self.models)
        return out

    @classmethod
    def of_counts(cls, n_nodes: int, counts: Sequence[int], capacity: int = G_DEFAULT,
                  source: str = "<snapshot>") -> Snapshot:
        """A counts-only snapshot (``counts[g-1]`` = n_g)."""
        if len(counts) != capacity:
            raise ValueError(f"{len(counts)} counts for capacity {capacity}")
        return cls(capacity, n_nodes, tuple(counts), None, source)

    @classmethod
    def of_nodes(cls, nodes: Sequence[Sequence[tuple[JobId | None, int]]], capacity: int = G_DEFAULT,
                 n_nodes: int | None = None, source: str = "<snapshot>") -> Snapshot:
        """A placement snapshot from (job, g) items per node, padded to ``n_nodes``."""
        listed = tuple(tuple(Item(j, g) for j, g in node) for node in nodes)
        total = len(listed) if n_nodes is None else n_nodes
        if total < len(listed):
            raise ValueError(f"n_nodes={total} < {len(listed)} nodes listed")
        padded = listed + ((),) * (total - len(listed))
        return cls(capacity, total, counts_of((it.g for node in padded for it in node), capacity), padded, source)


def _item_json(it: Item) -> dict[str, Any]:
    return {"g": it.g} if it.job is None else {"job": it.job, "g": it.g}


# ------------------------------------------------------------------------------ field checks


def require_int(value: Any, source: str, name: str, low: int, high: int | None = None,
                error: type[SnapshotError] = SnapshotError) -> int:
    """``value`` as an integer in low..high (JSON true/false are not integers); ``error`` is the
    exception raised otherwise (a log reader's own subclass)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise error(source, name, f"{value!r} is not an integer")
    if high is None and value < low:
        raise error(source, name, f"{value} must be >= {low}")
    if high is not None and not low <= value <= high:
        raise error(source, name, f"{value} outside {low}..{high}")
    return value


def require_job_id(value: Any, source: str, name: str) -> JobId:
    """A job id: a string or an integer."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise SnapshotError(source, name, f"{value!r} is not a job id (a string or an integer)")
    return value


def _object(value: Any, source: str, name: str | None, known: Sequence[str], what: str) -> dict[str, Any]:
    """``value`` as a JSON object whose keys are all in ``known``."""
    if not isinstance(value, dict):
        raise SnapshotError(source, name, f"{what} must be a JSON object")
    for key in value:
        if key not in known:
            at = key if name is None else f"{name}.{key}"
            raise SnapshotError(source, at, f"unknown field (known: {', '.join(known)})")
    return value


# ------------------------------------------------------------------------------ parsing


def parse_snapshot(data: Any, source: str, *, strict: bool = True) -> Snapshot:
    """Validate one decoded JSON object; ``source`` names it in errors (file or file:line)."""
    d = _object(data, source, None, FIELDS, "the snapshot")
    caps, models = _parse_capacities(d, source)
    capacity = require_int(d.get("capacity", G_DEFAULT if caps is None else max(caps, default=1)), source, "capacity", 1)
    within(Size.CAPACITY, capacity, source, "capacity", SnapshotError)
    if caps is not None and caps and max(caps) > capacity:
        raise SnapshotError(source, "capacities", f"a node of {max(caps)} GPUs > capacity {capacity}")
    if ("counts" in d) == ("placement" in d):
        raise SnapshotError(source, None, "exactly one of the fields 'placement' and 'counts' is required")
    if "counts" in d:
        if "nodes" not in d and caps is None:
            raise SnapshotError(source, "nodes", "missing (required with 'counts')")
        n_nodes = require_int(d.get("nodes", len(caps or ())), source, "nodes", 0)
        within(Size.NODES, n_nodes, source, "nodes", SnapshotError)
        _check_node_count(caps, n_nodes, source)
        counts = parse_counts(d["counts"], source, capacity)
        within(Size.INSTANCES, sum(counts), source, "counts", SnapshotError)
        snap = Snapshot.of_counts(n_nodes, counts, capacity, source)
        return replace(snap, capacities=caps, models=models)
    listed = _parse_nodes(d["placement"], source, capacity)
    n_nodes = require_int(d.get("nodes", len(listed) if caps is None else len(caps)), source, "nodes", 1)
    within(Size.NODES, n_nodes, source, "nodes", SnapshotError)
    if n_nodes < len(listed):
        raise SnapshotError(source, "nodes", f"{n_nodes} < the {len(listed)} nodes listed in 'placement'")
    _check_node_count(caps, n_nodes, source)
    snap = Snapshot.of_nodes([[(it.job, it.g) for it in node] for node in listed], capacity, n_nodes, source)
    snap = replace(snap, capacities=caps, models=models)
    if strict:
        check_placement(snap)
    return snap


def _parse_capacities(d: dict[str, Any], source: str) -> tuple[tuple[int, ...] | None, tuple[str, ...] | None]:
    """The optional per-node ``capacities`` and ``models``."""
    if "models" in d and "capacities" not in d:
        raise SnapshotError(source, "models", "only with 'capacities'")
    if "capacities" not in d:
        return None, None
    raw = d["capacities"]
    if not isinstance(raw, list):
        raise SnapshotError(source, "capacities", "must be a list of integers (GPUs per node)")
    within(Size.NODES, len(raw), source, "capacities", SnapshotError)
    caps = tuple(require_int(c, source, f"capacities[{n}]", 1) for n, c in enumerate(raw))
    if "models" not in d:
        return caps, None
    mods = d["models"]
    if not isinstance(mods, list) or len(mods) != len(caps):
        raise SnapshotError(source, "models", f"must be a list of {len(caps)} model names (one per node)")
    for n, m in enumerate(mods):
        if not isinstance(m, str):
            raise SnapshotError(source, f"models[{n}]", f"{m!r} is not a string")
    return caps, tuple(mods)


def _check_node_count(caps: tuple[int, ...] | None, n_nodes: int, source: str) -> None:
    if caps is not None and len(caps) != n_nodes:
        raise SnapshotError(source, "capacities", f"{len(caps)} entries for {n_nodes} nodes")


def parse_counts(raw: Any, source: str, capacity: int, name: str = "counts") -> tuple[int, ...]:
    """``{"g": n_g}`` → (n_1, …, n_G); errors name field ``name.g`` (just ``g`` when ``name`` is
    empty, for a command-line option)."""
    if not isinstance(raw, dict):
        raise SnapshotError(source, name, 'must be an object {"g": count}')
    counts = [0] * capacity
    for key, value in raw.items():
        at = f"{name}.{key}" if name else str(key)
        try:
            g = int(str(key).strip())
        except ValueError:
            raise SnapshotError(source, at, f"demand {key!r} is not an integer") from None
        require_int(g, source, at, 1, capacity)
        counts[g - 1] = require_int(value, source, at, 0)
    return tuple(counts)


def _parse_nodes(raw: Any, source: str, capacity: int) -> list[list[Item]]:
    if not isinstance(raw, list):
        raise SnapshotError(source, "placement", "must be a list of nodes (lists of instances)")
    nodes = []
    for n, node in enumerate(raw):
        if not isinstance(node, list):
            raise SnapshotError(source, f"placement[{n}]", "must be a list of instances")
        nodes.append([_parse_item(item, source, f"placement[{n}][{k}]", capacity) for k, item in enumerate(node)])
    return nodes


def _parse_item(raw: Any, source: str, name: str, capacity: int) -> Item:
    if isinstance(raw, int) and not isinstance(raw, bool):  # a bare demand (sifopt's old shape)
        return Item(None, require_int(raw, source, name, 1, capacity))
    d = _object(raw, source, name, ITEM_FIELDS, 'an instance ({"job": id, "g": g}, or a bare g)')
    if "g" not in d:
        raise SnapshotError(source, f"{name}.g", "missing")
    job = require_job_id(d["job"], source, f"{name}.job") if "job" in d else None
    return Item(job, require_int(d["g"], source, f"{name}.g", 1, capacity))


def check_placement(snap: Snapshot) -> None:
    """SnapshotError for a node over capacity or a job whose instances have different demands."""
    demand: dict[str, int] = {}
    caps = snap.node_capacities()
    for n, node in enumerate(snap.require_placement("a validity check")):
        used = sum(it.g for it in node)
        if used > caps[n]:
            raise SnapshotError(snap.source, f"placement[{n}]", f"node {n} uses {used} GPUs > capacity {caps[n]}")
        for k, it in enumerate(node):
            if it.job is not None and demand.setdefault(str(it.job), it.g) != it.g:
                raise SnapshotError(snap.source, f"placement[{n}][{k}].g",
                                    f"job {it.job} has g={it.g} here and g={demand[str(it.job)]} elsewhere")


def decode(text: str, source: str, line: int | None = None) -> Any:
    """JSON text → value; SnapshotError naming the line (``line``, for one line of a log, or the
    decoder's) and column of a syntax error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        at = f"{source}:{e.lineno if line is None else line}"
        raise SnapshotError(at, None, f"invalid JSON at column {e.colno}: {e.msg}") from None
    except RecursionError:
        at = source if line is None else f"{source}:{line}"
        raise SnapshotError(at, None, "JSON nested too deeply") from None


# The text of a file that can be read only once (a pipe such as ``<(cat log)``), for the next
# reader of the same path in this process (e.g. ``verify --audit``'s format detection, then its reader).
_read_once: dict[str, str] = {}


def read_text(path: str) -> str:
    """The file's text (a leading UTF-8 byte-order mark dropped); SnapshotError naming the file
    when it cannot be read. A pipe's text is kept, so a second read of the same path gets it too."""
    if path in _read_once:
        return _read_once[path]
    try:
        with open(path, "rb") as fh:  # at most the limit (a device such as /dev/zero never ends)
            data = fh.read(limit(Size.BYTES) + 1)
            piped = stat.S_ISFIFO(os.fstat(fh.fileno()).st_mode)
        if len(data) > limit(Size.BYTES):
            raise SnapshotError(path, None, f"more than {limit(Size.BYTES)} bytes (raise it with --limit bytes=N)")
        text = data.decode("utf-8-sig")
        if piped:
            _read_once[path] = text
        return text
    except FileNotFoundError:
        raise SnapshotError(path, None, "no such file") from None
    except OSError as e:
        raise SnapshotError(path, None, f"cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise SnapshotError(path, None, f"cannot read: not UTF-8 (byte {e.start})") from None


def load_snapshot(path: str, *, strict: bool = True) -> Snapshot:
    """Read and validate a snapshot file (see the module docstring for the format)."""
    return parse_snapshot(decode(read_text(path), path), path, strict=strict)

