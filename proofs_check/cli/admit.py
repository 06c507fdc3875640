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

SNAPSHOT.json is the snapshot format of ``heuristics.gpu.snapshot`` (also read by ``sifopt`` and
``verify --audit``), with a placement (not counts)::

    {"capacity": 8,                                   # GPUs per node, optional, default 8
     "nodes": 4,                                      # optional: pad with empty nodes up to N
     "placement": [[{"job": 1, "g": 4}, {"job": 2, "g": 2}],   # node 0: one item per instance
                   [{"job": 3, "g": 4}],                       # node 1
                   []]}                                        # node 2: empty

A job's instances must all have the same g; a node's instances must fit its capacity. A snapshot
with per-node ``capacities`` (docs/heterogeneous.md, e.g. ``"capacities": [8, 4, 2]``) is answered
on those nodes: ``--job`` takes g up to the largest node, a node is partial when non-empty and
below its own capacity, and Φ★ is the mixed one (``oracle.gpu.mixed_phi``); ``models`` are carried
to ``after`` but constrain nothing (neither the placed instances nor ``--job`` name models). Job ids
may be strings or integers; they are printed as given. ``--json`` prints the question, the
certificate and ``after``: the placement after the moves (the job's instances included) as a
canonical snapshot, readable by ``admit``, ``sifopt`` and ``verify --audit`` again.

Exit codes (docs/cli.md): 0 answered and proven optimal; 1 impossible (the job cannot be admitted by any
migrations / no packing meets the target); 2 bad usage or input (one line on stderr naming the
file and the field); 3 the solver hit its time limit (an incumbent, if any, is printed and marked
unproven); 70 internal error; 130 stopped by SIGINT/SIGTERM (the solve is stopped at once and its
answer so far printed, unproven).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict, replace
from typing import Any, Sequence, cast

from heuristics.gpu.snapshot import JobId, Snapshot, load_snapshot
from heuristics.limits import Size, within
from oracle.gpu.min_migration import (
    BACKENDS,
    DEFAULT_TIME_LIMIT,
    Capacity,
    Nodes,
    Repack,
    Solver,
    min_migration_repack,
    min_migrations_to_admit,
)
from oracle.result import Certificate, Status
from proofs_check.cli.certificate_text import certificate_text
from proofs_check.cli.common import (
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_VIOLATED,
    CliParser,
    UsageError,
    make_parser,
    positive,
    run,
)
from proofs_check.cli.interruptible import interruptible
from proofs_check.cli.limit_option import add_limit_option

PROG = "admit"
Labels = tuple[JobId | None, ...]  # internal job id -> the snapshot's job id (None: no id)
MigrationCert = Certificate[int, Repack]  # objective: migrations; witness: the moves


def parse_job(text: str, capacity: int) -> tuple[int, int]:
    """``GxW`` → (g, w)."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text)
    if not m:
        raise UsageError(f"--job: {text!r} is not GxW (e.g. 4x2 = 2 instances of 4 GPUs)")
    g, w = int(m.group(1)), int(m.group(2))
    if not 1 <= g <= capacity:
        raise UsageError(f"--job: g={g} outside 1..{capacity}")
    if w < 1:
        raise UsageError(f"--job: w={w} must be >= 1")
    within(Size.INSTANCES, w, "--job", "w")
    return g, w


def new_job_label(job_id: int | None, labels: Labels) -> int:
    """The waiting job's id: ``--job-id``, or one more than the largest integer id placed."""
    if job_id is None:
        return 1 + max((j for j in labels if isinstance(j, int)), default=-1)
    if str(job_id) in {str(j) for j in labels if j is not None}:
        raise UsageError(f"--job-id: job {job_id} is already placed")
    return job_id


def exit_for(cert: MigrationCert) -> int:
    """0 proven optimal, 1 impossible (infeasible), 3 unproven (time limit)."""
    return {Status.OPTIMAL: EXIT_OK, Status.INFEASIBLE: EXIT_VIOLATED}.get(cert.status, EXIT_INCONCLUSIVE)


def after_snapshot(nodes: Nodes, labels: Labels, snap: Snapshot) -> Snapshot:
    """The certificate's target placement as a snapshot with the file's job ids (and the file's
    per-node ``capacities`` and ``models``, if any)."""
    after = Snapshot.of_nodes([[(labels[j], g) for j, g in node] for node in nodes], snap.capacity)
    return replace(after, capacities=snap.capacities, models=snap.models)


def node_capacity(snap: Snapshot) -> Capacity:
    """What the oracle takes: G, or one capacity per node when they differ."""
    caps = snap.node_capacities()
    return caps if snap.is_mixed else (caps[0] if caps else snap.capacity)


def cluster_text(snap: Snapshot) -> str:
    """``G=8``, or on mixed capacities how many nodes of each size."""
    if not snap.is_mixed:
        return f"G={node_capacity(snap)}"
    caps = snap.node_capacities()
    sizes = ", ".join(f"{caps.count(c)}×{c}-GPU" for c in sorted(set(caps), reverse=True))
    return f"mixed capacities ({sizes}; partial = below the node's own capacity)"


def as_json(cert: MigrationCert, question: dict[str, Any], labels: Labels, snap: Snapshot) -> dict[str, Any]:
    """One flat object: the question, the certificate with its witness's fields (job ids as in
    the snapshot) and ``after``, the placement the moves reach as a canonical snapshot."""
    r = cert.witness
    out = {"status": cert.status, "migrations": cert.objective, "bound": cert.bound, **asdict(r)}
    del out["placement"]
    out["moves"] = [{**m._asdict(), "job": labels[m.job]} for m in r.moves]
    out["admitted"] = [{**a._asdict(), "job": labels[a.job]} for a in r.admitted]
    out["after"] = (None if r.placement is None
                    else after_snapshot(r.placement, labels, snap).to_json())
    out.update(solver=cert.solver, solver_version=cert.solver_version, wall_time=cert.wall_time)
    return {"question": question, **out}


def _job_text(label: JobId | None) -> str:
    return "an instance without job id" if label is None else f"job {label}"


def _head(cert: MigrationCert, question: dict[str, Any]) -> str:
    if question["kind"] == "admit":
        return f"admit job {question['job']} ({question['w']} x {question['g']} GPUs, id {question['job_id']})"
    target = cert.witness.target_partial
    if target is None:  # Φ★ itself was not proven (a limit hit), so there is no target
        return "repack to Φ★ partial nodes (Φ★ not proven)"
    return f"repack to at most {target} partial node(s)" + (" (= Φ★)" if question.get("target") is None else "")


def render(cert: MigrationCert, question: dict[str, Any], labels: Labels, snap: Snapshot) -> str:
    """The answer as text: status, cost, value (partial / empty nodes), every move."""
    lines = [f"snapshot: {question['snapshot']}  N={question['n_nodes']}  {cluster_text(snap)}",
             _head(cert, question),
             f"status: {cert.status} {certificate_text(cert)}"]
    if cert.status == "infeasible":
        lines.append("impossible: " + ("no migrations make room for this job (total capacity or packing)"
                                       if question["kind"] == "admit" else "no packing meets the target"))
        return "\n".join(lines)
    r = cert.witness
    if cert.objective is None:
        lines.append("unknown: the solver found no answer within its time limit")
        return "\n".join(lines)
    proven = ("" if r.gpus_proven else "  [GPUs moved not proven minimal]") if cert.is_optimal else \
        f"  [NOT proven optimal; proven lower bound {cert.bound}]"
    lines.append(f"migrations: {cert.objective}   GPUs moved: {r.gpus_moved}{proven}")
    lines.append(f"partial nodes: {r.partial_before} -> {r.partial_after}   "
                 f"empty nodes: {r.empty_before} -> {r.empty_after}")
    for m in r.moves:
        lines.append(f"  move {_job_text(labels[m.job])} ({m.g} GPUs): node {m.src} -> node {m.dst}")
    for a in r.admitted:
        lines.append(f"  place {_job_text(labels[a.job])} ({a.g} GPUs) on node {a.dst}")
    return "\n".join(lines)


def build_parser() -> CliParser:
    assert __doc__ is not None
    head, rest = __doc__.split("\n\n", 1)
    ap = make_parser(PROG, head, formatter_class=argparse.RawDescriptionHelpFormatter, epilog=rest)
    ap.add_argument("snapshot", help="SNAPSHOT.json: a placement in the snapshot format (below; also read by sifopt "
                                     "and verify --audit)")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--job", metavar="GxW",
                      help="the waiting job: g GPUs per instance × w instances, e.g. 4x2 (one of --job / --repack; no default)")
    what.add_argument("--repack", action="store_true",
                      help="the minimum-migration repack to Φ★ partial nodes, or to --target K (one of --job / --repack)")
    ap.add_argument("--job-id", type=int, default=None, help="id of the waiting job (default: the largest integer id "
                                                             "placed + 1)")
    ap.add_argument("--target", type=int, default=None, metavar="K",
                    help="with --repack: at most K partial nodes (default: Φ★, the fewest possible)")
    ap.add_argument("--solver", choices=sorted(BACKENDS), default="cp-sat",
                    help="cp-sat: OR-Tools CP-SAT; highs: the HiGHS MILP solver through PuLP, a second opinion "
                         "(default %(default)s)")
    ap.add_argument("--time-limit", type=positive(float), default=DEFAULT_TIME_LIMIT, metavar="SECONDS",
                    help="solver time limit, in seconds; when hit, the best answer is printed unproven and the exit "
                         "code is 3 (default %(default)s)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text (default: text)")
    add_limit_option(ap)
    return ap


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.target is not None and (args.job is not None or args.target < 0):
        raise UsageError("--target: only with --repack, and >= 0")
    snap = load_snapshot(args.snapshot)
    placement, labels = snap.placement("admit moves placed instances")
    nodes = [[(i.job, i.g) for i in node] for node in placement.nodes]
    capacity = node_capacity(snap)
    question: dict[str, Any] = {"snapshot": args.snapshot, "capacity": snap.capacity, "n_nodes": snap.n_nodes}
    if snap.is_mixed:
        question["capacities"] = list(snap.node_capacities())
    solver = cast(Solver, args.solver)  # one of BACKENDS: argparse's choices
    if args.job is not None:
        g, w = parse_job(args.job, max(snap.node_capacities(), default=snap.capacity))
        label = new_job_label(args.job_id, labels)
        question.update(kind="admit", job=args.job, g=g, w=w, job_id=label)
    else:
        question.update(kind="repack", target=args.target)
    with interruptible(armed=False) as stop:  # a signal stops the solver: the answer is then unproven
        if args.job is not None:
            cert = min_migrations_to_admit(nodes, capacity, g, w, job_id=len(labels), n_nodes=snap.n_nodes,
                                           time_limit=args.time_limit, solver=solver)
            labels = (*labels, label)
        else:
            cert = min_migration_repack(nodes, capacity, target_partial=args.target, n_nodes=snap.n_nodes,
                                        time_limit=args.time_limit, solver=solver)
    if args.json:
        report = as_json(cert, question, labels, snap)
        print(json.dumps({**report, "interrupted": stop.signal} if stop.signal else report, indent=2))
    else:
        print(render(cert, question, labels, snap))
    if stop.signal:
        stop.note(PROG, "the solver was stopped; the answer above is what it had"
                  + ("" if cert.status is Status.OPTIMAL else " (not proven)"))
        return stop.code
    return exit_for(cert)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``admit``."""
    return run(PROG, lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
