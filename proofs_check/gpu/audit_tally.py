"""What every `verify --audit` format shares: the SIF bound, the cluster being audited, the exact
Φ★ of one line, and the two results (``audit.valid``, ``audit.sif``) built line by line.

SIF = (Φπ − Φ★)/N (COMPASS-ABS §3.2, eqs. 1–2). Φ★ depends only on the instance counts n_1..n_G
and N, so it is memoised on them: a log revisits the same counts again and again (a departure
undoes an arrival). Each new count vector is first tried with the best-fit-decreasing certificate
(``heuristics.gpu.simulator.bfd_certified_phi_star``: a packing into ≤ N nodes that attains the
lower bound 1[T mod G ≠ 0], hence exact), then the exact oracle (``oracle.gpu.phi_star``).
On mixed capacities the first try is the greedy certificate of ``oracle.gpu.mixed_certificate``
(a packing attaining the subset-sum lower bound), then ``oracle.gpu.mixed_phi``.

On a cluster whose nodes have different capacities, Φπ counts the nodes that are non-empty and
below their own capacity, and Φ★ is the exact mixed-capacity oracle (``oracle.gpu.mixed_phi``,
the same definition node by node; docs/heterogeneous.md), told the nodes' GPU models when the log
names them. No audit format gives an instance a model set, so the models group no nodes apart
and Φ★ is the same with or without them (``mixed_phi``'s classes: one per capacity).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from functools import cached_property
from fractions import Fraction
from typing import Any, Sequence

from heuristics.gpu.simulator import bfd_certified_phi_star
from heuristics.gpu.snapshot import SnapshotError
from oracle.gpu.mixed_certificate import certified_mixed_phi_star
from oracle.gpu.mixed_phi import node_is_partial, phi_star_mixed
from oracle.gpu.phi_star import phi_star
from oracle.result import Unproven
from proofs_check.core.verdict import ClaimResult, Verdict


PROGRESS_SECONDS = 5.0
SERIES_POINTS = 500  # points of "SIF over time" in the --json report


class AuditError(SnapshotError):
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
        raise AuditError("--bound", None,
                         f"{text!r}: expected an integer K (K/N), a decimal or a fraction p/q") from None
    if v < 0:
        raise AuditError("--bound", None, f"{text!r}: must be ≥ 0")
    return SifBound(v, False)


@dataclass(frozen=True)
class Cluster:
    """The audited cluster: each node's GPU capacity (≥ 1) and, when a node list named them, the
    node names (index order) and the names of listed nodes without GPUs (not part of the cluster);
    ``models``: each node's GPU model, when the log names them (passed on to the mixed Φ★)."""

    capacities: tuple[int, ...]
    names: tuple[str, ...] | None = None
    gpu_less: frozenset[str] = frozenset()
    models: tuple[str, ...] | None = None

    @property
    def n_nodes(self) -> int:
        return len(self.capacities)

    @cached_property
    def max_capacity(self) -> int:
        return max(self.capacities)

    @cached_property
    def uniform(self) -> int | None:
        """The one capacity of every node, or None for mixed capacities."""
        return self.capacities[0] if len(set(self.capacities)) == 1 else None

    @cached_property
    def index_of(self) -> dict[str, int]:
        """Node name -> index (empty when the nodes have no names)."""
        return {} if self.names is None else {name: n for n, name in enumerate(self.names)}

    def label(self, n: int) -> str:
        """Node ``n`` as the log names it."""
        return str(n) if self.names is None else self.names[n]

    def partial(self, used: Sequence[int]) -> int:
        """Φπ of the per-node GPUs ``used``: nodes non-empty and below their own capacity (§3.1)."""
        return sum(node_is_partial(u, c) for u, c in zip(used, self.capacities))

    def require_fits(self, node: int, g: int, where: str, field_name: str) -> None:
        """AuditError when one instance of ``g`` GPUs is bound to a node with fewer GPUs: the log
        does not describe this cluster (as g above every capacity on one capacity)."""
        if g > self.capacities[node]:
            raise AuditError(where, field_name, f"an instance of {g} GPUs on node {self.label(node)}, "
                             f"which has {self.capacities[node]}")

    def describe(self) -> str:
        caps = sorted(set(self.capacities), reverse=True)
        if len(caps) == 1:
            return f"N={self.n_nodes}, capacity {caps[0]}"
        mix = ", ".join(f"{self.capacities.count(c)}×{c}" for c in caps)
        return f"N={self.n_nodes}, mixed capacities {mix}"


_memo: dict[tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...] | None], int] = {}


def clear_memo() -> None:
    """Forget memoised Φ★ values (the benchmark measures each audit cold)."""
    _memo.clear()


def exact_phi_star(counts: tuple[int, ...], cluster: Cluster) -> int:
    """Φ★ of ``counts`` (n_1..n_G, G the largest capacity) on ``cluster``, memoised; raises
    :class:`Unproven` when the exact solve hit its limit (not memoised, nothing made up)."""
    key = (counts, cluster.capacities, cluster.models)
    value = _memo.get(key)
    if value is None:
        value = _solve(counts, cluster)
        # The audited placement packs these instances into the cluster, so "infeasible" would
        # be an oracle bug, not a finding about the scheduler.
        if value is None:
            raise RuntimeError(f"Φ★ oracle says {counts} does not fit {cluster.describe()}, but a placement exists")
        _memo[key] = value
    return value


def _solve(counts: tuple[int, ...], cluster: Cluster) -> int | None:
    capacity = cluster.uniform
    if capacity is None:
        quick_mixed = certified_mixed_phi_star(cluster.capacities, counts)
        if quick_mixed is not None:
            return quick_mixed
        return phi_star_mixed(cluster.capacities, counts, cluster.models).proven_value("Φ★ (mixed capacities)")
    quick = bfd_certified_phi_star(counts, cluster.n_nodes, capacity)
    return quick if quick is not None else phi_star(counts, cluster.n_nodes, capacity).proven_value("Φ★")


@dataclass
class AuditTally:
    """The two claims, accumulated line by line: the first invalid line and the first line over
    the bound (each a counterexample naming file and line), the worst SIF and what was not
    decided. ``notes`` are counts a format reports (filtered rows, snapshot lines)."""

    path: str
    bound: SifBound
    lines: int = 0
    invalid: int = 0
    bad_valid: dict[str, Any] | None = None
    bad_sif: dict[str, Any] | None = None
    unproven: int = 0
    first_unproven: str = ""
    worst: tuple[Fraction, int] = (Fraction(-1), 0)
    notes: dict[str, int] = field(default_factory=dict)
    progress: bool = False  # a line on stderr every PROGRESS_SECONDS of a long audit
    changes: list[tuple[int, str | None, Fraction]] = field(default_factory=list)  # (line, time, SIF) when SIF changes
    _started: float = field(default_factory=time.monotonic)
    _shown: float = field(default_factory=time.monotonic)

    def _tick(self, lineno: int) -> None:
        if self.progress and self.lines % 1000 == 0:
            now = time.monotonic()
            if now - self._shown >= PROGRESS_SECONDS:
                self._shown = now
                print(f"audit {self.path}: {self.lines:,} lines checked (at line {lineno:,}), "
                      f"{now - self._started:.0f} s", file=sys.stderr, flush=True)

    def invalid_line(self, lineno: int, problems: list[str], context: dict[str, Any] | None = None) -> None:
        """A line whose placement is not valid: ``audit.valid`` breaks, SIF is undefined there.
        ``context``: what the record names (pod, node, time), kept with the finding."""
        self.lines += 1
        self._tick(lineno)
        self.invalid += 1
        if self.bad_valid is None:
            self.bad_valid = {"kind": "audit", "file": self.path, "line": lineno, "problems": problems,
                              **(context or {})}

    def valid_line(self, lineno: int, cluster: Cluster, counts: tuple[int, ...], phi_pi: int,
                   context: dict[str, Any] | None = None) -> None:
        """A valid line with instance counts n_1..n_G and Φπ partial nodes: check SIF ≤ bound."""
        self.lines += 1
        self._tick(lineno)
        n_nodes = cluster.n_nodes
        try:
            star = exact_phi_star(counts, cluster)
        except Unproven as e:
            self.unproven += 1
            self.first_unproven = self.first_unproven or f"line {lineno}: {e}"
            return
        value = Fraction(phi_pi - star, n_nodes)
        if not self.changes or self.changes[-1][2] != value:
            self.changes.append((lineno, (context or {}).get("time"), value))
        if value > self.worst[0]:
            self.worst = (value, lineno)
        limit = self.bound.at(n_nodes)
        if value > limit and self.bad_sif is None:
            self.bad_sif = {"kind": "audit", "file": self.path, "line": lineno, "N": n_nodes, "counts": list(counts),
                            "Φπ": phi_pi, "Φ★": star, "SIF": str(value), "bound": str(limit), **(context or {})}

    def results(self, header: str) -> tuple[list[ClaimResult], str]:
        """(audit.valid, audit.sif) and the text report whose first line is ``header``."""
        # What the check covered, in every report (JUnit's system-out too): lines checked, valid,
        # invalid, and every filtered record by reason.
        b = {"log": self.path, "lines": self.lines, "bound": str(self.bound), "valid lines": self.lines - self.invalid,
             "invalid lines": self.invalid, **self.notes}
        worst_at = self.worst[1] or None
        stats: dict[str, Any] = {"worst SIF": str(self.worst[0]) if worst_at else None, "worst at line": worst_at,
                                 "invalid lines": self.invalid, "Φ★ unproven lines": self.unproven,
                                 **self.notes, "SIF over time": self.series()}
        bad_valid = self.bad_valid
        valid = ClaimResult("audit.valid", Verdict.VIOLATED if bad_valid else Verdict.HOLDS,
                            f"line {bad_valid['line']}{_at(bad_valid)}: {bad_valid['problems'][0]} "
                            f"({self.invalid} of {self.lines} lines invalid)" if bad_valid else
                            f"all {self.lines} lines are valid placements", b,
                            {"invalid lines": self.invalid, "checked lines": self.lines, **self.notes}, bad_valid)
        sif = ClaimResult("audit.sif", *self._sif_verdict(), b, stats, self.bad_sif)
        notes = [f"{k}: {v}" for k, v in self.notes.items()]
        checked = [f"checked {self.lines} lines: {self.lines - self.invalid} valid, {self.invalid} invalid "
                   f"(SIF not defined there), {self.unproven} with Φ★ unproven; worst SIF "
                   + (f"{self.worst[0]} at line {worst_at}" if worst_at else "—")]
        text = "\n".join([header, *checked, *notes] + [f"{r.claim_id}: {r.verdict.value.upper()} — {r.message}"
                                                       for r in (valid, sif)])
        return [valid, sif], text

    def series(self, points: int = SERIES_POINTS) -> list[dict[str, Any]]:
        """SIF over the log: every change of value, or, for more than ``points`` changes, the
        largest value of each of ``points`` consecutive runs of changes (its line and time)."""
        step = max(1, -(-len(self.changes) // points))
        out = []
        for k in range(0, len(self.changes), step):
            line, when, value = max(self.changes[k:k + step], key=lambda c: c[2])
            out.append({"line": line, "time": when, "SIF": str(value)} if when else {"line": line, "SIF": str(value)})
        return out

    def _sif_verdict(self) -> tuple[Verdict, str]:
        bad = self.bad_sif
        if bad:
            return Verdict.VIOLATED, (f"line {bad['line']}{_at(bad)}: SIF = {bad['SIF']} > {bad['bound']} "
                                      f"(N={bad['N']}, Φπ={bad['Φπ']}, Φ★={bad['Φ★']}); worst SIF {self.worst[0]} "
                                      f"at line {self.worst[1]}")
        if self.unproven:
            return Verdict.INCONCLUSIVE, f"Φ★ unproven on {self.unproven} lines (first {self.first_unproven})"
        valid = self.lines - self.invalid
        if not valid:
            return Verdict.VACUOUS, f"no valid line of {self.lines}: SIF was never checked"
        skipped = f" ({self.invalid} invalid lines not checked)" if self.invalid else ""
        return Verdict.HOLDS, (f"SIF ≤ {self.bound} on all {valid} valid lines of {self.lines}{skipped}; "
                               f"worst SIF {self.worst[0]} at line {self.worst[1]}")


def _at(record: dict[str, Any]) -> str:
    """What a finding's record names besides its line: `` (pod ml/a, node gpu-1, 2024-…)``."""
    parts = [f"{k} {record[k]}" for k in ("pod", "node") if record.get(k)] + \
            ([f"at {record['time']}"] if record.get("time") not in (None, "") else [])
    return f" ({', '.join(parts)})" if parts else ""
