"""``sifopt``: the exact inherent fragmentation Φ★ of a snapshot, and the SIF of a placement.

Usage::

    sifopt --nodes N --counts 1=6,2=1,4=2 [--capacity 8] [--solver auto|cpsat|milp|brute]
           [--time-limit SECONDS] [--json]
    sifopt SNAPSHOT.json [same options except --nodes/--counts]

``--counts`` lists ``g=n_g`` pairs (each g at most once, g in 1..capacity, n_g ≥ 0).

SNAPSHOT.json is one JSON object with these fields (no others):

* ``"nodes"``: N, the cluster size (required with ``counts``; optional with ``placement``,
  where it must equal the number of nodes listed);
* ``"counts"``: ``{"1": 6, "2": 1, "4": 2}`` — instance counts by demand g; or
* ``"placement"``: ``[[4, 2, 1], [8], []]`` — the instance demands on each node (empty list =
  empty node); exactly one of ``counts`` / ``placement``;
* ``"capacity"``: GPUs per node, default 8.

Printed: Φ★ and F★ = Φ★/N with the certificate (status, solver, version, wall time), the
minimum number of nodes in use (the bin-packing number, computed without the node limit so
that an infeasible snapshot shows how many nodes it needs), Φπ, Fπ and SIF = (Φπ − Φ★)/N when a placement is given, and a
witness packing realising Φ★. ``--json`` prints the same as one JSON object.

``--solver``: ``auto`` (default) is the memoised oracle (exact DP on small instances, CP-SAT
otherwise); ``cpsat`` / ``milp`` the pattern ILP on CP-SAT / HiGHS-through-PuLP; ``brute`` the
exhaustive search, refused above 16 instances.

Exit codes: 0 solved; 1 the instances do not fit in N nodes (Φ★ infeasible — only possible for
``counts`` input); 2 bad usage or input (one line on stderr naming the file or option and the
field); 3 a solver hit its time limit (Φ★ unknown), as ``verify`` uses 3 for inconclusive.
"""
from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path
from typing import Any, Callable

from heuristics.gpu.cluster import Instance, Placement, partial_nodes
from heuristics.gpu.sif import sif
from oracle.certificate import Certificate
from oracle.gpu.paper_phi import wcc_holds
from oracle.gpu.phi_star import (
    DEFAULT_TIME_LIMIT,
    PhiStarUnknown,
    min_nodes,
    min_nodes_bruteforce,
    min_nodes_cpsat,
    min_nodes_milp,
    phi_star,
    phi_star_bruteforce,
    phi_star_cpsat,
    phi_star_milp,
)

EXIT_OK, EXIT_INFEASIBLE, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3
BRUTE_MAX_INSTANCES = 16
SNAPSHOT_FIELDS = ("nodes", "counts", "placement", "capacity")


class InputError(Exception):
    """Bad usage or input; the message is the one line printed (it names file/option and field)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2, instead of usage + message
        raise InputError(f"usage: {message}")


def _int_field(value: Any, where: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}: {what} {value!r} must be a non-negative integer")
    return value


def _demand(key: Any, where: str, capacity: int) -> int:
    try:
        g = int(str(key).strip())
    except ValueError:
        raise InputError(f"{where}: demand {key!r} is not an integer") from None
    if not 1 <= g <= capacity:
        raise InputError(f"{where}: demand g={g} outside 1..{capacity}")
    return g


def parse_counts_arg(text: str, capacity: int) -> tuple[int, ...]:
    """``"1=6,2=1,4=2"`` → (6, 1, 0, 2, 0, 0, 0, 0)."""
    counts = [0] * capacity
    seen: set[int] = set()
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, val = item.partition("=")
        if not sep:
            raise InputError(f"--counts: field {item!r}: expected g=count")
        g = _demand(key, f"--counts: field {item!r}", capacity)
        if g in seen:
            raise InputError(f"--counts: field {item!r}: g={g} given twice")
        seen.add(g)
        try:
            n = int(val.strip())
        except ValueError:
            raise InputError(f"--counts: field {item!r}: count {val!r} is not an integer") from None
        counts[g - 1] = _int_field(n, f"--counts: field {item!r}", "count")
    return tuple(counts)


def load_snapshot(path: str) -> tuple[int, int, tuple[int, ...], Placement | None]:
    """(N, capacity, counts, placement or None) from a snapshot file; InputError on bad input."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: line {e.lineno} column {e.colno}: invalid JSON: {e.msg}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: top level must be a JSON object")
    for key in data:
        if key not in SNAPSHOT_FIELDS:
            raise InputError(f"{path}: field {key!r}: unknown field (expected one of {', '.join(SNAPSHOT_FIELDS)})")
    capacity = _int_field(data.get("capacity", 8), f"{path}: field 'capacity'", "capacity")
    if capacity < 1:
        raise InputError(f"{path}: field 'capacity': must be >= 1")
    if ("counts" in data) == ("placement" in data):
        raise InputError(f"{path}: exactly one of fields 'counts' and 'placement' is required")
    if "counts" in data:
        if "nodes" not in data:
            raise InputError(f"{path}: field 'nodes': required with 'counts'")
        n = _int_field(data["nodes"], f"{path}: field 'nodes'", "node count")
        raw = data["counts"]
        if not isinstance(raw, dict):
            raise InputError(f"{path}: field 'counts': must be an object {{\"g\": count}}")
        counts = [0] * capacity
        for key, val in raw.items():
            where = f"{path}: field 'counts.{key}'"
            counts[_demand(key, where, capacity) - 1] = _int_field(val, where, "count")
        return n, capacity, tuple(counts), None
    raw = data["placement"]
    if not isinstance(raw, list):
        raise InputError(f"{path}: field 'placement': must be a list of nodes (lists of demands)")
    nodes: list[tuple[Instance, ...]] = []
    for i, node in enumerate(raw):
        where = f"{path}: field 'placement[{i}]'"
        if not isinstance(node, list):
            raise InputError(f"{where}: must be a list of demands")
        for j, g in enumerate(node):
            at = f"{path}: field 'placement[{i}][{j}]'"
            if isinstance(g, bool) or not isinstance(g, int):
                raise InputError(f"{at}: demand {g!r} is not an integer")
            _demand(g, at, capacity)
        if sum(node) > capacity:
            raise InputError(f"{where}: node uses {sum(node)} GPUs > capacity {capacity}")
        # each instance is its own job: only demands matter for Φπ and Φ★
        nodes.append(tuple(Instance(job=len(nodes) * 1000 + j, g=g) for j, g in enumerate(node)))
    p = Placement(capacity, tuple(nodes))
    if "nodes" in data:
        n = _int_field(data["nodes"], f"{path}: field 'nodes'", "node count")
        if n != len(nodes):
            raise InputError(f"{path}: field 'nodes': {n} but 'placement' lists {len(nodes)} nodes")
    if not nodes:
        raise InputError(f"{path}: field 'placement': lists no node")
    return len(nodes), capacity, p.counts(), p


Method = Callable[[tuple[int, ...], int, int], Certificate]


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


def certificate_json(c: Certificate) -> dict[str, Any]:
    return {
        "status": c.status, "objective": c.objective, "bound": c.bound,
        "witness": [{"pattern": list(p), "count": m} for p, m in c.witness],
        "solver": c.solver, "solver_version": c.solver_version, "wall_time": c.wall_time,
    }


def _cert_line(c: Certificate) -> str:
    return f"[{c.status}, {c.solver} {c.solver_version}, {c.wall_time:.3f} s]"


def render_text(r: dict[str, Any], phi: Certificate, mn: Certificate) -> str:
    counts = " ".join(f"n{g}={n}" for g, n in r["counts"].items()) or "(none)"
    out = [f"instances: {counts}  (T = {r['total_gpus']} GPUs), N = {r['nodes']} nodes, G = {r['capacity']}"]
    if r["wcc"] is not None:
        out.append(f"WCC (n1 >= n3 + 3n5 + 2n6 + n7): {'holds' if r['wcc'] else 'fails'}")
    if phi.status == "infeasible":
        out.append(f"Φ★: infeasible — the instances do not fit in {r['nodes']} nodes {_cert_line(phi)}")
    elif phi.status == "unknown":
        out.append(f"Φ★: unknown — solver limit hit (incumbent {phi.objective}, bound {phi.bound}) {_cert_line(phi)}")
    else:
        out.append(f"Φ★ = {phi.objective}   F★ = {r['f_star']:.6f}   {_cert_line(phi)}")
    mn_val = mn.objective if mn.status == "optimal" else mn.status
    out.append(f"min nodes in use (no node limit) = {mn_val}   {_cert_line(mn)}")
    if r["placement"] is not None:
        pl = r["placement"]
        sif = "unknown" if pl["sif"] is None else f"{pl['sif']:.6f}"
        out.append(f"placement: Φπ = {pl['phi_pi']}   Fπ = {pl['f_pi']:.6f}   SIF = {sif}")
    if phi.witness:
        out.append("witness packing (Φ★):")
        cap = r["capacity"]
        for pat, m in phi.witness:
            tag = "full" if sum(pat) == cap else f"partial ({sum(pat)}/{cap})"
            out.append(f"  {m:>6} × [{' '.join(map(str, pat))}]  {tag}")
    return "\n".join(out)


def run(n: int, capacity: int, counts: tuple[int, ...], placement: Placement | None,
        solver: str, time_limit: float) -> tuple[dict[str, Any], Certificate, Certificate]:
    if solver == "brute" and sum(counts) > BRUTE_MAX_INSTANCES:
        raise InputError(f"--solver brute: {sum(counts)} instances > {BRUTE_MAX_INSTANCES}; use cpsat or milp")
    phi_m, mn_m = methods(solver, time_limit)
    sif_report = None
    if placement is None:
        phi = phi_m(counts, n, capacity)
    else:
        try:
            sif_report = sif(placement, method=phi_m)
            phi = sif_report.certificate
        except PhiStarUnknown as e:
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


def main(argv: list[str] | None = None) -> int:
    ap = _Parser(prog="sifopt", description="Exact Φ★ / F★ / SIF of a GPU-cluster snapshot (COMPASS-ABS §3.2).")
    ap.add_argument("snapshot", nargs="?", help="snapshot JSON file (see docs/sifopt.md)")
    ap.add_argument("--nodes", type=int, help="cluster size N (with --counts)")
    ap.add_argument("--counts", help="instance counts by demand, e.g. 1=6,2=1,4=2")
    ap.add_argument("--capacity", type=int, default=None, help="GPUs per node (default 8)")
    ap.add_argument("--solver", choices=("auto", "cpsat", "milp", "brute"), default="auto")
    ap.add_argument("--time-limit", type=float, default=DEFAULT_TIME_LIMIT, help="seconds per solve")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    try:
        args = ap.parse_args(argv)
        if args.time_limit <= 0:
            raise InputError(f"--time-limit: {args.time_limit} must be > 0")
        if args.snapshot is not None:
            if args.counts is not None or args.nodes is not None or args.capacity is not None:
                raise InputError(f"{args.snapshot}: give either a snapshot file or --nodes/--counts/--capacity, not both")
            n, capacity, counts, placement = load_snapshot(args.snapshot)
        else:
            if args.counts is None or args.nodes is None:
                raise InputError("usage: give SNAPSHOT.json, or both --nodes N and --counts g=n,...")
            capacity = 8 if args.capacity is None else args.capacity
            if capacity < 1:
                raise InputError(f"--capacity: {capacity} must be >= 1")
            if args.nodes < 0:
                raise InputError(f"--nodes: {args.nodes} must be a non-negative integer")
            n, counts, placement = args.nodes, parse_counts_arg(args.counts, capacity), None
        report, phi, mn = run(n, capacity, counts, placement, args.solver, args.time_limit)
    except InputError as e:
        print(f"sifopt: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else render_text(report, phi, mn))
    if "unknown" in (phi.status, mn.status):
        return EXIT_UNKNOWN
    return EXIT_INFEASIBLE if phi.status == "infeasible" else EXIT_OK
