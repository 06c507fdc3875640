"""`verify`: check the paper's claims within stated bounds, replay counterexamples, audit logs.

    verify --theorem 1 --max-nodes 6          # Theorem 1's three parts, exhaustive, N = 1..6
    verify --theorem 1 --variant repaired --max-nodes all   # every N, by a checked cutoff (docs/verify.md)
    verify --all --max-nodes 4 --json out.json --junit out.xml
    verify --claim prop3 --random 200 --seed 1 # add property-based sampling on larger clusters
    verify --replay out.json                   # re-run the saved counterexamples
    verify --replay out.json --plot figs/      # ... and draw each as a PNG (a row per event)
    verify --audit placements.jsonl --bound 2  # the CI guard for any scheduler's placement log
    verify --audit binds.csv --nodes-file nodes.csv   # a Kubernetes-style binding stream
    verify --list

Exit codes (docs/cli.md): 0 every checked claim holds within its bounds (a measurement: measured
completely); 1 a claim is violated; 2 bad usage or input; 3 inconclusive (a budget or solver limit
was hit) or vacuous (premise never met); 70 internal error (a bug: the traceback is in a file).
"""
from __future__ import annotations

import argparse
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import heuristics
import oracle
import proofs_check
from heuristics.gpu.compass import VARIANTS
from heuristics.limits import Size, limit
from proofs_check import catalogue
from proofs_check.catalogue import DOCS, THEOREMS, VARIANT_CLAIMS, RunOptions
from proofs_check.cli import verify_policy
from proofs_check.cli.common import OutputError, UsageError, make_parser, positive, run, usage_on, write_output
from proofs_check.cli.interruptible import solvers_watched
from proofs_check.cli.limit_option import add_limit_option
from proofs_check.core import checkpoint, code_digest, interrupt
from proofs_check.core.budget import Budget
from proofs_check.core.checkpoint import CheckpointError, Checkpointer
from proofs_check.core.engine import Engine
from proofs_check.core.report import catalogue_text, results_text, summary_text, to_json, to_junit, verdict_word
from proofs_check.core.search import stderr_progress
from proofs_check.core.trace import load_records
from proofs_check.core.verdict import ClaimResult, exit_code
from proofs_check.gpu import hier_claims, hier_policy
from proofs_check.gpu.cutoff import ALL
from proofs_check.gpu.flat_claims import EVERY_N_DEFAULTS, TIES, Bounds, bounds_text, every_n_bounds
from proofs_check.gpu.policy_checks import PolicyError

DEFAULTS = Bounds()


def build_parser() -> argparse.ArgumentParser:
    assert __doc__ is not None
    p = make_parser("verify", __doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                    epilog=__doc__.split("\n", 1)[1])
    add_limit_option(p)
    sel = p.add_argument_group("what to check")
    sel.add_argument("--theorem", type=int, action="append", default=[], metavar="N",
                     help="every part of theorem N (repeatable; default: none); known: " + ", ".join(map(str, THEOREMS)))
    sel.add_argument("--claim", action="append", default=[], metavar="ID",
                     help="a claim id, or a prefix before '.' such as thm1 or prop3 (repeatable; default: none)")
    sel.add_argument("--all", action="store_true",
                     help="every claim of the catalogue; with --variant V, every claim variant V makes")
    sel.add_argument("--list", action="store_true", help="print the claim catalogue and exit")
    sel.add_argument("--replay", metavar="FILE", help="re-run the traces saved by --json and re-check them (default: no replay)")
    sel.add_argument("--audit", metavar="LOG", help="check a placement log: snapshot or delta JSON lines, or a "
                     "Kubernetes-style binding stream, or kubectl's Pod watch stream / PodList (docs/verify.md) "
                     "(default: no audit)")
    sel.add_argument("--audit-format", choices=("auto", "snapshot", "delta", "bindings", "k8s"), default="auto",
                     help="--audit: the log's format; k8s = kubectl's Pod watch stream or PodList "
                          "(default: detected from the file)")
    sel.add_argument("--gpu-resource", action="append", default=None, metavar="NAME",
                     help="--audit k8s: a GPU resource name (repeatable; default: nvidia.com/gpu)")
    sel.add_argument("--gang-label", metavar="KEY",
                     help="--audit k8s: a label or annotation naming a pod's gang (default: the Volcano, "
                          "coscheduling and Kueue pod-group keys)")
    sel.add_argument("--k8s-events", metavar="FILE",
                     help="--audit k8s: `kubectl get events -A -o json` (FailedScheduling attached to waits; default: none)")
    sel.add_argument("--admit-limit", type=int, default=100, metavar="K",
                     help="--audit k8s: waits whose minimum migrations the admit oracle computes (default 100)")
    sel.add_argument("--nodes-file", metavar="FILE",
                     help="--audit: the node list (node,gpus) of a binding stream or a delta log (default: none; a delta log "
                          "may declare its nodes in its header)")
    b = p.add_argument_group("bounds (printed in every report)")
    b.add_argument("--max-nodes", type=nodes_or_all, default=None,
                   help=f"largest N (default {DEFAULTS.max_nodes}; --policy: 3), or 'all': every N by a checked cutoff (flat and policy.* "
                        f"claims; defaults then depth {EVERY_N_DEFAULTS['depth']}, ≤ {EVERY_N_DEFAULTS['max_jobs']} "
                        f"jobs, w ≤ {EVERY_N_DEFAULTS['max_w']})")
    b.add_argument("--min-nodes", type=positive(int), default=DEFAULTS.min_nodes, help="smallest N (default %(default)s)")
    b.add_argument("--depth", type=positive(int), default=None, help=f"events per trace (default {DEFAULTS.depth}; thm2: {hier_claims.HierBounds.depth})")
    b.add_argument("--max-jobs", type=positive(int), default=None,
                   help=f"concurrent jobs (default {DEFAULTS.max_jobs}; thm2: {hier_claims.HierBounds.max_jobs})")
    b.add_argument("--max-w", type=positive(int), default=None, help=f"instances per job (default {DEFAULTS.max_w}; thm2: {hier_claims.HierBounds.max_w})")
    b.add_argument("--max-states", type=positive(int), default=None,
                   help=f"distinct states per N of each exploration before giving up as inconclusive "
                        f"(default {DEFAULTS.max_states:,}; thm2: {hier_claims.HierBounds.max_states:,})")
    b.add_argument("--time-limit", type=positive(float), default=None, metavar="SECONDS",
                   help="wall-clock budget of the whole run, in seconds; unfinished checks are inconclusive (default: no limit)")
    hier_claims.add_arguments(b)
    o = p.add_argument_group("scheduler, sampling, output")
    o.add_argument("--variant", help="COMPASS variant for every state claim (default: each claim's own)")
    o.add_argument("--ties", choices=TIES, default="first",
                   help="first: the scheduler's ties go to the lowest node index of the canonical state (default); "
                        "all: every legal choice at every 'pick any' and argmin tie (docs/verify.md)")
    o.add_argument("--workers", type=positive(int), default=None, metavar="K",
                   help="partition the search over K processes by state owner (same results; default 1, "
                        "with --backend dask one per cluster worker)")
    o.add_argument("--backend", choices=("local", "dask"), default="local",
                   help="where the K processes run: forked here (default) or on a Dask cluster")
    o.add_argument("--address", metavar="HOST:PORT",
                   help="--backend dask: the running Dask scheduler (default: start a local cluster of K workers)")
    o.add_argument("--random", type=positive(int), default=0, metavar="K",
                   help="also run K Hypothesis-generated event sequences per state claim on larger clusters (default 0: none)")
    o.add_argument("--seed", type=int, default=0, help="seed of --random and delegated claims (default 0)")
    o.add_argument("--random-nodes", type=positive(int), default=64, metavar="N",
                   help="largest cluster size --random draws (default %(default)s)")
    o.add_argument("--bound", type=str, default="2", metavar="B",
                   help="--audit: SIF bound; 'K' means K/N (default 2, i.e. 2/N), 'x.y' or 'p/q' an absolute fraction")
    o.add_argument("--json", metavar="PATH", help="write every result (and counterexample) as JSON (default: no file)")
    o.add_argument("--junit", metavar="PATH", help="write a JUnit XML report (one testcase per claim part) (default: no file)")
    o.add_argument("--plot", metavar="DIR",
                   help="draw every counterexample and witness (of this run, or of --replay FILE) as a PNG in DIR: "
                        "a row per event, each node a strip of GPUs coloured by job (created if missing; default: no figures)")
    o.add_argument("--quiet", action="store_true", help="no progress on stderr")
    c = p.add_argument_group("interrupts and checkpoints (docs/verify.md)")
    c.add_argument("--checkpoint", metavar="DIR",
                   help="write the search state to DIR at every level boundary (atomically; default: no checkpoint)")
    c.add_argument("--resume", metavar="DIR",
                   help="continue the run checkpointed in DIR (same claims and bounds; keeps checkpointing there; default: a new run)")
    verify_policy.add_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    return run("verify", lambda: _main(args_list))


# The flags each mode of verify reads (besides --limit and --quiet); any other flag given with it
# would be silently ignored, so it is a usage error naming the flags (exit 2).
AUDIT_ONLY = frozenset({"audit_format", "gpu_resource", "gang_label", "k8s_events", "admit_limit", "nodes_file"})
MODES: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("list", "--list", frozenset({"list"})),
    ("list_policies", "--list-policies", frozenset({"list_policies"})),
    ("audit", "--audit LOG", AUDIT_ONLY | {"audit", "bound", "json", "junit"}),
    ("replay", "--replay FILE", frozenset({"replay", "json", "junit", "plot"})),
)
ALWAYS = frozenset({"help", "version", "limit", "quiet"})
# Read by a run only when it checks a scheduler (--policy NAME or --measure).
POLICY_ONLY = frozenset({"bound", "event_time_limit", "strict", "max_migrations", "admission", "demands", "policy_opt"})


def refuse_unused(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A usage error naming every flag given that the run's mode does not read (``--audit`` with
    ``--theorem``, ``--replay`` with ``--workers``, ``--bound`` without ``--policy``), and
    ``--json`` and ``--junit`` naming the same file (one would overwrite the other)."""
    every = frozenset(a.dest for a in parser._actions)
    mode = next(((name, used) for dest, name, used in MODES if getattr(args, dest)), None)
    if mode is not None:
        _refuse(parser, args, every - mode[1], mode[0])
    else:
        _refuse(parser, args, AUDIT_ONLY, "a claim check (only to --audit LOG)")
        if not verify_policy.wanted(args):
            _refuse(parser, args, POLICY_ONLY, "a check without --policy NAME (or --measure)")
    if args.json and args.junit and Path(args.json).resolve() == Path(args.junit).resolve():
        raise UsageError(f"--json and --junit name the same file ({args.json}): give each its own")


def _refuse(parser: argparse.ArgumentParser, args: argparse.Namespace, dests: frozenset[str], what: str) -> None:
    """A usage error naming the flags of ``dests`` given (other than --limit and --quiet)."""
    given = [a.option_strings[-1] for a in parser._actions
             if a.option_strings and a.dest in dests - ALWAYS and getattr(args, a.dest) != a.default]
    if given:
        raise UsageError(f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply to {what}")


def _main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    refuse_unused(parser, args)
    progress = None if args.quiet else stderr_progress
    if args.list:
        print(catalogue_text(catalogue.ALL_DOCS.values()))
        return 0
    if args.list_policies:
        return verify_policy.list_policies()
    for path in (args.json, args.junit, args.plot):
        if path and not Path(path).resolve().parent.is_dir():
            raise UsageError(f"{path}: directory does not exist")
    if args.plot:
        with usage_on(OSError, prefix="--plot"):
            Path(args.plot).mkdir(exist_ok=True)
    t0 = time.perf_counter()
    if args.audit:
        from proofs_check.gpu.audit import AuditError, K8sAuditOptions, audit_path, parse_bound
        from proofs_check.gpu.k8s_events import DEFAULT_GPU_RESOURCES, K8sOptions

        k8s = K8sAuditOptions(K8sOptions(tuple(args.gpu_resource or DEFAULT_GPU_RESOURCES), args.gang_label),
                              args.k8s_events, args.admit_limit, progress=not args.quiet)
        with usage_on(AuditError):
            results, text = audit_path(args.audit, parse_bound(args.bound), args.audit_format, args.nodes_file, k8s)
        print(text)
        return _finish(results, args, argv, None, t0)
    if args.replay:
        return _replay(args, argv, t0)
    policy = verify_policy.wanted(args)
    ids = verify_policy.selected(args) if policy else verify_policy.without_policy(_selected(args))
    flat = _bounds(args)
    if not flat.every_n and args.min_nodes > flat.max_nodes:
        raise UsageError(f"--min-nodes {args.min_nodes} > --max-nodes {flat.max_nodes}")
    bounds = verify_policy.bounds(args, flat) if policy else flat
    if bounds.every_n and catalogue.not_every_n(ids):
        raise UsageError("--max-nodes all covers the flat state claims and policy.*, not "
                         + ", ".join(catalogue.not_every_n(ids)))
    target, params = verify_policy.target_and_params(args) if policy else (None, None)
    with usage_on(ValueError):
        hier = hier_claims.bounds_from_args(args)
    print(f"verify: {', '.join(ids)}")
    if any(not hier_claims.owns(c) for c in ids) and not (target is not None and hier_policy.is_hier(target)):
        print(bounds_text(bounds, args.time_limit))  # hier-compass's own bounds line counts domains
    deadline = None if args.time_limit is None else Budget(args.time_limit)
    with solvers_watched(), interrupt.handling():  # a signal stops an exact solve in progress too
        with Engine(args.backend, args.workers, args.address) as engine:
            ckpt = _checkpointer(args, ids, bounds, hier, engine.shard_count, target, params)
            opts = RunOptions(bounds, hier, args.variant, None, engine, deadline, progress, args.seed, args.random,
                              args.random_nodes, policy=target, policy_params=params)
            with checkpoint.using(ckpt), usage_on(PolicyError):  # --strict: a refused abstraction
                results = catalogue.run(ids, opts)
            lost = engine.lost
        stopped = interrupt.requested()
    print(results_text(results, catalogue.ALL_DOCS))
    failed = _plot(args.plot, [rec for r in results for rec in (r.counterexample or r.stats.get("witness"),) if rec]) \
        if args.plot else []
    extra: dict[str, Any] = {}
    if isinstance(deadline, Budget):
        print(deadline.text())
        extra["time_budget"] = deadline.describe()
    if stopped:
        print("verify: interrupted; the report covers what was checked so far (unfinished claims: inconclusive)",
              file=sys.stderr)
        extra["interrupted"] = True
    if lost:
        print(f"verify: cannot recover: {lost}; unfinished claims are inconclusive", file=sys.stderr)
        extra["lost_workers"] = lost
    if ckpt is not None:
        extra["checkpoint"] = {"dir": str(ckpt.dir), "writes": ckpt.writes}
        if ckpt.failed is not None:
            extra["checkpoint"]["error"] = ckpt.failed
    return _finish(results, args, argv, bounds.describe(), t0, extra, failed)


def _checkpointer(args: argparse.Namespace, ids: list[str], bounds: Bounds, hier: Any, shards: int,
                  target: Any = None, params: Any = None) -> Checkpointer | None:
    """--checkpoint DIR / --resume DIR. The checkpoint's identity is everything that can change a
    verdict: the claims, the bounds, the scheduler (its name, its parameters --bound,
    --max-migrations, --admission and --demands as the claims read them, --policy-opt), the ties,
    the variant, the sampling, the shard count and the code (:func:`code_identity`). A checkpoint
    made with any other identity, or a damaged one, is a usage error (exit 2, one line naming the
    fields that differ). A checkpoint write that fails later is one line on stderr; the run goes
    on without checkpointing (docs/verify.md)."""
    if args.checkpoint is None and args.resume is None:
        return None
    if args.checkpoint is not None and args.resume is not None and \
            Path(args.checkpoint).resolve() != Path(args.resume).resolve():
        raise UsageError("--checkpoint and --resume name different directories")
    identity = {"claims": list(ids), "bounds": bounds.describe(), "ties": args.ties, "variant": args.variant,
                "shards": shards, "random": args.random, "seed": args.seed, "random_nodes": args.random_nodes,
                "hier": hier.describe() if any(hier_claims.owns(c) for c in ids) else None,
                "policy": None if target is None else target.name,
                "policy_params": None if params is None else params.to_json(),
                "policy_opt": list(args.policy_opt), "code": code_identity()}
    with usage_on(CheckpointError, OSError):
        return Checkpointer(args.resume or args.checkpoint, identity, resume=args.resume is not None,
                            on_error=lambda line: print(f"verify: {line}", file=sys.stderr))


PACKAGES = (oracle, heuristics, proofs_check)


@lru_cache(maxsize=1)
def code_identity() -> dict[str, Any]:
    """The code a checkpoint was made with: the installed version of the distribution (None when
    run from a source tree) and the SHA-256 of every .py and .json file of oracle/, heuristics/
    and proofs_check/ (relative path and content, sorted by path)."""
    from importlib import metadata  # here, not at the top: only a checkpointed run asks (``common._Version``)
    try:
        version: str | None = metadata.version("placement-oracles")
    except metadata.PackageNotFoundError:
        version = None
    roots = [Path(p) for pkg in PACKAGES for p in pkg.__path__]
    return {"version": version, "sources": code_digest.source_digest(roots)}


def _selected(args: argparse.Namespace) -> list[str]:
    selectors = [cid for n in args.theorem for cid in _theorem(n)] + args.claim
    if args.variant is not None and args.variant not in VARIANTS:
        raise UsageError(f"--variant {args.variant!r}: unknown; known: {', '.join(VARIANTS)}")
    if args.all and args.variant is not None:
        if args.variant not in VARIANT_CLAIMS:
            raise UsageError(f"--variant {args.variant!r}: no claim list; known: {', '.join(VARIANT_CLAIMS)}")
        selectors += list(VARIANT_CLAIMS[args.variant])
    elif args.all:
        selectors += list(DOCS)
    if not selectors:
        raise UsageError("nothing to check: give --theorem N, --claim ID, --all, --list, --replay FILE or --audit LOG")
    with usage_on(ValueError):
        return catalogue.resolve(selectors)


def _bounds(args: argparse.Namespace) -> Bounds:
    """The flat bounds: the shared search flags where given, the flat defaults otherwise."""
    given = {f: getattr(args, f) for f in ("depth", "max_jobs", "max_w", "max_states") if getattr(args, f) is not None}
    if args.max_nodes == ALL:
        return every_n_bounds(Bounds(min_nodes=args.min_nodes, ties=args.ties, **{**EVERY_N_DEFAULTS, **given}))
    nodes = DEFAULTS.max_nodes if args.max_nodes is None else args.max_nodes
    return Bounds(nodes, args.min_nodes, ties=args.ties, **given)


def nodes_or_all(text: str) -> int | str:
    """--max-nodes: a positive integer or 'all' (every N, by the cutoff)."""
    return ALL if text == ALL else positive(int)(text)


def _theorem(n: int) -> tuple[str, ...]:
    if n not in THEOREMS:
        raise UsageError(f"--theorem {n}: unknown theorem; known: {', '.join(map(str, THEOREMS))}")
    return THEOREMS[n]


def _replay(args: argparse.Namespace, argv: list[str], t0: float) -> int:
    results: list[ClaimResult] = []
    records = load_records(args.replay, catalogue.known, limit(Size.BYTES))
    for rec in records:
        res, lines = catalogue.replay(rec)
        print("\n".join(lines))
        print(f"{res.claim_id}: {verdict_word(res, catalogue.ALL_DOCS)} — {res.message}\n")
        results.append(res)
    failed = _plot(args.plot, records) if args.plot else []
    return _finish(results, args, argv, None, t0, failed=failed)


def _plot(out_dir: str, records: list[dict[str, Any]]) -> list[OutputError]:
    """--plot DIR: one PNG per record; every record without a figure is named with its reason. A
    figure that cannot be written ends the drawing and is returned (the reports are still written)."""
    from proofs_check.gpu.trace_plot import plot_records

    try:
        done = plot_records(records, Path(out_dir))
    except OSError as e:
        return [OutputError.of(e.filename or out_dir, e)]
    for path in done.written:
        print(f"plot: {path}")
    for s in done.skipped:
        print(f"plot: no figure for {s.label}: {s.reason}")
    print(f"plot: {len(done.written)} figure(s) in {out_dir}, {len(done.skipped)} record(s) without a figure")
    return []


def _finish(results: list[ClaimResult], args: argparse.Namespace, argv: list[str], bounds: dict[str, Any] | None,
            t0: float, extra: dict[str, Any] | None = None, failed: Sequence[OutputError] = ()) -> int:
    """Write the --json and --junit reports (each atomically) and print the summary. A report that
    cannot be written does not hide the results: they are printed above, the summary is printed,
    every other report is still written, and the run ends with one line naming each file that
    failed (``failed``: the --plot figures that could not be drawn) and its error, exit 2."""
    elapsed = time.perf_counter() - t0
    failed = list(failed)
    for path, render in ((args.json, lambda: to_json(results, argv, bounds, extra)),
                         (args.junit, lambda: to_junit(results, elapsed, catalogue.ALL_DOCS))):
        if path:
            try:
                write_output(path, render())
            except OutputError as e:
                failed.append(e)
    print(summary_text(results, catalogue.ALL_DOCS) + f" [{elapsed:.1f}s]")
    if failed:
        raise OutputError("; ".join(map(str, failed)) + " (the results are printed above)")
    return exit_code(results)


if __name__ == "__main__":
    sys.exit(main())
