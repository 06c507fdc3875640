"""``admit``: would migrating running jobs make room for this job? — and the cost of defragmenting.

Usage::

    admit SNAPSHOT.json --job GxW [--job-id ID] [--solver cp-sat|highs] [--time-limit S] [--json]
    admit SNAPSHOT.json --repack [--target K] [--solver ...] [--time-limit S] [--json]

``--job 4x2`` is a gang job of w = 2 instances of g = 4 GPUs (g×w, as the paper writes shapes).
It prints the fewest instance migrations after which the job can be placed (0 when it fits
already), the GPUs they move, each move and where the job's instances go
(``oracle.gpu.min_migration.min_migrations_to_admit``).

``--repack`` prints the minimum-migration repack to a packing with Φ★ partial nodes (or at most
``--target K``): the cost-to-value view of defragmentation — migrations and GPUs moved against
partial and empty nodes before and after (``oracle.gpu.min_migration.min_migration_repack``).

SNAPSHOT.json is one JSON object with these fields (no others)::

    {"capacity": 8,                                   # GPUs per node, optional, default 8
     "nodes": 4,                                      # optional: pad with empty nodes up to N
     "placement": [[{"job": 1, "g": 4}, {"job": 2, "g": 2}],   # node 0: one item per instance
                   [{"job": 3, "g": 4}],                       # node 1
                   []]}                                        # node 2: empty

A job's instances must all have the same g; a node's instances must fit its capacity.

Exit codes: 0 answered and proven optimal; 1 impossible (the job cannot be admitted by any
migrations / no packing meets the target); 2 bad usage or input (one line on stderr naming the
file and the field); 3 the solver hit its time limit (an incumbent, if any, is printed and marked
unproven).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from oracle.gpu.min_migration import (
    DEFAULT_TIME_LIMIT,
    BACKENDS,
    MigrationCertificate,
    min_migration_repack,
    min_migrations_to_admit,
    normalise,
)

EXIT_OK, EXIT_IMPOSSIBLE, EXIT_USAGE, EXIT_UNPROVEN = 0, 1, 2, 3
SNAPSHOT_FIELDS = ("capacity", "nodes", "placement")
ITEM_FIELDS = ("job", "g")


class InputError(Exception):
    """Bad usage or input; the message is the one line printed (names file/option and field)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, instead of usage + message
        raise InputError(f"usage: {message}")


def _int(value: Any, where: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(f"{where}: {value!r} must be an integer >= {low}")
    return value


def load_snapshot(path: str) -> tuple[int, list[list[tuple[int, int]]], int | None]:
    """(capacity, placement as (job, g) items per node, node count or None) from SNAPSHOT.json."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise InputError(f"{path}: file not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: line {e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: top level must be a JSON object")
    extra = sorted(set(data) - set(SNAPSHOT_FIELDS))
    if extra:
        raise InputError(f"{path}: unknown field {extra[0]!r} (fields: {', '.join(SNAPSHOT_FIELDS)})")
    capacity = _int(data.get("capacity", 8), f"{path}: capacity", 1)
    if "placement" not in data:
        raise InputError(f"{path}: placement: missing")
    raw = data["placement"]
    if not isinstance(raw, list):
        raise InputError(f"{path}: placement: must be a list of nodes")
    nodes: list[list[tuple[int, int]]] = []
    for n, node in enumerate(raw):
        if not isinstance(node, list):
            raise InputError(f"{path}: placement[{n}]: must be a list of instances")
        items = []
        for i, item in enumerate(node):
            where = f"{path}: placement[{n}][{i}]"
            if not isinstance(item, dict) or set(item) != set(ITEM_FIELDS):
                raise InputError(f"{where}: must be an object with exactly the fields job and g")
            job = _int(item["job"], f"{where}.job", 0)
            g = _int(item["g"], f"{where}.g", 1)
            if g > capacity:
                raise InputError(f"{where}.g: {g} outside 1..{capacity}")
            items.append((job, g))
        nodes.append(items)
    n_nodes = None
    if "nodes" in data:
        n_nodes = _int(data["nodes"], f"{path}: nodes", len(nodes))
    try:
        normalise(nodes, capacity, n_nodes)
    except ValueError as e:  # over capacity, a job with two demands: named by node
        raise InputError(f"{path}: placement: {e}") from None
    return capacity, nodes, n_nodes


def parse_job(text: str) -> tuple[int, int]:
    """``GxW`` → (g, w)."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text)
    if not m:
        raise InputError(f"--job: {text!r} is not GxW (e.g. 4x2 = 2 instances of 4 GPUs)")
    g, w = int(m.group(1)), int(m.group(2))
    if w < 1:
        raise InputError(f"--job: w={w} must be >= 1")
    return g, w


def exit_for(cert: MigrationCertificate) -> int:
    return {"optimal": EXIT_OK, "infeasible": EXIT_IMPOSSIBLE}.get(cert.status, EXIT_UNPROVEN)


def as_json(cert: MigrationCertificate, question: dict) -> dict:
    out = asdict(cert)
    out["moves"] = [m._asdict() for m in cert.moves]
    out["admitted"] = [a._asdict() for a in cert.admitted]
    out["placement"] = (None if cert.placement is None
                        else [[{"job": j, "g": g} for j, g in node] for node in cert.placement])
    return {"question": question, **out}


def render(cert: MigrationCertificate, question: dict) -> str:
    lines = [f"snapshot: {question['snapshot']}  N={question['n_nodes']}  G={question['capacity']}"]
    head = (f"admit job {question['job']} ({question['w']} x {question['g']} GPUs, id {question['job_id']})"
            if question["kind"] == "admit" else
            f"repack to at most {cert.target_partial} partial node(s)"
            + (" (= Φ★)" if question.get("target") is None and cert.target_partial is not None else ""))
    lines.append(head)
    lines.append(f"status: {cert.status} ({cert.solver} {cert.solver_version}, {cert.wall_time:.3f} s)")
    if cert.status == "infeasible":
        lines.append("impossible: " + ("no migrations make room for this job (total capacity or packing)"
                                       if question["kind"] == "admit" else "no packing meets the target"))
        return "\n".join(lines)
    if cert.migrations is None:
        lines.append("unknown: the solver found no answer within its time limit")
        return "\n".join(lines)
    proven = ("" if cert.gpus_proven else "  [GPUs moved not proven minimal]") if cert.is_optimal else \
        f"  [NOT proven optimal; proven lower bound {cert.bound}]"
    lines.append(f"migrations: {cert.migrations}   GPUs moved: {cert.gpus_moved}{proven}")
    lines.append(f"partial nodes: {cert.partial_before} -> {cert.partial_after}   "
                 f"empty nodes: {cert.empty_before} -> {cert.empty_after}")
    for m in cert.moves:
        lines.append(f"  move job {m.job} ({m.g} GPUs): node {m.src} -> node {m.dst}")
    for a in cert.admitted:
        lines.append(f"  place job {a.job} ({a.g} GPUs) on node {a.dst}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = _Parser(prog="admit", description=__doc__.split("\n\n")[0])
    ap.add_argument("snapshot", help="SNAPSHOT.json (see the module docstring for the format)")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--job", help="GxW: the waiting job's per-instance GPUs and instance count")
    what.add_argument("--repack", action="store_true", help="min-migration repack to Φ★ partial nodes")
    ap.add_argument("--job-id", type=int, default=None, help="id for the waiting job (default: max id + 1)")
    ap.add_argument("--target", type=int, default=None, help="with --repack: at most K partial nodes")
    ap.add_argument("--solver", choices=sorted(BACKENDS), default="cp-sat")
    ap.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    try:
        args = ap.parse_args(argv)
        if args.time_limit <= 0:
            raise InputError(f"--time-limit: {args.time_limit} must be > 0")
        if args.target is not None and (args.job is not None or args.target < 0):
            raise InputError("--target: only with --repack, and >= 0")
        capacity, nodes, n_nodes = load_snapshot(args.snapshot)
        question: dict[str, Any] = {"snapshot": args.snapshot, "capacity": capacity,
                                    "n_nodes": n_nodes if n_nodes is not None else len(nodes)}
        if args.job is not None:
            g, w = parse_job(args.job)
            if g > capacity:
                raise InputError(f"--job: g={g} outside 1..{capacity}")
            job_id = args.job_id if args.job_id is not None else 1 + max(
                (j for node in nodes for j, _ in node), default=-1)
            question.update(kind="admit", job=args.job, g=g, w=w, job_id=job_id)
            cert = min_migrations_to_admit(nodes, capacity, g, w, job_id=job_id, n_nodes=n_nodes,
                                           time_limit=args.time_limit, solver=args.solver)
        else:
            question.update(kind="repack", target=args.target)
            cert = min_migration_repack(nodes, capacity, target_partial=args.target, n_nodes=n_nodes,
                                        time_limit=args.time_limit, solver=args.solver)
    except InputError as e:
        print(f"admit: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(as_json(cert, question), indent=2) if args.json else render(cert, question))
    return exit_for(cert)


if __name__ == "__main__":
    sys.exit(main())
