"""``sifopt``: the exact inherent fragmentation Φ★ of a snapshot, and the SIF of a placement.

Usage::

    sifopt --nodes N --counts 1=6,2=1,4=2 [--capacity 8] [--solver auto|cpsat|milp|brute]
           [--time-limit SECONDS] [--json]
    sifopt SNAPSHOT.json [same options except --nodes/--counts]
    sifopt --nodes-file NODES.csv --counts 1=6,2=1,4=2 [--solver ...] [--json]

Heterogeneous clusters (docs/heterogeneous.md): ``--nodes-file`` takes an openb node list
(``sn,cpu_milli,memory_mib,gpu,model``) instead of ``--nodes``/``--capacity``, and a snapshot may
give ``capacities`` (GPUs per node). Mixed capacities are solved by the mixed pattern ILP
(``oracle.gpu.mixed_phi``: a node is partial when it uses fewer than its own GPUs; ``auto``/``cpsat``
= CP-SAT, ``milp`` = HiGHS, ``brute`` = exhaustive); the minimum number of nodes in use is then
computed within the node list (no unlimited version exists for a fixed set of node sizes).

``--counts`` lists ``g=n_g`` pairs (each g at most once, g in 1..capacity, n_g ≥ 0).

SNAPSHOT.json is the snapshot format of ``heuristics.gpu.snapshot`` (also read by ``admit`` and
``verify --audit``): ``{"capacity": 8, "nodes": N, "placement": [[{"job": 1, "g": 4}, ...], ...]}``
(an item may also be a bare demand g, the older sifopt shape: ``[[4, 2, 1], [8], []]``), or counts
only, ``{"nodes": N, "counts": {"1": 6, "2": 1, "4": 2}}``. Full description: docs/sifopt.md.

Printed: Φ★ and F★ = Φ★/N with the certificate (status, solver, version, wall time), the
minimum number of nodes in use (the bin-packing number, computed without the node limit so
that an infeasible snapshot shows how many nodes it needs), Φπ, Fπ and SIF = (Φπ − Φ★)/N when a placement is given, and a
witness packing realising Φ★. ``--json`` prints the same as one JSON object.

``--solver``: ``auto`` (default) is the memoised oracle (exact DP on small instances, CP-SAT
otherwise); ``cpsat`` / ``milp`` the pattern ILP on CP-SAT / HiGHS-through-PuLP; ``brute`` the
exhaustive search, refused above 16 instances.

Exit codes (docs/cli.md): 0 solved; 1 the instances do not fit in N nodes (Φ★ infeasible — only possible for
``counts`` input); 2 bad usage or input (one line on stderr naming the file or option and the
field); 3 a solver hit its time limit (Φ★ unknown), as ``verify`` uses 3 for inconclusive; 70 internal error.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from functools import partial
from typing import Any, Callable, Sequence

from heuristics.gpu.cluster import Placement, partial_nodes
from heuristics.gpu.node_list import load_node_list
from heuristics.gpu.sif import sif
from heuristics.gpu.snapshot import Snapshot, load_snapshot, parse_counts
from heuristics.limits import Size, within
from oracle.gpu.patterns import PackingWitness
from oracle.gpu.paper_phi import wcc_holds
from oracle.gpu.phi_star import (
    DEFAULT_TIME_LIMIT,
    min_nodes,
    min_nodes_bruteforce,
    min_nodes_cpsat,
    min_nodes_milp,
    phi_star,
    phi_star_bruteforce,
    phi_star_cpsat,
    phi_star_milp,
)
from oracle.gpu.mixed_phi import MixedProblem, MixedWitness, Objective, mixed_bruteforce, node_is_partial, solve_mixed
from oracle.gpu.mixed_phi import Solver as MixedSolver
from oracle.result import Certificate, Status, Unproven
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
from proofs_check.cli.interruptible import EXIT_INTERRUPTED, interruptible
from proofs_check.cli.limit_option import add_limit_option

PROG = "sifopt"
BRUTE_MAX_INSTANCES = 16


def parse_counts_arg(text: str, capacity: int) -> tuple[int, ...]:
    """``"1=6,2=1,4=2"`` → (6, 1, 0, 2, 0, 0, 0, 0); checked like a snapshot's ``counts``."""
    raw: dict[str, int | str] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, val = (part.strip() for part in item.partition("="))
        if not sep:
            raise UsageError("expected g=count", file="--counts", field=item)
        if key in raw:
            raise UsageError(f"g={key} given twice", file="--counts", field=item)
        raw[key] = int(val) if val.lstrip("-").isdigit() else val  # a non-integer is refused below
    counts = parse_counts(raw, "--counts", capacity, name="")
    within(Size.INSTANCES, sum(counts), "--counts", None)
    return counts


def read_input(args: Any) -> Snapshot:
    """The snapshot file, or the counts given by --nodes/--counts/--capacity."""
    if args.snapshot is not None:
        if args.counts is not None or args.nodes is not None or args.capacity is not None or args.nodes_file:
            raise UsageError("give either a snapshot file or --nodes/--nodes-file/--counts/--capacity, not both",
                             file=args.snapshot)
        return load_snapshot(args.snapshot)
    if args.nodes_file is not None:
        if args.nodes is not None or args.capacity is not None:
            raise UsageError("--nodes-file gives the nodes and their capacities: drop --nodes/--capacity")
        if args.counts is None:
            raise UsageError("--nodes-file needs --counts g=n,...")
        nodes = load_node_list(args.nodes_file)
        top = max(nodes.capacities)
        snap = Snapshot.of_counts(nodes.n_nodes, parse_counts_arg(args.counts, top), top, "--counts")
        return replace(snap, capacities=nodes.capacities, models=nodes.models)
    if args.counts is None or args.nodes is None:
        raise UsageError("give SNAPSHOT.json, or both --nodes N and --counts g=n,...")
    capacity = 8 if args.capacity is None else args.capacity
    if capacity < 1:
        raise UsageError(f"--capacity: {capacity} must be >= 1")
    if args.nodes < 0:
        raise UsageError(f"--nodes: {args.nodes} must be a non-negative integer")
    within(Size.NODES, args.nodes, "--nodes", None)
    within(Size.CAPACITY, capacity, "--capacity", None)
    return Snapshot.of_counts(args.nodes, parse_counts_arg(args.counts, capacity), capacity, "--counts")


PhiCert = Certificate[int, PackingWitness]
Method = Callable[[tuple[int, ...], int | None, int], PhiCert]  # (counts, N or no limit, G)


def methods(solver: str, time_limit: float) -> tuple[Method, Method]:
    """(Φ★ method, min-nodes method), each taking (counts, N, capacity)."""
    table = {
        "auto": (phi_star, min_nodes),
        "cpsat": (phi_star_cpsat, min_nodes_cpsat),
        "milp": (phi_star_milp, min_nodes_milp),
    }
    if solver == "brute":
        return phi_star_bruteforce, min_nodes_bruteforce
    phi, mn = table[solver]
    return partial(phi, time_limit=time_limit), partial(mn, time_limit=time_limit)


def certificate_json(c: PhiCert) -> dict[str, Any]:
    return {
        "status": c.status, "objective": c.objective, "bound": c.bound,
        "witness": [{"pattern": list(p), "count": m} for p, m in c.witness],
        "solver": c.solver, "solver_version": c.solver_version, "wall_time": c.wall_time,
    }


def _cert_line(c: Certificate[Any, Any]) -> str:
    return certificate_text(c)


def _answer_lines(r: dict[str, Any], phi: Certificate[Any, Any], mn: Certificate[Any, Any], fit: str,
                  nodes: str) -> list[str]:
    """Φ★ (or why it is not known), the fewest nodes in use, and the given placement's Φπ / SIF."""
    if phi.status is Status.INFEASIBLE:
        out = [f"Φ★: infeasible — the instances do not fit {fit} {_cert_line(phi)}"]
    elif not phi.is_optimal:
        out = [f"Φ★: not proven — solver limit hit (incumbent {phi.objective}, bound {phi.bound}) {_cert_line(phi)}"]
    else:
        f_star = "undefined (N = 0)" if r["f_star"] is None else f"{r['f_star']:.6f}"
        out = [f"Φ★ = {phi.objective}   F★ = {f_star}   {_cert_line(phi)}"]
    out.append(f"min nodes in use ({nodes}) = {mn.objective if mn.is_optimal else mn.status}   {_cert_line(mn)}")
    if r["placement"] is not None:
        pl = r["placement"]
        sif = "unknown" if pl["sif"] is None else f"{pl['sif']:.6f}"
        out.append(f"placement: Φπ = {pl['phi_pi']}   Fπ = {pl['f_pi']:.6f}   SIF = {sif}")
    return out


def render_text(r: dict[str, Any], phi: PhiCert, mn: PhiCert) -> str:
    counts = " ".join(f"n{g}={n}" for g, n in r["counts"].items()) or "(none)"
    out = [f"instances: {counts}  (T = {r['total_gpus']} GPUs), N = {r['nodes']} nodes, G = {r['capacity']}"]
    if r["wcc"] is not None:
        out.append(f"WCC (n1 >= n3 + 3n5 + 2n6 + n7): {'holds' if r['wcc'] else 'fails'}")
    out += _answer_lines(r, phi, mn, f"in {r['nodes']} nodes", "no node limit")
    if phi.witness:
        out.append("witness packing (Φ★):")
        cap = r["capacity"]
        for pat, m in phi.witness:
            tag = "full" if sum(pat) == cap else f"partial ({sum(pat)}/{cap})"
            out.append(f"  {m:>6} × [{' '.join(map(str, pat))}]  {tag}")
    return "\n".join(out)


def solve(snap: Snapshot, solver: str, time_limit: float) -> tuple[dict[str, Any], PhiCert, PhiCert]:
    """The report (the ``--json`` object) and the Φ★ and min-nodes certificates of ``snap``."""
    n, capacity, counts = snap.n_nodes, snap.capacity, snap.counts
    if solver == "brute" and sum(counts) > BRUTE_MAX_INSTANCES:
        raise UsageError(f"--solver brute: {sum(counts)} instances > {BRUTE_MAX_INSTANCES}; use cpsat or milp")
    phi_m, mn_m = methods(solver, time_limit)
    placement: Placement | None = snap.placement()[0] if snap.has_placement else None
    sif_report = None
    if placement is None:
        phi = phi_m(counts, n, capacity)
    else:
        try:
            sif_report = sif(placement, method=phi_m)
            phi = sif_report.certificate
        except Unproven as e:  # a limit was hit: report the certificate, exit 3
            if e.certificate is None:
                raise
            phi = e.certificate
    mn = mn_m(counts, None, capacity)  # the bin-packing number, also when N is too small
    value = phi.objective if phi.status == "optimal" else None
    report: dict[str, Any] = {
        "nodes": n, "capacity": capacity,
        "counts": {str(g): c for g, c in enumerate(counts, start=1) if c},
        "total_gpus": sum(g * c for g, c in enumerate(counts, start=1)),
        "wcc": wcc_holds(counts) if capacity == 8 else None,
        "phi_star": certificate_json(phi),
        "f_star": None if value is None or n == 0 else value / n,
        "min_nodes": certificate_json(mn),
        "placement": None,
    }
    if placement is not None:
        phi_pi = partial_nodes(placement)
        report["placement"] = {
            "phi_pi": phi_pi, "f_pi": phi_pi / n,
            "sif": None if sif_report is None else sif_report.sif,
        }
    return report, phi, mn


MixedCert = Certificate[int, MixedWitness]


def _mixed_method(solver: str, time_limit: float) -> Callable[[MixedProblem, Objective], MixedCert]:
    if solver == "brute":
        return mixed_bruteforce
    backend: MixedSolver = "highs" if solver == "milp" else "cp-sat"
    return lambda problem, objective: solve_mixed(problem, objective, time_limit, backend)


def solve_mixed_snapshot(snap: Snapshot, solver: str, time_limit: float) -> tuple[dict[str, Any], MixedCert, MixedCert]:
    """The report, Φ★ and min-nodes certificates of a snapshot with mixed node capacities."""
    caps = snap.node_capacities()
    if solver == "brute" and sum(snap.counts) > BRUTE_MAX_INSTANCES:
        raise UsageError(f"--solver brute: {sum(snap.counts)} instances > {BRUTE_MAX_INSTANCES}; use cpsat or milp")
    problem = MixedProblem.of(caps, snap.counts, snap.models)
    method = _mixed_method(solver, time_limit)
    phi, mn = method(problem, "partial"), method(problem, "nodes")
    n = snap.n_nodes
    value = phi.objective if phi.status is Status.OPTIMAL else None
    report: dict[str, Any] = {
        "nodes": n, "capacity": snap.capacity,
        "node_capacities": {str(c): caps.count(c) for c in sorted(set(caps), reverse=True)},
        "classes": [{"capacity": c.capacity, "models": list(c.models), "nodes": c.size} for c in problem.classes],
        "counts": {str(g): c for g, c in enumerate(snap.counts, start=1) if c},
        "total_gpus": sum(g * c for g, c in enumerate(snap.counts, start=1)),
        "phi_star": mixed_certificate_json(phi), "f_star": None if value is None else value / n,
        "min_nodes": mixed_certificate_json(mn), "placement": None,
    }
    if snap.nodes is not None:
        phi_pi = sum(node_is_partial(sum(it.g for it in node), c) for node, c in zip(snap.nodes, caps))
        report["placement"] = {"phi_pi": phi_pi, "f_pi": phi_pi / n,
                               "sif": None if value is None else (phi_pi - value) / n}
    return report, phi, mn


def mixed_certificate_json(c: MixedCert) -> dict[str, Any]:
    return {
        "status": c.status, "objective": c.objective, "bound": c.bound,
        "witness": [{"class": k, "pattern": list(p), "count": m} for k, p, m in c.witness],
        "solver": c.solver, "solver_version": c.solver_version, "wall_time": c.wall_time,
    }


def render_mixed(r: dict[str, Any], phi: MixedCert, mn: MixedCert) -> str:
    counts = " ".join(f"n{g}={n}" for g, n in r["counts"].items()) or "(none)"
    sizes = ", ".join(f"{k}×{c}-GPU" for c, k in r["node_capacities"].items())
    out = [f"instances: {counts}  (T = {r['total_gpus']} GPUs), N = {r['nodes']} nodes ({sizes}); "
           "partial = fewer GPUs used than the node's own"]
    out += _answer_lines(r, phi, mn, "on these nodes", "these nodes")
    if phi.witness:
        out.append("witness packing (Φ★), by node class:")
        for k, pat, m in phi.witness:
            cl = r["classes"][k]
            tag = "full" if sum(pat) == cl["capacity"] else f"partial ({sum(pat)}/{cl['capacity']})"
            out.append(f"  {m:>6} × [{' '.join(map(str, pat))}]  on {cl['capacity']}-GPU "
                       f"{'|'.join(cl['models']) or 'nodes'}  {tag}")
    return "\n".join(out)


def build_parser() -> CliParser:
    assert __doc__ is not None
    ap = make_parser(PROG, "Exact Φ★ / F★ / SIF of a GPU-cluster snapshot (COMPASS-ABS §3.2).",
                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("snapshot", nargs="?", help="snapshot JSON file: counts or a placement (format below and in "
                                                "docs/sifopt.md); or give --nodes/--nodes-file and --counts")
    ap.add_argument("--nodes", type=int, help="cluster size N, in nodes (with --counts; no default)")
    ap.add_argument("--nodes-file", default=None, metavar="NODES.csv",
                    help="openb node list (sn,cpu_milli,memory_mib,gpu,model; mixed capacities) instead of --nodes "
                         "(no default)")
    ap.add_argument("--counts", metavar="g=n,...",
                    help="instance counts by per-instance GPU demand g, e.g. 1=6,2=1,4=2 (no default)")
    ap.add_argument("--capacity", type=int, default=None, help="GPUs per node (default 8)")
    ap.add_argument("--solver", choices=("auto", "cpsat", "milp", "brute"), default="auto",
                    help="auto: exact dynamic programming on small instances, CP-SAT otherwise; cpsat / milp: the "
                         "pattern ILP on CP-SAT / HiGHS; brute: exhaustive search, at most 16 instances "
                         "(default %(default)s)")
    ap.add_argument("--time-limit", type=positive(float), default=DEFAULT_TIME_LIMIT, metavar="SECONDS",
                    help="time limit of each solve, in seconds; when hit, exit 3 (default %(default)s)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of text (default: text)")
    add_limit_option(ap)
    return ap


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    snap = read_input(args)
    with interruptible(armed=False) as stop:  # a signal stops the solver: the answer is then unproven
        if snap.is_mixed:
            report, phi_m, mn_m = solve_mixed_snapshot(snap, args.solver, args.time_limit)
            text = render_mixed(report, phi_m, mn_m)
            phi_status, proven = phi_m.status, phi_m.is_proven and mn_m.is_proven
        else:
            report, phi, mn = solve(snap, args.solver, args.time_limit)
            text = render_text(report, phi, mn)
            phi_status, proven = phi.status, phi.is_proven and mn.is_proven
    if stop.signal:
        report["interrupted"] = stop.signal
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else text)
    if stop.signal:
        stop.note(PROG, "the solver was stopped; the answer above is what it had" +
                  ("" if proven else " (not proven)"))
        return EXIT_INTERRUPTED
    if not proven:
        return EXIT_INCONCLUSIVE
    return EXIT_VIOLATED if phi_status is Status.INFEASIBLE else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point ``sifopt``."""
    return run(PROG, lambda: _main(argv))


if __name__ == "__main__":
    sys.exit(main())
