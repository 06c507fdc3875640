"""`verify`: check the paper's claims within stated bounds, replay counterexamples, audit logs.

    verify --theorem 1 --max-nodes 6          # Theorem 1's three parts, exhaustive, N = 1..6
    verify --all --max-nodes 4 --json out.json --junit out.xml
    verify --claim prop3 --random 200 --seed 1 # add property-based sampling on larger clusters
    verify --replay out.json                   # re-run the saved counterexamples
    verify --audit placements.jsonl --bound 2  # the CI guard for any scheduler's placement log
    verify --list

Exit codes: 0 every checked claim holds within its bounds; 1 a claim is violated; 2 bad usage or
input; 3 inconclusive (a budget or solver limit was hit) or vacuous (premise never met).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from proofs_check.gpu import hier_claims
from proofs_check.gpu.claims import CATALOGUE, THEOREMS, VARIANT_CLAIMS, ClaimError, resolve, run_claims
from proofs_check.explorer import Bounds, stderr_progress
from proofs_check.verdict import EXIT_USAGE, ClaimResult, exit_code

DEFAULTS = Bounds()


class UsageError(Exception):
    """Bad usage or input: printed as one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints usage + message otherwise)
        raise UsageError(message)


def _positive(kind):
    def parse(s: str):
        try:
            v = kind(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{s!r} is not a {kind.__name__}") from None
        if v <= 0:
            raise argparse.ArgumentTypeError(f"{s!r} must be > 0")
        return v
    return parse


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="verify", description=__doc__.split("\n")[0],
                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n", 1)[1])
    sel = p.add_argument_group("what to check")
    sel.add_argument("--theorem", type=int, action="append", default=[], metavar="N",
                     help="every part of theorem N (repeatable); known: " + ", ".join(map(str, {**THEOREMS, **hier_claims.THEOREMS})))
    sel.add_argument("--claim", action="append", default=[], metavar="ID",
                     help="a claim id, or a prefix before '.' such as thm1 or prop3 (repeatable)")
    sel.add_argument("--all", action="store_true",
                     help="every claim of the catalogue; with --variant V, every claim variant V makes")
    sel.add_argument("--list", action="store_true", help="print the claim catalogue and exit")
    sel.add_argument("--replay", metavar="FILE", help="re-run the traces saved by --json and re-check them")
    sel.add_argument("--audit", metavar="LOG", help="check a JSON-lines placement log (docs/verify.md)")
    b = p.add_argument_group("bounds (printed in every report)")
    b.add_argument("--max-nodes", type=_positive(int), default=DEFAULTS.max_nodes, help="largest N (default %(default)s)")
    b.add_argument("--min-nodes", type=_positive(int), default=DEFAULTS.min_nodes, help="smallest N (default %(default)s)")
    b.add_argument("--depth", type=_positive(int), default=DEFAULTS.depth, help="events per trace (default %(default)s)")
    b.add_argument("--max-jobs", type=_positive(int), default=DEFAULTS.max_jobs,
                   help="concurrent jobs (default %(default)s)")
    b.add_argument("--max-w", type=_positive(int), default=DEFAULTS.max_w, help="instances per job (default %(default)s)")
    b.add_argument("--max-states", type=_positive(int), default=DEFAULTS.max_states,
                   help="distinct states per N of each exploration before giving up as inconclusive (default %(default)s)")
    b.add_argument("--time-limit", type=_positive(float), default=None, metavar="SECONDS",
                   help="wall-clock budget of the whole run; unfinished checks are inconclusive")
    hier_claims.add_arguments(b)
    o = p.add_argument_group("scheduler, sampling, output")
    o.add_argument("--variant", help="COMPASS variant for every state claim (default: each claim's own)")
    o.add_argument("--workers", type=_positive(int), default=None, metavar="K",
                   help="partition the search over K processes by state owner (same results; default 1, "
                        "with --backend dask one per cluster worker)")
    o.add_argument("--backend", choices=("local", "dask"), default="local",
                   help="where the K processes run: forked here (default) or on a Dask cluster")
    o.add_argument("--address", metavar="HOST:PORT",
                   help="--backend dask: the running Dask scheduler (default: start a local cluster of K workers)")
    o.add_argument("--random", type=_positive(int), default=0, metavar="K",
                   help="also run K Hypothesis-generated event sequences per state claim on larger clusters")
    o.add_argument("--seed", type=int, default=0, help="seed of --random and delegated claims (default 0)")
    o.add_argument("--random-nodes", type=_positive(int), default=64, metavar="N",
                   help="largest cluster size --random draws (default %(default)s)")
    o.add_argument("--bound", type=str, default="2", metavar="B",
                   help="--audit: SIF bound; 'K' means K/N (default 2, i.e. 2/N), 'x.y' or 'p/q' an absolute fraction")
    o.add_argument("--json", metavar="PATH", help="write every result (and counterexample) as JSON")
    o.add_argument("--junit", metavar="PATH", help="write a JUnit XML report (one testcase per claim part)")
    o.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except (UsageError, ClaimError) as e:
        print(f"verify: error: {e}", file=sys.stderr)
        return EXIT_USAGE


def _main(argv: list[str]) -> int:
    from proofs_check.report import bounds_text, catalogue_text, results_text, summary_text, to_json, to_junit

    args = build_parser().parse_args(argv)
    progress = None if args.quiet else stderr_progress
    if args.list:
        print(catalogue_text(CATALOGUE))
        print(hier_claims.catalogue_text())
        return 0
    for path in (args.json, args.junit):
        if path and not Path(path).resolve().parent.is_dir():
            raise UsageError(f"{path}: directory does not exist")
    t0 = time.perf_counter()
    if args.audit:
        from proofs_check.gpu.audit import AuditError, audit_file, parse_bound

        try:
            results, text = audit_file(args.audit, parse_bound(args.bound))
        except AuditError as e:
            raise UsageError(str(e)) from None
        print(text)
        return _finish(results, args, argv, None, t0, to_json, to_junit, summary_text)
    if args.replay:
        return _replay(args, argv, t0, to_json, to_junit, summary_text)
    ids = [cid for n in args.theorem for cid in _theorem(n)] + args.claim
    if args.all and args.variant is not None:
        if args.variant not in VARIANT_CLAIMS:
            raise UsageError(f"--variant {args.variant!r}: no claim list; known: {', '.join(VARIANT_CLAIMS)}")
        ids += list(VARIANT_CLAIMS[args.variant])
    elif args.all:
        ids += [c.id for c in CATALOGUE] + [c.id for c in hier_claims.HIER_CATALOGUE]
    hier_ids = [i for i in ids if hier_claims.owns(i)]
    ids = [i for i in ids if not hier_claims.owns(i)]
    if not ids and not hier_ids:
        raise UsageError("nothing to check: give --theorem N, --claim ID, --all, --list, --replay FILE or --audit LOG")
    try:
        claims = resolve(ids)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.min_nodes > args.max_nodes:
        raise UsageError(f"--min-nodes {args.min_nodes} > --max-nodes {args.max_nodes}")
    variant = _variant(args.variant)
    bounds = Bounds(args.max_nodes, args.min_nodes, args.depth, args.max_jobs, args.max_w, args.max_states)
    deadline = None if args.time_limit is None else time.perf_counter() + args.time_limit
    print(f"verify: {', '.join([c.id for c in claims] + hier_ids)}")
    errors: list[str] = []
    results = []
    if claims:
        print(bounds_text(bounds, args.time_limit))
        from proofs_check.core.engine import Engine, EngineError

        try:
            with Engine(args.backend, args.workers, args.address) as engine:
                results = run_claims(claims, bounds, variant, deadline=deadline, progress=progress, seed=args.seed,
                                     errors=errors, engine=engine)
        except EngineError as e:
            raise UsageError(str(e)) from None
    if args.random:
        from proofs_check.sampling import sample_claims

        results = sample_claims(claims, results, args.random, args.seed, args.random_nodes, variant, progress)
    if hier_ids:
        try:
            results += hier_claims.run_from_args(hier_ids, args, argv, deadline, progress)
        except ValueError as e:
            raise UsageError(str(e)) from None
    print(results_text(results))
    code = _finish(results, args, argv, bounds, t0, to_json, to_junit, summary_text)
    for e in errors:
        print(f"verify: error: {e}", file=sys.stderr)
    return EXIT_USAGE if errors else code


def _theorem(n: int) -> tuple[str, ...]:
    known = {**THEOREMS, **hier_claims.THEOREMS}
    if n not in known:
        raise UsageError(f"--theorem {n}: unknown theorem; known: {', '.join(map(str, known))}")
    return known[n]


def _variant(name: str | None):
    if name is None:
        return None
    from heuristics.gpu.compass import VARIANTS

    if name not in VARIANTS:
        raise UsageError(f"--variant {name!r}: unknown; known: {', '.join(VARIANTS)}")
    return name


def _replay(args, argv, t0, to_json, to_junit, summary_text) -> int:
    from proofs_check.replay import ReplayError, load_traces, replay_record

    try:
        results: list[ClaimResult] = []
        for rec in load_traces(args.replay):
            if hier_claims.owns(rec.get("claim", "")):
                try:
                    res, lines = hier_claims.replay_record(rec)
                except (KeyError, ValueError) as e:
                    raise ReplayError(f"{args.replay}: bad hierarchical trace ({e})") from None
            else:
                res, lines = replay_record(rec)
            print("\n".join(lines))
            print(f"{res.claim_id}: {res.verdict.value.upper()} — {res.message}\n")
            results.append(res)
    except ReplayError as e:
        raise UsageError(str(e)) from None
    return _finish(results, args, argv, None, t0, to_json, to_junit, summary_text)


def _finish(results, args, argv, bounds, t0, to_json, to_junit, summary_text) -> int:
    elapsed = time.perf_counter() - t0
    if args.json:
        Path(args.json).write_text(to_json(results, argv, bounds))
    if args.junit:
        Path(args.junit).write_text(to_junit(results, elapsed))
    print(summary_text(results) + f" [{elapsed:.1f}s]")
    return exit_code(results)


if __name__ == "__main__":
    sys.exit(main())
